"""Rows the JVM proves passing, so that their text never crosses to Python.

Handing 2.5 KB of JSON a row from the JVM to a Python worker costs about as much as
checking it there. Most rows of a table are well-formed conversations of one plain
shape: `ChatShape.java` (in `jvm/`, built into the jars directory by `make jars`)
reads that shape on the JVM and gives the sequence of roles of a value in it, or null.
The value then passes exactly when Python's check passes a conversation of those roles
with filled contents, and that verdict is asked of Python once per format, for the
sequences of roles most tables hold (`passing_roles`). The JVM decides no rule: a value
of any other shape, or roles not asked in advance, is judged by Python as before.

The proof applies where the core check judges one text column on its own (`proof_for`).
It is off when the jar isn't on the class path, and on Spark Connect (where registering a
session's Java function wasn't tried); the codes are the same either way.
"""

from __future__ import annotations

import itertools
import json
from functools import lru_cache

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...rules import RowCheck
from ...rules.check.batch import check_array
from ...rules.check.checks import ChatCheck
from ...rules.conversation.spec import ChatFormat
from .keys import column_ref

SHAPE_CLASS = "chatgate.jvm.ChatShape"
SHAPE_FUNCTION = "chatgate_shape_roles"
PROVEN = "__chatgate_proven__"
"""The check pass's column of the proof: its proven rows cross to Python with nothing else (`check_batches`)."""
LONGEST = 64
"""The most messages of a sequence of roles whose verdict is asked in advance."""
MOST_ROLES = 6
"""Formats of more roles take no proof (their candidate sequences would be too many to ask)."""
_SEPARATOR = ","


def proof_for(table: DataFrame, check: RowCheck) -> Column | None:
    """True on the rows of `table` that `check` passes, proven on the JVM; false on the others
    (Python judges them). None where the proof doesn't apply."""
    if not _provable(table, check):
        return None
    assert isinstance(check, ChatCheck)
    fmt = check.fmt
    passing = passing_roles(fmt)
    if not passing or not _registered(table.sparkSession):
        return None
    value = column_ref(check.column)
    roles = F.call_function(SHAPE_FUNCTION, value.cast("binary"), F.lit(fmt.role_key), F.lit(fmt.content_key))
    proven = roles.isin(*passing)
    if fmt.max_value_bytes is not None:
        proven = proven & (F.octet_length(value) <= F.lit(fmt.max_value_bytes))
    return F.coalesce(proven, F.lit(False))


def _provable(table: DataFrame, check: RowCheck) -> bool:
    """Does `check` judge one text column on its own, with the core check's options only?"""
    if not isinstance(check, ChatCheck) or not check.judges_value_alone or not check.fmt.is_core:
        return False
    if check.fmt.role_key == check.fmt.content_key:
        return False
    dtype = table.schema[check.column].dataType
    return isinstance(dtype, (T.StringType, T.BinaryType))


@lru_cache(maxsize=64)
def passing_roles(fmt: ChatFormat) -> tuple[str, ...]:
    """The sequences of roles (joined by commas, as `ChatShape` gives them) that `fmt` passes
    when every content is filled: asked of the check itself, among those most tables hold
    (`candidate_roles`)."""
    if len(fmt.roles) > MOST_ROLES:
        return ()
    candidates = [c for c in candidate_roles(fmt.roles) if all(_plain(role) for role in c)]
    texts = [_conversation(fmt, roles) for roles in candidates]
    codes = check_array(pa.array(texts, pa.string()), fmt).to_pylist()
    return tuple(_SEPARATOR.join(roles) for roles, code in zip(candidates, codes) if code is None)


def candidate_roles(roles: tuple[str, ...] | list[str]) -> list[tuple[str, ...]]:
    """Two roles taking turns, from either one, after at most one opening message of any role,
    up to `LONGEST` messages in all.

    >>> candidate_roles(["user", "assistant"])[:3]
    [('user',), ('user', 'assistant'), ('user', 'assistant', 'user')]
    """
    found: dict[tuple[str, ...], None] = {}
    for opening in [(), *((role,) for role in roles)]:
        for first, second in itertools.permutations(roles, 2):
            for n in range(1, LONGEST - len(opening) + 1):
                found[opening + tuple(first if i % 2 == 0 else second for i in range(n))] = None
    return list(found)


def _plain(role: str) -> bool:
    """A role `ChatShape` reads: ASCII letters, digits, '_' or '-'."""
    return bool(role) and role.isascii() and all(c.isalnum() or c in "_-" for c in role)


def _conversation(fmt: ChatFormat, roles: tuple[str, ...]) -> str:
    return json.dumps([{fmt.role_key: role, fmt.content_key: "x"} for role in roles])


def _registered(spark: SparkSession) -> bool:
    """Is `ChatShape` on the session's class path? It is registered as `SHAPE_FUNCTION` where the
    session hasn't that function yet (asked each time: a new session may reuse an old one's address)."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    try:
        if not spark.catalog.functionExists(SHAPE_FUNCTION):
            spark.udf.registerJavaFunction(SHAPE_FUNCTION, SHAPE_CLASS, T.StringType())
    except Exception:  # noqa: BLE001 - the class isn't on the class path (py4j's and Spark's errors vary)
        return False
    return True
