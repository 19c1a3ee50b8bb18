"""The problem codes of the chat-format check, in the order they are checked.

The order is the contract: the reported code of a conversation is the first one
in this order that applies anywhere in it.
"""

from __future__ import annotations

REASONS: tuple[str, ...] = (
    "not_messages",
    "no_messages",
    "bad_message",
    "unknown_role",
    "system_position",
    "first_role",
    "not_alternating",
    "last_role",
    "empty_content",
)

# What a failing row "has", as (one row, several rows), for the step notes.
PHRASES: dict[str, tuple[str, str]] = {
    "not_messages": ("isn't a list of messages", "aren't lists of messages"),
    "no_messages": ("has no messages", "have no messages"),
    "bad_message": (
        "has a message without a role that's a string",
        "have a message without a role that's a string",
    ),
    "unknown_role": ("has a role that isn't allowed", "have a role that isn't allowed"),
    "system_position": (
        "has a system message that isn't first",
        "have a system message that isn't first",
    ),
    "first_role": ("starts with the wrong role", "start with the wrong role"),
    "not_alternating": ("has roles that don't alternate", "have roles that don't alternate"),
    "last_role": ("ends with the wrong role", "end with the wrong role"),
    "empty_content": (
        "has a message with no content",
        "have a message with no content",
    ),
}


def phrase(reason: str, count: int) -> str:
    """'1 has roles that don't alternate (`not_alternating`)' and the like."""
    one, many = PHRASES.get(reason, ("fails", "fail"))
    return f"{count} {one if count == 1 else many} (`{reason}`)"
