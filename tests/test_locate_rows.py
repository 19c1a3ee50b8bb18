"""Where a row's problems are, for every row check: the column and the message (`locate_rows`).

Labelled rows place each code of a dataset row, of a tools or images column and of
each part of a dataset type (prompt, completion, chosen, rejected, and the whole
conversation made of them) in its column, at its message, in JSON text and native
Arrow forms. Together with tests/test_locate.py they cover every code of
`ALL_REASONS`. Then what "every problem" of a row means, case by case.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from chatgate.rules import (
    ALL_REASONS,
    DATASET_TYPES,
    ChatCheck,
    LabelCheck,
    RowCheck,
    dataset_checks,
    first_reason,
    first_row_problem,
)
from chatgate.rules.datasets.locate_rows import (
    ROW_PROBLEM_TYPE,
    RowProblem,
    locate_row,
    row_problems,
    row_problems_array,
)

try:
    from rule_examples import A2, A, S, U, call, json_table, msg, native_table, schema
    from test_locate import value_cases_codes
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A2, A, S, U, call, json_table, msg, native_table, schema
    from tests.test_locate import value_cases_codes

LM, PO, PC, PREF, IMPL, UNP = DATASET_TYPES[:6]  # TRL's; openai_preference has its own tests
OP = "openai_preference"
TOOLS = {"tools": True}
TOKENIZER = str(Path(__file__).parent / "data" / "tokens" / "tokenizer.json")
"""A small word-level tokenizer.json, for `max_tokens=` (tests/test_tokens.py builds others)."""
IMAGE = {"type": "image"}
PNG_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def placed(*rows):
    """Labelled rows: (label, row, dataset type, options, code, column, message[, forms])."""
    params = []
    for label, row, kind, options, code, column, message, *rest in rows:
        expected = None if code is None else RowProblem(code, column, message)
        params.append(pytest.param(row, kind, options, expected, rest[0] if rest else "both", id=label))
    return params


ROWS = placed(
    # another column of the row
    ("bad_tools", {"messages": [U, A], "tools": "not json"}, LM, TOOLS, "bad_tools", "tools", None),
    (
        "unknown_tool",
        {
            "messages": [U, msg("assistant", None, tool_calls=[call("f")]), msg("tool", "x"), A],
            "tools": [schema("g")],
        },
        LM,
        TOOLS,
        "unknown_tool",
        "messages",
        1,
    ),
    (
        "image_count",
        {"messages": [msg("user", [IMAGE]), A], "images": ["a.png", "b.png"]},
        LM,
        {},
        "image_count",
        "messages",
        None,
    ),
    # the row as a whole, and a value of a dataset type
    ("mixed_format-row", {"prompt": "The sky is", "completion": [A]}, PC, {}, "mixed_format", None, None),
    (
        "mixed_format-value",
        {"prompt": "The sky is", "completion": [A]},
        PC,
        {"format": "conversational"},
        "mixed_format",
        "prompt",
        None,
    ),
    ("not_text", {"prompt": 5, "completion": " blue."}, PC, {}, "not_text", "prompt", None),
    # a value larger than max_value_bytes= (tests/test_values_limits.py), unread
    ("too_large", {"prompt": "The sky is" * 3, "completion": " blue."}, PC, {"max_value_bytes": 20}, "too_large",
     "prompt", None),
    ("too_large-chat", {"messages": [U, A]}, LM, {"max_value_bytes": 10}, "too_large", "messages", None),
    (
        "not_text-missing",
        {"prompt": "The sky is", "completion": None},
        PC,
        {},
        "not_text",
        "completion",
        None,
    ),
    (
        "not_label",
        {"prompt": "The sky is", "completion": " blue.", "label": "yes"},
        UNP,
        {},
        "not_label",
        "label",
        None,
    ),
    ("empty_text", {"prompt": " ", "completion": " blue."}, PC, {}, "empty_text", "prompt", None),
    (
        "same_pair-standard",
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " blue."},
        PREF,
        {},
        "same_pair",
        None,
        None,
    ),
    (
        "same_pair-conversational",
        {"prompt": [U], "chosen": [A], "rejected": [A]},
        PREF,
        {},
        "same_pair",
        None,
        None,
    ),
    ("implicit_prompt", {"chosen": "abc", "rejected": "xyz"}, IMPL, {}, "implicit_prompt", None, None),
    (
        "implicit_prompt-conversational",
        {"chosen": [U, A], "rejected": [S, A2]},
        IMPL,
        {},
        "implicit_prompt",
        None,
        None,
    ),
    (
        "not_messages-in-its-column",
        {"prompt": [U], "completion": '[{"role"'},
        PC,
        {"format": "conversational"},
        "not_messages",
        "completion",
        None,
        "json",
    ),
    # lists of content parts as standard values, and single-message answers
    (
        "image_role-standard-completion",
        {"prompt": "Draw a cat", "completion": [PNG_PART]},
        PC,
        {"profile": "together"},
        "image_role",
        "completion",
        None,
    ),
    (
        "bad_image_url-standard-prompt",
        {"prompt": [{"type": "image_url", "image_url": {"url": "https://x"}}], "completion": "Yo"},
        PC,
        {"standard_parts": True, "image_data_urls": True},
        "bad_image_url",
        "prompt",
        None,
    ),
    (
        "too_many_images-standard-prompt",
        {"prompt": [PNG_PART] * 3, "completion": "Yo"},
        PC,
        {"standard_parts": True, "max_images": 2},
        "too_many_images",
        "prompt",
        None,
    ),
    (
        "completion_role-single-answer",
        {"prompt": [U], "chosen": msg("user", "Blue."), "rejected": A2},
        PREF,
        {"single_message_answers": True},
        "completion_role",
        "chosen",
        0,
    ),
    # the parts of a dataset row: each message in its own column
    ("prompt_end-prompt-only", {"prompt": [U, A]}, PO, {}, "prompt_end", "prompt", 1),
    ("prompt_end", {"prompt": [S, U, A], "completion": [A2]}, PC, {}, "prompt_end", "prompt", 2),
    ("completion_role", {"prompt": [U], "completion": [A, U]}, PC, {}, "completion_role", "completion", 1),
    (
        "whole-conversation-in-the-completion",
        {"prompt": [U], "completion": [A, A2]},
        PC,
        {},
        "not_alternating",
        "completion",
        1,
    ),
    (
        "whole-conversation-in-the-prompt",
        {"prompt": [U, msg("bot", "x"), U], "completion": [A]},
        PC,
        {},
        "unknown_role",
        "prompt",
        1,
    ),
    (
        "system-in-the-completion",
        {"prompt": [S, U], "completion": [S]},
        PC,
        {},
        "system_position",
        "completion",
        0,
    ),
    (
        "rejected",
        {"prompt": [U], "chosen": [A], "rejected": [msg("assistant", "")]},
        PREF,
        {},
        "empty_content",
        "rejected",
        0,
    ),
    (
        "whole-value-in-the-answer",
        {"prompt": [U], "chosen": [A], "rejected": [A2]},
        PREF,
        {"min_messages": 3},
        "too_few_messages",
        "chosen",
        None,
    ),
    (
        "unpaired",
        {"prompt": [U], "completion": [A, msg("tool", "x")], "label": True},
        UNP,
        TOOLS,
        "orphan_tool",
        "completion",
        1,
    ),
    (
        "implicit-continuation",
        {"chosen": [U, A], "rejected": [U, U]},
        IMPL,
        {},
        "completion_role",
        "rejected",
        1,
    ),
    (
        "implicit-shared-prompt",
        {"chosen": [U, A, A2], "rejected": [U, A, U]},
        IMPL,
        {},
        "not_alternating",
        "chosen",
        2,
    ),
    (
        "audio-count",
        {"messages": [msg("user", "<audio>"), A], "audios": []},
        None,
        {"audio_token": "<audio>", "audios_column": "audios"},
        "audio_count",
        "messages",
        None,
    ),
    ("video-count", {"messages": [U, A], "videos": ["v.mp4"]}, None, {"videos_column": "videos"}, "video_count", "messages", None),
    ("too-long", {"messages": [U, A]}, None, {"max_tokens": 1, "tokenizer": TOKENIZER}, "too_long", "messages", None),
    # a prompt and its completion are counted together; the problem is placed at the completion
    ("too-long-pc", {"prompt": [U], "completion": [A]}, PC, {"max_tokens": 1, "tokenizer": TOKENIZER}, "too_long", "completion", None),
    (
        "tools-in-a-dataset-row",
        {
            "prompt": [U],
            "completion": [msg("assistant", None, tool_calls=[call("f")])],
            "tools": [schema("g")],
        },
        PC,
        TOOLS,
        "unknown_tool",
        "completion",
        0,
    ),
    ("passes", {"prompt": [S, U], "completion": [A]}, PC, {}, None, None, None),
    # OpenAI's and Together's preference rows: in the input, or in the output the problem is in
    ("bad_input", {"input": [U], "preferred_output": [A], "non_preferred_output": [A2]}, OP, {},
     "bad_input", "input", None),
    ("output_count", {"input": {"messages": [U]}, "preferred_output": [A], "non_preferred_output": [A, A2]}, OP, {},
     "output_count", "non_preferred_output", None),
    ("openai-prompt_end", {"input": {"messages": [U, A]}, "preferred_output": [A], "non_preferred_output": [A2]},
     OP, {}, "prompt_end", "input", 1),
    ("openai-completion_role", {"input": {"messages": [U]}, "preferred_output": [A], "non_preferred_output": [U]},
     OP, {}, "completion_role", "non_preferred_output", 0),
    (
        "openai-unknown_tool",
        {
            "input": {"messages": [U], "tools": [schema("g")]},
            "preferred_output": [msg("assistant", None, tool_calls=[call("f")])],
            "non_preferred_output": [A2],
        },
        OP,
        TOOLS,
        "unknown_tool",
        "preferred_output",
        0,
        "json",
    ),
    ("openai-bad_tools", {"input": {"messages": [U], "tools": "not json"}, "preferred_output": [A],
                          "non_preferred_output": [A2]}, OP, TOOLS, "bad_tools", "input", None),
)


def tables(row, forms):
    out = []
    if forms in ("both", "json"):
        out.append(json_table(row))
    if forms in ("both", "native"):
        table = native_table(row)
        if table is not None:
            out.append(table)
    return out


@pytest.mark.parametrize("row, kind, options, expected, forms", ROWS)
def test_the_place_of_each_row_code(row, kind, options, expected, forms):
    code = None if expected is None else expected.code
    (check,) = dataset_checks(kind, list(row), **options)
    assert first_row_problem(row, kind, **options) == check.check_row(row) == code
    found = row_problems(check, row)
    assert first_reason(p.code for p in found) == code
    assert locate_row(check, row) == expected
    for table in tables(row, forms):
        assert check.check(table).to_pylist() == [code, code]
        listed = row_problems_array(check, table)
        assert listed.type == pa.list_(ROW_PROBLEM_TYPE)
        assert listed.to_pylist() == [[p._asdict() for p in found]] * 2


def test_every_code_has_a_labelled_case():
    """A new code without a case here or in tests/test_locate.py fails this test."""
    row_codes = {p.values[3].code for p in ROWS if p.values[3] is not None}
    assert (value_cases_codes() | row_codes) - {None} == set(ALL_REASONS)


EVERY = [
    pytest.param(
        # The prompt's unknown role is found in the prompt and in both whole conversations: once.
        {"prompt": [msg("bot", "x")], "chosen": [A, A2], "rejected": [U]},
        PREF,
        {},
        [
            ("unknown_role", "prompt", 0),
            ("prompt_end", "prompt", 0),
            ("not_alternating", "chosen", 1),
            ("completion_role", "rejected", 0),
        ],
        id="preference",
    ),
    pytest.param(
        {"prompt": "", "chosen": 5, "rejected": 5},
        PREF,
        {},
        [("empty_text", "prompt", None), ("not_text", "chosen", None), ("not_text", "rejected", None)],
        id="standard",
    ),
    pytest.param(
        {"prompt": [U], "completion": [A], "label": None},
        UNP,
        {},
        [("not_label", "label", None)],
        id="label",
    ),
    pytest.param(
        {"messages": [U, msg("assistant", None, tool_calls=[call("f"), call("g")])], "tools": [schema("f")]},
        LM,
        TOOLS,
        [("unknown_tool", "messages", 1)],
        id="chat-with-tools",
    ),
]


@pytest.mark.parametrize("row, kind, options, expected", EVERY)
def test_every_problem_of_a_row(row, kind, options, expected):
    (check,) = dataset_checks(kind, list(row), **options)
    assert row_problems(check, row) == expected


def test_label_check_and_other_row_checks():
    assert row_problems(LabelCheck(), {"label": "yes"}) == [("not_label", "label", None)]
    assert row_problems(LabelCheck(na_pass=True), {"label": None}) == []

    class Odd(RowCheck):
        """A row check this module doesn't know: its code is placed on the row as a whole."""

        columns = ("x",)
        codes = ("not_text",)

        def describe(self):
            return "odd"

        def as_dict(self):
            return {}

        def check_row(self, row):
            return None if row.get("x") else "not_text"

    assert row_problems(Odd(), {"x": ""}) == [("not_text", None, None)]
    assert locate_row(Odd(), {"x": "y"}) is None


def test_row_batches_read_only_failing_rows():
    check = ChatCheck("messages")
    table = pa.table({"messages": ["[1,", json.dumps([U, U])]})
    codes = pa.array([None, "not_alternating"], pa.string())
    assert row_problems_array(check, table, codes).to_pylist() == [
        [],
        [{"code": "not_alternating", "column": "messages", "message": 1}],
    ]
    with pytest.raises(ValueError, match="1 codes for 2 rows"):
        row_problems_array(check, table, pa.array(["no_messages"]))
