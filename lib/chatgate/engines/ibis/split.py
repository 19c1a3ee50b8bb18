"""The stream split by files: each check worker reads and checks a part of the snapshot itself.

A stream without deduplication over one of `parquet_files`' views (a Delta snapshot or
Parquet files, read by DuckDB) is split into groups of files of about the same size, one
per worker (`group_check.GroupCheck`): reading scales with the workers instead of being
one stream at one core's pace. Whatever else the stream reads (another backend, a table in
memory, files read unchecked or remote, a single file) streams from this process as before.
"""

from __future__ import annotations

import ibis
import ibis.expr.operations as ops
import pyarrow as pa

from ...rules import RowCheck
from ..group_check import GroupCheck
from ..parquet_files import view_parts
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


def splits(table: ibis.Table, plan: _Plan, workers: int) -> bool:
    """Can a stream of `table` without deduplication be read in parts by `workers` workers?"""
    if workers < 2 or plan.join_on != "hash":
        return False
    name = view_of(table)
    return name is not None and bool(view_parts(table.get_backend(), name, workers))


def group_checks(
    table: ibis.Table,
    stream: ibis.Table,
    plan: _Plan,
    names: _Names,
    check: RowCheck,
    *,
    workers: int,
    chunk_size: int,
    locate: bool = False,
) -> list[GroupCheck]:
    """One `GroupCheck` per part of `table`'s files, each running the SQL of `stream` (see `splits`)."""
    if not splits(table, plan, workers):
        return []
    backend = table.get_backend()
    name = view_of(table)
    parts = view_parts(backend, name, workers) if name is not None else None
    if not parts:
        return []
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
        )
        for part in parts
    ]
