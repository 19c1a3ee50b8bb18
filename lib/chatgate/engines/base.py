"""What every engine does, in one shape, so the API and the job never ask which engine runs.

An engine judges one column of a table in five steps: hash each value, keep the
distinct ones (when that pays), check them in Arrow batches with
`rules.check_array`, and join the failing (key, reason) pairs back to the rows
on the table's own backend. The driver only ever holds counts and the small
failing set.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

import pyarrow as pa

from ..errors import ChatgateError, did_you_mean
from ..names import REASON
from ..rules import ChatCheck, ChatFormat, RowCheck, reason_rank

Dedup = Literal["auto", "on", "off"]
DEDUP_MODES: tuple[Dedup, ...] = get_args(Dedup)


def check_dedup(dedup: object) -> Dedup:
    """`dedup` when it is one of DEDUP_MODES; ValueError naming them otherwise."""
    if dedup not in DEDUP_MODES:
        raise ValueError(f"dedup= must be one of {list(DEDUP_MODES)}, not {dedup!r}")
    return dedup

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


@dataclass(frozen=True)
class AutoDedup:
    """The dedup="auto" policy: deduplicate when at least `min_repeats` of the sampled tuples repeat another.

    The share is measured on the first `AUTO_SAMPLE_ROWS` rows the engine reads
    (for several columns, the share of rows whose tuple repeats another row's).
    """

    min_repeats: float

    def decide(self, repeats: float) -> bool:
        return repeats >= self.min_repeats


LOCAL_AUTO = AutoDedup(min_repeats=0.0)
"""In memory, deduplicating costs next to nothing: "auto" always does."""

EMBEDDED_AUTO = AutoDedup(min_repeats=0.50)
"""Deduplicating reads the source twice and hashes every value with SHA-256 (to group
by digest and fetch one row per group back by row id); without it, every row goes to
the check, which runs on every core. Measured on 2 cores at 1M rows of about 2.5 KB of JSON
(a busy machine, so roughly): at 30% repeats, dedup took 22 s and a plain scan 16.5 s;
by CPU count, deduplicating pays from about half the rows repeating."""

EMBEDDED_PARTS_AUTO = AutoDedup(min_repeats=0.95)
"""The embedded engine when its workers would read the files in parts (see `ibis.split`):
reading and checking then scale with the workers while dedup still reads the source twice
and hashes every value. Measured on 2 cores at 1M rows of about 2.5 KB of JSON (quiet machine):
at 90% repeats the job took 7.2 s without dedup and 10.1 s with it; at 0% and 30%, 9.0 s
and 14.6 to 16.2 s. Only near-copies of one table pay for it."""


SPARK_MEMO = AutoDedup(min_repeats=0.50)
"""Spark's dedup="auto" (see `spark.check._Memo`): a partition's memo looks up the key of each
of its first `AUTO_SAMPLE_ROWS` rows, and goes on only when at least this share of them repeated
one; otherwise every later row of the partition is judged without a lookup. Looking rows up
costs more than the dictionary: each row's key is made a Python tuple, the new values are copied
out for the check and each row's code is put back in place. Measured on 2 cores at 1M rows of
about 2.5 KB of JSON (in turns, a busy machine): with 31% of the rows repeating in their
partition, the job took 12.8 s with the memo and 11.9 s without; at 90%, the memo saved 9% to
15%. The two meet near half."""


def require_column(table_columns: Iterable[Any], column: str) -> None:
    """KeyError naming `column` and the table's columns when it isn't one of them."""
    names = list(table_columns)
    if column not in names:
        hint = did_you_mean(str(column), [str(name) for name in names], quote=True)
        raise KeyError(f"column {column!r} isn't in the table; its columns are {names}{hint}")


def check_arguments(
    table_columns: list[str], check: object, dedup: object, reason_column: str
) -> tuple[str, ...]:
    """The columns `check` reads, each once, after checking every argument of a judge (no query).

    Column names are compared ignoring case for the reason column, as SQL engines do.
    """
    check_dedup(dedup)
    if not isinstance(check, RowCheck):
        raise TypeError(f"check must be a RowCheck, not {type(check).__name__}")
    columns = tuple(dict.fromkeys(check.columns))
    if not columns:
        raise ValueError(f"the check {check.describe()!r} reads no column")
    for column in columns:
        require_column(table_columns, column)
    if reason_column.lower() in {c.lower() for c in table_columns}:
        raise ValueError(
            f"the table already has a column {reason_column!r}; rename it or pick another reason_column="
        )
    return columns


def repeats_share(keys: list[Any]) -> float:
    """The share of `keys` that repeat an earlier one (0 when there are none)."""
    return 1.0 - len(set(keys)) / len(keys) if keys else 0.0


@dataclass(frozen=True)
class FailingColumns:
    """Columns computed from each failing row of a step (`judge_check`'s `failing_columns=`):
    `compute` of a batch of the `inputs` columns (the table's, and the step's reason column)
    gives the `added` columns, in order. Picklable, for the processes that check the rows."""

    inputs: tuple[str, ...]
    added: pa.Schema
    compute: Callable[[pa.RecordBatch], list[pa.Array]]

    def of(self, rows: pa.RecordBatch) -> list[pa.Array]:
        """The added columns of some failing `rows` (holding the inputs, and maybe other columns)."""
        arrays = self.compute(rows.select(list(self.inputs)))
        return [values.cast(f.type) for values, f in zip(arrays, self.added)]


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

    `locate`, when the engine located each failing value's problem as it checked it
    (the embedded engine asked to, see `IbisEngine`'s `locate=`): given some of the
    annotated rows and a column name, those rows plus that column, the message index
    of each row's problem (what `rules.message_indices` gives). None: not located.

    `failing_computed`, when the engine computed the `FailingColumns` asked of it where it
    checked the rows (the embedded engine's workers, which keep the failing rows they
    read; Spark's check pass, which sends them back whole): the rows of `annotated` whose
    reason isn't null, with those columns after. None: not computed, the caller computes
    them on the failing rows.
    """

    units: int
    failed: int
    reasons: dict[str, int]
    distinct_values: int | None
    annotated: Any
    reason_column: str = REASON
    deduplicated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    locate: Callable[[Any, str], Any] | None = None
    failing_computed: Any = None

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
    table_kind: str
    """What tables the engine judges, as an error says it."""

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
        reason_column: str = REASON,
    ) -> Judged:
        """Judge one chat column: `judge_check` with the core check of `column`."""
        if not isinstance(fmt, ChatFormat):
            raise TypeError(f"fmt must be a ChatFormat, not {type(fmt).__name__}")
        return self.judge_check(table, ChatCheck(column, fmt), dedup=dedup, reason_column=reason_column)

    def judge_check(
        self,
        table: Any,
        check: RowCheck,
        *,
        dedup: Dedup = "auto",
        reason_column: str = REASON,
        failing_columns: FailingColumns | None = None,
    ) -> Judged:
        """Judge the columns `check.columns` of `table` together, with `check.check` only; see `Judged`.

        The codes come from `check.check(batch)` alone, each batch holding exactly the
        check's columns, named as in the table. dedup="on" checks each distinct tuple
        once, "off" every row, "auto" decides by the engine's `auto` policy. Every
        argument is checked before the engine reads a row. `failing_columns`: columns of
        the failing rows the engine may compute as it checks them (`Judged.failing_computed`).
        """
        if not self.accepts(table):
            raise TypeError(f"the {self.name} engine judges {self.table_kind}, not a {type(table).__name__}")
        table_columns = self.columns(table)
        columns = check_arguments(table_columns, check, dedup, reason_column)
        assert isinstance(check, RowCheck)  # check_arguments refuses anything else
        for name in failing_columns.inputs if failing_columns is not None else ():
            if name != reason_column:
                require_column(table_columns, name)
        return self._judge(table, check, columns, dedup, reason_column, failing_columns)

    @abstractmethod
    def _judge(
        self,
        table: Any,
        check: RowCheck,
        columns: tuple[str, ...],
        dedup: Dedup,
        reason_column: str,
        failing_columns: FailingColumns | None = None,
    ) -> Judged:
        """`judge_check` once its arguments are checked: `columns` are the check's, each once."""

    def sum_batches(
        self, table: Any, inputs: list[str], partial: Callable[[Mapping[str, Any]], pa.Table], schema: pa.Schema
    ) -> pa.Table:
        """`partial` of each batch of the `inputs` columns (column name -> Arrow array, or Python
        values where Arrow can't hold them), run where the rows are, summed per value of its first
        column (every other column of `schema` is a count): a small table on the driver. (Token
        statistics: the rows per token count.)"""
        raise NotImplementedError(f"the {self.name} engine doesn't sum over Arrow batches")

    @abstractmethod
    def where_reason(self, table: Any, column: str, *, present: bool) -> Any:
        """The rows of `table` whose `column` holds a reason (present=True) or is null."""

    def failing_rows(self, judged: Judged) -> Any:
        """The rows of `judged.annotated` whose reason isn't null."""
        return self.where_reason(judged.annotated, judged.reason_column, present=True)

    def passing_rows(self, judged: Judged) -> Any:
        """The rows whose reason is null, without the reason column."""
        rows = self.where_reason(judged.annotated, judged.reason_column, present=False)
        return self.drop_columns(rows, [judged.reason_column])

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

    def head_values(self, table: Any, columns: list[str], limit: int) -> dict[str, list[Any]]:
        """The first `limit` values of `columns`, as the check reads them (not as displayed)."""
        head = self.preview(table, limit)
        return {c: head.column(c).to_pylist() for c in columns}

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

    def value_type(self, table: Any, column: str) -> pa.DataType:
        """The Arrow type the engine gives `column` (a value computed from it may keep it); no row is read."""
        field: pa.Field = self.preview(table, 0).schema.field(column)
        return field.type

    def with_computed_columns(
        self,
        table: Any,
        inputs: list[str],
        added: pa.Schema,
        compute: Callable[[Mapping[str, Any]], list[Any]],
        layout: dict[str, str],
        unchanged: tuple[str, str] | None = None,
    ) -> Any:
        """`table` plus the columns of `added`, which `compute` gives from the `inputs` columns
        (column name -> Arrow array, or Python values where Arrow can't hold them; one value per
        row in, one array or list per added column out), then arranged by `layout` (column ->
        output name, in order). `unchanged` = (added column, added list column): an engine whose
        rows are Python objects keeps, where the list is empty, the row's own value of the column
        the added one replaces (the computed value equals it, but isn't it).

        By default, over Arrow batches where the rows are (`with_arrow_columns`, `project`)."""
        out = self.with_arrow_columns(table, inputs, added, _OnBatch(compute))
        return self.project(out, [], layout, {})

    def with_arrow_columns(
        self, table: Any, inputs: list[str], added: pa.Schema, compute: Callable[[pa.RecordBatch], list[pa.Array]]
    ) -> Any:
        """`table` plus the columns of `added`: `compute` of each Arrow batch of the `inputs`
        columns gives them (one array per added column, one value per row)."""
        raise NotImplementedError(f"the {self.name} engine doesn't add columns by Arrow batches")

    def project(
        self, table: Any, columns: list[str], renamed: dict[str, str], constants: dict[str, pa.Scalar]
    ) -> Any:
        """`columns` of `table`, then each `renamed` column under its new name, then `constants`."""
        raise NotImplementedError(f"the {self.name} engine doesn't project columns")

    @abstractmethod
    def drop_columns(self, table: Any, names: list[str]) -> Any:
        """`table` without the columns `names`."""

    @abstractmethod
    def concat(self, tables: list[Any]) -> Any:
        """The rows of `tables` (same columns) one after the other."""


def summed_by_key(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """`tables` (of `schema`) summed per value of the first column, sorted by it."""
    key, counts = schema.names[0], schema.names[1:]
    if not tables:
        return schema.empty_table()
    merged = pa.concat_tables([t.cast(schema) for t in tables])
    summed = merged.group_by(key).aggregate([(c, "sum") for c in counts])
    ordered = summed.select([key, *(f"{c}_sum" for c in counts)]).rename_columns(schema.names)
    return ordered.cast(schema).sort_by(key)


@dataclass(frozen=True)
class _OnBatch:
    """A computation over named columns, as `with_arrow_columns` runs it on each Arrow batch."""

    compute: Callable[[Mapping[str, Any]], list[Any]]

    def __call__(self, batch: pa.RecordBatch) -> list[pa.Array]:
        results = self.compute({name: batch.column(name) for name in batch.schema.names})
        return [cast(pa.Array, values) for values in results]  # Arrow in, Arrow out
