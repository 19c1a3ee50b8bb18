"""The reference check of one value: clear rather than fast, and the yardstick of the batch checker."""

from __future__ import annotations

from typing import Any

from ..base.markers import TOO_LARGE_VALUE
from ..base.sizes import TOO_LARGE, is_too_large
from ..base.values import (
    NOT_JSON,
    blank_checker,
    decode,
    is_blank,
    is_missing,
    message_list,
    roles_and_contents,
)
from ..conversation.spec import ChatFormat
from ..formats.messages import messages_in, read_messages
from ..trainers.profiles import format_from
from .judge import judge
from .options import with_options


@with_options
def first_problem(value: Any, **options: Any) -> str | None:
    """The first problem code of one conversation, or None when it is well formed.

    The keyword arguments are the options of the check, listed below.

    >>> first_problem('[{"role": "user", "content": "Hi"}, {"role": "user", "content": "?"}]')
    'not_alternating'
    >>> first_problem([{"role": "user", "content": "Hi"}], last_role="user") is None
    True
    >>> first_problem([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}], sharegpt=True) is None
    True
    """
    return problem_of(value, format_from(**options))


def problem_of(
    value: Any,
    fmt: ChatFormat,
    *,
    declared: Any = None,
    images: Any = None,
    media: Any = None,
    sized: bool = False,
) -> str | None:
    """`first_problem` with its parameters already checked.

    `declared` (the function names of the row's tools, see `tools.declared_names`)
    and `images` (the number of the row's images, see `messages.image_total`) come
    from other columns of the row; None when there is no such column; `media`, the row's
    (audios, videos), each counted alike (`messages.media_totals`). `sized`: the
    caller has measured the value already (`max_value_bytes=`), from its Arrow array.
    """
    if value is TOO_LARGE_VALUE:
        return TOO_LARGE
    if is_missing(value):
        return None if fmt.na_pass else "not_messages"
    if not sized and is_too_large(value, fmt.max_value_bytes):
        return TOO_LARGE
    value = decode(value)
    if value is NOT_JSON:
        return "not_messages"
    if fmt.is_core and declared is None and images is None:
        messages = message_list(value)
        if messages is None:
            return "not_messages"
        roles, contents = roles_and_contents(messages, fmt.role_key, fmt.content_key)
        return judge(roles, contents, fmt, is_blank)
    messages = messages_in(value, fmt)
    if messages is None:
        return "not_messages"
    read = read_messages(messages, fmt, extras=True)
    return judge(
        read.roles,
        read.contents,
        fmt,
        blank_checker(fmt.text_key),
        read.extras,
        declared=declared,
        images=images,
        media=media,
    )
