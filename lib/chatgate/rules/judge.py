"""The one place where a conversation is judged.

Every path (the reference check of one value, the Arrow batch checker, every
engine) turns a conversation into two lists, the role of each message and its
content, and hands them to `judge`. Only the way a content is found blank
depends on how it was decoded, so that is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from .spec import ChatFormat

BAD = object()
"""The role of a message that isn't a mapping with a string role."""

MISSING = object()
"""The content of a message that has no content key."""


def judge(
    roles: Sequence[Any],
    contents: Sequence[Any],
    fmt: ChatFormat,
    is_blank: Callable[[Any], bool],
) -> str | None:
    """The first problem code of a list of messages, or None when it is well formed.

    `roles[i]` is the role string of message i or `BAD`; `contents[i]` its content.
    """
    if not roles:
        return "no_messages"
    if any(role is BAD for role in roles):
        return "bad_message"
    allowed = fmt.roles
    if any(role not in allowed for role in roles):
        return "unknown_role"
    if fmt.has_system and "system" in roles[1:]:
        return "system_position"
    turns = roles[1:] if roles[0] == "system" else roles
    if fmt.first_role is not None and (not turns or turns[0] != fmt.first_role):
        return "first_role"
    if fmt.alternate and any(a == b for a, b in pairwise(turns)):
        return "not_alternating"
    if fmt.last_role is not None and roles[-1] != fmt.last_role:
        return "last_role"
    if not fmt.allow_empty and any(is_blank(content) for content in contents):
        return "empty_content"
    return None
