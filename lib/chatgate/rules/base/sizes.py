"""The size of a value, measured without parsing it: what `max_value_bytes=` limits (`too_large`).

- JSON text (a string or binary value): its length in bytes (UTF-8), read from the
  Arrow offsets, never from the text.
- A native value (lists, structs, maps, numbers, ...), the same on every engine
  whatever Arrow types it comes in (string or large_string, list or large_list):
  the sum over everything it holds of the UTF-8 bytes of each text (strings and
  binaries, the keys of a map and the field names of a struct that isn't null
  included) and 8 bytes for each other value that isn't null (a number, a boolean,
  a date). A null counts 0, so a missing value is never too large.

For Python values (the per-row reference) the same measure reads a mapping's keys as
texts (a struct's field names, a map's keys) and anything that isn't a text, a list
or a mapping as one other value. (A map with a key written twice reaches Python as
one dict entry, its last: the measure of such a Python value counts that entry only.)

>>> value_bytes('[{"role": "user", "content": "Hi"}]')
35
>>> value_bytes([{"role": "user", "content": "Hi"}])
17
>>> import pyarrow as pa
>>> array_bytes(pa.array([[{"role": "user", "content": "Hi"}], None])).tolist()
[17, 0]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

OTHER_BYTES = 8
"""What a value that is neither text nor a container (a number, a boolean, a date) counts for."""

TOO_LARGE = "too_large"


def value_bytes(value: Any, limit: int | None = None) -> int:
    """The size of one Python value (see the module docstring); past `limit`, any number above it."""
    if value is None:
        return 0
    if isinstance(value, str):
        if limit is not None and len(value) > limit:
            return len(value)  # at least a byte per character: over, without encoding it
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, memoryview):
        return value.nbytes
    if isinstance(value, Mapping):
        return _sum_bytes((part for item in value.items() for part in item), limit)
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim > 0):
        return _sum_bytes(value, limit)
    return OTHER_BYTES


def _sum_bytes(values: Any, limit: int | None) -> int:
    total = 0
    for item in values:
        total += value_bytes(item, None if limit is None else limit - total)
        if limit is not None and total > limit:
            return total
    return total


def is_too_large(value: Any, limit: int | None) -> bool:
    """Is the Python `value` larger than `limit` bytes (None: no limit)?"""
    return limit is not None and value_bytes(value, limit) > limit


_TEXTS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def array_bytes(array: pa.Array) -> np.ndarray:
    """The size of each value of an Arrow array, as int64 (see the module docstring)."""
    dtype = array.type
    if len(array) == 0:
        return np.zeros(0, np.int64)
    if isinstance(dtype, pa.BaseExtensionType):
        return array_bytes(array.storage)
    if pa.types.is_dictionary(dtype):
        sizes = array_bytes(array.dictionary)
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return np.where(_valid(array), sizes[indices] if len(sizes) else 0, 0)
    if any(is_text(dtype) for is_text in _TEXTS) or pa.types.is_string_view(dtype) or pa.types.is_binary_view(dtype):
        lengths = pc.binary_length(array).fill_null(0)
        return lengths.to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_null(dtype):
        return np.zeros(len(array), np.int64)
    if pa.types.is_struct(dtype):
        names = sum(len(dtype.field(i).name.encode()) for i in range(dtype.num_fields))
        total = np.full(len(array), names, np.int64)
        for i in range(dtype.num_fields):
            total += array_bytes(array.field(i))
        return np.where(_valid(array), total, 0)
    if pa.types.is_map(dtype):
        return _list_bytes(array, array_bytes(array.keys) + array_bytes(array.items))
    if _is_list(dtype):
        return _list_bytes(array, array_bytes(array.values))
    return np.where(_valid(array), OTHER_BYTES, 0).astype(np.int64)


def _is_list(dtype: pa.DataType) -> bool:
    checks = ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view")
    return any(getattr(pa.types, name, lambda _: False)(dtype) for name in checks)


def _list_bytes(array: pa.Array, items: np.ndarray) -> np.ndarray:
    """Each list's sum of its items' sizes (`items` over the whole child array)."""
    if pa.types.is_fixed_size_list(array.type):
        size = array.type.list_size
        starts = (np.arange(len(array), dtype=np.int64) + array.offset) * size
        ends = starts + size
    elif hasattr(array, "sizes"):  # list views: offsets and sizes
        starts = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        ends = starts + array.sizes.to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        starts, ends = offsets[:-1], offsets[1:]
    cumulative = np.concatenate(([0], np.cumsum(items, dtype=np.int64)))
    return np.where(_valid(array), cumulative[ends] - cumulative[starts], 0)


def _valid(array: pa.Array) -> np.ndarray:
    if array.null_count == 0:
        return np.ones(len(array), bool)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), bool)
