"""The format of a dataset column's values: conversational or standard.

A value is conversational when it is a list of messages (native, or JSON text of
a list or of an object such as `{"messages": [...]}`), standard when it is other
text. With `format="auto"` each row of a dataset type is read in the format of its
values, and a row that mixes both is `mixed_format`. With `format="conversational"`
or `"standard"` every value must be of that format: a value of the other one is
`mixed_format` (JSON text that fails to decode is `not_messages` there). The
verdict of a row never depends on other rows; to flag the minority of a column
that mixes formats, count the formats of the whole column (`format_counts`, which
adds up across batches and partitions) and pin the majority (`majority_format`).

With `standard_parts=True`, a prompt or completion that is a list of content parts
(Together's multimodal instruction format) is a standard value too: `classify`
tells it apart as `PARTS` (see `is_parts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..base.values import NOT_JSON, is_missing, is_sequence, parse_json
from ..check.checks import column_values

AUTO, CONVERSATIONAL, STANDARD = "auto", "conversational", "standard"
FORMATS: tuple[str, ...] = (AUTO, CONVERSATIONAL, STANDARD)

MISSING_VALUE, CONV, TEXT, BROKEN, OTHER, PARTS = "missing", "conv", "text", "broken", "other", "parts"
"""The kinds of value `classify` tells apart."""


def is_parts(value: Any, role_key: str) -> bool:
    """Is a decoded value a list of content parts rather than of messages? Some item is a
    mapping with a string `type`, and none is a mapping with a role.

    >>> is_parts([{"type": "text", "text": "Hi"}], "role"), is_parts([{"role": "user", "type": "x"}], "role")
    (True, False)
    """
    if isinstance(value, Mapping) or not is_sequence(value):
        return False
    typed = False
    for item in value:
        if isinstance(item, Mapping):
            if not is_missing(item.get(role_key)):
                return False
            typed = typed or isinstance(item.get("type"), str)
    return typed


def classify(value: Any, mode: str, parts: str | None = None) -> tuple[str, Any]:
    """(kind, decoded value): missing, conv(ersation), text, broken (JSON) or other; with
    `parts` (the role key), a list of content parts is `PARTS`."""
    if is_missing(value):
        return MISSING_VALUE, None
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            value = str(value, "utf-8")
        except UnicodeDecodeError:
            return (OTHER if mode == STANDARD else BROKEN), None
    if isinstance(value, str):
        return _classify_text(value, mode, parts)
    if isinstance(value, Mapping) or is_sequence(value):
        return (PARTS, value) if parts is not None and is_parts(value, parts) else (CONV, value)
    return OTHER, value


def _classify_text(value: str, mode: str, parts: str | None) -> tuple[str, Any]:
    """`classify` of a string: JSON text of a list or an object, or other text."""
    if mode == STANDARD and parts is None:
        return TEXT, value
    if value.lstrip()[:1] not in ("[", "{"):
        return TEXT, value
    decoded = parse_json(str(value))
    if decoded is NOT_JSON or not (isinstance(decoded, Mapping) or is_sequence(decoded)):
        return (BROKEN, None) if mode == CONVERSATIONAL else (TEXT, value)
    if parts is not None and is_parts(decoded, parts):
        return PARTS, decoded
    return (TEXT, value) if mode == STANDARD else (CONV, decoded)


def value_format(value: Any) -> str | None:
    """ "conversational", "standard" or None (missing, or neither text nor a conversation).

    >>> value_format("The sky is"), value_format('[{"role": "user", "content": "Hi"}]'), value_format(None)
    ('standard', 'conversational', None)
    """
    kind, _ = classify(value, AUTO)
    return {CONV: CONVERSATIONAL, TEXT: STANDARD}.get(kind)


def format_counts(values: pa.Array | pa.ChunkedArray | Iterable[Any]) -> dict[str, int]:
    """How many values of a column are conversational, standard, or neither (missing included).

    Counts add up across batches and partitions; see `majority_format`.

    >>> format_counts(["The sky is", '[{"role": "user", "content": "Hi"}]', None])
    {'conversational': 1, 'standard': 1, 'other': 1}
    """
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = column_values(pa.table({"v": values}), "v")
    counts = {CONVERSATIONAL: 0, STANDARD: 0, "other": 0}
    for value in values:
        counts[value_format(value) or "other"] += 1
    return counts


def majority_format(counts: Mapping[str, int]) -> str:
    """The format to pin for a column with these `format_counts` (ties: conversational).

    >>> majority_format({"conversational": 2, "standard": 5, "other": 0})
    'standard'
    """
    return STANDARD if counts.get(STANDARD, 0) > counts.get(CONVERSATIONAL, 0) else CONVERSATIONAL
