"""The join back (step 4): the failing set uploaded to the backend, and joined to the table.

`_failing_table` turns the tally's failing set into a memtable, one row per key;
`_annotate` adds the reason column to a table from it (the hash join or the value
join, as the plan says), and the null code of a lone chat column.
"""

from __future__ import annotations

import ibis
import ibis.expr.datatypes as dt
import pyarrow as pa

from .plan import _Plan, join_value
from .tally import _distinct_failing, _Names, _Tally


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
    by_key = distinct.group_by([names.fk1, names.fkl], use_threads=False).aggregate(
        [(names.fsha, "list"), (names.freason, "list")]
    )
    shas = by_key[f"{names.fsha}_list"].combine_chunks()
    reasons = by_key[f"{names.freason}_list"].combine_chunks()
    tally.collisions = distinct.num_rows - by_key.num_rows
    digests = pa.MapArray.from_arrays(shas.offsets, shas.flatten(), reasons.flatten())
    return ibis.memtable(
        pa.table(
            {names.fk1: by_key[names.fk1], names.fkl: by_key[names.fkl], names.freason: digests}
        )
    )


def _annotate(
    table: ibis.Table, reason_column: str, *, plan: _Plan, failing: ibis.Table | None, names: _Names
) -> ibis.Table:
    """`table` plus `reason_column`: the null code on the backend, the failing set joined back."""
    nothing = ibis.literal(None, type=dt.string)
    missing = ibis.literal(None if plan.na_pass else "not_messages", type=dt.string)

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
        k1, kl = plan.keys(plan.read(table))
        keyed = table.mutate(**{names.k1: k1, names.kl: kl})
        keys = [keyed[names.k1] == failing[names.fk1], keyed[names.kl] == failing[names.fkl]]
        joined = keyed.left_join(failing, keys)
        by_digest = joined[names.freason]
        # A row takes the reason of the failing tuple whose SHA-256 is its own. The digest
        # is computed for the rows whose key matched only: the first branch settles the rest.
        found = ibis.cases(
            (by_digest.isnull(), nothing),
            else_=by_digest.get(plan.digest_of(plan.read(joined))),
        )
    reason = settled(joined, found)
    return joined.select(*[joined[c] for c in table.columns], **{reason_column: reason})
