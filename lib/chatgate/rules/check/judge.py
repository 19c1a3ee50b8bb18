"""The judge: the first rule of the table that a conversation breaks gives its code.

Every path (the reference check of one value, the Arrow batch checker, the row
checks of the dataset types, every engine) turns a conversation into lists (the
role of each message, its content and, for the options beyond the core check, a
`messages.Extra` per message) and hands them to `judge`, which tries the rules of
`table.RULES` in order. Only the way a content is found blank depends on how it was
decoded, so that is passed in.

Each rule is written once, in the module of its room (`conversation.rule` says how), and
has its place in `table.CODES`. Its `when` names the switches it needs
(`table.SWITCHES`): a rule is tried only when they are all on, so a format's active rules
are chosen once (`active_rules`). The dataset types judge parts of a row: a prompt
(`part="prompt"`), a completion (`part="completion"`) or a whole conversation
(`part="whole"`, the default).

The codes that need no conversation to decide (`not_messages`: the value holds
none; the standard-format codes; `same_pair` and `implicit_prompt`, which compare
two values of a row) are not rules: `table.CODES` places them among the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from ..base.markers import BAD
from ..conversation.conversation import COMPLETION, PROMPT, WHOLE, Conversation
from ..conversation.rule import Rule, Test
from ..conversation.spec import ChatFormat
from .table import RULES, SWITCHES, switches

__all__ = [
    "BAD",
    "COMPLETION",
    "PROMPT",
    "RULES",
    "SWITCHES",
    "WHOLE",
    "Rule",
    "active_rules",
    "first_code",
    "format_codes",
    "judge",
    "switches",
]


def active_rules(
    fmt: ChatFormat,
    part: str = WHOLE,
    *,
    extras: bool = False,
    declared: bool = False,
    images: bool = False,
) -> tuple[Rule, ...]:
    """The rules of `RULES` whose switches are all on, in order; chosen once per format and inputs.

    >>> [rule.code for rule in active_rules(ChatFormat(alternate=False, allow_empty=True))]
    ['no_messages', 'bad_message', 'unknown_role', 'system_position']
    """
    return _rules_for(fmt, (part, extras, declared, images))[0]


Chosen = tuple[tuple[Rule, ...], tuple[tuple[str, Test], ...]]
"""A format's active rules under some inputs, and their (code, verdict) pairs for the judge's loop."""

RulesByInputs = dict[tuple[str, bool, bool, bool], Chosen]
"""A format's active rules, per part and inputs given (the key of `_rules_for`)."""

_last: tuple[ChatFormat | None, RulesByInputs] = (None, {})
"""The format judged last and its rules: a batch judges every conversation under one format,
so the cache is found by identity, without hashing the format (one tuple, swapped whole)."""


@lru_cache(maxsize=256)
def _rules_of(fmt: ChatFormat) -> RulesByInputs:
    """The rules chosen so far under `fmt` (equal formats share them)."""
    return {}


def _rules_table(fmt: ChatFormat) -> RulesByInputs:
    global _last
    last = _last
    if last[0] is fmt:
        return last[1]
    table = _rules_of(fmt)
    _last = (fmt, table)
    return table


def _rules_for(fmt: ChatFormat, key: tuple[str, bool, bool, bool]) -> Chosen:
    table = _rules_table(fmt)
    chosen = table.get(key)
    if chosen is None:
        part, extras, declared, images = key
        on = switches(fmt, part, extras=extras, declared=declared, images=images)
        rules = tuple(rule for rule in RULES if on.issuperset(rule.when))
        chosen = (rules, tuple((rule.code, rule.applies) for rule in rules))
        table[key] = chosen
    return chosen


def format_codes(fmt: ChatFormat) -> tuple[str, ...]:
    """The codes one conversation can get under `fmt`, in `ALL_REASONS` order.

    (Codes that need another column, such as `unknown_tool`, are the row checks'.)

    >>> format_codes(ChatFormat(roles=["user", "assistant"], alternate=False, allow_empty=True))
    ('too_large', 'not_messages', 'no_messages', 'bad_message', 'unknown_role')
    >>> format_codes(ChatFormat(tools=True))[-3:]
    ('orphan_tool', 'not_alternating', 'empty_content')
    """
    first = ("too_large",) if fmt.max_value_bytes is not None else ()
    return (*first, "not_messages", *(rule.code for rule in active_rules(fmt, extras=True)))


def first_code(rules: Sequence[Rule], conversation: Conversation) -> str | None:
    """The code of the first of `rules` that `conversation` breaks, or None."""
    for rule in rules:
        if rule.applies(conversation):
            return rule.code
    return None


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
    media: Any = None,
) -> str | None:
    """The first problem code of a list of messages, or None when it is well formed.

    `roles[i]` is the role string of message i or `BAD`; `contents[i]` its content;
    `extras[i]` (for the options beyond the core check) what else the rules read of
    it. `part` says which part of a row the messages are: a whole conversation, a
    prompt (it must end with a user turn, or a tool turn with tools=True; the last
    role isn't checked) or a completion (assistant turns, and tool turns with
    tools=True, only; neither first nor last role is checked; its tool messages
    may answer calls of the prompt). `declared` is the set of function names the
    row's tools declare (None: no tools column; `BAD`: malformed), `images` the
    number of images of the row (None: no images column; `BAD`: malformed), `media` the
    row's (audios, videos) likewise, or None.

    >>> judge(["user", "user"], ["a", "b"], ChatFormat(), lambda c: not c)
    'not_alternating'
    """
    key = (part, extras is not None, declared is not None, images is not None)
    # `active_rules`, with its lookups inline: this runs once per conversation.
    last = _last
    chosen = last[1].get(key) if last[0] is fmt else None
    if chosen is None:
        chosen = _rules_for(fmt, key)
    conversation = Conversation(roles, contents, fmt, is_blank, extras, declared, images, media)
    for code, applies in chosen[1]:
        if applies(conversation):
            return code
    return None
