"""Where each rule of `judge.RULES` applies in a conversation, and every problem of one.

Each rule of the table has a twin here (`SITES`) that finds the messages where it
applies, one by one, instead of stopping at the first: the same test, carried on.
Only `locate` reads them, on failing values: `judge`'s hot path is not touched.

Where each code is found (`SITES`):

| code | message |
|---|---|
| not_messages, no_messages, too_few_messages, missing_turn, missing_role, too_many_images, image_count | None: the value as a whole |
| bad_tools | None: the row's `tools` column, not a message |
| mixed_format, not_text, not_label, empty_text, same_pair, implicit_prompt | None: decided on a dataset row, not on one conversation (see `locate_rows`) |
| bad_message | each message that isn't a mapping with a string role |
| unknown_key, bad_content_type, bad_image_url, image_too_large, bad_weight, bad_tool_call, bad_function_call, bad_thinking, tool_turn, unknown_role, image_role, unknown_tool, empty_content | each message the rule refuses |
| system_position | each system message but the first message |
| developer_position | each developer message after the lead (the leading system and developer messages) |
| first_role | the first turn (the first message after the lead); None when there is no turn (a lone system message) |
| prompt_end, last_role | the last message |
| completion_role | each message of the completion that isn't the assistant's (or a tool's, with tools=True) |
| orphan_tool | each tool message that answers no call (one that does not answer counts as no answer) |
| not_alternating | each turn whose role repeats the turn before it: the second of the pair |

A part of a dataset row is judged on its own list (`part=`): the index of a
prompt's problem (`prompt_end`, ...) is within the prompt, of a completion's
(`completion_role`, ...) within the completion; a whole conversation made of a
prompt and a completion is one list, the prompt's messages first.

"Every problem" (`problems`) is each rule of the format's table that the value
breaks, once at each message where it breaks it (once, with None, for a rule of
the whole value), with three more rules:

- a value that holds no list of messages has one problem, `not_messages`, and an
  empty list one, `no_messages`;
- a message that isn't a mapping with a string role is `bad_message` and nothing
  else: the other rules pass over it (it has no role to place and no turn to
  judge), so two such messages in a row are not `not_alternating`;
- the problems come in message order (the value's own problems first), and at
  one message in table order.

So the first problem in `ALL_REASONS` order is the check's code (the rules a
bad message also breaks come after `bad_message`), and `locate(value, code)` is
the message of the first problem with that code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..base.markers import BAD, MISSING
from ..base.values import blank_checker
from ..check.codes import reason_rank
from ..check.judge import (
    _answers,
    _is_zero_or_one,
    active_rules,
    bad_tools,
    image_count,
    last_role,
    missing_role,
    missing_turn,
    no_messages,
    prompt_end,
    too_few_messages,
)
from ..conversation.conversation import WHOLE, Conversation
from ..conversation.spec import DEVELOPER_ROLE, TOOL_ROLE, TOOL_ROLES, ChatFormat
from ..formats.messages import Read
from ..formats.parts import content_kind_ok, has_bad_image_url, has_large_image, image_parts, too_many_images


class Problem(NamedTuple):
    """One problem of a value: its code, and the index of its message (None: the whole value)."""

    code: str
    message: int | None


class RowProblem(NamedTuple):
    """One problem of a row: its code, its column (None: the row as a whole), its message."""

    code: str
    column: str | None
    message: int | None


Sites = Callable[[Conversation], Sequence[int | None]]
"""Where a rule applies in a conversation: message indices, or [None] for the whole value."""

ROW_CODES: frozenset[str] = frozenset(
    {"mixed_format", "not_text", "not_label", "empty_text", "same_pair", "implicit_prompt", "bad_input", "output_count"}
)
"""Codes decided on a dataset row, never on one conversation."""


# --- Where each rule applies --------------------------------------------------------------
# Each mirrors the rule of the same name in `judge`, one message at a time: it finds a site
# exactly where the rule finds a breach, except at messages without a role (see above).


def _whole(rule: Callable[[Conversation], bool]) -> Sites:
    """A rule of the whole value: [None] when it applies."""
    return lambda c: [None] if rule(c) else []


def _each(test: Callable[[Conversation, int], bool]) -> Sites:
    """A rule of single messages: each message with a role that `test` refuses."""
    return lambda c: [i for i, role in enumerate(c.roles) if role is not BAD and test(c, i)]


def _last(rule: Callable[[Conversation], bool]) -> Sites:
    """A rule of the last message (the conversation is not empty here)."""

    def sites(c: Conversation) -> list[int | None]:
        last = len(c.roles) - 1
        return [last] if c.roles[last] is not BAD and rule(c) else []

    return sites


def _bad_messages(c: Conversation) -> list[int | None]:
    return [i for i, role in enumerate(c.roles) if role is BAD]


def _unknown_key(c: Conversation, i: int) -> bool:
    return bool(c.extras[i].unknown_key)


def _bad_content_type(c: Conversation, i: int) -> bool:
    fmt = c.fmt
    return not content_kind_ok(c.contents[i], fmt.content_types, fmt.part_types, fmt.text_key)


def _bad_image_url(c: Conversation, i: int) -> bool:
    return has_bad_image_url(c.contents[i])


def _image_too_large(c: Conversation, i: int) -> bool:
    return has_large_image(c.contents[i], c.fmt.max_image_bytes)  # type: ignore[arg-type]  # set: switch on


def _image_role(c: Conversation, i: int) -> bool:
    return c.roles[i] not in c.fmt.image_roles and image_parts(c.contents[i]) > 0  # type: ignore[operator]


def _bad_weight(c: Conversation, i: int) -> bool:
    weight = c.extras[i].weight
    return not (weight is MISSING or _is_zero_or_one(weight))


def _bad_tool_call(c: Conversation, i: int) -> bool:
    calls = c.extras[i].calls
    return calls is BAD or (calls is not None and c.roles[i] != "assistant")


def _bad_function_call(c: Conversation, i: int) -> bool:
    call = c.extras[i].function_call
    return call is BAD or (call is not None and c.roles[i] != "assistant")


def _bad_thinking(c: Conversation, i: int) -> bool:
    thinking = c.extras[i].thinking
    return thinking is not MISSING and (c.roles[i] != "assistant" or not isinstance(thinking, str))


def _tool_turn(c: Conversation, i: int) -> bool:
    x = c.extras[i]
    return c.roles[i] in TOOL_ROLES or x.source in TOOL_ROLES or x.calls is BAD or bool(x.calls)


def _unknown_role(c: Conversation, i: int) -> bool:
    return c.roles[i] not in c.fmt.role_set


def _system_position(c: Conversation, i: int) -> bool:
    return i > 0 and c.roles[i] == "system"


def _developer_position(c: Conversation, i: int) -> bool:
    return i >= c.lead and c.roles[i] == DEVELOPER_ROLE


def _first_role(c: Conversation) -> list[int | None]:
    if not c.turns:
        return [None]
    first = c.turns[0]
    return [c.lead] if first is not BAD and first != c.fmt.first_role else []


def _completion_role(c: Conversation, i: int) -> bool:
    role = c.roles[i]
    return role != "assistant" and not (c.fmt.tools and role == TOOL_ROLE)


def _orphan_tools(c: Conversation) -> list[int | None]:
    """`judge.orphan_tool`'s walk, carried on past each orphan (which answers nothing)."""
    found: list[int | None] = []
    calls: Any = None
    answered = 0
    for i, (role, extra) in enumerate(zip(c.roles, c.extras)):
        if role != TOOL_ROLE:
            calls = extra.calls if role == "assistant" and extra.calls is not BAD else None
            answered = 0
        elif not calls or answered >= len(calls) or not _answers(extra, calls):
            found.append(i)
        else:
            answered += 1
    return found


def _repeated_turns(c: Conversation) -> list[int | None]:
    """`judge.not_alternating`'s walk, carried on past each repeat."""
    turns, lead = c.turns, c.lead
    if not c.fmt.tools:
        return [lead + j for j in range(1, len(turns)) if turns[j] is not BAD and turns[j] == turns[j - 1]]
    found: list[int | None] = []
    previous: Any = None
    after_tool = False
    for j, role in enumerate(turns):
        if role == TOOL_ROLE:
            after_tool = True
            continue
        if role is not BAD and role == previous and not (after_tool and role == "assistant"):
            found.append(lead + j)
        previous, after_tool = role, False
    return found


def _unknown_tool(c: Conversation, i: int) -> bool:
    calls, declared = c.extras[i].calls, c.declared
    # Malformed calls and a malformed tools column are bad_tool_call's and bad_tools'.
    if not calls or calls is BAD or declared is BAD:
        return False
    return any(call.name not in declared for call in calls)


def _empty_content(c: Conversation, i: int) -> bool:
    if not c.is_blank(c.contents[i]):
        return False
    if c.extras is None:
        return True
    x = c.extras[i]
    if c.fmt.legacy_functions:
        return not x.calls and x.function_call is not True
    return not (c.fmt.tools and x.calls)


SITES: dict[str, Sites] = {
    "no_messages": _whole(no_messages),
    "too_few_messages": _whole(too_few_messages),
    "bad_message": _bad_messages,
    "unknown_key": _each(_unknown_key),
    "bad_content_type": _each(_bad_content_type),
    "bad_image_url": _each(_bad_image_url),
    "image_too_large": _each(_image_too_large),
    "bad_weight": _each(_bad_weight),
    "bad_tool_call": _each(_bad_tool_call),
    "bad_function_call": _each(_bad_function_call),
    "bad_thinking": _each(_bad_thinking),
    "bad_tools": _whole(bad_tools),
    "tool_turn": _each(_tool_turn),
    "unknown_role": _each(_unknown_role),
    "image_role": _each(_image_role),
    "system_position": _each(_system_position),
    "developer_position": _each(_developer_position),
    "missing_turn": _whole(missing_turn),
    "missing_role": _whole(missing_role),
    "first_role": _first_role,
    "prompt_end": _last(prompt_end),
    "completion_role": _each(_completion_role),
    "orphan_tool": _orphan_tools,
    "not_alternating": _repeated_turns,
    "last_role": _last(last_role),
    "unknown_tool": _each(_unknown_tool),
    "empty_content": _each(_empty_content),
    "too_many_images": _whole(too_many_images),
    "image_count": _whole(image_count),
}
"""For each rule of `judge.RULES`, where in a conversation it applies."""

WHOLE_VALUE_CODES: frozenset[str] = ROW_CODES | {
    "too_large",
    "not_messages",
    "no_messages",
    "too_few_messages",
    "bad_tools",
    "missing_turn",
    "missing_role",
    "too_many_images",
    "image_count",
}
"""Codes that never point at a message (`first_role` does, unless there is no turn)."""


# --- Every problem of a conversation ------------------------------------------------------


def _order(problem: Problem) -> tuple[int, int]:
    """Message order (the whole value first), then table order."""
    return (-1 if problem.message is None else problem.message, reason_rank(problem.code))


def problems_in(
    read: Read, fmt: ChatFormat, *, part: str = WHOLE, declared: Any = None, images: Any = None
) -> list[Problem]:
    """Every problem of a list of messages as `judge` reads it (the arguments are `judge`'s).

    >>> problems_in(Read(["user", "user", "bot"], ["a", "", "c"], None), ChatFormat())
    [Problem(code='not_alternating', message=1), Problem(code='empty_content', message=1), Problem(code='unknown_role', message=2)]
    """
    if not read.roles:  # the later rules read the last message: an empty list has no other problem
        return [Problem("no_messages", None)]
    rules = active_rules(
        fmt,
        part,
        extras=read.extras is not None,
        declared=declared is not None,
        images=images is not None,
    )
    conversation = Conversation(
        read.roles, read.contents, fmt, blank_checker(fmt.text_key), read.extras, declared, images
    )
    found = [Problem(rule.code, i) for rule in rules for i in SITES[rule.code](conversation)]
    return sorted(found, key=_order)
