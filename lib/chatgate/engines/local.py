"""The local engine: Polars and pandas DataFrames in memory.

Text columns are dictionary-encoded by Arrow, so each distinct value is judged
once (the dictionary) and its code spread to the rows (the indices).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..rules import ChatCheck, RowCheck, check_values
from .base import REASON_COLUMN, Dedup, Engine, Judged, ordered_reasons

ROW_NUMBER_COLUMN = "_row_num_"


def _kind(table: Any) -> str | None:
    module = type(table).__module__
    if module.startswith("polars") and type(table).__name__ == "DataFrame":
        return "polars"
    if module.startswith("pandas") and type(table).__name__ == "DataFrame":
        return "pandas"
    return None


class LocalEngine(Engine):
    """Polars and pandas DataFrames, judged in memory."""

    name = "local"

    def accepts(self, table: Any) -> bool:
        return _kind(table) is not None

    def columns(self, table: Any) -> list[str]:
        return [str(c) for c in table.columns]

    def row_count(self, table: Any) -> int:
        return len(table)

    def judge_check(
        self,
        table: Any,
        check: RowCheck,
        *,
        dedup: Dedup = "auto",
        reason_column: str = REASON_COLUMN,
    ) -> Judged:
        deduplicated = False
        if isinstance(check, ChatCheck) and len(check.columns) == 1:
            values = column_as_arrow(table, check.column, exact=True)
            if isinstance(values, pa.Array):
                if dedup != "off" and _is_text(values.type):
                    values = pc.dictionary_encode(values)
                    deduplicated = True
                codes = check.check(pa.table({check.column: values}))
                distinct = len(values.dictionary) if deduplicated else len(values)
            else:  # Python objects of mixed kinds that Arrow can't hold in one array
                codes = check_values(values, check.fmt)
                distinct = len(values)
        else:
            codes = _check_rows(table, check)
            distinct = len(codes)
        counts, first_seen = _count(codes)
        return Judged(
            units=len(codes),
            failed=sum(counts.values()),
            reasons=ordered_reasons(counts, first_seen),
            distinct_values=distinct,
            annotated=_with_column(table, reason_column, codes),
            reason_column=reason_column,
            deduplicated=deduplicated,
        )

    def failing_rows(self, judged: Judged) -> Any:
        return _filter(judged.annotated, _mask(judged, failing=True))

    def passing_rows(self, judged: Judged) -> Any:
        rows = _filter(judged.annotated, _mask(judged, failing=False))
        return self.drop_columns(rows, [judged.reason_column])

    def extract(self, judged: Judged) -> Any:
        return self.with_row_numbers_where(judged.annotated, _mask(judged, failing=True))

    def sunder(self, table: Any, checks: list[tuple[RowCheck, Dedup]], kind: str) -> Any:
        """Like Engine.sunder, but keeps the rows in their order."""
        if not checks:
            return super().sunder(table, checks, kind)
        passing = None
        for check, dedup in checks:
            mask = _mask(self.judge_check(table, check, dedup=dedup), failing=False)
            passing = mask if passing is None else passing & mask
        return _filter(table, passing if kind == "pass" else ~passing)

    def with_row_numbers_where(self, table: Any, mask) -> Any:
        """The rows of `table` where `mask` holds, with a first column `_row_num_` (1-based)."""
        return _filter(self.with_row_numbers(table), mask)

    def with_row_numbers(self, table: Any) -> Any:
        """`table` with a first column `_row_num_`: 1, 2, 3, ..."""
        numbers = pa.array(range(1, len(table) + 1), pa.int64())
        return _with_column(table, ROW_NUMBER_COLUMN, numbers, first=True)

    def segment_values(self, table: Any, column: str) -> list:
        values = column_as_arrow(table, column)
        values = set(values if isinstance(values, list) else values.to_pylist())
        present = sorted((v for v in values if v is not None), key=lambda v: (str(type(v)), v))
        return present + ([None] if None in values else [])

    def filter_equal(self, table: Any, column: str, value: Any) -> Any:
        values = column_as_arrow(table, column)
        if isinstance(values, list):
            import numpy as np

            keep = [v is None if value is None else (v is not None and v == value) for v in values]
            return _filter(table, np.array(keep, dtype=bool))
        mask = values.is_null() if value is None else pc.fill_null(pc.equal(values, value), False)
        return _filter(table, mask.to_numpy(zero_copy_only=False))

    def preview(self, table: Any, limit: int) -> pa.Table:
        head = table.head(limit)
        if _kind(table) == "polars":
            return head.to_arrow()
        return pa.table({str(c): pa.array([_display(v) for v in head[c]], pa.string()) for c in head.columns})

    def drop_columns(self, table: Any, names: list[str]) -> Any:
        return table.drop(columns=names) if _kind(table) == "pandas" else table.drop(names)

    def concat(self, tables: list[Any]) -> Any:
        if _kind(tables[0]) == "pandas":
            import pandas as pd

            return pd.concat(tables, ignore_index=True)
        import polars as pl

        return pl.concat(tables)


def _check_rows(table: Any, check: RowCheck) -> pa.StringArray:
    """Codes of a check that reads several columns: as one Arrow table, or row by row."""
    columns = list(check.columns)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise KeyError(f"column {missing[0]!r} isn't in the table; its columns are {list(table.columns)}")
    arrays = {c: column_as_arrow(table, c, exact=True) for c in columns}
    if all(isinstance(a, pa.Array) for a in arrays.values()):
        return check.check(pa.table(arrays))
    rows = zip(*(a if isinstance(a, list) else a.to_pylist() for a in arrays.values()))
    return pa.array([check.check_row(dict(zip(columns, row))) for row in rows], pa.string())


def column_as_arrow(table: Any, column: str, *, exact: bool = False) -> pa.Array | list:
    """The column as one Arrow array, or as a Python list when Arrow can't hold it.

    With `exact=True` (a column to judge), a pandas object column is a list also when
    Arrow would change what a value is (a set would become a list).
    """
    if column not in table.columns:
        raise KeyError(f"column {column!r} isn't in the table; its columns are {list(table.columns)}")
    if _kind(table) == "polars":
        values = table.get_column(column).to_arrow()
        return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    series = table[column]
    if exact and series.dtype == object and not _arrow_keeps(series):
        return series.tolist()
    try:
        values = pa.array(series, from_pandas=True)
    except Exception:  # noqa: BLE001 - ArrowInvalid, OverflowError, ...: judge the Python values
        return series.tolist()
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


# Python kinds that Arrow converts to what they are (a set, say, would become a list).
_ARROW_KEEPS = {"str", "bytes", "list", "tuple", "dict", "ndarray", "NoneType", "float", "NAType"}


def _arrow_keeps(series) -> bool:
    """Can Arrow hold this object column without changing what a value is?"""
    kinds = set(map(type, series.to_numpy(dtype=object)))
    return all(
        kind.__name__ in _ARROW_KEEPS and kind.__module__ in ("builtins", "numpy", "pandas._libs.missing")
        for kind in kinds
    )


def _display(value: Any) -> str | None:
    return None if value is None else str(_plain(value))


def _plain(value: Any) -> Any:
    """NumPy arrays (pandas over Arrow lists) as lists, so a cell reads like the data it holds."""
    if type(value).__name__ == "ndarray":
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _is_text(dtype: pa.DataType) -> bool:
    return (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_string_view(dtype)
    )


def _count(codes: pa.StringArray) -> tuple[dict[str, int], dict[str, int]]:
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for row, code in enumerate(codes.to_pylist()):
        if code is not None:
            counts[code] = counts.get(code, 0) + 1
            first_seen.setdefault(code, row)
    return counts, first_seen


def _mask(judged: Judged, *, failing: bool):
    codes = column_as_arrow(judged.annotated, judged.reason_column)
    valid = codes.is_valid() if failing else codes.is_null()
    return valid.to_numpy(zero_copy_only=False)


def _filter(table: Any, mask) -> Any:
    if _kind(table) == "pandas":
        return table[mask].reset_index(drop=True)
    import polars as pl

    return table.filter(pl.Series(mask))


def _with_column(table: Any, name: str, values: pa.Array, *, first: bool = False) -> Any:
    if _kind(table) == "pandas":
        out = table.copy()
        out.insert(0 if first else len(out.columns), name, values.to_pylist())
        return out
    import polars as pl

    series = pl.Series(name, values.to_pylist(), dtype=pl.Int64 if first else pl.String)
    return table.insert_column(0, series) if first else table.with_columns(series)
