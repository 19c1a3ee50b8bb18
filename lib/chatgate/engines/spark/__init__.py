"""The Spark engine: hash, deduplicate, check in Arrow batches, join the failures back.

`SparkEngine.judge_check` judges the columns of one `RowCheck` together (the
inherited `judge` is `judge_check` with the `ChatCheck` of one column). It runs
one Spark job over the rows and returns a lazy annotated DataFrame:

1. the dedup: with `dedup="on"` the rows are grouped by key (one set of values and
   a row count per key) before Python sees them, which costs a shuffle of the
   distinct values; with `dedup="auto"` they are not, and each partition's
   Python worker remembers the codes of the keys it judged (`check._Memo`), so
   copies within a partition are judged once without a shuffle or a pass before
   the check (a partition whose first rows hardly repeat stops remembering); with
   `dedup="off"` every row is judged;
2. the check: each row gets a wide key over the check's columns; `mapInArrow`
   hands the check's columns (named as in the table, plus the key and row
   bookkeeping) to `check.check` in Arrow batches of about `BATCH_ROWS` rows.
   Without dedup (`auto`, `off`) the batches carry every column of the table and
   Python sends back the failing rows whole, with their key and reason; with
   `dedup="on"` it sends back the failing (key, reason, count, first row). Either
   way one tally row per batch follows (keys checked, rows they stand for). Rows
   the JVM proves passing (`shapes`: the core check of one text column, without
   `dedup="on"`) are counted there and never handed to Python. The
   result is computed once and kept on the executors (a local checkpoint, which a
   Spark Connect server keeps for as long as the client holds a plan built on it); the
   driver receives totals and one row per reason, never a key or a source row,
   and the tallies count the rows, so no other pass over the table is needed.

The annotated table, when failing rows came back whole, is those rows followed by
the source's rows whose key isn't a failing one (a left anti-join), with a null
reason: Spark drops that branch from any plan that reads failing rows only (a
quarantine, the repairs), so they cost no scan of the source. With
`dedup="on"`, it is the source left-joined, on the key, with the failing (key,
reason) pairs. The failing keys are broadcast when they are few
(`broadcast_limit`), else shuffled. Reading the rows that pass scans the source
again, but never re-runs the check. A table with a column that Arrow can't carry
(an interval) is judged as with `dedup="on"`, which sends only the check's columns.

Nulls. Every check sees every row, nulls included, and decides itself what a
null is worth (a preference row with a null `prompt` may pass with
`na_pass=True`; a null `tools` declares nothing). A `ChatCheck` of one column
(the core check) has a null key (no length) for its nulls: they are counted as
Python judged them but annotated natively (`not_messages`, or none with
`na_pass=True`, as `check_array` gives them), since a null key joins nothing. A
tuple whose every column is null isn't counted among the distinct values
(`Judged.distinct_values`, counted only with dedup).

The key of one column is (xxhash64, CRC-32, byte length) of its text: two
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

Spark Connect. The engine takes a Connect session's DataFrames as it takes classic ones
(`SparkSession.builder.remote("sc://host:15002")`, or `$SPARK_REMOTE` for the job): it
uses the DataFrame API, `table.sparkSession` and SQL only, never an RDD, the JVM or
delta-spark's Python `DeltaTable` (see delta.py).

Reasons are ordered by count, ties by their first row (`monotonically_increasing_id`
numbers the source in its scan order), then by the global order of all codes.
"""

from __future__ import annotations

import functools
import logging
import operator
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import StructField, StructType

from ...errors import ChatgateError, error_chain, no_space_left
from ...progress import label_or
from ...rules import RowCheck
from ..base import Dedup, FailingColumns, Judged, ordered_reasons, summed_by_key
from ..lakehouse import LakehouseEngine
from .check import (
    _BATCH_CONF,
    _LARGE_VAR_CONF,
    COUNT,
    JUDGED,
    MESSAGE,
    PROVEN_ROWS,
    REASON,
    ROW,
    ComputedHere,
    _annotate,
    _checked_schema,
    _conf_true,
    _Keyed,
    _located,
    _tally,
    _value_names,
    carried_failing_rows,
    carried_names,
    check_batches,
)
from .errors import error_text, java_throwables, spark_error_line
from .failures import java_line, jvm_gone, log_says_oom, oom_cause, out_of_memory, short
from .keys import KEYS, column_ref
from .progress import spark_progress
from .session import OOM_EXIT_CODE, get_spark, job_jvm_output, jvm_exit_code, jvm_log, runtime_settings
from .shapes import PROVEN, proof_for

log = logging.getLogger("chatgate")

BATCH_ROWS = 10_000
"""Rows per Arrow batch sent to Python (spark.sql.execution.arrow.maxRecordsPerBatch)."""


class SparkEngine(LakehouseEngine):
    """PySpark DataFrames, judged on the cluster.

    (Skipped in the doctests: they need a SparkSession and a DataFrame `df`; the Spark tests run this.)

    >>> judged = SparkEngine().judge(df, "messages", ChatFormat())  # doctest: +SKIP
    >>> judged.failed, judged.reasons  # doctest: +SKIP
    (2, {'not_alternating': 1, 'unknown_role': 1})
    >>> judged = SparkEngine().judge_check(df, DatasetCheck("preference"))  # doctest: +SKIP
    """

    name = "spark"
    table_kind = "PySpark DataFrames"

    def __init__(
        self, *, batch_rows: int = BATCH_ROWS, spark: SparkSession | None = None, locate: bool = False, prove: bool = True
    ) -> None:
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"batch_rows= must be a positive integer, not {batch_rows!r}")
        self.batch_rows = batch_rows
        # The check also finds each failing value's problem message (`Judged.locate`): the job's quarantine reads it.
        self.locate = locate
        # Rows the JVM proves passing stay there (`shapes`); off, Python judges every row.
        self.prove = prove
        self._spark = spark
        self._master: str | None = None
        self._master_asked = False

    @property
    def spark(self) -> SparkSession:
        """The session the job reads and writes with (judging uses each table's own).

        Without an active session, the job starts one whose JVM prints to a file
        (`session.job_jvm_output`), and py4j's own messages are kept to warnings.
        """
        if self._spark is None:
            _quiet_py4j()
            self._spark = get_spark("chatgate-job", jvm_output=job_jvm_output())
            _quiet_accumulator_server()
            if jvm_log() is not None:
                log.info("Spark's own output (its log, warnings, progress): %s", jvm_log())
        if not self._master_asked:
            # Asked while the JVM answers: a message about its death names the master it ran on.
            self._master, self._master_asked = _master(self._spark), True
        return self._spark

    def accepts(self, table: Any) -> bool:
        return isinstance(table, DataFrame)

    def watched(self, label: str) -> AbstractContextManager[Any]:
        """The tasks of the block's Spark jobs, done of all (see `progress.spark_progress`)."""
        return spark_progress(self.spark, label, verb="done")

    def columns(self, table: DataFrame) -> list[str]:
        return list(table.columns)

    def row_count(self, table: DataFrame) -> int:
        return table.count()

    def _judge(
        self,
        table: DataFrame,
        check: RowCheck,
        columns: tuple[str, ...],
        dedup: Dedup,
        reason_column: str,
        failing_columns: FailingColumns | None = None,
    ) -> Judged:
        """One job; the annotated table is lazy. `extra["checked"]` is the lazy check
        (`failing_frame`), `extra["values_judged"]` how many values Python judged and
        `extra["values_proven"]` how many rows the JVM proved passing (`shapes`)."""
        keyed = _Keyed.of(table, check, dedup, reason_column)
        names = carried_names(table)
        # A table with a column Arrow can't carry is grouped by key, whatever the dedup.
        carried = names if names is not None and dedup != "on" else ()
        deduplicated = not carried
        computed = None
        if failing_columns is not None and carried:
            large = _conf_true(table, _LARGE_VAR_CONF)
            computed = ComputedHere.of(failing_columns, table, reason_column, large_strings=large)
        proof = proof_for(table, check) if carried and self.prove else None
        checked = self._failing_frame(
            table, keyed, deduplicated, memo=dedup == "auto", carried=carried, located=self.locate, computed=computed,
            proof=proof,
        )
        label = label_or(f"checking {', '.join(keyed.names)}")
        with runtime_settings(table.sparkSession, {_BATCH_CONF: str(self.batch_rows)}), spark_progress(table.sparkSession, label):
            # The check runs once: the quarantine, valid and summary all read this result.
            result = checked.localCheckpoint(eager=True)
        tally = _tally(result)
        annotated = _annotate(table, keyed, result, tally.failing, reason_column, carried)
        extra: dict[str, Any] = {"values_judged": tally.judged, "values_proven": tally.proven, "checked": checked}
        if deduplicated:
            extra["failing_distinct"] = tally.failing_with_length
        return Judged(
            units=tally.rows,
            failed=sum(tally.counts.values()),
            reasons=ordered_reasons(tally.counts, tally.first_seen),
            distinct_values=tally.distinct if deduplicated else None,
            annotated=annotated,
            reason_column=reason_column,
            deduplicated=deduplicated,
            locate=functools.partial(_located, keyed=keyed, result=result, failing=tally.failing) if self.locate else None,
            failing_computed=(
                None if computed is None
                else carried_failing_rows(table, result, tally.failing, reason_column, carried, computed)
            ),
            extra=extra,
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

    def _failing_frame(
        self,
        table: DataFrame,
        keyed: _Keyed,
        deduplicated: bool,
        memo: bool = False,
        carried: tuple[str, ...] = (),
        located: bool = False,
        computed: ComputedHere | None = None,
        proof: Column | None = None,
    ) -> DataFrame:
        """The check pass; with `carried` (the table's columns renamed), failing rows come back whole;
        `located`, with the message of each one's problem (`check.MESSAGE`); `computed`, with those
        columns of them. With `proof` (`shapes`), the rows it proves passing cross with nothing but it."""
        if carried:
            by_name = dict(zip(table.columns, carried))
            sent = [by_name[name] for name in keyed.names]
            values = [_unless_proven(column_ref(name), proof).alias(alias) for name, alias in zip(table.columns, carried)]
            # Nullable, whatever the table says: a batch's tally row has none of them.
            fields = [StructField(alias, f.dataType, True) for alias, f in zip(carried, table.schema.fields)]
        else:
            # Spark-side names of the check's columns (mapInArrow can't take a dotted name).
            sent = _value_names(keyed.names)
            values = [_within(table, name, keyed.check.value_limits.get(name)).alias(alias) for name, alias in zip(keyed.names, sent)]
            fields = []
        source, marked = (table, []) if proof is None else (table.select("*", proof.alias(PROVEN)), [F.col(PROVEN)])
        numbered = source.select(
            *(_unless_proven(keyed.keys[k], proof).alias(k) for k in KEYS),
            *values,
            F.monotonically_increasing_id().alias(ROW),
            *marked,
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
            memo=memo and not deduplicated,
            large_strings=_conf_true(table, _LARGE_VAR_CONF),
            carried=carried,
            located=located,
            computed=computed,
        )
        checked = to_check.mapInArrow(check, _checked_schema(keyed.length_type, fields, located, computed))
        if not deduplicated and not carried:
            # The same failing key on many rows comes back once per row: one row per key.
            # The batches' tallies (null reason) fall in one group: their rows add up.
            first_or_total = F.when(F.col(REASON).isNull(), F.sum(ROW)).otherwise(F.min(ROW))
            checked = checked.groupBy(*KEYS, REASON).agg(
                F.sum(COUNT).alias(COUNT), first_or_total.alias(ROW), F.sum(JUDGED).alias(JUDGED),
                F.sum(PROVEN_ROWS).alias(PROVEN_ROWS),
                *([F.min(MESSAGE).alias(MESSAGE)] if located else []),
            )
        return checked

    def where_reason(self, table: DataFrame, column: str, *, present: bool) -> DataFrame:
        reason = column_ref(column)
        return table.filter(reason.isNotNull() if present else reason.isNull())

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
        return functools.reduce(DataFrame.unionByName, tables)

    def run_stream(
        self, stream: DataFrame, on_batch: Callable[[DataFrame, int], None], checkpoint: str, trigger: str | None
    ) -> None:
        failed: list[BaseException] = []

        def each(rows: DataFrame, batch_id: int) -> None:
            try:
                on_batch(rows, batch_id)
            except BaseException as error:
                failed.append(error)  # raised as it was once the query stops, not as Spark's wrapping of it
                raise

        writer = stream.writeStream.foreachBatch(each).option("checkpointLocation", checkpoint)
        writer = writer.trigger(availableNow=True) if trigger is None else writer.trigger(processingTime=trigger)
        query = writer.start()
        try:
            query.awaitTermination()
        except Exception:
            if failed:
                raise failed[0] from None
            raise
        finally:
            if query.isActive:
                query.stop()

    @contextmanager
    def reused(self, table: DataFrame, *, small: bool = False) -> Iterator[DataFrame]:
        # Kept on the executors (spilling to their disks), never on the driver.
        kept = table.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            yield kept
        finally:
            kept.unpersist()

    # -- shaping ----------------------------------------------------------------

    def where_any(self, table: DataFrame, columns: list[str]) -> DataFrame:
        return table.filter(functools.reduce(operator.or_, (column_ref(c).isNotNull() for c in columns)))

    def list_item_counts(self, table: DataFrame, column: str) -> tuple[int, dict[str, int]]:
        rows = table.filter(column_ref(column).isNotNull())
        # Each row's items once (a repair is applied to a row or not), and a null item per
        # row, which counts the rows in the same pass.
        items = F.concat(F.array(F.lit(None).cast("string")), F.array_distinct(column_ref(column)))
        counts = {row["item"]: row["count"] for row in rows.select(F.explode(items).alias("item")).groupBy("item").count().collect()}
        return counts.pop(None, 0), counts

    def sum_batches(
        self,
        table: DataFrame,
        inputs: list[str],
        partial: Callable[[Mapping[str, Any]], pa.Table],
        schema: pa.Schema,
    ) -> pa.Table:
        key, counts = schema.names[0], schema.names[1:]
        fields = StructType([StructField(f.name, from_arrow_type(f.type)) for f in schema])
        run = functools.partial(_partial_batches, inputs=inputs, partial=partial)
        given = table.select(*[column_ref(c).alias(f"_{i}") for i, c in enumerate(inputs)])
        summed = given.mapInArrow(run, fields).groupBy(key).agg(*[F.sum(c).alias(c) for c in counts])
        with spark_progress(table.sparkSession, label_or("counting tokens")):
            rows = summed.collect()
        found = [pa.Table.from_pylist([row.asDict() for row in rows], schema=schema)] if rows else []
        return summed_by_key(found, schema)

    def with_arrow_columns(
        self,
        table: DataFrame,
        inputs: list[str],
        added: pa.Schema,
        compute: Callable[[pa.RecordBatch], list[pa.Array]],
    ) -> DataFrame:
        if hasattr(F, "arrow_udf"):
            return _with_arrow_udf(table, inputs, added, compute)
        # mapInArrow parses each column's name (a backtick in one fails): it gets positional
        # names, and the batches their own names back before `compute` reads them.
        names = table.columns
        positional = table.toDF(*[f"_{i}" for i in range(len(names))])
        fields = [StructField(f.name, from_arrow_type(f.type)) for f in added]
        add = functools.partial(_add_arrow_columns, names=names, inputs=inputs, added=added, compute=compute)
        schema = StructType([*positional.schema.fields, *fields])
        return positional.mapInArrow(add, schema).toDF(*names, *added.names)

    def project(
        self, table: DataFrame, columns: list[str], renamed: dict[str, str], constants: dict[str, pa.Scalar]
    ) -> DataFrame:
        return table.select(
            *[column_ref(c) for c in columns],
            *[column_ref(source).alias(name) for source, name in renamed.items()],
            *[F.lit(value.as_py()).cast(from_arrow_type(value.type)).alias(name) for name, value in constants.items()],
        )

    # -- failures, on one line ----------------------------------------------------

    def explain(self, error: BaseException) -> ChatgateError | None:
        if isinstance(error, ChatgateError):
            return None
        dead = self.jvm_failure(error)
        if dead is not None:
            return dead
        if no_space_left(error):
            return ChatgateError(
                f"no space left on device ({short(java_line(error))}); free space on that disk, "
                "or point Spark's scratch space (spark.local.dir) to a larger one, then rerun"
            )
        java = next((e for e in error_chain(error) if java_throwables(e)), None)
        if java is not None:
            return ChatgateError(f"Spark failed: {short(spark_error_line(java), 600)} (rerun with --debug for details)")
        return None

    def jvm_failure(self, error: BaseException) -> ChatgateError | None:
        """The one-line error for Spark running out of memory or its JVM exiting; None for any other."""
        chain = list(error_chain(error))
        texts = [error_text(e) for e in chain]
        gone = any(jvm_gone(e, text) for e, text in zip(chain, texts))
        code = jvm_exit_code() if gone else None
        cause = next((oom_cause(text) for text in texts if oom_cause(text)), None)
        if cause is None and gone and (code == OOM_EXIT_CODE or log_says_oom()):
            cause = "java.lang.OutOfMemoryError"
        where = f" (Spark's log: {jvm_log()})" if jvm_log() is not None else ""
        exited = f" (exit status {code})" if code is not None else ""
        if cause is not None:
            return ChatgateError(out_of_memory(cause, self._master, gone) + where)
        if gone:
            log_file = jvm_log()
            why = f"Spark's log {str(log_file)!r}" if log_file is not None else "the Spark driver's log"
            return ChatgateError(
                f"Spark's JVM exited{exited} or stopped answering, so the run stopped; {why} says why. If it ran out "
                "of memory, raise spark.driver.memory (SPARK_DRIVER_MEMORY=8g before chatgate run, "
                "--driver-memory 8g for spark-submit)"
            )
        return None


def _unless_proven(column: Column, proof: Column | None) -> Column:
    """`column`, null on the rows the JVM proves passing: they cross to Python as their mark only."""
    return column if proof is None else F.when(F.col(PROVEN), F.lit(None)).otherwise(column)


def _master(session: SparkSession) -> str | None:
    """The session's master URL (local[*], yarn, ...), None when it can't be had."""
    try:
        master = session.conf.get("spark.master", None)
    except Exception:  # noqa: BLE001 - a Connect server may keep its settings to itself
        return None
    return None if master is None else str(master)


def _quiet_py4j() -> None:
    """py4j logs each connection it closes, and each failed call's traceback, at INFO: kept to warnings
    (the failures reach the run as exceptions), unless its logger was given a level already.

    A call that a dying JVM can't answer py4j logs on the root logger, traceback and all
    (`logging.exception`): those records go to chatgate's debug log instead, as the run's own
    error says what happened.
    """
    py4j = logging.getLogger("py4j")
    if py4j.level == logging.NOTSET:
        py4j.setLevel(logging.WARNING)
    root = logging.getLogger()
    if not any(isinstance(f, _Py4jOnRoot) for f in root.filters):
        root.addFilter(_Py4jOnRoot())


class _Py4jOnRoot(logging.Filter):
    """Keeps the records py4j's own code logs on the root logger to chatgate's debug log."""

    def __init__(self) -> None:
        import py4j

        super().__init__()
        self.folder = os.path.join(os.path.dirname(os.path.abspath(py4j.__file__)), "")

    def filter(self, record: logging.LogRecord) -> bool:
        if not os.path.abspath(record.pathname).startswith(self.folder):
            return True
        log.debug("py4j: %s", record.getMessage(), exc_info=record.exc_info)
        return False


def _quiet_accumulator_server() -> None:
    """pyspark's accumulator server (a thread of this process) prints a traceback to stderr when the
    JVM it serves dies mid-update: logged at DEBUG instead, as the run's own error says what happened."""
    from pyspark import SparkContext

    server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if server is None:
        return

    def handle_error(request: Any, client_address: Any) -> None:
        log.debug("pyspark's accumulator server lost the JVM (%s)", client_address, exc_info=True)

    server.handle_error = handle_error


def _with_arrow_udf(
    table: DataFrame, inputs: list[str], added: pa.Schema, compute: Callable[[pa.RecordBatch], list[pa.Array]]
) -> DataFrame:
    """`with_arrow_columns` by an Arrow UDF (Spark 4.1): only the `inputs` columns go to Python and
    only the added ones come back, where mapInArrow sends every column both ways."""
    out = StructType([StructField(f.name, from_arrow_type(f.type)) for f in added])

    def batch(given: pa.Array) -> pa.Array:  # Spark reads the Arrow UDF's kind from these hints
        return _arrow_udf_batch(given, inputs=inputs, added=added, compute=compute)

    run = F.arrow_udf(batch, out)  # type: ignore[attr-defined]
    # Not deterministic to the optimizer: each added column reads the one result, never a call of its own.
    packed = f"__chatgate_added_{uuid.uuid4().hex}"
    given = F.struct(*[column_ref(c).alias(f"_{i}") for i, c in enumerate(inputs)])
    with_packed = table.withColumn(packed, run.asNondeterministic()(given))
    return with_packed.select(
        *[column_ref(c) for c in table.columns], *[F.col(packed).getField(f.name).alias(f.name) for f in added]
    )


def _arrow_udf_batch(
    given: pa.Array, *, inputs: list[str], added: pa.Schema, compute: Callable[[pa.RecordBatch], list[pa.Array]]
) -> pa.Array:
    if isinstance(given, pa.ChunkedArray):
        given = given.combine_chunks()
    named = pa.RecordBatch.from_arrays(given.flatten(), names=inputs)
    arrays = [array.cast(f.type) for array, f in zip(compute(named), added)]
    return pa.StructArray.from_arrays(arrays, fields=list(added))


def _partial_batches(
    batches: Iterator[pa.RecordBatch], *, inputs: list[str], partial: Callable[[Mapping[str, Any]], pa.Table]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield from partial(dict(zip(inputs, batch.columns))).to_batches()


def _add_arrow_columns(
    batches: Iterator[pa.RecordBatch],
    *,
    names: list[str],
    inputs: list[str],
    added: pa.Schema,
    compute: Callable[[pa.RecordBatch], list[pa.Array]],
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        named = pa.RecordBatch.from_arrays(batch.columns, names=names)
        arrays = [array.cast(f.type) for array, f in zip(compute(named.select(inputs)), added)]
        yield pa.RecordBatch.from_arrays([*batch.columns, *arrays], names=[*batch.schema.names, *added.names])


def _within(table: DataFrame, name: str, limit: int | None) -> Any:
    """The column `name` as sent to the check, where only keys come back: a text over `limit` bytes
    (measured in the JVM) is sent cut to its first `limit` + 1 characters (still over the limit,
    still valid text), which the check codes too_large unread, so a huge value never crosses to
    Python whole. (A stand-in literal would be folded into the plan, and its text explained.)"""
    column = column_ref(name)
    kind = table.schema[name].dataType.typeName()
    if limit is None or kind not in ("string", "binary"):
        return column
    over = F.octet_length(column) > F.lit(limit)
    return F.when(over, F.substring(column, 1, limit + 1)).otherwise(column)

