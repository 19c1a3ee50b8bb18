"""Token limits (`max_tokens=` with `tokenizer=`), restated from the docs and the sources they cite.

- A tiktoken encoding's count is the OpenAI cookbook's `num_tokens_from_messages`
  (openai/openai-cookbook, examples/Chat_finetuning_data_prep.ipynb): 3 per message, the
  encoded value of each key, 1 more for a `name`, 3 for the reply's priming. Here the
  encoding is asked through tiktoken directly, every text encoded in full (no bound).
- A tokenizer.json's count is the tokens of the messages' contents, special tokens not added,
  read with the `tokenizers` library directly; a Mistral tekken.json's the same, read with
  mistral-common directly.

Texts, as the docs say: a string is itself; a content's list of parts is its text parts' texts;
null counts nothing; anything else is its compact JSON text, keys sorted, nulls left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

_LOADED = {}


def _encoder(spec):
    if spec not in _LOADED:
        if "tekken" in spec.rsplit("/", 1)[-1] and spec.endswith(".json"):
            from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

            mistral = MistralTokenizer.from_file(spec).instruct_tokenizer.tokenizer
            _LOADED[spec] = ("json", lambda text: len(mistral.encode(text, bos=False, eos=False)))
        elif spec.endswith(".json"):
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(spec)
            _LOADED[spec] = ("json", lambda text: len(tok.encode(text, add_special_tokens=False).ids))
        else:
            import tiktoken

            enc = tiktoken.get_encoding(spec)
            _LOADED[spec] = ("tiktoken", lambda text: len(enc.encode_ordinary(text)))
    return _LOADED[spec]


def _drop_nulls(value):
    if isinstance(value, Mapping):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_drop_nulls(v) for v in value]
    return value


def _texts(value, text_key, content=True):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if content and isinstance(value, (list, tuple)) and all(isinstance(p, Mapping) for p in value):
        return [p[text_key] for p in value if p.get("type") == "text" and isinstance(p.get(text_key), str)]
    return [json.dumps(_drop_nulls(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)]


def count(messages, o):
    """The conversation's tokens under `o.tokenizer`."""
    kind, encode = _encoder(o.tokenizer)
    if kind == "json":
        return sum(
            encode(t) for m in messages if isinstance(m, Mapping) for t in _texts(m.get(o.content_key), o.text_key)
        )
    num_tokens = 0
    for message in messages:
        num_tokens += 3
        if not isinstance(message, Mapping):
            continue
        for key, value in message.items():
            if value is None:
                continue
            num_tokens += sum(encode(t) for t in _texts(value, o.text_key, key == o.content_key))
            if key == "name":
                num_tokens += 1
    return num_tokens + 3


def too_long(c):
    if c.o.max_tokens is None or c.part != "whole":
        return []
    return [None] if count(c.messages, c.o) > c.o.max_tokens else []
