"""The local engine: Polars and pandas DataFrames in memory.

With dedup (any mode but "off": it costs next to nothing in memory), each
distinct value is judged once and its code spread to the rows. One column is
dictionary-encoded by Arrow (the dictionary is judged, the indices spread its
codes); the tuples of several columns, and nested values Arrow can't encode,
are numbered per column and the distinct rows of those numbers judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..names import ROW_NUMBER
from ..rules import RowCheck
from ..rules.base.values import is_missing
from .base import (
    LOCAL_AUTO,
    Dedup,
    Engine,
    FailingColumns,
    Judged,
    ordered_reasons,
    require_column,
    summed_by_key,
)

ROW_NUMBER_COLUMN = ROW_NUMBER


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
    table_kind = "Polars and pandas DataFrames"
    auto = LOCAL_AUTO

    def accepts(self, table: Any) -> bool:
        return _kind(table) is not None

    def columns(self, table: Any) -> list[str]:
        return [str(c) for c in table.columns]

    def row_count(self, table: Any) -> int:
        return len(table)

    def _judge(
        self,
        table: Any,
        check: RowCheck,
        columns: tuple[str, ...],
        dedup: Dedup,
        reason_column: str,
        failing_columns: FailingColumns | None = None,
    ) -> Judged:
        arrays = {c: column_as_arrow(table, c, exact=True) for c in columns}
        dedup_on = dedup == "on" or (dedup == "auto" and self.auto.decide(0.0))
        judged = _check_distinct(arrays, check) if dedup_on else None
        if judged is None:
            codes, distinct = _check_rows(arrays, check), None
        else:
            codes, distinct = judged
        counts, first_seen = _count(codes)
        return Judged(
            units=len(codes),
            failed=sum(counts.values()),
            reasons=ordered_reasons(counts, first_seen),
            distinct_values=distinct,
            annotated=_with_column(table, reason_column, codes),
            reason_column=reason_column,
            deduplicated=distinct is not None,
        )

    def where_reason(self, table: Any, column: str, *, present: bool) -> Any:
        return _filter(table, _mask(table, column, failing=present))

    def sum_batches(
        self, table: Any, inputs: list[str], partial: Callable[[Mapping[str, Any]], pa.Table], schema: pa.Schema
    ) -> pa.Table:
        return summed_by_key([partial({c: column_as_arrow(table, c, exact=True) for c in inputs})], schema)

    def extract(self, judged: Judged) -> Any:
        return self.with_row_numbers_where(judged.annotated, _mask(judged.annotated, judged.reason_column, failing=True))

    def sunder(self, table: Any, checks: list[tuple[RowCheck, Dedup]], kind: str) -> Any:
        """Like Engine.sunder, but keeps the rows in their order."""
        if not checks:
            return super().sunder(table, checks, kind)
        passing: np.ndarray | None = None
        for check, dedup in checks:
            judged = self.judge_check(table, check, dedup=dedup)
            mask = _mask(judged.annotated, judged.reason_column, failing=False)
            passing = mask if passing is None else passing & mask
        assert passing is not None  # there is a check
        return _filter(table, passing if kind == "pass" else ~passing)

    def with_row_numbers_where(self, table: Any, mask: np.ndarray) -> Any:
        """The rows of `table` where `mask` holds, with a first column `_row_num_` (1-based)."""
        return _filter(self.with_row_numbers(table), mask)

    def with_row_numbers(self, table: Any) -> Any:
        """`table` with a first column `_row_num_`: 1, 2, 3, ..."""
        numbers = pa.array(range(1, len(table) + 1), pa.int64())
        return _with_column(table, ROW_NUMBER_COLUMN, numbers, first=True)

    def segment_values(self, table: Any, column: str) -> list[Any]:
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

    def head_values(self, table: Any, columns: list[str], limit: int) -> dict[str, list[Any]]:
        head = table.head(limit)
        out: dict[str, list[Any]] = {}
        for c in columns:
            values = column_as_arrow(head, c, exact=True)
            out[c] = values if isinstance(values, list) else values.to_pylist()
        return out

    def value_type(self, table: Any, column: str) -> pa.DataType:
        # A frame takes the computed values as they come: the type is a label.
        values = column_as_arrow(table, column, exact=True)
        return pa.null() if isinstance(values, list) else values.type

    def with_computed_columns(
        self,
        table: Any,
        inputs: list[str],
        added: pa.Schema,
        compute: Callable[[Mapping[str, Any]], list[Any]],
        layout: dict[str, str],
        unchanged: tuple[str, str] | None = None,
    ) -> Any:
        results = compute({name: column_as_arrow(table, name, exact=True) for name in inputs})
        values = dict(zip(added.names, results))
        if type(table).__module__.startswith("pandas"):
            return _pandas_with(table, values, layout, unchanged)
        import polars as pl

        series = [pl.Series(name, _as_arrow(v, added.field(name).type)) for name, v in values.items()]
        return table.with_columns(series).select([pl.col(s).alias(name) for s, name in layout.items()])

    def drop_columns(self, table: Any, names: list[str]) -> Any:
        return table.drop(columns=names) if _kind(table) == "pandas" else table.drop(names)

    def concat(self, tables: list[Any]) -> Any:
        if _kind(tables[0]) == "pandas":
            import pandas as pd

            return pd.concat(tables, ignore_index=True)
        import polars as pl

        return pl.concat(tables)


def _check_rows(arrays: dict[str, pa.Array | list[Any]], check: RowCheck) -> pa.StringArray:
    """The code of each row of the check's columns: as one Arrow table, or row by row."""
    if all(isinstance(a, pa.Array) for a in arrays.values()):
        return check.check(pa.table(arrays))
    columns = list(arrays)
    rows = zip(*(a if isinstance(a, list) else a.to_pylist() for a in arrays.values()))
    return pa.array([check.check_row(dict(zip(columns, row))) for row in rows], pa.string())


def _check_distinct(
    arrays: dict[str, pa.Array | list[Any]], check: RowCheck
) -> tuple[pa.StringArray, int] | None:
    """The code of each row, judging each distinct tuple once, and the number of distinct tuples.

    A tuple whose every column is missing is judged (the check decides what it is
    worth) but not counted. None when a value can't be compared (a Python object
    that isn't hashable): then every row is judged.
    """
    if len(arrays) == 1:
        (name, values), = arrays.items()
        encoded = _dictionary_encoded(values)
        if encoded is not None:
            # The dictionary holds the distinct values; a null stands for the missing ones.
            dictionary, indices = encoded.dictionary, encoded.indices
            if indices.null_count:
                dictionary = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
                indices = indices.fill_null(len(dictionary) - 1)
            codes = _check_rows({name: dictionary}, check).take(indices)
            return codes, len(encoded.dictionary) - encoded.dictionary.null_count
    numbers = [_value_numbers(values) for values in arrays.values()]
    comparable = [n for n in numbers if n is not None]
    if len(comparable) < len(numbers):
        return None
    stacked = np.stack(comparable, axis=1)  # one row of numbers per row of the table
    if not len(stacked):
        return _check_rows(arrays, check), 0
    distinct, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    missing = np.all(distinct == -1, axis=1).sum()
    taken = {c: _take(values, first) for c, values in arrays.items()}
    codes = _check_rows(taken, check).take(pa.array(inverse.reshape(-1)))
    return codes, int(len(distinct) - missing)


def _dictionary_encoded(values: pa.Array | list[Any]) -> pa.DictionaryArray | None:
    """`values` dictionary-encoded by Arrow afresh (each distinct value once), or None when it can't."""
    if not isinstance(values, pa.Array):
        return None
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()  # a dictionary may repeat values, or hold unused ones
    try:
        return pc.dictionary_encode(values)
    except pa.ArrowNotImplementedError:  # nested values
        return None


def _value_numbers(values: pa.Array | list[Any]) -> np.ndarray | None:
    """A number per row, equal for equal values, -1 for a missing one (None: can't be compared)."""
    if isinstance(values, pa.Array) and pa.types.is_null(values.type):
        return np.full(len(values), -1, np.int64)
    encoded = _dictionary_encoded(values)
    if encoded is not None:
        return encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    seen: dict[Any, int] = {}
    numbers = np.empty(len(values), np.int64)
    python = values if isinstance(values, list) else values.to_pylist()
    try:
        for i, value in enumerate(python):
            numbers[i] = -1 if is_missing(value) else seen.setdefault(_frozen(value), len(seen))
    except TypeError:  # an unhashable Python object
        return None
    return numbers


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a Python value: equal only for equal values of the same kinds.

    1, 1.0 and True stay apart; a dict is its set of items (their order doesn't
    matter to JSON); lists, tuples and arrays are sequences; NaN equals NaN (as
    DuckDB and Spark group them).
    """
    if isinstance(value, dict):
        return (dict, frozenset((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
        return (list, tuple(_frozen(v) for v in value))
    if isinstance(value, float) and value != value:  # noqa: PLR0124 - NaN
        return (float, "nan")
    return (type(value), value)


def _take(values: pa.Array | list[Any], rows: np.ndarray) -> pa.Array | list[Any]:
    if isinstance(values, list):
        return [values[i] for i in rows]
    return values.take(pa.array(rows))


def column_as_arrow(table: Any, column: str, *, exact: bool = False) -> pa.Array | list[Any]:
    """The column as one Arrow array, or as a Python list when Arrow can't hold it.

    With `exact=True` (a column to judge), a pandas object column is a list also when
    Arrow would change what a value is (a set would become a list).
    """
    require_column(table.columns, column)
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


def _arrow_keeps(series: Any) -> bool:
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


def _count(codes: pa.StringArray) -> tuple[dict[str, int], dict[str, int]]:
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for row, code in enumerate(codes.to_pylist()):
        if code is not None:
            counts[code] = counts.get(code, 0) + 1
            first_seen.setdefault(code, row)
    return counts, first_seen


def _mask(table: Any, column: str, *, failing: bool) -> np.ndarray:
    codes = column_as_arrow(table, column)
    assert not isinstance(codes, list)  # Arrow holds the codes (text and nulls)
    valid = codes.is_valid() if failing else codes.is_null()
    return valid.to_numpy(zero_copy_only=False)


def _filter(table: Any, mask: np.ndarray) -> Any:
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
    # insert_column changes the frame in place: insert into a copy, the caller's frame stays as it was.
    return table.clone().insert_column(0, series) if first else table.with_columns(series)


def _pandas_with(
    table: Any, added: dict[str, Any], layout: dict[str, str], unchanged: tuple[str, str] | None
) -> Any:
    """A pandas frame with the added columns, arranged by `layout` (see `with_computed_columns`)."""
    out = table.copy()
    for name, values in added.items():
        out[name] = _as_python(values)
    if unchanged is not None:  # the values the computation left alone stay the frame's own objects
        column, flags = unchanged
        kept = [not flag for flag in _as_python(added[flags])]
        out[column] = [old if keep else new for old, new, keep in zip(table[layout[column]], out[column], kept)]
    out = out[list(layout)]
    out.columns = list(layout.values())
    return out


def _as_python(values: Any) -> list[Any]:
    return values if isinstance(values, list) else values.to_pylist()


def _as_arrow(values: Any, dtype: pa.DataType) -> pa.Array:
    return pa.array(values, dtype) if isinstance(values, list) else values
