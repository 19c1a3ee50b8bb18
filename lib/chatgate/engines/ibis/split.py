"""The stream split by files: each check worker reads and checks a part of the snapshot itself.

A stream without deduplication over one of `parquet_files`' views (a Delta snapshot or
Parquet files, read by DuckDB) is split into groups of files of about the same size, one
per worker (`group_check.GroupCheck`): reading scales with the workers instead of being
one stream at one core's pace. Whatever else the stream reads (another backend, a table in
memory, files read unchecked or remote, a single file) streams from this process as before.

Given a folder (`kept_in`), the workers read every column of the table and keep its failing
rows whole there (`group_check.KeptRows`), when the check reads the table's columns as they are.
"""

from __future__ import annotations

import os

import ibis
import ibis.expr.operations as ops
import pyarrow as pa

from ...rules import RowCheck
from ..base import FailingColumns
from ..group_check import GroupCheck, KeptRows
from ..parquet_files import ViewPart, view_parts
from .plan import _Plan
from .tally import _Names

ROW_LOCAL = (ops.DatabaseTable, ops.Project, ops.Filter, ops.DropColumns, ops.FillNull, ops.DropNull, ops.Sort)
"""The relations a part may apply to its own rows alone: each row kept or dropped, and its
columns computed, from that row only (a limit, distinct, aggregate or join would not be)."""

NOT_ROW_LOCAL = (
    ops.Reduction, ops.Analytic, ops.WindowFunction, ops.Subquery, ops.Unnest,
    ops.ScalarUDF, ops.AggUDF,  # and a Python function lives in this process only
)
"""Values that read other rows (or other tables) than their own."""


def view_of(table: ibis.Table) -> str | None:
    """The name of the one DuckDB view `table` reads, when each worker's part of it is the
    same query over fewer rows: a view its connection can make again (no other table, none
    in memory), and only row-local work on it (`ROW_LOCAL`, nothing of `NOT_ROW_LOCAL`)."""
    if table.get_backend().name != "duckdb":
        return None
    node = table.op()
    relations = node.find(ops.Relation)
    if not all(isinstance(r, ROW_LOCAL) for r in relations) or node.find(NOT_ROW_LOCAL):
        return None
    leaves = {r for r in relations if isinstance(r, ops.DatabaseTable)}
    if len(leaves) != 1:
        return None
    (leaf,) = leaves
    return leaf.name if leaf.namespace == ops.Namespace() else None


def parts_of(table: ibis.Table, plan: _Plan, workers: int) -> list[ViewPart] | None:
    """The parts a stream of `table` without deduplication is read in by `workers` workers, or None."""
    if workers < 2 or plan.join_on != "hash":
        return None
    name = view_of(table)
    return view_parts(table.get_backend(), name, workers) if name is not None else None


def group_checks(
    table: ibis.Table,
    stream: ibis.Table,
    plan: _Plan,
    names: _Names,
    check: RowCheck,
    *,
    parts: list[ViewPart],
    chunk_size: int,
    locate: bool = False,
    kept_in: str | None = None,
    kept_bytes: int = 0,
    computed: FailingColumns | None = None,
    reason_column: str = "",
) -> list[GroupCheck]:
    """One `GroupCheck` per part of `table`'s files (`parts_of`), each running the SQL of `stream`;
    with `kept_in`, of the table's rows, each worker keeping its failing rows (`kept_bytes` in all),
    and the `computed` columns of them, whose inputs name the code `reason_column` (`KeptRows.computed`)."""
    backend = table.get_backend()
    folder = kept_in if kept_in is not None and reads_as_is(table, plan) else None
    if folder is not None:
        k1, kl = plan.keys(plan.read(table))
        stream = table.mutate(**{names.k1: k1, names.kl: kl})
    sql = backend.compile(stream)
    types = stream.schema()
    schema = pa.schema([
        (names.fk1, types[names.k1].to_pyarrow()),
        (names.fkl, types[names.kl].to_pyarrow()),
        (names.fsha, pa.string()),
        (names.freason, pa.string()),
        *([(names.fmessage, pa.int32())] if locate else []),
    ])
    return [
        GroupCheck(
            part, sql, check, plan.columns, plan.kinds, plan.single,
            keys=(names.k1, names.kl), schema=schema, chunk_size=chunk_size, locate=locate,
            kept=None if folder is None else KeptRows(
                os.path.join(folder, f"{n}.arrow"), tuple(table.columns), names.freason, plan.null_code,
                kept_bytes // len(parts),
                computed=computed, computed_reason=reason_column,
            ),
        )
        for n, part in enumerate(parts)
    ]


def reads_as_is(table: ibis.Table, plan: _Plan) -> bool:
    """Does the check read the table's columns as they are (no JSON read as its text)?"""
    return all(value.equals(table[column]) for value, column in zip(plan.read(table), plan.columns))

