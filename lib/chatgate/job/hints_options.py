"""The options a hint tries on a step's failing values: each a change to the step's format.

Three kinds, all spelt as the command line spells them (`Option.flag`, from `ChatFormat`'s
fields, where every option is declared once):

- the key options (`--role-key`, `--content-key`, `--text-key`, `--role-map`, and the placeholder
  options `--image-token`, `--audio-token`, `--video-token` of the media a step counts),
  with values found in the failing values themselves: a text part with `value` but no `text`
  suggests `--text-key value`, messages with `from` but no `role` suggest `--role-key from`;
- each true/false option turned the other way: the format flags not given (`--sharegpt`,
  `--tools`, `--harmony`, `--allow-empty`, `--no-alternate`, ...) and, for those given,
  going without them;
- `na_pass` is never tried: a column of missing values is a wrong column, not another format.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..rules import ChatFormat
from ..rules.base.values import NOT_JSON, decode, is_missing, is_sequence
from ..rules.check.options import Option, chat_options
from ..rules.conversation.spec import ROLE_ALIASES

NOT_TRIED = frozenset({"na_pass"})
"""True/false options never tried (see the module's docstring)."""

MOST_KEYS = 3
"""Values found per key option: the most frequent ones."""

_OPTIONS: dict[str, Option] = {o.name: o for o in chat_options()}

TOKEN_OPTIONS: tuple[str, ...] = tuple(o.name for o in chat_options() if o.metavar == "TOKEN")
"""The placeholder options (`image_token`, `audio_token`, `video_token`): each counts one item of
its medium (the name's first word) in text, against the row's column of that medium."""

_SPELLINGS = {"image": "image|img", "video": "video|vid"}


def _token_pattern(option: str) -> re.Pattern[str]:
    """A placeholder of the option's medium in text: `<image>`, `<img>`, `<|image_pad|>`, `<audio>`."""
    medium = option.split("_")[0]
    return re.compile(rf"<\|?[\w-]*(?:{_SPELLINGS.get(medium, medium)})[\w-]*\|?>", re.IGNORECASE)


TOKEN_PATTERNS: dict[str, re.Pattern[str]] = {option: _token_pattern(option) for option in TOKEN_OPTIONS}


def media_column(option: str) -> str:
    """The name of the column option (of the step or of its format) whose items `option` counts:
    `images_column` for `image_token`."""
    return f"{option.split('_')[0]}s_column"
_DEFAULTS = ChatFormat()


@dataclass(frozen=True)
class Change:
    """One option set to one value, as a hint names it."""

    name: str
    """The ChatFormat field."""
    value: Any

    @property
    def option(self) -> Option:
        return _OPTIONS[self.name]

    @property
    def undoes(self) -> bool:
        """Does it go back to the option's default (the user gave another value)?"""
        return bool(self.value == self.option.default)

    @property
    def flag(self) -> str:
        """The flag that makes the change: `--sharegpt`, `--no-alternate`, `--text-key value`."""
        return spelt(self.option, self.value)

    def given(self, fmt: ChatFormat) -> str:
        """The flag as the user gave it, the value this change replaces: `--sharegpt`."""
        return spelt(self.option, getattr(fmt, self.name))


def spelt(option: Option, value: Any) -> str:
    """An option's flag with `value`, as typed on the command line."""
    if isinstance(option.default, bool):
        return option.flag if value else "--no-" + option.flag[2:]
    if isinstance(value, Mapping):
        value = ",".join(f"{key}={role}" for key, role in value.items())
    elif isinstance(value, (tuple, list)):
        value = ",".join(value)
    return f"{option.flag} {shlex.quote(str(value))}"


def changed(fmt: ChatFormat, changes: Iterable[Change]) -> ChatFormat:
    """`fmt` with `changes` made; TypeError or ValueError when they don't go together.

    Going back to an option's default also undoes what the other value brought with it
    (`sharegpt=True` reads `from`/`value` keys, `tools=True` adds the `tool` role).
    """
    changes = list(changes)
    new: dict[str, Any] = {}
    for change in changes:
        if change.undoes:
            new.update(_undone(fmt, change.name))
    for change in changes:
        new[change.name] = change.value
    return replace(fmt, **new)


def _undone(fmt: ChatFormat, name: str) -> dict[str, Any]:
    """The fields that `name` at its other value brought with it, back as they were."""
    default = _OPTIONS[name].default
    if not isinstance(default, bool):
        return {}
    flipped: dict[str, Any] = {name: not default}
    other = ChatFormat(**flipped)
    out: dict[str, Any] = {}
    for f in fields(ChatFormat):
        brought, before = getattr(other, f.name), getattr(_DEFAULTS, f.name)
        if f.name == name or brought == before:
            continue
        if f.name == "roles":
            out["roles"] = tuple(role for role in fmt.roles if role in before or role not in brought)
        elif getattr(fmt, f.name) == brought:
            out[f.name] = before
    return out


def flag_changes(fmt: ChatFormat) -> list[Change]:
    """Each true/false option turned the other way: those given first (going without them)."""
    flips = [
        Change(o.name, not getattr(fmt, o.name))
        for o in chat_options()
        if isinstance(o.default, bool) and o.name not in NOT_TRIED
    ]
    return sorted(flips, key=lambda change: not change.undoes)


def key_changes(fmt: ChatFormat, values: Iterable[Any], counted: Iterable[str] = ()) -> list[Change]:
    """The key options with the values the failing `values` suggest; of the placeholder options,
    those `counted` only (the step counts the row's items of their medium)."""
    messages = [m for value in values for m in _messages(value)]
    found: list[Change] = []
    roles = _keys_instead(messages, fmt.role_key, lambda v: isinstance(v, str), ())
    found += [Change("role_key", key) for key in roles]
    contents = _keys_instead(messages, fmt.content_key, _is_content, (fmt.role_key,))
    found += [Change("content_key", key) for key in contents]
    parts = [p for m in messages for p in _text_parts(m)]
    found += [Change("text_key", key) for key in _keys_instead(parts, fmt.text_key, _is_text, ("type",))]
    aliases = _aliases(messages, fmt, (fmt.role_key, *roles))
    found += [Change("role_map", {**(fmt.role_map or {}), **aliases})] if aliases else []
    for option in counted:
        found += [Change(option, token) for token in _tokens(messages, option, getattr(fmt, option))]
    return [change for change in found if change.value != getattr(fmt, change.name)]


def _messages(value: Any) -> list[Mapping[Any, Any]]:
    """The message objects a value holds, however it holds them (list, `messages`,
    `conversations`, one message)."""
    value = decode(value)
    if value is NOT_JSON or is_missing(value):
        return []
    if isinstance(value, Mapping):
        inner = next((value[k] for k in ("messages", "conversations") if not is_missing(value.get(k))), None)
        value = [value] if inner is None else inner
    if not is_sequence(value):
        return []
    return [m for m in value if isinstance(m, Mapping)]


def _present(item: Mapping[Any, Any], key: str) -> bool:
    return key in item and not is_missing(item[key])


def _is_content(value: Any) -> bool:
    return isinstance(value, str) or is_sequence(value)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _keys_instead(
    items: list[Mapping[Any, Any]], key: str, fits: Callable[[Any], bool], never: tuple[str, ...]
) -> list[str]:
    """The keys that hold a fitting value in every item that lacks `key`, most frequent first."""
    lacking = [item for item in items if not (_present(item, key) and fits(item[key]))]
    if not lacking:
        return []
    counts = Counter(k for item in lacking for k, v in item.items() if isinstance(k, str) and fits(v))
    every = [k for k, n in counts.most_common() if n == len(lacking) and k not in never and k != key]
    return every[:MOST_KEYS]


def _text_parts(message: Mapping[Any, Any]) -> Iterator[Mapping[Any, Any]]:
    """The text parts (`{"type": "text", ...}`) of any list a message holds."""
    for value in message.values():
        if is_sequence(value):
            yield from (p for p in value if isinstance(p, Mapping) and p.get("type") == "text")


def _aliases(messages: list[Mapping[Any, Any]], fmt: ChatFormat, keys: tuple[str, ...]) -> dict[str, str]:
    """Known aliases of roles (`ROLE_ALIASES`: human, gpt, bot, model) used as roles (the map
    suggested holds the aliases given too, as `--role-map` replaces them)."""
    known = set(fmt.roles) | set(fmt.role_aliases or {})
    tags = {m.get(key) for m in messages for key in keys}
    return {tag: ROLE_ALIASES[tag] for tag in sorted(t for t in tags if isinstance(t, str)) if tag in ROLE_ALIASES and tag not in known}


def _tokens(messages: list[Mapping[Any, Any]], option: str, given: str | None) -> list[str]:
    """The placeholders of `option`'s medium in the messages' text, most frequent first."""
    pattern = TOKEN_PATTERNS[option]
    counts: Counter[str] = Counter()
    for message in messages:
        for text in _texts(message):
            counts.update(pattern.findall(text))
    return [token for token, _ in counts.most_common(MOST_KEYS) if token != given]


def _texts(message: Mapping[Any, Any]) -> Iterator[str]:
    for value in message.values():
        if isinstance(value, str):
            yield value
        elif is_sequence(value):
            for part in value:
                if isinstance(part, Mapping):
                    yield from (v for v in part.values() if isinstance(v, str))
