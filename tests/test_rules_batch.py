"""The Arrow batch checker (`check_batch`): every input type, and garbage that must never raise.

Every test goes through `codes()`, which also pins the output contract: a
`pa.string()` array as long as the input, equal value by value to `first_problem`.
"""

from __future__ import annotations

import json

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from chatgate.rules import ChatFormat, check_array, check_batch, first_problem

GOOD = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'
TWICE = '[{"role": "user", "content": "Hi"}, {"role": "user", "content": "?"}]'
BOT = '[{"role": "user", "content": ""}, {"role": "bot", "content": "x"}]'
WRAPPED = '{"id": 3, "messages": [{"role": "user", "content": "Hi"}], "tags": ["a"]}'
TEXTS = [
    GOOD,
    TWICE,
    None,
    BOT,
    "[]",
    "null",
    "not json",
    WRAPPED,
    '"' + GOOD.replace('"', '\\"') + '"',
]
TEXT_CODES = [
    None,
    "not_alternating",
    "not_messages",
    "unknown_role",
    "no_messages",
    "not_messages",
    "not_messages",
    None,
    "not_messages",
]

CHAT = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]


def codes(array, **kwargs) -> list:
    """check_batch's codes, after checking the output type, the length and `first_problem`."""
    out = check_batch(array, **kwargs)
    assert isinstance(out, pa.Array)
    assert out.type == pa.string()
    assert len(out) == len(array)
    values = array.to_pylist(maps_as_pydicts="lossy") if _has_map(array.type) else array.to_pylist()
    assert out.to_pylist() == [first_problem(v, **kwargs) for v in values]
    return out.to_pylist()


def _has_map(dtype) -> bool:
    return "map<" in str(dtype)


# --- JSON text --------------------------------------------------------------------

TEXT_TYPES = [
    pytest.param(pa.string(), id="string"),
    pytest.param(pa.large_string(), id="large_string"),
    pytest.param(pa.binary(), id="binary"),
    pytest.param(pa.large_binary(), id="large_binary"),
    pytest.param(pa.string_view(), id="string_view"),
    pytest.param(pa.binary_view(), id="binary_view"),
]


@pytest.mark.parametrize("type", TEXT_TYPES)
def test_text_types(type):
    values = [
        v if v is None or type in (pa.string(), pa.large_string(), pa.string_view()) else v.encode()
        for v in TEXTS
    ]
    assert codes(pa.array(values, type)) == TEXT_CODES


@pytest.mark.parametrize("type", TEXT_TYPES)
def test_text_types_na_pass(type):
    assert codes(pa.array([None, None], type), na_pass=True) == [None, None]
    assert codes(pa.array([None, None], type)) == ["not_messages", "not_messages"]


@pytest.mark.parametrize("type", TEXT_TYPES)
def test_empty_arrays(type):
    assert codes(pa.array([], type)) == []


def test_sliced_array():
    array = pa.array(TEXTS).slice(2, 4)
    assert codes(array) == TEXT_CODES[2:6]


def test_sliced_binary_array_with_invalid_utf8_outside_the_slice():
    array = pa.array([b"\xff\xfe", GOOD.encode(), b"[\xff]"], pa.binary()).slice(1, 1)
    assert codes(array) == [None]


def test_json_extension_type():
    array = pa.ExtensionArray.from_storage(pa.json_(), pa.array(TEXTS))
    assert check_batch(array).to_pylist() == TEXT_CODES


def test_parameters_reach_the_batch_checker():
    array = pa.array(['[{"from": "human", "value": "Hi"}]', '[{"from": "gpt", "value": " "}]'])
    kwargs = {
        "roles": ["human", "gpt"],
        "role_key": "from",
        "content_key": "value",
        "last_role": "gpt",
    }
    assert codes(array, **kwargs) == ["last_role", "empty_content"]
    assert codes(array, **{**kwargs, "last_role": None, "allow_empty": True}) == [None, None]


def test_check_array_takes_a_chat_format():
    out = check_array(pa.array([TWICE]), ChatFormat(alternate=False))
    assert out.to_pylist() == [None]


# --- Dictionary-encoded and chunked -------------------------------------------------


def test_dictionary_encoded_strings():
    array = pc.dictionary_encode(pa.array(TEXTS * 3))
    assert pa.types.is_dictionary(array.type)
    assert codes(array) == TEXT_CODES * 3
    assert codes(array, na_pass=True) == [
        None if v is None else c for v, c in zip(TEXTS * 3, TEXT_CODES * 3)
    ]


def test_dictionary_with_null_indices_and_null_values():
    dictionary = pa.array([GOOD, None, "[]"])
    indices = pa.array([0, None, 1, 2, 0], pa.int8())
    array = pa.DictionaryArray.from_arrays(indices, dictionary)
    assert codes(array) == [None, "not_messages", "not_messages", "no_messages", None]
    assert codes(array, na_pass=True) == [None, None, None, "no_messages", None]


def test_dictionary_with_only_passing_values_and_null_indices():
    array = pa.DictionaryArray.from_arrays(pa.array([None, 0], pa.int32()), pa.array([GOOD]))
    assert codes(array) == ["not_messages", None]


def test_dictionary_of_binary():
    array = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1]), pa.array([b"\xff", GOOD.encode()]))
    assert codes(array) == [None, "not_messages", None]


def test_chunked_array():
    array = pa.chunked_array([pa.array(TEXTS[:3]), pa.array([], pa.string()), pa.array(TEXTS[3:])])
    out = check_batch(array)
    assert out.type == pa.string()
    assert out.to_pylist() == TEXT_CODES


def test_chunked_array_without_chunks():
    out = check_batch(pa.chunked_array([], pa.string()))
    assert out.type == pa.string()
    assert len(out) == 0


def test_chunked_dictionary_array():
    array = pa.chunked_array(
        [pc.dictionary_encode(pa.array(TEXTS)), pc.dictionary_encode(pa.array(TEXTS[::-1]))]
    )
    assert check_batch(array).to_pylist() == TEXT_CODES + TEXT_CODES[::-1]


# --- Native values ----------------------------------------------------------------


def test_list_of_struct():
    array = pa.array([CHAT, CHAT[:1] * 2, [], None, [{"role": "bot", "content": ""}]])
    assert pa.types.is_list(array.type)
    assert codes(array) == [None, "not_alternating", "no_messages", "not_messages", "unknown_role"]
    assert codes(array, na_pass=True)[3] is None


def test_large_list_of_struct():
    array = pa.array(
        [CHAT, [{"role": "user", "content": None}]],
        pa.large_list(pa.struct([("role", pa.string()), ("content", pa.string())])),
    )
    assert codes(array) == [None, "empty_content"]


def test_list_of_struct_with_content_parts():
    part = pa.struct([("type", pa.string()), ("text", pa.string())])
    message = pa.struct([("role", pa.string()), ("content", pa.list_(part))])
    array = pa.array(
        [
            [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            [{"role": "user", "content": [{"type": "text", "text": "  "}]}],
            [{"role": "user", "content": [{"type": "image", "text": None}]}],
            [{"role": "user", "content": []}],
        ],
        pa.list_(message),
    )
    assert codes(array) == [None, "empty_content", None, "empty_content"]


def test_list_of_strings_is_bad_message():
    assert codes(pa.array([["user", "Hi"]])) == ["bad_message"]


def test_polars_list_of_struct_with_null_fields():
    series = pl.Series(
        [
            [{"role": "user", "content": "Hi"}, {"role": "assistant"}],
            [{"content": "orphan"}],
            [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
            None,
            [],
        ]
    )
    array = series.to_arrow()
    assert codes(array) == ["empty_content", "bad_message", None, "not_messages", "no_messages"]
    assert codes(array, na_pass=True)[3] is None


def test_polars_struct_with_messages_field():
    series = pl.Series(
        [{"id": 1, "messages": CHAT}, {"id": 2, "messages": None}, {"id": 3, "messages": []}]
    )
    assert codes(series.to_arrow()) == [None, "not_messages", "no_messages"]


def test_struct_with_messages_field():
    array = pa.array(
        [{"messages": CHAT, "source": "a"}, {"messages": CHAT[:1] * 2, "source": "b"}, None]
    )
    assert pa.types.is_struct(array.type)
    assert codes(array) == [None, "not_alternating", "not_messages"]


def test_struct_without_messages_field():
    assert codes(pa.array([{"conversation": CHAT}])) == ["not_messages"]


def test_struct_whose_messages_hold_json_text():
    assert codes(pa.array([{"messages": GOOD}])) == ["not_messages"]


def test_map_typed_messages():
    array = pa.array(
        [
            [{"role": "user", "content": "Hi"}],
            [{"role": "user", "content": ""}],
            [{"content": "x"}],
        ],
        pa.list_(pa.map_(pa.string(), pa.string())),
    )
    assert codes(array) == [None, "empty_content", "bad_message"]


def test_map_typed_wrapper():
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    array = pa.array(
        [[("messages", CHAT)], [("other", CHAT)]], pa.map_(pa.string(), pa.list_(message))
    )
    assert codes(array) == [None, "not_messages"]


def test_null_array():
    assert codes(pa.nulls(3)) == ["not_messages"] * 3
    assert codes(pa.nulls(3), na_pass=True) == [None] * 3


@pytest.mark.parametrize(
    "type",
    [pa.null(), pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])), pa.int64()],
    ids=["null", "list-of-struct", "int64"],
)
def test_empty_native_arrays(type):
    assert codes(pa.array([], type)) == []


def test_numbers_are_not_messages():
    assert codes(pa.array([1.5, float("nan"), None])) == ["not_messages"] * 3
    assert codes(pa.array([1.5, float("nan"), None]), na_pass=True) == ["not_messages", None, None]


# --- Garbage: a code for every value, never an exception -----------------------------

DEEP = 100_000
MESSAGE = '{"role": "user", "content": "x"}'

GARBAGE_TEXT = [
    pytest.param("[" * DEEP + "]" * DEEP, "not_messages", id="deep-nesting-top-level"),
    pytest.param("[" * DEEP, "not_messages", id="deep-unclosed-nesting"),
    pytest.param(
        '{"messages": ' * DEEP + "[]" + "}" * DEEP, "not_messages", id="deep-wrapper-objects"
    ),
    pytest.param(
        '[{"role": "user", "content": ' + "[" * DEEP + "]" * DEEP + "}]",
        "not_messages",
        id="deep-nesting-in-content",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "meta": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}]",
        "not_messages",
        id="deep-nesting-in-unknown-key",
    ),
    pytest.param(
        "[" + MESSAGE + ', {"role": "user", "content": NaN}]',
        "not_messages",
        id="nan-literal-content",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "score": Infinity}]',
        "not_messages",
        id="infinity-literal-unknown-key",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "score": -Infinity}]',
        "not_messages",
        id="minus-infinity-literal",
    ),
    pytest.param(
        '{"messages": [' + MESSAGE + '], "score": NaN}', "not_messages", id="nan-literal-in-wrapper"
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}]",
        None,
        id="huge-integer-unknown-key",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "n": -' + "9" * 100_000 + "}]",
        None,
        id="huge-negative-integer",
    ),
    pytest.param(
        '{"messages": [' + MESSAGE + '], "n": ' + "1" * 5000 + "}",
        None,
        id="huge-integer-in-wrapper",
    ),
    pytest.param(
        '[{"role": "user", "content": ' + "9" * 5000 + "}]", None, id="huge-integer-content"
    ),
    pytest.param(
        '[{"role": ' + "9" * 5000 + ', "content": "x"}]', "bad_message", id="huge-integer-role"
    ),
    pytest.param("9" * 5000, "not_messages", id="huge-integer-top-level"),
    pytest.param(
        '[{"role": "user", "content": "x", "n": 0' + "9" * 5000 + "}]",
        "not_messages",
        id="huge-integer-leading-zero",
    ),
    pytest.param(
        '[{"role": "user", "content": [{"type": "text", "text": "x", "n": ' + "7" * 5000 + "}]}]",
        None,
        id="huge-integer-in-part",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "n": 1e400}]', None, id="huge-float-unknown-key"
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "n": 1' + "0" * 400 + ".5e99999}]",
        None,
        id="huge-float-long-mantissa",
    ),
    pytest.param('[{"role": "user", "content": [1e400]}]', None, id="huge-float-in-parts"),
    pytest.param(
        '[{"role": "user", "role": "bot", "content": "x"}]',
        "unknown_role",
        id="duplicate-role-last-wins",
    ),
    pytest.param(
        '[{"role": "bot", "role": "user", "content": "x"}]', None, id="duplicate-role-last-valid"
    ),
    pytest.param(
        '[{"role": 1, "role": "user", "content": "x"}]', None, id="duplicate-role-first-not-string"
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "content": ""}]', "empty_content", id="duplicate-content"
    ),
    pytest.param('{"messages": [], "messages": [' + MESSAGE + "]}", None, id="duplicate-messages"),
    pytest.param(
        '{"messages": [' + MESSAGE + '], "messages": 1}',
        "not_messages",
        id="duplicate-messages-last-not-list",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "k": "\\ud800"}]',
        "not_messages",
        id="lone-surrogate-escape",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "k": "\\x"}]',
        "not_messages",
        id="bad-escape-in-unknown-key",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "k": "a\tb"}]',
        "not_messages",
        id="raw-tab-in-unknown-key",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "k": [1,]}]',
        "not_messages",
        id="trailing-comma-in-unknown-key",
    ),
    pytest.param(
        '[{"role": "user", "content": "x", "k": tru}]',
        "not_messages",
        id="bad-literal-in-unknown-key",
    ),
    pytest.param("[" + MESSAGE + "] [", "not_messages", id="two-documents"),
    pytest.param("\x00", "not_messages", id="nul"),
]


@pytest.mark.parametrize("text, expected", GARBAGE_TEXT)
@pytest.mark.parametrize("type", [pa.string(), pa.binary()], ids=["string", "binary"])
def test_garbage_text(text, expected, type):
    value = text if type == pa.string() else text.encode()
    assert codes(pa.array([value, GOOD], type)) == [expected, None]


INVALID_UTF8 = [
    pytest.param(b'[{"role": "user", "content": "caf\xe9"}]', id="in-content"),
    pytest.param(b'[{"role": "user", "content": "x", "n\xff": 1}]', id="in-unknown-key"),
    pytest.param(b'[{"role": "user", "content": "x", "note": "\xc3\x28"}]', id="in-unknown-value"),
    pytest.param(
        b'{"messages": [{"role": "user", "content": "x"}], "x": "\xed\xa0\x80"}',
        id="encoded-surrogate-in-wrapper",
    ),
    pytest.param(
        b'[{"role": "user", "content": "x", "n": "\xf8\x88\x80\x80\x80"}]', id="five-byte-sequence"
    ),
    pytest.param(b'[{"role": "user", "content": "x", "n": "\xc0\xaf"}]', id="overlong-encoding"),
    pytest.param(b"\xff\xfe[]", id="top-level"),
    pytest.param(b"\x80", id="lone-continuation-byte"),
]


@pytest.mark.parametrize("value", INVALID_UTF8)
@pytest.mark.parametrize("type", [pa.binary(), pa.large_binary()], ids=["binary", "large_binary"])
def test_invalid_utf8(value, type):
    assert codes(pa.array([GOOD.encode(), value, None], type)) == [
        None,
        "not_messages",
        "not_messages",
    ]


def test_invalid_utf8_dictionary():
    array = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 0]), pa.array([b'["\xff"]', GOOD.encode()])
    )
    assert codes(array) == ["not_messages", None, "not_messages"]


def test_nesting_near_the_limit_agrees():
    """Around msgspec's nesting limit the verdict must not depend on the path or the stack."""

    def deep_call(levels, f):
        return f() if levels == 0 else deep_call(levels - 1, f)

    for depth in (900, 990, 1000, 1010, 1100, 1190, 1210, 1300):
        text = '[{"role": "user", "content": "x", "n": ' + "[" * depth + "]" * depth + "}]"
        expected = first_problem(text)
        assert deep_call(500, lambda text=text: first_problem(text)) == expected, depth
        assert check_batch(pa.array([text])).to_pylist() == [expected], depth
        assert deep_call(
            500, lambda text=text: check_batch(pa.array([text.encode()], pa.binary())).to_pylist()
        ) == [expected]
    assert (
        first_problem('[{"role": "user", "content": "x", "n": ' + "[" * 1000 + "]" * 1000 + "}]")
        is None
    )


# Values past the default max_value_bytes= (16 MiB) are too_large unread; with no limit, read whole.


def test_fifty_megabyte_string():
    content = "a" * (50 * 1024 * 1024)
    text = json.dumps([{"role": "user", "content": content}])
    array = pa.array([text, text[:-1]], pa.large_string())
    assert codes(array, max_value_bytes=None) == [None, "not_messages"]
    assert codes(array) == ["too_large", "too_large"]


def test_fifty_megabyte_blank_string():
    text = '[{"role": "user", "content": "' + " " * (50 * 1024 * 1024) + '"}]'
    assert check_batch(pa.array([text]), max_value_bytes=None).to_pylist() == ["empty_content"]
    assert check_batch(pa.array([text])).to_pylist() == ["too_large"]


def test_fifty_megabytes_of_garbage():
    text = '"[' * (25 * 1024 * 1024)
    array = pa.array([text, "[" * (50 * 1024 * 1024)], pa.large_string())
    assert check_batch(array, max_value_bytes=None).to_pylist() == ["not_messages"] * 2
    assert check_batch(array).to_pylist() == ["too_large"] * 2


# --- the strict path: remembered verdicts on role sequences -------------------------


def _chat(*roles_and_contents) -> str:
    return json.dumps([{"role": r, "content": c} for r, c in roles_and_contents])


STRICT_CASES = [
    # The same role sequence with a blank content elsewhere: the verdict on the roles
    # alone is None, the blank content must still be found (every blank kind).
    _chat(("user", "Hi"), ("assistant", "Hello")),
    _chat(("user", "Hi"), ("assistant", "")),
    _chat(("user", " \n\t"), ("assistant", "Hello")),
    _chat(("user", "Hi"), ("assistant", "\u3000\u00a0\u2003")),
    _chat(("user", "Hi"), ("assistant", "\x1c")),
    # A role problem comes before a blank content, as in the judge.
    _chat(("user", ""), ("user", "x")),
    _chat(("assistant", "Hi"), ("user", "")),
    # Refused by the strict decoder: the next steps decide.
    _chat(("user", "Hi"), ("bot", "x")),
    '[{"role": "user", "content": null}, {"role": "assistant", "content": "x"}]',
    '[{"role": "user"}, {"role": "assistant", "content": "x"}]',
    '[{"role": "user", "content": [{"type": "text", "text": " "}]}]',
    # Duplicate keys: the last one counts on every path.
    '[{"role": "bot", "role": "user", "content": "Hi"}, {"role": "assistant", "content": "x"}]',
    '[{"role": "user", "role": "bot", "content": "Hi"}, {"role": "assistant", "content": "x"}]',
    '[{"role": "user", "content": "Hi", "content": " "}, {"role": "assistant", "content": "x"}]',
    '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "x"}]}',
]


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"first_role": "user", "last_role": "assistant"}, {"allow_empty": True}, {"alternate": False}],
    ids=["default", "first-last", "allow_empty", "no-alternation"],
)
def test_strict_path_agrees_with_the_reference(kwargs):
    # Twice over: the second pass reads the remembered verdicts.
    array = pa.array(STRICT_CASES * 2)
    found = codes(array, **kwargs)
    assert found[: len(STRICT_CASES)] == found[len(STRICT_CASES) :]


def test_strict_path_finds_blank_contents_behind_a_remembered_verdict():
    array = pa.array(STRICT_CASES[:5])
    assert codes(array) == [None, "empty_content", "empty_content", "empty_content", "empty_content"]


def test_strict_path_stops_remembering_at_its_limit(monkeypatch):
    from chatgate.rules.check.batch import _StrictPath

    fmt = ChatFormat(alternate=False)
    strict = _StrictPath.of(fmt)
    monkeypatch.setattr(_StrictPath, "MAX_VERDICTS", len(strict.verdicts) + 2)
    chats = [_chat(*[("user", "x")] * n) for n in range(1, 8)]
    assert check_array(pa.array(chats), fmt).to_pylist() == [None] * 7
    assert len(strict.verdicts) <= _StrictPath.MAX_VERDICTS
    assert check_array(pa.array(chats), fmt).to_pylist() == [None] * 7
