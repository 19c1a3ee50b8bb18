"""One run of the job: judge each step on the source's engine, then write the outputs.

Quarantine and summary rows of a run are replaced, never appended twice, so a
rerun with the same run id gives the same tables. If anything fails after the
first write, every output written so far is rolled back to its version before
the run, so a failed run leaves none of its rows visible.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import SourceError
from ..rules import RowCheck
from .backend import JobBackend
from .config import JobConfig
from .outputs import RESERVED, RUN_ID, StepResult, summary_table

log = logging.getLogger("chatgate.job")

EXIT_OK = 0
EXIT_FAILURE = 1  # the job itself failed (bad config, unreadable source, write error)
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

    @property
    def exit_status(self) -> int:
        levels = {level for step in self.steps for level in step.levels}
        if "critical" in levels:
            return EXIT_CRITICAL
        if "error" in levels:
            return EXIT_ERROR
        return EXIT_OK


def backend_for(engine: str, **options: Any) -> JobBackend:
    """The job backend of an engine name, imported only when asked for."""
    if engine == "spark":
        from .spark import SparkJobBackend

        return SparkJobBackend(**options)
    from .duckdb import DuckDBJobBackend

    return DuckDBJobBackend(**options)


def run(config: JobConfig, backend: JobBackend | None = None) -> RunResult:
    """Run the job described by `config`; returns what it found and wrote."""
    backend = backend or backend_for(config.engine)
    started_at = datetime.now(timezone.utc)
    table = backend.read_source(config.source)
    source_columns = backend.engine.columns(table)
    checks = row_checks(config, source_columns)
    _check_source_columns(config, checks, source_columns)
    source_version = backend.source_version(config.source)

    annotated = table
    results: list[StepResult] = []
    reason_columns: list[str] = []
    for n, check in enumerate(checks, start=1):
        reason_column = f"__pb_reason_{n}"
        column = ", ".join(check.columns)
        log.info("step %d: checking %s", n, column)
        judged = backend.engine.judge_check(annotated, check, dedup=config.dedup, reason_column=reason_column)
        annotated = judged.annotated
        reason_columns.append(reason_column)
        results.append(
            StepResult(
                step=n,
                column=column,
                assertion=check.describe(),
                judged=judged,
                levels=config.thresholds.reached(failed=judged.failed, units=judged.units),
                parameters={**check.as_dict(), "dedup": config.dedup},
            )
        )

    checked_at = datetime.now(timezone.utc)
    quarantine = backend.union(
        [
            backend.quarantine_rows(
                annotated,
                reason_columns[r.step - 1],
                source_columns,
                step=r.step,
                column=r.column,
                run_id=config.run_id,
                checked_at=checked_at,
            )
            for r in results
        ]
    )
    valid = backend.valid_rows(annotated, reason_columns, source_columns) if config.outputs.valid else None
    quarantined, valid_count = _write_outputs(
        backend, config, quarantine, valid, results, started_at, source_version
    )
    return RunResult(
        config=config,
        started_at=started_at,
        finished_at=datetime.now(timezone.utc),
        source_version=source_version,
        steps=results,
        quarantined=quarantined,
        valid=valid_count,
    )


def row_checks(config: JobConfig, source_columns: list[str]) -> list[RowCheck]:
    """The checks of a run, in step order: the dataset type's first, then each chat column's."""
    dataset = config.dataset.checks(source_columns) if config.dataset else []
    return dataset + [step.check() for step in config.steps]


def _check_source_columns(config: JobConfig, checks: list[RowCheck], columns: list[str]) -> None:
    clash = [c for c in RESERVED if c in columns]
    if clash:
        raise SourceError(
            f"the source already has the column {clash[0]!r}, which chatgate adds to its outputs; "
            "rename it before checking this table"
        )
    for check in checks:
        for column in check.columns:
            if column not in columns:
                raise SourceError(
                    f"column {column!r} isn't in the source {config.source!r}; its columns are {columns}"
                )


def _write_outputs(backend, config, quarantine, valid, results, started_at, source_version):
    outputs = config.outputs
    targets = [outputs.quarantine, outputs.summary] + ([outputs.valid] if outputs.valid else [])
    before = {target: backend.table_version(target) for target in targets}
    written: list[str] = []
    try:
        written.append(outputs.quarantine)
        quarantined = backend.replace_run(quarantine, outputs.quarantine, RUN_ID, config.run_id)
        valid_count = None
        if outputs.valid:
            written.append(outputs.valid)
            valid_count = backend.overwrite(valid, outputs.valid)
        summary = summary_table(
            results,
            run_id=config.run_id,
            started_at=started_at,
            finished_at=datetime.now(timezone.utc),
            engine=config.engine,
            source=config.source,
            source_version=source_version,
        )
        written.append(outputs.summary)
        backend.write_arrow(summary, outputs.summary, "run_id", config.run_id)
    except BaseException:
        for target in reversed(written):
            try:
                backend.restore(target, before[target])
            except Exception:  # noqa: BLE001 - report the original failure, log this one
                log.exception("could not roll back %s after a failed run", target)
        raise
    return quarantined, valid_count

