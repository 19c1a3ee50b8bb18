"""The DuckDB engine: the Ibis engine on a DuckDB connection, reading and writing Delta with deltalake.

It is what the job runs on one machine (`engine: duckdb`), and what `Validate`
runs on an Ibis table of DuckDB.
"""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import ibis
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, SchemaMismatchError, TableNotFoundError

from ...errors import ChatgateError, OutputError, SourceError
from ..lakehouse import LakehouseEngine, commit_metadata, is_local_path, local_target_state, pinned_version
from ..parquet_files import quote_identifier, read_despite_bad_text
from ..tables import (
    DeltaLogError,
    default_connection,
    delta_error_text,
    delta_version,
    error_chain,
    no_space_left,
    open_table,
    record_batches,
    rust_panics_logged,
)
from . import CHUNK_SIZE, IbisEngine
from .plan import JoinOn

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


class DuckDBEngine(IbisEngine, LakehouseEngine):
    """The Ibis engine with a DuckDB connection (`con`, else the shared default) to read sources with."""

    name = "duckdb"

    def __init__(
        self,
        con: Any = None,
        *,
        chunk_size: int = CHUNK_SIZE,
        join_on: JoinOn = "auto",
        progress: bool | None = None,
        workers: int = 1,
    ) -> None:
        super().__init__(chunk_size=chunk_size, join_on=join_on, progress=progress, workers=workers)
        self.con = con or default_connection()

    def open_source(self, source: str, version: int | None) -> tuple[Any, int | None]:
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

    @contextmanager
    def reused(self, table: ibis.Table, *, small: bool = False) -> Iterator[ibis.Table]:
        if not small:
            # The source is read again rather than copied: DuckDB's memory stays flat.
            yield table
            return
        # A temporary table in DuckDB's own storage (spilled to its temp directory past memory_limit).
        name = f"chatgate_kept_{uuid.uuid4().hex}"
        kept = self.con.create_table(name, obj=table, temp=True)
        try:
            yield kept
        finally:
            # Ibis's drop_table names the temporary table by a catalog path DuckDB doesn't parse.
            self.con.raw_sql(f"DROP TABLE IF EXISTS {quote_identifier(name)}")

    def where_any(self, table: ibis.Table, columns: list[str]) -> ibis.Table:
        return table.filter(functools.reduce(operator.or_, (table[c].notnull() for c in columns)))

    def list_item_counts(self, table: ibis.Table, column: str) -> tuple[int, dict[str, int]]:
        rows = table.filter(table[column].notnull())
        items = rows.select(item=rows[column].unique().unnest()).group_by("item").agg(n=ibis._.count())
        counts = items.to_pyarrow().to_pylist()
        return self.row_count(rows), {row["item"]: row["n"] for row in counts}

    def with_arrow_columns(
        self,
        table: ibis.Table,
        inputs: list[str],
        added: pa.Schema,
        compute: Callable[[pa.RecordBatch], list[pa.Array]],
    ) -> ibis.Table:
        # One struct in, one struct out: a null input reaches `compute` like any other value.
        row = ibis.struct({column: table[column] for column in inputs})
        out = pa.struct(list(added))

        def run(rows: pa.StructArray | pa.ChunkedArray) -> pa.Array:
            if isinstance(rows, pa.ChunkedArray):
                rows = rows.combine_chunks()
            arrays = compute(pa.RecordBatch.from_struct_array(rows))
            return pa.StructArray.from_arrays([a.cast(f.type) for a, f in zip(arrays, added)], fields=list(added))

        udf = ibis.udf.scalar.pyarrow(
            run,
            name=f"chatgate_{uuid.uuid4().hex}",
            signature=((row.type(),), ibis.dtype(out)),
            null_handling="special",  # the added columns hold nulls
            side_effects=False,
        )
        packed = f"__chatgate_added_{uuid.uuid4().hex}__"
        return table.mutate(**{packed: udf(row)}).unpack(packed)

    def project(
        self, table: ibis.Table, columns: list[str], renamed: dict[str, str], constants: dict[str, pa.Scalar]
    ) -> ibis.Table:
        return table.select(
            *[table[c] for c in columns],
            *[table[source].name(name) for source, name in renamed.items()],
            *[ibis.literal(value.as_py(), type=ibis.dtype(value.type)).name(name) for name, value in constants.items()],
        )

    def target_columns(self, target: str) -> list[str] | None:
        if is_local_path(target) and local_target_state(target) == "absent":
            return None
        table = _delta_table(target)
        return None if table is None else [f.name for f in table.schema().fields]

    def explain(self, error: BaseException) -> ChatgateError | None:
        if isinstance(error, ChatgateError):
            return None
        chain = list(error_chain(error))
        if no_space_left(error):
            return ChatgateError(
                f"no space left on device ({_short(delta_error_text(error))}); free space on that disk, "
                "or point DuckDB's spill folder to a larger one with --temp-dir PATH, then rerun"
            )
        if any(isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryException" for e in chain):
            return ChatgateError(
                f"the embedded engine ran out of memory ({_short(delta_error_text(error))}); "
                "raise --memory-limit (DuckDB spills past it), lower --threads, or lower max_value_bytes "
                "(a larger value is reported too_large without being parsed)"
            )
        delta = next((e for e in chain if isinstance(e, DeltaError)), None)
        if delta is not None:
            return ChatgateError(f"deltalake failed: {delta_error_text(delta)} (rerun with --debug for details)")
        return None

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
