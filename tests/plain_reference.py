"""A plain reference of the core check, written from the documented rules alone, to test chatgate against.

It shares no code with chatgate (the standard library's `json` only) and is meant
to be read rather than run fast: each rule is written out once, in the order of
the codes. It knows the nine core codes and the core options (roles, alternate,
first_role, last_role, allow_empty, role_key, content_key, na_pass), on JSON text
(str or UTF-8 bytes) and on native values (lists, tuples, NumPy arrays, mappings).

    >>> plain_problem('[{"role": "user", "content": "Hi"}, {"role": "bot", "content": ""}]')
    'unknown_role'

One thing the rules leave to the implementation: JSON nested very deeply. Valid
JSON up to `SURELY_READ` levels deep is read; deeper than `SURELY_REFUSED` levels
it is `not_messages`; in between, either answer is right (`plain_problems` gives
both, `plain_problem` raises).
"""

from __future__ import annotations

import json
import numbers
import re
import sys
from collections.abc import Mapping
from contextlib import contextmanager

CODES = (
    "not_messages",
    "no_messages",
    "bad_message",
    "unknown_role",
    "system_position",
    "first_role",
    "not_alternating",
    "last_role",
    "empty_content",
)

SURELY_READ = 1000
SURELY_REFUSED = 1500


class Ambiguous(Exception):
    """The value is JSON nested so deeply that refusing it and reading it are both right."""


def plain_problem(value, **options):
    """The code of one value under the core options, or None when it is well formed."""
    answers = plain_problems(value, **options)
    if len(answers) != 1:
        raise Ambiguous(answers)
    return next(iter(answers))


def plain_problems(
    value,
    *,
    roles=("system", "user", "assistant"),
    alternate=True,
    first_role=None,
    last_role=None,
    allow_empty=False,
    role_key="role",
    content_key="content",
    na_pass=False,
):
    """The set of right answers for one value: one code (or None), or two for deep JSON."""
    if is_missing(value):
        return {None if na_pass else "not_messages"}
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        depth = nesting_depth(value)
        if depth > SURELY_REFUSED:
            return {"not_messages"}
        value = read_json(value)
        if value is NOT_JSON:
            return {"not_messages"}
        answers = set()
        if depth > SURELY_READ:
            answers.add("not_messages")
    else:
        answers = set()
    options = {
        "roles": list(roles),
        "alternate": alternate,
        "first_role": first_role,
        "last_role": last_role,
        "allow_empty": allow_empty,
        "role_key": role_key,
        "content_key": content_key,
    }
    answers.add(problem_of_value(value, **options))
    return answers


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


# --- JSON text -------------------------------------------------------------------------------

NOT_JSON = object()
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


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
            value = json.loads(text, parse_int=float, parse_constant=_refuse_constant)
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


# --- The rules -------------------------------------------------------------------------------


def is_list(value):
    """A list of messages may be a list, a tuple or a NumPy array (not a zero-dimensional one)."""
    if isinstance(value, (list, tuple)):
        return True
    return type(value).__name__ == "ndarray" and value.ndim >= 1


def is_blank(content):
    """No content: missing, a blank string (`str.strip()`), or parts none of which is an
    image or a text part with text."""
    if isinstance(content, str):
        return content.strip() == ""
    if is_missing(content):
        return True
    if is_list(content):
        return all(is_blank_text_part(part) for part in content)
    return False


def is_blank_text_part(part):
    if not isinstance(part, Mapping):
        return False
    kind = part.get("type")
    if not isinstance(kind, str) or kind != "text":
        return False
    if "text" not in part:
        return True
    text = part["text"]
    if isinstance(text, str):
        return text.strip() == ""
    return is_missing(text)


def problem_of_value(
    value, *, roles, alternate, first_role, last_role, allow_empty, role_key, content_key
):
    """The first code that applies to a decoded value, in the order of `CODES`."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    if not is_list(value):
        return "not_messages"
    messages = list(value)

    if len(messages) == 0:
        return "no_messages"

    for message in messages:
        if not isinstance(message, Mapping):
            return "bad_message"
        if role_key not in message or not isinstance(message[role_key], str):
            return "bad_message"
    message_roles = [message[role_key] for message in messages]

    for role in message_roles:
        if role not in roles:
            return "unknown_role"

    if "system" in roles:
        for index, role in enumerate(message_roles):
            if role == "system" and index != 0:
                return "system_position"

    # The turns are the messages after a leading system message.
    turns = message_roles[1:] if message_roles[0] == "system" else message_roles

    if first_role is not None and (len(turns) == 0 or turns[0] != first_role):
        return "first_role"

    if alternate:
        for previous, role in zip(turns, turns[1:]):
            if previous == role:
                return "not_alternating"

    if last_role is not None and message_roles[-1] != last_role:
        return "last_role"

    if not allow_empty:
        for message in messages:
            if content_key not in message or is_blank(message[content_key]):
                return "empty_content"

    return None

