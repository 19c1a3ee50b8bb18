"""The rules over real chat data written by others (tests/data/corpus, see its SOURCES.md).

The files are small files, or a few rows of larger ones, from public repositories
(their origin, license and the rows kept are in SOURCES.md). For each file: the
core check alone, then the checks that fit the file (its dataset type, tool
calling, ShareGPT, vision, ...), with the exact count of each reason. Every count
was verified by reading the rows; the comment above it says why it is right.
`judged` also pins that the per-row reference and the batch path (a JSON text table
and, where Arrow can hold the rows, a native table) count the same.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from chatgate.rules import (
    ChatFormat,
    LabelCheck,
    dataset_checks,
    detect_dataset_type,
    first_codes,
    first_problem,
    first_row_problem,
    format_codes,
    sample_profile,
)

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def load(name: str):
    """A JSON file, or a JSONL file as a list of its lines' values."""
    path = CORPUS / name
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return json.loads(path.read_text("utf-8"))


def _json_form(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def judged(rows: list[dict], kind: str | None = None, **options) -> dict[str, int]:
    """Counts of each reason over `rows` (passing rows not counted).

    The rows get every column of any row (null where missing), as a table would.
    The per-row reference (`first_row_problem`) and the batch path
    (`dataset_checks(...).check`) must count the same, on JSON text and on native
    Arrow values (when Arrow can hold them).
    """
    columns = list(dict.fromkeys(name for row in rows for name in row))
    rows = [{name: row.get(name) for name in columns} for row in rows]
    reference = Counter(first_row_problem(row, kind, **options) for row in rows)
    checks = dataset_checks(kind, columns, **options)
    text = pa.table({name: [_json_form(row[name]) for row in rows] for name in columns})
    assert Counter(first_codes([c.check(text) for c in checks]).to_pylist()) == reference
    try:
        native = pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        native = None
    if native is not None:
        assert Counter(first_codes([c.check(native) for c in checks]).to_pylist()) == reference
    reference.pop(None, None)
    return dict(reference)


# --- axolotl ------------------------------------------------------------------------


def test_axolotl_sharegpt_conversation():
    conversation = load("axolotl/conversation.json")
    rows = [conversation]
    # One object {"conversations": [...]}: 12 turns, human/gpt alternating, ending on gpt.
    # The core check reads "role": ShareGPT has "from", so every message is bad_message;
    # with the keys but not the mapping, "human" isn't a role.
    assert judged(rows) == {"bad_message": 1}
    assert judged(rows, role_key="from", content_key="value") == {"unknown_role": 1}
    # Read as ShareGPT (human -> user, gpt -> assistant) it is well formed.
    assert judged(rows, sharegpt=True, first_role="user", last_role="assistant") == {}
    # The object itself is a value too: {"conversations": [...]} is read like {"messages": [...]}.
    assert first_problem(conversation, sharegpt=True) is None


def test_axolotl_sharegpt_missing_turn():
    rows = [load("axolotl/conversation.missingturns.json")]
    # The same conversation with the 2nd turn (gpt) emptied: value "" -> empty_content.
    assert judged(rows, sharegpt=True, first_role="user", last_role="assistant") == {
        "empty_content": 1
    }


def test_axolotl_messages_with_tools():
    rows = load("axolotl/ds_schema_unification_messages_w_tools.jsonl")
    # 3 rows, each [user, assistant with content "" and one tool call]. The core check
    # sees an empty assistant reply in each: it would quarantine 3 good rows.
    assert judged(rows) == {"empty_content": 3}
    # With tool calling, content "" beside tool_calls is allowed. The calls have no
    # "type" (read as "function"), and call move, turn and invalid_prompt, which are
    # the three functions every row's tools column declares. The extra column
    # add_generation_prompt is carried, not read.
    assert judged(rows, tools=True) == {}
    assert judged(rows, tools=True, last_role="assistant") == {}


# --- FastChat -----------------------------------------------------------------------


def test_fastchat_dummy_conversation():
    rows = load("fastchat/dummy_conversation.json")
    assert len(rows) == 12
    # {id, conversations[{from, value}]}: no "role" key anywhere -> 12 bad_message.
    assert judged(rows) == {"bad_message": 12}
    # As ShareGPT every conversation is human/gpt alternating, 2, 4 or 6 turns
    # (4 of each), no empty value, ending on gpt.
    assert judged(rows, sharegpt=True, first_role="user", last_role="assistant") == {}
    # and is a valid sample too (at least one user and one assistant turn, no tools).
    assert judged(rows, chat=sample_profile(sharegpt=True)) == {}


# --- LLaMA-Factory --------------------------------------------------------------------


def test_llamafactory_dpo():
    rows = load("llamafactory/dpo_en_demo.json")
    assert len(rows) == 10
    # conversations (the prompt) + chosen + rejected is no TRL column set.
    with pytest.raises(ValueError, match="conversations"):
        detect_dataset_type(rows[0])
    # Named as preference with the prompt in `conversations`, read as ShareGPT:
    # 4 prompts are one human turn, 3 system + human, 3 longer human/gpt
    # exchanges, all ending on human (-> user); chosen and rejected are one gpt
    # message object each (LLaMA-Factory's ranking format), none empty, and no
    # pair is identical.
    assert judged(rows, "preference", columns={"prompt": "conversations"}, sharegpt=True) == {}
    assert judged(rows, None, columns={"prompt": "conversations"}, sharegpt=True) == {}
    # With the from/value keys but not the ShareGPT reading, a single message object
    # isn't a list of messages: chosen fails in each of the 10 rows.
    options = {"role_key": "from", "content_key": "value", "roles": ["system", "human", "gpt"]}
    assert judged(rows, "preference", columns={"prompt": "conversations"}, **options) == {
        "not_messages": 10
    }


def test_llamafactory_glaive_toolcall():
    rows = load("llamafactory/glaive_toolcall_en_demo.json")
    assert len(rows) == 12
    # ShareGPT with function_call / observation turns; tools is JSON text of bare
    # schemas ({name, description, parameters}), "[]" in 2 rows.
    # Without tool calling, observation (-> tool) isn't a role: the 8 rows that
    # hold a function_call/observation exchange fail (one of each of the full file's
    # 8 shapes: 1 to 3 such exchanges among 0 to 2 plain human/gpt ones). The 2 rows
    # whose tools declare a function they don't call, and the 2 with "[]", pass.
    assert judged(rows, sharegpt=True) == {"unknown_role": 8}
    # With it, each of the 12 function_call values is JSON {"name", "arguments": {...}}
    # naming a function of the row's tools, each observation answers the call just
    # before it, and every row ends on gpt: nothing fails.
    assert judged(rows, sharegpt=True, tools=True, last_role="assistant") == {}


def test_llamafactory_kto():
    rows = load("llamafactory/kto_en_demo.json")
    assert len(rows) == 10
    # messages + label: LLaMA-Factory's KTO shape, not TRL's unpaired preference
    # (prompt, completion, label), so the type isn't detected...
    with pytest.raises(ValueError):
        detect_dataset_type(rows[0])
    # ...but the messages are well formed (user/assistant alternating, 1 to 6
    # exchanges, ending on assistant, none empty) and every label is a boolean
    # (5 true, 5 false).
    assert judged(rows, "language_modeling", last_role="assistant", first_role="user") == {}
    labels = LabelCheck().check(pa.table({"label": [row["label"] for row in rows]}))
    assert labels.null_count == 10


def test_llamafactory_mllm():
    rows = load("llamafactory/mllm_demo.json")
    assert len(rows) == 6
    # messages + images; the images are marked by "<image>" in string contents, not
    # by image parts. Counting image parts only, no row has any, and each has 1 or 2
    # images: 6 image_count.
    assert judged(rows) == {"image_count": 6}
    # Counting "<image>" too: rows 1 and 4 have two tokens for two images, the others
    # one for one.
    assert judged(rows, image_token="<image>") == {}
    # Without the images column there is nothing to count, and the core check passes all.
    assert judged([{"messages": row["messages"]} for row in rows]) == {}


def test_llamafactory_reason_tool_use():
    rows = load("llamafactory/reason_tool_use_demo_50.jsonl")
    assert len(rows) == 6
    # LLaMA-Factory v1: content is a list of parts {type: text|reasoning|tool_call,
    # value}; tools is JSON text. The core check: the 3 rows with tool turns (1, 2
    # and 3 tool messages) have the role "tool" (unknown_role); in the 3 others
    # (system, user, assistant) the system message holds only a text part whose
    # text is under "value", not "text": blank (empty_content).
    assert judged(rows) == {"unknown_role": 3, "empty_content": 3}
    # Reading text parts under "value", with tool calling: the 3 rows without tool
    # turns pass. In the 3 others, the calls are content parts, not tool_calls: the
    # tool messages answer no call, as a transformers chat template would see them.
    assert judged(rows, tools=True, text_key="value") == {"orphan_tool": 3}
    assert judged(rows, tools=True) == {"orphan_tool": 3, "empty_content": 3}


def test_llamafactory_v1_sft():
    rows = load("llamafactory/v1_sft_demo.jsonl")
    assert len(rows) == 20
    # Every row is [user, assistant], each content one {"type": "text", "value": ...}
    # part: under the transformers format ("text") all 20 are blank.
    assert judged(rows) == {"empty_content": 20}
    # Read with text_key="value", none is blank (loss_weight is an extra key).
    assert judged(rows, text_key="value", first_role="user", last_role="assistant") == {}


# --- mistral-finetune -------------------------------------------------------------------


def test_mistral_finetune_readme_examples():
    rows = load("mistral-finetune/readme_examples.jsonl")
    assert [sorted(row) for row in rows] == [
        ["text"],
        ["text"],
        ["messages"],
        ["messages"],
        ["messages", "tools"],
    ]
    # One file mixing pretraining text and instruct messages: as one table it has
    # both `text` and `messages`, which is no dataset type.
    with pytest.raises(ValueError, match="can't tell"):
        detect_dataset_type(["text", "messages", "tools"])
    # Each row judged as its own type: the 2 text rows are non-empty strings, the
    # 2 instruct rows alternate user/assistant (a "weight": 0 key is ignored); the
    # function-calling row has tool turns, not a core role.
    assert judged(rows[:2]) == {}
    assert judged(rows[2:4], last_role="assistant") == {}
    assert judged(rows[4:]) == {"unknown_role": 1}
    # With tool calling it passes: the assistant's first call (id TX92Jm8Zi) has no
    # content key, the tool message's tool_call_id matches it, generate_anagram is
    # declared, and the row ends on an unanswered call (3XhQnxLsT), which is allowed.
    assert judged(rows[4:], tools=True, last_role="assistant") == {}


# --- TRL -----------------------------------------------------------------------------------

TRL_FROM_VALUE = (501, 1332, 1348)
TRL_TOOLS = (394,)
TRL_COLUMNAR = (1010, 1018)


def test_trl_examples():
    wrapped = load("trl/test_data_utils_examples.jsonl")
    assert len(wrapped) == 54
    rows = [w for w in wrapped if w["lineno"] not in TRL_COLUMNAR]
    # 52 rows, each one example of TRL's own tests, each its own little table.
    # Their types are detected from their columns (the TRL types in both formats,
    # Harmony's thinking, chat_template_kwargs and the like as extra columns).
    codes = {w["lineno"]: next(iter(judged([w["example"]]) or {None: 0})) for w in rows}
    failing = {lineno: code for lineno, code in codes.items() if code}
    # With the core defaults: 3 rows use from/value keys (no "role": bad_message),
    # and the "Preference with tool calls" row has tool turns (unknown_role).
    assert failing == {
        501: "bad_message",
        1332: "bad_message",
        1348: "bad_message",
        394: "unknown_role",
    }
    # With the options that fit each row, all 52 pass; Harmony's rules hold on every
    # row (thinking only on assistant messages).
    for w in rows:
        options = {"harmony": True}
        if w["lineno"] in TRL_FROM_VALUE:
            options["sharegpt"] = True
        if w["lineno"] in TRL_TOOLS:
            options["tools"] = True
        assert judged([w["example"]], **options) == {}, w["lineno"]


def test_trl_columnar_examples():
    wrapped = {w["lineno"]: w["example"] for w in load("trl/test_data_utils_examples.jsonl")}
    # The two Dataset.from_dict dicts are columns, not rows: as tables, a standard
    # preference table of 2 rows and a standard unpaired one of 4, all well formed.
    paired = pa.table(wrapped[1010])
    unpaired = pa.table(wrapped[1018])
    for table, kind in [(paired, "preference"), (unpaired, "unpaired_preference")]:
        (check,) = dataset_checks(None, table.column_names)
        assert check.dataset_type == kind
        assert check.check(table).null_count == table.num_rows
    # Read as one row, its "prompt" is a list of strings: messages that aren't mappings.
    assert first_row_problem(wrapped[1010]) == "bad_message"


# --- xtuner -------------------------------------------------------------------------------


def test_xtuner_openai_sft():
    lines = load("xtuner/openai_sft.jsonl")
    assert len(lines) == 20 and all(isinstance(line, list) for line in lines)
    # Each line is a bare list of messages, here the `messages` column: all are
    # [user, assistant] with non-blank contents.
    rows = [{"messages": line} for line in lines]
    assert judged(rows, first_role="user", last_role="assistant") == {}
    assert judged(rows, chat=sample_profile(alternate=True, allow_empty=False)) == {}


def test_xtuner_qwen35():
    rows = load("xtuner/qwen35_tokenize_data.jsonl")
    assert len(rows) == 17
    # Rows 7-12 have tool turns (unknown_role for the core check); the others pass
    # (reasoning_content, "loss" and video parts are extra keys or non-text parts).
    assert judged(rows) == {"unknown_role": 6}
    # With tool calling and the reasoning under reasoning_content (always on an
    # assistant message, always text): the tool turns answer the call before them,
    # but rows 7-12 call get_weather while their tools declare only
    # get_current_temperature and get_current_wind_speed. Rows without a tools key
    # (null in the table) make no call. A bad row the core check calls good.
    options = {"tools": True, "thinking_key": "reasoning_content", "last_role": "assistant"}
    assert judged(rows, **options) == {"unknown_tool": 6}
    # The sample profile refuses the tool turns of the same 6 rows; rows 16 and 17
    # (no system message) and the rest have a user and an assistant turn.
    assert judged(rows, chat=sample_profile()) == {"tool_turn": 6}
    assert judged(rows, harmony=True, thinking_key="reasoning_content") == {"unknown_role": 6}


def test_core_check_alone_misses_and_quarantines():
    """The summary of this file: what the core check gets wrong on real data."""
    good_but_quarantined = {
        "axolotl tools": judged(load("axolotl/ds_schema_unification_messages_w_tools.jsonl")),
        "v1_sft": judged(load("llamafactory/v1_sft_demo.jsonl")),
    }
    assert good_but_quarantined == {
        "axolotl tools": {"empty_content": 3},
        "v1_sft": {"empty_content": 20},
    }
    qwen = load("xtuner/qwen35_tokenize_data.jsonl")
    # The core check never reads the tools column: rows 7-12's undeclared calls are
    # only seen as unknown roles, and pass once "tool" is merely allowed.
    assert judged(qwen, roles=["system", "user", "assistant", "tool"]) == {}
    assert judged(qwen, tools=True) == {"unknown_tool": 6}
    assert format_codes(ChatFormat(tools=True))  # the options are plain ChatFormat fields
