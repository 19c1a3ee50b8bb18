"""Python values as conversations: missing values, JSON text, native lists and mappings."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from numbers import Number
from typing import TYPE_CHECKING, Any

import msgspec

from .markers import BAD, MISSING

if TYPE_CHECKING:
    from types import FrameType

NOT_JSON = object()
"""What `parse_json` returns for text that isn't JSON (or can't be decoded)."""

MAX_DEPTH = 1200
"""JSON nested deeper than about this many levels is not_messages, whatever the call stack.

(It is above Python's default recursion limit, so that whatever msgspec decodes on a
first try, with the room the call stack leaves it, it decodes on a second try too.)
"""

# A float literal too big for a double is still a number (inf), not bad JSON: the
# batch checker's typed decoder skips unknown keys without reading their numbers.
_decode = msgspec.json.Decoder(float_hook=float).decode


def is_missing(value: Any) -> bool:
    """None, NaN (of any float type), pandas' NA and NaT: a missing value, not a conversation."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value  # noqa: PLR0124 - NaN
    if isinstance(value, (str, bytes, list, tuple, dict, int)):
        return False
    if isinstance(value, Number):
        try:  # NumPy floats, Decimal("NaN")
            return bool(value != value)  # noqa: PLR0124 - NaN
        except Exception:  # noqa: BLE001 - a signalling NaN refuses to compare: still NaN
            return True
    return type(value).__name__ in ("NAType", "NaTType")


def parse_json(text: str | bytes | bytearray | memoryview) -> Any:
    """Decode JSON text; `NOT_JSON` for anything that fails (bad UTF-8, depth, syntax)."""
    try:
        return _decode(text)
    except (RecursionError, msgspec.ValidationError):
        return _decode_carefully(text)
    except Exception:  # noqa: BLE001 - any failure to decode makes the value not_messages
        return NOT_JSON


def _decode_carefully(text: str | bytes | bytearray | memoryview) -> Any:
    """Second try at valid JSON that msgspec refused on its first pass.

    msgspec refuses integers of more than ~4,300 digits, and nesting deeper than the
    room left on the call stack. The batch checker's typed decoder skips unknown keys
    without reading either, so the verdict must not hang on them: long integers are
    shortened (a number stays a number) and the nesting limit is made `MAX_DEPTH`
    levels, whatever the depth of the caller's stack.
    """
    try:
        text = _shorten_integers(text)
        with _room_on_stack(MAX_DEPTH):
            return _decode(text)
    except Exception:  # noqa: BLE001
        return NOT_JSON


_STRING_OR_LONG_INT = r'"[^"\\]*(?:\\.[^"\\]*)*"|[1-9][0-9]{18,}'
_LONG_INT_STR = re.compile(_STRING_OR_LONG_INT, re.DOTALL)
_LONG_INT_BYTES = re.compile(_STRING_OR_LONG_INT.encode(), re.DOTALL)


def _shorten_integers(text: str | bytes | bytearray | memoryview) -> str | bytes:
    """`text` with every run of 19+ digits (from a 1-9) outside strings replaced by "1".

    Valid JSON stays valid and invalid JSON invalid: wherever such a run is (or starts)
    a number, an exponent or a fraction, "1" is one too; after a leading "0" both fail.
    """
    if isinstance(text, str):
        return _LONG_INT_STR.sub(lambda m: m[0] if m[0][0] == '"' else "1", text)
    data = bytes(text)
    return _LONG_INT_BYTES.sub(lambda m: m[0] if m[0][:1] == b'"' else b"1", data)


_STACK_LOCK = threading.RLock()


@contextmanager
def _room_on_stack(levels: int) -> Iterator[None]:
    """Let the next calls recurse about `levels` deeper than the current frame.

    Python < 3.12 counts C recursion (msgspec's) against the recursion limit, so
    without this the nesting msgspec accepts would depend on the caller's stack.
    """
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    with _STACK_LOCK:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old + 100, depth + levels))
        try:
            yield
        finally:
            sys.setrecursionlimit(old)


def is_sequence(value: Any) -> bool:
    """A list of messages may be a list, a tuple or a NumPy array (pandas over Arrow)."""
    if isinstance(value, (list, tuple)):
        return True
    return type(value).__name__ == "ndarray" and getattr(value, "ndim", 0) >= 1


def message_list(value: Any) -> Any:
    """The list of messages a decoded value holds, or None if it holds none."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    return value if is_sequence(value) else None


def roles_and_contents(messages: Any, role_key: str, content_key: str) -> tuple[list[Any], list[Any]]:
    """Split native messages into the two lists that `judge` reads."""
    roles: list[Any] = []
    contents: list[Any] = []
    for message in messages:
        if isinstance(message, Mapping):
            role = message.get(role_key, BAD)
            roles.append(role if isinstance(role, str) else BAD)
            contents.append(message.get(content_key, MISSING))
        else:
            roles.append(BAD)
            contents.append(MISSING)
    return roles, contents


_TEXT = (str, bytes, bytearray, memoryview)


def decode(value: Any) -> Any:
    """A value with its JSON text decoded (`NOT_JSON` when it isn't JSON); others as they are."""
    if isinstance(value, _TEXT):
        if isinstance(value, str) and type(value) is not str:
            value = str(value)  # NumPy's str_ and other subclasses: msgspec reads exact str only
        return parse_json(value)
    return value


def is_blank(content: Any, text_key: str = "text") -> bool:
    """No content: missing, null, a blank string, or parts without an image or text."""
    if isinstance(content, str):
        return not content or content.isspace()
    if content is MISSING or is_missing(content):
        return True
    if is_sequence(content):
        return all(_is_blank_text_part(part, text_key) for part in content)
    return False


def blank_checker(text_key: str) -> Callable[[Any], bool]:
    """`is_blank` for text parts whose text is under `text_key`."""
    if text_key == "text":
        return is_blank
    return lambda content: is_blank(content, text_key)


def _is_blank_text_part(part: Any, text_key: str = "text") -> bool:
    if not isinstance(part, Mapping):
        return False
    kind = part.get("type")
    if not isinstance(kind, str) or kind != "text":
        return False
    text = part.get(text_key, MISSING)
    return (
        text is MISSING
        or is_missing(text)
        or (isinstance(text, str) and (not text or text.isspace()))
    )


def _plain(value: Any) -> Any:
    """A value as plain lists and dicts (null keys dropped), for comparing messages."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if not is_missing(v)}
    if is_sequence(value):
        return [_plain(v) for v in value]
    return value


def same_value(a: Any, b: Any) -> bool:
    """Are two values the same as plain lists and dicts (null keys dropped)?

    >>> same_value({"role": "user", "name": None}, {"role": "user"})
    True
    """
    try:
        return _plain(a) == _plain(b)
    except RecursionError:  # nesting too deep to compare: not the same pair
        return False


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading items two lists share (`same_value`)."""
    n = 0
    for x, y in zip(a, b):
        if not same_value(x, y):
            break
        n += 1
    return n
