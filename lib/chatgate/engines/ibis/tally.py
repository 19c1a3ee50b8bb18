"""The tallies: what the check of the batches leaves behind, and the work columns' names.

`_Tally` holds the counts and the failing set (as Arrow), `_distinct_failing`
deduplicates that set, and `_first_rows` finds the first failing row of reasons
whose counts tie (step 5 of the package docstring).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import ibis
import pyarrow as pa

from ..parquet_files import ROW_ID
from .plan import MAPPED, _Plan


@dataclass
class _Tally:
    """What the check of the batches leaves behind: counts and the failing set, as Arrow."""

    units: int = 0
    nulls: int = 0
    checked: int = 0  # tuples sent to the check
    present: int = 0  # of those, the tuples with a value (not every column null)
    batches: int = 0
    failed: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    failing: list[pa.Table] = field(default_factory=list)
    pending: int = 0  # failing rows appended since the failing set was last deduplicated
    compacted: int = 0  # distinct failing values after the last deduplication
    collisions: int = 0
    kept: list[pa.Table] | None = None  # the failing rows whole, when the workers kept them (see `split`)

    def count(self, reason: str, rows: int) -> None:
        self.failed += rows
        self.reasons[reason] = self.reasons.get(reason, 0) + rows


@dataclass(frozen=True)
class _Names:
    """Column names for the work columns, fresh for each judgement so they can't clash."""

    n: str
    k1: str
    kl: str
    fk1: str
    fkl: str
    fsha: str
    fvalue: str
    fmessage: str
    json: str
    freason: str
    rn: str
    reason: str
    rid: str
    first: str
    source: str

    @classmethod
    def fresh(cls) -> _Names:
        tag = uuid.uuid4().hex[:8]
        return cls(*(f"_chatgate_{tag}_{part}" for part in cls.__dataclass_fields__))

    def fvalues(self, plan: _Plan) -> list[str]:
        """The names of the failing values in the value join's failing set, one per column."""
        return [f"{self.fvalue}{i}" for i in range(len(plan.columns))]

    def joined(self, plan: _Plan) -> dict[str, str]:
        """The stream's column of what the value join compares, by check column: a
        `plan.MAPPED` column's JSON text (`plan.join_value`), else the column itself."""
        return {
            column: f"{self.json}{i}" if kind == MAPPED else column
            for i, (column, kind) in enumerate(zip(plan.columns, plan.kinds))
        }


def _distinct_failing(tables: list[pa.Table], names: _Names) -> pa.Table:
    """One row per failing tuple: (hash, length, SHA-256, reason), and its problem's message
    when the check located it (one tuple has one reason and one message: "min" keeps them)."""
    keys = [names.fk1, names.fkl, names.fsha]
    kept = [c for c in (names.freason, names.fmessage) if c in tables[0].column_names]
    grouped = pa.concat_tables(tables).group_by(keys).aggregate([(c, "min") for c in kept])
    return grouped.select([*keys, *(f"{c}_min" for c in kept)]).rename_columns([*keys, *kept])


def _first_rows(
    table: ibis.Table,
    annotate: Callable[[ibis.Table, str], ibis.Table],
    counts: dict[str, int],
    names: _Names,
) -> dict[str, int] | None:
    """The first failing row of each reason that ties with another on count, or None.

    Only ties need it, and only then is it computed: one more pass over the table,
    with `row_number()` in scan order (a streaming window on DuckDB). On a backend
    whose scans have no stable order, the result is only as stable as the scan.
    """
    tied = sorted(r for r, c in counts.items() if list(counts.values()).count(c) > 1)
    if not tied:
        return None
    # The engine's row ids, where the table has them, are its scan order whatever the plan reads
    # first (a later step's table may be the failing rows the workers kept, then the others).
    order = table[ROW_ID] if ROW_ID in table.columns else ibis.row_number()
    numbered = annotate(table.mutate(**{names.rn: order}), names.reason)
    failing = numbered.filter(numbered[names.reason].isin(tied))
    firsts = failing.group_by(names.reason).aggregate(**{names.rn: failing[names.rn].min()})
    try:
        rows = firsts.to_pyarrow()
    except Exception:  # noqa: BLE001 - no row numbers on this backend: ties go by check order
        return None
    return dict(zip(rows[names.reason].to_pylist(), rows[names.rn].to_pylist()))
