"""A long value as a person reads it: cut to a few hundred characters around the message at fault.

A conversation's problem is often far from its start (an empty 40th message), so a
value cut from the start would hide it. `message_window` keeps the start of the
conversation and the message at fault (with the one before it), and says what it left
out between them:

>>> chat = [{"role": "system", "content": "Be brief."}] + [
...     {"role": "user" if k % 2 else "assistant", "content": "x" * 50} for k in range(1, 41)
... ] + [{"role": "user", "content": ""}] + [{"role": "assistant", "content": "y" * 50}] * 3
>>> print(message_window(chat, 41, 200))
[{"role": "system", "content": "Be brief."}, … messages 1–39, 3,330 characters …, {"role": "assistant", "content": "xxxxxxxxxxxxxxx…, {"role": "user", "content": ""}, … messages 42–44, 262 characters …]

This module imports nothing of chatgate's: the step report (`chatgate.report`) uses it too.
"""

from __future__ import annotations

import json
from typing import Any

MIN_PART = 12
"""The fewest characters shown of a message in a window."""


def message_window(value: Any, message: int | None, chars: int) -> str:
    """`value` as text (see `as_text`), whole when it has at most `chars` characters; else, for a
    list of messages with a message at fault (`message`, 0-based), its first message, the message
    before the one at fault and that one, each cut (about `chars` characters in all), with the
    number and length of the messages left out; else its first `chars` characters."""
    text = as_text(value)
    if len(text) <= chars:
        return text
    messages = _messages(value)
    if message is None or not messages or message < 0:
        return clip(text, chars)
    parts = [as_text(m) for m in messages]
    focus = min(message, len(parts) - 1)
    # The budget: a quarter for the start, half for the message at fault, a quarter for the one
    # before it (left out when the budget is small); the notes of what is left out come on top.
    quarter = max(MIN_PART, chars // 4)
    cuts = {focus: max(MIN_PART, chars // 2)}
    cuts.setdefault(0, quarter)
    if focus > 1 and chars >= 4 * MIN_PART * 2:
        cuts.setdefault(focus - 1, quarter)
    pieces: list[str] = []
    before = 0
    for k in sorted(cuts):
        if k > before:
            pieces.append(_gap(parts, before, k))
        pieces.append(clip(parts[k], cuts[k]))
        before = k + 1
    if before < len(parts):
        pieces.append(_gap(parts, before, len(parts)))
    return "[" + ", ".join(pieces) + "]"


def _gap(parts: list[str], start: int, end: int) -> str:
    """'… messages 1–39, 2,808 characters …': the messages start..end-1, left out."""
    count = sum(len(p) for p in parts[start:end]) + 2 * (end - start - 1)
    which = f"message {start}" if end - start == 1 else f"messages {start}–{end - 1}"
    return f"… {which}, {count:,} characters …"


def _messages(value: Any) -> list[Any] | None:
    """The messages of a value that is a list of them (or JSON text of one, or an array), else None."""
    if isinstance(value, str):
        if not value.lstrip().startswith("["):
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    elif hasattr(value, "tolist") and not isinstance(value, (bytes, bytearray)):
        value = value.tolist()  # a NumPy array, as pandas holds a list column
    return list(value) if isinstance(value, (list, tuple)) else None


def as_text(value: Any) -> str:
    """A cell as a person reads it: text as it is, lists and mappings as JSON, null as 'null'."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value))
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value, ensure_ascii=False, default=str)


def clip(text: str, chars: int) -> str:
    """`text` cut to `chars` characters, '…' marking a cut."""
    return text if len(text) <= chars else text[: chars - 1] + "…"
