"""A rule of a conversation, written once: one small object from which the rest is derived.

A rule is its code; what users read of it (`phrase`, the step notes' "1 has ...", and
`meaning` and `raised_by`, the codes' table in `check.codes`); the switches it needs
(`when`: options of the format, inputs given to the judge, parts of a row, named in
`check.table.SWITCHES`); and one predicate that says where it applies, written in one of
four shapes:

| shape | the predicate | where the rule applies (`sites`) |
|---|---|---|
| `per_message` | `test(c, i)`: does message i break the rule? | each message with a role that the test refuses |
| `whole_value` | `test(c)`: does the conversation break it? | None: the value as a whole |
| `last_message` | `test(c)`: does the conversation break it? | the last message (when it has a role) |
| `walk` | a generator of the sites | each site it yields |

From it come both the judge's verdict (`applies`: is there a site? It stops at the first)
and every site (`sites`, for `location`), so a rule's logic is written once. A message
without a role (`markers.BAD`) is `bad_message`'s only: the sites pass over it, and since
`bad_message` comes before every rule of messages in the table, the judge never asks those
rules about a conversation that has one (their verdict doesn't skip it, to stay cheap).

Where a benchmark showed the derived verdict slower on a hot path, a rule carries a
hand-tuned test (`fast=`), which is then its `applies`. Measured per conversation of the
sample's data (`chatgate.sample`, about 3 KB of JSON in 6 messages; CPU time), the derived
verdicts of `bad_message`, `unknown_role`, `system_position` and `developer_position` cost
0.3 to 0.7 µs more than a membership test, and `empty_content`'s 0.8 µs more than one pass
of `is_blank`. All but `developer_position` (Harmony's) run on every conversation of the
core check, where together they made a native value's check (11 µs) about 15% slower; so
these five keep theirs. Every other rule's derived verdict is within 0.3 µs of the
hand-written one it replaced (a row under the options costs 15 to 25 µs).
tests/test_rules_definitions.py pins each fast test to the rule's sites over drawn
conversations.

The codes decided before or beside the rules of a conversation (a value's size, a dataset
row's fields) are `Code`s: a code and what users read of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from types import FunctionType
from typing import Any, NamedTuple

from ..base.markers import BAD
from .conversation import Conversation

Test = Callable[[Conversation], bool]
"""A test of one conversation: does it break the rule?"""

MessageTest = Callable[[Conversation, int], bool]
"""A test of message i of a conversation (one with a role): does it break the rule?"""

Sites = Callable[[Conversation], Sequence[int | None]]
"""Where a rule applies in a conversation: message indices, or [None] for the whole value."""

Walk = Callable[[Conversation], Iterator[int | None]]
"""A generator of the sites of a rule, in message order."""

EACH_MESSAGE = "each message the rule refuses"
WHOLE_VALUE = "None: the value as a whole"
LAST_MESSAGE = "the last message"


class Code(NamedTuple):
    """A problem code and what users read of it: `phrase` (one row, several rows), the option
    or type that raises it, and what it means."""

    code: str
    phrase: tuple[str, str]
    raised_by: str
    meaning: str


class Rule(NamedTuple):
    """A rule of a conversation (see the module): its code, its verdict, the switches it needs,
    whether it reads the contents, where it applies, and what users read of it."""

    code: str
    applies: Test
    when: tuple[str, ...]
    reads_contents: bool
    sites: Sites
    phrase: tuple[str, str]
    raised_by: str
    meaning: str
    where: str
    """Where its sites are, in words (the table of `location.sites`)."""
    whole: bool
    """Does it apply to the value as a whole, never at a message?"""
    fast: bool
    """Is `applies` a hand-tuned test rather than the one derived from `sites`?"""


class _Words(NamedTuple):
    """What users read of a rule, and where it applies, in words."""

    phrase: tuple[str, str]
    raised_by: str
    meaning: str
    where: str


def _named(applies: Test, definition: Callable[..., Any]) -> Test:
    """`applies` under the definition's name and docstring (a rule's verdict reads as the rule)."""
    if isinstance(applies, FunctionType):
        applies.__name__ = applies.__qualname__ = definition.__name__
        applies.__doc__ = definition.__doc__
    return applies


def _make(
    definition: Callable[..., Any],
    applies: Test,
    sites: Sites,
    when: tuple[str, ...],
    words: _Words,
    *,
    reads_contents: bool,
    fast: Test | None,
    whole: bool = False,
) -> Rule:
    verdict = _named(fast if fast is not None else applies, definition)
    return Rule(
        definition.__name__,
        verdict,
        when,
        reads_contents,
        sites,
        words.phrase,
        words.raised_by,
        words.meaning,
        words.where,
        whole,
        fast is not None,
    )


def per_message(
    *when: str,
    phrase: tuple[str, str],
    raised_by: str,
    meaning: str,
    where: str = EACH_MESSAGE,
    reads_contents: bool = False,
    fast: Test | None = None,
) -> Callable[[MessageTest], Rule]:
    """A rule of single messages: it applies at each message with a role that `test` refuses."""

    def rule(test: MessageTest) -> Rule:
        def applies(c: Conversation) -> bool:
            return any(map(test, repeat(c), range(len(c.roles))))

        def sites(c: Conversation) -> list[int | None]:
            return [i for i, role in enumerate(c.roles) if role is not BAD and test(c, i)]

        words = _Words(phrase, raised_by, meaning, where)
        return _make(test, applies, sites, when, words, reads_contents=reads_contents, fast=fast)

    return rule


def whole_value(
    *when: str,
    phrase: tuple[str, str],
    raised_by: str,
    meaning: str,
    where: str = WHOLE_VALUE,
    reads_contents: bool = False,
) -> Callable[[Test], Rule]:
    """A rule of the whole value: it applies at no message (None) when `test` refuses the conversation."""

    def rule(test: Test) -> Rule:
        def sites(c: Conversation) -> list[int | None]:
            return [None] if test(c) else []

        words = _Words(phrase, raised_by, meaning, where)
        return _make(test, test, sites, when, words, reads_contents=reads_contents, fast=None, whole=True)

    return rule


def last_message(
    *when: str, phrase: tuple[str, str], raised_by: str, meaning: str, where: str = LAST_MESSAGE
) -> Callable[[Test], Rule]:
    """A rule of the last message: it applies there (when it has a role) if `test` refuses the
    conversation. (The conversation is not empty: `no_messages` comes first.)"""

    def rule(test: Test) -> Rule:
        def applies(c: Conversation) -> bool:
            return c.roles[-1] is not BAD and test(c)

        def sites(c: Conversation) -> list[int | None]:
            return [len(c.roles) - 1] if applies(c) else []

        words = _Words(phrase, raised_by, meaning, where)
        return _make(test, applies, sites, when, words, reads_contents=False, fast=None)

    return rule


_NONE: Any = object()


def walk(
    *when: str,
    phrase: tuple[str, str],
    raised_by: str,
    meaning: str,
    where: str,
    reads_contents: bool = False,
    fast: Test | None = None,
) -> Callable[[Walk], Rule]:
    """A rule that walks the conversation (turn order, tool answers): `found` yields its sites."""

    def rule(found: Walk) -> Rule:
        def applies(c: Conversation) -> bool:
            return next(found(c), _NONE) is not _NONE

        def sites(c: Conversation) -> list[int | None]:
            return list(found(c))

        words = _Words(phrase, raised_by, meaning, where)
        return _make(found, applies, sites, when, words, reads_contents=reads_contents, fast=fast)

    return rule
