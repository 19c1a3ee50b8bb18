"""The DuckDB engine: the Ibis engine on a DuckDB connection (deltalake's store reads and writes its tables).

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

from ...errors import ChatgateError, error_chain, no_space_left, one_line
from ..lakehouse import LakehouseEngine
from ..parquet_files import quote_identifier
from . import CHUNK_SIZE, IbisEngine
from .connection import default_connection
from .plan import JoinOn


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
        locate: bool = False,
    ) -> None:
        super().__init__(chunk_size=chunk_size, join_on=join_on, progress=progress, workers=workers, locate=locate)
        self.con = con or default_connection()

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

    def explain(self, error: BaseException) -> ChatgateError | None:
        if isinstance(error, ChatgateError):
            return None
        chain = list(error_chain(error))
        if no_space_left(error):
            return ChatgateError(
                f"no space left on device ({_short(one_line(error, debug_hint=False))}); free space on that disk, "
                "or point DuckDB's spill folder to a larger one with --temp-dir PATH, then rerun"
            )
        if any(isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryException" for e in chain):
            return ChatgateError(
                f"the embedded engine ran out of memory ({_short(one_line(error, debug_hint=False))}); "
                "raise --memory-limit (DuckDB spills past it), lower --threads, or lower max_value_bytes "
                "(a larger value is reported too_large without being parsed)"
            )
        return None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
