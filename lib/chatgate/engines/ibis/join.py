"""The join back (step 4): the failing set uploaded to the backend, and joined to the table.

`_failing_table` turns the tally's failing set into a memtable, one row per key;
`_annotate` adds the reason column to a table from it (the hash join or the value
join, as the plan says), and the null code of a lone chat column. When the workers
kept the failing rows whole, `_with_kept_rows` makes the annotated table of them and
of the join's passing rows: reading its failing rows doesn't read the table again.
"""

from __future__ import annotations

import logging
import uuid
from typing import NamedTuple

import duckdb
import ibis
import ibis.expr.datatypes as dt
import pyarrow as pa

from ..base import FailingColumns
from .plan import _Plan, join_value
from .tally import _distinct_failing, _Names, _Tally

log = logging.getLogger("chatgate")


def _failing_table(tally: _Tally, plan: _Plan, names: _Names) -> ibis.Table | None:
    """The failing set as a memtable, one row per key (None when nothing failed).

    On the hash join, a row is (hash, length, {SHA-256: reason}): the failing tuples
    that share hash and length (DuckDB's `hash()` collides on long strings that differ
    in a byte or two) share a row, so the join never multiplies a source row.
    """
    if not tally.failing:
        return None
    if plan.join_on == "value":
        # Without deduplication a failing tuple comes once per row: the backend dedupes them.
        return ibis.memtable(pa.concat_tables(tally.failing)).distinct()
    distinct = _distinct_failing(tally.failing, names)
    filed = [c for c in (names.freason, names.fmessage) if c in distinct.column_names]
    by_key = distinct.group_by([names.fk1, names.fkl], use_threads=False).aggregate(
        [(names.fsha, "list"), *((c, "list") for c in filed)]
    )
    shas = by_key[f"{names.fsha}_list"].combine_chunks()
    tally.collisions = distinct.num_rows - by_key.num_rows
    # One map per filed column, {SHA-256: reason} (and {SHA-256: message}).
    maps = {
        c: pa.MapArray.from_arrays(shas.offsets, shas.flatten(), by_key[f"{c}_list"].combine_chunks().flatten())
        for c in filed
    }
    return ibis.memtable(pa.table({names.fk1: by_key[names.fk1], names.fkl: by_key[names.fkl], **maps}))


def _annotate(
    table: ibis.Table, reason_column: str, *, plan: _Plan, failing: ibis.Table | None, names: _Names
) -> ibis.Table:
    """`table` plus `reason_column`: the null code on the backend, the failing set joined back."""
    nothing = ibis.literal(None, type=dt.string)
    missing = ibis.literal(plan.null_code, type=dt.string)

    def settled(source: ibis.Table, found: ibis.Value) -> ibis.Value:
        """A lone chat column's nulls get their code here; a tuple's were judged."""
        if not plan.single:
            return found
        return ibis.cases((plan.read(source)[0].isnull(), missing), else_=found)

    if failing is None:
        return table.mutate(**{reason_column: settled(table, nothing)})

    if plan.join_on == "value":
        keys = [
            predicate
            for value, name, kind in zip(plan.read(table), names.fvalues(plan), plan.kinds)
            for predicate in plan.same(join_value(value, kind), failing[name], kind)
        ]
        joined = table.left_join(failing, keys)
        found = joined[names.freason]
    else:
        joined = _joined_by_key(table, plan, failing, names)
        found = _filed(joined, names.freason, plan, nothing)
    reason = settled(joined, found)
    return joined.select(*[joined[c] for c in table.columns], **{reason_column: reason})


def _located(
    table: ibis.Table, column: str, *, plan: _Plan, failing: ibis.Table | None, names: _Names, reason_column: str
) -> ibis.Table:
    """`table` (annotated rows) plus `column`: the message of each row's problem, as the check
    located it for its failing tuple (the hash join's failing set holds them: see `stream`).

    A row whose `reason_column` isn't null has its own tuple in the failing set, under its key:
    where the key files one tuple only, that tuple is the row's, and its message is taken without
    a SHA-256 of the row's text (which was most of a quarantine's query). Where failing tuples
    share the key, and for any other row, the message is looked up by the row's digest."""
    nothing = ibis.literal(None, type=dt.int32)
    if failing is None:
        return table.mutate(**{column: nothing})
    joined = _joined_by_key(table, plan, failing, names)
    messages = joined[names.fmessage]
    alone = (messages.length() == 1) & joined[reason_column].notnull()
    found = ibis.cases((alone, messages.values()[0]), else_=_filed(joined, names.fmessage, plan, nothing))
    return joined.select(*[joined[c] for c in table.columns], **{column: found})


def _joined_by_key(table: ibis.Table, plan: _Plan, failing: ibis.Table, names: _Names) -> ibis.Table:
    """`table` left-joined to the hash join's failing set on each tuple's key (hash and length)."""
    k1, kl = plan.keys(plan.read(table))
    keyed = table.mutate(**{names.k1: k1, names.kl: kl})
    keys = [keyed[names.k1] == failing[names.fk1], keyed[names.kl] == failing[names.fkl]]
    return keyed.left_join(failing, keys)


def _filed(joined: ibis.Table, column: str, plan: _Plan, nothing: ibis.Value) -> ibis.Value:
    """What the failing set files under each row's own SHA-256 in the map `column`. The digest
    is computed for the rows whose key matched only: the first branch settles the rest."""
    by_digest = joined[column]
    return ibis.cases((by_digest.isnull(), nothing), else_=by_digest.get(plan.digest_of(plan.read(joined))))


class _KeptTables(NamedTuple):
    annotated: ibis.Table
    computed: ibis.Table | None
    """The failing rows with the `FailingColumns` the workers computed (None: none asked, or none failed)."""


def _with_kept_rows(
    table: ibis.Table,
    annotated: ibis.Table,
    kept: list[pa.Table],
    reason_column: str,
    names: _Names,
    computed: FailingColumns | None = None,
) -> _KeptTables | None:
    """`annotated` as the failing rows the workers kept, with their codes, then the rows the join
    leaves passing, with a null reason (a literal): a filter on failing rows drops that branch
    before it reads anything, so a quarantine reads the kept rows only. With `computed`, the
    kept rows also hold its columns: the failing rows with them are a table too. None when the
    kept rows don't come back from Arrow with the table's types (the join then serves alone)."""
    nothing = ibis.literal(None, type=dt.string)
    if not kept:  # nothing failed, nulls included
        return _KeptTables(table.select(*[table[c] for c in table.columns], **{reason_column: nothing}), None)
    passing = annotated.filter(annotated[reason_column].isnull())
    passing = passing.select(*[passing[c] for c in table.columns], **{reason_column: nothing})
    try:
        # A table of DuckDB's own, not an Arrow scan: a later step's plans may push filters into
        # it that DuckDB's Arrow scans refuse (a bloom filter).
        rows = _temp_table(table.get_backend(), pa.concat_tables(kept))
        failing = rows.select(*[rows[c] for c in table.columns], **{reason_column: rows[names.freason]})
        same = failing.schema() == passing.schema()
    except (ValueError, TypeError, NotImplementedError, pa.ArrowException, duckdb.Error) as error:  # a type Ibis can't take from Arrow
        log.debug("failing rows kept in Arrow don't make a table (%s): joined back instead", error)
        return None
    if not same:
        log.debug("failing rows kept with other types (%s): joined back instead", failing.schema())
        return None
    with_computed = None if computed is None else rows.select(
        *[rows[c] for c in table.columns], rows[names.freason].name(reason_column), *[rows[f.name] for f in computed.added]
    )
    return _KeptTables(ibis.union(failing, passing, distinct=False), with_computed)


def _temp_table(backend: ibis.BaseBackend, data: pa.Table) -> ibis.Table:
    """`data` copied into a temporary table of the DuckDB `backend` (spilled past its memory limit)."""
    name = f"chatgate_kept_{uuid.uuid4().hex}"
    con = backend.con
    con.register(f"{name}_arrow", data)
    try:
        con.execute(f'CREATE TEMP TABLE "{name}" AS SELECT * FROM "{name}_arrow"')
    finally:
        con.unregister(f"{name}_arrow")
    return backend.table(name)
