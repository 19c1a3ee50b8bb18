"""Delta through the `deltalake` package, for the embedded engine (DuckDB behind Ibis)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, SchemaMismatchError, TableNotFoundError

from ..engines.ibis.connection import record_batches
from ..engines.parquet_files import parquet_view, quote_identifier, read_despite_bad_text, schema_refusal
from ..errors import ChatgateError, OutputError, SourceError, error_chain, no_space_left
from .base import (
    ChangedRows,
    TableStore,
    commit_metadata,
    is_local_path,
    local_target_state,
    pinned_version,
)
from .changes import appended_files, commit_actions
from .deltalake_errors import DeltaLogError, delta_error_text, rust_panics_logged
from .deltalake_tables import delta_source, delta_version, is_delta, open_table, without_views
from .files import no_versions, nothing_there
from .files_duckdb import open_files, reads_as_files

CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
INSERTED = ("insert", "update_postimage")
"""The change data feed's rows that a table holds after the commit: new rows and updated ones."""

WRITE_CHUNK_ROWS = 10_000

STATISTICS_PREFIX = 64
"""The bytes of a value that its column's min/max statistics keep (parquet-rs's and deltalake's default)."""

WRITE_SETTINGS: dict[str, Any] = {
    "target_file_size": 64 * 2**20,
    "writer_properties": WriterProperties(
        max_row_group_size=WRITE_CHUNK_ROWS,
        compression="SNAPPY",
        statistics_truncate_length=STATISTICS_PREFIX,
    ),
}
"""deltalake buffers each output file, and each Parquet row group, in memory before writing it:
bounded here, so the writes' memory doesn't depend on the rows written.

Passing any WriterProperties drops deltalake's own defaults, so they are set again: Snappy
(Spark's default too), and min/max statistics truncated to a prefix. Without the prefix a
30 MB value is written whole, twice (min and max), into the file's footer and into the
Delta log's stats, which deltalake copies from the footer: Spark then can't parse the log
(MALFORMED_RECORD_IN_PARSING), and past 100 MB Arrow can't read the footer (Thrift's size limit)."""


class DeltalakeStore(TableStore):
    """Delta tables read and written with deltalake, as Ibis tables on the DuckDB connection `con`."""

    name = "deltalake"

    def __init__(self, con: Any) -> None:
        self.con = con

    def open_source(self, source: str, version: int | None) -> tuple[Any, int | None]:
        if reads_as_files(source):  # JSONL and JSON arrays: see stores/files.py
            if version is not None:
                raise no_versions(source)
            return open_files(self.con, source), None
        if is_local_path(source) and not os.path.exists(source.removeprefix("file://")):
            raise SourceError(f"can't read the source {source!r}: {nothing_there(source)}")
        try:
            latest = delta_version(source)
        except DeltaLogError as exc:
            raise SourceError(f"can't read the source {source!r}: {exc.problem}") from exc
        except (FileNotFoundError, ValueError, OSError) as exc:
            raise SourceError(f"can't read the source {source!r}: {exc}") from None
        pinned = pinned_version(source, latest, version)
        try:
            return open_table(source, con=self.con, version=pinned, row_ids=True), pinned
        except DeltaLogError as exc:
            raise SourceError(f"can't read the source {source!r}: {exc.problem}") from exc
        except (FileNotFoundError, ValueError, OSError) as exc:
            raise SourceError(f"can't read the source {source!r}: {exc}") from None

    def target_schema(self, target: str) -> pa.Schema | None:
        if is_local_path(target) and local_target_state(target) == "absent":
            return None
        table = _delta_table(target)
        return None if table is None else pa.schema(table.schema().to_arrow())

    def replace_run(self, table: Any, target: str, run_id_column: str, run_id: str) -> int:
        # A file whose text isn't UTF-8 in a column no step judged is read again unchecked: nothing
        # was committed before DuckDB refused it, so the write starts over.
        return read_despite_bad_text(
            self.con,
            lambda: self._write(record_batches(table, chunk_size=WRITE_CHUNK_ROWS), target, run_id_column, run_id),
        )

    def write_arrow(self, rows: pa.Table, target: str, run_id_column: str, run_id: str) -> None:
        self._write(rows.to_reader(), target, run_id_column, run_id)

    def _write(self, reader: pa.RecordBatchReader, target: str, run_id_column: str, run_id: str) -> int:
        reader, counter = _counted(reader)
        tagged = CommitProperties(custom_metadata=commit_metadata(run_id))
        try:
            with rust_panics_logged():
                self._write_delta(reader, target, run_id_column, run_id, tagged)
        except SchemaMismatchError as exc:
            raise OutputError(
                f"can't write to {target!r}, its columns' types differ from this run's ({exc}); "
                "write to a new path, or move the old table aside"
            ) from None
        except Exception as exc:
            if no_space_left(exc):
                raise OutputError(
                    f"no space left on device writing {target!r}; free space on its disk, "
                    "or write that output to another path, then rerun"
                ) from exc
            raise
        return counter[0]

    def _write_delta(
        self, reader: pa.RecordBatchReader, target: str, run_id_column: str, run_id: str, tagged: CommitProperties
    ) -> None:
        if _delta_table(target) is None:
            write_deltalake(target, reader, mode="append", commit_properties=tagged, **WRITE_SETTINGS)
        else:
            # One commit removes the run's old rows and adds the new ones: a rerun never duplicates.
            write_deltalake(
                target,
                reader,
                mode="overwrite",
                predicate=equals_sql(run_id_column, run_id),
                schema_mode="merge",  # the run checked the columns first: only chatgate's new ones are added
                commit_properties=tagged,
                **WRITE_SETTINGS,
            )

    def delete_run(self, target: str, run_id_column: str, run_id: str) -> None:
        table = _delta_table(target)
        if table is not None:
            with rust_panics_logged():
                table.delete(
                    equals_sql(run_id_column, run_id),
                    commit_properties=CommitProperties(custom_metadata=commit_metadata(run_id)),
                )

    def is_conflict(self, error: BaseException) -> bool:
        return isinstance(error, CommitFailedError) or "version already exists" in str(error).lower()

    def explain(self, error: BaseException) -> ChatgateError | None:
        if isinstance(error, ChatgateError):
            return None
        delta = next((e for e in error_chain(error) if isinstance(e, DeltaError)), None)
        if delta is not None:
            return ChatgateError(f"deltalake failed: {delta_error_text(delta)} (rerun with --debug for details)")
        return None

    def read_columns(self, target: str, columns: Sequence[str]) -> pa.Table | None:
        if not is_delta(target):
            return None
        source = delta_source(target)
        if any(c not in source.schema.names for c in columns):
            return None
        return source.to_table(columns=list(columns))

    def changes(self, source: str, since: int, until: int) -> ChangedRows:
        snapshot = DeltaTable(source, version=until)
        schema = pa.schema([f.with_type(without_views(f.type)) for f in pa.schema(snapshot.schema().to_arrow())])
        if since >= until:
            return ChangedRows(self.con.table(self._kept(schema.empty_table())))
        if str(snapshot.metadata().configuration.get(CHANGE_DATA_FEED, "")).lower() == "true":
            return ChangedRows(self._change_feed(snapshot, since, until, schema))
        return self._appended(source, snapshot, since, until, schema)

    def _change_feed(self, snapshot: Any, since: int, until: int, schema: pa.Schema) -> Any:
        feed = pa.RecordBatchReader.from_stream(snapshot.load_cdf(starting_version=since + 1, ending_version=until))
        inserted = pa.array(INSERTED)

        def rows() -> Iterator[pa.RecordBatch]:
            for batch in feed:
                kept = pc.is_in(batch.column("_change_type").cast(pa.string()), inserted)
                columns = [batch.column(f.name).cast(f.type) for f in schema]
                yield pa.RecordBatch.from_arrays(columns, schema=schema).filter(kept)

        return self.con.table(self._kept(pa.RecordBatchReader.from_batches(schema, rows())))

    def _appended(self, source: str, snapshot: Any, since: int, until: int, schema: pa.Schema) -> ChangedRows:
        partitions = list(snapshot.metadata().partition_columns)
        mapping = str(snapshot.metadata().configuration.get("delta.columnMapping.mode") or "none").lower()
        if partitions or mapping != "none":
            what = f"is partitioned by {partitions}" if partitions else f"uses column mapping ({mapping} mode)"
            return ChangedRows(why_not=f"the table {what} and has no change data feed ({CHANGE_DATA_FEED})")
        log = Path(source.removeprefix("file://")) / "_delta_log"
        commits = _local_commits(log, since, until)
        if isinstance(commits, str):
            return ChangedRows(why_not=commits)
        appends = appended_files(commits)
        if appends.not_appends:
            return ChangedRows(why_not=f"{appends.not_appends}, and the table has no change data feed ({CHANGE_DATA_FEED})")
        files = [str(log.parent / f.path) if "://" not in f.path else f.path for f in appends.files]
        gone = next((f for f in files if "://" not in f and not os.path.exists(f)), None)
        if gone is not None:
            return ChangedRows(why_not=f"the file {gone!r} that a commit after version {since} added is gone (vacuumed)")
        return ChangedRows(self._files(files, schema))

    def _files(self, files: list[str], schema: pa.Schema) -> Any:
        """The rows of the Parquet `files`, as a view where DuckDB reads them, else a kept copy."""
        if not files:
            return self.con.table(self._kept(schema.empty_table()))
        view = None if schema_refusal(schema) else parquet_view(self.con, files, schema, row_ids=True)
        if view is None:
            import pyarrow.dataset as ds

            view = self.con.table(self._kept(ds.dataset(files, schema=schema, format="parquet").to_table()))
        return view

    def _kept(self, rows: pa.Table | pa.RecordBatchReader) -> str:
        """A temporary table in DuckDB's own storage (it spills past memory_limit) holding `rows`."""
        given = f"chatgate_rows_{uuid.uuid4().hex[:12]}"
        name = f"chatgate_changed_{uuid.uuid4().hex[:12]}"
        self.con.con.register(given, rows)
        try:
            self.con.con.execute(f"CREATE TEMP TABLE {quote_identifier(name)} AS SELECT * FROM {quote_identifier(given)}")
        finally:
            self.con.con.unregister(given)
        return name


def _local_commits(log: Path, since: int, until: int) -> list[tuple[int, list[dict[str, Any]]]] | str:
    """The actions of each commit after `since` up to `until`, read from the local log; or why they can't be."""
    commits = []
    for version in range(since + 1, until + 1):
        path = log / f"{version:020d}.json"
        if not path.is_file():
            return f"the log of commit {version} is gone (past the log's retention)"
        commits.append((version, commit_actions(path.read_text(encoding="utf-8"))))
    return commits


def equals_sql(column: str, value: str) -> str:
    """`column = 'value'` for deltalake's predicates, the value quoted as a SQL string literal."""
    return f"{quote_identifier(column)} = " + "'" + value.replace("'", "''") + "'"


def _delta_table(target: str) -> DeltaTable | None:
    try:
        return DeltaTable(target)
    except TableNotFoundError:
        return None
    except DeltaError as error:  # a corrupt log: named, with what to do
        raise OutputError(f"can't write to {target!r}: {DeltaLogError(target, error).problem}") from error


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _counted(reader: pa.RecordBatchReader) -> tuple[pa.RecordBatchReader, list[int]]:
    """The same stream, counting the rows that pass through it."""
    counter = [0]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            counter[0] += batch.num_rows
            yield batch

    return pa.RecordBatchReader.from_batches(reader.schema, batches()), counter
