"""The Spark engine: hash, deduplicate, check in Arrow batches, broadcast the failures back.

`SparkEngine.judge` runs two Spark jobs and returns a lazy annotated DataFrame:

1. a stats pass, one native aggregation (no Python, no shuffle beyond partial
   aggregates): rows, non-null rows, the first null row and, with `dedup="auto"`,
   a HyperLogLog estimate of the distinct values, which decides the dedup;
2. the check: each non-null value gets a wide key; with dedup the values are
   grouped by key (one value and a row count per key) before Python sees them;
   `mapInArrow` hands them to `rules.check_array` in Arrow batches of about
   `BATCH_ROWS` rows and sends back only the failing (key, reason, count, first
   row) rows and one tally row per batch. Without dedup the failing rows are
   summed per key natively. The driver collects that small set as Arrow; it never
   sees a source row.

The annotated table is the source left-joined, on the key, with a broadcast of
the failing (key, reason) pairs; a null value gets its reason natively
(`not_messages`, or none with `na_pass=True`) and never goes to Python. Reading
it (to write a quarantine, to split the valid rows) scans the source again.

The key of a value is (xxhash64, murmur3 `hash`, byte length) of its text: two
different values share a key only if two independent hashes and the length all
collide (about 2^-96 per pair). Native values (lists of structs, maps, structs)
are keyed on their JSON text with nulls written out: Spark's hashes skip null
fields, so `[{"role": null, "content": "user"}]` and
`[{"role": "user", "content": null}]` hash alike, while their problems differ
(`bad_message`, `empty_content`).

Reasons of equal counts are ordered by their first row, as
`monotonically_increasing_id` numbers the source (its scan order).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..rules import ChatFormat, check_array
from .base import REASON_COLUMN, Dedup, Engine, Judged, ordered_reasons

BATCH_ROWS = 10_000
"""Rows per Arrow batch sent to Python (spark.sql.execution.arrow.maxRecordsPerBatch)."""

DEDUP_BELOW = 0.5
"""`dedup="auto"` deduplicates when distinct values / non-null rows is below this.

Deduplication costs a shuffle of the distinct values and a sort-based aggregate
(Spark can't hash-aggregate a string buffer); measured at 1M rows it lost at 30%
duplicates (0.7 distinct) and won at high duplication. 0.5 sits between.
"""

ESTIMATE_RSD = 0.05
"""Relative standard deviation of the HyperLogLog distinct estimate (Spark's default)."""

H1, H2, LENGTH = "__chatgate_h1__", "__chatgate_h2__", "__chatgate_len__"
KEYS = (H1, H2, LENGTH)
VALUE, REASON, COUNT = "__chatgate_value__", "__chatgate_reason__", "__chatgate_n__"
ROW = "__chatgate_row__"
_CHECKED_SCHEMA = f"{H1} long, {H2} int, {LENGTH} int, {REASON} string, {COUNT} long, {ROW} long"
_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
_LARGE_VAR_CONF = "spark.sql.execution.arrow.useLargeVarTypes"
_DEDUP_MODES = ("auto", "on", "off")


class SparkEngine(Engine):
    """PySpark DataFrames, judged on the cluster.

    >>> judged = SparkEngine().judge(df, "messages", ChatFormat())  # doctest: +SKIP
    >>> judged.failed, judged.reasons  # doctest: +SKIP
    (2, {'not_alternating': 1, 'unknown_role': 1})
    """

    name = "spark"

    def __init__(self, *, batch_rows: int = BATCH_ROWS, dedup_below: float = DEDUP_BELOW) -> None:
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"batch_rows= must be a positive integer, not {batch_rows!r}")
        if not 0.0 <= dedup_below <= 1.0:
            raise ValueError(f"dedup_below= must be between 0 and 1, not {dedup_below!r}")
        self.batch_rows = batch_rows
        self.dedup_below = dedup_below

    def accepts(self, table: Any) -> bool:
        return isinstance(table, DataFrame)

    def columns(self, table: DataFrame) -> list[str]:
        return list(table.columns)

    def row_count(self, table: DataFrame) -> int:
        return table.count()

    def judge(
        self,
        table: DataFrame,
        column: str,
        fmt: ChatFormat,
        *,
        dedup: Dedup = "auto",
        reason_column: str = REASON_COLUMN,
    ) -> Judged:
        dtype = _check_arguments(table, column, dedup, reason_column)
        value = _col(column)
        keys = key_columns(value, dtype)
        hashed = F.xxhash64(_key_text(value, dtype)) if dedup == "auto" else None
        rows, present, first_null, estimate = _stats(table, value, hashed)
        deduplicated = dedup == "on" or (
            dedup == "auto" and present > 0 and estimate / present < self.dedup_below
        )
        checked = self.failing_frame(table, column, fmt, deduplicated=deduplicated)
        failing, distinct = self._collect(checked, present)

        nulls = rows - present
        counts, first_seen = _reason_counts(failing)
        if nulls and not fmt.na_pass:
            counts["not_messages"] = counts.get("not_messages", 0) + nulls
            first_seen["not_messages"] = min(first_seen.get("not_messages", first_null), first_null)
        annotated = _annotate(table, value, keys, failing, fmt, reason_column)
        return Judged(
            units=rows,
            failed=sum(counts.values()),
            reasons=ordered_reasons(counts, first_seen),
            distinct_values=distinct,
            annotated=annotated,
            reason_column=reason_column,
            deduplicated=deduplicated,
            extra={
                "distinct_estimate": estimate,
                "dedup_below": self.dedup_below,
                "failing_distinct": failing.num_rows,
                "checked": checked,
            },
        )

    def failing_frame(
        self, table: DataFrame, column: str, fmt: ChatFormat, *, deduplicated: bool
    ) -> DataFrame:
        """The lazy check: (key, reason, count, first row) of each failing value, plus tallies.

        A tally row has null key and reason; its count is the number of values a
        Python batch checked. With `deduplicated`, the values are grouped by key
        before Python sees them and a row's count is its number of source rows.
        The first row (`monotonically_increasing_id`, taken before any filter)
        only orders reasons of equal counts.
        """
        value = _col(column)
        keys = key_columns(value, table.schema[column].dataType)
        numbered = table.select(
            *keys, value.alias(VALUE), F.monotonically_increasing_id().alias(ROW)
        )
        present = numbered.filter(F.col(VALUE).isNotNull())
        if deduplicated:
            present = present.groupBy(*KEYS).agg(
                F.first(VALUE).alias(VALUE), F.count(F.lit(1)).alias(COUNT), F.min(ROW).alias(ROW)
            )
        check = functools.partial(
            check_batches,
            fmt=fmt,
            counted=deduplicated,
            large_strings=_conf_true(table, _LARGE_VAR_CONF),
        )
        checked = present.mapInArrow(check, _CHECKED_SCHEMA)
        if not deduplicated:
            # The same failing value on many rows comes back once per row: one row per key.
            checked = checked.groupBy(*KEYS, REASON).agg(
                F.sum(COUNT).alias(COUNT), F.min(ROW).alias(ROW)
            )
        return checked

    def _collect(self, checked: DataFrame, present: int) -> tuple[pa.Table, int]:
        """The failing (key, reason, count) rows and the number of values checked."""
        if present == 0:
            return _empty_failing(), 0
        with _session_conf(checked, {_BATCH_CONF: str(self.batch_rows)}):
            result = checked.toArrow()
        tallies = pc.is_null(result[REASON])
        distinct = pc.sum(result.filter(tallies)[COUNT]).as_py() or 0
        return result.filter(pc.invert(tallies)), distinct

    def failing_rows(self, judged: Judged) -> DataFrame:
        return judged.annotated.filter(_col(judged.reason_column).isNotNull())

    def passing_rows(self, judged: Judged) -> DataFrame:
        passing = judged.annotated.filter(_col(judged.reason_column).isNull())
        return passing.drop(judged.reason_column)

    def segment_values(self, table: DataFrame, column: str) -> list:
        values = (
            table.select(_col(column).alias("v")).distinct().orderBy(F.col("v").asc_nulls_last())
        )
        return [row[0] for row in values.collect()]

    def filter_equal(self, table: DataFrame, column: str, value: Any) -> DataFrame:
        if value is None:
            return table.filter(_col(column).isNull())
        return table.filter(_col(column) == F.lit(value))

    def preview(self, table: DataFrame, limit: int) -> pa.Table:
        return table.limit(limit).toArrow()

    def drop_columns(self, table: DataFrame, names: list[str]) -> DataFrame:
        return table.drop(*names)

    def concat(self, tables: list[DataFrame]) -> DataFrame:
        return functools.reduce(lambda a, b: a.unionByName(b), tables)


def key_columns(value: Column, dtype: T.DataType) -> list[Column]:
    """The wide key of each value: (xxhash64, murmur3, byte length) of its text."""
    text = _key_text(value, dtype)
    return [
        F.xxhash64(text).alias(H1),
        F.hash(text).alias(H2),
        F.octet_length(text).alias(LENGTH),
    ]


def _key_text(value: Column, dtype: T.DataType) -> Column:
    """What the key hashes: the raw bytes of text, the JSON (nulls written) of anything else."""
    if isinstance(dtype, T.BinaryType):
        return value
    if isinstance(dtype, T.StringType):
        # A collated string hashes by collation ("Hi" = "hi" in UTF8_LCASE): hash its bytes.
        binary_collation = getattr(dtype, "collation", "UTF8_BINARY") == "UTF8_BINARY"
        return value if binary_collation else value.cast("binary")
    if isinstance(dtype, (T.ArrayType, T.MapType, T.StructType)):
        return F.to_json(value, {"ignoreNullFields": "false"})
    return value.cast("string")


def check_batches(
    batches: Iterator[pa.RecordBatch], *, fmt: ChatFormat, counted: bool, large_strings: bool
) -> Iterator[pa.RecordBatch]:
    """The Python step: the failing rows of each batch, then a tally row of the batch.

    Input columns: the key, the value, the rows per value (when `counted`) and
    the first row of the value. Output: the key, reason, count and first row of
    each failing value, and a row with a null key and reason whose count is the
    number of values checked.
    """
    reason_type = pa.large_string() if large_strings else pa.string()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        codes = check_array(batch.column(VALUE), fmt)
        failing = codes.is_valid()
        keys = [batch.column(name).filter(failing) for name in KEYS]
        reasons = codes.filter(failing).cast(reason_type)
        if counted:
            counts = batch.column(COUNT).filter(failing)
        else:
            counts = pa.repeat(pa.scalar(1, pa.int64()), len(reasons))
        rows = batch.column(ROW).filter(failing)
        columns = [
            *(pa.concat_arrays([k, pa.nulls(1, k.type)]) for k in keys),
            pa.concat_arrays([reasons, pa.nulls(1, reason_type)]),
            pa.concat_arrays([counts, pa.array([batch.num_rows], pa.int64())]),
            pa.concat_arrays([rows, pa.nulls(1, pa.int64())]),
        ]
        yield pa.RecordBatch.from_arrays(columns, names=[*KEYS, REASON, COUNT, ROW])


def _annotate(
    table: DataFrame,
    value: Column,
    keys: list[Column],
    failing: pa.Table,
    fmt: ChatFormat,
    reason_column: str,
) -> DataFrame:
    """`table` plus the reason of each row: a broadcast join on the key, nulls judged natively."""
    missing = F.lit(None if fmt.na_pass else "not_messages").cast("string")
    if failing.num_rows == 0:
        return table.withColumn(reason_column, F.when(value.isNull(), missing).cast("string"))
    spark = table.sparkSession
    pairs = spark.createDataFrame(failing.select([*KEYS, REASON]))
    joined = table.select("*", *keys).join(F.broadcast(pairs), on=list(KEYS), how="left")
    reason = F.when(value.isNull(), missing).otherwise(F.col(REASON))
    return joined.select(*(_col(c) for c in table.columns), reason.alias(reason_column))


def _stats(
    table: DataFrame, value: Column, hashed: Column | None
) -> tuple[int, int, int | None, int | None]:
    """(rows, non-null rows, first null row, estimated distinct non-null values), in one pass."""
    columns = [value.alias(VALUE), F.monotonically_increasing_id().alias(ROW)]
    if hashed is not None:
        columns.append(hashed.alias(H1))
    present = F.col(VALUE).isNotNull()
    aggregates = [F.count(F.lit(1)), F.count(VALUE), F.min(F.when(~present, F.col(ROW)))]
    if hashed is not None:
        # A null has a hash too: count the hash only where there is a value.
        aggregates.append(F.approx_count_distinct(F.when(present, F.col(H1)), rsd=ESTIMATE_RSD))
    row = table.select(*columns).agg(*aggregates).first()
    return row[0], row[1], row[2], (row[3] if hashed is not None else None)


def _reason_counts(failing: pa.Table) -> tuple[dict[str, int], dict[str, int]]:
    """The rows and the first row of each reason."""
    if failing.num_rows == 0:
        return {}, {}
    sums = failing.group_by(REASON).aggregate([(COUNT, "sum"), (ROW, "min")])
    reasons = sums[REASON].to_pylist()
    return (
        dict(zip(reasons, sums[f"{COUNT}_sum"].to_pylist())),
        dict(zip(reasons, sums[f"{ROW}_min"].to_pylist())),
    )


def _empty_failing() -> pa.Table:
    schema = pa.schema(
        [
            (H1, pa.int64()),
            (H2, pa.int32()),
            (LENGTH, pa.int32()),
            (REASON, pa.string()),
            (COUNT, pa.int64()),
            (ROW, pa.int64()),
        ]
    )
    return schema.empty_table()


def _check_arguments(table: DataFrame, column: str, dedup: str, reason_column: str) -> T.DataType:
    if dedup not in _DEDUP_MODES:
        raise ValueError(f"dedup= must be one of {list(_DEDUP_MODES)}, not {dedup!r}")
    if column not in table.columns:
        raise KeyError(f"column {column!r} isn't in the table; its columns are {table.columns}")
    taken = {c.lower() for c in table.columns}
    if reason_column.lower() in taken:
        raise ValueError(
            f"the table already has a column {reason_column!r}: "
            "rename it or pick another reason_column="
        )
    clash = taken & {name.lower() for name in (*KEYS, VALUE, REASON, COUNT, ROW)}
    if clash:
        raise ValueError(f"the table has chatgate's reserved column {min(clash)!r}")
    return table.schema[column].dataType


def _col(name: str) -> Column:
    """A top-level column by name, even one with dots or backticks in it."""
    return F.col("`" + name.replace("`", "``") + "`")


def _conf_true(table: DataFrame, key: str) -> bool:
    return (table.sparkSession.conf.get(key, "false") or "false").lower() == "true"


@contextmanager
def _session_conf(table: DataFrame, settings: dict[str, str]):
    """Runtime SQL settings for the jobs run inside the block, restored after."""
    conf = table.sparkSession.conf
    changed = {}
    for key, value in settings.items():
        if conf.get(key, None) != value:
            changed[key] = conf.get(key, None)
            conf.set(key, value)
    try:
        yield
    finally:
        for key, old in changed.items():
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)
