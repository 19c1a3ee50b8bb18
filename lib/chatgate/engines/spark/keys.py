"""The Spark engine's keys: a wide key per value (or tuple of values), and safe column references.

The key of one column is (xxhash64, CRC-32, byte length) of its text; of several
columns, xxhash64 and murmur3 `hash` over each column's text and null flag, and the
summed lengths (see the engine's module docstring for why).
"""

from __future__ import annotations

import functools
import operator
from typing import TypeGuard

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...rules import ChatCheck, RowCheck

H1, H2, LENGTH = "__chatgate_h1__", "__chatgate_h2__", "__chatgate_len__"
KEYS = (H1, H2, LENGTH)


def column_ref(name: str) -> Column:
    """The top-level column `name`, whatever it holds: dots, backticks, spaces, `;`, `=`, any letters.

    `F.col(name)` parses its argument (a dot reaches into a struct, a backtick
    quotes), so every reference to a column by name goes through here: quoted,
    with its backticks doubled. (`DataFrame.drop` and `withColumn` take names
    as they are.)
    """
    return F.col("`" + name.replace("`", "``") + "`")


def nulls_native(check: RowCheck) -> TypeGuard[ChatCheck]:
    """Does `check` read one chat column, whose nulls Spark can judge without Python?"""
    return isinstance(check, ChatCheck) and tuple(check.columns) == (check.column,)


def key_columns(value: Column, dtype: T.DataType) -> list[Column]:
    """The wide key of one column's non-null values: (xxhash64, CRC-32, byte length) of its text.

    CRC-32 is the second hash because the JVM computes it with the CPU's own instructions:
    over 2.5 GB of chats it took 0.55 s more than the scan on 2 cores, murmur3 `hash` 1.35 s.
    It is shifted into an int's range.
    """
    text = key_text(value, dtype)
    crc = F.crc32(text.cast("binary")) - F.lit(_INT_SHIFT)
    return [F.xxhash64(text), crc.cast("int"), F.octet_length(text)]


_INT_SHIFT = 2**31
"""CRC-32 is in [0, 2^32): less 2^31, it fits an int (H2's type) without overflow."""


def wide_key_columns(texts: list[Column]) -> list[Column]:
    """The wide key of several columns' texts (nulls included), in order.

    Each text is followed by its null flag: Spark's hashes skip a null argument,
    so `(null, "")` and `("", null)` would hash alike without it.
    """
    parts = [part for text in texts for part in (text, text.isNull())]
    lengths = [
        F.coalesce(F.octet_length(text).cast("long"), F.lit(0).cast("long")) for text in texts
    ]
    return [F.xxhash64(*parts), F.hash(*parts), functools.reduce(operator.add, lengths)]


def key_text(value: Column, dtype: T.DataType) -> Column:
    """What the key hashes: the raw bytes of text, the JSON (nulls written) of anything else."""
    if isinstance(dtype, T.BinaryType):
        return value
    if isinstance(dtype, T.StringType):
        # A collated string hashes by collation ("Hi" = "hi" in UTF8_LCASE): hash its bytes.
        binary_collation = getattr(dtype, "collation", "UTF8_BINARY") == "UTF8_BINARY"
        return value if binary_collation else value.cast("binary")
    if isinstance(dtype, (T.ArrayType, T.MapType, T.StructType)):
        return F.to_json(value, {"ignoreNullFields": "false"})
    return value.cast("string")
