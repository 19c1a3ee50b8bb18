"""A run whose rows mostly fail because they are in another known format says which option reads them.

The failing values read back are judged again with every column the step reads; the key
options are tried with the keys found in the values; an option that reads them wins over one
that only stops checking their rule, which is named as such; an empty source and a flag given
that doesn't fit the data are warnings. Real rows from other projects (tests/data/corpus, see
its SOURCES.md) where they fit.

What an engine gives the hints is the failing values it reads back: on Spark, `make test`
runs a hint of one column, of two (images) and an empty table; the rest with the slow tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.job.runner import run
from chatgate.job.summary import format_summary
from job_helpers import SPARK_SLOW, job_config

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"

SHAREGPT = json.dumps([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}])
TOOLS = json.dumps([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
])
GOOD = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])


def _lines(path: str) -> list[str]:
    return (CORPUS / path).read_text(encoding="utf-8").splitlines()


def _fastchat() -> list[list[dict[str, str]]]:
    """FastChat's dummy conversations: ShareGPT `from` (human, gpt) and `value`."""
    return [row["conversations"] for row in json.loads((CORPUS / "fastchat/dummy_conversation.json").read_text())]


def _hints(tmp_path, engine, backend, table, checks=None, **overrides) -> list[str]:
    source = str(tmp_path / "chats")
    write_deltalake(source, table if isinstance(table, pa.Table) else pa.table({"messages": table}))
    return run(job_config(tmp_path, source, engine, checks or {}, **overrides), backend).hints


def _summary(tmp_path, engine, backend, values) -> str:
    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": values}))
    return format_summary(run(job_config(tmp_path, source, engine, {}), backend))


def test_sharegpt_rows_get_a_hint_naming_the_flag(tmp_path, engine, backend):
    text = _summary(tmp_path, engine, backend, [SHAREGPT] * 9 + [GOOD])
    assert text.splitlines()[-1] == (
        "hint: step 1 (messages): 90% of rows fail (most with bad_message), "
        "but 9 of 9 failing values read back pass with --sharegpt"
    )


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_tool_calling_rows_get_the_tools_hint(tmp_path, engine, backend):
    text = _summary(tmp_path, engine, backend, [TOOLS] * 3)
    assert "pass with --tools" in text.splitlines()[-1]


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_no_hint_when_few_rows_fail_or_nothing_fits(tmp_path, engine, backend):
    assert "hint:" not in _summary(tmp_path / "few", engine, backend, [SHAREGPT] + [GOOD] * 3)
    assert "hint:" not in _summary(tmp_path / "broken", engine, backend, ["[]", "not json", "[1]"])


# -- key options: the keys the failing values hold ------------------------------------


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_llamafactory_v1_parts_with_value_get_the_text_key_not_allow_empty(tmp_path, engine, backend):
    # LLaMA-Factory's v1 rows: content = [{"type": "text", "value": ...}]; every row is empty_content.
    assert _hints(tmp_path, engine, backend, _lines("llamafactory/v1_sft_demo.jsonl")) == [
        "hint: step 1 (messages): 100% of rows fail (most with empty_content), "
        "but 20 of 20 failing values read back pass with --text-key value"
    ]


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_fastchat_from_value_rows_get_sharegpt_not_the_role_and_content_keys(tmp_path, engine, backend):
    # --role-key from --content-key value reads them too, but human and gpt aren't roles: --sharegpt maps them.
    rows = [json.dumps(c) for c in _fastchat()]
    assert _hints(tmp_path, engine, backend, rows) == [
        "hint: step 1 (messages): 100% of rows fail (most with bad_message), "
        "but 12 of 12 failing values read back pass with --sharegpt"
    ]


def test_messages_under_other_keys_get_the_role_and_content_keys(tmp_path):
    rows = [json.dumps([{"speaker": _ROLE[m["from"]], "utterance": m["value"]} for m in c]) for c in _fastchat()]
    assert _hints(tmp_path, "duckdb", None, rows) == [
        "hint: step 1 (messages): 100% of rows fail (most with bad_message), "
        "but 12 of 12 failing values read back pass with --role-key speaker --content-key utterance"
    ]


_ROLE = {"human": "user", "gpt": "assistant"}


def test_role_and_content_keys_with_sharegpt_tags_get_the_role_map(tmp_path):
    rows = [json.dumps([{"role": m["from"], "content": m["value"]} for m in c]) for c in _fastchat()]
    assert _hints(tmp_path, "duckdb", None, rows) == [
        "hint: step 1 (messages): 100% of rows fail (most with unknown_role), "
        "but 12 of 12 failing values read back pass with --role-map gpt=assistant,human=user"
    ]


def test_the_role_key_given_that_the_rows_lack_is_named(tmp_path):
    rows = _lines("xtuner/openai_sft.jsonl")  # bare lists of {role, content}
    assert _hints(tmp_path, "duckdb", None, rows, role_key="speaker") == [
        "warning: step 1 (messages): every row fails, and --role-key speaker doesn't fit the data: "
        "20 of 20 failing values read back pass with --role-key role"
    ]


# -- flags given that don't fit ------------------------------------------------------


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_openai_rows_with_sharegpt_given_warn_that_the_flag_does_not_fit(tmp_path, engine, backend):
    rows = _lines("xtuner/openai_sft.jsonl")
    assert _hints(tmp_path, engine, backend, rows, sharegpt=True) == [
        "warning: step 1 (messages): every row fails, and --sharegpt doesn't fit the data: "
        "20 of 20 failing values read back pass without --sharegpt"
    ]


def test_openai_rows_with_sharegpt_given_mostly_failing_get_the_hint_without_it(tmp_path):
    rows = _lines("xtuner/openai_sft.jsonl")[:9] + [json.dumps(_fastchat()[0])]
    assert _hints(tmp_path, "duckdb", None, rows, sharegpt=True) == [
        "hint: step 1 (messages): 90% of rows fail (most with bad_message), "
        "but 9 of 9 failing values read back pass without --sharegpt"
    ]


def test_sharegpt_tool_rows_get_both_flags(tmp_path):
    # LLaMA-Factory's glaive rows: function_call and observation turns, checked as OpenAI messages.
    rows = json.loads((CORPUS / "llamafactory/glaive_toolcall_en_demo.json").read_text())
    with_calls = [json.dumps(r["conversations"]) for r in rows if any(m["from"] == "function_call" for m in r["conversations"])]
    (hint,) = _hints(tmp_path, "duckdb", None, with_calls)
    assert hint.endswith(f"but {len(with_calls)} of {len(with_calls)} failing values read back pass with --tools --sharegpt")


# -- the step's other columns --------------------------------------------------------


def _mllm(extra_image: bool = False) -> pa.Table:
    """LLaMA-Factory's multimodal rows: `<image>` in the text, one path per image in `images`."""
    rows = json.loads((CORPUS / "llamafactory/mllm_demo.json").read_text())
    return pa.table({
        "messages": [json.dumps(r["messages"]) for r in rows],
        "images": [r["images"] + (["extra.jpg"] if extra_image else []) for r in rows],
    })


def test_multimodal_rows_get_the_image_token_found_in_their_text(tmp_path, engine, backend):
    assert _hints(tmp_path, engine, backend, _mllm(), images_column="images") == [
        "hint: step 1 (messages, images): 100% of rows fail (most with image_count), "
        "but 6 of 6 failing values read back pass with --image-token '<image>'"
    ]


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_multimodal_rows_whose_image_counts_are_wrong_get_no_hint(tmp_path, engine, backend):
    # One image more than the text's placeholders: no option makes them pass (the images column
    # is judged with the chat column: --tools, --harmony or --allow-empty fix nothing).
    assert _hints(tmp_path, engine, backend, _mllm(extra_image=True), images_column="images", image_token="<image>") == []
    assert _hints(tmp_path / "no-token", engine, backend, _mllm(extra_image=True), images_column="images") == []


# -- options that only stop checking a rule, and rows nothing reads ---------------------


def test_genuinely_empty_turns_get_a_hint_that_says_it_stops_checking_the_rule(tmp_path):
    # axolotl's fixture with its second turn's value '' (ShareGPT, checked as such).
    conversation = json.loads((CORPUS / "axolotl/conversation.missingturns.json").read_text())["conversations"]
    assert _hints(tmp_path, "duckdb", None, [json.dumps(conversation)] * 3, sharegpt=True) == [
        "hint: step 1 (messages): 100% of rows fail (most with empty_content), "
        "but 3 of 3 failing values read back pass only if empty_content isn't checked (--allow-empty)"
    ]


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_table_of_broken_rows_gets_no_hint(tmp_path, engine, backend):
    # Real rows cut short (an export that stopped mid-line), nulls, and messages that aren't objects.
    rows = [line[: len(line) // 2] for line in _lines("xtuner/openai_sft.jsonl")[:6]]
    rows += [None, '["Who are you?", "I am Vicuna."]', '{"messages": "Who are you?"}']
    assert _hints(tmp_path, engine, backend, pa.array(rows, pa.string())) == []


def test_a_dataset_type_step_judges_all_its_columns(tmp_path):
    # LLaMA-Factory's DPO rows: ShareGPT conversations, chosen and rejected single {from, value} messages.
    rows = json.loads((CORPUS / "llamafactory/dpo_en_demo.json").read_text())
    table = pa.table({name: [json.dumps(r[key]) for r in rows] for name, key in
                      (("prompt", "conversations"), ("chosen", "chosen"), ("rejected", "rejected"))})
    hints = _hints(tmp_path, "duckdb", None, table, columns=[], dataset_type="preference")
    assert hints == [
        "hint: step 1 (prompt, chosen, rejected): 100% of rows fail (most with not_messages), "
        "but 10 of 10 failing values read back pass with --sharegpt"
    ]


# -- an empty source -------------------------------------------------------------------


def test_an_empty_table_gets_one_warning(tmp_path, engine, backend):
    empty = pa.table({"messages": pa.array([], pa.string()), "chosen": pa.array([], pa.string())})
    assert _hints(tmp_path, engine, backend, empty, columns=["messages", "chosen"]) == [
        "warning: no rows were read from the source table; nothing was checked"
    ]
