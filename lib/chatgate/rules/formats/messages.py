"""Decoded values as the lists `judge` reads: roles, contents and, for the options, extras.

The core check needs only a role and a content per message (`values.roles_and_contents`).
The options beyond it need a little more of each message (its tool calls, what a
tool message answers, its thinking, its image parts): `read_messages` reads that
into one `Extra` per message. ShareGPT tags are mapped to roles here, before any rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..base.markers import BAD, MISSING
from ..base.values import is_missing, is_sequence
from ..conversation.spec import ChatFormat
from .tools import identifier, parse_calls, sharegpt_calls


class Extra(NamedTuple):
    """What the options read of one message besides its role and content."""

    source: Any
    """The role as written (a ShareGPT tag before mapping), or BAD."""
    calls: Any
    """The message's tool calls: a tuple of `tools.Call`, None, or BAD."""
    call_id: Any
    """A tool message's `tool_call_id` (None when absent or neither a string nor an integer)."""
    name: Any
    """A tool message's `name` (None when absent or not a string)."""
    thinking: Any
    """The value under the thinking key, or MISSING (absent or null)."""
    images: int
    """How many images the content holds."""
    unknown_key: bool = False
    """Does the message hold a key outside `allowed_keys=` (with a value that isn't null)?"""
    weight: Any = MISSING
    """The value under `weight_key=`, or MISSING (absent, null, or no weight key)."""
    function_call: Any = None
    """With legacy_functions=True: the message's `function_call` as True (a mapping with a
    string `name`), None (absent or null) or BAD."""
    raw_calls: Any = None
    """With profile="mistral": the message's `tool_calls` as written (Mistral's rules read
    each call's `id` and the kind of its `arguments`)."""
    media: tuple[int, int] = (0, 0)
    """With `audios_column=` or `videos_column=`: how many audios and videos the content holds
    (`audio`/`video` parts, and `audio_token`/`video_token` in its text)."""
    message: Any = None
    """With `max_tokens=`: the message as written (`trainers.tokens` counts its values)."""


class Read(NamedTuple):
    """A conversation as `judge` reads it."""

    roles: list[Any]
    contents: list[Any]
    extras: list[Extra] | None

    def then(self, other: Read) -> Read:
        """This conversation followed by `other` (a prompt and its completion)."""
        extras = None if self.extras is None or other.extras is None else self.extras + other.extras
        return Read(self.roles + other.roles, self.contents + other.contents, extras)

    def head(self, n: int) -> Read:
        return Read(
            self.roles[:n], self.contents[:n], None if self.extras is None else self.extras[:n]
        )

    def tail(self, n: int) -> Read:
        return Read(
            self.roles[n:], self.contents[n:], None if self.extras is None else self.extras[n:]
        )


def messages_in(value: Any, fmt: ChatFormat, *, single: bool = False) -> list[Any] | None:
    """The messages a decoded value holds (a list), or None if it holds none.

    A list (tuple, NumPy array) of messages, or a mapping whose "messages" key holds
    one; with sharegpt=True also "conversations", or a single message object. With
    `single=True` (an answer of a dataset row, with `single_message_answers=True`), a
    mapping that holds the role key and no "messages" is one message too.

    >>> messages_in({"messages": [{"role": "user"}]}, ChatFormat())
    [{'role': 'user'}]
    >>> messages_in({"from": "gpt", "value": "Hi"}, ChatFormat(sharegpt=True))
    [{'from': 'gpt', 'value': 'Hi'}]
    >>> messages_in({"role": "assistant", "content": "Hi"}, ChatFormat(), single=True)
    [{'role': 'assistant', 'content': 'Hi'}]
    """
    if isinstance(value, Mapping):
        if single and "messages" not in value and fmt.role_key in value:
            return [value]
        if fmt.sharegpt:
            if "messages" not in value and "conversations" in value:
                value = value.get("conversations")
            elif "messages" not in value and fmt.role_key in value:
                return [value]
            else:
                value = value.get("messages")
        else:
            value = value.get("messages")
    return list(value) if is_sequence(value) else None


def read_messages(messages: Sequence[Any], fmt: ChatFormat, *, extras: bool | None = None) -> Read:
    """The roles, contents and (when the options need them, or `extras=True`) extras.

    >>> read_messages([{"from": "human", "value": "Hi"}], ChatFormat(sharegpt=True)).roles
    ['user']
    """
    want = (not fmt.is_core) if extras is None else extras
    role_key, content_key = fmt.role_key, fmt.content_key
    thinking_key = fmt.thinking
    read_calls = fmt.tools or fmt.profile in ("sample", "mistral")
    mistral = fmt.profile == "mistral"
    aliases = fmt.role_aliases
    roles: list[Any] = []
    contents: list[Any] = []
    out: list[Extra] | None = [] if want else None
    for message in messages:
        if not isinstance(message, Mapping):
            roles.append(BAD)
            contents.append(MISSING)
            if out is not None:
                out.append(Extra(BAD, None, None, None, MISSING, 0))
            continue
        source: Any = message.get(role_key, BAD)  # decoded JSON: a string, or anything else
        source = source if isinstance(source, str) else BAD
        role = aliases.get(source, source) if aliases is not None and source is not BAD else source
        content = message.get(content_key, MISSING)
        roles.append(role)
        if out is None:
            contents.append(content)
            continue
        calls, content = _calls(message, source, content, fmt, read_calls)
        contents.append(content)
        out.append(
            Extra(
                source,
                calls,
                identifier(message.get("tool_call_id")),
                _text(message.get("name")),
                _thinking(message, thinking_key),
                count_images(content, fmt),
                *_row_option_fields(message, fmt),
                message.get("tool_calls") if mistral else None,
                count_media(content, fmt) if fmt.counts_media else (0, 0),
                message if fmt.max_tokens is not None else None,
            )
        )
    return Read(roles, contents, out)


def _calls(message: Mapping[Any, Any], source: Any, content: Any, fmt: ChatFormat, read: bool) -> tuple[Any, Any]:
    """A message's tool calls (see `Extra.calls`) and its content: a ShareGPT `function_call`
    turn's value is its calls, and it has no content then."""
    if fmt.sharegpt and source == "function_call" and fmt.tools:
        return sharegpt_calls(content), MISSING
    return (parse_calls(message.get("tool_calls", MISSING)) if read else None), content


def _row_option_fields(message: Mapping[Any, Any], fmt: ChatFormat) -> tuple[bool, Any, Any]:
    """The `Extra` fields of the trainers' row rules: unknown key, weight, function call.

    A key with a null value counts as absent: a native Arrow struct holds every key
    of every message of its column, null where a message has none.
    """
    if not fmt.has_row_options:
        return (False, MISSING, None)
    allowed = fmt.allowed_key_set
    unknown = allowed is not None and any(
        key not in allowed and not is_missing(value) for key, value in message.items()
    )
    weight = MISSING
    if fmt.weight_key is not None:
        weight = message.get(fmt.weight_key, MISSING)
        weight = MISSING if weight is MISSING or is_missing(weight) else weight
    function_call = None
    if fmt.legacy_functions:
        value = message.get("function_call")
        if value is not None and not is_missing(value):
            name = value.get("name") if isinstance(value, Mapping) else None
            function_call = True if isinstance(name, str) and name else BAD
    return (unknown, weight, function_call)


def _thinking(message: Mapping[Any, Any], key: str | None) -> Any:
    """The value under the thinking key; MISSING when absent or null."""
    if key is None:
        return MISSING
    value = message.get(key, MISSING)
    return MISSING if value is MISSING or is_missing(value) else value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def count_images(content: Any, fmt: ChatFormat) -> int:
    """Image parts (`{"type": "image"}`) in a content, plus `image_token` in its text.

    >>> count_images([{"type": "image"}, {"type": "text", "text": "and <image>"}], ChatFormat(image_token="<image>"))
    2
    """
    return count_kind(content, "image", fmt.image_token, fmt.text_key)


def count_media(content: Any, fmt: ChatFormat) -> tuple[int, int]:
    """Audios and videos in a content: `audio` and `video` parts, plus `audio_token` and
    `video_token` in its text (LLaMA-Factory's `<audio>` and `<video>`).

    >>> count_media("<audio><video><audio>", ChatFormat(audio_token="<audio>", video_token="<video>"))
    (2, 1)
    """
    return (
        count_kind(content, "audio", fmt.audio_token, fmt.text_key),
        count_kind(content, "video", fmt.video_token, fmt.text_key),
    )


def count_kind(content: Any, kind: str, token: str | None, text_key: str = "text") -> int:
    """Parts of type `kind` in a content, plus `token` in its text (a string, or text parts)."""
    if isinstance(content, str):
        return content.count(token) if token else 0
    if not is_sequence(content):
        return 0
    found = 0
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == kind:
            found += 1
        elif token and part.get("type") == "text":
            text = part.get(text_key)
            if isinstance(text, str):
                found += text.count(token)
    return found


def media_totals(row: Any, fmt: ChatFormat) -> tuple[Any, Any] | None:
    """The row's (audios, videos), each `image_total` of its column (None: no such column named),
    or None when neither is named.

    >>> media_totals({"audios": ["a.wav"]}, ChatFormat(audios_column="audios"))
    (1, None)
    """
    if not fmt.counts_media:
        return None
    audios, videos = fmt.audios_column, fmt.videos_column
    return (
        None if audios is None else image_total(row.get(audios)),
        None if videos is None else image_total(row.get(videos)),
    )


def image_total(value: Any) -> int | object:
    """The number of images a row's `images` value holds (null: none), or BAD.

    >>> image_total(["a.png", "b.png"]), image_total(None), image_total('["a.png"]')
    (2, 0, 1)
    """
    from ..base.values import NOT_JSON, parse_json

    if value is MISSING or is_missing(value):
        return 0
    if isinstance(value, (str, bytes)):
        value = parse_json(value)
        if value is NOT_JSON:
            return BAD
    return len(value) if is_sequence(value) else BAD
