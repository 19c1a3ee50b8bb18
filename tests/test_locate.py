"""Where a value's problems are (`locate`) and every problem of a value (`problems`).

Labelled cases place each code at its message, in JSON text and native Arrow
forms, through the one-value functions and the batch forms (`locate_array`,
`problems_array`), which must agree with the check's code (`first_problem`,
`check_batch`). Every code of `ALL_REASONS` has a case, here or in
tests/test_locate_rows.py (the codes of dataset rows). Then what "every problem"
means, case by case. Properties are in tests/test_locate_property.py, agreement
with the rules' own examples and the corpus in tests/test_locate_agreement.py.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from chatgate.rules import ALL_REASONS, ChatFormat, check_array, first_problem, first_reason, format_from
from chatgate.rules.base.values import blank_checker
from chatgate.rules.check.judge import BAD, COMPLETION, PROMPT, RULES, judge
from chatgate.rules.location.locate import (
    PROBLEM_TYPE,
    locate,
    locate_array,
    location_of,
    problems,
    problems_array,
    problems_of,
    read_value,
)
from chatgate.rules.location.sites import ROW_CODES, SITES, WHOLE_VALUE_CODES, Problem

try:
    from rule_examples import ARROW_ERRORS, A, S, U, call, msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import ARROW_ERRORS, A, S, U, call, msg

TOOL_CALL = msg("assistant", None, tool_calls=[call("get_weather", {"city": "Paris"}, id="c1")])
TOOL_ANSWER = msg("tool", "Sunny.", tool_call_id="c1")
IMG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
HTTP_IMG = {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
BIG_IMG = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 16}}  # 12 bytes


def located(*rows):
    """Labelled values: (label, value, options, code, message index[, forms])."""
    params = []
    for label, value, options, code, index, *rest in rows:
        params.append(pytest.param(value, options, code, index, rest[0] if rest else "both", id=label))
    return params


VALUES = located(
    # the core check
    ("not_messages-bad-json", '[{"role": "user"', {}, "not_messages", None, "json"),
    ("not_messages-wrapper", {"messages": "Hi"}, {}, "not_messages", None),
    ("not_messages-null", None, {}, "not_messages", None),
    ("no_messages", [], {"first_role": "user"}, "no_messages", None),
    ("bad_message-not-a-mapping", [U, "Hi"], {}, "bad_message", 1, "json"),
    ("bad_message-no-role", [U, A, {"content": "x"}], {}, "bad_message", 2),
    ("unknown_role", [U, msg("bot", "x")], {}, "unknown_role", 1),
    ("system_position", [U, A, S], {}, "system_position", 2),
    ("first_role", [S, A, U], {"first_role": "user"}, "first_role", 1),
    ("first_role-no-turn", [S], {"first_role": "user"}, "first_role", None),
    ("not_alternating", [U, U], {}, "not_alternating", 1),
    ("not_alternating-after-system", [S, U, A, A], {}, "not_alternating", 3),
    ("last_role", [U, A, U], {"last_role": "assistant"}, "last_role", 2),
    ("empty_content", [U, A, msg("user", "")], {}, "empty_content", 2),
    ("empty_content-missing", [U, msg("assistant", ...)], {}, "empty_content", 1),
    ("unknown_role-before-empty_content", [msg("user", ""), msg("bot", "x")], {}, "unknown_role", 1),
    # the options and profiles
    ("too_few_messages", [U], {"min_messages": 2}, "too_few_messages", None),
    ("unknown_key", [U, msg("assistant", "x", foo=1)], {"allowed_keys": []}, "unknown_key", 1),
    ("bad_content_type", [U, msg("assistant", 5)], {"content_types": "text"}, "bad_content_type", 1, "json"),
    ("bad_weight", [U, msg("assistant", "x", weight=2)], {"weight_key": "weight"}, "bad_weight", 1),
    (
        "bad_tool_call",
        [U, msg("assistant", None, tool_calls=[{"function": {"arguments": "{}"}}])],
        {"tools": True},
        "bad_tool_call",
        1,
    ),
    (
        "bad_function_call",
        [U, msg("assistant", "x", function_call={"arguments": "{}"})],
        {"legacy_functions": True},
        "bad_function_call",
        1,
    ),
    ("bad_thinking", [msg("user", "x", thinking="hm"), A], {"harmony": True}, "bad_thinking", 0),
    ("tool_turn", [U, A, msg("tool", "x")], {"profile": "sample"}, "tool_turn", 2),
    ("developer_position", [U, msg("developer", "x"), A], {"harmony": True}, "developer_position", 1),
    ("missing_turn", [S, U], {"profile": "sample"}, "missing_turn", None),
    ("missing_role", [U], {"require_roles": ["assistant"]}, "missing_role", None),
    ("orphan_tool", [U, A, msg("tool", "x")], {"tools": True}, "orphan_tool", 2),
    ("mistral_tool_call", [U, msg("assistant", ..., tool_calls=[call("f", id="c1")])], {"profile": "mistral"}, "mistral_tool_call", 1),
    (
        "unanswered_call",
        [U, msg("assistant", ..., tool_calls=[{"type": "function", "id": "TX92Jm8Zi", "function": {"name": "f", "arguments": "{}"}}]), U, A],
        {"profile": "mistral"},
        "unanswered_call",
        1,
    ),
    ("content_or_calls", [U, msg("assistant", "")], {"profile": "mistral"}, "content_or_calls", 1),
    ("placeholder_content", [U, msg("assistant", "NaN")], {"placeholder_contents": True}, "placeholder_content", 1),
    (
        "orphan_tool-second-answer",
        [U, TOOL_CALL, TOOL_ANSWER, TOOL_ANSWER, A],
        {"tools": True},
        "orphan_tool",
        3,
    ),
    (
        "sharegpt",
        {"conversations": [{"from": "human", "value": "Hi"}, {"from": "human", "value": "?"}]},
        {"sharegpt": True},
        "not_alternating",
        1,
    ),
    ("openai-weight", [S, U, msg("assistant", "x", weight=True)], {"profile": "openai"}, "bad_weight", 2),
    ("openai-key", [S, msg("user", "x", foo=1), A], {"profile": "openai"}, "unknown_key", 1),
    ("together-missing-role", [S, U], {"profile": "together"}, "missing_role", None),
    # content parts and images
    ("bad_image_url", [S, msg("user", [IMG, HTTP_IMG]), A], {"image_data_urls": True}, "bad_image_url", 1),
    ("image_too_large", [msg("user", [IMG]), A, msg("user", [BIG_IMG])], {"max_image_bytes": 8}, "image_too_large", 2),
    ("image_role", [msg("user", [IMG]), msg("assistant", [IMG])], {"image_roles": ["user"]}, "image_role", 1),
    ("too_many_images", [msg("user", [IMG, IMG]), A, msg("user", [IMG])], {"max_images": 2}, "too_many_images", None),
    ("bad_content_type-part", [U, msg("assistant", [{"type": "image"}])], {"part_types": ["text"]}, "bad_content_type", 1),
    ("together-image-role", [U, msg("assistant", [IMG])], {"profile": "together"}, "image_role", 1),
    ("torchtune-first-role", [S, A, U], {"profile": "torchtune"}, "first_role", 1),
    ("torchtune-two-users", [U, A, U, U], {"profile": "torchtune"}, "not_alternating", 3),
    (
        "sample-asked-for-alternation",
        [U, A, U, U],
        {"profile": "sample", "alternate": True},
        "not_alternating",
        3,
    ),
    ("sample-lets-repeats-through", [U, A, U, U], {"profile": "sample"}, None, None),
    ("tools-transparent-turns", [U, TOOL_CALL, TOOL_ANSWER, A, A], {"tools": True}, "not_alternating", 4),
    ("passes", [S, U, A], {}, None, None),
)


def arrays(value, forms):
    """The value twice in each Arrow form it has: JSON text (string and binary), native."""
    out = []
    if forms in ("both", "json"):
        text = value if isinstance(value, str) or value is None else json.dumps(value)
        out += [pa.array([text, text], pa.string()), pa.array([text, text], pa.large_binary())]
    if forms in ("both", "native") and not isinstance(value, str) and value is not None:
        try:
            out.append(pa.array([value, value]))
        except ARROW_ERRORS:
            if forms == "native":
                raise
    return out


@pytest.mark.parametrize("value, options, code, index, forms", VALUES)
def test_the_message_of_each_code(value, options, code, index, forms):
    assert first_problem(value, **options) == code
    assert locate(value, **options) == index
    assert locate(value, code, **options) == index
    found = problems(value, **options)
    assert first_reason(p.code for p in found) == code
    assert (code is None) == (found == [])
    fmt = format_from(**options)
    for array in arrays(value, forms):
        codes = check_array(array, fmt)
        assert codes.to_pylist() == [code, code], array.type
        assert locate_array(array, codes, fmt).to_pylist() == [index, index], array.type
        listed = problems_array(array, fmt)
        assert listed.type == pa.list_(PROBLEM_TYPE)
        assert listed.to_pylist() == [[p._asdict() for p in found]] * 2, array.type


# Parts of a dataset row, judged on their own (`part=`): indices are within the part.
PART_VALUES = [
    pytest.param([U, A], PROMPT, {}, "prompt_end", 1, id="prompt_end"),
    pytest.param([S, U, A, U, A], PROMPT, {"tools": True}, "prompt_end", 4, id="prompt_end-tools"),
    pytest.param([U, TOOL_CALL, TOOL_ANSWER], PROMPT, {"tools": True}, None, None, id="prompt-ends-on-tool"),
    pytest.param([A, U, A], COMPLETION, {}, "completion_role", 1, id="completion_role"),
    pytest.param(
        [A, TOOL_ANSWER, U], COMPLETION, {"tools": True}, "completion_role", 2, id="completion_role-tools"
    ),
    pytest.param([A, A], COMPLETION, {}, "not_alternating", 1, id="completion-not-alternating"),
    pytest.param(
        [S, U, U], PROMPT, {"last_role": "assistant"}, "not_alternating", 2, id="prompt-no-last-role"
    ),
]


@pytest.mark.parametrize("value, part, options, code, index", PART_VALUES)
def test_the_message_within_a_part(value, part, options, code, index):
    fmt = format_from(**options)
    read = read_value(value, fmt)
    assert judge(read.roles, read.contents, fmt, blank_checker("text"), read.extras, part=part) == code
    assert location_of(value, None, fmt, part=part) == index
    assert location_of(json.dumps(value), code, fmt, part=part) == index
    assert first_reason(p.code for p in problems_of(value, fmt, part=part)) == code


def test_codes_of_the_row_and_of_another_column_point_at_no_message():
    declared_bad = location_of([U, A], "bad_tools", ChatFormat(tools=True), declared=BAD)
    assert declared_bad is None
    images = problems_of([U, A], ChatFormat(), images=2)
    assert images == [("image_count", None)]
    for code in ROW_CODES:
        assert location_of([U, U], code, ChatFormat()) is None


def test_every_code_is_placed():
    """Each code of the table has its sites; the others are codes of the whole value or row."""
    assert {rule.code for rule in RULES} == set(SITES)
    outside = set(ALL_REASONS) - set(SITES)
    assert outside == {"too_large", "not_messages"} | ROW_CODES
    assert outside <= WHOLE_VALUE_CODES


def value_cases_codes():
    return {p.values[2] for p in VALUES} | {p.values[3] for p in PART_VALUES}


# --- What "every problem" means ------------------------------------------------------------

NO_ROLE = {"content": ""}

EVERY = [
    pytest.param(
        [NO_ROLE, NO_ROLE, U],
        {"first_role": "user", "last_role": "assistant"},
        [("bad_message", 0), ("bad_message", 1), ("last_role", 2)],
        id="a-message-without-role-is-bad_message-only",
    ),
    pytest.param(
        [U, U, U, A, A],
        {},
        [("not_alternating", 1), ("not_alternating", 2), ("not_alternating", 4)],
        id="each-repeat",
    ),
    pytest.param(
        [U, U],
        {"min_messages": 3},
        [("too_few_messages", None), ("not_alternating", 1)],
        id="whole-value-first",
    ),
    pytest.param(
        [S],
        {"first_role": "user", "last_role": "assistant"},
        [("first_role", None), ("last_role", 0)],
        id="no-turn",
    ),
    pytest.param(
        [msg("bot", "")],
        {"first_role": "user"},
        [("unknown_role", 0), ("first_role", 0), ("empty_content", 0)],
        id="table-order-at-one-message",
    ),
    pytest.param([U, S, A, S], {}, [("system_position", 1), ("system_position", 3)], id="each-system"),
    pytest.param(
        [U, TOOL_CALL, TOOL_ANSWER, TOOL_ANSWER, A, msg("tool", "x")],
        {"tools": True},
        [("orphan_tool", 3), ("orphan_tool", 5)],
        id="each-orphan",
    ),
    pytest.param(
        [U, TOOL_CALL, TOOL_ANSWER, A, A, msg("assistant", "")],
        {"tools": True},
        [("not_alternating", 4), ("not_alternating", 5), ("empty_content", 5)],
        id="tools-repeats",
    ),
    pytest.param([], {"first_role": "user", "min_messages": 2}, [("no_messages", None)], id="empty-list"),
    pytest.param("[1,", {}, [("not_messages", None)], id="not-json"),
    pytest.param(None, {"na_pass": True}, [], id="missing-passes"),
    pytest.param(
        [S, U, U, msg("assistant", "")], {"profile": "sample"}, [], id="sample-lets-defects-through"
    ),
    pytest.param(
        [S, U, U, msg("assistant", "")],
        {"profile": "sample", "alternate": True, "allow_empty": False},
        [("not_alternating", 2), ("empty_content", 3)],
        id="sample-reports-them-when-asked",
    ),
    pytest.param(
        [msg("user", "x", foo=1), msg("assistant", "x", weight=2), msg("user", 5)],
        {"profile": "openai"},
        [("unknown_key", 0), ("bad_weight", 1), ("bad_content_type", 2)],
        id="openai",
    ),
    pytest.param(
        [A, A], {"profile": "torchtune"}, [("first_role", 0), ("not_alternating", 1)], id="torchtune"
    ),
    pytest.param(
        [S, msg("developer", "x"), U, msg("developer", "x"), A],
        {"harmony": True},
        [("developer_position", 3)],
        id="harmony-second-developer",
    ),
    pytest.param(
        {"conversations": [{"from": "human", "value": "Hi"}, {"from": "human", "value": ""}]},
        {"sharegpt": True},
        [("not_alternating", 1), ("empty_content", 1)],
        id="sharegpt",
    ),
]


@pytest.mark.parametrize("value, options, expected", EVERY)
def test_every_problem(value, options, expected):
    found = problems(value, **options)
    assert found == expected
    assert all(isinstance(p, Problem) for p in found)
    assert first_reason(p.code for p in found) == first_problem(value, **options)


# --- The batch forms ------------------------------------------------------------------------

CHAT = [U, A]
TEXTS = [json.dumps([U, U]), json.dumps(CHAT), None, "[]", json.dumps([U, msg("bot", "")])]


@pytest.mark.parametrize(
    "array",
    [
        pytest.param(pa.array(TEXTS), id="string"),
        pytest.param(pa.array(TEXTS, pa.large_string()), id="large_string"),
        pytest.param(pa.chunked_array([TEXTS[:2], TEXTS[2:]]), id="chunked"),
        pytest.param(pa.array(TEXTS).dictionary_encode(), id="dictionary"),
        pytest.param(pa.array([json.loads(t) if t else None for t in TEXTS]), id="native"),
    ],
)
def test_batch_forms(array):
    fmt = ChatFormat()
    codes = check_array(array, fmt)
    assert codes.to_pylist() == ["not_alternating", None, "not_messages", "no_messages", "unknown_role"]
    assert locate_array(array, codes, fmt).to_pylist() == [1, None, None, None, 1]
    assert problems_array(array, fmt).to_pylist() == [
        [{"code": "not_alternating", "message": 1}],
        [],
        [{"code": "not_messages", "message": None}],
        [{"code": "no_messages", "message": None}],
        [{"code": "unknown_role", "message": 1}, {"code": "empty_content", "message": 1}],
    ]
    assert problems_array(array, fmt, codes).to_pylist() == problems_array(array, fmt).to_pylist()


def test_batch_forms_read_only_failing_values():
    """A value whose code is null is not read: the passing path costs nothing more."""
    values = pa.array(["[1,", json.dumps([U, U])])
    codes = pa.array([None, "not_alternating"], pa.string())
    assert locate_array(values, codes, ChatFormat()).to_pylist() == [None, 1]
    assert problems_array(values, ChatFormat(), codes).to_pylist() == [
        [],
        [{"code": "not_alternating", "message": 1}],
    ]


def test_batch_forms_refuse_codes_of_another_length():
    with pytest.raises(ValueError, match="1 codes for 2 values"):
        locate_array(pa.array(["[]", "[]"]), pa.array(["no_messages"]), ChatFormat())
    with pytest.raises(ValueError, match="1 codes for 2 values"):
        problems_array(pa.array(["[]", "[]"]), ChatFormat(), pa.array(["no_messages"]))


def test_empty_batches():
    assert locate_array(pa.array([], pa.string()), pa.array([], pa.string()), ChatFormat()).to_pylist() == []
    assert problems_array(pa.array([], pa.string()), ChatFormat()).to_pylist() == []
