"""Token limits: `max_tokens=N` with `tokenizer=` gives `too_long` (issue 27, items 1 and 3).

No network: the tiktoken encoding is built here from byte ranks (registered under its own
name, as `tiktoken.get_encoding` finds a loaded one) and the tokenizer.json files are built
with the `tokenizers` library. Counts are checked against each tokenizer's own encode of the
same texts, and the tiktoken count against the OpenAI cookbook's `num_tokens_from_messages`
(openai/openai-cookbook, examples/Chat_finetuning_data_prep.ipynb), written out below as
published. Labelled rows on the reference, Arrow JSON text and native values, the plain
reference, and every engine (local, DuckDB, Spark) on JSON text and native list columns.
"""

from __future__ import annotations

import atexit
import json
import pickle
import re
import shutil
import sys
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import chatgate
from chatgate.errors import ConfigError
from chatgate.names import REASON
from chatgate.rules import first_row_problem, format_from, locate
from chatgate.rules.base import tokens as base_tokens
from chatgate.rules.base.tokens import HF, MISTRAL, TIKTOKEN, Tokenizer, TokenizerError, load_tokenizer
from chatgate.rules.trainers import tokens as rule_tokens
from chatgate.rules.trainers.tokens import conversation_tokens

try:
    from plain_reference import plain_answers
    from rule_examples import failing_on_engine
except ImportError:  # tests/ imported as a package
    from tests.plain_reference import plain_answers
    from tests.rule_examples import failing_on_engine

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")

ENCODING = "chatgate_test_bytes"
"""A byte-level BPE encoding of this test (GPT-2's split pattern, every byte, a few merges)."""

MERGES = [b"he", b"ll", b"llo", b"hello", b" w", b"or", b"ld", b" wor", b" world", b" t", b"th", b" the", b"in", b"ing"]


def _encoding():
    ranks = {bytes([i]): i for i in range(256)}
    for merged in MERGES:
        ranks[merged] = len(ranks)
    pattern = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    return tiktoken.Encoding(name=ENCODING, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


tiktoken.registry.ENCODINGS.setdefault(ENCODING, _encoding())


def _byte_level_bpe(path):
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(["Hello world, the cat sat on the mat. What is 2+2? It is 4."] * 20, trainer)
    tok.save(str(path))
    return str(path)


def _normalising(path):
    """A word-level tokenizer.json whose normaliser lengthens text (NFKC, spaces to ▁) and adds a prefix."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, normalizers, pre_tokenizers

    vocab = {"[UNK]": 0, "▁": 1, "▁hi": 2, "平成": 3, "ffi": 4}
    tok = HFTokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
    tok.save(str(path))
    return str(path)


def _tekken(path):
    """A Mistral Tekken file (the format mistral-common's `Tekkenizer.from_file` reads): every byte,
    the merges above, the pattern of Mistral's published tekken.json, version v3 (its special
    tokens the defaults)."""
    import base64

    vocab = [bytes([i]) for i in range(256)] + MERGES
    pattern = (
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|"
        r"\s*[\r\n]+|\s+(?!\S)|\s+"
    )
    data = {
        "config": {
            "pattern": pattern,
            "num_vocab_tokens": len(vocab),
            "default_vocab_size": len(vocab) + 1000,
            "default_num_special_tokens": 1000,
            "version": "v3",
        },
        "vocab": [{"rank": i, "token_bytes": base64.b64encode(b).decode(), "token_str": None} for i, b in enumerate(vocab)],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return str(path)


_TMP = tempfile.mkdtemp(prefix="chatgate-tokens-")
# Spark workers reload these files by path, so they live until the session ends.
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_BPE = _byte_level_bpe(f"{_TMP}/bpe.tokenizer.json")
_NORM = _normalising(f"{_TMP}/norm.tokenizer.json")
_TEKKEN = _tekken(f"{_TMP}/tekken.json")


def cookbook_count(messages, encoding):
    """OpenAI's cookbook, `num_tokens_from_messages`, as published (examples/Chat_finetuning_data_prep.ipynb)."""
    tokens_per_message, tokens_per_name = 3, 1
    num_tokens = 0
    for message in messages:
        num_tokens += tokens_per_message
        for key, value in message.items():
            num_tokens += len(encoding.encode(value))
            if key == "name":
                num_tokens += tokens_per_name
    num_tokens += 3
    return num_tokens


def U(text="Hello world"):
    return {"role": "user", "content": text}


def A(text="the thing"):
    return {"role": "assistant", "content": text}


CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "name": "ann", "content": "Hello world, what is the thing?"},
    {"role": "assistant", "content": "It is the thing in the world: ça va, 世界 🙂"},
]


# --- The counts -----------------------------------------------------------------------------------


def test_a_tiktoken_count_is_the_cookbooks():
    encoding = tiktoken.get_encoding(ENCODING)
    tok = load_tokenizer(ENCODING)
    assert tok.kind == TIKTOKEN
    assert conversation_tokens(CHAT, tok) == cookbook_count(CHAT, encoding)
    assert conversation_tokens([U()], tok) == 3 + len(encoding.encode("user")) + len(encoding.encode("Hello world")) + 3
    # a name costs its tokens and 1 more
    named = [{"role": "user", "name": "ann", "content": "x"}]
    n = len(encoding.encode("user")) + len(encoding.encode("ann")) + len(encoding.encode("x"))
    assert conversation_tokens(named, tok) == cookbook_count(named, encoding) == 3 + n + 1 + 3


def test_a_tokenizer_json_count_is_the_contents_tokens():
    from tokenizers import Tokenizer as HFTokenizer

    own = HFTokenizer.from_file(_BPE)
    tok = load_tokenizer(_BPE)
    assert tok.kind == HF
    expected = sum(len(own.encode(m["content"], add_special_tokens=False).ids) for m in CHAT)
    assert conversation_tokens(CHAT, tok) == expected
    parts = [{"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "image"}, {"type": "text", "text": " world"}]}]
    assert conversation_tokens(parts, tok) == len(own.encode("Hello", add_special_tokens=False).ids) + len(
        own.encode(" world", add_special_tokens=False).ids
    )


def test_values_as_text():
    texts = rule_tokens.value_texts
    assert texts(None) == [] and texts("x") == ["x"]
    assert texts([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}]) == ["a"]
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "extra": None}
    assert texts([call], content=False) == ['[{"function":{"arguments":"{}","name":"f"},"id":"c1","type":"function"}]']
    # a native struct's null keys count nothing: the same message as its JSON text
    tok = load_tokenizer(ENCODING)
    native = {"role": "user", "content": "Hi", "name": None, "tool_calls": None}
    assert conversation_tokens([native], tok) == conversation_tokens([{"role": "user", "content": "Hi"}], tok)


TEXTS = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(["ﬃ ﬃ", "㍻", " hi  hi", "", " ", "🙂🙂"])


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(TEXTS)
def test_the_byte_bound_is_never_under_the_count(text):
    for spec in (ENCODING, _BPE, _NORM):
        tok = load_tokenizer(spec)
        assert tok.count(text) <= tok.bound(text), (spec, text)


def test_a_normaliser_that_lengthens_text_is_in_the_bound():
    tok = load_tokenizer(_NORM)
    assert tok.count("㍻") == 1 and tok.bound("㍻") >= 1  # NFKC: 平成, after a ▁
    assert tok.count("ﬃ ﬃ") <= tok.bound("ﬃ ﬃ")


SCALARS = (
    TEXTS
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e15, 1e-7, 123456789012345678.0, 0.5, True, None])
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3), max_leaves=6)
MESSAGES = st.lists(st.dictionaries(st.sampled_from(["role", "content", "name", "weight", "tool_calls", "x"]), VALUES, max_size=4), max_size=4)


FLOAT_STYLES = (repr, "{:e}".format, "{:E}".format, "{:.3e}".format, "{:.1f}".format)
"""How a JSON writer may spell a float: Python's way, exponent forms (`1e15`), long fixed forms."""


def _json(value, style, ascii_only, spaced):
    """`value` as JSON text, its floats spelt by `FLOAT_STYLES[style]`."""
    if isinstance(value, float):
        return FLOAT_STYLES[style](value)
    if isinstance(value, list):
        return "[" + (", " if spaced else ",").join(_json(v, style, ascii_only, spaced) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (json.dumps(k, ensure_ascii=ascii_only) + (": " if spaced else ":") + _json(v, style, ascii_only, spaced) for k, v in value.items())
        return "{" + (", " if spaced else ",").join(pairs) + "}"
    return json.dumps(value, ensure_ascii=ascii_only)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(MESSAGES, st.integers(0, len(FLOAT_STYLES) - 1), st.booleans(), st.booleans())
@example([{"x": 1e15}], 3, False, False)  # 1.000e+15 is read as 1e15, counted as 1000000000000000.0
@example([{"content": 1e-7, "name": 12345678901234567890.0}], 4, False, False)
def test_a_json_texts_bytes_bound_its_count(written, style, ascii_only, spaced):
    """`short_rows`: a JSON text of B bytes holding no number that may grow counts at most B + 2
    tokens by the cookbook, at most B by the contents; a row it spares is never too long."""
    text = _json(written, style, ascii_only, spaced)
    messages = json.loads(text)  # as the check reads it
    size = len(text.encode("utf-8", "surrogatepass"))
    for spec in (ENCODING, _BPE, _TEKKEN):
        tok = load_tokenizer(spec)
        count = conversation_tokens(messages, tok)
        fmt = format_from(max_tokens=max(count - 1, 1), tokenizer=spec)
        spared = rule_tokens.short_rows(pa.array([text]), fmt)
        assert spared is not None and not spared[0] or count <= 1, (spec, text, count)
        if not re.search(r"[0-9][eE]|[0-9]{16}", text):
            assert count <= size + (2 if tok.kind == TIKTOKEN else 0), (spec, text, count, size)


def test_a_message_that_isnt_an_object_is_a_bad_message_whatever_its_tokens():
    value = "[1]"  # 3 bytes, 3 + 3 tokens by the cookbook
    for limit in (1, 3, 5):
        assert chatgate.check_batch(pa.array([value]), max_tokens=limit, tokenizer=ENCODING).to_pylist() == ["bad_message"]


def test_a_tokenizer_without_a_bound_is_always_encoded():
    counting = Counting()
    tok = Tokenizer(MISTRAL, "tokenizer.model.v3", counting, bounded=False)
    assert not tok.raw_bound and tok.bound("hello") == 5 and counting.calls == 1
    fmt = format_from(max_tokens=100, tokenizer=_TEKKEN)
    assert rule_tokens.short_rows(pa.array(["[]"]), fmt) is not None
    assert load_tokenizer(_TEKKEN).raw_bound


def test_a_number_that_grows_leaves_the_row_to_the_count():
    grows = json.dumps([{"role": "user", "content": "hi", "weight": 1e15}])
    plain = json.dumps([{"role": "user", "content": "hi", "weight": 1}])
    fmt = format_from(max_tokens=200, tokenizer=ENCODING)
    assert rule_tokens.short_rows(pa.array([grows, plain, None]), fmt).tolist() == [False, True, True]
    assert rule_tokens.short_rows(pa.array([plain]), format_from(max_tokens=5, tokenizer=ENCODING)).tolist() == [False]
    assert rule_tokens.short_rows(pa.array([plain]), format_from(max_tokens=5, tokenizer=_NORM)) is None


# --- The bound spares the tokenizer ---------------------------------------------------------------


class Counting:
    """A fake tokenizer's count, one token per byte, that counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, text):
        self.calls += 1
        return len(text.encode())


@pytest.mark.parametrize("kind", [TIKTOKEN, HF])
def test_a_conversation_under_the_bound_is_never_encoded(kind, monkeypatch):
    counting = Counting()
    fake = Tokenizer(kind, ENCODING if kind == TIKTOKEN else _BPE, counting)
    chat = [U("Hello world"), A("the thing")]
    # tiktoken: 3 + 3 per message + the bytes of "user", "Hello world", "assistant", "the thing" = 42;
    # a tokenizer.json: the contents' bytes + 1 each = 22
    bound = 42 if kind == TIKTOKEN else 22
    assert conversation_tokens(chat, fake, limit=bound) == bound and counting.calls == 0
    conversation_tokens(chat, fake, limit=bound - 1)
    assert counting.calls > 0
    # through the rule, on every path: under the bound, the tokenizer is never asked
    monkeypatch.setattr(rule_tokens, "load_tokenizer", lambda spec: fake)
    counting.calls = 0
    options = {"max_tokens": bound, "tokenizer": ENCODING if kind == TIKTOKEN else _BPE}
    assert chatgate.first_problem(chat, **options) is None
    assert chatgate.check_batch(pa.array([json.dumps(chat)]), **options).to_pylist() == [None]
    assert chatgate.check_batch(pa.array([chat]), **options).to_pylist() == [None]
    assert counting.calls == 0
    assert chatgate.first_problem([U("Hello world!" * 10), A()], **options) == "too_long"
    assert counting.calls > 0


def test_encoding_stops_once_the_count_passes_the_limit():
    counting = Counting()
    fake = Tokenizer(TIKTOKEN, ENCODING, counting)
    chat = [U("x" * 50)] * 10
    assert conversation_tokens(chat, fake, limit=40) > 40  # 3 + 3 per message + 3 = 36 before any text
    assert counting.calls == 2  # "user", then the first content: over
    counting.calls = 0
    assert conversation_tokens(chat, fake, limit=20) > 20 and counting.calls == 0  # the overheads alone are over


# --- Labelled rows: the reference, Arrow JSON text, native values ---------------------------------


def _labelled():
    enc = tiktoken.get_encoding(ENCODING)
    n_chat = cookbook_count(CHAT, enc)
    from tokenizers import Tokenizer as HFTokenizer

    own = HFTokenizer.from_file(_BPE)
    n_bpe = sum(len(own.encode(m["content"], add_special_tokens=False).ids) for m in CHAT)
    return [
        ("tiktoken-at-limit", CHAT, {"max_tokens": n_chat, "tokenizer": ENCODING}, None),
        ("tiktoken-over", CHAT, {"max_tokens": n_chat - 1, "tokenizer": ENCODING}, "too_long"),
        ("json-at-limit", CHAT, {"max_tokens": n_bpe, "tokenizer": _BPE}, None),
        ("json-over", CHAT, {"max_tokens": n_bpe - 1, "tokenizer": _BPE}, "too_long"),
        ("malformed-first", [U(), U()], {"max_tokens": 1, "tokenizer": _BPE}, "not_alternating"),
        ("openai-profile", CHAT, {"profile": "openai", "max_tokens": n_chat - 1, "tokenizer": ENCODING}, "too_long"),
        ("sharegpt", [{"from": "human", "value": "Hello world " * 20}, {"from": "gpt", "value": "ok"}],
         {"sharegpt": True, "max_tokens": 20, "tokenizer": _BPE}, "too_long"),
    ]


LABELLED = _labelled()


@pytest.mark.parametrize("name, chat, options, expected", LABELLED, ids=[case[0] for case in LABELLED])
def test_labelled_rows(name, chat, options, expected):
    assert chatgate.first_problem(chat, **options) == expected
    assert chatgate.first_problem(json.dumps(chat), **options) == expected
    assert chatgate.check_batch(pa.array([json.dumps(chat)]), **options).to_pylist() == [expected]
    assert chatgate.check_batch(pa.array([chat]), **options).to_pylist() == [expected]
    if expected == "too_long":
        assert locate(chat, expected, **options) is None  # the conversation as a whole


def test_a_prompt_and_completion_row_is_counted_whole():
    row = {"prompt": [U("Hello world " * 5)], "completion": [A("the thing " * 5)]}
    from tokenizers import Tokenizer as HFTokenizer

    own = HFTokenizer.from_file(_BPE)
    n = sum(len(own.encode(m["content"], add_special_tokens=False).ids) for m in row["prompt"] + row["completion"])
    assert first_row_problem(row, "prompt_completion", max_tokens=n, tokenizer=_BPE) is None
    assert first_row_problem(row, "prompt_completion", max_tokens=n - 1, tokenizer=_BPE) == "too_long"


# --- Options and errors: one line, before any row -------------------------------------------------


def test_a_mistral_file_count_is_the_contents_tokens():
    pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    own = MistralTokenizer.from_file(_TEKKEN).instruct_tokenizer.tokenizer
    tok = load_tokenizer(_TEKKEN)
    assert tok.kind == MISTRAL
    expected = sum(len(own.encode(m["content"], bos=False, eos=False)) for m in CHAT)
    assert conversation_tokens(CHAT, tok) == expected
    for text in ("", "hello world", "ça va, 世界 🙂", " \n\t  the"):
        assert tok.count(text) == len(own.encode(text, bos=False, eos=False)) <= tok.bound(text)


def test_a_mistral_file_that_isnt_one_is_one_line(tmp_path):
    pytest.importorskip("mistral_common")
    bad = tmp_path / "tekken.json"
    bad.write_text("{}")
    with pytest.raises(TokenizerError, match="isn't a tokenizer file mistral-common reads") as caught:
        chatgate.first_problem("[]", max_tokens=10, tokenizer=str(bad))
    assert "\n" not in str(caught.value)
    with pytest.raises(TokenizerError, match="no such file.*tekken.json"):
        chatgate.first_problem("[]", max_tokens=10, tokenizer=str(tmp_path / "missing" / "tekken.json"))


def test_max_tokens_and_tokenizer_come_together():
    with pytest.raises(ValueError, match="max_tokens= needs tokenizer="):
        chatgate.first_problem("[]", max_tokens=10)
    with pytest.raises(ValueError, match="tokenizer= needs max_tokens="):
        chatgate.first_problem("[]", tokenizer=ENCODING)
    with pytest.raises(ValueError, match="max_tokens= must be a whole number of at least 1"):
        chatgate.first_problem("[]", max_tokens=0, tokenizer=ENCODING)


def test_a_missing_file_or_encoding_is_one_line(tmp_path):
    with pytest.raises(TokenizerError, match="no such file") as caught:
        chatgate.first_problem("[]", max_tokens=10, tokenizer=str(tmp_path / "tokenizer.json"))
    assert "\n" not in str(caught.value)
    with pytest.raises(TokenizerError, match="isn't a tiktoken encoding"):
        chatgate.first_problem("[]", max_tokens=10, tokenizer="no_such_base")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(TokenizerError, match="isn't a tokenizer.json"):
        chatgate.first_problem("[]", max_tokens=10, tokenizer=str(bad))


@pytest.mark.parametrize(
    "library, module, spec, extra",
    [
        ("tiktoken", "tiktoken", "cl100k_base", "tokens"),
        ("tokenizers", "tokenizers", "missing-lib.tokenizer.json", "tokens"),
        ("mistral-common", "mistral_common.tokens.tokenizers.mistral", "missing-lib.tekken.json", "mistral"),
    ],
)
def test_a_missing_library_names_what_to_install(library, module, spec, extra, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)
    load_tokenizer.cache_clear()
    with pytest.raises(TokenizerError, match=rf"needs the {library} library: pip install 'chatgate\[{extra}\]'"):
        chatgate.first_problem("[]", max_tokens=10, tokenizer=spec)


def test_a_download_that_fails_names_the_cache_folder(monkeypatch, tmp_path):
    def offline(name):
        raise ConnectionError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    load_tokenizer.cache_clear()
    with pytest.raises(TokenizerError, match="TIKTOKEN_CACHE_DIR=.* doesn't hold it") as caught:
        chatgate.first_problem("[]", max_tokens=10, tokenizer="cl100k_base")
    assert "\n" not in str(caught.value)
    load_tokenizer.cache_clear()


def test_the_job_reports_a_missing_tokenizer_as_a_config_error(tmp_path):
    from chatgate.job.config import build_config

    base = {"source": "lake/chats", "columns": ["messages"], "outputs": {"quarantine": "q", "summary": "s"}}
    with pytest.raises(ConfigError, match="no such file"):
        build_config({**base, "checks": {"max_tokens": 10, "tokenizer": str(tmp_path / "tokenizer.json")}}, {})


def test_a_tokenizer_is_loaded_once_and_pickled_as_its_name():
    tok = load_tokenizer(_BPE)
    assert load_tokenizer(_BPE) is tok
    assert pickle.loads(pickle.dumps(tok)) is tok
    fmt = format_from(max_tokens=5, tokenizer=_BPE)
    assert len(pickle.dumps(fmt)) < 4096  # the options carry the path, never the tokenizer
    assert pickle.loads(pickle.dumps(fmt)) == fmt


def test_a_shipped_file_is_found_by_its_name(monkeypatch, tmp_path):
    class Files:
        @staticmethod
        def get(name):
            return _BPE if name == "shipped.tokenizer.json" else str(tmp_path / name)

    import types

    monkeypatch.setitem(sys.modules, "pyspark", types.SimpleNamespace(SparkFiles=Files))
    assert base_tokens._local_path("/driver/only/shipped.tokenizer.json") == _BPE
    assert base_tokens._local_path("/driver/only/other.tokenizer.json") is None


# --- The plain reference --------------------------------------------------------------------------

CHATS = [
    CHAT,
    [U("Hello world " * 8), A()],
    [U(), A("the thing " * 8)],
    [U(), {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "hello", "arguments": "{}"}}]}],
    [U([{"type": "text", "text": "Hello world " * 4}, {"type": "image"}]), A()],
    [U(), U()],
    [{"role": "user", "name": "the world", "content": "Hello"}, A()],
    [U("")],
    [],
    None,
]
LIMITS = [8, 12, 20, 30, 60]


@pytest.mark.parametrize("spec", [ENCODING, _BPE, _TEKKEN], ids=["tiktoken", "tokenizer.json", "tekken.json"])
@pytest.mark.parametrize("limit", LIMITS)
def test_the_plain_reference_agrees(spec, limit):
    options = {"max_tokens": limit, "tokenizer": spec, "tools": True}
    values = [json.dumps(c) for c in CHATS]
    codes = chatgate.check_batch(pa.array(values), **options).to_pylist()
    for value, code in zip(values, codes):
        got = None if code is None else (code, locate(value, code, **options))
        assert got in (answers := plain_answers(value, **options)), (value, got, answers)
    assert "too_long" in codes or limit == LIMITS[-1]


# --- Every engine, JSON text and native lists -----------------------------------------------------

ENGINES = ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)]


def _full(message):
    return {"role": None, "content": None, "name": None, **message}


ENGINE_CHATS = [c for c in CHATS if c is None or all(isinstance(m.get("content"), (str, type(None))) for m in c)]
ENGINE_CHATS = [c for c in ENGINE_CHATS if c is None or not any("tool_calls" in m for m in c)]


def _source(form):
    if form == "json":
        values = pa.array([None if c is None else json.dumps(c) for c in ENGINE_CHATS])
    else:
        values = pa.array([None if c is None else [_full(m) for m in c] for c in ENGINE_CHATS])
    return pa.table({"id": pa.array(range(1, len(ENGINE_CHATS) + 1), pa.int64()), "messages": values})


def _expected(options):
    codes = {i + 1: first_row_problem({"messages": c}, None, **options) for i, c in enumerate(ENGINE_CHATS)}
    return {i: code for i, code in codes.items() if code is not None}


ENGINE_OPTIONS = {
    # Spark's Python workers are other processes: the test's tiktoken encoding isn't registered
    # there, so Spark counts with a tokenizer.json file (a real encoding loads there from its cache).
    "tiktoken": ({"max_tokens": 20, "tokenizer": ENCODING}, False),
    "tokenizer.json": ({"max_tokens": 12, "tokenizer": _BPE}, True),
    "tekken.json": ({"max_tokens": 12, "tokenizer": _TEKKEN}, True),
    "openai-profile": ({"profile": "openai", "max_tokens": 20, "tokenizer": ENCODING}, False),
}


def test_the_engine_cases_reach_too_long():
    for options, _ in ENGINE_OPTIONS.values():
        assert "too_long" in _expected(options).values()


@pytest.mark.parametrize("form", ["json", "native"])
@pytest.mark.parametrize("case", list(ENGINE_OPTIONS))
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gives_the_reference_codes(engine, case, form, request):
    options, on_spark = ENGINE_OPTIONS[case]
    if engine == "spark" and not on_spark:
        pytest.skip("the test's tiktoken encoding is registered in this process only")
    failing = failing_on_engine(engine, _source(form), format_from(**options), request)
    assert dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist())) == _expected(options)
