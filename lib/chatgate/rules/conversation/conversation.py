"""What the rules read of one conversation, and which part of a row it is.

The rules of `check.table.RULES` (each written once in the module of its room, see `rule`)
read a `Conversation`; this module holds it apart from the table, so the rules' modules need
not import the table that lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .spec import DEVELOPER_ROLE, ChatFormat

WHOLE = "whole"
PROMPT = "prompt"
COMPLETION = "completion"
PARTS = (WHOLE, PROMPT, COMPLETION)


class Conversation:
    """What the rules read of one conversation (see `judge` for the fields), and its
    turns: the roles after the lead (a leading system message and, with harmony=True,
    a developer message right after it). Which part of a row it is decides which
    rules are tried (`active_rules`)."""

    __slots__ = (
        "roles",
        "contents",
        "fmt",
        "is_blank",
        "extras",
        "declared",
        "images",
        "media",
        "lead",
        "turns",
    )

    extras: Any
    """None, or one `messages.Extra` per message. Any to the type checker: the rules that
    read it are in the table with the "extras" switch, so they run only when it is given."""

    def __init__(
        self,
        roles: Sequence[Any],
        contents: Sequence[Any],
        fmt: ChatFormat,
        is_blank: Callable[[Any], bool],
        extras: Sequence[Any] | None = None,
        declared: Any = None,
        images: Any = None,
        media: Any = None,
    ) -> None:
        self.roles = roles
        self.contents = contents
        self.fmt = fmt
        self.is_blank = is_blank
        self.extras = extras
        self.declared = declared
        self.images = images
        self.media = media
        """None, or (audios, videos) of the row: each None (no such column), a count, or BAD."""
        lead = 1 if roles and roles[0] == "system" else 0
        if fmt.harmony and lead < len(roles) and roles[lead] == DEVELOPER_ROLE:
            lead += 1
        self.lead = lead
        self.turns = roles[lead:]
