"""The peers' rules, written from their sources: Mistral's fine-tuning rules (`profile="mistral"`)
and serialised placeholder contents (`placeholder_contents=True`).

Mistral, from mistral-finetune (commit 1943535) `finetune/data/tokenize.py` and mistral-common
v1.11.7's `MistralRequestValidatorV3` in fine-tuning mode, as the profile's README row states them:

- `mistral_tool_call`: every tool call of an assistant message has an `id` of exactly nine ASCII
  letters or digits (the last message's calls may say `"null"`), a function name of one to 64
  ASCII letters, digits, underscores or dashes, and its `arguments` as a string; a tool message has
  a `tool_call_id` of nine letters or digits, and a `name`, when it has a string one, of the same
  form as a function's;
- `content_or_calls`: a message that isn't the assistant's has a content (the key present and not
  null); an assistant message has exactly one of a non-empty content and tool calls;
- `unanswered_call` (a whole conversation): an assistant message with k calls that isn't the last
  message is followed by k tool messages at least (more are `orphan_tool`'s).

Audio and video, as LLaMA-Factory's mm_plugin (commit 01915ea) counts `<audio>` and `<video>`
against a row's `audios` and `videos`: with `audios_column=` (`videos_column=`) named, the
`{"type": "audio"}` (`"video"`) parts of the messages plus each `audio_token` (`video_token`) in
their text (a string content, or text parts' text) add up to the length of the row's list
(null: none; anything but a list: never); else `audio_count` (`video_count`), for the value as a whole.

Placeholders: a message's whole text (its string content, or the texts of a non-empty list made
of text parts only, joined) is, once stripped of the whitespace around it and lowercased, one of
nan, null, none, undefined.
"""

from __future__ import annotations

import string
from collections.abc import Mapping

from .values import ABSENT, BAD, given, is_list, is_missing

_ALNUM = set(string.ascii_letters + string.digits)
_NAME_CHARS = _ALNUM | {"_", "-"}
PLACEHOLDER_WORDS = ("nan", "null", "none", "undefined")


def is_call_id(value, last=False):
    if not isinstance(value, str):
        return False
    if last and value == "null":
        return True
    return len(value) == 9 and set(value) <= _ALNUM


def is_function_name(value):
    return isinstance(value, str) and 1 <= len(value) <= 64 and set(value) <= _NAME_CHARS


def call_ok(call, last):
    if not isinstance(call, Mapping) or not is_call_id(call.get("id"), last):
        return False
    function = call.get("function")
    if not isinstance(function, Mapping):
        return False
    return is_function_name(function.get("name")) and isinstance(function.get("arguments"), str)


def tool_message_ok(message):
    name = message.get("name")
    return is_call_id(message.get("tool_call_id")) and (not isinstance(name, str) or is_function_name(name))


def has_content(content):
    if content is ABSENT or is_missing(content):
        return False
    if isinstance(content, str) or is_list(content):
        return len(content) > 0
    return True


def whole_text(content, text_key="text"):
    """A message's whole text, or None when it has parts other than text ones (or no content)."""
    if isinstance(content, str):
        return content
    if not is_list(content) or len(content) == 0:
        return None
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get(text_key), str):
            return None
        texts.append(part[text_key])
    return "".join(texts)


def is_placeholder(content, text_key="text"):
    text = whole_text(content, text_key)
    return text is not None and text.strip().lower() in PLACEHOLDER_WORDS


# --- The rules (conversation.RULES calls them with its Conversation) ------------------------------


def mistral_tool_call(c):
    if not c.o.mistral:
        return []

    def bad(i):
        message = c.messages[i]
        if c.roles[i] == "tool":
            return not tool_message_ok(message)
        if c.roles[i] != "assistant" or c.calls[i] in (None, BAD):
            return False
        last = i == c.n - 1
        return not all(call_ok(call, last) for call in given(message, "tool_calls"))

    return c.each(bad)


def content_or_calls(c):
    if not c.o.mistral:
        return []

    def bad(i):
        content = c.contents[i]
        if c.roles[i] == "assistant":
            return has_content(content) == (c.calls[i] is not None)
        return content is ABSENT or is_missing(content)

    return c.each(bad)


def unanswered_call(c):
    if not c.o.mistral or c.part != "whole":
        return []
    sites = []
    for i in range(c.n - 1):
        if c.roles[i] != "assistant" or c.calls[i] in (None, BAD):
            continue
        answers = 0
        while i + 1 + answers < c.n and c.roles[i + 1 + answers] == "tool":
            answers += 1
        if answers < len(c.calls[i]):
            sites.append(i)
    return sites


def media_referenced(content, kind, token, text_key="text"):
    if isinstance(content, str):
        return content.count(token) if token else 0
    if not is_list(content):
        return 0
    count = 0
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == kind:
            count += 1
        elif isinstance(part, Mapping) and part.get("type") == "text" and token and isinstance(part.get(text_key), str):
            count += part[text_key].count(token)
    return count


def _media_count(c, which, kind, token):
    total = c.media[which]
    if total is None:
        return []
    found = sum(media_referenced(content, kind, token, c.o.text_key) for content in c.contents)
    return [None] if total is BAD or found != total else []


def audio_count(c):
    return _media_count(c, 0, "audio", c.o.audio_token)


def video_count(c):
    return _media_count(c, 1, "video", c.o.video_token)


def placeholder_content(c):
    if not c.o.placeholder_contents:
        return []
    return c.each(lambda i: is_placeholder(c.contents[i], c.o.text_key))
