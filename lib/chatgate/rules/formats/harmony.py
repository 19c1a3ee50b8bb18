"""Harmony's rules (harmony=True) and the assistant's reasoning (`thinking_key=`).

Harmony adds the `developer` role, whose message may only come at the start (after an
optional system message), once; and a thinking value (under `thinking_key=`, or
`thinking` with harmony=True) must be the assistant's text.
"""

from __future__ import annotations

from ..base.markers import MISSING
from ..conversation.conversation import Conversation
from ..conversation.rule import per_message
from ..conversation.spec import DEVELOPER_ROLE


@per_message(
    "thinking",
    "extras",
    phrase=("has thinking that isn't the assistant's text", "have thinking that isn't the assistant's text"),
    raised_by="harmony=True / thinking_key=",
    meaning="a thinking value on a message that isn't the assistant's, or one that isn't a string",
)
def bad_thinking(c: Conversation, i: int) -> bool:
    """Refuses a thinking value on a message that isn't the assistant's, or one that isn't a string."""
    thinking = c.extras[i].thinking
    return thinking is not MISSING and (c.roles[i] != "assistant" or not isinstance(thinking, str))


def _has_late_developer(c: Conversation) -> bool:
    return DEVELOPER_ROLE in c.roles[c.lead :]


@per_message(
    "harmony",
    phrase=("has a developer message that isn't at the start", "have a developer message that isn't at the start"),
    raised_by="harmony=True",
    meaning="a developer message that isn't at the start (after an optional system message), or a second one",
    where="each developer message after the lead (the leading system and developer messages)",
    fast=_has_late_developer,
)
def developer_position(c: Conversation, i: int) -> bool:
    """Refuses a developer message that isn't at the start (after an optional system
    message), and a second one."""
    return i >= c.lead and c.roles[i] == DEVELOPER_ROLE
