"""Delta through delta-spark, for the Spark engine: the same statements on classic and Connect sessions."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..engines.spark.delta import first_line, is_path, path_ref, quoted
from .base import ChangedRows, TableStore
from .changes import appended_files, commit_actions
from .deltalake_store import CHANGE_COLUMNS, CHANGE_DATA_FEED, INSERTED


class DeltaSparkStore(TableStore):
    """Delta tables (paths or catalog tables) read and written through the Spark session `spark`."""

    name = "delta-spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def _reader(self) -> Any:
        return self.spark.read.format("delta")

    def _load(self, reader: Any, target: str) -> Any:
        return reader.load(target) if is_path(target) else reader.table(target)

    def location(self, target: str) -> str | None:
        if is_path(target):
            return None
        try:
            if not self.spark.catalog.tableExists(target):
                return None
            ref = ".".join(quoted(p) for p in target.split("."))
            return str(self.spark.sql(f"DESCRIBE DETAIL {ref}").collect()[0]["location"])
        except Exception:  # noqa: BLE001 - a name Spark can't parse, or a view: compared by name
            return None

    def read_columns(self, target: str, columns: Sequence[str]) -> pa.Table | None:
        try:
            table = self._load(self._reader(), target)
        except Exception:  # noqa: BLE001 - no table there (or not a Delta one): nothing to read
            return None
        if any(c not in table.columns for c in columns):
            return None
        return table.select(*[table[c] for c in columns]).toArrow()

    def changes(self, source: str, since: int, until: int) -> ChangedRows:
        from pyspark.sql import functions as F

        ref = path_ref(source) if is_path(source) else ".".join(quoted(p) for p in source.split("."))
        detail = self.spark.sql(f"DESCRIBE DETAIL {ref}").collect()[0]
        snapshot = self._load(self._reader().option("versionAsOf", until), source)
        if since >= until:
            return ChangedRows(snapshot.limit(0))
        properties = dict(detail["properties"] or {})
        if str(properties.get(CHANGE_DATA_FEED, "")).lower() == "true":
            reader = self._reader().option("readChangeFeed", "true")
            feed = self._load(reader.option("startingVersion", since + 1).option("endingVersion", until), source)
            inserted = feed.filter(F.col("_change_type").isin(*INSERTED)).drop(*CHANGE_COLUMNS)
            return ChangedRows(inserted.select(*[inserted[c] for c in snapshot.columns]))
        mapping = str(properties.get("delta.columnMapping.mode") or "none").lower()
        partitions = list(detail["partitionColumns"] or [])
        if mapping != "none":
            return ChangedRows(why_not=f"the table uses column mapping ({mapping} mode) and has no change data feed ({CHANGE_DATA_FEED})")
        return self._appended(str(detail["location"]), snapshot, partitions, since, until)

    def _appended(self, root: str, snapshot: Any, partitions: list[str], since: int, until: int) -> ChangedRows:
        from pyspark.sql import functions as F

        root = root.rstrip("/")
        logs = {version: f"{root}/_delta_log/{version:020d}.json" for version in range(since + 1, until + 1)}
        try:
            lines = self.spark.read.text(list(logs.values())).select("value", F.col("_metadata.file_path").alias("f"))
            rows = lines.collect()  # the commits' own lines: small, whatever the table's size
        except Exception as exc:  # noqa: BLE001 - a commit's log past the log's retention
            return ChangedRows(why_not=f"the log of a commit after version {since} can't be read: {first_line(exc)}")
        by_file: dict[str, list[str]] = {}
        for row in rows:
            by_file.setdefault(os.path.basename(row["f"]), []).append(row["value"])
        commits = [(v, commit_actions("\n".join(by_file.get(os.path.basename(p), [])))) for v, p in logs.items()]
        appends = appended_files(commits)
        if appends.not_appends:
            return ChangedRows(why_not=f"{appends.not_appends}, and the table has no change data feed ({CHANGE_DATA_FEED})")
        if not appends.files:
            return ChangedRows(snapshot.limit(0))
        files = [f.path if "://" in f.path or f.path.startswith("/") else f"{root}/{f.path}" for f in appends.files]
        data = snapshot.drop(*partitions)
        try:
            read = self.spark.read.schema(data.schema).parquet(*files)
        except Exception as exc:  # noqa: BLE001 - a file vacuumed since its commit
            return ChangedRows(why_not=f"a file that a commit after version {since} added is gone: {first_line(exc)}")
        if partitions:
            # Each file's rows take its partition values from the log: one read per file, unioned.
            parts = []
            for added, path in zip(appends.files, files):
                values = [F.lit(added.partition_values.get(p)).cast(snapshot.schema[p].dataType).alias(p) for p in partitions]
                parts.append(self.spark.read.schema(data.schema).parquet(path).select("*", *values))
            read = parts[0]
            for part in parts[1:]:
                read = read.unionByName(part)
        return ChangedRows(read.select(*[read[c] for c in snapshot.columns]))
