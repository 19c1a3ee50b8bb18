"""Token limits: `max_tokens=N` with `tokenizer=` refuses a conversation of more than N tokens (`too_long`).

How a conversation is counted, per kind of tokenizer (`base.tokens`):

- **tiktoken encodings** (OpenAI's): OpenAI's own count, the cookbook's
  `num_tokens_from_messages` (openai/openai-cookbook, `examples/Chat_finetuning_data_prep.ipynb`,
  read at commit 2e65270, the notebook whose check warns of examples "over the 4096 token limit,
  they will be truncated during fine-tuning"): 3 tokens per message, plus the tokens of each of
  its values (the role, the content, the name, ...), plus 1 for a `name`, plus 3 for the
  priming of the reply.
- **a tokenizer.json, or a Mistral file** (tekken.json, tokenizer.model.v3): a tokenizer alone
  says nothing of the chat template a trainer wraps the
  messages in, so the count is the tokens of the messages' contents only, special tokens not
  added: a floor of what any template makes of them. `too_long` is then never a false alarm; set
  `max_tokens=` a little under the model's context to leave the template room.

What a value is as text: a string as it is; a content that is a list of parts as the texts of
its text parts (each part encoded on its own); a null or absent value counts nothing (nor does a null
`name`'s 1); any other value (tool calls, a weight) as its compact JSON text, keys sorted and
nulls left out, so that a native struct (which holds every key, null where absent) counts as the
JSON text of the same message does. (The cookbook's code encodes strings only.)

The count never encodes what can't matter: each text's `Tokenizer.bound` (its UTF-8 bytes, see
`base.tokens`) is summed with the overheads first, and when that total is at most N the
conversation passes unencoded; otherwise texts are encoded one by one until the count passes N.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..base.tokens import TIKTOKEN, Tokenizer, load_tokenizer
from ..base.values import is_missing, is_sequence
from ..conversation.conversation import Conversation
from ..conversation.rule import whole_value
from ..conversation.spec import ChatFormat

TOKENS_PER_MESSAGE = 3
"""The cookbook's `tokens_per_message` (tiktoken encodings)."""
TOKENS_PER_NAME = 1
"""The cookbook's `tokens_per_name` (tiktoken encodings)."""
REPLY_PRIMING = 3
"""The cookbook's `num_tokens += 3` after the messages: the priming of the reply (tiktoken encodings)."""


def _json_text(value: Any) -> str:
    return json.dumps(_without_nulls(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _without_nulls(v) for k, v in value.items() if not is_missing(v)}
    if is_sequence(value) and not isinstance(value, (str, bytes)):
        return [_without_nulls(v) for v in value]
    return value


def value_texts(value: Any, text_key: str = "text", *, content: bool = True) -> list[str]:
    """The texts one value of a message counts as (see the module docstring): a content's list
    of parts is read as parts (`content=True`), any other list as JSON text.

    >>> value_texts([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])
    ['a', 'b']
    >>> value_texts([{"id": "1", "type": "function", "extra": None}], content=False)
    ['[{"id":"1","type":"function"}]']
    """
    if isinstance(value, str):
        return [value]
    if value is None or is_missing(value):
        return []
    if content and is_sequence(value) and all(isinstance(part, Mapping) for part in value):
        texts = (part.get(text_key) if part.get("type") == "text" else None for part in value)
        return [text for text in texts if isinstance(text, str)]
    return [_json_text(value)]


def _message_texts(message: Any, content_key: str, text_key: str, cookbook: bool) -> tuple[int, list[str]]:
    """A message's overhead and the texts it counts: the cookbook's (every value) or the content's."""
    if not isinstance(message, Mapping):
        return (TOKENS_PER_MESSAGE if cookbook else 0), []
    if not cookbook:
        return 0, value_texts(message.get(content_key), text_key)
    overhead = TOKENS_PER_MESSAGE
    texts: list[str] = []
    for key, value in message.items():
        if is_missing(value):
            continue
        texts.extend(value_texts(value, text_key, content=key == content_key))
        if key == "name":
            overhead += TOKENS_PER_NAME
    return overhead, texts


def conversation_texts(
    messages: Sequence[Any], cookbook: bool, content_key: str = "content", text_key: str = "text"
) -> tuple[int, list[str]]:
    """The tokens a conversation costs besides its texts (the cookbook's overheads, with
    `cookbook`), and the texts it counts (see the module docstring)."""
    fixed = REPLY_PRIMING if cookbook else 0
    all_texts: list[str] = []
    for message in messages:
        overhead, texts = _message_texts(message, content_key, text_key, cookbook)
        fixed += overhead
        all_texts.extend(texts)
    return fixed, all_texts


def conversation_tokens(
    messages: Sequence[Any],
    tokenizer: Tokenizer,
    *,
    content_key: str = "content",
    text_key: str = "text",
    limit: int | None = None,
) -> int:
    """The tokens of a conversation (message mappings as written), counted as the module says.

    With `limit`, a conversation that can't exceed it is not encoded (the count returned is then
    the bound, at most `limit`), and encoding stops as soon as the count passes it.
    """
    fixed, all_texts = conversation_texts(messages, tokenizer.kind == TIKTOKEN, content_key, text_key)
    if limit is not None:
        bound = fixed + sum(map(tokenizer.bound, all_texts))
        if bound <= limit:
            return bound
    total = fixed
    if limit is not None and total > limit:
        return total
    for text in all_texts:
        total += tokenizer.count(text)
        if limit is not None and total > limit:
            return total
    return total


COOKBOOK_SLACK = 2
"""A conversation's JSON text of B bytes holds at most B + 2 tokens by the cookbook's count (see
`short_rows`), and at most B by the contents' count."""

_NUMBER_THAT_GROWS = r"[0-9][eE]|[0-9]{16}"
"""A number whose compact JSON text may be longer than as written (`1e15` is `1000000000000000.0`)."""


def short_rows(array: pa.Array, fmt: ChatFormat) -> np.ndarray | None:
    """The rows of a JSON text array (string or binary) whose byte length proves they hold at most
    `max_tokens=` tokens, so that `too_long` can't fire and they need no decoding to say so;
    None when the tokenizer has no such bound (a tokenizer.json whose normaliser may lengthen text).

    The bound, by the cookbook's count (tiktoken): each string value's tokens are at most its
    UTF-8 bytes, at most its JSON literal's less its 2 quotes; its key takes at least 3 bytes more
    (`"":`), which pay for a `name`'s extra token; a message costs 3 tokens and takes at least 2
    bytes (`{}`) and a comma; the reply's 3 are the array's brackets and 1 more: at most B + 2 in
    all. A non-string value counts as its compact JSON text, no longer than as written, except a
    number in exponent form or of 16 digits or more, which Python may write longer: a row holding
    one (in a text too, to keep the test a byte scan) is left to the count. By the contents' count,
    each text's bound is its bytes plus 1, its quotes pay for it: at most B. A message that isn't a
    JSON object (`[1]`: 3 bytes, 6 tokens) can break the bound, but such a row's first code is
    `bad_message`, a core rule before `too_long`, whatever its tokens.
    """
    limit, spec = fmt.max_tokens, fmt.tokenizer
    if limit is None or spec is None:
        return None
    tokenizer = load_tokenizer(spec)
    if not tokenizer.raw_bound:
        return None
    slack = COOKBOOK_SLACK if tokenizer.kind == TIKTOKEN else 0
    lengths = pc.fill_null(pc.binary_length(array), 0).to_numpy(zero_copy_only=False)
    fits = lengths + slack <= limit
    if not fits.any():
        return fits
    grows = pc.fill_null(pc.match_substring_regex(array, _NUMBER_THAT_GROWS), False)
    return np.asarray(fits & ~grows.to_numpy(zero_copy_only=False))


@whole_value(
    "max_tokens",
    "extras",
    "whole",
    phrase=("has more tokens than max_tokens=", "have more tokens than max_tokens="),
    raised_by="max_tokens=",
    meaning="the conversation has more tokens than `max_tokens=`, counted with `tokenizer=` "
    "(a tiktoken encoding: the OpenAI cookbook's count; a tokenizer.json or a Mistral file: the contents' tokens)",
    reads_contents=True,
)
def too_long(c: Conversation) -> bool:
    """Refuses a conversation of more tokens than `max_tokens=`, counted with `tokenizer=`
    as `trainers.tokens` says (unencoded when its bytes can't exceed the limit)."""
    fmt = c.fmt
    limit, spec = fmt.max_tokens, fmt.tokenizer
    if limit is None or spec is None:
        return False
    messages = [x.message for x in c.extras]
    tokenizer = load_tokenizer(spec)
    return conversation_tokens(
        messages, tokenizer, content_key=fmt.content_key, text_key=fmt.text_key, limit=limit
    ) > limit
