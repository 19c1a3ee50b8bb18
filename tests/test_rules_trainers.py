"""The trainers' row rules and profiles: labelled examples, passing and failing.

Each option (`min_messages`, `require_roles`, `content_types`, `weight_key`,
`allowed_keys`, `role_map`, `legacy_functions`) on its own, then each trainer
profile rule by rule (the README's "Profiles" table), each example run in JSON
text and native Arrow forms through the per-row reference and the batch path
(`assert_example`). The trainers' own example files are in tests/data/trainers/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from chatgate.rules import (
    DATASET_TYPES,
    ChatFormat,
    check_batch,
    dataset_checks,
    first_problem,
    format_codes,
    format_from,
    phrase,
)
from chatgate.rules.trainers.profiles import TRAINER_PROFILES

try:
    from rule_examples import A, S, U, assert_example, call, examples, msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A, S, U, assert_example, call, examples, msg

LM, PO, PC = DATASET_TYPES[:3]
DATA = Path(__file__).parent / "data" / "trainers"


def chat(*messages):
    return {"messages": list(messages)}


def weighted(weight, role="assistant"):
    return msg(role, "It is blue.", weight=weight)


FUNCTION_CALL = msg("assistant", None, function_call={"name": "get_weather", "arguments": '{"city": "Paris"}'})
FUNCTION_ANSWER = msg("function", "Sunny.", name="get_weather")
TOOL_CALL = msg("assistant", None, tool_calls=[call("get_weather", {"city": "Paris"}, id="c1")])
TOOL_ANSWER = msg("tool", "Sunny.", tool_call_id="c1")
PARTS = [{"type": "text", "text": "What is in this image?"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]

MIN2 = {"min_messages": 2}
NEED_A = {"require_roles": ["assistant"]}
TEXT = {"content_types": "text"}
TEXT_OR_PARTS = {"content_types": "text_or_parts"}
WEIGHT = {"weight_key": "weight"}
KEYS = {"allowed_keys": ["name", "weight"]}
ALIASES = {"role_map": {"human": "user", "gpt": "assistant", "bot": "assistant"}}
LEGACY = {"legacy_functions": True}

OPTION_EXAMPLES = examples(
    # min_messages
    ("min-two-of-two", chat(U, A), LM, MIN2, None),
    ("min-two-of-one", chat(U), LM, MIN2, "too_few_messages"),
    ("min-none-is-no-messages", chat(), LM, MIN2, "no_messages"),
    ("min-before-bad-message", chat("x"), LM, MIN2, "too_few_messages", "json"),
    ("min-prompt-alone-not-counted", {"prompt": [U]}, PO, MIN2, None),
    ("min-counts-prompt-and-completion", {"prompt": [U], "completion": [A]}, PC, MIN2, None),
    # require_roles
    ("require-present", chat(S, U, A), LM, NEED_A, None),
    ("require-absent", chat(S, U), LM, NEED_A, "missing_role"),
    ("require-before-alternation", chat(U, U), LM, NEED_A, "missing_role"),
    ("require-found-in-completion", {"prompt": [U], "completion": [A]}, PC, NEED_A, None),
    ("require-two-roles", chat(U, A), LM, {"require_roles": ["user", "system"]}, "missing_role"),
    # content_types
    ("text-number-content", chat(msg("user", 123), msg("assistant", 4)), LM, TEXT, "bad_content_type"),
    ("text-number-content-default", chat(msg("user", 123), msg("assistant", 4)), LM, {}, None),
    ("text-parts-refused", chat(msg("user", PARTS), msg("assistant", [{"type": "text", "text": "A cat."}])), LM, TEXT, "bad_content_type"),
    ("parts-allowed", chat(msg("user", PARTS), msg("assistant", [{"type": "text", "text": "A cat."}])), LM, TEXT_OR_PARTS, None),
    ("parts-object-content", chat(msg("user", {"text": "Hi"}), A), LM, TEXT_OR_PARTS, "bad_content_type"),
    ("parts-list-of-strings", chat(msg("user", ["Hi"]), A), LM, TEXT_OR_PARTS, "bad_content_type"),
    ("parts-without-type", chat(msg("user", [{"text": "Hi"}]), A), LM, TEXT_OR_PARTS, "bad_content_type"),
    ("parts-number-content", chat(msg("user", 5), A), LM, TEXT_OR_PARTS, "bad_content_type", "json"),
    ("null-content-is-empty-content", chat(U, msg("assistant", None)), LM, TEXT, "empty_content"),
    ("null-content-allowed-empty", chat(U, msg("assistant", None)), LM, {**TEXT, "allow_empty": True}, None),
    # weight_key
    ("weight-one", chat(U, weighted(1)), LM, WEIGHT, None),
    ("weight-zero-on-user", chat(weighted(0, "user"), A), LM, WEIGHT, None),
    ("weight-null-is-absent", chat(U, weighted(None)), LM, WEIGHT, None),
    ("weight-two", chat(U, weighted(2)), LM, WEIGHT, "bad_weight"),
    ("weight-true", chat(U, weighted(True)), LM, WEIGHT, "bad_weight"),
    ("weight-float-one", chat(U, weighted(1.0)), LM, WEIGHT, "bad_weight"),
    ("weight-text", chat(U, weighted("1")), LM, WEIGHT, "bad_weight"),
    ("weight-unchecked-by-default", chat(U, weighted(2)), LM, {}, None),
    ("weight-other-key", chat(U, msg("assistant", "x", loss=5)), LM, {"weight_key": "loss"}, "bad_weight"),
    # allowed_keys
    ("keys-allowed", chat(msg("user", "Hi", name="ann"), weighted(1)), LM, KEYS, None),
    ("keys-unknown", chat(msg("user", "Hi", foo=1), A), LM, KEYS, "unknown_key"),
    ("keys-null-is-absent", chat(msg("user", "Hi", foo=None), A), LM, KEYS, None),
    ("keys-none-allowed", chat(msg("user", "Hi", name="ann"), A), LM, {"allowed_keys": []}, "unknown_key"),
    ("keys-before-content-type", chat(msg("user", 5, foo=1), A), LM, {**KEYS, **TEXT}, "unknown_key"),
    ("keys-sharegpt-own-keys", {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}]}, LM, {"sharegpt": True, "allowed_keys": []}, None, "json"),
    # role_map
    ("alias-human-gpt", chat(msg("human", "Hi"), msg("gpt", "Yo")), LM, ALIASES, None),
    ("alias-bot", chat(U, msg("bot", "Yo")), LM, ALIASES, None),
    ("alias-unmapped", chat(U, msg("model", "Yo")), LM, ALIASES, "unknown_role"),
    ("alias-before-alternation", chat(msg("human", "Hi"), U), LM, ALIASES, "not_alternating"),
    ("alias-before-require", chat(U, msg("gpt", "Yo")), LM, {**ALIASES, **NEED_A}, None),
    ("alias-over-sharegpt", {"conversations": [{"from": "human", "value": "Hi"}, {"from": "bot", "value": "Yo"}]}, LM, {"sharegpt": True, **ALIASES}, None, "json"),
    # legacy_functions
    ("legacy-call-and-answer", chat(U, FUNCTION_CALL, FUNCTION_ANSWER, msg("assistant", "Sunny in Paris.")), LM, LEGACY, None),
    ("legacy-off-null-content", chat(U, FUNCTION_CALL), LM, {}, "empty_content"),
    ("legacy-off-function-role", chat(U, A, FUNCTION_ANSWER), LM, {"alternate": False}, "unknown_role"),
    ("legacy-empty-content-with-call", chat(U, msg("assistant", "", function_call={"name": "f", "arguments": "{}"})), LM, LEGACY, None),
    ("legacy-call-not-a-mapping", chat(U, msg("assistant", "x", function_call="f()")), LM, LEGACY, "bad_function_call", "json"),
    ("legacy-call-without-name", chat(U, msg("assistant", "x", function_call={"arguments": "{}"})), LM, LEGACY, "bad_function_call"),
    ("legacy-call-on-user", chat(msg("user", "x", function_call={"name": "f"}), A), LM, LEGACY, "bad_function_call"),
    ("legacy-empty-without-call", chat(U, msg("assistant", "")), LM, LEGACY, "empty_content"),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", OPTION_EXAMPLES)
def test_option_example(row, kind, options, expected, forms):
    assert assert_example(row, kind, options, expected, forms)


# --- The profiles, rule by rule (the README's table) ----------------------------------------

OPENAI = {"profile": "openai"}
TOGETHER = {"profile": "together"}
TORCHTUNE = {"profile": "torchtune"}

PROFILE_EXAMPLES = examples(
    # openai: OpenAI's API schema (FineTuneChatRequestInput) and fine-tuning guide
    ("openai-plain", chat(S, U, A), LM, OPENAI, None),
    ("openai-needs-assistant", chat(S, U), LM, OPENAI, "missing_role"),
    ("openai-ends-on-user", chat(U, A, U), LM, OPENAI, None),
    ("openai-no-alternation", chat(U, U, A), LM, OPENAI, None),
    ("openai-assistant-only", chat(S, A), LM, OPENAI, None),
    ("openai-unknown-key", chat(msg("user", "Hi", foo=1), A), LM, OPENAI, "unknown_key"),
    ("openai-known-keys", chat(msg("user", "Hi", name="ann"), msg("assistant", "Yo", weight=0)), LM, OPENAI, None),
    ("openai-weight-two", chat(U, weighted(2)), LM, OPENAI, "bad_weight"),
    ("openai-weight-true", chat(U, weighted(True)), LM, OPENAI, "bad_weight"),
    ("openai-content-number", chat(msg("user", 123), A), LM, OPENAI, "bad_content_type", "json"),
    ("openai-image-parts", chat(msg("user", PARTS), msg("assistant", [{"type": "text", "text": "A cat."}])), LM, OPENAI, None),
    ("openai-empty-content", chat(msg("user", ""), A), LM, OPENAI, "empty_content"),
    ("openai-tool-calls-null-content", chat(U, TOOL_CALL, TOOL_ANSWER, A), LM, OPENAI, None),
    ("openai-tool-without-call", chat(U, A, TOOL_ANSWER), LM, OPENAI, "orphan_tool"),
    ("openai-function-call", chat(U, FUNCTION_CALL, FUNCTION_ANSWER, A), LM, OPENAI, None),
    ("openai-developer-role", chat(msg("developer", "Be brief."), U, A), LM, OPENAI, "unknown_role"),
    ("openai-system-not-first", chat(U, S, A), LM, OPENAI, "system_position"),
    # together: Together's SDK 2.14.0 check_file
    ("together-plain", chat(S, U, A), LM, TOGETHER, None),
    ("together-two-users", chat(U, U, A), LM, TOGETHER, None),
    ("together-assistant-first", chat(A, U, A), LM, TOGETHER, None),
    ("together-empty-content", chat(msg("user", ""), msg("assistant", "")), LM, TOGETHER, None),
    ("together-null-content", chat(msg("user", None), A), LM, TOGETHER, None),
    ("together-tool-turns", chat(U, TOOL_CALL, TOOL_ANSWER, A), LM, TOGETHER, None),
    ("together-only-tool-calls", chat(U, msg("assistant", ..., tool_calls=[call("f")])), LM, TOGETHER, None),
    ("together-unknown-key-passes", chat(msg("user", "Hi", foo=1), A), LM, TOGETHER, None),
    ("together-needs-assistant", chat(S, U), LM, TOGETHER, "missing_role"),
    ("together-weight-float", chat(U, weighted(1.0)), LM, TOGETHER, "bad_weight"),
    ("together-weight-two", chat(U, weighted(2)), LM, TOGETHER, "bad_weight"),
    ("together-weight-on-user", chat(weighted(1, "user"), A), LM, TOGETHER, None),
    ("together-content-number", chat(msg("user", 5), A), LM, TOGETHER, "bad_content_type", "json"),
    ("together-developer-role", chat(msg("developer", "x"), U, A), LM, TOGETHER, "unknown_role"),
    ("together-function-role", chat(U, A, FUNCTION_ANSWER), LM, TOGETHER, "unknown_role"),
    # torchtune: torchtune 0.6.1 validate_messages and Message
    ("torchtune-plain", chat(S, U, A), LM, TORCHTUNE, None),
    ("torchtune-one-message", chat(U), LM, TORCHTUNE, "too_few_messages"),
    ("torchtune-two-systems", chat(S, S, U, A), LM, TORCHTUNE, "system_position"),
    ("torchtune-two-users", chat(U, U, A), LM, TORCHTUNE, "not_alternating"),
    ("torchtune-assistant-after-system", chat(S, A), LM, TORCHTUNE, "first_role"),
    ("torchtune-two-assistants", chat(U, A, A), LM, TORCHTUNE, "not_alternating"),
    ("torchtune-no-assistant-needed", chat(S, U), LM, TORCHTUNE, None),
    ("torchtune-ends-on-user", chat(U, A, U), LM, TORCHTUNE, None),
    ("torchtune-empty-content", chat(U, msg("assistant", "")), LM, TORCHTUNE, None),
    ("torchtune-content-number", chat(U, msg("assistant", 5)), LM, TORCHTUNE, "bad_content_type", "json"),
    ("torchtune-tool-role", chat(U, A, TOOL_ANSWER), LM, TORCHTUNE, "unknown_role"),
    # a profile is defaults: explicit options override it
    ("override-min-messages", chat(U, A), LM, {**TORCHTUNE, "min_messages": 3}, "too_few_messages"),
    ("override-alternate", chat(U, U, A), LM, {**TORCHTUNE, "alternate": False}, None),
    ("override-require", chat(S, U), LM, {**OPENAI, "require_roles": []}, None),
    ("override-keys", chat(msg("user", "Hi", foo=1), A), LM, {**OPENAI, "allowed_keys": None}, None),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", PROFILE_EXAMPLES)
def test_profile_example(row, kind, options, expected, forms):
    assert assert_example(row, kind, options, expected, forms)


def test_openai_cookbook_toy_file_passes_openai_and_together():
    """The cookbook's own checker finds no errors in it (rows 1-4; see tests/data/trainers/README.md)."""
    lines = (DATA / "openai_toy_chat_fine_tuning.jsonl").read_text().splitlines()
    assert len(lines) == 4
    for profile in ("openai", "together"):
        assert check_batch(pa.array(lines), profile=profile).null_count == 4
        assert [first_problem(line, profile=profile) for line in lines] == [None] * 4
    # torchtune 0.6.1 refuses row 4 (system, assistant): an assistant message must follow a user one.
    assert [first_problem(line, profile="torchtune") for line in lines] == [None, None, None, "first_role"]


def test_torchtune_chat_tiny_passes_torchtune_with_sharegpt():
    """torchtune's own ShareGPT test conversation, read with its role map."""
    (row,) = json.loads((DATA / "torchtune_chat_tiny.json").read_text())
    options = {"profile": "torchtune", "sharegpt": True, "role_map": {"human": "user", "gpt": "assistant"}}
    assert first_problem(row, **options) is None
    assert check_batch(pa.array([json.dumps(row)]), **options).to_pylist() == [None]
    broken = {"conversations": row["conversations"][:1]}
    assert first_problem(broken, **options) == "too_few_messages"


@pytest.mark.parametrize("profile", sorted(TRAINER_PROFILES))
def test_a_profile_is_defaults_that_options_override(profile):
    fmt = format_from(profile=profile)
    assert fmt.profile == profile
    for key, value in TRAINER_PROFILES[profile].items():
        got = getattr(fmt, key)
        assert got == value or (key == "roles" and set(value) <= set(got)), key
    assert format_from(profile=profile, content_types="any").content_types == "any"
    assert not fmt.is_core  # the trainers' rules read more than the core's role and content


@pytest.mark.parametrize(
    "code, one",
    [
        ("too_few_messages", "has too few messages"),
        ("unknown_key", "has a message key that isn't allowed"),
        ("bad_content_type", "has a content of a kind that isn't allowed"),
        ("bad_weight", "has a weight that isn't 0 or 1"),
        ("bad_function_call", "has a malformed function call"),
        ("missing_role", "lacks a required role"),
    ],
)
def test_a_new_code_has_its_note(code, one):
    assert phrase(code, 1) == f"1 {one} (`{code}`)"


def test_the_codes_a_format_can_give():
    fmt = ChatFormat(min_messages=2, require_roles=["assistant"], content_types="text", weight_key="w",
                     allowed_keys=[], legacy_functions=True)
    assert format_codes(fmt) == (
        "too_large", "not_messages", "no_messages", "too_few_messages", "bad_message", "unknown_key", "bad_content_type",
        "bad_weight", "bad_function_call", "unknown_role", "system_position", "missing_role",
        "not_alternating", "empty_content",
    )
    (prompt_only,) = dataset_checks("prompt_only", ["prompt"], chat=fmt)
    assert not {"too_few_messages", "missing_role"} & set(prompt_only.codes)


def test_the_options_are_checked():
    for bad, error in (
        ({"min_messages": 0}, ValueError),
        ({"min_messages": True}, ValueError),
        ({"require_roles": "assistant"}, TypeError),
        ({"require_roles": ["robot"]}, ValueError),
        ({"content_types": "json"}, ValueError),
        ({"weight_key": ""}, ValueError),
        ({"allowed_keys": "name"}, TypeError),
        ({"role_map": ["human"]}, TypeError),
        ({"role_map": {"human": 1}}, TypeError),
        ({"legacy_functions": "yes"}, TypeError),
    ):
        with pytest.raises(error):
            ChatFormat(**bad)


def test_a_role_map_keeps_the_format_hashable_and_picklable():
    import pickle

    fmt = ChatFormat(role_map={"human": "user"})
    assert hash(fmt) == hash(ChatFormat(role_map={"human": "user"}))
    assert pickle.loads(pickle.dumps(fmt)) == fmt
    assert fmt.as_dict()["role_map"] == {"human": "user"}
    with pytest.raises(TypeError):
        fmt.role_map["gpt"] = "assistant"
