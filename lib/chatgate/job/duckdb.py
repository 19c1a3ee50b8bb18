"""The job on the embedded engine: Ibis over DuckDB, Delta tables read and written by deltalake."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ibis
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

from ..engines.ibis import IbisEngine
from ..engines.tables import default_connection, delta_version, open_table, record_batches
from ..errors import SourceError
from .backend import JobBackend
from .outputs import CHECKED_AT, COLUMN, REASON, RUN_ID, STEP


class DuckDBJobBackend(JobBackend):
    def __init__(self, con: Any = None) -> None:
        self.con = con or default_connection()
        self.engine = IbisEngine()
        self._version: int | None = None

    def read_source(self, source: str) -> Any:
        try:
            # Pin the version read, so the summary names exactly the snapshot that was checked.
            self._version = delta_version(source)
            return open_table(source, con=self.con, version=self._version)
        except (FileNotFoundError, ValueError) as exc:
            raise SourceError(f"can't read the source {source!r}: {exc}") from exc

    def source_version(self, source: str) -> int | None:
        return self._version

    def quarantine_rows(self, annotated, reason_column, source_columns, *, step, column, run_id, checked_at):
        failing = annotated.filter(annotated[reason_column].notnull())
        return failing.select(
            *[failing[c] for c in source_columns],
            failing[reason_column].name(REASON),
            ibis.literal(step, type="int32").name(STEP),
            ibis.literal(column, type="string").name(COLUMN),
            ibis.literal(run_id, type="string").name(RUN_ID),
            ibis.literal(checked_at, type="timestamp('UTC')").name(CHECKED_AT),
        )

    def valid_rows(self, annotated, reason_columns, source_columns):
        passing = annotated
        for reason_column in reason_columns:
            passing = passing.filter(passing[reason_column].isnull())
        return passing.select(*source_columns)

    def union(self, tables):
        return tables[0] if len(tables) == 1 else ibis.union(*tables)

    def table_version(self, target: str) -> int | None:
        try:
            return DeltaTable(target).version()
        except TableNotFoundError:
            return None

    def replace_run(self, table, target, run_id_column, run_id) -> int:
        return self._write(_stream(table), target, run_id_column, run_id)

    def overwrite(self, table, target) -> int:
        reader, counter = _counted(_stream(table))
        write_deltalake(target, reader, mode="overwrite", schema_mode="overwrite")
        return counter[0]

    def write_arrow(self, rows: pa.Table, target, run_id_column, run_id) -> None:
        self._write(rows.to_reader(), target, run_id_column, run_id)

    def _write(self, reader: pa.RecordBatchReader, target, run_id_column, run_id) -> int:
        reader, counter = _counted(reader)
        if self.table_version(target) is None:
            write_deltalake(target, reader, mode="append")
        else:
            # One commit removes the run's old rows and adds the new ones: a rerun never duplicates.
            write_deltalake(target, reader, mode="overwrite", predicate=f"{run_id_column} = '{run_id}'")
        return counter[0]

    def restore(self, target: str, version: int | None) -> None:
        if self.table_version(target) is None:
            return
        if version is None:
            DeltaTable(target).delete()
        else:
            DeltaTable(target).restore(version)


def _stream(table: Any) -> pa.RecordBatchReader:
    return record_batches(table, chunk_size=50_000)


def _counted(reader: pa.RecordBatchReader) -> tuple[pa.RecordBatchReader, list[int]]:
    """The same stream, counting the rows that pass through it."""
    counter = [0]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            counter[0] += batch.num_rows
            yield batch

    return pa.RecordBatchReader.from_batches(reader.schema, batches()), counter
