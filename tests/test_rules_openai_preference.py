"""OpenAI's and Together's preference rows (`openai_preference`): `input`, `preferred_output`,
`non_preferred_output`.

Labelled examples per rule, passing and failing, each run in JSON text and native forms
through the per-row reference and the batch path (`rule_examples.assert_example`); the
trainers' own example lines (tests/data/trainers/); Together's own refused cases, with the
verdicts its SDK 2.14.0 `check_file` gives them; detection, construction, the API on
Polars, pandas and DuckDB, and the job on DuckDB. Spark and the other surfaces are in
tests/test_profiles_parity.py; where each code is placed, in tests/test_locate_rows.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import ibis
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from deltalake import write_deltalake

import chatgate as pb
from chatgate.job.config import build_config
from chatgate.job.runner import run
from chatgate.rules import (
    DATASET_TYPES,
    DatasetCheck,
    dataset_checks,
    detect_dataset_type,
    first_reason,
    first_row_problem,
    phrase,
)
from chatgate.rules.datasets.locate_rows import row_problems
from chatgate.rules.datasets.openai_preference import OpenAIPreferenceCheck
from job_helpers import read_delta

try:
    from rule_examples import A2, A, S, U, assert_example, call, examples, json_table, msg, schema
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A2, A, S, U, assert_example, call, examples, json_table, msg, schema

OP = "openai_preference"
TRAINERS = Path(__file__).resolve().parent / "data" / "trainers"
OPENAI = {"profile": "openai"}
TOGETHER = {"profile": "together"}
TOOLS = {"tools": True}
PNG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def row(messages=(U,), preferred=(A,), non_preferred=(A2,), **input_keys):
    """A preference row: the input's messages (and other keys), the two outputs."""
    return {
        "input": {"messages": list(messages), **input_keys},
        "preferred_output": list(preferred) if isinstance(preferred, tuple) else preferred,
        "non_preferred_output": list(non_preferred) if isinstance(non_preferred, tuple) else non_preferred,
    }


def with_input(value):
    return {**row(), "input": value}


TOOL_CALL = msg("assistant", None, tool_calls=[call("get_weather", id="c1")])

EXAMPLES = examples(
    # passing rows
    ("one-turn", row(), OP, {}, None),
    ("detected", {**row(), "id": 1}, None, {}, None),
    ("multi-turn-input", row([S, U, A, U]), OP, {}, None),
    ("identical-outputs-pass-as-both-trainers-take-them", row(non_preferred=(A,)), OP, {}, None),
    ("parallel_tool_calls-and-empty-tools", row(tools=[], parallel_tool_calls=True), OP, {}, None),
    ("openai-profile", row([S, U]), OP, OPENAI, None),
    ("together-profile", row([S, U]), OP, TOGETHER, None),
    ("pinned-conversational", row(), OP, {"format": "conversational"}, None),
    ("null-outputs-na_pass", row(preferred=None, non_preferred=None), OP, {"na_pass": True}, None, "json"),
    # input: an object holding `messages`
    ("input-null", with_input(None), OP, {}, "not_messages", "json"),
    ("input-text", with_input("Not a dictionary"), OP, {}, "not_messages"),
    ("input-messages-text", with_input({"messages": "Hi"}), OP, {}, "not_messages"),
    ("input-a-bare-list", with_input([U]), OP, {}, "bad_input"),
    ("input-without-messages", with_input({"tools": []}), OP, {}, "bad_input", "json"),
    ("input-empty-object", with_input({}), OP, {}, "bad_input", "json"),
    ("input-messages-null", with_input({"messages": None}), OP, {}, "bad_input", "json"),
    ("parallel_tool_calls-not-a-boolean", row(parallel_tool_calls="yes"), OP, {}, "bad_input"),
    ("input-empty-messages", row([]), OP, {}, "no_messages", "json"),
    # the input is a conversational prompt
    ("prompt-ends-with-the-assistant", row([U, A]), OP, {}, "prompt_end"),
    ("prompt-a-lone-system-message", row([S]), OP, {}, "prompt_end"),
    ("prompt-unknown-role", row([msg("invalid_role", "Hello")]), OP, {}, "unknown_role"),
    ("prompt-not-alternating", row([U, U]), OP, {}, "not_alternating"),
    ("prompt-not-alternating-under-openai", row([U, U]), OP, OPENAI, None),
    ("prompt-message-not-a-mapping", row(["Not a dictionary"]), OP, {}, "bad_message", "json"),
    ("prompt-ends-with-a-tool-turn", row([U, TOOL_CALL, msg("tool", "Sunny", tool_call_id="c1")]), OP, TOOLS, None),
    # each output: a list of exactly one assistant message
    ("two-messages", row(preferred=(A, A2)), OP, {}, "output_count"),
    ("no-message", row(non_preferred=()), OP, {}, "output_count", "json"),
    ("output-text", row(non_preferred="Not an array but a string"), OP, {}, "not_messages"),
    ("output-null", row(preferred=None), OP, {}, "not_messages", "json"),
    ("output-one-message-object", row(preferred=A), OP, {}, "not_messages"),
    ("output-messages-object", row(preferred={"messages": [A]}), OP, {}, "not_messages"),
    ("output-one-message-object-single_message_answers", row(preferred=A), OP, {"single_message_answers": True}, None),
    ("output-user-message", row(non_preferred=(U,)), OP, {}, "completion_role"),
    ("output-tool-message", row(non_preferred=(msg("tool", "Sunny"),)), OP, TOOLS, "completion_role"),
    ("output-alias-mapped-before-the-rule", row(preferred=(msg("gpt", "Blue."),)), OP, {"role_map": {"gpt": "assistant"}}, None),
    ("output-without-role", row(preferred=({"content": "Blue."},)), OP, {}, "bad_message"),
    ("output-empty-content", row(preferred=(msg("assistant", ""),)), OP, {}, "empty_content"),
    ("output-empty-content-allow_empty", row(preferred=(msg("assistant", ""),)), OP, {"allow_empty": True}, None),
    # the input followed by each output is a whole conversation, with the profile's rules
    ("whole-last_role", row(), OP, {"last_role": "assistant"}, None),
    ("whole-first_role", row([A, U]), OP, {"first_role": "user"}, "first_role"),
    ("openai-weight", row([msg("user", "Hi", weight=2)]), OP, OPENAI, "bad_weight"),
    ("openai-content-a-number", row(preferred=(msg("assistant", 123),)), OP, OPENAI, "bad_content_type"),
    ("openai-unknown-message-key", row([msg("user", "Hi", foo=1)]), OP, OPENAI, "unknown_key"),
    ("together-image-in-an-output", row(preferred=(msg("assistant", [PNG]),)), OP, TOGETHER, "image_role"),
    ("together-image-in-the-input", row([msg("user", [{"type": "text", "text": "What?"}, PNG])]), OP, TOGETHER, None),
    # tools: the input's declare the functions an output may call (tools=True)
    ("tool-call-declared", row(preferred=(TOOL_CALL,), tools=[schema("get_weather")]), OP, OPENAI, None, "json"),
    ("tool-call-undeclared", row(preferred=(TOOL_CALL,), tools=[schema("get_time")]), OP, OPENAI, "unknown_tool", "json"),
    ("tool-call-without-tools", row(preferred=(TOOL_CALL,)), OP, OPENAI, None),
    ("tools-malformed", row(tools="not a list"), OP, OPENAI, "bad_tools"),
    ("tools-unread-without-tools", row(preferred=(TOOL_CALL,), tools="not a list"), OP, {"allow_empty": True}, None),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", EXAMPLES)
def test_example(row, kind, options, expected, forms):
    assert_example(row, kind, options, expected, forms)


def test_examples_run_in_both_forms():
    ran = {"json": 0, "native": 0}
    for param in EXAMPLES:
        for form in assert_example(*param.values):
            ran[form] += 1
    assert ran["json"] == len(EXAMPLES)
    assert ran["native"] >= len(EXAMPLES) * 0.7


def test_a_native_struct_input_with_its_tools():
    """`input` as Arrow holds it: struct<messages: list<struct>, tools, parallel_tool_calls>; a key
    whose value is null (a row without tools) counts as absent."""
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather."}}
    call_ = msg("assistant", None, tool_calls=[{"id": "c1", "type": "function",
                                                "function": {"name": "get_weather", "arguments": "{}"}}])
    rows = [
        row(preferred=(call_,), tools=[tool], parallel_tool_calls=False),
        row(preferred=(call_,), tools=None, parallel_tool_calls=None),
        row(preferred=(call_,), tools=[{**tool, "function": {**tool["function"], "name": "get_time"}}],
            parallel_tool_calls=True),
    ]
    table = pa.Table.from_pylist(rows)
    assert pa.types.is_struct(table.schema.field("input").type)
    (check,) = dataset_checks(OP, table.column_names, profile="openai")
    assert check.check(table).to_pylist() == [None, None, "unknown_tool"]
    assert check.check(json_table(rows[2], 1)).to_pylist() == ["unknown_tool"]


# --- The trainers' own examples --------------------------------------------------------------


def _lines(name):
    return [json.loads(line) for line in (TRAINERS / name).read_text("utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["openai_preference_example.jsonl", "together_preference_openai.jsonl"])
@pytest.mark.parametrize("options", [{}, OPENAI, TOGETHER], ids=["default", "openai", "together"])
def test_the_trainers_example_lines_pass(name, options):
    for line in _lines(name):
        assert_example(line, None, options, None)


# Together's own refused cases (tests/unit/test_preference_openai.py @ eba5e5f, rewritten: the
# cases, not the code), each refused by its SDK 2.14.0 `check_file`, with chatgate's code under
# profile="together".
def _together(change):
    base = _lines("together_preference_openai.jsonl")[0]
    return {**base, **change}


TOGETHER_REFUSED = [
    ("missing_input", {"input": None}, "not_messages"),
    ("missing_preferred_output", {"preferred_output": None}, "not_messages"),
    ("empty_messages", {"input": {"messages": []}}, "no_messages"),
    ("missing_role_preferred", {"preferred_output": [{"content": "Missing role field"}]}, "bad_message"),
    ("wrong_output_format_non_preferred", {"non_preferred_output": "Not an array but a string"}, "not_messages"),
    ("multiple_preferred_outputs", {"preferred_output": [msg("assistant", "First"), msg("assistant", "Second")]},
     "output_count"),
    ("empty_non_preferred_output", {"non_preferred_output": []}, "output_count"),
    ("non_string_content_in_messages", {"input": {"messages": [msg("user", 123)]}}, "bad_content_type"),
    ("invalid_role_in_messages", {"input": {"messages": [msg("invalid_role", "Hello")]}}, "unknown_role"),
    ("invalid_weight_type", {"input": {"messages": [msg("user", "Hello", weight="not_an_integer")]}}, "bad_weight"),
    ("invalid_weight_value", {"input": {"messages": [msg("user", "Hello", weight=2)]}}, "bad_weight"),
    ("non_dict_message", {"input": {"messages": ["Not a dictionary"]}}, "bad_message"),
    ("non_dict_input", {"input": "Not a dictionary"}, "not_messages"),
    ("missing_messages_in_input", {"input": {}}, "bad_input"),
    ("non_assistant_role_in_preferred", {"preferred_output": [msg("user", "This should be assistant")]},
     "completion_role"),
    ("last_input_message_from_the_assistant", {"input": {"messages": [U, A]}}, "prompt_end"),
]


@pytest.mark.parametrize("change, expected", [pytest.param(c, e, id=n) for n, c, e in TOGETHER_REFUSED])
def test_togethers_refused_cases_are_refused(change, expected):
    assert first_row_problem(_together(change), OP, **TOGETHER) == expected


def test_what_together_refuses_and_the_profile_lets_through():
    """Knowingly looser: the together profile lets a missing content pass (allow_empty=True, as
    Together lets empty contents through) where its SDK wants the `content` key. Together's own
    `missing_content_*` cases; the openai profile refuses them."""
    for change in ({"preferred_output": [{"role": "assistant"}]}, {"input": {"messages": [{"role": "user"}]}}):
        assert first_row_problem(_together(change), OP, **TOGETHER) is None
        assert first_row_problem(_together(change), OP, **OPENAI) == "empty_content"


def test_what_together_takes_and_the_type_refuses():
    """Knowingly stricter: a prompt ending with a system message (Together only refuses an
    assistant one) and a `parallel_tool_calls` that isn't a boolean (OpenAI's schema types it)."""
    assert first_row_problem(_together({"input": {"messages": [S]}}), OP, **TOGETHER) == "prompt_end"
    changed = _together({"input": {"messages": [U], "parallel_tool_calls": "yes"}})
    assert first_row_problem(changed, OP, **TOGETHER) == "bad_input"


# --- Detection, construction, the check ------------------------------------------------------


@pytest.mark.parametrize(
    "columns, expected",
    [
        (["input", "preferred_output", "non_preferred_output"], OP),
        (["id", "non_preferred_output", "input", "preferred_output"], OP),
        # `input` is a field only beside an output: elsewhere it is an extra column
        (["messages", "input"], "language_modeling"),
        (["prompt", "completion", "input"], "prompt_completion"),
    ],
)
def test_detect(columns, expected):
    assert detect_dataset_type(columns) == expected


@pytest.mark.parametrize(
    "columns",
    [["input", "preferred_output"], ["preferred_output", "non_preferred_output"], ["prompt", "chosen", "rejected", "preferred_output"]],
)
def test_detect_refuses_an_incomplete_row(columns):
    with pytest.raises(ValueError, match="can't tell the dataset type"):
        detect_dataset_type(columns)


def test_the_check():
    assert OP in DATASET_TYPES
    (check,) = dataset_checks(OP, ["id", "q", "preferred_output", "non_preferred_output", "tools", "images"],
                              columns={"input": "q"}, tools=True)
    assert isinstance(check, OpenAIPreferenceCheck)
    assert check.columns == ("q", "preferred_output", "non_preferred_output")  # tools are in the input
    assert check.describe() == "q, preferred_output, non_preferred_output form a preference (OpenAI format) row"
    assert check.as_dict()["dataset_type"] == OP
    assert {"bad_input", "output_count", "completion_role", "prompt_end", "bad_tools", "unknown_tool"} <= set(check.codes)
    assert "same_pair" not in check.codes
    assert phrase("output_count", 2) == "2 have an output that isn't exactly one message (`output_count`)"
    assert phrase("bad_input", 1) == "1 has an input that isn't an object holding messages (`bad_input`)"


@pytest.mark.parametrize(
    "build",
    [
        lambda: dataset_checks(OP, ["input", "preferred_output"]),
        lambda: dataset_checks(OP, ["input", "preferred_output", "non_preferred_output"], format="standard"),
        lambda: DatasetCheck(OP),
        lambda: OpenAIPreferenceCheck("preference"),
        lambda: OpenAIPreferenceCheck(tools_column="tools"),
    ],
    ids=["missing-column", "standard", "plain-dataset-check", "other-type", "tools-column"],
)
def test_bad_construction(build):
    with pytest.raises(ValueError):
        build()


GARBAGE = [None, "", "[", "{}", "[]", 3, 2.5, b"\xff", "null", [None], [[]], {"messages": {}}, [{"role": 1}]]


def test_garbage_in_any_field_fails_and_never_raises():
    check = OpenAIPreferenceCheck(fmt=dataset_checks(OP, list(row()), profile="openai")[0].fmt)
    for value in GARBAGE:
        for name in ("input", "preferred_output", "non_preferred_output"):
            bad = {**row(), name: value}
            code = check.check_row(bad)
            assert code is not None, (name, value)
            assert first_reason(p.code for p in row_problems(check, bad)) == code


# --- The API and the job ------------------------------------------------------------------------

ROWS = [
    row(),
    row([U, A]),
    row(preferred=(A, A2)),
    with_input([U]),
    row(non_preferred=(U,)),
    row(non_preferred=(A,)),
]
EXPECTED = {2: "prompt_end", 3: "output_count", 4: "bad_input", 5: "completion_role"}


def _json_columns(rows):
    return {name: [json.dumps(r[name]) for r in rows] for name in rows[0]}


@pytest.mark.parametrize(
    "frame",
    [pl.DataFrame, pd.DataFrame, lambda data: ibis.memtable(pa.table(data))],
    ids=["polars", "pandas", "duckdb"],
)
def test_the_api_judges_and_detects_the_type(frame):
    data = {"id": list(range(1, len(ROWS) + 1)), **_json_columns(ROWS)}
    for args in ((), (OP,)):
        validation = pb.Validate(frame(data)).col_vals_dataset_type(*args).interrogate()
        extract = validation.get_data_extracts(i=1, frame=True)
        extract = extract if isinstance(extract, pd.DataFrame) else pl.DataFrame(extract).to_pandas()
        assert dict(zip(extract["id"].tolist(), extract["pb_reason_"].tolist())) == EXPECTED
    text = repr(validation)
    assert "OPENAI PREFERENCE (AUTO)" in text
    assert "4 rows aren't well-formed openai preference rows" in text


def _job(tmp_path, source, dataset, overrides=None, checks=None):
    path = str(tmp_path / "source")
    write_deltalake(path, source)
    raw = {
        "source": path,
        "engine": "duckdb",
        "dataset": dataset,
        "checks": checks or {},
        "outputs": {name: str(tmp_path / name) for name in ("quarantine", "summary", "valid")},
        "run_id": "run-1",
    }
    run(build_config(raw, overrides or {}))
    quarantine = read_delta(tmp_path / "quarantine")
    return quarantine, dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist()))


@pytest.mark.parametrize(
    "dataset, overrides",
    [({"type": OP}, {}), ({}, {"dataset_type": OP}), ({"type": "auto"}, {})],
    ids=["config", "flag", "detected"],
)
def test_the_job_on_duckdb_json_text(tmp_path, dataset, overrides):
    source = pa.table({"id": pa.array(range(1, len(ROWS) + 1), pa.int64()), **_json_columns(ROWS)})
    quarantine, found = _job(tmp_path, source, dataset, overrides)
    assert found == EXPECTED
    where = dict(zip(quarantine["id"].to_pylist(), quarantine["pb_message_"].to_pylist()))
    assert where == {2: 1, 3: None, 4: None, 5: 0}


def test_the_job_on_duckdb_native_values(tmp_path):
    """Struct and list<struct> columns as a Delta table holds them; the together profile's table
    check refuses the `id` column, a step of its own, not a row's problem."""
    native = [r for r in ROWS if isinstance(r["input"], dict)]
    source = pa.Table.from_pylist([{"id": i + 1, **r} for i, r in enumerate(native)])
    expected = {i + 1: c for i, r in enumerate(native) if (c := first_row_problem(r, OP, **TOGETHER))}
    assert set(expected.values()) == {"prompt_end", "output_count", "missing_role"}
    _, found = _job(tmp_path, source, {"type": OP}, checks=TOGETHER)
    assert found == expected
