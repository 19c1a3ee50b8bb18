"""The job on Spark: Delta tables (paths or catalog names) read and written by delta-spark."""

from __future__ import annotations

import os
from datetime import datetime
from functools import reduce
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..engines.spark import SparkEngine
from ..engines.spark_keys import column_ref
from ..engines.spark_session import get_spark
from ..errors import OutputError, SourceError
from .backend import (
    JobBackend,
    commit_metadata,
    commit_metadata_json,
    is_local_path,
    local_target_state,
    pinned_version,
)
from .outputs import CHECKED_AT, COLUMN, REASON, RUN_ID, STEP

CONCURRENT_WRITE_ERRORS = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "DELTA_CONCURRENT_",
    "DELTA_PROTOCOL_CHANGED",
    "DELTA_METADATA_CHANGED",
)
"""Delta's errors for a commit that lost the race with another writer's (names and error classes)."""

NAME_NEEDS_MAPPING = set(" ,;{}()\n\t=")
"""Characters Delta refuses in column names unless the table maps names to physical columns."""

COLUMN_MAPPING = {
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}

HISTORY_SEARCHED = 100
"""How far back in a table's history a write looks for its own commit (others may commit meanwhile)."""


def is_path(target: str) -> bool:
    """A Delta path (local or URI) rather than a catalog table name such as db.chats."""
    return "/" in target or "://" in target or target.startswith(".") or os.path.exists(target)


def first_line(error: BaseException) -> str:
    """The first non-blank line of an error's message (Spark's start with a newline)."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)


def equals_column(column: str, value: str) -> Any:
    """`column = value` as a Column: the value never passes through SQL text."""
    return column_ref(column) == F.lit(value)


def equals_sql(column: str, value: str) -> str:
    """`column = value` as SQL text (what replaceWhere takes), the value carried as hex digits."""
    escaped_column = "`" + column.replace("`", "``") + "`"
    return f"{escaped_column} = decode(unhex('{value.encode('utf-8').hex()}'), 'UTF-8')"


class SparkJobBackend(JobBackend):
    def __init__(self, spark: SparkSession | None = None) -> None:
        self.spark = spark or get_spark("chatgate-job")
        self.engine = SparkEngine()

    # -- reading ----------------------------------------------------------------

    def open_source(self, source: str, version: int | None) -> tuple[DataFrame, int | None]:
        try:
            latest = self._version(source)
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors name no source
            raise SourceError(f"can't read the source {source!r}: {first_line(exc)}") from None
        pinned = pinned_version(source, latest, version)
        try:
            return self._read(source, pinned), pinned
        except Exception as exc:  # noqa: BLE001
            raise SourceError(f"can't read the source {source!r}: {first_line(exc)}") from None

    def _read(self, source: str, version: int | None) -> DataFrame:
        reader = self.spark.read
        if version is not None:
            # Time travel: every read of this DataFrame sees the same snapshot, whatever is appended meanwhile.
            reader = reader.format("delta").option("versionAsOf", version)
        if not is_path(source):
            return reader.table(source)
        if version is None:
            return reader.parquet(source)
        return reader.load(source)

    # -- shaping ----------------------------------------------------------------

    def quarantine_rows(
        self,
        annotated: DataFrame,
        reason_column: str,
        source_columns: list[str],
        *,
        step: int,
        column: str,
        run_id: str,
        checked_at: datetime,
    ) -> DataFrame:
        failing = annotated.filter(column_ref(reason_column).isNotNull())
        return failing.select(
            *[column_ref(c) for c in source_columns],
            column_ref(reason_column).alias(REASON),
            F.lit(step).cast("int").alias(STEP),
            F.lit(column).alias(COLUMN),
            F.lit(run_id).alias(RUN_ID),
            F.lit(checked_at).cast("timestamp").alias(CHECKED_AT),
        )

    def valid_rows(
        self, annotated: DataFrame, reason_columns: list[str], source_columns: list[str], *, run_id: str
    ) -> DataFrame:
        passing = annotated
        for reason_column in reason_columns:
            passing = passing.filter(column_ref(reason_column).isNull())
        return passing.select(*[column_ref(c) for c in source_columns], F.lit(run_id).alias(RUN_ID))

    def union(self, tables: list[DataFrame]) -> DataFrame:
        return reduce(DataFrame.unionByName, tables)

    def columns_of(self, table: DataFrame) -> list[str]:
        return list(table.columns)

    # -- writing ----------------------------------------------------------------

    def _delta(self, target: str) -> Any:
        from delta.tables import DeltaTable

        if is_path(target):
            return DeltaTable.forPath(self.spark, target) if DeltaTable.isDeltaTable(self.spark, target) else None
        if not self._table_exists(target):
            return None
        try:
            return DeltaTable.forName(self.spark, target)
        except Exception:  # noqa: BLE001 - a catalog table in another format
            return None

    def _table_exists(self, name: str) -> bool:
        try:
            return self.spark.catalog.tableExists(name)
        except Exception as exc:  # noqa: BLE001 - ParseException: the name doesn't parse
            raise OutputError(f"{name!r} isn't a table name Spark can parse: {first_line(exc)}") from None

    def _version(self, target: str) -> int | None:
        table = self._delta(target)
        return None if table is None else table.history(1).select("version").first()[0]

    def target_columns(self, target: str) -> list[str] | None:
        if is_path(target) and is_local_path(target) and local_target_state(target) == "absent":
            return None
        if not is_path(target) and self._table_exists(target) and self._delta(target) is None:
            raise OutputError(f"the catalog table {target!r} isn't a Delta table; choose another output table")
        table = self._delta(target)
        return None if table is None else list(table.toDF().columns)

    def replace_run(self, table: DataFrame, target: str, run_id_column: str, run_id: str) -> int:
        metadata = commit_metadata(run_id)
        writer = table.write.format("delta").option("userMetadata", commit_metadata_json(metadata))
        if self._delta(target) is None:
            writer = writer.mode("append")
            if any(NAME_NEEDS_MAPPING & set(name) for name in table.columns):
                writer = writer.options(**COLUMN_MAPPING)
        else:
            # One commit removes the run's old rows and adds the new ones: a rerun never duplicates.
            writer = writer.mode("overwrite").option("replaceWhere", equals_sql(run_id_column, run_id))
        try:
            if is_path(target):
                writer.save(target)
            else:
                writer.saveAsTable(target)
        except Exception as exc:
            if self.is_conflict(exc):
                raise
            raise OutputError(f"can't write to {target!r}: {first_line(exc)}") from None
        return self._rows_written(target, commit_metadata_json(metadata))

    def _rows_written(self, target: str, metadata: str) -> int:
        history = self._delta(target).history(HISTORY_SEARCHED)
        mine = history.filter(F.col("userMetadata") == F.lit(metadata)).select("operationMetrics").first()
        metrics = (mine[0] if mine else None) or {}
        return int(metrics.get("numOutputRows", 0))

    def write_arrow(self, rows: pa.Table, target: str, run_id_column: str, run_id: str) -> None:
        self.replace_run(self.spark.createDataFrame(rows), target, run_id_column, run_id)

    def delete_run(self, target: str, run_id_column: str, run_id: str) -> None:
        table = self._delta(target)
        if table is not None:
            table.delete(equals_column(run_id_column, run_id))

    def is_conflict(self, error: BaseException) -> bool:
        text = f"{type(error).__name__}: {error}"
        return any(name in text for name in CONCURRENT_WRITE_ERRORS)
