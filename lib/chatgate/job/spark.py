"""The job on Spark: Delta tables (paths or catalog names) read and written by delta-spark."""

from __future__ import annotations

import os
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..engines.spark import SparkEngine
from ..engines.spark_session import get_spark
from ..errors import SourceError
from .backend import JobBackend
from .outputs import CHECKED_AT, COLUMN, REASON, RUN_ID, STEP


def is_path(target: str) -> bool:
    """A Delta path (local or URI) rather than a catalog table name such as db.chats."""
    return "/" in target or "://" in target or target.startswith(".") or os.path.exists(target)


class SparkJobBackend(JobBackend):
    def __init__(self, spark: SparkSession | None = None) -> None:
        self.spark = spark or get_spark("chatgate-job")
        self.engine = SparkEngine()

    # -- reading ----------------------------------------------------------------

    def read_source(self, source: str) -> DataFrame:
        try:
            if not is_path(source):
                return self.spark.table(source)
            if source.endswith(".parquet") or (
                os.path.isdir(source) and not os.path.isdir(os.path.join(source, "_delta_log"))
            ):
                return self.spark.read.parquet(source)
            return self.spark.read.format("delta").load(source)
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors name no source
            raise SourceError(f"can't read the source {source!r}: {str(exc).splitlines()[0]}") from exc

    def source_version(self, source: str) -> int | None:
        return self.table_version(source)

    # -- shaping ----------------------------------------------------------------

    def quarantine_rows(self, annotated, reason_column, source_columns, *, step, column, run_id, checked_at):
        failing = annotated.filter(F.col(reason_column).isNotNull())
        return failing.select(
            *[F.col(f"`{c}`") for c in source_columns],
            F.col(reason_column).alias(REASON),
            F.lit(step).cast("int").alias(STEP),
            F.lit(column).alias(COLUMN),
            F.lit(run_id).alias(RUN_ID),
            F.lit(checked_at).cast("timestamp").alias(CHECKED_AT),
        )

    def valid_rows(self, annotated, reason_columns, source_columns):
        passing = annotated
        for reason_column in reason_columns:
            passing = passing.filter(F.col(reason_column).isNull())
        return passing.select(*[F.col(f"`{c}`") for c in source_columns])

    def union(self, tables):
        return reduce(DataFrame.unionByName, tables)

    # -- writing ----------------------------------------------------------------

    def _delta(self, target: str):
        from delta.tables import DeltaTable

        if is_path(target):
            return DeltaTable.forPath(self.spark, target) if DeltaTable.isDeltaTable(self.spark, target) else None
        return DeltaTable.forName(self.spark, target) if self.spark.catalog.tableExists(target) else None

    def table_version(self, target: str) -> int | None:
        table = self._delta(target)
        if table is None:
            return None
        return table.history(1).select("version").first()[0]

    def _save(self, writer, target: str) -> None:
        if is_path(target):
            writer.save(target)
        else:
            writer.saveAsTable(target)

    def _rows_written(self, target: str) -> int:
        metrics = self._delta(target).history(1).select("operationMetrics").first()[0] or {}
        return int(metrics.get("numOutputRows", 0))

    def replace_run(self, table: DataFrame, target, run_id_column, run_id) -> int:
        writer = table.write.format("delta")
        if self._delta(target) is None:
            writer = writer.mode("append")
        else:
            # One commit removes the run's old rows and adds the new ones: a rerun never duplicates.
            writer = writer.mode("overwrite").option("replaceWhere", f"{run_id_column} = '{run_id}'")
        self._save(writer, target)
        return self._rows_written(target)

    def overwrite(self, table: DataFrame, target) -> int:
        self._save(table.write.format("delta").mode("overwrite").option("overwriteSchema", "true"), target)
        return self._rows_written(target)

    def write_arrow(self, rows: pa.Table, target, run_id_column, run_id) -> None:
        self.replace_run(self.spark.createDataFrame(rows), target, run_id_column, run_id)

    def restore(self, target: str, version: int | None) -> None:
        table = self._delta(target)
        if table is None:
            return
        if version is None:
            table.delete()
        else:
            table.restoreToVersion(version)
