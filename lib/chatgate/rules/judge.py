"""The one place where a conversation is judged.

Every path (the reference check of one value, the Arrow batch checker, the row
checks of the dataset types, every engine) turns a conversation into two lists,
the role of each message and its content, and hands them to `judge`. Only the way
a content is found blank depends on how it was decoded, so that is passed in.

The options of issue #6 also need a little more of each message (`extras`, one
`messages.Extra` per message), and the dataset types judge parts of a row: a
prompt (`part="prompt"`), a completion (`part="completion"`) or a whole
conversation (`part="whole"`, the default). The rules run in `codes.ALL_REASONS`
order, so the first that applies is the reported code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import eq
from typing import Any

from .spec import DEVELOPER_ROLE, TOOL_ROLE, TOOL_ROLES, ChatFormat

BAD = object()
"""The role of a message that isn't a mapping with a string role (and a malformed value)."""

MISSING = object()
"""The content of a message that has no content key."""

WHOLE = "whole"
PROMPT = "prompt"
COMPLETION = "completion"
PARTS = (WHOLE, PROMPT, COMPLETION)


def judge(
    roles: Sequence[Any],
    contents: Sequence[Any],
    fmt: ChatFormat,
    is_blank: Callable[[Any], bool],
    extras: Sequence[Any] | None = None,
    *,
    part: str = WHOLE,
    declared: Any = None,
    images: Any = None,
) -> str | None:
    """The first problem code of a list of messages, or None when it is well formed.

    `roles[i]` is the role string of message i or `BAD`; `contents[i]` its content;
    `extras[i]` (needed by the options of issue #6) what else the rules read of it.
    `part` says which part of a row the messages are: a whole conversation, a
    prompt (it must end with a user turn, or a tool turn with tools=True; the last
    role isn't checked) or a completion (assistant turns, and tool turns with
    tools=True, only; neither first nor last role is checked; its tool messages
    may answer calls of the prompt). `declared` is the set of function names the
    row's tools declare (None: no tools column; `BAD`: malformed), `images` the
    number of images of the row (None: no images column; `BAD`: malformed).

    >>> judge(["user", "user"], ["a", "b"], ChatFormat(), lambda c: not c)
    'not_alternating'
    """
    if not roles:
        return "no_messages"
    if BAD in roles:  # identity first: no string equals the BAD marker
        return "bad_message"
    tools = fmt.tools
    if extras is not None:
        if tools and any(_bad_calls(role, x.calls) for role, x in zip(roles, extras)):
            return "bad_tool_call"
        if fmt.thinking is not None and any(
            _bad_thinking(role, x.thinking) for role, x in zip(roles, extras)
        ):
            return "bad_thinking"
    if declared is BAD:
        return "bad_tools"
    if (
        fmt.profile is not None
        and extras is not None
        and any(_is_tool_turn(role, x) for role, x in zip(roles, extras))
    ):
        return "tool_turn"
    if not fmt.role_set.issuperset(roles):
        return "unknown_role"
    if fmt.has_system and "system" in roles[1:]:
        return "system_position"
    lead = 1 if roles[0] == "system" else 0
    if fmt.harmony:
        if lead < len(roles) and roles[lead] == DEVELOPER_ROLE:
            lead += 1
        if DEVELOPER_ROLE in roles[lead:]:
            return "developer_position"
    turns = roles[lead:]
    if fmt.profile is not None and part == WHOLE and not ("user" in turns and "assistant" in turns):
        return "missing_turn"
    if (
        fmt.first_role is not None
        and part != COMPLETION
        and (not turns or turns[0] != fmt.first_role)
    ):
        return "first_role"
    if part == PROMPT and roles[-1] != "user" and not (tools and roles[-1] == TOOL_ROLE):
        return "prompt_end"
    if part == COMPLETION and any(
        role != "assistant" and not (tools and role == TOOL_ROLE) for role in roles
    ):
        return "completion_role"
    if tools and part != COMPLETION and extras is not None and _orphan_tool(roles, extras):
        return "orphan_tool"
    if fmt.alternate and (_repeats_with_tools(turns) if tools else _repeats(turns)):
        return "not_alternating"
    if fmt.last_role is not None and part == WHOLE and roles[-1] != fmt.last_role:
        return "last_role"
    if (
        declared is not None
        and extras is not None
        and any(call.name not in declared for x in extras if x.calls for call in x.calls)
    ):
        return "unknown_tool"
    if not fmt.allow_empty and _any_blank(contents, extras if tools else None, is_blank):
        return "empty_content"
    if (
        images is not None
        and extras is not None
        and (images is BAD or images != sum(x.images for x in extras))
    ):
        return "image_count"
    return None


def _repeats(turns: Sequence[str]) -> bool:
    return any(map(eq, turns, turns[1:]))


def _repeats_with_tools(turns: Sequence[str]) -> bool:
    """Consecutive turns share a role; tool turns are transparent, and an assistant
    message after a tool run continues the assistant's turn."""
    previous = None
    after_tool = False
    for role in turns:
        if role == TOOL_ROLE:
            after_tool = True
            continue
        if role == previous and not (after_tool and role == "assistant"):
            return True
        previous, after_tool = role, False
    return False


def _bad_calls(role: Any, calls: Any) -> bool:
    return calls is BAD or (calls is not None and role != "assistant")


def _bad_thinking(role: Any, thinking: Any) -> bool:
    if thinking is MISSING:
        return False
    return role != "assistant" or not isinstance(thinking, str)


def _is_tool_turn(role: Any, extra: Any) -> bool:
    return (
        role in TOOL_ROLES or extra.source in TOOL_ROLES or extra.calls is BAD or bool(extra.calls)
    )


def _orphan_tool(roles: Sequence[Any], extras: Sequence[Any]) -> bool:
    """A tool message that answers no call of the assistant message before its run.

    The tool messages right after an assistant message with k calls answer those
    calls: at most k of them, each matching a call by `tool_call_id` (when the calls
    have ids) and by `name` (when it has one).
    """
    calls: Any = None
    answered = 0
    for role, extra in zip(roles, extras):
        if role != TOOL_ROLE:
            calls = extra.calls if role == "assistant" and extra.calls is not BAD else None
            answered = 0
            continue
        if not calls or answered >= len(calls):
            return True
        ids = [call.id for call in calls if call.id is not None]
        if extra.call_id is not None and ids and extra.call_id not in ids:
            return True
        if extra.name is not None and extra.name not in [call.name for call in calls]:
            return True
        answered += 1
    return False


def _any_blank(contents: Sequence[Any], extras: Sequence[Any] | None, is_blank) -> bool:
    if extras is None:
        return any(map(is_blank, contents))
    # An assistant message with tool calls may have empty or null content.
    return any(is_blank(content) and not extra.calls for content, extra in zip(contents, extras))
