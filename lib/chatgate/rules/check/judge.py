"""The rules of a conversation, as one ordered table: the first rule that applies gives the code.

Every path (the reference check of one value, the Arrow batch checker, the row
checks of the dataset types, every engine) turns a conversation into lists (the
role of each message, its content and, for the options beyond the core check, a
`messages.Extra` per message) and hands them to `judge`, which tries the rules of
`RULES` in order. Only the way a content is found blank depends on how it was
decoded, so that is passed in.

Each rule is a small function of a `Conversation` that returns True when the
conversation breaks it, named after the code it gives. Its `when` names the
switches it needs (`SWITCHES`): a rule is tried only when they are all on, so a
format's active rules are chosen once (`active_rules`). The dataset types judge
parts of a row: a prompt (`part="prompt"`), a completion (`part="completion"`) or
a whole conversation (`part="whole"`, the default).

The codes that need no conversation to decide (`not_messages`: the value holds
none; the standard-format codes; `same_pair` and `implicit_prompt`, which compare
two values of a row) are not in the table; `codes.ALL_REASONS` places them
around its codes, whose order is the table's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from numbers import Integral
from operator import eq
from typing import Any, NamedTuple

from ..base.markers import BAD, MISSING
from ..conversation.conversation import COMPLETION, PROMPT, WHOLE, Conversation
from ..conversation.spec import DEVELOPER_ROLE, TOOL_ROLE, TOOL_ROLES, ChatFormat
from ..formats.parts import bad_content_type, bad_image_url, image_role, image_too_large, too_many_images

# --- The rules, in the order of the table ---------------------------------------------------


def no_messages(c: Conversation) -> bool:
    """Refuses an empty list of messages."""
    return not c.roles


def too_few_messages(c: Conversation) -> bool:
    """Refuses a conversation of fewer messages than `min_messages=`."""
    least: int = c.fmt.min_messages  # type: ignore[assignment]  # set: the rule's switch is on
    return len(c.roles) < least


def bad_message(c: Conversation) -> bool:
    """Refuses a message that isn't a mapping with a string role."""
    return BAD in c.roles  # identity first: no string equals the BAD marker


def unknown_key(c: Conversation) -> bool:
    """Refuses a message holding a key outside `allowed_keys=` (the role and content keys aside)."""
    return any(x.unknown_key for x in c.extras)


def bad_weight(c: Conversation) -> bool:
    """Refuses a value under `weight_key=` that isn't the integer 0 or 1 (true and false
    are refused: JSON Schema's integers are not booleans)."""
    return not all(x.weight is MISSING or _is_zero_or_one(x.weight) for x in c.extras)


def bad_tool_call(c: Conversation) -> bool:
    """Refuses malformed `tool_calls`, and tool calls on a message that isn't the assistant's."""
    return any(
        x.calls is BAD or (x.calls is not None and role != "assistant")
        for role, x in zip(c.roles, c.extras)
    )


def bad_function_call(c: Conversation) -> bool:
    """Refuses a legacy `function_call` that isn't a mapping with a name, or one on a message
    that isn't the assistant's."""
    return any(
        x.function_call is BAD or (x.function_call is not None and role != "assistant")
        for role, x in zip(c.roles, c.extras)
    )


def bad_thinking(c: Conversation) -> bool:
    """Refuses a thinking value on a message that isn't the assistant's, or one that isn't a string."""
    return any(
        x.thinking is not MISSING and (role != "assistant" or not isinstance(x.thinking, str))
        for role, x in zip(c.roles, c.extras)
    )


def bad_tools(c: Conversation) -> bool:
    """Refuses a row whose `tools` value isn't a list of function schemas."""
    return c.declared is BAD


def tool_turn(c: Conversation) -> bool:
    """Refuses a tool or function turn, and an assistant message with tool calls."""
    return any(
        role in TOOL_ROLES or x.source in TOOL_ROLES or x.calls is BAD or bool(x.calls)
        for role, x in zip(c.roles, c.extras)
    )


def unknown_role(c: Conversation) -> bool:
    """Refuses a role that isn't one of `roles=`."""
    return not c.fmt.role_set.issuperset(c.roles)


def system_position(c: Conversation) -> bool:
    """Refuses a system message anywhere but first."""
    return "system" in c.roles[1:]


def developer_position(c: Conversation) -> bool:
    """Refuses a developer message that isn't at the start (after an optional system
    message), and a second one."""
    return DEVELOPER_ROLE in c.roles[c.lead :]


def missing_turn(c: Conversation) -> bool:
    """Refuses a conversation without a user turn or without an assistant turn."""
    turns = c.turns
    return not ("user" in turns and "assistant" in turns)


def missing_role(c: Conversation) -> bool:
    """Refuses a conversation in which a role of `require_roles=` never appears."""
    roles = c.roles
    return not all(role in roles for role in c.fmt.require_roles)


def first_role(c: Conversation) -> bool:
    """Refuses a conversation without turns, or whose first turn isn't `first_role=`."""
    turns = c.turns
    return not turns or turns[0] != c.fmt.first_role


def prompt_end(c: Conversation) -> bool:
    """Refuses a prompt that doesn't end with a user turn (or a tool turn, with tools=True)."""
    last = c.roles[-1]
    return last != "user" and not (c.fmt.tools and last == TOOL_ROLE)


def completion_role(c: Conversation) -> bool:
    """Refuses a completion holding a turn that isn't the assistant's (or a tool's, with tools=True)."""
    tools = c.fmt.tools
    return any(role != "assistant" and not (tools and role == TOOL_ROLE) for role in c.roles)


def orphan_tool(c: Conversation) -> bool:
    """Refuses a tool message that answers no call of the assistant message before its run.

    The tool messages right after an assistant message with k calls answer those
    calls: at most k of them, each matching a call by `tool_call_id` (when the calls
    have ids) and by `name` (when it has one).
    """
    calls: Any = None
    answered = 0
    for role, extra in zip(c.roles, c.extras):
        if role != TOOL_ROLE:
            calls = extra.calls if role == "assistant" and extra.calls is not BAD else None
            answered = 0
            continue
        if not calls or answered >= len(calls) or not _answers(extra, calls):
            return True
        answered += 1
    return False


def not_alternating(c: Conversation) -> bool:
    """Refuses two consecutive turns with the same role. With tools=True, tool turns
    are transparent, and an assistant message after a tool run continues the
    assistant's turn."""
    turns = c.turns
    if not c.fmt.tools:
        return any(map(eq, turns, turns[1:]))
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


def last_role(c: Conversation) -> bool:
    """Refuses a conversation whose last message isn't `last_role=` (a lone system message included)."""
    return c.roles[-1] != c.fmt.last_role


def unknown_tool(c: Conversation) -> bool:
    """Refuses a call of a function that the row's tools don't declare."""
    declared = c.declared
    return any(call.name not in declared for x in c.extras if x.calls for call in x.calls)


def empty_content(c: Conversation) -> bool:
    """Refuses a message with no content (missing, null, blank text, or parts without
    an image or text). With tools=True, an assistant message with tool calls may
    have none."""
    is_blank = c.is_blank
    if c.fmt.legacy_functions and c.extras is not None:
        return any(
            is_blank(content) and not x.calls and x.function_call is not True
            for content, x in zip(c.contents, c.extras)
        )
    if c.fmt.tools and c.extras is not None:
        return any(is_blank(content) and not x.calls for content, x in zip(c.contents, c.extras))
    return any(map(is_blank, c.contents))


def image_count(c: Conversation) -> bool:
    """Refuses image parts that don't add up to the number of the row's images."""
    images = c.images
    return images is BAD or images != sum(x.images for x in c.extras)


def _is_zero_or_one(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool) and value in (0, 1)


def _answers(extra: Any, calls: Sequence[Any]) -> bool:
    """Does a tool message match the calls it answers (by id and by name, where given)?"""
    ids = [call.id for call in calls if call.id is not None]
    if extra.call_id is not None and ids and extra.call_id not in ids:
        return False
    return extra.name is None or extra.name in [call.name for call in calls]


# --- The table ------------------------------------------------------------------------------


class Rule(NamedTuple):
    """One row of the table: the code, the rule, the switches it needs, and whether it
    reads the contents (the others read roles, extras and the row's other columns)."""

    code: str
    applies: Callable[[Conversation], bool]
    when: tuple[str, ...] = ()
    reads_contents: bool = False


def _rule(applies: Callable[[Conversation], bool], *when: str, reads_contents: bool = False) -> Rule:
    """A row of the table, named after its rule."""
    return Rule(applies.__name__, applies, when, reads_contents)


RULES: tuple[Rule, ...] = (
    _rule(no_messages),
    _rule(too_few_messages, "min_messages", "whole"),
    _rule(bad_message),
    _rule(unknown_key, "allowed_keys", "extras"),
    _rule(bad_content_type, "content_types", reads_contents=True),
    _rule(bad_image_url, "image_data_urls", reads_contents=True),
    _rule(image_too_large, "max_image_bytes", reads_contents=True),
    _rule(bad_weight, "weight_key", "extras"),
    _rule(bad_tool_call, "tools", "extras"),
    _rule(bad_function_call, "legacy_functions", "extras"),
    _rule(bad_thinking, "thinking", "extras"),
    _rule(bad_tools, "declared"),
    _rule(tool_turn, "profile", "extras"),
    _rule(unknown_role),
    _rule(image_role, "image_roles", reads_contents=True),
    _rule(system_position, "system_role"),
    _rule(developer_position, "harmony"),
    _rule(missing_turn, "profile", "whole"),
    _rule(missing_role, "require_roles", "whole"),
    _rule(first_role, "first_role", "not_completion"),
    _rule(prompt_end, "prompt"),
    _rule(completion_role, "completion"),
    _rule(orphan_tool, "tools", "extras", "not_completion"),
    _rule(not_alternating, "alternate"),
    _rule(last_role, "last_role", "whole"),
    _rule(unknown_tool, "declared", "extras"),
    _rule(empty_content, "no_empty", reads_contents=True),
    _rule(too_many_images, "max_images", reads_contents=True),
    _rule(image_count, "images", "extras"),
)
"""Every rule of a conversation, in `codes.ALL_REASONS` order."""

SWITCHES: tuple[str, ...] = (
    "min_messages",
    "allowed_keys",
    "content_types",
    "image_data_urls",
    "max_image_bytes",
    "image_roles",
    "max_images",
    "weight_key",
    "legacy_functions",
    "require_roles",
    "tools",
    "thinking",
    "profile",
    "harmony",
    "system_role",
    "first_role",
    "last_role",
    "alternate",
    "no_empty",
    "extras",
    "declared",
    "images",
    "whole",
    "prompt",
    "completion",
    "not_completion",
)
"""What a rule's `when` can name: options of the format, inputs given to `judge`, parts."""


def switches(
    fmt: ChatFormat,
    part: str = WHOLE,
    *,
    extras: bool = False,
    declared: bool = False,
    images: bool = False,
) -> frozenset[str]:
    """The switches that are on for `fmt`, a `part`, and the inputs given (extras, the
    row's declared functions, the row's images)."""
    on = {
        "min_messages": fmt.min_messages is not None,
        "allowed_keys": fmt.allowed_keys is not None,
        "content_types": fmt.content_types != "any" or fmt.part_types is not None,
        "image_data_urls": fmt.image_data_urls,
        "max_image_bytes": fmt.max_image_bytes is not None,
        "image_roles": fmt.image_roles is not None,
        "max_images": fmt.max_images is not None,
        "weight_key": fmt.weight_key is not None,
        "legacy_functions": fmt.legacy_functions,
        "require_roles": bool(fmt.require_roles),
        "tools": fmt.tools,
        "thinking": fmt.thinking is not None,
        "profile": fmt.profile == "sample",
        "harmony": fmt.harmony,
        "system_role": fmt.has_system,
        "first_role": fmt.first_role is not None,
        "last_role": fmt.last_role is not None,
        "alternate": fmt.alternate,
        "no_empty": not fmt.allow_empty,
        "extras": extras,
        "declared": declared,
        "images": images,
        "whole": part == WHOLE,
        "prompt": part == PROMPT,
        "completion": part == COMPLETION,
        "not_completion": part != COMPLETION,
    }
    return frozenset(name for name, value in on.items() if value)


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
    return _rules_for(fmt, (part, extras, declared, images))


RulesByInputs = dict[tuple[str, bool, bool, bool], tuple[Rule, ...]]
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


def _rules_for(fmt: ChatFormat, key: tuple[str, bool, bool, bool]) -> tuple[Rule, ...]:
    table = _rules_table(fmt)
    chosen = table.get(key)
    if chosen is None:
        part, extras, declared, images = key
        on = switches(fmt, part, extras=extras, declared=declared, images=images)
        chosen = tuple(rule for rule in RULES if on.issuperset(rule.when))
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
    for code, applies, _, _ in rules:
        if applies(conversation):
            return code
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
    number of images of the row (None: no images column; `BAD`: malformed).

    >>> judge(["user", "user"], ["a", "b"], ChatFormat(), lambda c: not c)
    'not_alternating'
    """
    key = (part, extras is not None, declared is not None, images is not None)
    # `active_rules`, with its lookups inline: this runs once per conversation.
    last = _last
    rules = last[1].get(key) if last[0] is fmt else None
    if rules is None:
        rules = _rules_for(fmt, key)
    conversation = Conversation(roles, contents, fmt, is_blank, extras, declared, images)
    for code, applies, _, _ in rules:
        if applies(conversation):
            return code
    return None
