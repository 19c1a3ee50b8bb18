"""The Validate API with dataset types and the extended chat options, on Polars and pandas."""

from __future__ import annotations

import json

import pandas as pd
import polars as pl
import pytest

import chatgate as pb


def _chat(*turns):
    return json.dumps([{"role": r, "content": c} for r, c in turns])


PREFERENCE = {
    "prompt": [_chat(("user", "Sky?")), _chat(("assistant", "Hi")), _chat(("user", "Sun?"))],
    "chosen": [_chat(("assistant", "Blue.")), _chat(("assistant", "x")), _chat(("assistant", "Hot."))],
    "rejected": [_chat(("assistant", "Green.")), _chat(("assistant", "y")), _chat(("assistant", "Hot."))],
}


@pytest.mark.parametrize("frame", [pl.DataFrame, pd.DataFrame], ids=["polars", "pandas"])
def test_dataset_type_is_detected_and_judged(frame):
    validation = pb.Validate(frame(PREFERENCE)).col_vals_dataset_type().interrogate()
    assert validation.n_failed(i=1, scalar=True) == 2
    extract = validation.get_data_extracts(i=1, frame=True)
    rows = extract.to_dicts() if isinstance(extract, pl.DataFrame) else extract.to_dict("records")
    assert [(r["_row_num_"], r["pb_reason_"]) for r in rows] == [(2, "prompt_end"), (3, "same_pair")]
    text = repr(validation)
    assert "col_vals_dataset_type()" in text
    assert "prompt, chosen, rejected" in text
    assert "PREFERENCE (AUTO)" in text
    assert "2 rows aren't well-formed preference rows: 1 has" in text
    report = repr(validation.get_step_report(i=1))
    assert "ASSERTION `prompt, chosen, rejected form a preference" in report


def test_dataset_type_named_with_mapped_columns():
    data = pl.DataFrame({"question": PREFERENCE["prompt"], "good": PREFERENCE["chosen"], "bad": PREFERENCE["rejected"]})
    validation = pb.Validate(data).col_vals_dataset_type(
        "preference", columns={"prompt": "question", "chosen": "good", "rejected": "bad"}
    ).interrogate()
    assert validation.n_failed(i=1, scalar=True) == 2
    assert json.loads(validation.get_json_report())[0]["assertion_type"] == "col_vals_dataset_type"


def test_undetectable_type_raises_at_the_call():
    with pytest.raises(ValueError, match="can't tell the dataset type"):
        pb.Validate(pl.DataFrame({"body": ["x"]})).col_vals_dataset_type()


def test_tool_calls_checked_against_the_rows_tools():
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    good = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "Sunny"}, {"role": "assistant", "content": "Sunny."}]
    tools = json.dumps([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])
    data = pl.DataFrame({"messages": [json.dumps(good)] * 2, "tools": [tools, "[]"]})
    core = pb.Validate(data).col_vals_chat_format("messages").interrogate()
    assert core.n_failed(i=1, scalar=True) == 2  # the core check knows no tool role
    validation = (
        pb.Validate(data).col_vals_chat_format("messages", tools=True, tools_column="tools").interrogate()
    )
    assert validation.get_data_extracts(i=1, frame=True)["pb_reason_"].to_list() == ["unknown_tool"]
    assert "ROLES: SYSTEM, USER, ASSISTANT, TOOL ALTERNATING TOOLS" in repr(validation)


def test_sharegpt_messages_are_mapped_before_the_rules():
    data = pl.DataFrame(
        {"conversations": [json.dumps([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]),
                           json.dumps([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": " "}])]}
    )
    validation = pb.Validate(data).col_vals_chat_format("conversations", sharegpt=True).interrogate()
    assert validation.get_data_extracts(i=1, frame=True)["pb_reason_"].to_list() == ["empty_content"]


def test_tools_column_without_tools_raises_at_the_call():
    with pytest.raises(ValueError, match="tools_column= needs tools=True"):
        pb.Validate(pl.DataFrame({"messages": ["[]"]})).col_vals_chat_format("messages", tools_column="tools")


def test_sundered_data_uses_dataset_steps_too():
    validation = pb.Validate(pl.DataFrame(PREFERENCE)).col_vals_dataset_type().interrogate()
    assert validation.get_sundered_data("pass")["prompt"].to_list() == [PREFERENCE["prompt"][0]]
