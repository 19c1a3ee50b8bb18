"""Python values as conversations: missing values, JSON text, native lists and mappings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .judge import BAD, MISSING

NOT_JSON = object()
"""What `parse_json` returns for text that isn't JSON (or can't be decoded)."""

_decode = msgspec.json.decode


def is_missing(value: Any) -> bool:
    """None, NaN, pandas' NA and NaT: a missing value, not a conversation."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    return type(value).__name__ in ("NAType", "NaTType")


def parse_json(text: str | bytes | bytearray | memoryview) -> Any:
    """Decode JSON text; `NOT_JSON` for anything that fails (bad UTF-8, depth, syntax)."""
    try:
        return _decode(text)
    except Exception:  # noqa: BLE001 - any failure to decode makes the value not_messages
        return NOT_JSON


def is_sequence(value: Any) -> bool:
    """A list of messages may be a list, a tuple or a NumPy array (pandas over Arrow)."""
    return isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray"


def message_list(value: Any) -> Any:
    """The list of messages a decoded value holds, or None if it holds none."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    return value if is_sequence(value) else None


def roles_and_contents(messages: Any, role_key: str, content_key: str) -> tuple[list, list]:
    """Split native messages into the two lists that `judge` reads."""
    roles: list = []
    contents: list = []
    for message in messages:
        if isinstance(message, Mapping):
            role = message.get(role_key, BAD)
            roles.append(role if isinstance(role, str) else BAD)
            contents.append(message.get(content_key, MISSING))
        else:
            roles.append(BAD)
            contents.append(MISSING)
    return roles, contents


def is_blank(content: Any) -> bool:
    """No content: missing, null, a blank string, or parts without an image or text."""
    if content is MISSING or is_missing(content):
        return True
    if isinstance(content, str):
        return not content or content.isspace()
    if is_sequence(content):
        return all(_is_blank_text_part(part) for part in content)
    return False


def _is_blank_text_part(part: Any) -> bool:
    if not isinstance(part, Mapping) or part.get("type") != "text":
        return False
    text = part.get("text", MISSING)
    return text is MISSING or is_missing(text) or (isinstance(text, str) and (not text or text.isspace()))
