"""The plan of a judgement: the kind of each column, and how a tuple is read, keyed and digested.

`_make_plan` decides, per column, how a tuple's SHA-256 covers it (its kind) and
which join brings the failing set back ("hash" or "value"); `_Plan` holds that,
and reads, keys and digests the tuples, on the backend and in Python alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import ibis
import ibis.expr.datatypes as dt
import ibis.expr.operations as ops

from ...rules import ChatCheck, RowCheck
from ..digests import NULL_PART

NATIVE_BACKENDS = frozenset({"duckdb"})
"""Backends that hand native nested columns (lists of structs, ...) to Python as Arrow."""

JoinOn = Literal["auto", "hash", "value"]


_DIGESTED = frozenset({"text", "bool", "int"})
"""The kinds of column a tuple's SHA-256 covers (the hash join); others join on the value."""

MAPPED = "mapped"
"""The kind of a native column holding a map: the value join compares its JSON text (DuckDB's
`to_json`), not the value, as a map may repeat a key (Arrow, Spark and Parquet writers allow
it), which DuckDB reads but refuses from Arrow, so such a value can't be uploaded."""


def join_value(value: ibis.Value, kind: str) -> ibis.Value:
    """What the value join compares of a column of `kind`: the value, or a map's JSON text."""
    return value.cast(dt.json).cast(dt.string) if kind == MAPPED else value


@dataclass(frozen=True)
class _Plan:
    """What a judgement reads, and how it keys, digests and joins the tuples back.

    `single`: one chat column judged alone (a `ChatCheck` without extra columns):
    nulls are counted on the backend, keyed and digested as in the package docstring.
    Otherwise the tuple of `columns` is, nulls and all. `kinds` says, per column,
    how a tuple's SHA-256 covers it ("text", "bool", "int") or why it can't
    ("binary", "native", "float", "other"), which `same` reads too.
    """

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    join_on: str
    single: bool
    na_pass: bool = True
    byte_lengths: bool = False  # DuckDB: strlen (bytes, read from the string's header) for LENGTH (characters, a scan)

    @property
    def null_code(self) -> str | None:
        """The code of a lone chat column's null (None: it passes); a tuple's nulls are the check's."""
        return None if self.na_pass or not self.single else "not_messages"

    def read(self, table: ibis.Table) -> list[ibis.Value]:
        """The check's columns of `table`, as judged (JSON read as its text)."""
        return [_value_of(column)(table) for column in self.columns]

    def whole(self, table: ibis.Table) -> ibis.Value:
        """One value per row standing for the whole tuple, for the dedup estimate."""
        values = self.read(table)
        if self.single:
            return values[0]
        return ibis.struct({f"c{i}": value for i, value in enumerate(values)})

    def keys(self, values: list[ibis.Value]) -> tuple[ibis.Value, ibis.Value]:
        length = _strlen if self.byte_lengths else _char_length
        return _keys(values[0], length) if self.single else _tuple_keys(values, length)

    def digest_of(self, values: list[ibis.Value]) -> ibis.Value:
        """The SHA-256 of each tuple (`digests.digests` in Python), on the backend."""
        if self.single:
            return values[0].hexdigest("sha256")
        return _tuple_digest(values, self.kinds)

    def same(self, left: ibis.Value, right: ibis.Value, kind: str) -> list[ibis.Value]:
        """The predicates under which two values of a column join (all must hold).

        A null matches a null in a tuple (a lone chat's nulls never travel). A float
        joins on whether it is NaN and on its value with NaN as 0: DuckDB's hash join
        doesn't reliably match a NaN with a NaN, and both stay equalities (a hash join).
        """
        pairs = [(left, right)]
        if kind == "float":
            pairs = [(v.isnan(), w.isnan()) for v, w in pairs] + [
                (ibis.cases((v.isnan(), 0.0), else_=v), ibis.cases((w.isnan(), 0.0), else_=w))
                for v, w in pairs
            ]
        return [v == w if self.single else v.identical_to(w) for v, w in pairs]


def _make_plan(
    table: ibis.Table,
    check: RowCheck,
    columns: tuple[str, ...],
    backend: ibis.BaseBackend,
    asked: JoinOn,
) -> _Plan:
    """How to read, key, digest and join the check's columns on this backend.

    `asked` is the engine's `join_on=`: "auto" picks the hash join when it can.
    """
    if isinstance(check, ChatCheck) and columns == (check.column,):
        # Any kind of column: the check decides what its values are worth (an integer,
        # a date, a struct without messages is not_messages), as on every engine.
        kind = _part_kind(table, check.column, backend)
        join_on = _join_on(kind, backend, asked)
        return _Plan(
            columns, (kind,), join_on, single=True, na_pass=check.fmt.na_pass, byte_lengths=backend.name == "duckdb"
        )
    kinds = tuple(_part_kind(table, column, backend) for column in columns)
    hashable = (
        "text" in kinds and all(kind in _DIGESTED for kind in kinds) and _has_hash_ops(backend)
    )
    if asked == "hash" and not hashable:
        found = ", ".join(f"{c} ({table.schema()[c]})" for c in columns)
        raise ValueError(
            "join_on='hash' needs text columns (and booleans or integers besides) on a "
            f"backend with hash(), SHA-256 and maps; these are {found} on {backend.name}: "
            "use join_on='value' or 'auto'"
        )
    join_on = "hash" if hashable and asked != "value" else "value"
    return _Plan(columns, kinds, join_on, single=False, byte_lengths=backend.name == "duckdb")


def _join_on(kind: str, backend: ibis.BaseBackend, asked: JoinOn) -> str:
    """The join of a lone chat column of `kind` (see `_make_plan`)."""
    hashable = kind == "text" and _has_hash_ops(backend)
    if asked == "hash" and not hashable:
        raise ValueError(
            "join_on='hash' needs a JSON text column on a backend with hash(), SHA-256 "
            f"and maps; this one is {kind} on {backend.name}: use join_on='value' or 'auto'"
        )
    if asked == "value" or not hashable:
        return "value"
    return "hash"


def _part_kind(table: ibis.Table, column: str, backend: ibis.BaseBackend) -> str:
    """The kind of a judged column: any type the check reads, nested ones on DuckDB only.

    "text", "bool" and "int" are covered by a tuple's SHA-256; "binary", "native",
    "float" and "other" (dates, decimals, ...) join back on the value, and "mapped"
    (a native value holding a map) on its JSON text (`MAPPED`).
    """
    dtype = table.schema()[column]
    if dtype.is_string() or _read_as_text(dtype):
        return "text"
    if dtype.is_boolean():
        return "bool"
    if dtype.is_integer():
        return "int"
    if dtype.is_binary():
        return "binary"
    if dtype.is_floating():
        return "float"
    if dtype.is_array() or dtype.is_struct() or dtype.is_map():
        if backend.name in NATIVE_BACKENDS:
            return MAPPED if _holds_map(dtype) else "native"
        raise TypeError(
            f"column {column!r} is {dtype}: the {backend.name} backend can't hand nested values "
            "to Python as Arrow; store them as JSON text (string)"
        )
    return "other"


def _holds_map(dtype: dt.DataType) -> bool:
    if dtype.is_map():
        return True
    if dtype.is_array():
        return _holds_map(dtype.value_type)
    if dtype.is_struct():
        return any(_holds_map(field) for field in dtype.types)
    return False


def _read_as_text(dtype: dt.DataType) -> bool:
    """Is a column of `dtype` judged as its text, cast on the backend?

    JSON is its text. Intervals and the types Ibis doesn't know (DuckDB's BIT, UNION)
    can't travel back to the backend in the failing set, nor be compared with it: their
    text stands for them (never a conversation, but for a union holding one).
    """
    return dtype.is_json() or dtype.is_interval() or dtype.is_unknown()


def _value_of(column: str) -> Callable[[ibis.Table], ibis.Value]:
    """How to read the judged value from any table that has `column` (see `_read_as_text`)."""

    def value_of(table: ibis.Table) -> ibis.Value:
        value = table[column]
        return value.cast(dt.string) if _read_as_text(value.type()) else value

    return value_of


def _has_hash_ops(backend: ibis.BaseBackend) -> bool:
    try:
        return all(backend.has_operation(op) for op in (ops.Hash, ops.HexDigest, ops.MapGet))
    except Exception:  # noqa: BLE001 - a backend that can't tell: use the value join
        return False


@ibis.udf.scalar.builtin(name="strlen")  # type: ignore[untyped-decorator]
def _duckdb_strlen(value: str) -> int:  # type: ignore[empty-body]
    """DuckDB's byte length of a text."""


def _strlen(value: ibis.Value) -> ibis.Value:
    return _duckdb_strlen(value)


def _char_length(value: ibis.Value) -> ibis.Value:
    return value.length()


def _keys(value: ibis.Value, length: Callable[[ibis.Value], ibis.Value]) -> tuple[ibis.Value, ibis.Value]:
    """The key of each value: its backend hash and its length (SHA-256 settles the rest)."""
    return value.hash(), length(value).cast(dt.int64)


def _tuple_keys(
    values: list[ibis.Value], length: Callable[[ibis.Value], ibis.Value]
) -> tuple[ibis.Value, ibis.Value]:
    """The key of each tuple: the hash of the struct of its values and the sum of its text lengths.

    A null hashes too (as a null field of the struct), so tuples with nulls have keys.
    """
    k1 = ibis.struct({f"c{i}": value for i, value in enumerate(values)}).hash()
    lengths = [
        length(value).cast(dt.int64).fill_null(-1) for value in values if value.type().is_string()
    ]
    kl = functools.reduce(lambda a, b: a + b, lengths) if lengths else ibis.literal(0, dt.int64)
    return k1, kl.cast(dt.int64)


def _tuple_digest(values: list[ibis.Value], kinds: tuple[str, ...]) -> ibis.Value:
    """`digests.tuple_sha256` on the backend."""
    parts = []
    for value, kind in zip(values, kinds):
        if kind == "text":
            part = value.hexdigest("sha256")
        elif kind == "bool":
            part = value.ifelse("t", "f")
        else:  # int
            part = value.cast(dt.string)
        parts.append(ibis.cases((value.isnull(), NULL_PART), else_=part))
    return ibis.literal(",").join(parts).hexdigest("sha256")
