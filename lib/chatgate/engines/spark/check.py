"""The Spark engine's check: keys, the Python step over Arrow batches, the tallies and the join back."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import StructField, StructType

from ... import names as public_names
from ...rules import RowCheck
from .. import base
from ..group_check import located_messages
from .keys import (
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
from .shapes import PROVEN

VALUE, REASON, COUNT = "__chatgate_value__", "__chatgate_reason__", "__chatgate_n__"
MESSAGE = "__chatgate_message__"
"""With `located`, the message of each failing key's problem, found where it was checked."""
ROW = "__chatgate_row__"
CARRIED = "__chatgate_c"
"""The prefix of the table's columns in the check pass (numbered: mapInArrow parses names)."""
COMPUTED = "__chatgate_computed"
"""The prefix of the columns the check pass computes of the failing rows (`ComputedHere`)."""
JUDGED = "__chatgate_judged__"
PROVEN_ROWS = "__chatgate_proven_rows__"
"""In a tally row, the rows of the batch the JVM proved passing (`shapes`), which Python didn't judge."""
MEMO_KEYS = 200_000
"""The most keys a check worker remembers per partition with `dedup="auto"` (about 30 MB)."""
FAILING_ROWS_PER_PARTITION = 25_000
"""Failing rows per partition of an annotated table's failing side (fewer partitions are merged)."""
FAILING_KEY_BYTES = 64
"""About what one failing (key, reason) pair weighs in a broadcast (two hashes, a length, a code)."""
_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
_LARGE_VAR_CONF = "spark.sql.execution.arrow.useLargeVarTypes"


@dataclass(frozen=True)
class ComputedHere:
    """`FailingColumns` computed in the check pass, from the failing rows it sends back whole:
    its inputs read the carried columns under the table's `names`, the code under `reason`;
    they come back under `aliases` (mapInArrow parses names)."""

    columns: base.FailingColumns
    names: tuple[str, ...]
    reason: str

    @classmethod
    def of(
        cls, computed: base.FailingColumns, table: DataFrame, reason: str, *, large_strings: bool
    ) -> ComputedHere:
        # The batches give Spark the Arrow types it reads its own schema as.
        types = [to_arrow_type(from_arrow_type(f.type), prefers_large_types=large_strings) for f in computed.added]
        added = pa.schema([pa.field(f.name, t) for f, t in zip(computed.added, types)])
        return cls(base.FailingColumns(computed.inputs, added, computed.compute), tuple(table.columns), reason)

    @property
    def aliases(self) -> list[str]:
        return [f"{COMPUTED}{i}__" for i in range(len(self.columns.added))]

    def fields(self) -> list[StructField]:
        return [StructField(a, from_arrow_type(f.type), True) for a, f in zip(self.aliases, self.columns.added)]

    def arrays(self, carried: list[pa.Array], reasons: pa.Array) -> list[pa.Array]:
        """The computed columns of some failing rows: their carried columns and codes."""
        rows = pa.RecordBatch.from_arrays([*carried, reasons.cast(pa.string())], names=[*self.names, self.reason])
        return self.columns.of(rows)


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
        reason_column: str = public_names.REASON,
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
    memo: bool = False,
    carried: tuple[str, ...] = (),
    located: bool = False,
    computed: ComputedHere | None = None,
) -> Iterator[pa.RecordBatch]:
    """The Python step: the failing rows of each batch, then a tally row of the batch.

    Input columns: the key, the check's columns (`names` maps their names here to
    their names in the table), the rows per key (when `counted`) and the first row
    of the key. `check.check` sees a batch of the check's columns only, named as in
    the table. Output: the `carried` columns (the table's, when whole rows come
    back), key, reason, count and first row of each failing key (or row), and a
    row with nulls there and in the reason whose count is the number of keys
    checked whose values aren't all null (a missing tuple, or one column's nulls,
    isn't a distinct value) and whose row is the number of source rows they stand for.
    Its `JUDGED` is the number of values `check.check` was given. Rows whose `PROVEN`
    column is true (`shapes`) pass unread: the tally counts them, and as `PROVEN_ROWS`.

    With `memo` (rows not grouped by key), a key judged earlier in this partition
    takes its code from the partition's `_Memo` instead of being judged again, for as
    long as the memo is `active`; then every row is judged. With
    `located`, a column holds the message of each failing row's problem
    (`group_check.located_messages`), null in the tally row; with `computed` (and `carried`),
    the last columns are those it computes of the failing rows.
    """
    reason_type = pa.large_string() if large_strings else pa.string()
    judge = _Memo(check) if memo else None
    for given in batches:
        batch, proven = _without_proven(given)
        if given.num_rows == 0:
            continue
        values = pa.RecordBatch.from_arrays(
            [batch.column(sent) for sent in names], names=list(names.values())
        )
        codes, judged = _batch_codes(check, values, judge, batch)
        failing = codes.is_valid()
        kept = [batch.column(name).filter(failing) for name in (*carried, *KEYS)]
        reasons = codes.filter(failing).cast(reason_type)
        if counted:
            counts = batch.column(COUNT).filter(failing)
        else:
            counts = pa.repeat(pa.scalar(1, pa.int64()), len(reasons))
        rows = batch.column(ROW).filter(failing)
        sent = (pc.sum(batch.column(COUNT)).as_py() or 0 if counted else batch.num_rows) + proven
        checked = batch.num_rows - _missing_rows(values) + proven
        columns = [
            *(pa.concat_arrays([k, pa.nulls(1, k.type)]) for k in kept),
            pa.concat_arrays([reasons, pa.nulls(1, reason_type)]),
            pa.concat_arrays([counts, pa.array([checked], pa.int64())]),
            pa.concat_arrays([rows, pa.array([sent], pa.int64())]),
            *(pa.concat_arrays([pa.nulls(len(reasons), pa.int64()), pa.array([n], pa.int64())]) for n in (judged, proven)),
        ]
        extra = _of_failing_rows(
            check, values, failing, reasons, kept[: len(carried)], located=located, computed=computed
        )
        columns += [pa.concat_arrays([array, pa.nulls(1, array.type)]) for array in extra.values()]
        yield pa.RecordBatch.from_arrays(
            columns, names=[*carried, *KEYS, REASON, COUNT, ROW, JUDGED, PROVEN_ROWS, *extra]
        )


def _batch_codes(
    check: RowCheck, values: pa.RecordBatch, judge: _Memo | None, batch: pa.RecordBatch
) -> tuple[pa.Array, int]:
    """The code of each row of `values` (the check's columns of `batch`), and how many were judged."""
    if values.num_rows == 0:  # every row of the batch was proven
        return pa.nulls(0, pa.string()), 0
    if judge is None or not judge.active:
        return _codes(check, values), values.num_rows
    return judge.codes(values, _row_keys(batch))


def _without_proven(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, int]:
    """The rows of `batch` that the JVM didn't prove passing, and how many it did (`shapes`)."""
    if PROVEN not in batch.schema.names:
        return batch, 0
    proven = batch.column(PROVEN)
    count = proven.true_count
    return (batch.filter(pc.invert(proven)) if count else batch), count


def _of_failing_rows(
    check: RowCheck,
    values: pa.RecordBatch,
    failing: pa.BooleanArray,
    reasons: pa.Array,
    carried: list[pa.Array],
    *,
    located: bool,
    computed: ComputedHere | None,
) -> dict[str, pa.Array]:
    """The columns the check pass adds of a batch's failing rows, by name: the message of
    each one's problem (`located`), then the `computed` columns of the `carried` rows."""
    extra: dict[str, pa.Array] = {}
    if located:
        failing_values = [column.filter(failing) for column in values.columns]
        extra[MESSAGE] = located_messages(check, tuple(values.schema.names), failing_values, reasons)
    if computed is not None:
        extra.update(zip(computed.aliases, computed.arrays(carried, reasons)))
    return extra


def _codes(check: RowCheck, values: pa.RecordBatch) -> pa.Array:
    """`check.check(values)`, one code per row."""
    codes = check.check(values)
    if isinstance(codes, pa.ChunkedArray):
        codes = codes.combine_chunks()
    if len(codes) != values.num_rows:
        raise ValueError(f"{type(check).__name__}.check gave {len(codes)} codes for {values.num_rows} rows")
    return codes


_LENGTH_AT = KEYS.index(LENGTH)


def _row_keys(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    return list(zip(*(batch.column(name).to_pylist() for name in KEYS)))


class _Memo:
    """The codes of the keys one partition has judged, so a repeat isn't judged twice.

    This is `dedup="auto"` on Spark: no shuffle and no pass before the check, while
    copies that lie in one partition (a file's repeated rows, a preference
    table's prompt on consecutive rows) are judged once. Keys are the wide keys
    `dedup="on"` groups by, so a repeat gets the code its value would get. At most
    `MEMO_KEYS` keys are kept, so a worker's memory doesn't grow with its partition.
    A partition whose first rows repeat too little (`base.SPARK_MEMO`) stops the lookups:
    the memo is no longer `active`, and the rest of it is judged row by row.
    """

    def __init__(self, check: RowCheck) -> None:
        self.check = check
        self.known: dict[tuple[Any, ...], str | None] = {}
        self.active = True
        self.rows = 0  # looked up so far, until the first AUTO_SAMPLE_ROWS decide
        self.values = 0  # of them, not a lone column's nulls
        self.judged = 0  # of those, judged (the others took a remembered code)

    def codes(self, values: pa.RecordBatch, keys: list[tuple[Any, ...]]) -> tuple[pa.Array, int]:
        """The code of each row of `values`, and how many rows were judged."""
        known = self.known
        fresh: dict[tuple[Any, ...], int] = {}
        for row, key in enumerate(keys):
            if key not in known and key not in fresh:
                fresh[key] = row
        if len(fresh) == len(keys):
            codes = _codes(self.check, values)
            found = dict(zip(fresh, codes.to_pylist()))
        else:
            judged = _codes(self.check, values.take(pa.array(list(fresh.values()), pa.int64())))
            found = dict(zip(fresh, judged.to_pylist()))
            codes = pa.array([found[key] if key in found else known[key] for key in keys], judged.type)
        if len(known) < MEMO_KEYS:
            known.update(found)
        self._watch(keys, fresh)
        return codes, len(fresh)

    def _watch(self, keys: list[tuple[Any, ...]], fresh: dict[tuple[Any, ...], int]) -> None:
        """Count the rows looked up until `AUTO_SAMPLE_ROWS` or more (whole batches); then stop
        unless enough of their values repeated. A lone column's nulls (all one key, of no length)
        share a key without being copies of a value: they count as rows, not as values."""
        if self.rows >= base.AUTO_SAMPLE_ROWS:
            return
        nulls = [key for key in keys if key[_LENGTH_AT] is None]
        self.rows += len(keys)
        self.values += len(keys) - len(nulls)
        self.judged += len(fresh) - (nulls[0] in fresh if nulls else 0)
        if self.rows < base.AUTO_SAMPLE_ROWS:
            return
        repeats = 1 - self.judged / self.values if self.values else 0.0
        if not base.SPARK_MEMO.decide(repeats):
            self.active = False
            self.known = {}


def _missing_rows(values: pa.RecordBatch) -> int:
    """The rows of `values` whose every column is null."""
    if any(column.null_count == 0 for column in values.columns):
        return 0
    missing = functools.reduce(pc.and_, (column.is_null() for column in values.columns))
    return pc.sum(missing).as_py() or 0


def _annotate(
    table: DataFrame,
    keyed: _Keyed,
    result: DataFrame,
    failing: int,
    reason_column: str,
    carried: tuple[str, ...] = (),
) -> DataFrame:
    """`table` plus the reason of each row.

    When the check sent back whole failing rows (`carried` names the table's
    columns in `result`), the annotated table is those rows, with their reasons,
    followed by the table's other rows (an anti-join on the key) with a null
    reason: reading the failing rows (a quarantine, a repair) reads `result`
    only, as Spark drops the branch whose reason is a null literal. Otherwise it
    is a left join on the key with the failing (key, reason) pairs, nulls judged
    natively.

    The failing keys stay on the executors. A broadcast join ships them through the
    driver, so it is asked for only when they are few (`broadcast_limit`); otherwise
    Spark shuffles both sides.
    """
    missing = F.lit(keyed.null_reason).cast("string")
    if failing == 0:
        if keyed.present is None:
            return table.withColumn(reason_column, F.lit(None).cast("string"))
        return table.withColumn(reason_column, F.when(~keyed.present, missing).cast("string"))
    failed = result.filter(F.col(REASON).isNotNull())
    keys = [keyed.keys[k].alias(k) for k in KEYS]
    if carried:
        failing_rows = carried_failing_rows(table, result, failing, reason_column, carried)
        failing_keys = _spread(table, failed.filter(F.col(LENGTH).isNotNull()).select(*KEYS), failing)
        others = table.select("*", *keys).join(failing_keys, on=list(KEYS), how="left_anti")
        if keyed.present is not None and keyed.null_reason is not None:
            others = others.filter(keyed.present)  # the nulls failed: Python sent them back
        passing = others.select(*(column_ref(c) for c in table.columns), F.lit(None).cast("string").alias(reason_column))
        return failing_rows.union(passing)
    pairs = _spread(table, failed.select(*KEYS, REASON), failing)
    joined = table.select("*", *keys).join(pairs, on=list(KEYS), how="left")
    reason = F.col(REASON)
    if keyed.present is not None:
        reason = F.when(~keyed.present, missing).otherwise(reason)
    return joined.select(*(column_ref(c) for c in table.columns), reason.alias(reason_column))


def _spread(table: DataFrame, failing_keys: DataFrame, count: int) -> DataFrame:
    """`failing_keys` hinted for the join with `table`: broadcast when few, else shuffled."""
    # Spark's own choice could broadcast them anyway (its size estimate of the checkpoint is low).
    return F.broadcast(failing_keys) if count <= broadcast_limit(table) else failing_keys.hint("shuffle_hash")


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
    failing: int
    """The failing keys (rows, when the check sent back whole rows)."""
    failing_with_length: int
    judged: int
    """The values Python judged (with `dedup="auto"`, the repeats a partition's memo answered aren't)."""
    proven: int
    """The rows the JVM proved passing (`shapes`), which Python didn't judge."""
    counts: dict[str, int]
    first_seen: dict[str, int]


def _tally(result: DataFrame) -> _Tally:
    """Totals and per-reason counts of the checked result, aggregated on the executors in one
    Spark job: grouped by reason, the batches' tally rows (null reason) are one group."""
    tallies = F.col(REASON).isNull()
    groups = result.groupBy(REASON).agg(
        F.sum(COUNT).alias(COUNT),
        # A failing row's ROW is its first row; a tally row's, the rows it stands for (summed for
        # the tally rows only: a sum of row ids could overflow).
        F.min(ROW).alias("first"),
        F.sum(F.when(tallies, F.col(ROW))).alias("rows"),
        F.count(F.lit(1)).alias("failing"),
        F.count(LENGTH).alias("with_length"),
        F.sum(JUDGED).alias("judged"),
        F.sum(PROVEN_ROWS).alias("proven"),
    ).collect()
    totals = next((group for group in groups if group[REASON] is None), None)
    per_reason = [group for group in groups if group[REASON] is not None]

    def total(name: str) -> int:
        return (totals[name] if totals is not None else None) or 0

    return _Tally(
        rows=total("rows"),
        distinct=total(COUNT),
        failing=sum(group["failing"] for group in per_reason),
        failing_with_length=sum(group["with_length"] for group in per_reason),
        judged=total("judged"),
        proven=total("proven"),
        counts={group[REASON]: group[COUNT] for group in per_reason},
        first_seen={group[REASON]: group["first"] for group in per_reason},
    )


def _value_names(names: tuple[str, ...]) -> list[str]:
    """The Spark-side names of a check's columns: the single one is VALUE, as ever."""
    if len(names) == 1:
        return [VALUE]
    return [f"{VALUE[:-2]}{i}__" for i in range(len(names))]


def carried_failing_rows(
    table: DataFrame,
    result: DataFrame,
    failing: int,
    reason_column: str,
    carried: tuple[str, ...],
    computed: ComputedHere | None = None,
) -> DataFrame:
    """The failing rows the check sent back whole (`carried` names the table's columns in
    `result`), with their reasons, and the `computed` columns of them."""
    added = [] if computed is None else [
        F.col(alias).alias(f.name) for alias, f in zip(computed.aliases, computed.columns.added)
    ]
    rows = result.filter(F.col(REASON).isNotNull()).select(
        *(F.col(name).alias(column) for name, column in zip(carried, table.columns)),
        F.col(REASON).alias(reason_column),
        *added,
    )
    # Each Python task costs a worker's start-up: the passes over the failing rows (where
    # each problem is, the repairs) take partitions of about FAILING_ROWS_PER_PARTITION rows.
    # (coalesce never adds partitions.)
    return rows.coalesce(max(1, -(-failing // FAILING_ROWS_PER_PARTITION)))


def _checked_schema(
    length_type: str,
    carried: list[StructField] | None = None,
    located: bool = False,
    computed: ComputedHere | None = None,
) -> StructType:
    """The check's output: the carried columns, then the bookkeeping (and the message, `located`),
    then the `computed` columns."""
    length = T.IntegerType() if length_type == "int" else T.LongType()
    bookkeeping = [
        (H1, T.LongType()), (H2, T.IntegerType()), (LENGTH, length), (REASON, T.StringType()),
        (COUNT, T.LongType()), (ROW, T.LongType()), (JUDGED, T.LongType()), (PROVEN_ROWS, T.LongType()),
        *([(MESSAGE, T.IntegerType())] if located else []),
    ]
    return StructType([
        *(carried or []),
        *(StructField(name, dtype, True) for name, dtype in bookkeeping),
        *(computed.fields() if computed is not None else []),
    ])


def carried_names(table: DataFrame) -> tuple[str, ...] | None:
    """Names for the table's columns in the check pass, so whole failing rows come back
    from it; None when a column's type can't cross to Python in Arrow (the rows then stay,
    and only keys come back)."""
    try:
        for f in table.schema.fields:
            to_arrow_type(f.dataType)
    except Exception:  # noqa: BLE001 - pyspark's errors for an unsupported type vary by version
        return None
    return tuple(f"{CARRIED}{i}__" for i in range(len(table.columns)))


def _check_arguments(
    table: DataFrame, check: RowCheck, dedup: str, reason_column: str
) -> tuple[str, ...]:
    """The check's columns, each once, after checking every argument (no Spark job)."""
    names = base.check_arguments(table.columns, check, dedup, reason_column)
    taken = {c.lower() for c in table.columns}
    reserved = (*KEYS, VALUE, *_value_names(names), REASON, COUNT, ROW, JUDGED, PROVEN_ROWS, MESSAGE, PROVEN)
    clash = taken & {name.lower() for name in reserved}
    if clash:
        raise ValueError(f"the table has chatgate's reserved column {min(clash)!r}")
    return names


def _conf_true(table: DataFrame, key: str) -> bool:
    return (table.sparkSession.conf.get(key, "false") or "false").lower() == "true"


def _located(rows: DataFrame, column: str, *, keyed: _Keyed, result: DataFrame, failing: int) -> DataFrame:
    """`rows` (failing rows of the table the check judged, or of a later step's table) plus `column`:
    the message of each row's problem, as the check located it for the row's key. The failing keys'
    messages are joined on the key, recomputed on these rows only."""
    if failing == 0:
        return rows.withColumn(column, F.lit(None).cast("int"))
    messages = (
        result.filter(F.col(REASON).isNotNull() & F.col(LENGTH).isNotNull())
        .select(*KEYS, F.col(MESSAGE).alias(column))
        .dropDuplicates(list(KEYS))
    )
    keyed_rows = rows.select("*", *(keyed.keys[k].alias(k) for k in KEYS))
    joined = keyed_rows.join(_spread(rows, messages, failing), on=list(KEYS), how="left")
    return joined.select(*(column_ref(c) for c in rows.columns), F.col(column))
