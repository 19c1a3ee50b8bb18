"""Delta through delta-spark, for the Spark engine: the same statements on classic and Connect sessions."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.errors import AnalysisException

from ..engines.spark.errors import error_text, first_line, java_throwables, spark_error_line
from ..engines.spark.session import runtime_settings
from ..errors import ChatgateError, OutputError, SourceError, error_chain, no_space_left
from .base import (
    ChangedRows,
    TableStore,
    commit_metadata,
    commit_metadata_json,
    is_local_path,
    local_target_state,
    pinned_version,
    type_kind,
)
from .changes import appended_files, commit_actions
from .delta_spark_sql import (
    COLUMN_MAPPING,
    CONCURRENT_WRITE_ERRORS,
    HISTORY_SEARCHED,
    NAME_NEEDS_MAPPING,
    delta_log_problem,
    equals_sql,
    is_not_a_delta_path,
    is_path,
    path_ref,
    table_ref,
)
from .deltalake_store import CHANGE_COLUMNS, CHANGE_DATA_FEED, INSERTED
from .files import no_versions, nothing_there
from .files_spark import open_files_spark, reads_as_files_spark, refused_file

T = TypeVar("T")

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
"""Delta's session setting of a commit's user metadata (its writer option isn't read when a write creates a catalog table)."""


class DeltaSparkStore(TableStore):
    """Delta tables (paths or catalog tables) read and written through the Spark session `spark`."""

    name = "delta-spark"

    def __init__(self, spark: Any, failure: Callable[[BaseException], ChatgateError | None] = lambda error: None) -> None:
        self.spark = spark
        self.failure = failure
        """The engine's one line for a failure of Spark itself (its JVM gone, out of memory), which a
        read or write names before its own."""

    def open_source(self, source: str, version: int | None) -> tuple[Any, int | None]:
        if reads_as_files_spark(source):  # JSONL and JSON arrays: see stores/files.py
            return self._open_files(source, version), None
        refused = refused_file(source)
        if refused is not None:
            raise SourceError(refused)
        try:
            latest = self._version(source)
        except ChatgateError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors name no source
            raise self._source_error(source, exc) from exc
        pinned = pinned_version(source, latest, version)
        try:
            return self._read(source, pinned), pinned
        except ChatgateError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._source_error(source, exc) from exc

    def _open_files(self, source: str, version: int | None) -> Any:
        if version is not None:
            raise no_versions(source)
        try:
            return open_files_spark(self.spark, source)
        except ChatgateError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors name no source
            raise self._source_error(source, exc) from exc

    def open_stream(self, source: str) -> Any:
        try:
            return self._load(self.spark.readStream.format("delta"), source)
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors name no source
            raise self._source_error(source, exc) from exc

    def _source_error(self, source: str, error: Exception) -> ChatgateError:
        """One line for a source Spark can't read: a dead JVM, a corrupt log, else Spark's message and cause."""
        dead = self.failure(error)
        if dead is not None:
            return dead
        if _missing_local_path(error):
            return SourceError(f"can't read the source {source!r}: {nothing_there(source)}")
        return SourceError(f"can't read the source {source!r}: {delta_log_problem(error) or spark_error_line(error)}")

    def _read(self, source: str, version: int | None) -> Any:
        reader = self.spark.read
        if version is not None:
            # Time travel: every read of this DataFrame sees the same snapshot, whatever is appended meanwhile.
            reader = reader.format("delta").option("versionAsOf", version)
        if not is_path(source):
            return reader.table(source)
        if version is None:
            return reader.parquet(source)
        return reader.load(source)

    def _ref(self, target: str) -> str | None:
        """The SQL name of `target`: delta.`path`, or the catalog table's quoted parts (None: no such table)."""
        if is_path(target):
            return path_ref(target)
        if not self._table_exists(target):
            return None
        table = self.spark.catalog.getTable(target)
        if table.isTemporary or table.tableType == "VIEW":
            return None
        # The catalog's own parse of the name, requoted: the name's text never reaches SQL as it is
        # (`chats -- x` names `chats` to the catalog, and would comment out the rest of a DELETE).
        return table_ref([table.catalog, *(table.namespace or []), table.name])

    def _history(self, target: str, limit: int) -> tuple[str, list[Any]] | None:
        """The SQL name of the Delta table at `target` and its last `limit` commits, newest first;
        None when there's no Delta table there (nothing, other files, a catalog table in another format)."""
        ref = self._ref(target)
        if ref is None:
            return None

        def read() -> tuple[str, list[Any]]:
            return ref, self.spark.sql(f"DESCRIBE HISTORY {ref} LIMIT {int(limit)}").collect()

        if is_path(target):
            return self._at_path(read)
        try:
            return read()
        except AnalysisException:  # a catalog table that exists: any analysis error means Delta can't take it
            return None

    def _table_exists(self, name: str) -> bool:
        try:
            return self.spark.catalog.tableExists(name)
        except Exception as exc:  # noqa: BLE001 - ParseException: the name doesn't parse
            raise OutputError(f"{name!r} isn't a table name Spark can parse: {first_line(exc)}") from None

    def _version(self, target: str) -> int | None:
        history = self._history(target, 1)
        return None if history is None else int(history[1][0]["version"])

    def writes_into(self, have: pa.DataType, want: pa.DataType) -> bool:
        # Delta's schema merge on Spark widens no number (int into long fails to merge).
        if type_kind(have) == type_kind(want) == "number":
            return bool(have == want)
        return super().writes_into(have, want)

    def target_schema(self, target: str) -> pa.Schema | None:
        if is_path(target) and is_local_path(target) and local_target_state(target) == "absent":
            return None
        try:
            schema = self._delta_schema(target)
        except ChatgateError:
            raise
        except Exception as exc:  # a corrupt log, storage: named with the target
            problem = delta_log_problem(exc) or spark_error_line(exc)
            raise (self.failure(exc) or OutputError(f"can't write to {target!r}: {problem}")) from exc
        return None if schema is None else _arrow_schema(schema)

    def _delta_schema(self, target: str) -> Any:
        """The Spark schema of the Delta table at `target` (None: there's none)."""
        if is_path(target):
            return self._at_path(lambda: self.spark.table(path_ref(target)).schema)
        history = self._history(target, 1)
        if history is None:
            if self._table_exists(target):
                raise OutputError(f"the catalog table {target!r} isn't a Delta table; choose another output table")
            return None
        return self.spark.table(history[0]).schema

    @staticmethod
    def _at_path(action: Callable[[], T]) -> T | None:
        """`action` on a Delta path, in one look at its log; None when there's no Delta table there
        (any other failure, storage or credentials, is raised)."""
        try:
            return action()
        except Exception as exc:
            if is_not_a_delta_path(exc):
                return None
            raise

    def replace_run(self, table: Any, target: str, run_id_column: str, run_id: str) -> int:
        metadata = self._replace(table, target, run_id_column, run_id)
        return self._rows_written(target, metadata)

    def _replace(self, table: Any, target: str, run_id_column: str, run_id: str) -> str:
        """`replace_run` without counting the rows; the commit's metadata, as the log records it."""
        metadata = commit_metadata(run_id)
        text = commit_metadata_json(metadata)
        writer = table.write.format("delta").option("userMetadata", text)
        mapped = any(NAME_NEEDS_MAPPING & set(name) for name in table.columns)
        if self._creates_by_append(target, mapped):
            writer = writer.mode("append")
            if mapped:
                writer = writer.options(**COLUMN_MAPPING)
        else:
            # One commit removes the run's old rows and adds the new ones: a rerun never duplicates.
            writer = writer.mode("overwrite").option("replaceWhere", equals_sql(run_id_column, run_id))
            # The run checked the columns first: only chatgate's new ones are added.
            writer = writer.option("mergeSchema", "true")
        try:
            if is_path(target):
                writer.save(target)
            else:
                # A catalog table's first write (CREATE TABLE AS SELECT) takes the metadata from the session only.
                with runtime_settings(self.spark, {USER_METADATA_CONF: text}):
                    writer.saveAsTable(target)
        except Exception as exc:
            if self.is_conflict(exc):
                raise
            dead = self.failure(exc)
            if dead is not None:
                raise dead from exc
            if no_space_left(exc):
                raise OutputError(
                    f"no space left on device writing {target!r}; free space on its disk, "
                    "or write that output to another path, then rerun"
                ) from exc
            raise OutputError(f"can't write to {target!r}: {spark_error_line(exc)}") from exc
        return text

    def _creates_by_append(self, target: str, mapped: bool) -> bool:
        """Whether the write creates the table at `target` by an append: where there is none yet.

        At a path, the overwrite creates a table that isn't there, so the log is read first only
        when the new table must map its column names (an option of the table's creation).
        """
        if is_path(target) and not mapped:
            return False
        return self._history(target, 1) is None

    def _rows_written(self, target: str, metadata: str) -> int:
        """The rows our commit (found by its metadata among the latest, as others may commit meanwhile) added.

        The latest commit is read first: it is ours unless another writer committed since, and
        each commit searched is a file read from the log.
        """
        for limit in (1, HISTORY_SEARCHED):
            history = self._history(target, limit)
            commits = history[1] if history else []
            mine = next((commit for commit in commits if commit["userMetadata"] == metadata), None)
            if mine is not None:
                return int((mine["operationMetrics"] or {}).get("numOutputRows", 0))
        return 0

    def write_arrow(self, rows: pa.Table, target: str, run_id_column: str, run_id: str) -> None:
        # The rows are on the driver, counted: the log isn't asked how many were written.
        self._replace(self.spark.createDataFrame(rows), target, run_id_column, run_id)

    def delete_run(self, target: str, run_id_column: str, run_id: str) -> None:
        where = equals_sql(run_id_column, run_id)
        if is_path(target):
            self._at_path(lambda: self.spark.sql(f"DELETE FROM {path_ref(target)} WHERE {where}"))
            return
        history = self._history(target, 1)
        if history is not None:
            self.spark.sql(f"DELETE FROM {history[0]} WHERE {where}")

    def is_conflict(self, error: BaseException) -> bool:
        text = f"{type(error).__name__}: {error_text(error)}"
        return any(name in text for name in CONCURRENT_WRITE_ERRORS)

    def explain(self, error: BaseException) -> ChatgateError | None:
        if isinstance(error, ChatgateError):
            return None
        problem = delta_log_problem(error)
        if problem is None:
            return None
        java = next((e for e in error_chain(error) if java_throwables(e)), None)
        table = _LOGGED_TABLE.search(spark_error_line(java) if java is not None else first_line(error))
        where = f"the Delta table at {table.group(1)!r}" if table else "a Delta table of this run"
        return ChatgateError(f"can't read {where}: {problem}")

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
            ref = table_ref(target.split("."))
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

        ref = path_ref(source) if is_path(source) else table_ref(source.split("."))
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
        root = root.rstrip("/")
        commits = self._commits(root, since, until)
        if isinstance(commits, str):
            return ChangedRows(why_not=commits)
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
            read = self._with_partition_values(snapshot, data.schema, partitions, appends.files, files)
        return ChangedRows(read.select(*[read[c] for c in snapshot.columns]))

    def _commits(self, root: str, since: int, until: int) -> list[tuple[int, list[dict[str, Any]]]] | str:
        """The actions of each commit after `since` up to `until`, read through Spark; or why they can't be."""
        from pyspark.sql import functions as F

        logs = {version: f"{root}/_delta_log/{version:020d}.json" for version in range(since + 1, until + 1)}
        try:
            lines = self.spark.read.text(list(logs.values())).select("value", F.col("_metadata.file_path").alias("f"))
            rows = lines.collect()  # the commits' own lines: small, whatever the table's size
        except Exception as exc:  # noqa: BLE001 - a commit's log past the log's retention
            return f"the log of a commit after version {since} can't be read: {first_line(exc)}"
        by_file: dict[str, list[str]] = {}
        for row in rows:
            by_file.setdefault(os.path.basename(row["f"]), []).append(row["value"])
        return [(v, commit_actions("\n".join(by_file.get(os.path.basename(p), [])))) for v, p in logs.items()]

    def _with_partition_values(
        self, snapshot: Any, schema: Any, partitions: list[str], added: Sequence[Any], files: list[str]
    ) -> Any:
        """Each file's rows with its partition values from the log: one read per file, unioned."""
        from pyspark.sql import functions as F

        parts = []
        for file, path in zip(added, files):
            values = [F.lit(file.partition_values.get(p)).cast(snapshot.schema[p].dataType).alias(p) for p in partitions]
            parts.append(self.spark.read.schema(schema).parquet(path).select("*", *values))
        read = parts[0]
        for part in parts[1:]:
            read = read.unionByName(part)
        return read


_LOGGED_TABLE = re.compile(r"(?:file:)?(\S+?)/_delta_log/")


def _arrow_schema(schema: Any) -> pa.Schema:
    """A Spark schema in Arrow's types; a field Arrow has no type for is typed null (not compared)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for field in schema.fields:
        try:
            kind = to_arrow_type(field.dataType)
        except Exception:  # noqa: BLE001 - a type without an Arrow twin (variant, ...)
            kind = pa.null()
        fields.append(pa.field(field.name, kind))
    return pa.schema(fields)


def _missing_local_path(error: Exception) -> bool:
    """Did Spark find nothing at a path of the local filesystem (where the names beside it can be listed)?"""
    condition = getattr(error, "getCondition", lambda: None)()
    parameters = getattr(error, "getMessageParameters", lambda: None)() or {}
    return condition == "PATH_NOT_FOUND" and str(parameters.get("path", "")).startswith("file:")
