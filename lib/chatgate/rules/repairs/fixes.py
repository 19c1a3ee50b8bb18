"""The repairs themselves: small functions of a list of messages, and the table that orders them.

Each repair takes the messages of a failing value (or, for `decode_text`, the value
itself) and returns its repaired form, or None when it changes nothing. None of
them changes a list in place. They read messages as the check reads them
(`Context`): the role after ShareGPT tags and `role_map=`, the content under
`content_key`, blank as the check finds it blank. A message that isn't a mapping
with a string role is never touched, moved or joined (only `drop_leading` and
`drop_trailing` may drop it, with the turns around it).

Contents are joined (`hoist_system`, `merge_repeats`) by `join_contents`: two
strings with a blank line between them, two lists of content parts into one list;
a missing or null content adds nothing. A string and a list of parts (or any other
kind of content) can't be joined: those messages are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from ..base.markers import MISSING
from ..base.values import NOT_JSON, blank_checker, is_missing, is_sequence, parse_json
from ..check.codes import ALL_REASONS
from ..check.table import not_messages
from ..conversation import core
from ..conversation.spec import DEVELOPER_ROLE, FUNCTION_ROLE, SHAREGPT_ROLES, TOOL_ROLE, ChatFormat
from ..trainers import rules as trainers

DEFAULT_ROLE_MAP: dict[str, str] = {
    "human": "user",
    "Human": "user",
    "USER": "user",
    "User": "user",
    "gpt": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "Assistant": "assistant",
    "ASSISTANT": "assistant",
    "System": "system",
    "SYSTEM": "system",
}
"""The aliases `map_roles` renames (`role_map=` adds to it and wins over it)."""

JOINER = "\n\n"
"""What joins two text contents: a blank line."""

TEXT_TYPES = (str, bytes, bytearray, memoryview)
"""The kinds of value the check reads as JSON text."""

CANNOT = object()
"""What `join_contents` returns for contents that can't be joined."""

_UNJOINED_ROLES = frozenset({TOOL_ROLE, FUNCTION_ROLE})
"""Roles whose consecutive messages are never merged: they answer parallel calls one by one."""


def _is_mapping(value: Any) -> bool:
    # Most messages are dicts: the ABC check is several times slower than the type test.
    return type(value) is dict or isinstance(value, Mapping)


class Context:
    """What the repairs read of a format, worked out once per format (`context`)."""

    def __init__(self, fmt: ChatFormat) -> None:
        self.fmt = fmt
        self.role_key = fmt.role_key
        self.content_key = fmt.content_key
        self.aliases: Mapping[str, str] = fmt.role_aliases or {}
        self.renames = {**DEFAULT_ROLE_MAP, **(fmt.role_map or {})}
        self.is_blank = blank_checker(fmt.text_key)
        # A lead role (system, and developer with harmony) can't be a valid first turn.
        self.lead_roles = ("system", DEVELOPER_ROLE) if fmt.harmony else ("system",)
        self.allowed = fmt.role_set | (
            {tag for tag in SHAREGPT_ROLES if self.aliases.get(tag) in fmt.role_set} if fmt.sharegpt else frozenset()
        )
        """The roles allowed as written: one of `roles=`, or (sharegpt=True) a tag of an allowed role."""

    def role(self, message: Any) -> str | None:
        """The role the check reads of a message; None for one that isn't a mapping with a string role."""
        if not _is_mapping(message):
            return None
        written = message.get(self.role_key)
        if not isinstance(written, str):
            return None
        return self.aliases.get(written, written)

    def content(self, message: Mapping[Any, Any]) -> Any:
        return message.get(self.content_key, MISSING)

    def has_calls(self, message: Mapping[Any, Any]) -> bool:
        """Does a message carry a call (`tool_calls`, `function_call`, or a ShareGPT `function_call` turn)?

        Malformed calls count: a repair must not drop or fold away what it can't read.
        """
        for key in ("tool_calls", "function_call"):
            value: Any = message.get(key)
            if not is_missing(value) and not (is_sequence(value) and not len(value)):
                return True
        return self.fmt.sharegpt and message.get(self.role_key) == "function_call"

    def lead(self, messages: list[Any]) -> int:
        """How many messages lead the turns: a system message, then (harmony=True) a developer one."""
        lead = 1 if messages and self.role(messages[0]) == "system" else 0
        if self.fmt.harmony and lead < len(messages) and self.role(messages[lead]) == DEVELOPER_ROLE:
            lead += 1
        return lead


@lru_cache(maxsize=32)
def context(fmt: ChatFormat) -> Context:
    return Context(fmt)


def join_contents(first: Any, second: Any) -> Any:
    """Two contents as one, or `CANNOT`.

    >>> join_contents("Hi.", "How are you?"), join_contents(None, "x")
    ('Hi.\\n\\nHow are you?', 'x')
    >>> join_contents([{"type": "text", "text": "a"}], [{"type": "image"}])
    [{'type': 'text', 'text': 'a'}, {'type': 'image'}]
    >>> join_contents("a", [{"type": "image"}]) is CANNOT
    True
    """
    if second is MISSING or is_missing(second):
        return first
    if first is MISSING or is_missing(first):
        return second
    if isinstance(first, str) and isinstance(second, str):
        return first + JOINER + second
    if is_sequence(first) and is_sequence(second):
        return [*first, *second]
    return CANNOT


def _with_content(message: Mapping[Any, Any], content: Any, ctx: Context) -> dict[Any, Any]:
    """A copy of a message (keys in their order) with its content replaced."""
    out = dict(message)
    if content is not MISSING:
        out[ctx.content_key] = content
    return out


# --- The repairs, in the order they are applied ---------------------------------------------


def decode_text(value: Any, ctx: Context) -> Any:
    """A JSON string whose content is the JSON text of a message list (double-encoded) is decoded once."""
    if not isinstance(value, TEXT_TYPES) or not _opens_a_string(value):
        return None
    inner = parse_json(str(value) if isinstance(value, str) else value)
    if not isinstance(inner, str):
        return None
    held = parse_json(inner)
    if held is NOT_JSON or message_shape(held, ctx.fmt) is None:
        return None  # a string of a string (triple-encoded) isn't decoded: once only
    return inner if isinstance(value, str) else inner.encode()


_STRING_START = re.compile(r'[ \t\n\r]*"')
_STRING_START_BYTES = re.compile(rb'[ \t\n\r]*"')


def _opens_a_string(text: Any) -> bool:
    """Could this JSON text be a string? Only if a quote comes first, after JSON's white space:
    most failing values are lists or objects, and aren't decoded for nothing.

    >>> _opens_a_string(' \\n"[]"'), _opens_a_string('[{"role": "user"}]'), _opens_a_string(b'"x"')
    (True, False, True)
    """
    pattern = _STRING_START if isinstance(text, str) else _STRING_START_BYTES
    try:
        return pattern.match(text) is not None
    except (TypeError, ValueError):  # a buffer `re` can't read (a strided memoryview): the decoder decides
        return True


def map_roles(messages: list[Any], ctx: Context) -> list[Any] | None:
    """A role that isn't allowed but is a known alias of an allowed one is renamed (`DEFAULT_ROLE_MAP`,
    extended by `role_map=`); other roles are left as they are."""
    # Most failing values' roles are all allowed: nothing is copied until one is renamed.
    key, allowed = ctx.role_key, ctx.allowed
    for i, message in enumerate(messages):
        written = message.get(key) if type(message) is dict else None
        if type(written) is str and written in allowed:
            continue  # the common case, decided inline (`_renamed` keeps an allowed role)
        renamed = _renamed(message, ctx)
        if renamed is not message:
            return [*messages[:i], renamed, *(_renamed(m, ctx) for m in messages[i + 1 :])]
    return None


def _renamed(message: Any, ctx: Context) -> Any:
    written = message.get(ctx.role_key) if _is_mapping(message) else None
    if not isinstance(written, str) or written in ctx.allowed:
        return message
    role = ctx.renames.get(written)
    if role is None or role not in ctx.fmt.role_set:
        return message
    return {**message, ctx.role_key: role}


def drop_empty(messages: list[Any], ctx: Context) -> list[Any] | None:
    """Messages whose content is missing, null, empty or blank are dropped (never one with tool calls)."""
    key, is_blank = ctx.content_key, ctx.is_blank
    for i, message in enumerate(messages):
        if type(message) is dict and not is_blank(message.get(key, MISSING)):
            continue  # the common case, decided inline (`_is_empty` reads the content first)
        if _is_empty(message, ctx):
            return [*messages[:i], *(m for m in messages[i + 1 :] if not _is_empty(m, ctx))]
    return None


def _is_empty(message: Any, ctx: Context) -> bool:
    # The content first: most messages have one, and then their role needn't be read.
    if not _is_mapping(message) or not ctx.is_blank(ctx.content(message)):
        return False
    return ctx.role(message) is not None and not ctx.has_calls(message)


def hoist_system(messages: list[Any], ctx: Context) -> list[Any] | None:
    """System messages not in first place are merged into one leading system message (into the
    existing one if there is one), their contents joined in order with a blank line."""
    if not ctx.fmt.has_system:
        return None
    at = [i for i, message in enumerate(messages) if ctx.role(message) == "system"]
    if not at or at == [0]:
        return None
    content = ctx.content(messages[at[0]])
    for i in at[1:]:
        content = join_contents(content, ctx.content(messages[i]))
        if content is CANNOT:
            return None  # all or nothing: the system messages stay where they are
    moved = set(at)
    rest = [message for i, message in enumerate(messages) if i not in moved]
    head = messages[at[0]]
    return [head if len(at) == 1 else _with_content(head, content, ctx), *rest]


def merge_repeats(messages: list[Any], ctx: Context) -> list[Any] | None:
    """Consecutive messages of the same role are merged into one, their contents joined with a blank
    line; the merged message keeps the first one's other keys.

    Tool and function messages are never merged (each answers one call), a message with
    tool calls is never merged into the one before it, and a message whose content
    can't be joined to the one before starts a new message.
    """
    out: list[Any] = []
    last = None  # the role of out[-1] (a merged message keeps its first message's role)
    for message in messages:
        role = ctx.role(message)
        merged = _merged(out[-1], message, role, ctx) if out and role == last else None
        if merged is None:
            out.append(message)
            last = role
        else:
            out[-1] = merged
    return out if len(out) < len(messages) else None


def _merged(first: Any, second: Any, role: str | None, ctx: Context) -> dict[Any, Any] | None:
    """`second` merged into `first`, both of role `role`; None where they can't be."""
    if role is None or role in _UNJOINED_ROLES or ctx.has_calls(second):
        return None
    content = join_contents(ctx.content(first), ctx.content(second))
    return None if content is CANNOT else _with_content(first, content, ctx)


def drop_leading(messages: list[Any], ctx: Context) -> list[Any] | None:
    """With `first_role=` set, the turns (after a leading system message) before the first turn of
    that role are dropped; if no turn has that role, nothing changes."""
    wanted = ctx.fmt.first_role
    if wanted is None or wanted in ctx.lead_roles:
        return None  # no conversation starts its turns with a lead role: nothing to aim for
    lead = ctx.lead(messages)
    for k in range(lead, len(messages)):
        if ctx.role(messages[k]) == wanted:
            return [*messages[:lead], *messages[k:]] if k > lead else None
    return None


def drop_trailing(messages: list[Any], ctx: Context) -> list[Any] | None:
    """With `last_role=` set, the messages after the last message of that role are dropped; if no
    message has that role, nothing changes."""
    wanted = ctx.fmt.last_role
    if wanted is None:
        return None
    for k in range(len(messages) - 1, -1, -1):
        if ctx.role(messages[k]) == wanted:
            return messages[: k + 1] if k + 1 < len(messages) else None
    return None


# --- The table ------------------------------------------------------------------------------

TEXT = "text"
MESSAGES = "messages"


class Repair(NamedTuple):
    """One repair: its name, its function, whether it never removes user or assistant text (the
    "safe" preset), what it works on (the value's JSON text, or its list of messages), the
    option it needs, if any, and the problems it never takes away (`keeps`)."""

    name: str
    fix: Callable[[Any, Context], Any]
    safe: bool
    stage: str = MESSAGES
    needs: str | None = None
    keeps: frozenset[str] = frozenset()
    """Codes of problems a value still has after this repair if it had them before: a value whose
    code every named repair keeps can't be made to pass (`repair.kept_by_all`)."""

    @property
    def help(self) -> str:
        """What the repair does: its function's docstring, up to its first blank line."""
        return " ".join((self.fix.__doc__ or "").split("\n\n")[0].split())


def _repair(
    fix: Callable[[Any, Context], Any],
    *,
    safe: bool,
    keeps: frozenset[str],
    stage: str = MESSAGES,
    needs: str | None = None,
) -> Repair:
    return Repair(fix.__name__, fix, safe, stage, needs, keeps)


_TOO_FEW = frozenset({core.no_messages.code, trainers.too_few_messages.code})
"""Too few messages: no repair adds one."""

_UNREAD_KEPT = _TOO_FEW | {core.bad_message.code}
"""And a message that isn't a mapping with a string role: the repairs that only rename, drop
blank messages, move or join never touch it (`Context.role` is None)."""

_BUT_NOT_MESSAGES = frozenset(ALL_REASONS) - {not_messages.code}
"""`decode_text` changes only a JSON string, whose one problem is that it holds no messages."""

REPAIRS: tuple[Repair, ...] = (
    _repair(decode_text, safe=True, stage=TEXT, keeps=_BUT_NOT_MESSAGES),
    _repair(map_roles, safe=True, keeps=_UNREAD_KEPT),
    _repair(drop_empty, safe=True, keeps=_UNREAD_KEPT),
    _repair(hoist_system, safe=True, keeps=_UNREAD_KEPT),
    _repair(merge_repeats, safe=True, keeps=_UNREAD_KEPT),
    _repair(drop_leading, safe=False, needs="first_role", keeps=_TOO_FEW),
    _repair(drop_trailing, safe=False, needs="last_role", keeps=_TOO_FEW),
)
"""Every repair, in the order they are applied."""

REPAIR_PRESETS: dict[str, tuple[str, ...]] = {
    "safe": tuple(r.name for r in REPAIRS if r.safe),
    "all": tuple(r.name for r in REPAIRS),
}
"""Named sets of repairs: "safe" never removes user or assistant text; "all" is every repair."""


# --- Where a value holds its messages -------------------------------------------------------


class Shape(NamedTuple):
    """Where a decoded value holds its list of messages, to put a repaired list back."""

    container: Any
    key: str | None = None
    """The key of the wrapper object holding the list; None when the value is the list."""
    single: bool = False
    """A lone ShareGPT message object, standing for a one-message list."""

    def build(self, messages: list[Any]) -> Any:
        """The value with `messages` in place of its list (a tuple stays a tuple; other sequences
        become lists)."""
        if self.single:
            return messages[0]
        if self.key is not None:
            return {**self.container, self.key: messages}
        return tuple(messages) if isinstance(self.container, tuple) else messages


def message_shape(value: Any, fmt: ChatFormat) -> tuple[Shape, list[Any]] | None:
    """Where a decoded value holds its messages, and those messages; None if it holds none.

    The same places as `messages.messages_in` looks.

    >>> message_shape({"id": 1, "messages": [{"role": "user"}]}, ChatFormat())
    (Shape(container={'id': 1, 'messages': [{'role': 'user'}]}, key='messages', single=False), [{'role': 'user'}])
    """
    if not isinstance(value, Mapping):
        return (Shape(value), list(value)) if is_sequence(value) else None
    key = "messages"
    if fmt.sharegpt and key not in value:
        if "conversations" in value:
            key = "conversations"
        elif fmt.role_key in value:
            return Shape(value, single=True), [value]
    held: Any = value.get(key)
    return (Shape(value, key), list(held)) if is_sequence(held) else None
