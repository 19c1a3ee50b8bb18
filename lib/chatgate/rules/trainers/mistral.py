"""Mistral's fine-tuning rules (`profile="mistral"`), beyond the options its profile sets.

Read from mistral-finetune (github.com/mistralai/mistral-finetune, commit 1943535, 2026-06-12):
`finetune/data/tokenize.py` (`build_instruct_sample`, `_parse_tool_calls`,
`_parse_tool_message`), which `utils/validate_data.py` runs on every line, then
mistral-common's `MistralRequestValidatorV3` in `ValidationMode.finetuning`
(github.com/mistralai/mistral-common v1.11.7, commit bc022b9,
`src/mistral_common/protocol/instruct/validator.py`). Its profile's defaults (`profiles`) say
the rest: roles system, user, assistant and tool, no alternation, the last message the
assistant's, two messages at least, a weight 0 or 1, strings or lists of parts.

| rule | code | source |
|---|---|---|
| a tool call has an `id` of 9 letters or digits (`"null"` on the last message only), a function name of 1 to 64 letters, digits, `_` or `-`, and `arguments` as JSON text; a tool message has such a `tool_call_id`, and such a `name` if any | `mistral_tool_call` | `_parse_tool_calls`, `_parse_tool_message`; `_validate_tool_call`, `_validate_function_call`, `_validate_tool_message` (V3) |
| a message other than an assistant's with tool calls has a content (not missing, not null); an assistant message has a non-empty content or tool calls, not both and not neither | `content_or_calls` | `build_instruct_sample` ("non-function call message must have content"); `_validate_assistant_message` |
| the k tool calls of an assistant message that isn't the last are answered by k tool messages before the next turn (more are `orphan_tool`'s) | `unanswered_call` | `_validate_tool_calls_followed_by_tool_messages` ("Not the same number of function calls and responses") |

Where chatgate is stricter than Mistral, or lets through what Mistral refuses, it says so in
`TRAINER_PROFILES`' comment on the profile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..base.markers import BAD, MISSING
from ..base.values import is_missing, is_sequence
from ..conversation.conversation import Conversation
from ..conversation.rule import per_message, walk
from ..conversation.spec import TOOL_ROLE

CALL_ID = re.compile(r"[a-zA-Z0-9]{9}")
"""A tool call's id, and a tool message's `tool_call_id`, in Mistral's V3 format."""

FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A function's name (in a call, and a tool message's `name`) for mistral-common."""


@per_message(
    "mistral",
    "extras",
    phrase=("has a tool call outside Mistral's format", "have a tool call outside Mistral's format"),
    raised_by='profile="mistral"',
    meaning="a tool call without an `id` of 9 letters or digits (`null` on the last message only), a "
    "function name that isn't 1-64 of a-z, A-Z, 0-9, _ and -, or `arguments` that aren't JSON text; a "
    "tool message without such a `tool_call_id`, or with such a bad `name`",
)
def mistral_tool_call(c: Conversation, i: int) -> bool:
    """Refuses a tool call or a tool message outside Mistral's format (see the module)."""
    role, x = c.roles[i], c.extras[i]
    if role == TOOL_ROLE:
        return not _id_ok(x.call_id, False) or (x.name is not None and not FUNCTION_NAME.fullmatch(x.name))
    if role != "assistant" or not x.calls or x.calls is BAD or not is_sequence(x.raw_calls):
        return False  # no calls, or malformed ones: bad_tool_call's
    last = i == len(c.roles) - 1
    return not all(_call_ok(call, last) for call in x.raw_calls)


@per_message(
    "mistral",
    "extras",
    phrase=("has a message without content, or with both content and tool calls",
            "have a message without content, or with both content and tool calls"),
    raised_by='profile="mistral"',
    meaning="a message without content (missing or null) that isn't an assistant's with tool calls, or an "
    "assistant message with both a non-empty content and tool calls, or with neither",
    reads_contents=True,
)
def content_or_calls(c: Conversation, i: int) -> bool:
    """Refuses a message without content (missing or null) unless it is an assistant's with tool
    calls, and an assistant message with both a non-empty content and tool calls, or neither."""
    content, calls = c.contents[i], c.extras[i].calls
    if c.roles[i] == "assistant":
        return _has_content(content) == bool(calls)
    return content is MISSING or is_missing(content)


@walk(
    "mistral",
    "extras",
    "whole",
    phrase=("has tool calls that aren't all answered", "have tool calls that aren't all answered"),
    raised_by='profile="mistral"',
    meaning="an assistant message with k tool calls, not the last message, followed by fewer than k tool messages",
    where="each assistant message with tool calls, but the last message, that fewer tool messages than its calls follow",
)
def unanswered_call(c: Conversation) -> Iterator[int | None]:
    """Refuses an assistant message with k tool calls, not the last message, that fewer than k
    tool messages follow (mistral-common: "Not the same number of function calls and responses")."""
    roles, extras = c.roles, c.extras
    n = len(roles)
    for i in range(n - 1):
        calls = extras[i].calls
        if roles[i] != "assistant" or not calls or calls is BAD:
            continue
        j = i + 1
        while j < n and roles[j] == TOOL_ROLE:
            j += 1
        if j - i - 1 < len(calls):
            yield i


def _id_ok(value: Any, last: bool) -> bool:
    return isinstance(value, str) and (CALL_ID.fullmatch(value) is not None or (last and value == "null"))


def _call_ok(call: Any, last: bool) -> bool:
    """One tool call as mistral-finetune's `_parse_tool_calls` and mistral-common's V3 validator take it."""
    if not isinstance(call, Mapping) or not _id_ok(call.get("id"), last):
        return False
    function = call.get("function")
    if not isinstance(function, Mapping):
        return False
    name = function.get("name")
    return isinstance(name, str) and FUNCTION_NAME.fullmatch(name) is not None and isinstance(
        function.get("arguments"), str
    )


def _has_content(content: Any) -> bool:
    """Python's truth of a content, as mistral-common tests it: a non-empty string or list."""
    if content is MISSING or is_missing(content):
        return False
    if isinstance(content, str) or is_sequence(content):
        return len(content) > 0
    return True
