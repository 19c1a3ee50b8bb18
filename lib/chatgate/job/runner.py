"""One run of the job: judge each step on the source's engine, then write the outputs.

The run protocol:
- one snapshot: the source is read at one Delta version for every read of the
  run, and the summary records it;
- its own rows only: each write replaces the rows of this run id and nothing
  else, and is retried when another writer's commit won the race;
- commit order: quarantine, valid, then the summary last. A run is complete when
  its summary rows exist. A failed run deletes the rows it wrote (a process that
  is killed can't: its rows stay, without summary rows, until a rerun with its
  run id replaces them);
- nothing of a config, a column, a table name or a run id is pasted into SQL
  text unquoted.
"""

from __future__ import annotations

import functools
import logging
import random
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, TypeVar

import pyarrow as pa

from ..engines.lakehouse import LakehouseEngine, schema_mismatch
from ..errors import OutputError, one_line
from ..names import (
    CHECKED_AT,
    COLUMN,
    FIXES,
    JOB_RESERVED,
    MESSAGE,
    REASON,
    REASON_BEFORE,
    REASONS,
    RUN_ID,
    STEP,
    STEP_REASON_PREFIX,
)
from ..pipeline import judge_step, judge_table, preflight
from ..rules import RowCheck, message_indices, row_problems_array
from ..rules.locate_rows import ROW_PROBLEM_TYPE
from ..rules.table import TableCheck
from ..step_params import Turns
from ..steps import TABLE_COLUMN
from .config import EmbeddedConfig, JobConfig
from .fixes import BEFORE, FixPlan, fixed_as_valid, fixed_output, repair_failing, step_fix_counts
from .hints import run_hints
from .limits import check_memory_limits
from .locations import check_locations, resolve
from .outputs import SUMMARY_RUN_ID, SUMMARY_SCHEMA, ReadScope, StepResult, output_columns, summary_table
from .registry import store_for
from .since import LAST_RUN_COLUMNS, SINCE_LAST, ReadPlan, check_fingerprint, last_checked_version, read_plan

log = logging.getLogger("chatgate.job")

EXIT_OK = 0
EXIT_FAILURE = 1  # the job itself failed (unreadable source, write error)
EXIT_USAGE = 2  # a bad flag, config key or column name
EXIT_ERROR = 3  # a step reached its error level
EXIT_CRITICAL = 4  # a step reached its critical level

ROW_OUTPUT_COLUMNS = frozenset((*JOB_RESERVED, FIXES, REASON_BEFORE))
"""The columns chatgate adds to the rows it writes (quarantine, fixed, valid)."""

WRITE_ATTEMPTS = 8
"""How many times a write is tried when other runs' commits keep winning the race."""

RETRY_FIRST_WAIT = 0.5
RETRY_MAX_WAIT = 8.0

T = TypeVar("T")


@dataclass
class RunResult:
    config: JobConfig
    started_at: datetime
    finished_at: datetime
    source_version: int | None
    steps: list[StepResult]
    quarantined: int
    valid: int | None
    fixed: int | None = None
    hints: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        levels = {level for step in self.steps for level in step.levels}
        if "critical" in levels:
            return EXIT_CRITICAL
        if "error" in levels:
            return EXIT_ERROR
        return EXIT_OK


@dataclass
class _Output:
    """One output table of the run: what goes there, and which column holds the run id."""

    name: str
    target: str
    rows: Any
    run_id_column: str


def engine_for_job(config: JobConfig) -> LakehouseEngine:
    """The lakehouse engine the config names, imported only when asked for."""
    return lakehouse_engine(config.engine, config.embedded)


def lakehouse_engine(name: str, embedded: EmbeddedConfig) -> LakehouseEngine:
    """The lakehouse engine called `name` (one of registry.ENGINES), imported only when asked for."""
    if name == "spark":
        from ..engines.spark import SparkEngine

        return SparkEngine()
    from ..engines.ibis.duckdb import DuckDBEngine
    from ..engines.tables import duckdb_connection

    settings = embedded.resolved()
    check_memory_limits(settings["memory_limit"], settings["threads"])
    return DuckDBEngine(con=duckdb_connection(**settings), workers=settings["threads"])


def run(config: JobConfig, engine: LakehouseEngine | None = None) -> RunResult:
    """Run the job described by `config`; returns what it found and wrote.

    A failure the engine recognises (out of memory, a full disk, a corrupt log) is raised
    as the engine's one-line explanation of it, chained to the original.
    """
    engine = engine or engine_for_job(config)
    if config.engine == "spark":
        # Catalog tables are compared by the location their catalog gives, before anything is read.
        check_locations(config.tables(), catalog_names=True, catalog_location=store_for(engine).location)
    try:
        return _run(config, engine)
    except Exception as error:
        explained = engine.explain(error)
        if explained is None:
            raise
        raise explained from error


def _run(config: JobConfig, engine: LakehouseEngine) -> RunResult:
    started_at = datetime.now(timezone.utc)
    table, source_version = engine.open_source(config.source, config.source_version)
    source_columns = engine.columns(table)
    checks = row_checks(config, source_columns)
    for check in checks:
        preflight(
            check,
            source_columns,
            JOB_RESERVED,
            prefix=STEP_REASON_PREFIX,
            table=f"the source {config.source!r}",
        )
    # Everything about the outputs that needs no data, before the check pass reads any.
    check_targets(engine, config, source_columns)
    table, read = _rows_to_read(engine, config, table, source_version, checks)

    annotated = table
    results: list[StepResult] = []
    for n, check in enumerate(checks, start=1):
        column = ", ".join(check.columns)
        log.info("step %d: checking %s", n, column)
        outcome = judge_step(
            engine,
            annotated,
            check,
            dedup=config.dedup,
            thresholds=config.thresholds,
            reason_column=f"{STEP_REASON_PREFIX}{n}",
        )
        annotated = outcome.judged.annotated
        results.append(
            StepResult(
                step=n,
                column=column,
                assertion=check.describe(),
                judged=outcome.judged,
                levels=outcome.levels,
                parameters={**check.as_dict(), "dedup": config.dedup},
            )
        )

    # A table check judges the whole table: a run that read the changes only leaves it to full runs.
    table_step = _table_step(TableCheck.of(checks), results, source_columns, config) if read.scope == "full" else None
    read = replace(read, rows=results[0].judged.units if results else None)
    # With --fix, the quarantine and the fixed table read the repaired failing rows, kept apart.
    reads = (1 if config.fix else len(results)) + (1 if config.outputs.valid else 0)
    with engine.reused(annotated) if reads > 1 else nullcontext(annotated) as annotated:
        failing = annotated
        plan = _fix_plan(engine, table, config, checks, results) if config.fix else None
        with _repaired(engine, annotated, plan) as repaired:
            if repaired is not None:
                failing = engine.where_reason(repaired, BEFORE, present=False)
            outputs = _outputs(engine, config, annotated, failing, repaired, plan, source_columns, results, checks)
            if plan is not None and repaired is not None:
                _count_fixes(engine, repaired, plan, results)
            summary_steps = results + ([table_step] if table_step else [])
            counts = _write_outputs(engine, config, outputs, summary_steps, started_at, source_version, read)
        try:
            hints = run_hints(engine, annotated, results, checks)
        except Exception:  # noqa: BLE001 - the run is written; a hint that can't be made is only logged
            log.exception("could not look for a better option to suggest")
            hints = []
    return RunResult(
        config=config,
        started_at=started_at,
        finished_at=datetime.now(timezone.utc),
        source_version=source_version,
        steps=results + ([table_step] if table_step else []),
        quarantined=counts["quarantine"],
        valid=counts.get("valid"),
        fixed=counts.get("fixed"),
        hints=hints,
    )


def _rows_to_read(
    engine: LakehouseEngine, config: JobConfig, table: Any, source_version: int | None, checks: list[RowCheck]
) -> tuple[Any, ReadScope]:
    """The rows this run checks: the snapshot, or with --since the rows inserted since (see job/since.py)."""
    where = resolve(config.source, catalog_names=config.engine == "spark")
    fingerprint = check_fingerprint(where, [c.as_dict() for c in checks], {"turns": config.turns, "fix": list(config.fix)})
    if config.since is None:
        return table, ReadScope(fingerprint=fingerprint)
    store = store_for(engine)
    last = None
    if config.since == SINCE_LAST:
        summary = store.read_columns(config.outputs.summary, LAST_RUN_COLUMNS)
        last = last_checked_version(summary, fingerprint, config.run_id)
    plan = read_plan(config.since, pinned=source_version, last=last)
    if plan.scope == "changes" and plan.since is not None and source_version is not None:
        changed = store.changes(config.source, plan.since, source_version)
        if changed.table is not None:
            log.info("--since %s: %s", config.since, plan.why)
            return changed.table, ReadScope("changes", plan.since, fingerprint=fingerprint)
        plan = ReadPlan("full", why=f"{changed.why_not}: a full run")
    log.warning("--since %s: %s", config.since, plan.why)
    return table, ReadScope(fingerprint=fingerprint)


def _table_step(
    check: TableCheck | None, results: list[StepResult], source_columns: list[str], config: JobConfig
) -> StepResult | None:
    """The table as a whole (its row count, which every step counted, and its columns): one unit."""
    if check is None:
        return None
    judged = judge_table(check, results[0].judged.units if results else 0, source_columns)
    problems = judged.extra["problems"]
    for code, detail in problems.items():
        log.warning("the table fails %s: %s", code, detail)
    return StepResult(
        step=len(results) + 1,
        column=TABLE_COLUMN,
        assertion=check.describe(),
        judged=judged,
        levels=config.thresholds.reached(failed=judged.failed, units=judged.units),
        parameters={**check.as_dict(), "problems": problems},
    )


def _outputs(
    engine: LakehouseEngine,
    config: JobConfig,
    annotated: Any,
    failing: Any,
    repaired: Any,
    plan: FixPlan | None,
    source_columns: list[str],
    results: list[StepResult],
    checks: list[RowCheck],
) -> list[_Output]:
    """The output tables of the run, in commit order: quarantine, fixed, valid."""
    run_id, targets = config.run_id, config.outputs
    steps = list(zip(results, checks))
    outputs = [_Output("quarantine", targets.quarantine, _quarantine(engine, failing, source_columns, steps, run_id, config.turns), RUN_ID)]
    fixed = None
    if plan is not None and targets.fixed:
        fixed = engine.where_reason(repaired, BEFORE, present=True)
        outputs.append(_Output("fixed", targets.fixed, fixed_output(engine, fixed, plan, source_columns, run_id), RUN_ID))
    if targets.valid:
        valid = _valid(engine, annotated, source_columns, results, run_id)
        if fixed is not None and plan is not None and config.valid_includes_fixed:
            valid = engine.concat([valid, fixed_as_valid(engine, fixed, plan, source_columns, run_id)])
        outputs.append(_Output("valid", targets.valid, valid, RUN_ID))
    return outputs


def _fix_plan(
    engine: LakehouseEngine, table: Any, config: JobConfig, checks: list[RowCheck], results: list[StepResult]
) -> FixPlan:
    types = engine.preview(table, 0).schema
    steps = tuple((r.step, check, r.judged.reason_column) for r, check in zip(results, checks))
    return FixPlan(steps=steps, repairs=config.fix, value_types={name: types.field(name).type for name in types.names})


@contextmanager
def _repaired(engine: LakehouseEngine, annotated: Any, plan: FixPlan | None) -> Iterator[Any]:
    """The failing rows with their repairs (see job/fixes.py), kept while the outputs read them; None without --fix."""
    if plan is None:
        yield None
        return
    with engine.reused(repair_failing(engine, annotated, plan), small=True) as repaired:
        yield repaired


def _count_fixes(engine: LakehouseEngine, repaired: Any, plan: FixPlan, results: list[StepResult]) -> None:
    fixed = engine.where_reason(repaired, BEFORE, present=True)
    counts = step_fix_counts(engine, fixed, plan)
    for r in results:
        r.fixed, r.fixes = counts.get(r.step, (0, {}))
        log.info("step %d: %d failing rows fixed", r.step, r.fixed)


def _quarantine(
    engine: LakehouseEngine,
    annotated: Any,
    source_columns: list[str],
    steps: list[tuple[StepResult, RowCheck]],
    run_id: str,
    turns: Turns = "first",
) -> Any:
    """The failing rows of every step: the source columns, the step's reason and the message
    it is at, then where it came from."""
    checked_at = pa.scalar(datetime.now(timezone.utc), pa.timestamp("us", tz="UTC"))
    per_step = []
    for r, check in steps:
        reason = r.judged.reason_column
        failing = engine.with_arrow_columns(
            engine.where_reason(annotated, reason, present=True),
            [*check.columns, reason],
            pa.schema([(MESSAGE, pa.int32()), (REASONS, pa.list_(ROW_PROBLEM_TYPE))]),
            functools.partial(_where_problems_are, check, reason, turns),
        )
        constants = {
            STEP: pa.scalar(r.step, pa.int32()),
            COLUMN: pa.scalar(r.column, pa.string()),
            RUN_ID: pa.scalar(run_id, pa.string()),
            CHECKED_AT: checked_at,
        }
        renamed = {reason: REASON, MESSAGE: MESSAGE, REASONS: REASONS}
        per_step.append(engine.project(failing, source_columns, renamed, constants))
    return engine.concat(per_step)


def _where_problems_are(check: RowCheck, reason: str, turns: Turns, batch: pa.RecordBatch) -> list[pa.Array]:
    """Where each failing row's problem is and, with turns="all", every problem it has;
    computed on the quarantined rows only."""
    codes = batch.column(reason)
    if turns == "all":
        every = row_problems_array(check, batch, codes)
    else:
        every = pa.nulls(batch.num_rows, pa.list_(ROW_PROBLEM_TYPE))
    return [message_indices(check, batch, codes), every]


def _valid(
    engine: LakehouseEngine, annotated: Any, source_columns: list[str], results: list[StepResult], run_id: str
) -> Any:
    """The rows that pass every step: the source columns, then the run id."""
    passing = annotated
    for r in results:
        passing = engine.where_reason(passing, r.judged.reason_column, present=False)
    return engine.project(passing, source_columns, {}, {RUN_ID: pa.scalar(run_id, pa.string())})


def row_checks(config: JobConfig, source_columns: list[str]) -> list[RowCheck]:
    """The checks of a run, in step order: the dataset type's first, then each chat column's."""
    dataset = config.dataset.checks(source_columns) if config.dataset else []
    return dataset + [step.check() for step in config.steps]


def check_targets(engine: LakehouseEngine, config: JobConfig, source_columns: list[str]) -> None:
    """Each output is new, or a Delta table with this run's columns (OutputError naming it otherwise).

    It needs the source's columns only, so a run refuses a bad target before it reads any row.
    """
    targets = config.outputs
    wanted = [
        (name, target, output_columns(name, source_columns), ROW_OUTPUT_COLUMNS)
        for name, target in (("quarantine", targets.quarantine), ("fixed", targets.fixed), ("valid", targets.valid))
        if target is not None
    ]
    wanted.append(("summary", targets.summary, SUMMARY_SCHEMA.names, frozenset(SUMMARY_SCHEMA.names)))
    for name, target, columns, own in wanted:
        have = engine.target_columns(target)
        if have is None:
            continue
        taken = {c.lower() for c in have}
        extra = taken - {c.lower() for c in columns}
        # A table an older chatgate wrote gains the columns chatgate added since (the writes merge schemas).
        new = [c for c in columns if c.lower() not in taken]
        if extra or any(c not in own for c in new):
            raise schema_mismatch(name, target, have, columns)
        if new:
            log.info("the %s table %s gains chatgate's new columns %s", name, target, new)


def _write_outputs(
    engine: LakehouseEngine,
    config: JobConfig,
    outputs: list[_Output],
    results: list[StepResult],
    started_at: datetime,
    source_version: int | None,
    read: ReadScope,
) -> dict[str, int]:
    run_id, summary_target = config.run_id, config.outputs.summary
    # An earlier attempt with this run id stops counting as complete before its rows change.
    _delete_run(engine, "summary", summary_target, run_id)
    written: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    try:
        for output in outputs:
            written.append((output.name, output.target))
            counts[output.name] = _retrying(
                lambda o=output: engine.replace_run(o.rows, o.target, o.run_id_column, run_id),  # type: ignore[misc]
                engine,
                output.target,
            )
        summary = summary_table(
            results,
            run_id=run_id,
            started_at=started_at,
            finished_at=datetime.now(timezone.utc),
            engine=config.engine,
            source=config.source,
            source_version=source_version,
            read=read,
        )
        written.append(("summary", summary_target))
        _retrying(
            lambda: engine.write_arrow(summary, summary_target, SUMMARY_RUN_ID, run_id),
            engine,
            summary_target,
        )
    except BaseException as error:
        remaining = _take_back(engine, written, run_id)
        if remaining and isinstance(error, Exception):
            raise RowsLeftBehind(engine.explain(error) or error, remaining, run_id) from error
        raise
    return counts


class RowsLeftBehind(OutputError):
    """A failed run whose rows could not all be taken back: it names where they remain and how to remove them."""

    def __init__(self, error: BaseException, remaining: list[tuple[str, str]], run_id: str) -> None:
        self.remaining = remaining
        self.run_id = run_id
        where = ", ".join(f"the {role} {target!r}" for role, target in remaining)
        flags = " ".join(f"--{role} {shlex.quote(target)}" for role, target in remaining)
        super().__init__(
            f"{one_line(error, debug_hint=False)}; taking the run's rows back failed too, so run {run_id!r} still has rows in "
            f"{where}: remove them with `chatgate clean --run-id {shlex.quote(run_id)} {flags}`, "
            f"or rerun with --run-id {shlex.quote(run_id)}"
        )


def _take_back(engine: LakehouseEngine, written: list[tuple[str, str]], run_id: str) -> list[tuple[str, str]]:
    """Delete this run's rows from the `(role, target)` tables it wrote, summary first; other runs'
    rows stay. Returns the tables whose rows could not be deleted."""
    remaining = []
    for role, target in reversed(written):
        try:
            _delete_run(engine, role, target, run_id)
        except Exception as error:  # noqa: BLE001 - the run's own failure is the one raised; this one is named
            log.debug("could not delete run %r's rows from %s", run_id, target, exc_info=True)
            log.info("could not delete the rows of run %r from %s: %s", run_id, target, one_line(engine.explain(error) or error))
            remaining.append((role, target))
    return sorted(remaining, key=lambda pair: CLEAN_ORDER.index(pair[0]))


CLEAN_ORDER = ("summary", "quarantine", "fixed", "valid")
"""The order `clean_run` deletes a run's rows in: the summary first, so the run stops counting as
complete before its other rows go."""


def clean_run(engine: LakehouseEngine, tables: dict[str, str], run_id: str) -> list[str]:
    """Delete the rows of `run_id` from `tables` (role -> target; roles of CLEAN_ORDER);
    the targets that held a table. What `chatgate clean` does."""
    done = []
    for role in CLEAN_ORDER:
        target = tables.get(role)
        if target is not None and engine.target_columns(target) is not None:
            _delete_run(engine, role, target, run_id)
            done.append(target)
    return done


def _delete_run(engine: LakehouseEngine, role: str, target: str, run_id: str) -> None:
    column = SUMMARY_RUN_ID if role == "summary" else RUN_ID
    _retrying(lambda: engine.delete_run(target, column, run_id), engine, target)


def _retrying(write: Callable[[], T], engine: LakehouseEngine, target: str) -> T:
    """`write()`, tried again with a growing, jittered wait while it loses commit races."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return write()
        except Exception as error:
            if attempt == WRITE_ATTEMPTS or not engine.is_conflict(error):
                raise
            wait = min(RETRY_MAX_WAIT, RETRY_FIRST_WAIT * 2 ** (attempt - 1)) * random.uniform(0.5, 1.5)
            log.warning(
                "another writer committed to %s first; trying again in %.1f s (attempt %d of %d)",
                target,
                wait,
                attempt + 1,
                WRITE_ATTEMPTS,
            )
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
