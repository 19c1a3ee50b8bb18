"""Properties: tool calling, Harmony and ShareGPT agree with the plain reference.

The plain reference (tests/plain_reference/) is written from the documented rules
alone. On drawn conversations of each area (tests/strategies.py: plausible ones,
then mutated), `chatgate.check_batch` gives the reference's code for each value (as
JSON text, and as native Arrow values where Arrow can hold them) and
`chatgate.rules.locate` the message the reference places it at; a conversation
column checked with its row's `tools` and `images` columns (`ChatCheck`) gives the
reference's code, column and message (`locate_row`).
"""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chatgate
from chatgate.rules import ChatCheck, format_from, locate, locate_row

try:
    import strategies as drawn
    from plain_reference import ORDER, plain_answers
    from plain_reference.datasets import plain_chat_row
except ImportError:  # tests/ imported as a package
    import tests.strategies as drawn
    from tests.plain_reference import ORDER, plain_answers
    from tests.plain_reference.datasets import plain_chat_row

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


def core_options(**switches):
    """The area's switches with some of the core options drawn over them."""
    ends = ["user", "assistant", "tool"] if switches.get("tools") else ["user", "assistant"]
    optional = {
        "alternate": st.booleans(),
        "first_role": st.sampled_from(["user", "assistant"]),
        "last_role": st.sampled_from(ends),
        "allow_empty": st.booleans(),
        "na_pass": st.booleans(),
    }
    return st.fixed_dictionaries({k: st.just(v) for k, v in switches.items()}, optional=optional)


TOOLS = (st.lists(drawn.mutated(drawn.tool_chats()), min_size=1, max_size=6), core_options(tools=True))
HARMONY = (
    st.lists(drawn.mutated(drawn.harmony_chats()), min_size=1, max_size=6),
    st.one_of(
        core_options(harmony=True),
        core_options(harmony=True, tools=True),
        st.just({"thinking_key": "thinking"}),
    ),
)
SHAREGPT = (
    st.lists(drawn.mutated(drawn.sharegpt_chats(), "from", "value"), min_size=1, max_size=6),
    st.one_of(
        core_options(sharegpt=True, tools=True),
        core_options(sharegpt=True),
        st.just({"sharegpt": True, "tools": True, "role_map": {"bot": "assistant", "model": "assistant"}}),
    ),
)


def chatgate_answers(values, options):
    """(code, message) per value, from check_batch and locate, or None where it passes."""
    texts = [None if v is None else json.dumps(v) for v in values]
    codes = chatgate.check_batch(pa.array(texts, pa.string()), **options).to_pylist()
    return [None if code is None else (code, locate(value, code, **options)) for value, code in zip(values, codes)]


def disagreements(values, got, options):
    return [(v, g, a) for v, g in zip(values, got) if g not in (a := plain_answers(v, **options))]


def assert_agree(values, options):
    assert disagreements(values, chatgate_answers(values, options), options) == []
    try:
        array = pa.array(values)
    except ARROW_ERRORS:
        return
    held = array.to_pylist()  # as Arrow holds them: missing struct fields are null
    codes = chatgate.check_batch(array, **options).to_pylist()
    assert [c for v, c in zip(held, codes) if c not in {a and a[0] for a in plain_answers(v, **options)}] == []


@SETTINGS
@given(*TOOLS)
def test_tool_calling_agrees_with_the_plain_reference(values, options):
    assert_agree(values, options)


@SETTINGS
@given(*HARMONY)
def test_harmony_agrees_with_the_plain_reference(values, options):
    assert_agree(values, options)


@SETTINGS
@given(*SHAREGPT)
def test_sharegpt_agrees_with_the_plain_reference(values, options):
    assert_agree(values, options)


@SETTINGS
@given(st.lists(drawn.mutated(drawn.tool_chats()), min_size=1, max_size=6), st.integers(1, 600))
def test_values_over_max_value_bytes_agree_with_the_plain_reference(values, limit):
    """A JSON text larger than `max_value_bytes=` (its UTF-8 bytes) is too_large, unread."""
    options = {"tools": True, "max_value_bytes": limit}
    texts = [json.dumps(value, ensure_ascii=False) for value in values]
    codes = chatgate.check_batch(pa.array(texts, pa.string()), **options).to_pylist()
    for text, code in zip(texts, codes):
        got = None if code is None else (code, locate(text, code, **options))
        assert got in plain_answers(text, **options), (text, got)


# --- A conversation column with its row's tools and images -----------------------------------


@st.composite
def chat_rows(draw):
    """Options, and rows of a conversation column with a `tools` and an `images` column."""
    options = draw(st.one_of(core_options(tools=True), core_options(), core_options(tools=True, image_token="<image>")))
    chats = st.one_of(
        drawn.tool_chats(), drawn.mutated(drawn.tool_chats()), drawn.mutated(drawn.image_chats()), drawn.image_chats()
    )
    rows = st.fixed_dictionaries({"messages": chats, "tools": drawn.TOOLS_COLUMN, "images": drawn.ROW_IMAGES})
    return options, draw(st.lists(rows, min_size=1, max_size=5))


def json_cell(value):
    return None if value is None else value if isinstance(value, str) else json.dumps(value)


@SETTINGS
@given(chat_rows())
def test_a_chat_column_with_its_tools_and_images_agrees_with_the_plain_reference(drawn_rows):
    options, rows = drawn_rows
    tools_column = "tools" if options.get("tools") else None
    check = ChatCheck("messages", format_from(**options), tools_column, "images")
    table = pa.table({name: [json_cell(row[name]) for row in rows] for name in ("messages", "tools", "images")})
    codes = check.check(table).to_pylist()
    for row, code in zip(rows, codes):
        answers = plain_chat_row(row, "messages", tools_column, "images", **options)
        assert code in {a and a[0] for a in answers}, (row, code, answers)
        where = locate_row(check, row)
        assert (where and (where.code, where.column, where.message)) in answers, (row, where, answers)


def test_the_drawn_conversations_reach_the_codes_of_each_area():
    """The strategies break every rule of tool calling, Harmony and ShareGPT (so the properties test them)."""
    seen: set = set()

    @settings(max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.tuples(*TOOLS), st.tuples(*HARMONY), st.tuples(*SHAREGPT), chat_rows()))
    def collect(case):
        options, values = (case[1], case[0]) if isinstance(case[1], dict) else case
        for value in values:
            if isinstance(value, dict) and "images" in value and "tools" in value:
                tools_column = "tools" if options.get("tools") else None
                seen.update(a and a[0] for a in plain_chat_row(value, "messages", tools_column, "images", **options))
            else:
                seen.update(a and a[0] for a in plain_answers(value, **options))

    collect()
    wanted = {"bad_tool_call", "orphan_tool", "unknown_tool", "bad_tools", "bad_thinking", "developer_position"}
    wanted |= {"not_alternating", "first_role", "last_role", "empty_content", "image_count", None}
    assert wanted - seen == set()
    assert seen <= set(ORDER) | {None}
