"""Where a failing value's problems are: the message of its code, and every problem it has.

The check gives one code per value: the first rule of `table.RULES` (in
`codes.ALL_REASONS` order) that applies. `locate` says at which message the
value breaks that rule (the 0-based index in its list of messages), and
`problems` lists every problem of the value, not only the first (the sample
spec's per-turn audit, `turns="all"`). Both read a value again, apart from the
check: `judge` and the batch checker are untouched, so the passing path costs
nothing more, and the batch forms (`locate_array`, `problems_array`) read only
the failing values.

Where each code is found, and what "every problem" means, is in `sites`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pyarrow as pa

from ..base.markers import TOO_LARGE_VALUE
from ..base.sizes import TOO_LARGE, is_too_large
from ..base.values import NOT_JSON, decode, is_missing
from ..check.batch import check_array
from ..check.checks import column_values
from ..check.codes import first_reason
from ..check.judge import active_rules
from ..check.options import with_options
from ..conversation.conversation import WHOLE
from ..conversation.spec import ChatFormat
from ..formats.messages import Read, messages_in, read_messages
from ..trainers.profiles import format_from
from .sites import WHOLE_VALUE_CODES, Problem, first_site, problems_in


def read_value(value: Any, fmt: ChatFormat, *, extras: bool = True) -> Read | str | None:
    """A value as `judge` reads it (with extras, unless `extras=False`), its code when it holds no
    messages (`not_messages`) or is too large to read (`too_large`), or None for a missing value
    that passes (na_pass=True)."""
    if value is TOO_LARGE_VALUE:
        return TOO_LARGE
    if is_missing(value):
        return None if fmt.na_pass else "not_messages"
    if is_too_large(value, fmt.max_value_bytes):
        return TOO_LARGE
    value = decode(value)
    messages = None if value is NOT_JSON else messages_in(value, fmt)
    if messages is None:
        return "not_messages"
    return read_messages(messages, fmt, extras=extras)


def problems_of(
    value: Any,
    fmt: ChatFormat,
    *,
    part: str = WHOLE,
    declared: Any = None,
    images: Any = None,
    media: Any = None,
) -> list[Problem]:
    """`problems` with its parameters already checked; `part`, `declared`, `images` and `media`
    as in `judge` and `reference.problem_of`."""
    read = read_value(value, fmt)
    if read is None:
        return []
    if isinstance(read, str):
        return [Problem(read, None)]
    return problems_in(read, fmt, part=part, declared=declared, images=images, media=media)


def location_of(
    value: Any,
    code: str | None,
    fmt: ChatFormat,
    *,
    part: str = WHOLE,
    declared: Any = None,
    images: Any = None,
) -> int | None:
    """`locate` with its parameters already checked (`part`, `declared`, `images` as in `problems_of`)."""
    if code in WHOLE_VALUE_CODES:
        return None
    if code is None:
        found = problems_of(value, fmt, part=part, declared=declared, images=images)
        code = first_reason(problem.code for problem in found)
        return next((problem.message for problem in found if problem.code == code), None)
    read = read_value(value, fmt, extras=_extras_matter(fmt, part, declared is not None, images is not None))
    if not isinstance(read, Read):
        return None  # nothing read, or a code of the whole value
    return first_site(read, code, fmt, part=part, declared=declared, images=images)


@lru_cache(maxsize=64)
def _extras_matter(fmt: ChatFormat, part: str, declared: bool, images: bool) -> bool:
    """Does any rule in force read a message's extras (its tool calls, name, ...)? Building them
    costs more than the rest of reading a message: without such a rule, they aren't built."""
    return active_rules(fmt, part, extras=True, declared=declared, images=images) != active_rules(
        fmt, part, extras=False, declared=declared, images=images
    )


@with_options
def problems(value: Any, **options: Any) -> list[Problem]:
    """Every problem of one conversation, as (code, message index or None) pairs: see the module.

    Empty when the value passes. The first in `ALL_REASONS` order is `first_problem`'s code.

    >>> problems('[{"role": "user", "content": "Hi"}, {"role": "user", "content": ""}]')
    [Problem(code='not_alternating', message=1), Problem(code='empty_content', message=1)]
    >>> problems("[]"), problems([{"role": "user", "content": "Hi"}])
    ([Problem(code='no_messages', message=None)], [])
    """
    return problems_of(value, format_from(**options))


@with_options
def locate(value: Any, code: str | None = None, **options: Any) -> int | None:
    """The 0-based index of the message where a failing value's problem is, or None.

    `code` is the value's code (None: the check's own, `first_problem`'s); the index
    is that of the first message where the value breaks its rule. None for a
    passing value, and for the codes of the whole value (`WHOLE_VALUE_CODES`, and
    `first_role` without a turn): see the module's table.

    >>> locate('[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]')
    1
    >>> locate([{"role": "user", "content": "a"}, {"role": "bot", "content": ""}], "empty_content")
    1
    >>> locate("not json") is None
    True
    """
    return location_of(value, code, format_from(**options))


# --- Arrow arrays, for the engines --------------------------------------------------------

PROBLEM_TYPE = pa.struct([("code", pa.string()), ("message", pa.int32())])
"""The type of one problem in `problems_array`."""


def _codes_list(codes: pa.Array | pa.ChunkedArray, n: int) -> list[str | None]:
    found: list[str | None] = codes.to_pylist()
    if len(found) != n:
        raise ValueError(f"{len(found)} codes for {n} values")
    return found


def _values_at(values: pa.Array | pa.ChunkedArray, rows: list[int], fmt: ChatFormat) -> list[Any]:
    """The Python values of some rows of an array (as `check_array` reads them; a value
    larger than `max_value_bytes=` as `markers.TOO_LARGE_VALUE`, unread)."""
    if not rows:
        return []
    taken = values.take(pa.array(rows, pa.int64()))
    return column_values(pa.table({"v": taken}), "v", fmt.max_value_bytes)


def locate_array(
    values: pa.Array | pa.ChunkedArray, codes: pa.Array | pa.ChunkedArray, fmt: ChatFormat
) -> pa.Int32Array:
    """`location_of` for each value of a conversation column and its code (`check_array`'s).

    Null where the code is null (the value passes) or the code is of the whole value.
    Only the failing values are read.

    >>> values = pa.array(['[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]', "[]", None])
    >>> locate_array(values, pa.array(["not_alternating", "no_messages", None]), ChatFormat()).to_pylist()
    [1, None, None]
    """
    found = _codes_list(codes, len(values))
    rows = [i for i, code in enumerate(found) if code is not None and code not in WHOLE_VALUE_CODES]
    out: list[int | None] = [None] * len(found)
    for i, value in zip(rows, _values_at(values, rows, fmt)):
        out[i] = location_of(value, found[i], fmt)
    return pa.array(out, pa.int32())


def problems_array(
    values: pa.Array | pa.ChunkedArray,
    fmt: ChatFormat,
    codes: pa.Array | pa.ChunkedArray | None = None,
) -> pa.ListArray:
    """`problems_of` for each value of a conversation column: a list of struct<code, message>.

    `codes` are the values' codes when the caller has them (`check_array`'s, computed
    here otherwise): only the values with a code are read; the others get an empty list.

    >>> problems_array(pa.array(['[{"role": "bot", "content": ""}]', "[]"]), ChatFormat()).to_pylist()
    [[{'code': 'unknown_role', 'message': 0}, {'code': 'empty_content', 'message': 0}], [{'code': 'no_messages', 'message': None}]]
    """
    found = _codes_list(check_array(values, fmt) if codes is None else codes, len(values))
    rows = [i for i, code in enumerate(found) if code is not None]
    out: list[list[Problem]] = [[] for _ in found]
    for i, value in zip(rows, _values_at(values, rows, fmt)):
        out[i] = problems_of(value, fmt)
    return pa.array([[p._asdict() for p in row] for row in out], pa.list_(PROBLEM_TYPE))


__all__ = [
    "PROBLEM_TYPE",
    "Problem",
    "locate",
    "locate_array",
    "location_of",
    "problems",
    "problems_array",
    "problems_of",
    "read_value",
]
