"""The reference check of one value: clear rather than fast, and the yardstick of the batch checker."""

from __future__ import annotations

from typing import Any

from .judge import judge
from .spec import DEFAULT_ROLES, ChatFormat
from .values import NOT_JSON, is_blank, is_missing, message_list, parse_json, roles_and_contents

_TEXT = (str, bytes, bytearray, memoryview)


def first_problem(
    value: Any,
    *,
    roles=DEFAULT_ROLES,
    alternate: bool = True,
    first_role: str | None = None,
    last_role: str | None = None,
    allow_empty: bool = False,
    role_key: str = "role",
    content_key: str = "content",
    na_pass: bool = False,
) -> str | None:
    """The first problem code of one conversation, or None when it is well formed.

    >>> first_problem('[{"role": "user", "content": "Hi"}, {"role": "user", "content": "?"}]')
    'not_alternating'
    >>> first_problem([{"role": "user", "content": "Hi"}], last_role="user") is None
    True
    """
    fmt = ChatFormat(
        roles=roles,
        alternate=alternate,
        first_role=first_role,
        last_role=last_role,
        allow_empty=allow_empty,
        role_key=role_key,
        content_key=content_key,
        na_pass=na_pass,
    )
    return problem_of(value, fmt)


def problem_of(value: Any, fmt: ChatFormat) -> str | None:
    """`first_problem` with its parameters already checked."""
    if is_missing(value):
        return None if fmt.na_pass else "not_messages"
    if isinstance(value, _TEXT):
        if isinstance(value, str) and type(value) is not str:
            value = str(value)  # NumPy's str_ and other subclasses: msgspec reads exact str only
        value = parse_json(value)
        if value is NOT_JSON:
            return "not_messages"
    messages = message_list(value)
    if messages is None:
        return "not_messages"
    roles, contents = roles_and_contents(messages, fmt.role_key, fmt.content_key)
    return judge(roles, contents, fmt, is_blank)
