"""The core rules of a conversation, and the rules of the parts of a dataset row.

Each is written once (see `rule`); `check.judge.CODES` puts them in their place in the order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..base.markers import BAD
from .conversation import Conversation
from .rule import last_message, per_message, walk, whole_value
from .spec import TOOL_ROLE


@whole_value(
    phrase=("has no messages", "have no messages"),
    raised_by="core",
    meaning="the list is empty",
)
def no_messages(c: Conversation) -> bool:
    """Refuses an empty list of messages."""
    return not c.roles


def _has_bad_message(c: Conversation) -> bool:
    return BAD in c.roles  # identity first: no string equals the BAD marker


@walk(
    phrase=("has a message without a role that's a string", "have a message without a role that's a string"),
    raised_by="core",
    meaning="a message isn't a mapping with a string role",
    where="each message that isn't a mapping with a string role",
    fast=_has_bad_message,
)
def bad_message(c: Conversation) -> Iterator[int | None]:
    """Refuses a message that isn't a mapping with a string role."""
    return (i for i, role in enumerate(c.roles) if role is BAD)


def _has_unknown_role(c: Conversation) -> bool:
    return not c.fmt.role_set.issuperset(c.roles)


@per_message(
    phrase=("has a role that isn't allowed", "have a role that isn't allowed"),
    raised_by="core",
    meaning="a role not in `roles=`",
    fast=_has_unknown_role,
)
def unknown_role(c: Conversation, i: int) -> bool:
    """Refuses a role that isn't one of `roles=`."""
    return c.roles[i] not in c.fmt.role_set


def _has_late_system(c: Conversation) -> bool:
    return "system" in c.roles[1:]


@per_message(
    "system_role",
    phrase=("has a system message that isn't first", "have a system message that isn't first"),
    raised_by="core",
    meaning="a system message that isn't first",
    where="each system message but the first message",
    fast=_has_late_system,
)
def system_position(c: Conversation, i: int) -> bool:
    """Refuses a system message anywhere but first."""
    return i > 0 and c.roles[i] == "system"


@walk(
    "first_role",
    "not_completion",
    phrase=("starts with the wrong role", "start with the wrong role"),
    raised_by="core",
    meaning="the first turn has the wrong role",
    where="the first turn (the first message after the lead); None when there is no turn (a lone system message)",
)
def first_role(c: Conversation) -> Iterator[int | None]:
    """Refuses a conversation without turns, or whose first turn isn't `first_role=`."""
    if not c.turns:
        yield None
    elif c.turns[0] is not BAD and c.turns[0] != c.fmt.first_role:
        yield c.lead


@last_message(
    "prompt",
    phrase=("has a prompt that doesn't end with a user turn", "have a prompt that doesn't end with a user turn"),
    raised_by="dataset types",
    meaning="a conversational prompt doesn't end with a user turn (or a tool turn when tools=True)",
)
def prompt_end(c: Conversation) -> bool:
    """Refuses a prompt that doesn't end with a user turn (or a tool turn, with tools=True)."""
    last = c.roles[-1]
    return last != "user" and not (c.fmt.tools and last == TOOL_ROLE)


@per_message(
    "completion",
    phrase=(
        "has a completion with a turn that isn't the assistant's",
        "have a completion with a turn that isn't the assistant's",
    ),
    raised_by="dataset types",
    meaning="a completion, chosen or rejected value holds a turn that isn't the assistant's (or a tool's "
    "when tools=True); an OpenAI preference output's message isn't the assistant's",
    where="each message of the completion that isn't the assistant's (or a tool's, with tools=True)",
)
def completion_role(c: Conversation, i: int) -> bool:
    """Refuses a completion holding a turn that isn't the assistant's (or a tool's, with tools=True)."""
    role = c.roles[i]
    return role != "assistant" and not (c.fmt.tools and role == TOOL_ROLE)


@walk(
    "alternate",
    phrase=("has roles that don't alternate", "have roles that don't alternate"),
    raised_by="core",
    meaning="two consecutive turns share a role",
    where="each turn whose role repeats the turn before it: the second of the pair",
)
def not_alternating(c: Conversation) -> Iterator[int | None]:
    """Refuses two consecutive turns with the same role. Consecutive tool messages are one
    turn (the answers to one assistant message's parallel calls), with or without
    tools=True. With tools=True, tool turns are transparent, and an assistant message
    after a tool run continues the assistant's turn."""
    turns, lead = c.turns, c.lead
    previous: Any = None
    after_tool = False
    for j, role in enumerate(turns):
        if c.fmt.tools and role == TOOL_ROLE:
            after_tool = True
            continue
        if role == previous and role is not BAD and role != TOOL_ROLE and not (after_tool and role == "assistant"):
            yield lead + j
        previous, after_tool = role, False


@last_message(
    "last_role",
    "whole",
    phrase=("ends with the wrong role", "end with the wrong role"),
    raised_by="core",
    meaning="the last message has the wrong role",
)
def last_role(c: Conversation) -> bool:
    """Refuses a conversation whose last message isn't `last_role=` (a lone system message included)."""
    return c.roles[-1] != c.fmt.last_role


def _has_empty_content(c: Conversation) -> bool:
    if c.extras is None:  # the core check: blank contents, tested in one pass
        return any(map(c.is_blank, c.contents))
    return bool(empty_content.sites(c))


@per_message(
    "no_empty",
    phrase=("has a message with no content", "have a message with no content"),
    raised_by="core",
    meaning="a message has no content",
    reads_contents=True,
    fast=_has_empty_content,
)
def empty_content(c: Conversation, i: int) -> bool:
    """Refuses a message with no content (missing, null, blank text, or parts without
    an image or text). With tools=True, an assistant message with tool calls may
    have none."""
    if not c.is_blank(c.contents[i]):
        return False
    if c.extras is None:
        return True
    x = c.extras[i]
    if c.fmt.legacy_functions:
        return not x.calls and x.function_call is not True
    return not (c.fmt.tools and x.calls)
