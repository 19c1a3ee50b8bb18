"""Values as the documented rules read them: missing values, JSON text, lists, blank contents.

Written from the README and DESIGN.md ("Accepted values", "not_messages",
"empty_content"); the standard library only.

One thing the rules leave to the implementation: JSON nested very deeply. Valid
JSON up to `SURELY_READ` levels deep is read; deeper than `SURELY_REFUSED` levels
it is `not_messages`; in between, either answer is right.
"""

from __future__ import annotations

import json
import numbers
import re
import sys
from collections.abc import Mapping
from contextlib import contextmanager

SURELY_READ = 1000
SURELY_REFUSED = 1500

ABSENT = object()
"""A key a message doesn't hold (or holds null: a null counts as absent)."""

BAD = object()
"""A value a rule reads that is malformed (a `tool_calls`, a `tools` column, an `images` column)."""


class Ambiguous(Exception):
    """The rules allow more than one answer for this value (see `plain_problems`)."""


# --- Missing values ------------------------------------------------------------------------


def is_missing(value):
    """None, NaN (any kind of number), pandas' NA and NaT."""
    if value is None:
        return True
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    if not isinstance(value, numbers.Number):
        return False
    try:
        return bool(value != value)  # noqa: PLR0124 - true of NaN only
    except ArithmeticError:  # a signalling Decimal NaN refuses to be compared
        return True


def given(message, key):
    """A message's value under `key`, or ABSENT: a key whose value is null counts as absent."""
    if not isinstance(message, Mapping) or key not in message or is_missing(message[key]):
        return ABSENT
    return message[key]


# --- JSON text -------------------------------------------------------------------------------

NOT_JSON = object()
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def is_text(value):
    return isinstance(value, (str, bytes, bytearray, memoryview))


def nesting_depth(text):
    """How deeply the brackets of a JSON text nest (strings skipped)."""
    if not isinstance(text, str):
        text = bytes(text).decode("utf-8", "replace")
    depth = deepest = 0
    for char in _STRING.sub("", text):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def _read_int(digits):
    """An integer as an int (weights must be ints), or as a float when it is too long for
    Python to read as one (it is a number all the same)."""
    return int(digits) if len(digits.lstrip("-")) < 4000 else float(digits)


@contextmanager
def _deep_recursion():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + 4 * SURELY_REFUSED)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def read_json(text):
    """The value of a JSON text, or NOT_JSON: bytes must be UTF-8 (no byte order mark),
    NaN and Infinity are not JSON, and neither is a string holding half a surrogate pair."""
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            return NOT_JSON
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the text itself
        return NOT_JSON
    try:
        with _deep_recursion():
            value = json.loads(text, parse_int=_read_int, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return NOT_JSON
    return NOT_JSON if _has_lone_surrogate(value) else value


def _has_lone_surrogate(value):
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= char <= "\udfff" for char in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def decoded(value):
    """A value with its JSON text read (NOT_JSON when it isn't JSON); other values as they are."""
    return read_json(value) if is_text(value) else value


# --- Lists and blank contents -------------------------------------------------------------------


def is_list(value):
    """A list of messages may be a list, a tuple or a NumPy array (not a zero-dimensional one)."""
    if isinstance(value, (list, tuple)):
        return True
    return type(value).__name__ == "ndarray" and value.ndim >= 1


def is_empty_list(value):
    return is_list(value) and len(value) == 0


def is_blank(content, text_key="text"):
    """No content: missing, a blank string (`str.strip()`), or parts none of which is an
    image or a text part with text (under `text_key`)."""
    if isinstance(content, str):
        return content.strip() == ""
    if content is ABSENT or is_missing(content):
        return True
    if is_list(content):
        return all(is_blank_text_part(part, text_key) for part in content)
    return False


def is_blank_text_part(part, text_key="text"):
    if not isinstance(part, Mapping):
        return False
    kind = part.get("type")
    if not isinstance(kind, str) or kind != "text":
        return False
    if text_key not in part:
        return True
    text = part[text_key]
    if isinstance(text, str):
        return text.strip() == ""
    return is_missing(text)


def plain(value):
    """A value as plain lists and dicts, keys holding null dropped (two values are the same
    when their plain forms are equal: a native struct holds null for a key a message lacks)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items() if not is_missing(item)}
    if is_list(value):
        return [plain(item) for item in value]
    return value
