"""A run's writes: its outputs checked before any row is read, then written in the protocol's order,
each commit retried while it loses races, and taken back when the run fails.

Commit order: the quarantine, the fixed and valid rows, then the summary last. A run
is complete when its summary rows exist. A failed run deletes the rows it wrote, the
summary's first; where that fails too, the error names the tables that still hold
its rows and the `chatgate clean` command that removes them.
"""

from __future__ import annotations

import logging
import random
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import pyarrow as pa

from ..engines.lakehouse import LakehouseEngine
from ..errors import ChatgateError, OutputError, one_line
from ..names import FIXES, JOB_RESERVED, REASON_BEFORE, RUN_ID
from ..stores.base import TableStore, schema_mismatch, type_mismatch
from .config import JobConfig
from .outputs import SUMMARY_RUN_ID, SUMMARY_SCHEMA, ReadScope, StepResult, output_columns, summary_table

log = logging.getLogger("chatgate.job")

ROW_OUTPUT_COLUMNS = frozenset((*JOB_RESERVED, FIXES, REASON_BEFORE))
"""The columns chatgate adds to the rows it writes (quarantine, fixed, valid)."""

WRITE_ATTEMPTS = 8
"""How many times a write is tried when other runs' commits keep winning the race."""

RETRY_FIRST_WAIT = 0.5
RETRY_MAX_WAIT = 8.0

T = TypeVar("T")


@dataclass(frozen=True)
class Lakehouse:
    """The engine that computes a run's tables and the store that reads and writes them."""

    engine: LakehouseEngine
    store: TableStore

    def explain(self, error: BaseException) -> ChatgateError | None:
        """The one line the engine, else the store, gives for `error` (None: neither knows it)."""
        return self.engine.explain(error) or self.store.explain(error)

    def explaining(self, work: Callable[[], T]) -> T:
        """`work()`; a failure the engine or the store recognises (out of memory, a full disk, a
        corrupt log) is raised as their one-line explanation of it, chained to the original."""
        try:
            return work()
        except Exception as error:
            explained = self.explain(error)
            if explained is None:
                raise
            raise explained from error


@dataclass
class Output:
    """One output table of the run: what goes there, and which column holds the run id."""

    name: str
    target: str
    rows: Any
    run_id_column: str


def check_targets(
    store: TableStore, config: JobConfig, source_columns: list[str], source_schema: pa.Schema | None = None
) -> None:
    """Each output is new, or a Delta table with this run's columns (OutputError naming it otherwise),
    whose types, where `source_schema` gives them, fit the source's.

    It needs the source's schema only, so a run refuses a bad target before it reads any row.
    """
    targets = config.outputs
    wanted = [
        (name, target, output_columns(name, source_columns), ROW_OUTPUT_COLUMNS)
        for name, target in (("quarantine", targets.quarantine), ("fixed", targets.fixed), ("valid", targets.valid))
        if target is not None
    ]
    wanted.append(("summary", targets.summary, SUMMARY_SCHEMA.names, frozenset(SUMMARY_SCHEMA.names)))
    for name, target, columns, own in wanted:
        schema = store.target_schema(target)
        if schema is None:
            continue
        have = list(schema.names)
        if source_schema is not None:
            _check_types(store, name, target, schema, source_schema)
        taken = {c.lower() for c in have}
        extra = taken - {c.lower() for c in columns}
        # A table an older chatgate wrote gains the columns chatgate added since (the writes merge schemas).
        new = [c for c in columns if c.lower() not in taken]
        if extra or any(c not in own for c in new):
            raise schema_mismatch(name, target, have, columns)
        if new:
            log.info("the %s table %s gains chatgate's new columns %s", name, target, new)


def _check_types(store: TableStore, name: str, target: str, schema: pa.Schema, source_schema: pa.Schema) -> None:
    """The source's columns that the output keeps can be written into the output's columns."""
    wanted = {field.name.lower(): field for field in source_schema}
    for field in schema:
        source = wanted.get(field.name.lower())
        if source is not None and not store.writes_into(field.type, source.type):
            raise type_mismatch(name, target, field.name, field.type, source.type)


def write_outputs(
    lake: Lakehouse,
    config: JobConfig,
    outputs: list[Output],
    results: list[StepResult],
    started_at: datetime,
    source_version: int | None,
    read: ReadScope,
) -> dict[str, int]:
    run_id, summary_target = config.run_id, config.outputs.summary
    # An earlier attempt with this run id stops counting as complete before its rows change.
    _delete_run(lake.store, "summary", summary_target, run_id)
    written: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    try:
        for output in outputs:
            written.append((output.name, output.target))
            with lake.engine.watched(f"writing the {output.name} table {output.target}"):
                counts[output.name] = _retrying(
                    lambda o=output: lake.store.replace_run(o.rows, o.target, o.run_id_column, run_id),  # type: ignore[misc]
                    lake.store,
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
            lambda: lake.store.write_arrow(summary, summary_target, SUMMARY_RUN_ID, run_id),
            lake.store,
            summary_target,
        )
    except BaseException as error:
        remaining = _take_back(lake, written, run_id)
        if remaining and isinstance(error, Exception):
            raise RowsLeftBehind(lake.explain(error) or error, remaining, run_id) from error
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


def _take_back(lake: Lakehouse, written: list[tuple[str, str]], run_id: str) -> list[tuple[str, str]]:
    """Delete this run's rows from the `(role, target)` tables it wrote, summary first; other runs'
    rows stay. Returns the tables whose rows could not be deleted."""
    remaining = []
    for role, target in reversed(written):
        try:
            _delete_run(lake.store, role, target, run_id)
        except Exception as error:  # noqa: BLE001 - the run's own failure is the one raised; this one is named
            log.debug("could not delete run %r's rows from %s", run_id, target, exc_info=True)
            log.info("could not delete the rows of run %r from %s: %s", run_id, target, one_line(lake.explain(error) or error))
            remaining.append((role, target))
    return sorted(remaining, key=lambda pair: CLEAN_ORDER.index(pair[0]))


CLEAN_ORDER = ("summary", "quarantine", "fixed", "valid")
"""The order `clean_run` deletes a run's rows in: the summary first, so the run stops counting as
complete before its other rows go."""


def clean_run(store: TableStore, tables: dict[str, str], run_id: str) -> list[str]:
    """Delete the rows of `run_id` from `tables` (role -> target; roles of CLEAN_ORDER);
    the targets that held a table. What `chatgate clean` does."""
    done = []
    for role in CLEAN_ORDER:
        target = tables.get(role)
        if target is not None and store.target_columns(target) is not None:
            _delete_run(store, role, target, run_id)
            done.append(target)
    return done


def _delete_run(store: TableStore, role: str, target: str, run_id: str) -> None:
    column = SUMMARY_RUN_ID if role == "summary" else RUN_ID
    _retrying(lambda: store.delete_run(target, column, run_id), store, target)


def _retrying(write: Callable[[], T], store: TableStore, target: str) -> T:
    """`write()`, tried again with a growing, jittered wait while it loses commit races."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return write()
        except Exception as error:
            if attempt == WRITE_ATTEMPTS or not store.is_conflict(error):
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
