"""One check worker's part of a stream: a set of the snapshot's files, read and checked where it runs.

The embedded engine's single Arrow stream feeds the check workers at one core's pace, and each
batch crosses to a worker through shared memory. A `GroupCheck` moves the read into the worker
instead: its own DuckDB connection (one thread) makes the snapshot's view again over some of the
files (`parquet_files.ViewPart`), runs the stream's SQL on it, checks each batch, and sends back
only what the tally keeps of it: each failing tuple's key, SHA-256 and code, and how many rows
the batch held. With every worker reading its own files, reading and checking scale together.

A worker can also keep its part's failing rows whole (`KeptRows`): the annotated table then reads
them from there, and reading the quarantine doesn't read the whole table again.

This module imports DuckDB only inside the worker, where the task runs; never Ibis.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..rules import RowCheck, message_indices
from .base import FailingColumns
from .digests import digests
from .parquet_files import ViewPart

READ_ROWS = 4096
"""Rows per batch read from DuckDB, when the engine's chunk size is larger: DuckDB makes Arrow
batches of up to two of its vectors a third faster than larger ones (measured: 3 KB chats)."""

ROWS_KEY = b"rows"
"""The metadata key of a result batch that says how many rows its batch held."""

KEPT_KEY = b"kept"
"""The metadata key of a worker's last batch when it keeps failing rows: `KEPT` when it kept every
one of them (in its file, which is missing when none failed), `OVER` when they outgrew its budget."""
KEPT, OVER = b"all", b"over"

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
    kept: KeptRows | None = None

    def __call__(self, emit: Emit) -> None:
        kept = _RowsFile(self.kept) if self.kept is not None else None
        try:
            for batch in self._batches():
                present = self._present(batch)
                codes = self._codes(present)
                emit(self.failing(present, codes), {ROWS_KEY: str(len(present)).encode()})
                if kept is not None:
                    kept.add(present, codes)
                    if len(present) < len(batch):
                        kept.add_missing(batch, self.columns[0])
        except BaseException:
            if kept is not None:
                kept.drop()
            raise
        if kept is not None:
            emit(pa.RecordBatch.from_pylist([], schema=self.schema), {KEPT_KEY: kept.close()})

    def _batches(self) -> Any:
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
                    yield batch
        finally:
            con.close()

    def _present(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows the check sees: a lone chat column's nulls are the engine's to count (they reach
        a worker only when it keeps whole rows: see `KeptRows`)."""
        if self.kept is None or not self.single or not batch.column(self.columns[0]).null_count:
            return batch
        return batch.filter(batch.column(self.columns[0]).is_valid())

    def _codes(self, batch: pa.RecordBatch) -> pa.Array:
        codes = self.check.check(batch.select(list(self.columns)))
        if isinstance(codes, pa.ChunkedArray):
            codes = codes.combine_chunks()
        if len(codes) != len(batch):
            raise ValueError(f"the check {self.check.describe()!r} gave {len(codes)} codes for {len(batch)} rows")
        return codes

    def failing(self, batch: pa.RecordBatch, codes: pa.Array) -> pa.RecordBatch:
        """The failing tuples of one batch of the stream and its `codes`: hash, length, SHA-256 and code."""
        arrays = failing_tuples(
            self.check, batch, codes, columns=self.columns, kinds=self.kinds, single=self.single,
            keys=self.keys, locate=self.locate,
        )
        return pa.record_batch([a.cast(f.type) for a, f in zip(arrays, self.schema)], schema=self.schema)


def failing_tuples(
    check: RowCheck,
    batch: pa.RecordBatch,
    codes: pa.Array,
    *,
    columns: tuple[str, ...],
    kinds: tuple[str, ...],
    single: bool,
    keys: tuple[str, str],
    locate: bool,
) -> list[pa.Array]:
    """What the hash join keeps of a checked batch's failing tuples: their hash and length (the
    batch's `keys` columns), SHA-256 and code, and with `locate` the message of each one's problem."""
    where = pc.indices_nonzero(codes.is_valid())
    values = [batch.column(column).take(where) for column in columns]
    reasons = codes.take(where).cast(pa.string())
    arrays = [*(batch.column(key).take(where) for key in keys), digests(values, kinds, single=single), reasons]
    if locate:
        arrays.append(located_messages(check, columns, values, reasons))
    return arrays


def located_messages(
    check: RowCheck, columns: tuple[str, ...], values: list[pa.Array], codes: pa.Array
) -> pa.Int32Array:
    """The message of each failing tuple's problem (`pb_message_`), found where the tuple was
    checked: the quarantine then joins it back with the code, instead of reading each failing
    row again in a Python function that the engine calls a few rows at a time."""
    return message_indices(check, pa.RecordBatch.from_arrays(values, names=list(columns)), codes)


@dataclass(frozen=True)
class KeptRows:
    """Where a worker keeps its part's failing rows whole: the `columns` of the table (the
    stream reads them all, and a lone chat column's nulls too), each with its code under
    `reason` (`missing` for those nulls, None when they pass), in the Arrow file `path`, as long
    as they stay within `budget` bytes. Past it the worker stops keeping them and says so: the
    engine joins the failing set back to the table instead.

    With `computed`, the worker also computes those columns of the rows it keeps (the repairs of
    `--fix`), on the core that checked them, and writes them after the rows; its inputs read the
    code under `computed_reason`."""

    path: str
    columns: tuple[str, ...]
    reason: str
    missing: str | None
    budget: int
    computed: FailingColumns | None = None
    computed_reason: str = ""


def _with_computed(kept: pa.RecordBatch, rows: pa.RecordBatch, computed: FailingColumns) -> pa.RecordBatch:
    """`kept` with the `computed` columns of `rows` (the same rows, their code named as `computed` reads it)."""
    for f, values in zip(computed.added, computed.of(rows)):
        kept = kept.append_column(f, values)
    return kept


class _RowsFile:
    """A worker's `KeptRows` file, written as the batches are checked."""

    def __init__(self, kept: KeptRows) -> None:
        self.kept = kept
        self.writer: Any = None
        self.size = 0
        self.over = False

    def add(self, batch: pa.RecordBatch, codes: pa.Array) -> None:
        """The rows of `batch` whose code isn't null, with it."""
        if self.over or codes.null_count == len(codes):
            return
        where = pc.indices_nonzero(codes.is_valid())
        self._write(batch.select(list(self.kept.columns)).take(where), codes.take(where).cast(pa.string()))

    def add_missing(self, batch: pa.RecordBatch, column: str) -> None:
        """The rows of `batch` whose lone chat `column` is null, with their code (unless they pass)."""
        if self.over or self.kept.missing is None:
            return
        nulls = batch.filter(batch.column(column).is_null()).select(list(self.kept.columns))
        self._write(nulls, pa.repeat(pa.scalar(self.kept.missing, pa.string()), len(nulls)))

    def _write(self, rows: pa.RecordBatch, codes: pa.Array) -> None:
        if not len(rows):
            return
        kept = rows.append_column(self.kept.reason, codes)
        if self.kept.computed is not None:
            kept = _with_computed(kept, rows.append_column(self.kept.computed_reason, codes), self.kept.computed)
        self.size += kept.nbytes
        if self.size > self.kept.budget:
            self.drop()
            self.over = True
            return
        try:
            if self.writer is None:
                self.writer = pa.ipc.new_file(self.kept.path, kept.schema)
            self.writer.write_batch(kept)
        except OSError:  # no room for them: the engine joins the failing set back instead
            self.drop()
            self.over = True

    def drop(self) -> None:
        """Stop writing, and remove what was written."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.kept.path)

    def close(self) -> bytes:
        """Finish the file; `KEPT` or `OVER`."""
        if self.writer is not None:
            self.writer.close()
        return OVER if self.over else KEPT
