"""The Spark engine: hash, deduplicate, check in Arrow batches, join the failures back.

`SparkEngine.judge_check` judges the columns of one `RowCheck` together (the
inherited `judge` is `judge_check` with the `ChatCheck` of one column). It runs
one Spark job over the rows (after a read of the first rows, with
`dedup="auto"`) and returns a lazy annotated DataFrame:

1. with `dedup="auto"`, the first `AUTO_SAMPLE_ROWS` keys (read with a limit, so
   Spark reads the first files only) decide the dedup: it pays when at least
   `AUTO_DEDUP_MIN_REPEATS` of them repeat another;
2. the check: each row gets a wide key over the check's columns; with dedup the
   rows are grouped by key (one set of values and a row count per key) before
   Python sees them; `mapInArrow` hands exactly the check's columns (named as in
   the table, plus the key and row bookkeeping) to `check.check` in Arrow batches
   of about `BATCH_ROWS` rows and sends back only the failing (key, reason,
   count, first row) rows and one tally row per batch (keys checked, rows they
   stand for). Without dedup the failing rows are summed per key natively. The
   result is computed once and kept on the executors (a local checkpoint); the
   driver receives totals and one row per reason, never a key or a source row,
   and the tallies count the rows, so no other pass over the table is needed.

The annotated table is the source left-joined, on the key, with the failing
(key, reason) pairs: broadcast when they are few (`broadcast_limit`), else a
shuffle join. Reading it (to write a quarantine, to split the valid rows) scans
the source again, but never re-runs the check.

Nulls. Every check sees every row, nulls included, and decides itself what a
null is worth (a preference row with a null `prompt` may pass with
`na_pass=True`; a null `tools` declares nothing). A `ChatCheck` of one column
(the core check) has a null key (no length) for its nulls: they are counted as
Python judged them but annotated natively (`not_messages`, or none with
`na_pass=True`, as `check_array` gives them), since a null key joins nothing. A
tuple whose every column is null isn't counted among the distinct values
(`Judged.distinct_values`, counted only with dedup).

The key of one column is (xxhash64, murmur3 `hash`, byte length) of its text: two
different values share a key only if two independent hashes and the length all
collide (about 2^-96 per pair). The key of several columns (or of a check that
sees nulls) hashes every column's text followed by its null flag, in the check's
column order: `xxhash64(t1, t1 IS NULL, t2, t2 IS NULL, ...)`, the same with
`hash`, and the summed byte lengths (a long, nulls counting 0). Spark's hashes skip
a null argument, so without the flags `(null, x)`, `(x, null)` and `(x, "")`-like
rows would hash alike; the flag, never null itself, marks each column's position
and null-ness. Native values (lists of structs, maps, structs) are keyed on their
JSON text with nulls written out: Spark's hashes skip null fields, so
`[{"role": null, "content": "user"}]` and `[{"role": "user", "content": null}]`
hash alike, while their problems differ (`bad_message`, `empty_content`).

Reasons are ordered by count, ties by their first row (`monotonically_increasing_id`
numbers the source in its scan order), then by the global order of all codes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..rules import RowCheck
from . import base
from .base import REASON_COLUMN, Dedup, Engine, Judged, ordered_reasons, repeats_share
from .spark_keys import (
    H1,
    H2,
    KEYS,
    LENGTH,
    column_ref,
    key_columns,
    key_text,
    nulls_native,
    wide_key_columns,
)

BATCH_ROWS = 10_000
"""Rows per Arrow batch sent to Python (spark.sql.execution.arrow.maxRecordsPerBatch)."""

AUTO_DEDUP_MIN_REPEATS = 0.5
"""`dedup="auto"` deduplicates when at least this share of the sampled keys repeat another.

Deduplication costs a shuffle of the distinct values and a sort-based aggregate
(Spark can't hash-aggregate a string buffer); measured at 1M rows it lost at 30%
repeats and won at high duplication. 0.5 sits between.
"""

VALUE, REASON, COUNT = "__chatgate_value__", "__chatgate_reason__", "__chatgate_n__"
ROW = "__chatgate_row__"
FAILING_KEY_BYTES = 64
"""About what one failing (key, reason) pair weighs in a broadcast (two hashes, a length, a code)."""
_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
_LARGE_VAR_CONF = "spark.sql.execution.arrow.useLargeVarTypes"


class SparkEngine(Engine):
    """PySpark DataFrames, judged on the cluster.

    >>> judged = SparkEngine().judge(df, "messages", ChatFormat())  # doctest: +SKIP
    >>> judged.failed, judged.reasons  # doctest: +SKIP
    (2, {'not_alternating': 1, 'unknown_role': 1})
    >>> judged = SparkEngine().judge_check(df, DatasetCheck("preference"))  # doctest: +SKIP
    """

    name = "spark"

    def __init__(self, *, batch_rows: int = BATCH_ROWS) -> None:
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"batch_rows= must be a positive integer, not {batch_rows!r}")
        self.batch_rows = batch_rows

    def accepts(self, table: Any) -> bool:
        return isinstance(table, DataFrame)

    def columns(self, table: DataFrame) -> list[str]:
        return list(table.columns)

    def row_count(self, table: DataFrame) -> int:
        return table.count()

    def judge_check(
        self,
        table: DataFrame,
        check: RowCheck,
        *,
        dedup: Dedup = "auto",
        reason_column: str = REASON_COLUMN,
    ) -> Judged:
        """Judge the columns `check.columns` of `table` together, with `check.check` only.

        One job (after a read of the first rows with `dedup="auto"`); the annotated table is
        lazy. `distinct_values` is the number of distinct tuples Python checked, but a
        tuple whose every column is null (see `Judged`), and None without dedup;
        `extra["checked"]` is the lazy check (`failing_frame`).
        """
        keyed = _Keyed.of(table, check, dedup, reason_column)
        repeats = None
        if dedup == "auto":
            repeats = _sampled_repeats(table, keyed)
            deduplicated = repeats >= AUTO_DEDUP_MIN_REPEATS
        else:
            deduplicated = dedup == "on"
        checked = self._failing_frame(table, keyed, deduplicated)
        with _session_conf(checked, {_BATCH_CONF: str(self.batch_rows)}):
            # The check runs once: the quarantine, valid and summary all read this result.
            result = checked.localCheckpoint(eager=True)
        tally = _tally(result)
        annotated = _annotate(table, keyed, result, tally.failing_keys, reason_column)
        return Judged(
            units=tally.rows,
            failed=sum(tally.counts.values()),
            reasons=ordered_reasons(tally.counts, tally.first_seen),
            distinct_values=tally.distinct if deduplicated else None,
            annotated=annotated,
            reason_column=reason_column,
            deduplicated=deduplicated,
            extra={
                "repeats_estimate": repeats,
                "failing_distinct": tally.failing_keys_with_length,
                "checked": checked,
            },
        )

    def failing_frame(self, table: DataFrame, check: RowCheck, *, deduplicated: bool) -> DataFrame:
        """The lazy check: (key, reason, count, first row) of each failing key, plus tallies.

        A tally row has null key and reason; its count is the number of keys a Python
        batch checked whose values aren't all null (rows, without `deduplicated`) and
        its row the number of source rows they stand for. With
        `deduplicated`, the rows are grouped by key before Python sees them and a
        row's count is its number of source rows. The first row
        (`monotonically_increasing_id`, taken before any filter) only orders
        reasons of equal counts.
        """
        return self._failing_frame(table, _Keyed.of(table, check), deduplicated)

    def _failing_frame(self, table: DataFrame, keyed: _Keyed, deduplicated: bool) -> DataFrame:
        # Spark-side names of the check's columns (mapInArrow can't take a dotted name).
        sent = _value_names(keyed.names)
        numbered = table.select(
            *(keyed.keys[k].alias(k) for k in KEYS),
            *(column_ref(name).alias(alias) for name, alias in zip(keyed.names, sent)),
            F.monotonically_increasing_id().alias(ROW),
        )
        to_check = numbered
        if deduplicated:
            # One key, one set of values: the first row's stand for all of them.
            to_check = numbered.groupBy(*KEYS).agg(
                *(F.first(alias).alias(alias) for alias in sent),
                F.count(F.lit(1)).alias(COUNT),
                F.min(ROW).alias(ROW),
            )
        check = functools.partial(
            check_batches,
            check=keyed.check,
            names=dict(zip(sent, keyed.names)),
            counted=deduplicated,
            large_strings=_conf_true(table, _LARGE_VAR_CONF),
        )
        checked = to_check.mapInArrow(check, _checked_schema(keyed.length_type))
        if not deduplicated:
            # The same failing key on many rows comes back once per row: one row per key.
            # The batches' tallies (null reason) fall in one group: their rows add up.
            first_or_total = F.when(F.col(REASON).isNull(), F.sum(ROW)).otherwise(F.min(ROW))
            checked = checked.groupBy(*KEYS, REASON).agg(
                F.sum(COUNT).alias(COUNT), first_or_total.alias(ROW)
            )
        return checked

    def failing_rows(self, judged: Judged) -> DataFrame:
        return judged.annotated.filter(column_ref(judged.reason_column).isNotNull())

    def passing_rows(self, judged: Judged) -> DataFrame:
        passing = judged.annotated.filter(column_ref(judged.reason_column).isNull())
        return passing.drop(judged.reason_column)

    def segment_values(self, table: DataFrame, column: str) -> list[Any]:
        values = (
            table.select(column_ref(column).alias("v")).distinct().orderBy(F.col("v").asc_nulls_last())
        )
        return [row[0] for row in values.collect()]

    def filter_equal(self, table: DataFrame, column: str, value: Any) -> DataFrame:
        if value is None:
            return table.filter(column_ref(column).isNull())
        return table.filter(column_ref(column) == F.lit(value))

    def preview(self, table: DataFrame, limit: int) -> pa.Table:
        return table.limit(limit).toArrow()

    def drop_columns(self, table: DataFrame, names: list[str]) -> DataFrame:
        return table.drop(*names)

    def concat(self, tables: list[DataFrame]) -> DataFrame:
        return functools.reduce(lambda a, b: a.unionByName(b), tables)


@dataclass(frozen=True)
class _Keyed:
    """How one check is keyed on one table.

    `names`: the check's columns (as in the table, each once); `keys`: the
    expressions of H1, H2 and LENGTH; `present`: the rows whose key can join
    back (None: all of them); `null_reason`: the code of the others (one
    column's nulls), given natively in the annotated table.
    """

    check: RowCheck
    names: tuple[str, ...]
    keys: dict[str, Column]
    length_type: str
    present: Column | None
    null_reason: str | None

    @classmethod
    def of(
        cls,
        table: DataFrame,
        check: RowCheck,
        dedup: str = "auto",
        reason_column: str = REASON_COLUMN,
    ) -> _Keyed:
        names = _check_arguments(table, check, dedup, reason_column)
        if nulls_native(check):
            value = column_ref(check.column)
            return cls(
                check=check,
                names=names,
                keys=dict(zip(KEYS, key_columns(value, table.schema[check.column].dataType))),
                length_type="int",
                present=value.isNotNull(),
                null_reason=None if check.fmt.na_pass else "not_messages",
            )
        texts = [key_text(column_ref(name), table.schema[name].dataType) for name in names]
        return cls(
            check=check,
            names=names,
            keys=dict(zip(KEYS, wide_key_columns(texts))),
            length_type="long",
            present=None,
            null_reason=None,
        )


def check_batches(
    batches: Iterator[pa.RecordBatch],
    *,
    check: RowCheck,
    names: dict[str, str],
    counted: bool,
    large_strings: bool,
) -> Iterator[pa.RecordBatch]:
    """The Python step: the failing rows of each batch, then a tally row of the batch.

    Input columns: the key, the check's columns (`names` maps their names here to
    their names in the table), the rows per key (when `counted`) and the first row
    of the key. `check.check` sees a batch of the check's columns only, named as in
    the table. Output: the key, reason, count and first row of each failing key,
    and a row with a null key and reason whose count is the number of keys
    checked whose values aren't all null (a missing tuple, or one column's nulls,
    isn't a distinct value) and whose row is the number of source rows they stand for.
    """
    reason_type = pa.large_string() if large_strings else pa.string()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        values = pa.RecordBatch.from_arrays(
            [batch.column(sent) for sent in names], names=list(names.values())
        )
        codes = check.check(values)
        if isinstance(codes, pa.ChunkedArray):
            codes = codes.combine_chunks()
        if len(codes) != batch.num_rows:
            raise ValueError(
                f"{type(check).__name__}.check gave {len(codes)} codes for {batch.num_rows} rows"
            )
        failing = codes.is_valid()
        keys = [batch.column(name).filter(failing) for name in KEYS]
        reasons = codes.filter(failing).cast(reason_type)
        if counted:
            counts = batch.column(COUNT).filter(failing)
        else:
            counts = pa.repeat(pa.scalar(1, pa.int64()), len(reasons))
        rows = batch.column(ROW).filter(failing)
        sent = pc.sum(batch.column(COUNT)).as_py() if counted else batch.num_rows
        checked = batch.num_rows - _missing_rows(values)
        columns = [
            *(pa.concat_arrays([k, pa.nulls(1, k.type)]) for k in keys),
            pa.concat_arrays([reasons, pa.nulls(1, reason_type)]),
            pa.concat_arrays([counts, pa.array([checked], pa.int64())]),
            pa.concat_arrays([rows, pa.array([sent], pa.int64())]),
        ]
        yield pa.RecordBatch.from_arrays(columns, names=[*KEYS, REASON, COUNT, ROW])


def _missing_rows(values: pa.RecordBatch) -> int:
    """The rows of `values` whose every column is null."""
    if any(column.null_count == 0 for column in values.columns):
        return 0
    missing = functools.reduce(pc.and_, (column.is_null() for column in values.columns))
    return pc.sum(missing).as_py() or 0


def _annotate(
    table: DataFrame, keyed: _Keyed, result: DataFrame, failing_keys: int, reason_column: str
) -> DataFrame:
    """`table` plus the reason of each row: a join on the key with the failing keys, nulls judged natively.

    The failing keys stay on the executors. A broadcast join ships them through the
    driver, so it is asked for only when they are few (`broadcast_limit`); otherwise
    Spark shuffles both sides.
    """
    missing = F.lit(keyed.null_reason).cast("string")
    if failing_keys == 0:
        if keyed.present is None:
            return table.withColumn(reason_column, F.lit(None).cast("string"))
        return table.withColumn(reason_column, F.when(~keyed.present, missing).cast("string"))
    pairs = result.filter(F.col(REASON).isNotNull()).select(*KEYS, REASON)
    # Spark's own choice could broadcast them anyway (its size estimate of the checkpoint is low).
    pairs = F.broadcast(pairs) if failing_keys <= broadcast_limit(table) else pairs.hint("shuffle_hash")
    keys = [keyed.keys[k].alias(k) for k in KEYS]
    joined = table.select("*", *keys).join(pairs, on=list(KEYS), how="left")
    reason = F.col(REASON)
    if keyed.present is not None:
        reason = F.when(~keyed.present, missing).otherwise(reason)
    return joined.select(*(column_ref(c) for c in table.columns), reason.alias(reason_column))


def broadcast_limit(table: DataFrame) -> int:
    """How many failing keys may be broadcast: their bytes within Spark's broadcast threshold
    and a quarter of what the driver may collect (a broadcast passes through the driver)."""
    conf = table.sparkSession.conf
    threshold = _bytes(conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB") or "10MB")
    collectable = _bytes(conf.get("spark.driver.maxResultSize", "1g") or "1g") or 2**62
    return max(0, min(threshold, collectable // 4)) // FAILING_KEY_BYTES


def _bytes(size: str) -> int:
    """Spark's size strings ('10MB', '1g', '1048576b', '-1') in bytes; -1 (off) is 0."""
    text = size.strip().lower().rstrip("b")
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    if text.startswith("-"):
        return 0
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text or 0)


@dataclass(frozen=True)
class _Tally:
    """What the driver learns of a check: sizes bounded by the number of codes, never by the rows."""

    rows: int
    distinct: int
    failing_keys: int
    failing_keys_with_length: int
    counts: dict[str, int]
    first_seen: dict[str, int]


def _tally(result: DataFrame) -> _Tally:
    """Totals and per-reason counts of the checked result, aggregated on the executors."""
    tallies = F.col(REASON).isNull()
    totals = result.agg(
        F.sum(F.when(tallies, F.col(COUNT))).alias("distinct"),
        F.sum(F.when(tallies, F.col(ROW))).alias("rows"),
        F.count(F.when(~tallies, 1)).alias("failing"),
        F.count(F.when(~tallies & F.col(LENGTH).isNotNull(), 1)).alias("with_length"),
    ).first()
    assert totals is not None
    per_reason = (
        result.filter(~tallies).groupBy(REASON).agg(F.sum(COUNT).alias(COUNT), F.min(ROW).alias(ROW)).collect()
    )
    return _Tally(
        rows=totals["rows"] or 0,
        distinct=totals["distinct"] or 0,
        failing_keys=totals["failing"] or 0,
        failing_keys_with_length=totals["with_length"] or 0,
        counts={row[REASON]: row[COUNT] for row in per_reason},
        first_seen={row[REASON]: row[ROW] for row in per_reason},
    )


def _sampled_repeats(table: DataFrame, keyed: _Keyed) -> float:
    """The share of repeated keys among the first `AUTO_SAMPLE_ROWS` rows Spark reads.

    `collect` of a limit reads partitions one by one until it has the rows, so
    only the first files are read, not the table.
    """
    sample = table.select(keyed.keys[H1].alias(H1)).limit(base.AUTO_SAMPLE_ROWS).collect()
    return round(repeats_share([row[0] for row in sample]), 4)


def _value_names(names: tuple[str, ...]) -> list[str]:
    """The Spark-side names of a check's columns: the single one is VALUE, as ever."""
    if len(names) == 1:
        return [VALUE]
    return [f"{VALUE[:-2]}{i}__" for i in range(len(names))]


def _checked_schema(length_type: str) -> str:
    return f"{H1} long, {H2} int, {LENGTH} {length_type}, {REASON} string, {COUNT} long, {ROW} long"


def _check_arguments(
    table: DataFrame, check: RowCheck, dedup: str, reason_column: str
) -> tuple[str, ...]:
    """The check's columns, each once, after checking every argument (no Spark job)."""
    base.check_dedup(dedup)
    if not isinstance(check, RowCheck):
        raise TypeError(f"check= must be a RowCheck, not {type(check).__name__}")
    names = tuple(dict.fromkeys(check.columns))
    if not names:
        raise ValueError(f"{type(check).__name__} reads no column")
    for column in names:
        if column not in table.columns:
            raise KeyError(f"column {column!r} isn't in the table; its columns are {table.columns}")
    taken = {c.lower() for c in table.columns}
    if reason_column.lower() in taken:
        raise ValueError(
            f"the table already has a column {reason_column!r}: "
            "rename it or pick another reason_column="
        )
    reserved = (*KEYS, VALUE, *_value_names(names), REASON, COUNT, ROW)
    clash = taken & {name.lower() for name in reserved}
    if clash:
        raise ValueError(f"the table has chatgate's reserved column {min(clash)!r}")
    return names


def _conf_true(table: DataFrame, key: str) -> bool:
    return (table.sparkSession.conf.get(key, "false") or "false").lower() == "true"


@contextmanager
def _session_conf(table: DataFrame, settings: dict[str, str]) -> Iterator[None]:
    """Runtime SQL settings for the jobs run inside the block, restored after."""
    conf = table.sparkSession.conf
    changed: dict[str, str | None] = {}
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
