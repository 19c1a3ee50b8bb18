"""Gate data inside a pipeline: the caller's own table back, with each row's verdict, or split in two.

`annotate` adds `pb_reason_` (the first failing check's code, null where the row
passes) and `pb_message_` (the message it is at), and with `turns="all"` also
`pb_reasons_` (every problem of that check); `split` gives the rows that pass, as they
came, and the failing rows annotated. Both return the input's own kind of table, and
both are lazy where the table is: on Spark (batch or streaming) and on DuckDB the
verdicts are computed where the rows are when the caller writes or collects, and no
job runs before (each read of a result runs the check again: persist it to read it
twice). The check is the job's: the same options, profiles and dataset types, and
the codes the job's quarantine holds for the same rows.

>>> import polars as pl
>>> chats = pl.DataFrame({"messages": ['[{"role": "user", "content": "Hi"}]', '[{"role": "bot", "content": "Hi"}]']})
>>> annotate(chats, "messages")["pb_reason_"].to_list()
[None, 'unknown_role']
>>> passing, failing = split(chats, "messages", roles=["user", "bot"])
>>> passing.height, failing.height
(2, 0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from .engines import engine_for
from .engines.base import Engine
from .names import MESSAGE, REASON, REASONS
from .rules import ChatCheck, RowCheck, dataset_checks, message_indices, row_problems_array
from .rules.datasets.locate_rows import ROW_PROBLEM_TYPE
from .rules.trainers.profiles import format_from
from .step_params import TURNS, Turns

Columns = str | Sequence[str] | Mapping[str, str] | None


def annotate(
    table: Any,
    columns: Columns = None,
    *,
    dataset_type: str | None = None,
    tools_column: str | None = None,
    images_column: str | None = None,
    turns: Turns = "first",
    **options: Any,
) -> Any:
    """`table` with each row's verdict: `pb_reason_`, `pb_message_` (and `pb_reasons_` with turns="all").

    `columns`: the chat column, or several (each row takes the first failing one's code);
    with `dataset_type` ("preference", "prompt_completion", ..., or "auto" to detect it),
    a mapping of the type's fields to the table's columns, or None. `options` are the
    check's (roles=, last_role=, profile=, ...), as for `Validate.col_vals_chat_format`.
    Bad arguments raise here, before any row is read.
    """
    gate = _gate(table, columns, dataset_type, tools_column, images_column, turns, options)
    return gate.annotated(table)


def split(
    table: Any,
    columns: Columns = None,
    *,
    dataset_type: str | None = None,
    tools_column: str | None = None,
    images_column: str | None = None,
    turns: Turns = "first",
    **options: Any,
) -> tuple[Any, Any]:
    """`(passing, failing)`: the rows that pass every check, with the table's own columns, and
    the rows that fail one, annotated as `annotate` does. Same arguments as `annotate`."""
    gate = _gate(table, columns, dataset_type, tools_column, images_column, turns, options)
    annotated = gate.annotated(table)
    return gate.rows(annotated, failing=False), gate.rows(annotated, failing=True)


@dataclass(frozen=True)
class Verdicts:
    """Each row's first failing check, its code and message (and every problem with turns="all"),
    computed on an Arrow batch of the checks' columns. Picklable, for Spark's workers."""

    checks: tuple[RowCheck, ...]
    turns: Turns

    @property
    def inputs(self) -> list[str]:
        return list(dict.fromkeys(c for check in self.checks for c in check.columns))

    @property
    def added(self) -> pa.Schema:
        fields = [(REASON, pa.string()), (MESSAGE, pa.int32())]
        return pa.schema(fields + ([(REASONS, pa.list_(ROW_PROBLEM_TYPE))] if self.turns == "all" else []))

    def __call__(self, columns: Mapping[str, Any]) -> list[Any]:
        batch = pa.RecordBatch.from_pydict({name: _arrow(values) for name, values in columns.items()})
        reason: pa.Array = pa.nulls(batch.num_rows, pa.string())
        message: pa.Array = pa.nulls(batch.num_rows, pa.int32())
        every: pa.Array = pa.nulls(batch.num_rows, pa.list_(ROW_PROBLEM_TYPE))
        for check in self.checks:
            codes = check.check(batch)
            first = pc.and_(reason.is_null(), codes.is_valid())
            if not pc.any(first).as_py():
                continue
            mine = pc.if_else(first, codes, pa.nulls(batch.num_rows, pa.string()))
            reason = pc.if_else(first, codes, reason)
            message = pc.if_else(first, message_indices(check, batch, mine), message)
            if self.turns == "all":
                every = pc.if_else(first, row_problems_array(check, batch, mine), every)
        return [reason, message, every][: len(self.added)]


@dataclass(frozen=True)
class _Gate:
    verdicts: Verdicts
    kind: _Kind

    def annotated(self, table: Any) -> Any:
        return self.kind.annotated(table, self.verdicts)

    def rows(self, annotated: Any, *, failing: bool) -> Any:
        kept = self.kind.where_reason(annotated, failing=failing)
        return kept if failing else self.kind.drop(kept, self.verdicts.added.names)


class _Kind(Protocol):
    """What the gate asks of a kind of table: its columns, the verdicts added, rows kept, columns dropped."""

    def columns(self, table: Any) -> list[str]: ...
    def annotated(self, table: Any, verdicts: Verdicts) -> Any: ...
    def where_reason(self, table: Any, *, failing: bool) -> Any: ...
    def drop(self, table: Any, names: list[str]) -> Any: ...


@dataclass(frozen=True)
class _OnEngine:
    """A table an engine takes (Spark, Ibis, Polars and pandas DataFrames): the engine computes."""

    engine: Engine

    def columns(self, table: Any) -> list[str]:
        return self.engine.columns(table)

    def annotated(self, table: Any, verdicts: Verdicts) -> Any:
        layout = {c: c for c in self.engine.columns(table)} | {name: name for name in verdicts.added.names}
        return self.engine.with_computed_columns(table, verdicts.inputs, verdicts.added, verdicts, layout)

    def where_reason(self, table: Any, *, failing: bool) -> Any:
        return self.engine.where_reason(table, REASON, present=failing)

    def drop(self, table: Any, names: list[str]) -> Any:
        return self.engine.drop_columns(table, names)


class _OnArrow:
    """A PyArrow table, computed batch by batch in memory."""

    def columns(self, table: Any) -> list[str]:
        return list(table.column_names)

    def annotated(self, table: Any, verdicts: Verdicts) -> Any:
        return _arrow_annotated(table, verdicts)

    def where_reason(self, table: Any, *, failing: bool) -> Any:
        return table.filter(pc.is_valid(table[REASON]) if failing else pc.is_null(table[REASON]))

    def drop(self, table: Any, names: list[str]) -> Any:
        return table.drop_columns(names)


class _OnLazyPolars:
    """A Polars LazyFrame: the verdicts are an expression of its plan."""

    def columns(self, table: Any) -> list[str]:
        return list(table.collect_schema().names())

    def annotated(self, table: Any, verdicts: Verdicts) -> Any:
        return _lazy_annotated(table, verdicts)

    def where_reason(self, table: Any, *, failing: bool) -> Any:
        import polars as pl

        return table.filter(pl.col(REASON).is_not_null() if failing else pl.col(REASON).is_null())

    def drop(self, table: Any, names: list[str]) -> Any:
        return table.drop(names)


def _kind_of(table: Any) -> _Kind:
    if isinstance(table, pa.Table):
        return _OnArrow()
    if type(table).__module__.startswith("polars") and type(table).__name__ == "LazyFrame":
        return _OnLazyPolars()
    return _OnEngine(engine_for(table))


def _gate(
    table: Any,
    columns: Columns,
    dataset_type: str | None,
    tools_column: str | None,
    images_column: str | None,
    turns: Turns,
    options: dict[str, Any],
) -> _Gate:
    """The checks the arguments ask for, checked against the table's columns; no row is read."""
    if turns not in TURNS:
        raise ValueError(f"turns= must be one of {list(TURNS)}, not {turns!r}")
    fmt = format_from(**options)
    kind = _kind_of(table)
    names = kind.columns(table)
    taken = set(names) & {REASON, MESSAGE, REASONS}
    if taken:
        raise ValueError(f"the table already has {sorted(taken)}, which chatgate adds: rename or drop them first")
    if dataset_type is not None:
        checks = _dataset_checks(names, columns, dataset_type, fmt, tools_column, images_column)
    else:
        checks = _chat_checks(columns, fmt, tools_column, images_column)
    missing = [c for check in checks for c in check.columns if c not in names]
    if missing:
        raise ValueError(f"no column {missing[0]!r} in the table; its columns: {names}")
    return _Gate(Verdicts(tuple(checks), turns), kind)


def _dataset_checks(
    names: list[str], columns: Columns, dataset_type: str, fmt: Any, tools_column: str | None, images_column: str | None
) -> list[RowCheck]:
    mapping = dict(columns) if isinstance(columns, Mapping) else None
    if columns is not None and mapping is None:
        raise ValueError("with dataset_type=, columns= maps the type's fields to columns ({'prompt': 'question'})")
    return dataset_checks(
        None if dataset_type == "auto" else dataset_type, names, chat=fmt, columns=mapping,
        tools_column=tools_column or "tools", images_column=images_column or "images",
    )


def _chat_checks(columns: Columns, fmt: Any, tools_column: str | None, images_column: str | None) -> list[RowCheck]:
    chat = [columns] if isinstance(columns, str) else list(columns or [])
    if not chat or isinstance(columns, Mapping):
        raise ValueError("name the chat column to check (or several), or a dataset_type=")
    return [ChatCheck(column, fmt, tools_column, images_column) for column in chat]


def _arrow(values: Any) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values if isinstance(values, pa.Array) else pa.array(values)


def _arrow_annotated(table: pa.Table, verdicts: Verdicts) -> pa.Table:
    parts = [verdicts({c: batch.column(c) for c in verdicts.inputs}) for batch in table.select(verdicts.inputs).to_batches()]
    for i, field in enumerate(verdicts.added):
        column = pa.chunked_array([part[i] for part in parts], field.type)
        table = table.append_column(field, column)
    return table


def _lazy_annotated(frame: Any, verdicts: Verdicts) -> Any:
    import polars as pl

    added = verdicts.added

    def on_batch(rows: pl.Series) -> pl.Series:
        struct = rows.to_arrow()
        if isinstance(struct, pa.ChunkedArray):
            struct = struct.combine_chunks()
        batch = pa.RecordBatch.from_struct_array(struct)
        arrays = verdicts({c: batch.column(c) for c in verdicts.inputs})
        return pl.Series(pa.StructArray.from_arrays(arrays, fields=list(added)))

    dtype = pl.DataFrame(added.empty_table()).to_struct().dtype
    packed = "__chatgate_verdicts__"
    return frame.with_columns(pl.struct(verdicts.inputs).map_batches(on_batch, return_dtype=dtype).alias(packed)).unnest(packed)
