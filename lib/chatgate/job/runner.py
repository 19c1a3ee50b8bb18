"""One run of the job: judge each step on the source's engine, then write the outputs.

The run protocol:
- one snapshot: the source is read at one Delta version for every read of the
  run, and the summary records it;
- its own rows only: each write replaces the rows of this run id and nothing
  else, and is retried when another writer's commit won the race;
- commit order: quarantine, valid, then the summary last (job/writes.py). A run is
  complete when its summary rows exist. A failed run deletes the rows it wrote (a
  process that is killed can't: its rows stay, without summary rows, until a rerun
  with its run id replaces them);
- nothing of a config, a column, a table name or a run id is pasted into SQL
  text unquoted.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from ..engines.lakehouse import LakehouseEngine
from ..names import (
    CHECKED_AT,
    COLUMN,
    JOB_RESERVED,
    MESSAGE,
    REASON,
    REASONS,
    RUN_ID,
    STEP,
    STEP_REASON_PREFIX,
)
from ..pipeline import judge_step, judge_table, preflight, unread_type
from ..progress import labelled
from ..rules import RowCheck, message_indices, row_problems_array
from ..rules.datasets.locate_rows import ROW_PROBLEM_TYPE
from ..rules.datasets.table_checks import TableCheck
from ..step_params import Turns
from ..steps import TABLE_COLUMN
from ..stores.base import TableStore
from .config import JobConfig
from .fixes import BEFORE, FixPlan, fixed_as_valid, fixed_output, repair_failing, step_fix_counts
from .hints import run_hints
from .locations import check_locations, resolve
from .outputs import ReadScope, StepResult
from .registry import backend, make_engine, store_for
from .since import LAST_RUN_COLUMNS, SINCE_LAST, ReadPlan, check_fingerprint, last_checked_version, read_plan
from .writes import Lakehouse, Output, check_targets, write_outputs

log = logging.getLogger("chatgate.job")

EXIT_OK = 0
EXIT_FAILURE = 1  # the job itself failed (unreadable source, write error)
EXIT_USAGE = 2  # a bad flag, config key or column name
EXIT_ERROR = 3  # a step reached its error level
EXIT_CRITICAL = 4  # a step reached its critical level

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


def engine_for_job(config: JobConfig) -> LakehouseEngine:
    """The lakehouse engine the config names, imported only when asked for."""
    return make_engine(config.engine, config.embedded)


def run(config: JobConfig, engine: LakehouseEngine | None = None) -> RunResult:
    """Run the job described by `config`; returns what it found and wrote.

    A failure the engine or the store recognises (out of memory, a full disk, a corrupt
    log) is raised as their one-line explanation of it, chained to the original.
    """
    lake = lakehouse_for(config, engine)
    return lake.explaining(lambda: _run(config, lake))


def lakehouse_for(config: JobConfig, engine: LakehouseEngine | None = None) -> Lakehouse:
    """The config's engine (or `engine`) with its store; on a catalog, the tables are compared by
    the location their catalog gives, before anything is read."""
    engine = engine or engine_for_job(config)
    lake = Lakehouse(engine, store_for(engine, config.engine))
    if backend(config.engine).catalog:
        check_locations(config.tables(), catalog_names=True, catalog_location=lake.store.location)
    return lake


def _run(config: JobConfig, lake: Lakehouse) -> RunResult:
    started_at = datetime.now(timezone.utc)
    table, source_version = lake.store.open_source(config.source, config.source_version)
    source_columns = lake.engine.columns(table)
    checks = prepared_checks(config, lake, source_columns, lake.engine.preview(table, 0).schema)
    warn_unread_types(lake.engine, table, checks)
    table, read = _rows_to_read(lake.store, config, table, source_version, checks)
    return check_rows(config, lake, checks, (table, source_columns), source_version, read, started_at)


def prepared_checks(
    config: JobConfig, lake: Lakehouse, source_columns: list[str], source_schema: pa.Schema | None = None
) -> list[RowCheck]:
    """The run's checks, each checked against the source's columns, and its outputs against
    the columns (and, given the source's schema, the types) they will get: everything that
    needs no data, before the check pass reads any."""
    checks = row_checks(config, source_columns)
    for check in checks:
        preflight(
            check,
            source_columns,
            JOB_RESERVED,
            prefix=STEP_REASON_PREFIX,
            table=f"the source {config.source!r}",
        )
    check_targets(lake.store, config, source_columns, source_schema)
    return checks


def warn_unread_types(engine: LakehouseEngine, table: Any, checks: list[RowCheck]) -> None:
    """One line per chat column whose type no check reads (an integer, a struct of other fields),
    known from the source's schema before any row is read: every row of it will fail."""
    try:
        types = engine.preview(table, 0).schema
    except Exception:  # noqa: BLE001 - a type Arrow can't carry (Spark's intervals): the check judges its text
        log.debug("no Arrow schema of the source to warn of its chat columns' types", exc_info=True)
        return
    for n, check in enumerate(checks, start=1):
        note = unread_type(check, types)
        if note is not None:
            log.warning("warning: step %d: %s", n, note)


def check_rows(
    config: JobConfig,
    lake: Lakehouse,
    checks: list[RowCheck],
    rows: tuple[Any, list[str]],
    source_version: int | None,
    read: ReadScope,
    started_at: datetime,
    *,
    hints: bool = True,
) -> RunResult:
    """Judge the rows this run reads (a table, and the source's columns it writes out) step by step,
    then write the run's outputs and summary."""
    engine = lake.engine
    table, source_columns = rows
    annotated = table
    results: list[StepResult] = []
    plan = _fix_plan(engine, table, config, checks) if config.fix else None
    for n, check in enumerate(checks, start=1):
        column = ", ".join(check.columns)
        log.info("step %d: checking %s", n, column)
        with labelled(f"step {n} ({column})"):
            outcome = judge_step(
                engine,
                annotated,
                check,
                dedup=config.dedup,
                thresholds=config.thresholds,
                reason_column=_reason_column(n),
                failing_columns=plan.as_failing_columns() if plan is not None else None,
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
        with _repaired(engine, annotated, plan, results) as repaired:
            if repaired is not None:
                failing = engine.where_reason(repaired, BEFORE, present=False)
            outputs = _outputs(engine, config, annotated, failing, repaired, plan, source_columns, results, checks)
            if plan is not None and repaired is not None:
                _count_fixes(engine, repaired, plan, results)
            summary_steps = results + ([table_step] if table_step else [])
            counts = write_outputs(lake, config, outputs, summary_steps, started_at, source_version, read)
        found = _hints(engine, annotated, results, checks) if hints else []
    return RunResult(
        config=config,
        started_at=started_at,
        finished_at=datetime.now(timezone.utc),
        source_version=source_version,
        steps=results + ([table_step] if table_step else []),
        quarantined=counts["quarantine"],
        valid=counts.get("valid"),
        fixed=counts.get("fixed"),
        hints=found,
    )


def _hints(engine: LakehouseEngine, annotated: Any, results: list[StepResult], checks: list[RowCheck]) -> list[str]:
    try:
        return run_hints(engine, annotated, results, checks)
    except Exception:  # noqa: BLE001 - the run is written; a hint that can't be made is only logged
        log.exception("could not look for a better option to suggest")
        return []


def _rows_to_read(
    store: TableStore, config: JobConfig, table: Any, source_version: int | None, checks: list[RowCheck]
) -> tuple[Any, ReadScope]:
    """The rows this run checks: the snapshot, or with --since the rows inserted since (see job/since.py)."""
    where = resolve(config.source, catalog_names=backend(config.engine).catalog)
    fingerprint = check_fingerprint(where, [c.as_dict() for c in checks], {"turns": config.turns, "fix": list(config.fix)})
    if config.since is None:
        return table, ReadScope(fingerprint=fingerprint)
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
) -> list[Output]:
    """The output tables of the run, in commit order: quarantine, fixed, valid."""
    run_id, targets = config.run_id, config.outputs
    steps = list(zip(results, checks))
    outputs = [Output("quarantine", targets.quarantine, _quarantine(engine, failing, source_columns, steps, run_id, config.turns), RUN_ID)]
    fixed = None
    if plan is not None and targets.fixed:
        fixed = engine.where_reason(repaired, BEFORE, present=True)
        outputs.append(Output("fixed", targets.fixed, fixed_output(engine, fixed, plan, source_columns, run_id), RUN_ID))
    if targets.valid:
        valid = _valid(engine, annotated, source_columns, results, run_id)
        if fixed is not None and plan is not None and config.valid_includes_fixed:
            valid = engine.concat([valid, fixed_as_valid(engine, fixed, plan, source_columns, run_id)])
        outputs.append(Output("valid", targets.valid, valid, RUN_ID))
    return outputs


def _reason_column(step: int) -> str:
    return f"{STEP_REASON_PREFIX}{step}"


def _fix_plan(engine: LakehouseEngine, table: Any, config: JobConfig, checks: list[RowCheck]) -> FixPlan:
    types = engine.preview(table, 0).schema
    steps = tuple((n, check, _reason_column(n)) for n, check in enumerate(checks, start=1))
    return FixPlan(steps=steps, repairs=config.fix, value_types={name: types.field(name).type for name in types.names})


@contextmanager
def _repaired(engine: LakehouseEngine, annotated: Any, plan: FixPlan | None, results: list[StepResult]) -> Iterator[Any]:
    """The failing rows with their repairs (see job/fixes.py), kept while the outputs read them; None without --fix.
    The engine may have repaired a lone step's failing rows as it checked them (`Judged.failing_computed`)."""
    if plan is None:
        yield None
        return
    computed = results[0].judged.failing_computed if len(results) == 1 else None
    if computed is not None:
        yield computed
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
        rows = engine.where_reason(annotated, reason, present=True)
        constants = {
            STEP: pa.scalar(r.step, pa.int32()),
            COLUMN: pa.scalar(r.column, pa.string()),
            RUN_ID: pa.scalar(run_id, pa.string()),
            CHECKED_AT: checked_at,
        }
        renamed = {reason: REASON, MESSAGE: MESSAGE, REASONS: REASONS}
        if turns == "first" and r.judged.locate is not None:
            # Located as the check ran: joined back, no failing row read again in Python.
            failing = r.judged.locate(rows, MESSAGE)
            del renamed[REASONS]
            constants = {REASONS: pa.scalar(None, pa.list_(ROW_PROBLEM_TYPE)), **constants}
        else:
            failing = engine.with_arrow_columns(
                rows,
                [*check.columns, reason],
                pa.schema([(MESSAGE, pa.int32()), (REASONS, pa.list_(ROW_PROBLEM_TYPE))]),
                functools.partial(_where_problems_are, check, reason, turns),
            )
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
