"""The peers' rules: placeholder contents (`placeholder_contents=True`), audio and video counted
against their columns (`audio_token=`, `video_token=`, `audios_column=`, `videos_column=`, as
LLaMA-Factory's mm_plugin counts `<audio>` and `<video>`), and consecutive tool messages (the
answers to parallel calls) never read as a repeated role.

Placeholders: data-cleaning code compares stripped, lowercased text against sets such as
{"nan", "null", "none", ...} (pandas' `na_values` lists "NaN", "nan", "null", "None" as written),
so chatgate compares after stripping and ignoring case: `NaN`, `nan`, `NULL`, ` None `,
`undefined`. Tool runs: mistral-common's `_validate_message_order` lets a tool message follow a
tool message, and TRL checks no turn order, so `tool, tool` is one turn with or without
tools=True.

Labelled rows on every path (the reference, Arrow JSON text, native values), the plain
reference on drawn conversations, and every engine (local, DuckDB, Spark) on JSON text and
native list columns, for these options and the `mistral` profile.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chatgate
from chatgate.names import REASON
from chatgate.rules import first_row_problem, format_from, locate

try:
    import strategies as drawn
    from plain_reference import plain_answers
    from plain_reference.datasets import plain_chat_row
    from rule_examples import A, S, U, assert_example, call, examples, failing_on_engine, msg
except ImportError:  # tests/ imported as a package
    import tests.strategies as drawn
    from tests.plain_reference import plain_answers
    from tests.plain_reference.datasets import plain_chat_row
    from tests.rule_examples import A, S, U, assert_example, call, examples, failing_on_engine, msg

P = {"placeholder_contents": True}
TOOLS = {"roles": ["system", "user", "assistant", "tool"]}  # the tool role without tools=True


def row(*messages):
    return {"messages": list(messages)}


def text(value):
    return {"type": "text", "text": value}


PEER_ROWS = examples(
    ("nan", row(U, msg("assistant", "NaN")), None, P, "placeholder_content"),
    ("nan-lower", row(msg("user", "nan"), A), None, P, "placeholder_content"),
    ("null", row(U, msg("assistant", "null")), None, P, "placeholder_content"),
    ("NULL", row(U, msg("assistant", "NULL")), None, P, "placeholder_content"),
    ("none-spaced", row(U, msg("assistant", "  None\n")), None, P, "placeholder_content"),
    ("undefined", row(msg("system", "undefined"), U, A), None, P, "placeholder_content"),
    ("text-parts", row(msg("user", [text("nu"), text("ll")]), A), None, P, "placeholder_content"),
    ("a-sentence", row(U, msg("assistant", "None of them.")), None, P, None),
    ("nano", row(U, msg("assistant", "nano")), None, P, None),
    ("not-a-number", row(U, msg("assistant", "NaN is not a number.")), None, P, None),
    ("image-and-text", row(msg("user", [{"type": "image"}, text("null")]), A), None, P, None),
    ("null-content", row(U, msg("assistant", None)), None, {**P, "allow_empty": True}, None),
    ("off-by-default", row(U, msg("assistant", "NaN")), None, {}, None),
    ("empty-first", row(U, msg("assistant", "")), None, P, "empty_content"),
    ("placeholder-after-order", row(U, U, msg("assistant", "null")), None, P, "not_alternating"),
    # tool runs: parallel answers are one turn, with or without tools=True
    ("tool-run-no-tools", row(U, msg("assistant", "calling"), msg("tool", "1"), msg("tool", "2"), A), None, TOOLS, None),
    ("tool-run-tools", row(U, msg("assistant", None, tool_calls=[call("f", id="a"), call("g", id="b")]),
                           msg("tool", "1", tool_call_id="a"), msg("tool", "2", tool_call_id="b"), A),
     None, {"tools": True}, None),
    ("assistant-after-tools-no-tools", row(U, A, msg("tool", "1"), msg("tool", "2"), A), None, TOOLS, None),
    ("user-user-still", row(U, U, msg("assistant", "x"), msg("tool", "1"), msg("tool", "2")), None, TOOLS, "not_alternating"),
    ("orphan-still", row(U, A, msg("tool", "1"), msg("tool", "2"), A), None, {"tools": True}, "orphan_tool"),
)


@pytest.mark.parametrize(("row", "kind", "options", "expected", "forms"), PEER_ROWS)
def test_peer_rows(row, kind, options, expected, forms):
    assert_example(row, kind, options, expected, forms)
    assert {None if a is None else a[0] for a in plain_answers(row, **options)} == {expected}


def test_a_placeholder_is_located_at_its_message():
    value = [U, msg("assistant", "x"), msg("user", "None"), msg("assistant", "null")]
    assert locate(value, "placeholder_content", **P) == 2


PLACEHOLDERED = st.sampled_from(["NaN", "null", "None", "undefined", "NULL", " nan ", "Nonesuch", "null pointer"])


@st.composite
def placeholder_chats(draw):
    chat = draw(st.one_of(drawn.tool_chats(), drawn.image_chats(), drawn.well_formed("role", "content", ["system", "user", "assistant"])))
    if chat and isinstance(chat, list) and draw(st.booleans()):
        i = draw(st.integers(0, len(chat) - 1))
        if isinstance(chat[i], dict):
            chat[i] = {**chat[i], "content": draw(PLACEHOLDERED)}
    return chat


SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
PLACEHOLDER_OPTIONS = st.fixed_dictionaries(
    {"placeholder_contents": st.just(True)},
    optional={"tools": st.booleans(), "allow_empty": st.booleans(), "alternate": st.booleans()},
)


@SETTINGS
@given(st.lists(drawn.mutated(placeholder_chats(), most=1), min_size=1, max_size=5), PLACEHOLDER_OPTIONS)
def test_placeholders_agree_with_the_plain_reference(values, options):
    codes = chatgate.check_batch(pa.array([json.dumps(v) for v in values]), **options).to_pylist()
    for value, code in zip(values, codes):
        got = None if code is None else (code, locate(value, code, **options))
        assert got in (answers := plain_answers(value, **options)), (value, got, answers)


# --- Audio and video against their columns ------------------------------------------------------

AV = {"audio_token": "<audio>", "video_token": "<video>", "audios_column": "audios", "videos_column": "videos"}
SAY = msg("user", "<audio>What is said?")
SHOW = msg("user", "<video>What happens?")


def media_row(*messages, audios=None, videos=None):
    return {"messages": list(messages), "audios": audios, "videos": videos}


MEDIA_ROWS = examples(
    ("one-audio", media_row(SAY, A, audios=["a.wav"]), None, AV, None),
    ("audio-missing", media_row(SAY, A, audios=[]), None, AV, "audio_count"),
    ("audio-null-column", media_row(SAY, A), None, AV, "audio_count"),
    ("two-tags-one-audio", media_row(msg("user", "<audio><audio>"), A, audios=["a.wav"]), None, AV, "audio_count"),
    ("audio-part", media_row(msg("user", [{"type": "audio"}, text("Transcribe.")]), A, audios=["a.wav"]), None, AV, None),
    ("audio-tag-in-text-part", media_row(msg("user", [text("<audio>?")]), A, audios=["a.wav"]), None, AV, None),
    ("one-video", media_row(SHOW, A, videos=["v.mp4"]), None, AV, None),
    ("video-extra", media_row(U, A, videos=["v.mp4"]), None, AV, "video_count"),
    ("audio-before-video", media_row(SAY, A, videos=["v.mp4"]), None, AV, "audio_count"),
    ("audio-column-not-a-list", media_row(SAY, A, audios="a.wav"), None, AV, "audio_count", "native"),
    ("no-column-named", media_row(SAY, A), None, {"audio_token": "<audio>"}, None),
    ("audio-column-only", media_row(SAY, SHOW, A, audios=["a.wav"]), None,
     {"audio_token": "<audio>", "audios_column": "audios", "alternate": False}, None),
    ("order-first", media_row(U, U, A, audios=["a.wav"]), None, AV, "not_alternating"),
    ("prompt-completion", {"prompt": [SAY], "completion": [A], "audios": ["a.wav"]}, None, AV | {"videos_column": None}, None),
    ("prompt-completion-missing", {"prompt": [SAY], "completion": [A], "audios": []}, None, AV | {"videos_column": None},
     "audio_count"),
)


@pytest.mark.parametrize(("row", "kind", "options", "expected", "forms"), MEDIA_ROWS)
def test_media_rows(row, kind, options, expected, forms):
    assert_example(row, kind, options, expected, forms)
    if "messages" in row:
        answers = plain_chat_row(row, **options)
        assert {None if a is None else a[0] for a in answers} == {expected}


MEDIA_OPTIONS = st.fixed_dictionaries({}, optional={k: st.just(v) for k, v in AV.items()} | {"alternate": st.booleans()})
MEDIA_CONTENTS = st.sampled_from(
    ["<audio>Hi", "<video><audio>", "<audio><audio>", "Hi", [{"type": "audio"}], [{"type": "video"}, text("<audio>")], ""]
)


@st.composite
def media_rows(draw):
    roles = draw(st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=4))
    messages = [msg(role, draw(MEDIA_CONTENTS)) for role in roles]
    lists = st.one_of(st.none(), st.lists(st.just("x"), max_size=3), st.just("x.wav"))
    return {"messages": messages, "audios": draw(lists), "videos": draw(lists)}


@SETTINGS
@given(media_rows(), MEDIA_OPTIONS)
def test_media_agree_with_the_plain_reference(row, options):
    code = first_row_problem(row, None, **options)
    assert code in {None if a is None else a[0] for a in plain_chat_row(row, **options)}, (row, code)


# --- Every engine, JSON text and native lists ----------------------------------------------------

M_CALL = {"id": "TX92Jm8Zi", "type": "function", "function": {"name": "anagram", "arguments": '{"w": "race"}'}}
CHATS = [
    [msg("user", "<audio>NaN"), msg("assistant", "NaN")],
    [msg("user", "null"), A],
    [U, msg("assistant", "None of them.")],
    [U, A, msg("tool", "1"), msg("tool", "2"), A],
    [U, U, A],
    [S, U, msg("assistant", None, tool_calls=[M_CALL]), msg("tool", "x", tool_call_id="TX92Jm8Zi"), A],
    [S, U, msg("assistant", None, tool_calls=[{**M_CALL, "id": "c1"}]), msg("tool", "x", tool_call_id="c1"), A],
    [U, msg("assistant", "Sure.", tool_calls=[M_CALL]), msg("tool", "x", tool_call_id="TX92Jm8Zi"), A],
    [U, msg("assistant", None, tool_calls=[M_CALL, {**M_CALL, "id": "3XhQnxLsT"}]), msg("tool", "x", tool_call_id="TX92Jm8Zi"), A],
    [U, msg("assistant", None, tool_calls=[M_CALL])],
    [U, msg("assistant", "")],
    [U],
    [],
    None,
]
ENGINE_OPTIONS = {
    "placeholders": P,
    "tool-runs": {**TOOLS, **P},
    "mistral": {"profile": "mistral"},
    "mistral-placeholders": {"profile": "mistral", **P},
    "audio-video": {**AV, "alternate": False},
}
ENGINES = ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)]


def _full(message):
    """A message with every key the table's messages use (a native struct has them all)."""
    return {"role": None, "content": None, "tool_calls": None, "tool_call_id": None, **message}


AUDIOS = [["a.wav"], None, None, None, None, None, None, None, None, None, None, ["a.wav"], None, None]
VIDEOS = [None, ["v.mp4"], None, None, None, None, None, None, None, None, None, None, None, None]


def _source(form):
    if form == "json":
        values = pa.array([None if c is None else json.dumps(c) for c in CHATS])
        audios = pa.array([None if a is None else json.dumps(a) for a in AUDIOS])
        videos = pa.array([None if v is None else json.dumps(v) for v in VIDEOS])
    else:
        values = pa.array([None if c is None else [_full(m) for m in c] for c in CHATS])
        audios, videos = pa.array(AUDIOS, pa.list_(pa.string())), pa.array(VIDEOS, pa.list_(pa.string()))
    ids = pa.array(range(1, len(CHATS) + 1), pa.int64())
    return pa.table({"id": ids, "messages": values, "audios": audios, "videos": videos})


def _expected(options):
    rows = [{"messages": c, "audios": a, "videos": v} for c, a, v in zip(CHATS, AUDIOS, VIDEOS)]
    codes = {i + 1: first_row_problem(r, None, **options) for i, r in enumerate(rows)}
    return {i: code for i, code in codes.items() if code is not None}


def test_the_engine_table_reaches_the_new_codes():
    reached = {code for options in ENGINE_OPTIONS.values() for code in _expected(options).values()}
    assert {"placeholder_content", "mistral_tool_call", "content_or_calls", "unanswered_call"} <= reached
    assert {"audio_count", "video_count"} <= reached
    assert 4 not in _expected(ENGINE_OPTIONS["tool-runs"])  # a tool run isn't a repeated role


@pytest.mark.parametrize("form", ["json", "native"])
@pytest.mark.parametrize("case", list(ENGINE_OPTIONS))
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gives_the_reference_codes(engine, case, form, request):
    options = ENGINE_OPTIONS[case]
    failing = failing_on_engine(engine, _source(form), format_from(**options), request)
    assert dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist())) == _expected(options)
    if "audios_column" not in options:  # one column alone: no row to count the media of
        assert chatgate.check_batch(_source(form)["messages"], **options).to_pylist() == [
            _expected(options).get(i + 1) for i in range(len(CHATS))
        ]
