"""The checks of a table as a whole: enough rows, and no columns outside the format.

A trainer may refuse a file for what no single row shows: too few examples, or a
field it doesn't know. These checks read the table's row count and column names
only, so they cost no pass over the rows. Their options are the check's
(`ChatFormat.min_rows`, `ChatFormat.extra_columns`), so a profile sets them like
any other; a run's steps are judged together: the most rows any step asks for, and
the columns of every step as the format's.

They are reported as one step of one unit (the table), never per row: the table
fails it or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..check.checks import ChatCheck, RowCheck
from ..conversation.spec import ChatFormat
from .dataset_check import DatasetCheck

TOO_FEW_ROWS = "too_few_rows"
EXTRA_COLUMNS = "extra_columns"
TABLE_CODES = (TOO_FEW_ROWS, EXTRA_COLUMNS)
"""The codes of a table as a whole, in the order they are reported."""


def _format_of(check: RowCheck) -> ChatFormat | None:
    if isinstance(check, (ChatCheck, DatasetCheck)):
        return check.fmt
    return None


@dataclass(frozen=True)
class TableCheck:
    """At least `min_rows` rows; with `extra_columns` False, no column beyond `format_columns`."""

    min_rows: int
    extra_columns: bool
    format_columns: tuple[str, ...]

    @classmethod
    def of(cls, checks: Sequence[RowCheck]) -> TableCheck | None:
        """The table check the steps' options ask for, None when they ask for none."""
        formats = [fmt for fmt in map(_format_of, checks) if fmt is not None]
        min_rows = max((fmt.min_rows or 0 for fmt in formats), default=0)
        extra_columns = all(fmt.extra_columns for fmt in formats)
        if min_rows == 0 and extra_columns:
            return None
        columns = tuple(dict.fromkeys(column for check in checks for column in check.columns))
        return cls(min_rows=min_rows, extra_columns=extra_columns, format_columns=columns)

    def as_dict(self) -> dict[str, Any]:
        return {"min_rows": self.min_rows, "extra_columns": self.extra_columns, "format_columns": list(self.format_columns)}

    def describe(self) -> str:
        parts = []
        if self.min_rows:
            parts.append(f"has at least {self.min_rows:,} row{'s' if self.min_rows != 1 else ''}")
        if not self.extra_columns:
            parts.append("has only the format's columns (" + ", ".join(self.format_columns) + ")")
        return "the table " + " and ".join(parts)

    def problems(self, rows: int, columns: Sequence[str]) -> dict[str, str]:
        """Each code the table gets, with what it means for this table."""
        found: dict[str, str] = {}
        if rows < self.min_rows:
            found[TOO_FEW_ROWS] = f"the table has {rows:,} row{'s' if rows != 1 else ''}; at least {self.min_rows:,} needed"
        extra = [] if self.extra_columns else [c for c in columns if c not in self.format_columns]
        if extra:
            found[EXTRA_COLUMNS] = f"columns outside the format: {', '.join(extra)}"
        return found
