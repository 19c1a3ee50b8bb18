"""Tool calling: tool_calls, tool messages, the tools column, in every dataset type.

Labelled examples, passing and failing, each run in JSON text and native forms
through the per-row reference and the RowCheck batch path (`assert_example`).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import (
    DATASET_TYPES,
    ChatCheck,
    ChatFormat,
    check_batch,
    dataset_checks,
    first_problem,
)
from chatgate.rules.check.judge import BAD
from chatgate.rules.formats.tools import Call, declared_names, parse_calls, sharegpt_calls

try:
    from rule_examples import A2, A, S, U, assert_example, call, examples, msg, schema
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A2, A, S, U, assert_example, call, examples, msg, schema

LM, PO, PC, PREF, IMPL, UNP = DATASET_TYPES[:6]  # TRL's; openai_preference has its own tests
TOOLS = {"tools": True}

ASK = msg("user", "Turn on the living room lights.")
CALL = msg(
    "assistant", None, tool_calls=[call("control_light", {"room": "living room", "state": "on"})]
)
ANSWER = msg("tool", "The lights in the living room are now on.", name="control_light")
DONE = msg("assistant", "Done!")
CHAT = [ASK, CALL, ANSWER, DONE]
DECLARED = [schema("control_light")]


def calling(*calls, content=None, **extra):
    return msg("assistant", content, tool_calls=list(calls), **extra)


def tool(content="ok", **extra):
    return msg("tool", content, **extra)


def row(messages, tools=DECLARED):
    out = {"messages": messages}
    if tools is not ...:
        out["tools"] = tools
    return out


PASSING = examples(
    ("seed-example", row(CHAT), LM, TOOLS, None),
    ("without-tools-column", {"messages": CHAT}, LM, TOOLS, None),
    ("tools-as-json-text", row(CHAT, json.dumps(DECLARED)), LM, TOOLS, None),
    ("bare-schemas", row(CHAT, [{"name": "control_light", "parameters": {}}]), LM, TOOLS, None),
    (
        "empty-content-beside-calls",
        row([ASK, calling(call("control_light"), content=""), ANSWER, DONE]),
        LM,
        TOOLS,
        None,
    ),
    (
        "missing-content-beside-calls",
        row([ASK, msg("assistant", ..., tool_calls=[call("control_light")]), ANSWER, DONE]),
        LM,
        TOOLS,
        None,
    ),
    (
        "content-beside-calls",
        row([ASK, calling(call("control_light"), content="On it."), ANSWER, DONE]),
        LM,
        TOOLS,
        None,
    ),
    (
        "arguments-as-json-text",
        row([ASK, calling(call("control_light", '{"room": "hall"}')), ANSWER, DONE]),
        LM,
        TOOLS,
        None,
        "json",
    ),
    (
        "missing-type",
        row([ASK, calling({"function": {"name": "control_light", "arguments": {}}}), ANSWER, DONE]),
        LM,
        TOOLS,
        None,
    ),
    (
        "parallel-calls-answered",
        row([ASK, calling(call("control_light"), call("control_light")), tool(), tool(), DONE]),
        LM,
        TOOLS,
        None,
    ),
    (
        "two-calls-one-answer",
        row([ASK, calling(call("control_light"), call("control_light")), tool(), DONE]),
        LM,
        TOOLS,
        None,
    ),
    (
        "tool_call_id-matches",
        row(
            [ASK, calling(call("control_light", id="c1")), tool(tool_call_id="c1", name=None), DONE]
        ),
        LM,
        TOOLS,
        None,
    ),
    ("ends-on-an-unanswered-call", row([S, ASK, CALL]), LM, TOOLS, None),
    ("ends-on-a-tool-answer", row([ASK, CALL, ANSWER]), LM, TOOLS, None),
    ("two-rounds", row([ASK, CALL, ANSWER, DONE, ASK, CALL, ANSWER, DONE]), LM, TOOLS, None),
    ("null-tool-calls", row([U, msg("assistant", "Hi", tool_calls=None)]), LM, TOOLS, None),
    ("empty-tool-calls", row([U, msg("assistant", "Hi", tool_calls=[])]), LM, TOOLS, None),
    ("null-tools-no-calls", row([U, A], None), LM, TOOLS, None, "json"),
    ("user-after-tool", row([ASK, CALL, ANSWER, msg("user", "Thanks")]), LM, TOOLS, None),
)

BAD_TOOL_CALL = examples(
    (
        "type-not-function",
        row([ASK, calling(call("control_light", type="custom")), ANSWER, DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "no-function",
        row([ASK, calling({"type": "function", "name": "control_light"}), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "no-name",
        row([ASK, calling({"type": "function", "function": {"arguments": {}}}), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    ("blank-name", row([ASK, calling(call(" ")), DONE]), LM, TOOLS, "bad_tool_call"),
    (
        "no-arguments",
        row([ASK, calling({"type": "function", "function": {"name": "control_light"}}), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "arguments-not-json",
        row([ASK, calling(call("control_light", "room=hall")), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
        "json",
    ),
    (
        "arguments-json-list",
        row([ASK, calling(call("control_light", "[1, 2]")), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
        "json",
    ),
    (
        "arguments-number",
        row([ASK, calling({"type": "function", "function": {"name": "f", "arguments": 5}}), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "tool-calls-not-a-list",
        row([ASK, msg("assistant", None, tool_calls="control_light()"), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "tool-calls-an-object",
        row([ASK, msg("assistant", None, tool_calls=call("control_light")), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    ("call-not-an-object", row([ASK, calling("control_light"), DONE]), LM, TOOLS, "bad_tool_call"),
    (
        "flat-call",
        row([ASK, calling({"name": "control_light", "arguments": {}}), DONE]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "calls-on-a-user-message",
        row([msg("user", "x", tool_calls=[call("control_light")]), A]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "bad-call-before-unknown-role",
        row([ASK, calling("x"), msg("bot")]),
        LM,
        TOOLS,
        "bad_tool_call",
    ),
)

ORPHAN_TOOL = examples(
    ("tool-first", row([tool(), A]), LM, TOOLS, "orphan_tool"),
    ("tool-after-user", row([ASK, tool(), DONE]), LM, TOOLS, "orphan_tool"),
    ("tool-after-plain-assistant", row([ASK, A, tool()]), LM, TOOLS, "orphan_tool"),
    ("more-answers-than-calls", row([ASK, CALL, ANSWER, tool(), DONE]), LM, TOOLS, "orphan_tool"),
    ("tool-after-the-reply", row([ASK, CALL, ANSWER, DONE, tool()]), LM, TOOLS, "orphan_tool"),
    (
        "id-mismatch",
        row([ASK, calling(call("control_light", id="c1")), tool(tool_call_id="c2"), DONE]),
        LM,
        TOOLS,
        "orphan_tool",
    ),
    ("name-mismatch", row([ASK, CALL, tool(name="other"), DONE]), LM, TOOLS, "orphan_tool"),
    (
        "first_role-before-orphan_tool",
        row([tool(), A]),
        LM,
        {**TOOLS, "first_role": "user"},
        "first_role",
    ),
    (
        "orphan_tool-before-not_alternating",
        row([ASK, tool(), msg("user", "?")]),
        LM,
        TOOLS,
        "orphan_tool",
    ),
)

UNKNOWN_TOOL = examples(
    ("not-declared", row(CHAT, [schema("other")]), LM, TOOLS, "unknown_tool"),
    (
        "declared-as-bare-schema-elsewhere",
        row(CHAT, [{"name": "other"}]),
        LM,
        TOOLS,
        "unknown_tool",
    ),
    ("null-tools-with-calls", row(CHAT, None), LM, TOOLS, "unknown_tool", "json"),
    ("empty-tools-with-calls", row(CHAT, []), LM, TOOLS, "unknown_tool", "json"),
    (
        "one-of-two-undeclared",
        row([ASK, calling(call("control_light"), call("dim")), tool(), DONE]),
        LM,
        TOOLS,
        "unknown_tool",
    ),
    (
        "empty_content-after-unknown_tool",
        row([ASK, CALL, tool(""), DONE], [schema("x")]),
        LM,
        TOOLS,
        "unknown_tool",
    ),
)

BAD_TOOLS = examples(
    ("not-json", row(CHAT, "control_light"), LM, TOOLS, "bad_tools"),
    ("an-object", row(CHAT, schema("control_light")), LM, TOOLS, "bad_tools", "json"),
    (
        "schema-without-name",
        row(CHAT, [{"type": "function", "function": {"description": "x"}}]),
        LM,
        TOOLS,
        "bad_tools",
    ),
    ("not-a-schema", row(CHAT, json.dumps([5])), LM, TOOLS, "bad_tools"),
    ("bad-tools-even-without-calls", row([U, A], "oops"), LM, TOOLS, "bad_tools"),
)

ROLES_AND_CONTENT = examples(
    ("tool-role-without-the-option", row(CHAT), LM, {}, "unknown_role"),
    (
        "empty-content-beside-calls-without-the-option",
        {"messages": [ASK, calling(call("f"), content="")]},
        LM,
        {},
        "empty_content",
    ),
    (
        "malformed-calls-ignored-without-the-option",
        {"messages": [ASK, msg("assistant", "Hi", tool_calls="x")]},
        LM,
        {},
        None,
    ),
    ("empty-tool-answer", row([ASK, CALL, tool(""), DONE]), LM, TOOLS, "empty_content"),
    ("empty-reply-without-calls", row([ASK, msg("assistant", "")]), LM, TOOLS, "empty_content"),
    (
        "assistant-twice-without-a-tool-between",
        row([ASK, CALL, DONE]),
        LM,
        TOOLS,
        "not_alternating",
    ),
    (
        "user-twice-around-a-tool-run",
        row([ASK, CALL, ANSWER, ASK, ASK]),
        LM,
        TOOLS,
        "not_alternating",
    ),
    (
        "last_role-tool",
        row([ASK, CALL, ANSWER]),
        LM,
        {**TOOLS, "last_role": "assistant"},
        "last_role",
    ),
    ("last_role-after-reply", row(CHAT), LM, {**TOOLS, "last_role": "assistant"}, None),
    ("with-system-first-role", row([S] + CHAT), LM, {**TOOLS, "first_role": "user"}, None),
)

# The dataset types with tools: a prompt may end on a tool turn, a completion may hold them.
P_TOOL = [ASK, CALL, ANSWER]
DATASETS = examples(
    ("prompt-only-ends-on-tool", {"prompt": P_TOOL, "tools": DECLARED}, PO, TOOLS, None),
    ("prompt-only-ends-on-tool-without-tools", {"prompt": P_TOOL}, PO, {}, "unknown_role"),
    (
        "prompt-only-ends-on-call",
        {"prompt": [ASK, CALL], "tools": DECLARED},
        PO,
        TOOLS,
        "prompt_end",
    ),
    (
        "prompt-only-undeclared",
        {"prompt": P_TOOL, "tools": [schema("x")]},
        PO,
        TOOLS,
        "unknown_tool",
    ),
    (
        "completion-calls",
        {"prompt": [ASK], "completion": [CALL, ANSWER, DONE], "tools": DECLARED},
        PC,
        TOOLS,
        None,
    ),
    ("completion-ends-on-tool", {"prompt": [ASK], "completion": [CALL, ANSWER]}, PC, TOOLS, None),
    ("prompt-ends-on-tool", {"prompt": P_TOOL, "completion": [DONE]}, PC, TOOLS, None),
    (
        "completion-tool-without-tools",
        {"prompt": [ASK], "completion": [CALL, ANSWER, DONE]},
        PC,
        {},
        "unknown_role",
    ),
    (
        "completion-user-without-tools",
        {"prompt": [ASK], "completion": [DONE, ASK]},
        PC,
        {},
        "completion_role",
    ),
    (
        "completion-answers-a-prompt-call",
        {"prompt": [ASK, CALL], "completion": [ANSWER, DONE]},
        PC,
        TOOLS,
        "prompt_end",
    ),
    (
        "completion-orphan-tool",
        {"prompt": [ASK], "completion": [ANSWER, DONE]},
        PC,
        TOOLS,
        "orphan_tool",
    ),
    (
        "completion-user",
        {"prompt": [ASK], "completion": [CALL, ANSWER, ASK]},
        PC,
        TOOLS,
        "completion_role",
    ),
    (
        "completion-undeclared",
        {"prompt": [ASK], "completion": [CALL, ANSWER, DONE], "tools": [schema("x")]},
        PC,
        TOOLS,
        "unknown_tool",
    ),
    (
        "completion-bad-call",
        {"prompt": [ASK], "completion": [calling("x"), DONE]},
        PC,
        TOOLS,
        "bad_tool_call",
    ),
    (
        "trl-preference-with-tool-calls",
        {
            "prompt": [U],
            "chosen": [
                calling(call("get_color", {"what": "sky"})),
                tool("blue", name="get_color"),
                A,
            ],
            "rejected": [
                calling(call("get_color", {"what": "tree"})),
                tool("green", name="get_color"),
                A2,
            ],
            "tools": [schema("get_color")],
        },
        PREF,
        TOOLS,
        None,
    ),
    (
        "preference-rejected-undeclared",
        {
            "prompt": [U],
            "chosen": [
                calling(call("get_color", {"what": "sky"})),
                tool("blue", name="get_color"),
                A,
            ],
            "rejected": [calling(call("guess", {"what": "tree"})), tool("green", name="guess"), A2],
            "tools": [schema("get_color")],
        },
        PREF,
        TOOLS,
        "unknown_tool",
    ),
    (
        "implicit-preference-diverging-calls",
        {
            "chosen": [U, calling(call("get_color", {"what": "sky"})), tool("blue"), A],
            "rejected": [U, calling(call("get_color", {"what": "tree"})), tool("green"), A2],
        },
        IMPL,
        TOOLS,
        None,
    ),
    (
        "implicit-preference-shared-call-ends-on-tool",
        {"chosen": [U, CALL, ANSWER, A], "rejected": [U, CALL, ANSWER, A2]},
        IMPL,
        TOOLS,
        None,
    ),
    (
        "unpaired-with-tools",
        {
            "prompt": [ASK],
            "completion": [CALL, ANSWER, DONE],
            "label": True,
            "tools": json.dumps(DECLARED),
        },
        UNP,
        TOOLS,
        None,
    ),
)


def sg(tag, value="x"):
    return {"from": tag, "value": value}


SHAREGPT_TOOLS = {"sharegpt": True, "tools": True}
GLAIVE_CALL = sg("function_call", '{"name": "search", "arguments": {"q": "rice"}}')
GLAIVE_TOOLS = json.dumps([{"name": "search", "description": "Search.", "parameters": {}}])

SHAREGPT = examples(
    (
        "glaive",
        {
            "conversations": [sg("human"), GLAIVE_CALL, sg("observation", "{}"), sg("gpt")],
            "tools": GLAIVE_TOOLS,
        },
        LM,
        SHAREGPT_TOOLS,
        None,
    ),
    (
        "glaive-no-tools-declared",
        {"conversations": [sg("human"), sg("gpt")], "tools": "[]"},
        LM,
        SHAREGPT_TOOLS,
        None,
    ),
    (
        "glaive-undeclared",
        {"conversations": [sg("human"), GLAIVE_CALL, sg("observation"), sg("gpt")], "tools": "[]"},
        LM,
        SHAREGPT_TOOLS,
        "unknown_tool",
    ),
    (
        "parallel-calls-as-a-list",
        {
            "conversations": [
                sg("human"),
                sg(
                    "function_call",
                    '[{"name": "search", "arguments": {}}, {"name": "search", "arguments": "{}"}]',
                ),
                sg("observation"),
                sg("observation"),
                sg("gpt"),
            ]
        },
        LM,
        SHAREGPT_TOOLS,
        None,
    ),
    (
        "call-not-json",
        {
            "conversations": [
                sg("human"),
                sg("function_call", "search(rice)"),
                sg("observation"),
                sg("gpt"),
            ]
        },
        LM,
        SHAREGPT_TOOLS,
        "bad_tool_call",
    ),
    (
        "call-without-arguments",
        {
            "conversations": [
                sg("human"),
                sg("function_call", '{"name": "search"}'),
                sg("observation"),
                sg("gpt"),
            ]
        },
        LM,
        SHAREGPT_TOOLS,
        "bad_tool_call",
    ),
    (
        "observation-without-call",
        {"conversations": [sg("human"), sg("observation"), sg("gpt")]},
        LM,
        SHAREGPT_TOOLS,
        "orphan_tool",
    ),
    (
        "call-is-plain-text-without-tools",
        {"conversations": [sg("human"), sg("function_call", "search(rice)")]},
        LM,
        {"sharegpt": True},
        None,
    ),
)

ALL = (
    PASSING
    + BAD_TOOL_CALL
    + ORPHAN_TOOL
    + UNKNOWN_TOOL
    + BAD_TOOLS
    + ROLES_AND_CONTENT
    + DATASETS
    + SHAREGPT
)


@pytest.mark.parametrize("row, kind, options, expected, forms", ALL)
def test_example(row, kind, options, expected, forms):
    assert_example(row, kind, options, expected, forms)


def test_examples_run_in_both_forms():
    ran = {"json": 0, "native": 0}
    for param in ALL:
        for form in assert_example(*param.values):
            ran[form] += 1
    assert ran["json"] == len(ALL)
    assert ran["native"] >= len(ALL) * 0.7


def test_every_tool_code_has_an_example():
    codes = {param.values[3] for param in ALL}
    assert {"bad_tool_call", "bad_tools", "orphan_tool", "unknown_tool"} <= codes


# --- The single-column path: check_batch / first_problem with tools=True -------------------


SINGLE = [
    p
    for p in ALL
    if p.values[1] == LM
    and "messages" in p.values[0]
    and p.values[3] not in ("unknown_tool", "bad_tools")
]


@pytest.mark.parametrize("row, kind, options, expected, forms", SINGLE)
def test_single_column_without_the_tools_column(row, kind, options, expected, forms):
    """Without its tools column, a conversation gets the same code (where that column didn't decide it)."""
    value = json.dumps(row["messages"])
    assert first_problem(value, **options) == expected
    assert check_batch(pa.array([value]), **options).to_pylist() == [expected]


def test_chat_check_reads_the_tools_column_per_row():
    table = pa.table(
        {
            "messages": [json.dumps(CHAT)] * 3,
            "tools": [json.dumps(DECLARED), json.dumps([schema("x")]), None],
        }
    )
    check = ChatCheck("messages", ChatFormat(tools=True), tools_column="tools")
    assert check.columns == ("messages", "tools")
    assert check.check(table).to_pylist() == [None, "unknown_tool", "unknown_tool"]


# --- The parsers ---------------------------------------------------------------------------


def test_parse_calls():
    assert parse_calls([call("f", id="1"), call("g", "{}")]) == (Call("1", "f"), Call(None, "g"))
    assert parse_calls(None) is None
    assert parse_calls([]) is None
    assert parse_calls(float("nan")) is None
    assert parse_calls([call("f", type=None)]) == (Call(None, "f"),)
    for bad in ["x", {"a": 1}, [1], [call("f", "[]")], [call("")], [{"function": None}]]:
        assert parse_calls(bad) is BAD, bad


def test_sharegpt_calls():
    assert sharegpt_calls({"name": "f", "arguments": {}}) == (Call(None, "f"),)
    assert sharegpt_calls('[{"name": "f", "arguments": {}}, {"name": "g", "arguments": "{}"}]') == (
        Call(None, "f"),
        Call(None, "g"),
    )
    for bad in [None, "", "[]", "5", '["f"]', '{"arguments": {}}', "{"]:
        assert sharegpt_calls(bad) is BAD, bad


def test_declared_names():
    assert declared_names(DECLARED) == frozenset({"control_light"})
    assert declared_names(json.dumps(DECLARED).encode()) == frozenset({"control_light"})
    assert declared_names("[]") == frozenset()
    assert declared_names(None) == frozenset()
    for bad in ["", "x", "{}", 3, [None], [{"function": {"name": ""}}], [{"function": "f"}]]:
        assert declared_names(bad) is BAD, bad


# --- Property: every path agrees on drawn conversations, with the options on ----------------

ROLE_DRAWS = ["system", "user", "assistant", "tool", "developer", "human", "gpt"]
ROLE_DRAWS += ["function_call", "observation", "bot", "function"]
CONTENT_DRAWS = [
    "Hi",
    "",
    " ",
    None,
    '{"name": "f", "arguments": {}}',
    "<image> look",
    [{"type": "image"}],
    [{"type": "text", "text": "t <image>"}],
    [{"type": "text", "value": "v"}],
    [],
]
ARGUMENTS = st.sampled_from([{}, {"x": 1}, "{}", '{"x": 1}', "[1]", "x", 5, None])
CALLS = st.one_of(
    st.none(),
    st.lists(
        st.one_of(
            st.builds(
                lambda name, arguments, ident, typed: {
                    **({"type": "function"} if typed else {}),
                    "function": {"name": name, "arguments": arguments},
                    **({"id": ident} if ident else {}),
                },
                st.sampled_from(["f", "g", ""]),
                ARGUMENTS,
                st.none() | st.sampled_from(["c1", "c2"]),
                st.booleans(),
            ),
            st.sampled_from([{"name": "f"}, "f", {"type": "other", "function": {"name": "f"}}]),
        ),
        max_size=2,
    ),
    st.sampled_from(["f()", {"a": 1}]),
)
EXTRA_DRAWS = st.one_of(CALLS, st.sampled_from(["c1", "c2", "f", "g", "", 3, ["x"], True]))
TOOLS_DRAWS = [None, [], "x", json.dumps([schema("f")]), [schema("f"), schema("g")]]
TOOLS_DRAWS += [[{"name": "f", "parameters": {}}]]
IMAGES_DRAWS = [None, [], ["a"], ["a", "b"], '["a"]', "a"]


@st.composite
def option_formats(draw) -> ChatFormat:
    options = draw(
        st.fixed_dictionaries(
            {
                "tools": st.booleans(),
                "harmony": st.booleans(),
                "sharegpt": st.booleans(),
                "thinking_key": st.none() | st.sampled_from(["thinking", "reasoning_content"]),
                "text_key": st.sampled_from(["text", "value"]),
                "image_token": st.none() | st.just("<image>"),
                "alternate": st.booleans(),
                "allow_empty": st.booleans(),
                "last_role": st.none() | st.sampled_from(["user", "assistant"]),
                "na_pass": st.booleans(),
            }
        )
    )
    if draw(st.booleans()) and not (options["tools"] or options["harmony"]):
        options["profile"] = "sample"
    return ChatFormat(**options)


@st.composite
def option_messages(draw, fmt: ChatFormat) -> list:
    out = []
    for _ in range(draw(st.integers(0, 5))):
        message = {
            fmt.role_key: draw(st.sampled_from(ROLE_DRAWS)),
            fmt.content_key: draw(st.sampled_from(CONTENT_DRAWS)),
        }
        keys = st.sampled_from(
            ["tool_calls", "tool_call_id", "name", "thinking", "reasoning_content"]
        )
        message.update(draw(st.dictionaries(keys, EXTRA_DRAWS, max_size=3)))
        out.append(message)
    return out


def _json_or_none(value):
    return None if value is None else json.dumps(value) if not isinstance(value, str) else value


PROPERTY = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@PROPERTY
@given(
    option_formats().flatmap(lambda fmt: st.tuples(st.just(fmt), option_messages(fmt))), st.data()
)
def test_chat_check_paths_agree_with_options(drawn, data):
    """Python values, JSON text, native Arrow and pandas values get the same code."""
    fmt, messages = drawn
    row = {
        "messages": messages,
        "tools": data.draw(st.sampled_from(TOOLS_DRAWS)),
        "images": data.draw(st.sampled_from(IMAGES_DRAWS)),
    }
    check = ChatCheck("messages", fmt, "tools" if fmt.tools else None, "images")
    expected = check.check_row(row)
    text = {name: _json_or_none(value) for name, value in row.items()}
    assert check.check_row(text) == expected
    assert check.check(pa.table({k: [v, v] for k, v in text.items()})).to_pylist() == [expected] * 2
    try:
        native = pa.table({k: pa.array([v]) for k, v in row.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return
    assert check.check(native).to_pylist() == [expected]
    pandas_row = {k: v[0] for k, v in native.to_pandas().to_dict("list").items()}
    assert check.check_row(pandas_row) == expected


@PROPERTY
@given(
    option_formats(),
    st.sampled_from([PO, PC, PREF, IMPL, UNP]),
    st.sampled_from(["auto", "conversational", "standard"]),
    st.data(),
)
def test_dataset_check_paths_agree_with_options(fmt, kind, pinned, data):
    fields = {PO: ["prompt"], PC: ["prompt", "completion"], PREF: ["prompt", "chosen", "rejected"]}
    fields |= {IMPL: ["chosen", "rejected"], UNP: ["prompt", "completion", "label"]}
    row = {}
    for name in fields[kind]:
        if name == "label":
            row[name] = data.draw(st.sampled_from([True, False, None, "true"]))
        else:
            row[name] = data.draw(
                option_messages(fmt) | st.sampled_from(["The sky is", "", None, "[x"])
            )
    row["tools"] = data.draw(st.sampled_from(TOOLS_DRAWS))
    (check,) = dataset_checks(kind, list(row), chat=fmt, format=pinned)
    expected = check.check_row(row)
    assert expected is None or expected in check.codes
    text = {name: _json_or_none(value) if name != "label" else value for name, value in row.items()}
    from_text = check.check_row(text)
    if (
        pinned != "standard"
    ):  # pinned standard reads JSON text as text, a native list as a conversation
        assert from_text == expected
    assert check.check(pa.table({k: [v] for k, v in text.items()})).to_pylist() == [from_text]
    try:
        native = pa.table({k: pa.array([v]) for k, v in row.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return
    assert check.check(native).to_pylist() == [expected]
