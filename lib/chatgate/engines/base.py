"""What every engine does, in one shape, so the API and the job never ask which engine runs.

An engine judges one column of a table in five steps: hash each value, keep the
distinct ones (when that pays), check them in Arrow batches with
`rules.check_array`, and join the failing (key, reason) pairs back to the rows
on the table's own backend. The driver only ever holds counts and the small
failing set.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ..errors import ChatgateError
from ..names import REASON
from ..rules import ChatCheck, ChatFormat, RowCheck, reason_rank

Dedup = Literal["auto", "on", "off"]
DEDUP_MODES: tuple[Dedup, ...] = get_args(Dedup)


def check_dedup(dedup: object) -> Dedup:
    """`dedup` when it is one of DEDUP_MODES; ValueError naming them otherwise."""
    if dedup not in DEDUP_MODES:
        raise ValueError(f"dedup= must be one of {list(DEDUP_MODES)}, not {dedup!r}")
    return dedup
REASON_COLUMN = REASON

AUTO_SAMPLE_ROWS = 20_000
"""dedup="auto" decides from this many rows, the first the engine reads (its first files).

A distinct count of the whole column costs a full scan (measured: up to 65% of the
job on Spark); the first rows cost a fraction of a second on Spark and nothing on
the embedded engine, whose stream without dedup checks them meanwhile. The share
of repeats among the first rows is that of the table when the repeats lie near
each other (a preference table's prompt on consecutive rows, templated rows
written together) and an under-count when copies are spread far apart, which
picks "off": force dedup="on" for such tables.
"""


def repeats_share(keys: list[Any]) -> float:
    """The share of `keys` that repeat an earlier one (0 when there are none)."""
    return 1.0 - len(set(keys)) / len(keys) if keys else 0.0


@dataclass
class Judged:
    """One column judged: counts for the driver, the annotated table where the rows live.

    `annotated` is the input table with one more column, `reason_column`, holding
    the problem code of each row (null where the row passes). It is lazy on the
    engines that are.

    `distinct_values` is the exact number of distinct values the check judged when
    it deduplicated (`deduplicated`), the same on every engine; None when it judged
    every row (no count is made, it would cost a pass). A value is the tuple of the
    check's columns (one column for a chat column alone), compared exactly: texts
    byte for byte (JSON that differs only in whitespace is two values), nested
    values field by field. A missing value isn't counted: a tuple is missing when
    every one of its columns is null, so a chat column's nulls aren't counted and a
    preference row with only `prompt` null is.
    """

    units: int
    failed: int
    reasons: dict[str, int]
    distinct_values: int | None
    annotated: Any
    reason_column: str = REASON_COLUMN
    deduplicated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        return self.units - self.failed


def ordered_reasons(counts: dict[str, int], first_seen: dict[str, int] | None = None) -> dict[str, int]:
    """Reasons by count, descending; ties by first failing row when known, else by check order."""
    rank = first_seen or {}

    def key(reason: str) -> tuple[int, int, int, str]:
        return (-counts[reason], rank.get(reason, 0), reason_rank(reason), reason)

    return {reason: counts[reason] for reason in sorted(counts, key=key)}


class Engine(ABC):
    """A backend that can judge a chat column of its own tables."""

    name: str

    @abstractmethod
    def accepts(self, table: Any) -> bool:
        """Is `table` one of this engine's tables?"""

    @abstractmethod
    def columns(self, table: Any) -> list[str]:
        """The column names of `table`, in order."""

    def judge(
        self,
        table: Any,
        column: str,
        fmt: ChatFormat,
        *,
        dedup: Dedup = "auto",
        reason_column: str = REASON_COLUMN,
    ) -> Judged:
        """Judge one chat column: `judge_check` with the core check of `column`."""
        return self.judge_check(table, ChatCheck(column, fmt), dedup=dedup, reason_column=reason_column)

    @abstractmethod
    def judge_check(
        self,
        table: Any,
        check: RowCheck,
        *,
        dedup: Dedup = "auto",
        reason_column: str = REASON_COLUMN,
    ) -> Judged:
        """Judge the columns `check.columns` of `table` together, with `check.check` only; see `Judged`."""

    @abstractmethod
    def failing_rows(self, judged: Judged) -> Any:
        """The rows of `judged.annotated` whose reason isn't null."""

    @abstractmethod
    def passing_rows(self, judged: Judged) -> Any:
        """The rows whose reason is null, without the reason column."""

    @abstractmethod
    def segment_values(self, table: Any, column: str) -> list[Any]:
        """The distinct values of `column`, sorted, nulls last."""

    @abstractmethod
    def filter_equal(self, table: Any, column: str, value: Any) -> Any:
        """The rows of `table` where `column` equals `value` (is null when value is None)."""

    @abstractmethod
    def row_count(self, table: Any) -> int:
        """The number of rows of `table`."""

    def extract(self, judged: Judged) -> Any:
        """The failing rows as a step report shows them (engines that know row order number them)."""
        return self.failing_rows(judged)

    @abstractmethod
    def preview(self, table: Any, limit: int) -> Any:
        """The first `limit` rows of `table` as a pyarrow Table, for display."""

    def sunder(self, table: Any, checks: list[tuple[RowCheck, Dedup]], kind: str) -> Any:
        """The rows of `table` that pass every check (kind="pass") or fail one (kind="fail")."""
        if not checks:
            raise ChatgateError("no step can split the data: every step has pre=, segments= or didn't run")
        passing, failing = table, []
        for check, dedup in checks:
            judged = self.judge_check(passing, check, dedup=dedup)
            if kind == "fail":
                failing.append(self.drop_columns(self.failing_rows(judged), [judged.reason_column]))
            passing = self.passing_rows(judged)
        return passing if kind == "pass" else self.concat(failing)

    @abstractmethod
    def drop_columns(self, table: Any, names: list[str]) -> Any:
        """`table` without the columns `names`."""

    @abstractmethod
    def concat(self, tables: list[Any]) -> Any:
        """The rows of `tables` (same columns) one after the other."""
