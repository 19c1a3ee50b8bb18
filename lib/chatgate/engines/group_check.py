"""One check worker's part of a stream: a set of the snapshot's files, read and checked where it runs.

The embedded engine's single Arrow stream feeds the check workers at one core's pace, and each
batch crosses to a worker through shared memory. A `GroupCheck` moves the read into the worker
instead: its own DuckDB connection (one thread) makes the snapshot's view again over some of the
files (`parquet_files.ViewPart`), runs the stream's SQL on it, checks each batch, and sends back
only what the tally keeps of it: each failing tuple's key, SHA-256 and code, and how many rows
the batch held. With every worker reading its own files, reading and checking scale together.

This module imports DuckDB only inside the worker, where the task runs; never Ibis.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..rules import RowCheck, message_indices
from .digests import digests
from .parquet_files import ViewPart

READ_ROWS = 4096
"""Rows per batch read from DuckDB, when the engine's chunk size is larger: DuckDB makes Arrow
batches of up to two of its vectors a third faster than larger ones (measured: 3 KB chats)."""

ROWS_KEY = b"rows"
"""The metadata key of a result batch that says how many rows its batch held."""

Emit = Callable[[pa.RecordBatch, dict[bytes, bytes]], None]


@dataclass(frozen=True)
class GroupCheck:
    """Check the rows the stream's `sql` reads from `part`; `emit` each batch's failing tuples.

    `columns` are the check's columns in the stream, `kinds` their digest kinds (and `single`,
    a lone chat column), `keys` the stream's hash and length columns; the result batches have
    the `schema` of the failing set (hash and length as the stream types them, SHA-256, code).
    """

    part: ViewPart
    sql: str
    check: RowCheck
    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    single: bool
    keys: tuple[str, str]
    schema: pa.Schema
    chunk_size: int
    locate: bool = False  # the failing set's fifth column: each failing tuple's problem message

    def __call__(self, emit: Emit) -> None:
        import duckdb

        con = duckdb.connect(config={"threads": 1})
        try:
            # As Ibis sets its connections: timestamps' text and casts don't depend on the machine.
            # Without the ICU extension (offline) DuckDB has no time zones, UTC alone.
            with contextlib.suppress(duckdb.Error):
                con.execute("SET TimeZone = 'UTC'")
            self.part.create(con)
            reader = con.sql(self.sql).to_arrow_reader(batch_size=min(self.chunk_size, READ_ROWS))
            for batch in reader:
                if len(batch):
                    emit(self.failing(batch), {ROWS_KEY: str(len(batch)).encode()})
        finally:
            con.close()

    def failing(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The failing tuples of one batch of the stream: hash, length, SHA-256 and code."""
        codes = self.check.check(batch.select(list(self.columns)))
        if isinstance(codes, pa.ChunkedArray):
            codes = codes.combine_chunks()
        if len(codes) != len(batch):
            raise ValueError(f"the check {self.check.describe()!r} gave {len(codes)} codes for {len(batch)} rows")
        where = pc.indices_nonzero(codes.is_valid())
        values = [batch.column(column).take(where) for column in self.columns]
        keys = [batch.column(key).take(where) for key in self.keys]
        reasons = codes.take(where).cast(pa.string())
        arrays = [*keys, digests(values, self.kinds, single=self.single), reasons]
        if self.locate:
            arrays.append(located_messages(self.check, self.columns, values, reasons))
        return pa.record_batch([a.cast(f.type) for a, f in zip(arrays, self.schema)], schema=self.schema)


def located_messages(
    check: RowCheck, columns: tuple[str, ...], values: list[pa.Array], codes: pa.Array
) -> pa.Int32Array:
    """The message of each failing tuple's problem (`pb_message_`), found where the tuple was
    checked: the quarantine then joins it back with the code, instead of reading each failing
    row again in a Python function that the engine calls a few rows at a time."""
    return message_indices(check, pa.RecordBatch.from_arrays(values, names=list(columns)), codes)
