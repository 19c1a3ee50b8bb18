"""What a run report holds: one run's steps, the runs before it, and quarantined examples.

Every renderer (the HTML page, the JSON form) reads these objects and nothing else,
so the two forms can't show different figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..report import most_rows_fail

LEVELS = ("warning", "error", "critical")


@dataclass(frozen=True)
class RunInfo:
    """One run, as its summary rows describe it."""

    run_id: str
    started_at: datetime
    finished_at: datetime
    engine: str
    source: str
    source_version: int | None

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class StepTokens:
    """A step's token statistics as its summary row holds them: the `tokens_<figure>` columns by
    figure (`check.token_stats.SUMMARY_FIELDS`) and the histogram's bins (min, max, conversations)."""

    figures: dict[str, int | None]
    bins: list[tuple[int, int, int]]


@dataclass(frozen=True)
class StepSummary:
    """One summary row: what a step of the run found."""

    step: int
    column: str
    assertion: str
    units: int
    passed: int
    failed: int
    f_failed: float
    distinct_values: int | None
    deduplicated: bool | None
    reasons: dict[str, int]
    levels: list[str]
    parameters: dict[str, Any]
    tokens: StepTokens | None = None
    """With `token_stats=True`: the step's token statistics."""

    @property
    def flagged(self) -> bool:
        """Most rows fail (`report.MOST_ROWS_FAIL`) and the step reached no level: the report flags it."""
        return not self.levels and most_rows_fail(self.failed, self.units)


@dataclass(frozen=True)
class HistoryPoint:
    """One run of the chart: its failures per reason, summed over its steps."""

    run_id: str
    started_at: datetime
    failed: int
    reasons: dict[str, int]


@dataclass(frozen=True)
class Example:
    """One quarantined row: the checked column(s) and a few other columns, as truncated text."""

    values: dict[str, str]
    others: dict[str, str]
    message: int | None = None


@dataclass(frozen=True)
class ReasonExamples:
    """The first few quarantined rows of one step and reason; `count` is the summary's."""

    step: int
    column: str
    reason: str
    count: int
    examples: list[Example] = field(default_factory=list)


@dataclass(frozen=True)
class RunReport:
    summary_path: str
    quarantine_path: str
    run: RunInfo
    steps: list[StepSummary]
    history: list[HistoryPoint]
    examples: list[ReasonExamples]
    has_message_index: bool
    examples_per_reason: int
    example_chars: int

    @property
    def levels(self) -> list[str]:
        """The levels any step reached, mildest first."""
        reached = {level for step in self.steps for level in step.levels}
        return [level for level in LEVELS if level in reached]
