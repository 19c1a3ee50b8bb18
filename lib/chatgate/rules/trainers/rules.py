"""The rules of the trainers' options and of the sample profile.

The options that trainers' own checks add to the core (`min_messages=`, `allowed_keys=`,
`weight_key=`, `legacy_functions=`, `require_roles=`), and the conversation sample type
(`profile="sample"`): no tool turns, a user and an assistant turn at least. (The options of
content parts and images are the rules of `formats.parts`; Mistral's, `trainers.mistral`.)
Also a peers' rule of contents: `placeholder_contents=True` (`placeholder_content`).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral
from typing import Any

from ..base.markers import BAD, MISSING
from ..base.values import is_sequence
from ..conversation.conversation import Conversation
from ..conversation.rule import per_message, whole_value
from ..conversation.spec import PLACEHOLDERS, TOOL_ROLES


@whole_value(
    "min_messages",
    "whole",
    phrase=("has too few messages", "have too few messages"),
    raised_by="min_messages=",
    meaning="fewer messages than `min_messages=`",
)
def too_few_messages(c: Conversation) -> bool:
    """Refuses a conversation of fewer messages than `min_messages=`."""
    least: int = c.fmt.min_messages  # type: ignore[assignment]  # set: the rule's switch is on
    return len(c.roles) < least


@per_message(
    "allowed_keys",
    "extras",
    phrase=("has a message key that isn't allowed", "have a message key that isn't allowed"),
    raised_by="allowed_keys=",
    meaning="a message holds a key outside `allowed_keys=` (and the role and content keys)",
)
def unknown_key(c: Conversation, i: int) -> bool:
    """Refuses a message holding a key outside `allowed_keys=` (the role and content keys aside)."""
    return bool(c.extras[i].unknown_key)


@per_message(
    "weight_key",
    "extras",
    phrase=("has a weight that isn't 0 or 1", "have a weight that isn't 0 or 1"),
    raised_by="weight_key=",
    meaning="a message's weight isn't the integer 0 or 1",
)
def bad_weight(c: Conversation, i: int) -> bool:
    """Refuses a value under `weight_key=` that isn't the integer 0 or 1 (true and false
    are refused: JSON Schema's integers are not booleans)."""
    weight = c.extras[i].weight
    return not (weight is MISSING or _is_zero_or_one(weight))


@per_message(
    "legacy_functions",
    "extras",
    phrase=("has a malformed function call", "have a malformed function call"),
    raised_by="legacy_functions=True",
    meaning="a `function_call` isn't a mapping with a name, or is on a message that isn't the assistant's",
)
def bad_function_call(c: Conversation, i: int) -> bool:
    """Refuses a legacy `function_call` that isn't a mapping with a name, or one on a message
    that isn't the assistant's."""
    call = c.extras[i].function_call
    return call is BAD or (call is not None and c.roles[i] != "assistant")


@per_message(
    "profile",
    "extras",
    phrase=("has a tool turn", "have a tool turn"),
    raised_by='profile="sample"',
    meaning="a tool or function turn, or an assistant message with tool calls",
)
def tool_turn(c: Conversation, i: int) -> bool:
    """Refuses a tool or function turn, and an assistant message with tool calls (malformed
    ones too). Tool calls on another message are no turn of a tool: the sample type reads
    them nowhere, so they pass."""
    x, role = c.extras[i], c.roles[i]
    return role in TOOL_ROLES or x.source in TOOL_ROLES or (role == "assistant" and (x.calls is BAD or bool(x.calls)))


@whole_value(
    "profile",
    "whole",
    phrase=("lacks a user turn or an assistant turn", "lack a user turn or an assistant turn"),
    raised_by='profile="sample"',
    meaning="no user turn or no assistant turn",
)
def missing_turn(c: Conversation) -> bool:
    """Refuses a conversation without a user turn or without an assistant turn."""
    turns = c.turns
    return not ("user" in turns and "assistant" in turns)


@whole_value(
    "require_roles",
    "whole",
    phrase=("lacks a required role", "lack a required role"),
    raised_by="require_roles=",
    meaning="a role of `require_roles=` never appears",
)
def missing_role(c: Conversation) -> bool:
    """Refuses a conversation in which a role of `require_roles=` never appears."""
    roles = c.roles
    return not all(role in roles for role in c.fmt.require_roles)


def _is_zero_or_one(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool) and value in (0, 1)


@per_message(
    "placeholder_contents",
    phrase=(
        "has a message whose whole text is a placeholder such as NaN or null",
        "have a message whose whole text is a placeholder such as NaN or null",
    ),
    raised_by="placeholder_contents=True",
    meaning="a message's whole text is a serialised missing value: NaN, null, None or undefined "
    "(any case, spaces around)",
    reads_contents=True,
)
def placeholder_content(c: Conversation, i: int) -> bool:
    """Refuses a message whose whole text is a serialised missing value (`spec.PLACEHOLDERS`):
    a string content, or a list of text parts only, whose text is `NaN`, `null`, `None` or
    `undefined`, in any case, with spaces around or not."""
    return is_placeholder(c.contents[i], c.fmt.text_key)


def is_placeholder(content: Any, text_key: str = "text") -> bool:
    """Is a content's whole text a serialised missing value?

    >>> is_placeholder(" NaN "), is_placeholder([{"type": "text", "text": "null"}]), is_placeholder("None of them")
    (True, True, False)
    """
    if isinstance(content, str):
        return content.strip().lower() in PLACEHOLDERS
    if not is_sequence(content) or not len(content):
        return False
    texts = []
    for part in content:
        text = part.get(text_key) if isinstance(part, Mapping) and part.get("type") == "text" else None
        if not isinstance(text, str):
            return False
        texts.append(text)
    return "".join(texts).strip().lower() in PLACEHOLDERS
