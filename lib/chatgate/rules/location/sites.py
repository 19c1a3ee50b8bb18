"""Where each rule of `table.RULES` applies in a conversation, and every problem of one.

A rule is written once (`conversation.rule`): the predicate that gives the judge's verdict
also yields the messages where the rule applies (`Rule.sites`, gathered in `SITES`), one by
one instead of stopping at the first. Only `locate` reads the sites, on failing values.

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

Where each code is found (`SITES`, and the codes decided outside the rules):

"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..base.values import blank_checker
from ..check.codes import reason_rank
from ..check.judge import active_rules
from ..check.table import CODES, RULES, VALUE_CODES
from ..conversation.conversation import WHOLE, Conversation
from ..conversation.rule import Code, Rule, Sites
from ..conversation.spec import ChatFormat
from ..formats.messages import Read


class Problem(NamedTuple):
    """One problem of a value: its code, and the index of its message (None: the whole value)."""

    code: str
    message: int | None


class RowProblem(NamedTuple):
    """One problem of a row: its code, its column (None: the row as a whole), its message."""

    code: str
    column: str | None
    message: int | None


SITES: dict[str, Sites] = {rule.code: rule.sites for rule in RULES}
"""For each rule of `table.RULES`, where in a conversation it applies."""

ROW_CODES: frozenset[str] = frozenset(
    entry.code for entry in CODES if isinstance(entry, Code) and entry not in VALUE_CODES
)
"""Codes decided on a dataset row, never on one conversation."""

WHOLE_VALUE_CODES: frozenset[str] = (
    ROW_CODES | {entry.code for entry in VALUE_CODES} | {rule.code for rule in RULES if rule.whole}
)
"""Codes that never point at a message (`first_role` does, unless there is no turn)."""


def where_table() -> str:
    """Where each code is found, as a markdown table (this module's docs).

    >>> where_table().splitlines()[-1]
    '| implicit_prompt | None: decided on a dataset row, not on one conversation (see `locate_rows`) |'
    """
    rows = []
    for entry in CODES:
        if isinstance(entry, Code):
            where = "None: the value as a whole" if entry in VALUE_CODES else (
                "None: decided on a dataset row, not on one conversation (see `locate_rows`)"
            )
        else:
            where = entry.where
        rows.append(f"| {entry.code} | {where} |")
    return "\n".join(["| code | message |", "|---|---|", *rows]) + "\n"


__doc__ = (__doc__ or "") + where_table()


# --- Every problem of a conversation ------------------------------------------------------


def _order(problem: Problem) -> tuple[int, int]:
    """Message order (the whole value first), then table order."""
    return (-1 if problem.message is None else problem.message, reason_rank(problem.code))


def problems_in(
    read: Read,
    fmt: ChatFormat,
    *,
    part: str = WHOLE,
    declared: Any = None,
    images: Any = None,
    media: Any = None,
) -> list[Problem]:
    """Every problem of a list of messages as `judge` reads it (the arguments are `judge`'s).

    >>> problems_in(Read(["user", "user", "bot"], ["a", "", "c"], None), ChatFormat())
    [Problem(code='not_alternating', message=1), Problem(code='empty_content', message=1), Problem(code='unknown_role', message=2)]
    """
    if not read.roles:  # the later rules read the last message: an empty list has no other problem
        return [Problem("no_messages", None)]
    rules, conversation = _rules_and_conversation(read, fmt, part, declared, images, media)
    found = [Problem(rule.code, i) for rule in rules for i in rule.sites(conversation)]
    return sorted(found, key=_order)


def _rules_and_conversation(
    read: Read, fmt: ChatFormat, part: str, declared: Any, images: Any, media: Any = None
) -> tuple[tuple[Rule, ...], Conversation]:
    """The rules in force for a list of messages as `judge` reads it, and the conversation they read."""
    rules = active_rules(
        fmt,
        part,
        extras=read.extras is not None,
        declared=declared is not None,
        images=images is not None,
    )
    conversation = Conversation(
        read.roles, read.contents, fmt, blank_checker(fmt.text_key), read.extras, declared, images, media
    )
    return rules, conversation


def first_site(
    read: Read,
    code: str,
    fmt: ChatFormat,
    *,
    part: str = WHOLE,
    declared: Any = None,
    images: Any = None,
) -> int | None:
    """Where `problems_in` puts the first problem of `code` (the value as a whole first, then the
    lowest message), found from the rules of that code alone: a quarantine locates each failing
    row's code, and the other rules' sites would be read for nothing.

    >>> first_site(Read(["user", "user", "bot"], ["a", "", "c"], None), "empty_content", ChatFormat())
    1
    """
    if not read.roles:
        return None
    rules, conversation = _rules_and_conversation(read, fmt, part, declared, images)
    sites = [site for rule in rules if rule.code == code for site in rule.sites(conversation)]
    if not sites or None in sites:
        return None
    return min(site for site in sites if site is not None)
