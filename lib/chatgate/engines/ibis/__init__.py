"""The embedded engine: any Ibis table (DuckDB by default), judged in five steps.

An engine judges a `RowCheck`: the columns `check.columns` of each row, together
(a "tuple"; one column for a plain chat column).

1. key: on the backend, a key of each tuple: its 64-bit `hash()` and its length
   (for several columns, the `hash()` of the struct of the values and the sum of
   the text lengths);
2. dedup: the distinct tuples and how many rows hold each (`group_by` on the
   values themselves, so deduplication is exact), or every row;
3. check: the tuples stream to Python in Arrow record batches of at most
   `chunk_size` rows, holding exactly the check's columns under their own names,
   and `check.check(batch)` judges each batch; only the failing tuples are kept,
   as (key, SHA-256 of the tuple, reason), in Arrow;
4. join back: the failing set is uploaded as an `ibis.memtable`, one row per key
   holding a map {SHA-256: reason}, and left-joined to the table on the key. A
   row takes the reason filed under the SHA-256 of its own tuple, which the
   backend computes for key-matching rows only. Keys do collide (DuckDB's
   `hash()` does on long strings that differ in a byte or two), but a collision
   can't mislabel a row, nor multiply it. When workers read the table's files in
   parts (`split`), they keep its failing rows whole too (up to `stream.KEPT_ROWS_BYTES`):
   the annotated table is those rows, then the join's passing rows, so reading the
   failing rows (a quarantine) doesn't read the table again;
5. count: units, failures and reasons come from the counts per distinct tuple,
   without scanning the table again. Reasons are ordered by count; only when two
   counts tie is the table read once more, for the first failing row of each
   (`row_number()` in scan order), and then by `rules.reason_rank`.

The SHA-256 of a tuple of several columns is that of its parts joined with ",":
for each column, in `check.columns` order, the SHA-256 (hex) of a text's UTF-8
bytes, "t"/"f" for a boolean, the decimal digits of an integer, "~" for a null.
A part never holds a ",", and each column's parts can't be mistaken for one
another (64 hex digits, one letter, digits, or "~"), so two tuples share it only
if SHA-256 collides. Python computes it for the failing tuples, from the Arrow
buffers; the backend for the rows whose key matched.

Missing values: for a chat column judged alone (a `ChatCheck` without
`tools_column` or `images_column`) they never travel: they are counted on the
backend and get `not_messages` there (or pass, with `na_pass=True`). Any other
check gets every tuple, nulls included, and decides: a null in a tuple isn't a
failure by itself.

Native nested columns (lists of structs, structs, maps) are supported on DuckDB,
which hands them over as Arrow: their distinct values are checked like JSON
text, and the failing values themselves are uploaded and joined on (DuckDB
compares nested values exactly, nulls inside included; the tuples of several
columns are compared with `IS NOT DISTINCT FROM`, so a null matches a null).
The same value join serves binary columns, tuples with a column other than text,
booleans and integers, and backends without `hash()`, SHA-256 or maps.

A chat column of any other type (integers, floats, booleans, dates, ...) is
judged the same way, by the check, as on every engine: its values aren't lists
of messages (`not_messages`), its nulls follow `na_pass`. Types Ibis can't send
back to the backend (intervals, DuckDB's BIT and UNION) are judged as their text.

Memory: Python holds one batch at a time, plus the failing set as Arrow (about
100 bytes per failing distinct tuple on the hash join; the failing values
themselves on the value join). The backend does the deduplication, and DuckDB
spills to disk when it must.

>>> import ibis
>>> from chatgate.rules import ChatFormat, DatasetCheck
>>> t = ibis.memtable({"chat": ['[{"role": "user", "content": "Hi"}]', "[]"]})
>>> judged = IbisEngine().judge(t, "chat", ChatFormat())
>>> judged.failed, judged.reasons
(1, {'no_messages': 1})
>>> pairs = ibis.memtable({"prompt": ["The sky is", "1 + 1 ="], "completion": [" blue.", None]})
>>> IbisEngine().judge_check(pairs, DatasetCheck("prompt_completion")).reasons
{'not_text': 1}
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any

import ibis
import pyarrow as pa

from ...rules import RowCheck
from ..base import (
    EMBEDDED_AUTO,
    Dedup,
    Engine,
    FailingColumns,
    Judged,
    ordered_reasons,
    require_column,
    summed_by_key,
)
from ..digests import NULL_PART as NULL_PART
from ..parquet_files import ROW_ID, read_despite_bad_text
from .connection import record_batches
from .join import _annotate, _failing_table, _located, _with_kept_rows
from .plan import NATIVE_BACKENDS as NATIVE_BACKENDS
from .plan import JoinOn, _make_plan
from .plan import _tuple_digest as _tuple_digest
from .stream import COMPACT_FAILING_ROWS as COMPACT_FAILING_ROWS
from .stream import PROGRESS_MIN_BATCHES as PROGRESS_MIN_BATCHES
from .stream import _decide, _progress, _stream, file_parts
from .tally import _first_rows, _Names

__all__ = [
    "CHUNK_SIZE",
    "IbisEngine",
]

CHUNK_SIZE = 10_000
"""Rows per Arrow batch sent to Python (the scale notes' sweet spot)."""


class IbisEngine(Engine):
    """Judge row checks over Ibis tables on their own backend; see the module docstring.

    `chunk_size` is the number of rows per Arrow batch sent to Python. `join_on`
    picks how failing tuples are joined back: "hash" (hash and length, then SHA-256;
    text columns, with booleans and integers besides, on backends with `hash()`,
    SHA-256 and maps), "value" (the failing values themselves), or "auto" (hash when
    possible). `progress` shows the rows checked (see `chatgate.progress`): True a tqdm
    bar, False nothing, None decides from the environment (`CHATGATE_PROGRESS=0` turns it
    off, `=1` shows the bar; otherwise a bar on a terminal, else a line on the
    `chatgate.progress` logger every few seconds), and only for more than
    `PROGRESS_MIN_BATCHES` batches' worth of rows.
    `workers` is the number of processes that run the check (see `workers.CheckPool`):
    1 checks in this process, more use as many cores for streams of at least
    `PARALLEL_MIN_ROWS` rows. With `locate`, the check also finds the message of each
    failing value's problem, kept with its code (`Judged.locate`; on the hash join only):
    the job's quarantine reads it there.
    """

    name = "ibis"
    table_kind = "Ibis tables"
    auto = EMBEDDED_AUTO

    def __init__(
        self,
        *,
        chunk_size: int = CHUNK_SIZE,
        join_on: JoinOn = "auto",
        progress: bool | None = None,
        workers: int = 1,
        locate: bool = False,
    ) -> None:
        if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
            raise ValueError(f"chunk_size= must be a positive integer, not {chunk_size!r}")
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers= must be a positive integer, not {workers!r}")
        if join_on not in ("auto", "hash", "value"):
            raise ValueError(f"join_on= must be 'auto', 'hash' or 'value', not {join_on!r}")
        if progress not in (None, True, False):
            raise ValueError(f"progress= must be True, False or None, not {progress!r}")
        self.chunk_size = chunk_size
        self.join_on = join_on
        self.progress = progress
        self.workers = workers
        self.locate = locate

    # -- the small questions -------------------------------------------------------------

    def accepts(self, table: Any) -> bool:
        return isinstance(table, ibis.expr.types.Table)

    def columns(self, table: ibis.Table) -> list[str]:
        return [c for c in table.columns if c != ROW_ID]  # the engine's own, for deduplication

    def row_count(self, table: ibis.Table) -> int:
        return int(table.count().execute())

    def segment_values(self, table: ibis.Table, column: str) -> list[Any]:
        require_column(self.columns(table), column)
        distinct = table.select(column).distinct()
        ordered = distinct.order_by(ibis.asc(distinct[column], nulls_first=False))
        return read_despite_bad_text(table.get_backend(), lambda: ordered.to_pyarrow().column(0).to_pylist())

    def filter_equal(self, table: ibis.Table, column: str, value: Any) -> ibis.Table:
        require_column(self.columns(table), column)
        if value is None:
            return table.filter(table[column].isnull())
        return table.filter(table[column] == value)

    def preview(self, table: ibis.Table, limit: int) -> pa.Table:
        return read_despite_bad_text(table.get_backend(), lambda: table.limit(limit).to_pyarrow())

    def drop_columns(self, table: ibis.Table, names: list[str]) -> ibis.Table:
        return table.drop(*names) if names else table

    def concat(self, tables: list[ibis.Table]) -> ibis.Table:
        if not tables:
            raise ValueError("concat() needs at least one table")
        return tables[0] if len(tables) == 1 else ibis.union(*tables, distinct=False)

    def with_arrow_columns(
        self,
        table: ibis.Table,
        inputs: list[str],
        added: pa.Schema,
        compute: Callable[[pa.RecordBatch], list[pa.Array]],
    ) -> ibis.Table:
        # Any Ibis backend: the rows come to Python as one Arrow batch (a step's failing rows,
        # or the rows of a frame in memory), and go back as a memtable.
        data = table.to_pyarrow()
        columns = data.select(inputs)
        batch = pa.RecordBatch.from_arrays([c.combine_chunks() for c in columns.columns], schema=columns.schema)
        for f, values in zip(added, compute(batch)):
            data = data.append_column(f, pa.array(values, f.type) if isinstance(values, list) else values.cast(f.type))
        return ibis.memtable(data)

    def project(
        self, table: ibis.Table, columns: list[str], renamed: dict[str, str], constants: dict[str, pa.Scalar]
    ) -> ibis.Table:
        return table.select(
            *[table[c] for c in columns],
            *[table[source].name(name) for source, name in renamed.items()],
            *[ibis.literal(value.as_py(), type=ibis.dtype(value.type)).name(name) for name, value in constants.items()],
        )

    def where_reason(self, table: ibis.Table, column: str, *, present: bool) -> ibis.Table:
        reason = table[column]
        return table.filter(reason.notnull() if present else reason.isnull())

    def sum_batches(
        self,
        table: ibis.Table,
        inputs: list[str],
        partial: Callable[[Mapping[str, Any]], pa.Table],
        schema: pa.Schema,
    ) -> pa.Table:
        # One stream, summed as it goes: the driver holds one batch and the sums.
        rows = self.row_count(table)
        total = schema.empty_table()
        reader = record_batches(table.select(*inputs), chunk_size=self.chunk_size)
        shown = _progress(rows, "counting tokens", chunk_size=self.chunk_size, progress=self.progress, verb="counted")
        with shown, contextlib.closing(reader):
            for batch in reader:
                total = summed_by_key([total, partial(dict(zip(inputs, batch.columns)))], schema)
                shown.update(batch.num_rows)
        return total

    # -- judging -------------------------------------------------------------------------

    def _judge(
        self,
        table: ibis.Table,
        check: RowCheck,
        columns: tuple[str, ...],
        dedup: Dedup,
        reason_column: str,
        failing_columns: FailingColumns | None = None,
    ) -> Judged:
        """`Judged.annotated` is lazy, on the table's backend; `extra["checked"]` is the
        number of tuples sent to the check. A Parquet file DuckDB refuses for text that
        isn't UTF-8 is read again unchecked (`parquet_files.read_despite_bad_text`): its
        rows are judged like any others."""
        return read_despite_bad_text(
            table.get_backend(), lambda: self._judge_once(table, check, columns, dedup, reason_column, failing_columns)
        )

    def _judge_once(
        self,
        table: ibis.Table,
        check: RowCheck,
        columns: tuple[str, ...],
        dedup: Dedup,
        reason_column: str,
        failing_columns: FailingColumns | None,
    ) -> Judged:
        backend = table.get_backend()
        plan = _make_plan(table, check, columns, backend, self.join_on)
        names = _Names.fresh()

        rows = self.row_count(table)
        parts = file_parts(table, plan, rows, self.workers)
        dedup_on, repeats = _decide(table, plan, rows, dedup, self.chunk_size, in_stream=not parts)
        locate = self.locate and plan.join_on == "hash"
        tally = None
        if dedup_on is None:  # the first rows of the stream without dedup decide
            tally, repeats = _stream(
                table, check, plan, names, rows,
                chunk_size=self.chunk_size, progress=self.progress, dedup_on=False, decide=True,
                workers=self.workers, locate=locate,
            )
            dedup_on = tally is None
        if tally is None:
            tally, _ = _stream(
                table, check, plan, names, rows,
                chunk_size=self.chunk_size, progress=self.progress, dedup_on=dedup_on,
                workers=self.workers, locate=locate, parts=parts,
                computed=failing_columns, reason_column=reason_column,
            )
        assert tally is not None  # only a stream that decides stops early
        if not dedup_on:
            tally.units = rows
            tally.nulls = rows - tally.checked
        if tally.nulls and not plan.na_pass:
            tally.count("not_messages", tally.nulls)

        failing = _failing_table(tally, plan, names)
        annotate = functools.partial(_annotate, plan=plan, failing=failing, names=names)
        first_rows = _first_rows(table, annotate, tally.reasons, names)
        joined = annotate(table, reason_column)
        kept = (
            _with_kept_rows(table, joined, tally.kept, reason_column, names, failing_columns)
            if tally.kept is not None else None
        )
        return Judged(
            units=tally.units,
            failed=tally.failed,
            reasons=ordered_reasons(tally.reasons, first_rows),
            distinct_values=tally.present if dedup_on else None,
            annotated=joined if kept is None else kept.annotated,
            reason_column=reason_column,
            deduplicated=dedup_on,
            locate=(
                functools.partial(_located, plan=plan, failing=failing, names=names, reason_column=reason_column)
                if locate else None
            ),
            failing_computed=None if kept is None else kept.computed,
            extra={
                "backend": backend.name,
                "columns": list(columns),
                "join_on": plan.join_on,
                "batches": tally.batches,
                "checked": tally.checked,
                "nulls": tally.nulls,
                "repeats_estimate": repeats,
                "key_collisions": tally.collisions,
                "failing_rows_kept": kept is not None,
            },
        )

