"""The options a hint tries, without an engine: their flags as typed, going without a flag given,
and the choice among them on a step's failing rows (`best_fit`)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from chatgate.job.hints import best_fit
from chatgate.job.hints_options import Change, changed, flag_changes, key_changes
from chatgate.rules import ChatCheck, ChatFormat

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def _chosen(check: ChatCheck, table: pa.Table) -> tuple[list[str], int, int, tuple[str, ...]] | None:
    found = best_fit(check, table.select(list(check.columns)))
    if found is None:
        return None
    fit, sampled = found
    return [c.flag for c in fit.changes], fit.passing, sampled, fit.relaxed


def test_flags_are_spelt_as_the_command_line_takes_them():
    assert Change("sharegpt", True).flag == "--sharegpt"
    assert Change("alternate", False).flag == "--no-alternate"
    assert Change("text_key", "value").flag == "--text-key value"
    assert Change("image_token", "<image>").flag == "--image-token '<image>'"
    assert Change("role_map", {"gpt": "assistant", "human": "user"}).flag == "--role-map gpt=assistant,human=user"
    assert Change("sharegpt", False).given(ChatFormat(sharegpt=True)) == "--sharegpt"


def test_going_without_a_flag_undoes_what_it_brought():
    assert changed(ChatFormat(sharegpt=True), [Change("sharegpt", False)]) == ChatFormat()
    assert changed(ChatFormat(tools=True, harmony=True), [Change("tools", False)]).roles == (
        "system", "user", "assistant", "developer"
    )
    # A key given stays: only what the flag itself brought goes.
    kept = changed(ChatFormat(sharegpt=True, content_key="text"), [Change("sharegpt", False)])
    assert (kept.role_key, kept.content_key) == ("role", "text")


def test_the_flags_given_are_tried_first_and_na_pass_never():
    names = [(c.name, c.value) for c in flag_changes(ChatFormat(sharegpt=True))]
    assert names[0] == ("sharegpt", False)
    assert ("tools", True) in names and ("alternate", False) in names and ("allow_empty", True) in names
    assert "na_pass" not in {name for name, _ in names}


def test_key_values_come_from_the_failing_values():
    v1 = (CORPUS / "llamafactory/v1_sft_demo.jsonl").read_text().splitlines()[:3]
    assert [(c.name, c.value) for c in key_changes(ChatFormat(), v1, counted=())] == [("text_key", "value")]
    speaker = [json.dumps([{"speaker": "user", "utterance": "Hi"}, {"speaker": "assistant", "utterance": "Yo"}])]
    found = {(c.name, c.value) for c in key_changes(ChatFormat(), speaker, counted=())}
    assert {("role_key", "speaker"), ("content_key", "utterance")} <= found
    # A role map given is kept in the one suggested (--role-map replaces it).
    tags = [json.dumps([{"role": "human", "content": "Hi"}, {"role": "bot", "content": "Yo"}])]
    given = ChatFormat(role_map={"human": "user"})
    assert [c.value for c in key_changes(given, tags, counted=())] == [{"human": "user", "bot": "assistant"}]
    # The image token only when the step counts the row's images.
    token = [json.dumps([{"role": "user", "content": "<image>What is it?"}])]
    assert key_changes(ChatFormat(), token, counted=()) == []
    assert [c.flag for c in key_changes(ChatFormat(), token, counted=["image_token"])] == ["--image-token '<image>'"]


def test_tool_calls_with_empty_content_get_tools_not_allow_empty():
    # axolotl's rows: assistant content '' beside tool_calls. Both flags make them pass; --tools reads them.
    rows = [json.loads(line) for line in (CORPUS / "axolotl/ds_schema_unification_messages_w_tools.jsonl").read_text().splitlines()]
    table = pa.table({"messages": [json.dumps(r["messages"]) for r in rows], "tools": [json.dumps(r["tools"]) for r in rows]})
    assert _chosen(ChatCheck("messages"), table) == (["--tools"], 3, 3, ())
    # With --sharegpt given, and the tools column judged with them: without it, with --tools.
    assert _chosen(ChatCheck("messages", ChatFormat(sharegpt=True)), table) == (["--no-sharegpt", "--tools"], 3, 3, ())
    assert _chosen(ChatCheck("messages", ChatFormat(sharegpt=True, tools=True), tools_column="tools"), table) == (
        ["--no-sharegpt"], 3, 3, ()
    )


def test_rows_judged_with_their_images_column_keep_failing_under_any_flag():
    # The old hint judged the chat column alone, where these rows pass under anything.
    rows = json.loads((CORPUS / "llamafactory/mllm_demo.json").read_text())
    table = pa.table({
        "messages": [json.dumps(r["messages"]) for r in rows],
        "images": [[*r["images"], "extra.jpg"] for r in rows],
    })
    assert _chosen(ChatCheck("messages", ChatFormat(image_token="<image>"), images_column="images"), table) is None


def test_a_reading_option_that_fits_wins_over_a_relaxing_one_that_fits_more():
    # 17 LLaMA-Factory v1 rows and 3 with a genuinely empty answer: --allow-empty passes all 20,
    # --text-key value reads 17 of them, which is enough.
    v1 = (CORPUS / "llamafactory/v1_sft_demo.jsonl").read_text().splitlines()[:17]
    empty = json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "value": "hi"}]},
                                     {"role": "assistant", "content": [{"type": "text", "value": " "}]}]})
    assert _chosen(ChatCheck("messages"), pa.table({"messages": v1 + [empty] * 3})) == (["--text-key value"], 17, 20, ())
    # Too few read: the relaxing option, named as such.
    mostly_empty = v1[:3] + [empty] * 17
    assert _chosen(ChatCheck("messages"), pa.table({"messages": mostly_empty})) == (
        ["--allow-empty"], 20, 20, ("empty_content",)
    )


def test_no_option_when_none_makes_enough_values_pass():
    # LLaMA-Factory's reasoning and tool-call parts (tool turns whose calls are parts, which no option
    # reads): --text-key value reads 3 of 6, not enough.
    rows = (CORPUS / "llamafactory/reason_tool_use_demo_50.jsonl").read_text().splitlines()
    values = [json.dumps(json.loads(line)["messages"]) for line in rows]
    assert _chosen(ChatCheck("messages"), pa.table({"messages": values})) is None


def test_values_too_large_to_read_are_not_read_and_get_no_option():
    v1 = (CORPUS / "llamafactory/v1_sft_demo.jsonl").read_text().splitlines()
    assert _chosen(ChatCheck("messages", ChatFormat(max_value_bytes=10)), pa.table({"messages": v1})) is None


def test_audio_rows_get_the_audio_token_when_the_step_counts_their_audios():
    # LLaMA-Factory's audio rows: `<audio>` in the text, one path per audio in `audios`.
    messages = [json.dumps([{"role": "user", "content": "<audio>What's that sound?"},
                            {"role": "assistant", "content": "It is a dog barking."}])] * 4
    table = pa.table({"messages": messages, "audios": [["dog.wav"]] * 4})
    assert _chosen(ChatCheck("messages", ChatFormat(audios_column="audios")), table) == (
        ["--audio-token '<audio>'"], 4, 4, ()
    )
    assert key_changes(ChatFormat(), messages, counted=()) == []
