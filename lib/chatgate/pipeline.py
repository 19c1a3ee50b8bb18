"""One way to run a step, for the API (`Validate.interrogate()`) and the job alike.

A step is a row check on a table: its columns are checked against the table once
(preflight), then the table's engine judges it and the thresholds say which
levels it reached. The API records a problem as the step's evaluation error; the
job stops on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .engines.base import Dedup, Engine, Judged
from .errors import ConfigError, SourceError
from .names import REASON, reserved_clash
from .rules import RowCheck
from .rules.datasets.table_checks import TableCheck
from .thresholds import Thresholds


@dataclass
class Outcome:
    """What judging one step found: the engine's counts and the levels they reached."""

    judged: Judged
    levels: list[str]


def preflight(
    check: RowCheck,
    columns: list[str],
    reserved: Iterable[str],
    *,
    prefix: str | None = None,
    table: str = "the table",
) -> None:
    """Raise, naming the column, when `table` lacks a column of `check` or has one chatgate adds."""
    clash = reserved_clash(columns, reserved, prefix)
    if clash is not None:
        raise SourceError(
            f"{table} already has a column {clash!r}, a name chatgate adds to its results (compared ignoring case): "
            "rename or drop it first"
        )
    for column in check.columns:
        if column not in columns:
            raise ConfigError(f"column {column!r} isn't in {table}; its columns are {columns}")


def judge_step(
    engine: Engine,
    table: Any,
    check: RowCheck,
    *,
    dedup: Dedup,
    thresholds: Thresholds,
    reason_column: str = REASON,
) -> Outcome:
    """Judge `check` on `table` with its engine, and the threshold levels the failures reach."""
    judged = engine.judge_check(table, check, dedup=dedup, reason_column=reason_column)
    return Outcome(judged, thresholds.reached(failed=judged.failed, units=judged.units))


def judge_table(check: TableCheck, rows: int, columns: list[str]) -> Judged:
    """The table as one unit: it fails when any of its checks does (`extra["problems"]` says how)."""
    problems = check.problems(rows, columns)
    return Judged(
        units=1,
        failed=1 if problems else 0,
        reasons=dict.fromkeys(problems, 1),
        distinct_values=None,
        annotated=None,
        extra={"problems": problems},
    )
