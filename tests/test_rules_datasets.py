"""TRL dataset types, ShareGPT, Harmony, vision and the sample profile.

Labelled examples, one list per dataset type and per rule, passing and failing,
each run in JSON text and native forms through the per-row reference and the
RowCheck batch path (`rule_examples.assert_example`), which must agree.
Tool calling has its own file, tests/test_rules_tools.py.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from chatgate.rules import (
    ALL_REASONS,
    DATASET_TYPES,
    EXTENDED_REASONS,
    REASONS,
    SHAREGPT_ROLES,
    ChatCheck,
    ChatFormat,
    DatasetCheck,
    LabelCheck,
    RowCheck,
    check_array,
    dataset_checks,
    detect_dataset_type,
    first_problem,
    first_reason,
    first_row_problem,
    format_counts,
    majority_format,
    phrase,
    reason_rank,
    sample_profile,
    value_format,
)

try:
    from rule_examples import A2, A, S, U, assert_example, examples, msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A2, A, S, U, assert_example, examples, msg

LM, PO, PC, PREF, IMPL, UNP = DATASET_TYPES[:6]  # TRL's; openai_preference has its own tests

# --- Language modeling: `text` (standard) or `messages` (conversational) -------------

LANGUAGE_MODELING = examples(
    ("messages", {"messages": [U, A]}, LM, {}, None),
    ("messages-with-system", {"messages": [S, U, A]}, LM, {}, None),
    ("messages-ending-with-user-by-default", {"messages": [U]}, LM, {}, None),
    ("messages-last-role", {"messages": [U]}, LM, {"last_role": "assistant"}, "last_role"),
    ("messages-not-alternating", {"messages": [U, U, A]}, LM, {}, "not_alternating"),
    ("messages-empty-list", {"messages": []}, LM, {}, "no_messages"),
    ("messages-bad-json", {"messages": '[{"role": "user"'}, LM, {}, "not_messages"),
    ("messages-plain-text", {"messages": "The sky is blue."}, LM, {}, "not_messages"),
    ("messages-null", {"messages": None}, LM, {}, "not_messages", "json"),
    ("messages-null-na_pass", {"messages": None}, LM, {"na_pass": True}, None, "json"),
    ("messages-extra-columns-ignored", {"messages": [U, A], "id": 7, "source": "x"}, LM, {}, None),
    ("text", {"text": "The sky is blue."}, LM, {}, None),
    ("text-detected", {"text": "The sky is blue.", "id": 1}, None, {}, None),
    ("text-leading-space", {"text": " blue."}, LM, {}, None),
    ("text-that-looks-like-json-is-text", {"text": "[INST] hi [/INST]"}, LM, {}, None),
    ("text-empty", {"text": ""}, LM, {}, "empty_text"),
    ("text-blank", {"text": " \n\t"}, LM, {}, "empty_text"),
    ("text-null", {"text": None}, LM, {}, "not_text", "json"),
    ("text-null-na_pass", {"text": None}, LM, {"na_pass": True}, None, "json"),
    ("text-number", {"text": 42}, LM, {}, "not_text"),
    ("text-holding-a-conversation", {"text": [U, A]}, LM, {}, "mixed_format", "native"),
    ("messages-detected", {"messages": [U, A], "label": True}, LM, {}, None),
)

# --- Prompt-only --------------------------------------------------------------------

PROMPT_ONLY = examples(
    ("standard", {"prompt": "The sky is"}, PO, {}, None),
    ("standard-detected", {"prompt": "The sky is"}, None, {}, None),
    ("standard-llama-tags", {"prompt": "[INST] The sky is [/INST]"}, PO, {}, None),
    ("standard-empty", {"prompt": ""}, PO, {}, "empty_text"),
    ("standard-blank", {"prompt": "  "}, PO, {}, "empty_text"),
    ("conversational", {"prompt": [U]}, PO, {}, None),
    ("conversational-system", {"prompt": [S, U]}, PO, {}, None),
    ("conversational-multi-turn", {"prompt": [U, A, msg("user", "And at night?")]}, PO, {}, None),
    ("ends-with-assistant", {"prompt": [U, A]}, PO, {}, "prompt_end"),
    ("lone-system", {"prompt": [S]}, PO, {}, "prompt_end"),
    ("last_role-not-applied-to-a-prompt", {"prompt": [U]}, PO, {"last_role": "assistant"}, None),
    ("first_role-applies", {"prompt": [A, U]}, PO, {"first_role": "user"}, "first_role"),
    ("not-alternating", {"prompt": [U, U]}, PO, {}, "not_alternating"),
    ("empty-content", {"prompt": [msg("user", "")]}, PO, {}, "empty_content"),
    ("unknown-role-before-prompt_end", {"prompt": [U, msg("bot")]}, PO, {}, "unknown_role"),
    ("empty-list", {"prompt": []}, PO, {}, "no_messages"),
    ("null", {"prompt": None}, PO, {}, "not_messages", "json"),
    ("null-na_pass", {"prompt": None}, PO, {"na_pass": True}, None, "json"),
    ("number", {"prompt": 3}, PO, {}, "not_messages"),
    (
        "pinned-standard-refuses-a-conversation",
        {"prompt": [U]},
        PO,
        {"format": "standard"},
        "mixed_format",
        "native",
    ),
    (
        "pinned-standard-takes-json-looking-text",
        {"prompt": '[{"a": 1}]'},
        PO,
        {"format": "standard"},
        None,
    ),
    (
        "pinned-conversational-refuses-text",
        {"prompt": "The sky is"},
        PO,
        {"format": "conversational"},
        "mixed_format",
    ),
    (
        "pinned-conversational-bad-json",
        {"prompt": '[{"role": "user"'},
        PO,
        {"format": "conversational"},
        "not_messages",
    ),
    ("auto-bad-json-is-text", {"prompt": '[{"role": "user"'}, PO, {}, None),
)

# --- Prompt-completion ----------------------------------------------------------------

PROMPT_COMPLETION = examples(
    ("standard", {"prompt": "The sky is", "completion": " blue."}, PC, {}, None),
    (
        "standard-detected",
        {"prompt": "The sky is", "completion": " blue.", "id": 3},
        None,
        {},
        None,
    ),
    ("standard-empty-completion", {"prompt": "The sky is", "completion": ""}, PC, {}, "empty_text"),
    (
        "standard-null-completion",
        {"prompt": "The sky is", "completion": None},
        PC,
        {},
        "not_text",
        "json",
    ),
    (
        "standard-null-na_pass",
        {"prompt": "The sky is", "completion": None},
        PC,
        {"na_pass": True},
        None,
        "json",
    ),
    ("conversational", {"prompt": [U], "completion": [A]}, PC, {}, None),
    (
        "conversational-last_role",
        {"prompt": [U], "completion": [A]},
        PC,
        {"last_role": "assistant"},
        None,
    ),
    (
        "conversational-multi-turn-prompt",
        {"prompt": [S, U, A, U], "completion": [A2]},
        PC,
        {},
        None,
    ),
    (
        "completion-holds-user",
        {"prompt": [U], "completion": [msg("user", "?")]},
        PC,
        {},
        "completion_role",
    ),
    (
        "completion-assistant-then-user",
        {"prompt": [U], "completion": [A, U]},
        PC,
        {},
        "completion_role",
    ),
    (
        "completion-not-alternating",
        {"prompt": [U], "completion": [A, A2]},
        PC,
        {},
        "not_alternating",
    ),
    (
        "completion-repeats-without-alternation",
        {"prompt": [U], "completion": [A, A2]},
        PC,
        {"alternate": False},
        None,
    ),
    (
        "completion-system-is-misplaced",
        {"prompt": [U], "completion": [S]},
        PC,
        {},
        "system_position",
    ),
    (
        "completion-empty-content",
        {"prompt": [U], "completion": [msg("assistant", " ")]},
        PC,
        {},
        "empty_content",
    ),
    ("completion-bot", {"prompt": [U], "completion": [msg("bot")]}, PC, {}, "unknown_role"),
    ("completion-empty-list", {"prompt": [U], "completion": []}, PC, {}, "no_messages"),
    ("prompt-ends-with-assistant", {"prompt": [U, A], "completion": [A2]}, PC, {}, "prompt_end"),
    ("prompt-null", {"prompt": None, "completion": [A]}, PC, {}, "not_messages", "json"),
    (
        "prompt-null-na_pass",
        {"prompt": None, "completion": [A]},
        PC,
        {"na_pass": True},
        None,
        "json",
    ),
    (
        "prompt-null-na_pass-completion-still-checked",
        {"prompt": None, "completion": [U]},
        PC,
        {"na_pass": True},
        "completion_role",
        "json",
    ),
    ("mixed-standard-prompt", {"prompt": "The sky is", "completion": [A]}, PC, {}, "mixed_format"),
    ("mixed-standard-completion", {"prompt": [U], "completion": " blue."}, PC, {}, "mixed_format"),
    (
        "mixed-pinned",
        {"prompt": [U], "completion": " blue."},
        PC,
        {"format": "conversational"},
        "mixed_format",
    ),
    (
        "wrapped-messages-object",
        {"prompt": {"messages": [U]}, "completion": {"messages": [A]}},
        PC,
        {},
        None,
    ),
)

# --- Preference (explicit prompt) -----------------------------------------------------

PREFERENCE = examples(
    (
        "standard",
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."},
        PREF,
        {},
        None,
    ),
    (
        "standard-detected",
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."},
        None,
        {},
        None,
    ),
    (
        "standard-identical",
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " blue."},
        PREF,
        {},
        "same_pair",
    ),
    (
        "standard-empty-rejected",
        {"prompt": "The sky is", "chosen": " blue.", "rejected": ""},
        PREF,
        {},
        "empty_text",
    ),
    ("conversational", {"prompt": [U], "chosen": [A], "rejected": [A2]}, PREF, {}, None),
    (
        "conversational-identical",
        {"prompt": [U], "chosen": [A], "rejected": [A]},
        PREF,
        {},
        "same_pair",
    ),
    (
        "conversational-identical-but-null-keys",
        {"prompt": [U], "chosen": [A], "rejected": [{**A, "thinking": None}]},
        PREF,
        {},
        "same_pair",
    ),
    (
        "chosen-holds-user",
        {"prompt": [U], "chosen": [U], "rejected": [A2]},
        PREF,
        {},
        "completion_role",
    ),
    (
        "rejected-empty-content",
        {"prompt": [U], "chosen": [A], "rejected": [msg("assistant", "")]},
        PREF,
        {},
        "empty_content",
    ),
    (
        "prompt-ends-with-assistant",
        {"prompt": [U, A], "chosen": [A], "rejected": [A2]},
        PREF,
        {},
        "prompt_end",
    ),
    (
        "rejected-two-assistant-turns",
        {"prompt": [U], "chosen": [A], "rejected": [A, A2]},
        PREF,
        {},
        "not_alternating",
    ),
    ("mixed", {"prompt": [U], "chosen": " blue.", "rejected": [A2]}, PREF, {}, "mixed_format"),
    (
        "rejected-null",
        {"prompt": [U], "chosen": [A], "rejected": None},
        PREF,
        {},
        "not_messages",
        "json",
    ),
    (
        "sharegpt-llamafactory",
        {
            "conversations": [{"from": "human", "value": "Hi"}],
            "chosen": {"from": "gpt", "value": "Hello!"},
            "rejected": {"from": "gpt", "value": "Go away."},
        },
        PREF,
        {"sharegpt": True, "columns": {"prompt": "conversations"}},
        None,
    ),
    (
        "sharegpt-llamafactory-chosen-from-human",
        {
            "conversations": [{"from": "human", "value": "Hi"}],
            "chosen": {"from": "human", "value": "Hello!"},
            "rejected": {"from": "gpt", "value": "Go away."},
        },
        PREF,
        {"sharegpt": True, "columns": {"prompt": "conversations"}},
        "completion_role",
    ),
    (
        "single-message-object-without-sharegpt",
        {"prompt": [U], "chosen": A, "rejected": A2},
        PREF,
        {},
        "not_messages",
    ),
)

# --- Preference (implicit prompt) -----------------------------------------------------

IMPLICIT_PREFERENCE = examples(
    ("standard", {"chosen": "The sky is blue.", "rejected": "The sky is green."}, IMPL, {}, None),
    (
        "standard-detected",
        {"chosen": "The sky is blue.", "rejected": "The sky is green."},
        None,
        {},
        None,
    ),
    (
        "standard-identical",
        {"chosen": "The sky is blue.", "rejected": "The sky is blue."},
        IMPL,
        {},
        "same_pair",
    ),
    (
        "standard-no-shared-prefix",
        {"chosen": "Blue.", "rejected": "Green."},
        IMPL,
        {},
        "implicit_prompt",
    ),
    (
        "standard-one-doesnt-continue",
        {"chosen": "The sky", "rejected": "The sky is green."},
        IMPL,
        {},
        "implicit_prompt",
    ),
    ("standard-empty", {"chosen": "", "rejected": "The sky is green."}, IMPL, {}, "empty_text"),
    ("conversational", {"chosen": [U, A], "rejected": [U, A2]}, IMPL, {}, None),
    ("conversational-system", {"chosen": [S, U, A], "rejected": [S, U, A2]}, IMPL, {}, None),
    (
        "conversational-multi-turn",
        {"chosen": [U, A, msg("user", "Sure?"), A], "rejected": [U, A, msg("user", "Sure?"), A2]},
        IMPL,
        {},
        None,
    ),
    ("conversational-identical", {"chosen": [U, A], "rejected": [U, A]}, IMPL, {}, "same_pair"),
    (
        "conversational-no-shared-prefix",
        {"chosen": [U, A], "rejected": [msg("user", "Other?"), A]},
        IMPL,
        {},
        "implicit_prompt",
    ),
    (
        "conversational-chosen-doesnt-continue",
        {"chosen": [U, A], "rejected": [U, A, U, A2]},
        IMPL,
        {},
        "implicit_prompt",
    ),
    (
        "shared-prefix-ends-on-assistant",  # docs/datasets.md: "no shared prompt ending on a user turn"
        {"chosen": [U, A, msg("user", "Sure?"), A], "rejected": [U, A, msg("user", "Why?"), A2]},
        IMPL,
        {},
        "implicit_prompt",
    ),
    (
        "continuation-holds-a-user-turn",
        {"chosen": [U, A, msg("user", "Sure?"), A], "rejected": [U, A2]},
        IMPL,
        {},
        "completion_role",
    ),
    (
        "whole-not-alternating",
        {"chosen": [U, U, A], "rejected": [U, U, A2]},
        IMPL,
        {},
        "not_alternating",
    ),
    (
        "whole-empty-content",
        {"chosen": [U, msg("assistant", "")], "rejected": [U, A2]},
        IMPL,
        {},
        "empty_content",
    ),
    (
        "continuation-ends-on-user",
        {"chosen": [U, A, U], "rejected": [U, A2, U]},
        IMPL,
        {},
        "completion_role",
    ),
    (
        "last_role-passes",
        {"chosen": [U, A], "rejected": [U, A2]},
        IMPL,
        {"last_role": "assistant"},
        None,
    ),
    ("mixed", {"chosen": [U, A], "rejected": "The sky is green."}, IMPL, {}, "mixed_format"),
    ("both-null", {"chosen": None, "rejected": None}, IMPL, {}, "not_messages", "json"),
    (
        "both-null-na_pass",
        {"chosen": None, "rejected": None},
        IMPL,
        {"na_pass": True},
        None,
        "json",
    ),
)

# --- Unpaired preference --------------------------------------------------------------

UNPAIRED_PREFERENCE = examples(
    ("standard", {"prompt": "The sky is", "completion": " blue.", "label": True}, UNP, {}, None),
    (
        "standard-detected",
        {"prompt": "The sky is", "completion": " green.", "label": False},
        None,
        {},
        None,
    ),
    ("conversational", {"prompt": [U], "completion": [A], "label": False}, UNP, {}, None),
    ("label-null", {"prompt": [U], "completion": [A], "label": None}, UNP, {}, "not_label", "json"),
    (
        "label-null-na_pass",
        {"prompt": [U], "completion": [A], "label": None},
        UNP,
        {"na_pass": True},
        None,
        "json",
    ),
    ("label-string", {"prompt": [U], "completion": [A], "label": "true"}, UNP, {}, "not_label"),
    (
        "label-int",
        {"prompt": "The sky is", "completion": " blue.", "label": 1},
        UNP,
        {},
        "not_label",
    ),
    (
        "label-before-completion_role",
        {"prompt": [U], "completion": [U], "label": "yes"},
        UNP,
        {},
        "not_label",
    ),
    (
        "completion-holds-user",
        {"prompt": [U], "completion": [U], "label": True},
        UNP,
        {},
        "completion_role",
    ),
    (
        "standard-empty-prompt",
        {"prompt": "", "completion": " blue.", "label": True},
        UNP,
        {},
        "empty_text",
    ),
    ("mixed", {"prompt": "The sky is", "completion": [A], "label": True}, UNP, {}, "mixed_format"),
)

# --- Harmony: the developer role and the assistant's thinking -------------------------

THINKING = msg("assistant", "It is blue.", thinking="The user asks the color of the sky...")
DEV = msg("developer", "Use a friendly tone.")
HARMONY = {"harmony": True}

HARMONY_EXAMPLES = examples(
    ("trl-language-modeling", {"messages": [S, U, THINKING]}, LM, HARMONY, None),
    ("developer-first", {"messages": [DEV, U, THINKING]}, LM, HARMONY, None),
    ("system-then-developer", {"messages": [S, DEV, U, A]}, LM, HARMONY, None),
    (
        "developer-first-role-user",
        {"messages": [DEV, U, A]},
        LM,
        {**HARMONY, "first_role": "user"},
        None,
    ),
    ("developer-without-harmony", {"messages": [DEV, U, A]}, LM, {}, "unknown_role"),
    (
        "thinking-ignored-without-harmony",
        {"messages": [msg("user", "Hi", thinking=3), A]},
        LM,
        {},
        None,
    ),
    ("developer-after-a-turn", {"messages": [U, DEV, A]}, LM, HARMONY, "developer_position"),
    ("two-developers", {"messages": [DEV, DEV, U, A]}, LM, HARMONY, "developer_position"),
    ("developer-before-system", {"messages": [DEV, S, U, A]}, LM, HARMONY, "system_position"),
    (
        "thinking-on-user",
        {"messages": [msg("user", "Hi", thinking="hm"), A]},
        LM,
        HARMONY,
        "bad_thinking",
    ),
    (
        "thinking-not-text",
        {"messages": [U, msg("assistant", "Blue.", thinking=["a"])]},
        LM,
        HARMONY,
        "bad_thinking",
        "json",
    ),
    (
        "thinking-null",
        {"messages": [U, msg("assistant", "Blue.", thinking=None)]},
        LM,
        HARMONY,
        None,
    ),
    (
        "thinking-empty-string",
        {"messages": [U, msg("assistant", "Blue.", thinking="")]},
        LM,
        HARMONY,
        None,
    ),
    (
        "thinking-is-not-content",
        {"messages": [U, msg("assistant", "", thinking="hm")]},
        LM,
        HARMONY,
        "empty_content",
    ),
    (
        "reasoning_content-key",
        {"messages": [U, msg("assistant", "Blue.", reasoning_content="hm")]},
        LM,
        {"thinking_key": "reasoning_content"},
        None,
    ),
    (
        "reasoning_content-on-user",
        {"messages": [msg("user", "Hi", reasoning_content="hm"), A]},
        LM,
        {"thinking_key": "reasoning_content"},
        "bad_thinking",
    ),
    ("trl-prompt-completion", {"prompt": [S, U], "completion": [THINKING]}, PC, HARMONY, None),
    (
        "trl-implicit-preference",
        {
            "chosen": [S, U, THINKING],
            "rejected": [S, U, msg("assistant", "Green.", thinking="tree")],
        },
        IMPL,
        HARMONY,
        None,
    ),
    (
        "developer-in-completion",
        {"prompt": [U], "completion": [DEV]},
        PC,
        HARMONY,
        "developer_position",
    ),
)

# --- ShareGPT: from/value and the role mapping -----------------------------------------


def sg(tag, value="x"):
    return {"from": tag, "value": value}


SHAREGPT = {"sharegpt": True}

SHAREGPT_EXAMPLES = examples(
    ("human-gpt", {"conversations": [sg("human"), sg("gpt")]}, LM, SHAREGPT, None),
    (
        "system-human-gpt",
        {"conversations": [sg("system"), sg("human"), sg("gpt")]},
        LM,
        SHAREGPT,
        None,
    ),
    (
        "trl-user-assistant-tags",
        {"conversations": [sg("user"), sg("assistant")]},
        LM,
        SHAREGPT,
        None,
    ),
    (
        "detected-as-language-modeling",
        {"conversations": [sg("human"), sg("gpt")], "id": "x"},
        None,
        SHAREGPT,
        None,
    ),
    (
        "wrapper-object",
        {"conversations": {"conversations": [sg("human"), sg("gpt")]}},
        LM,
        SHAREGPT,
        None,
    ),
    ("without-the-option", {"conversations": [sg("human"), sg("gpt")]}, LM, {}, "bad_message"),
    (
        "keys-without-the-mapping",
        {"conversations": [sg("human"), sg("gpt")]},
        LM,
        {"role_key": "from", "content_key": "value"},
        "unknown_role",
    ),
    ("unmapped-tag", {"conversations": [sg("human"), sg("bot")]}, LM, SHAREGPT, "unknown_role"),
    ("human-human", {"conversations": [sg("human"), sg("human")]}, LM, SHAREGPT, "not_alternating"),
    (
        "empty-gpt-value",
        {"conversations": [sg("human"), sg("gpt", "")]},
        LM,
        SHAREGPT,
        "empty_content",
    ),
    (
        "last-role-mapped",
        {"conversations": [sg("human")]},
        LM,
        {**SHAREGPT, "last_role": "assistant"},
        "last_role",
    ),
    ("no-from", {"conversations": [{"value": "x"}]}, LM, SHAREGPT, "bad_message"),
    (
        "observation-needs-tools",
        {
            "conversations": [
                sg("human"),
                sg("function_call", '{"name": "f", "arguments": {}}'),
                sg("observation", "1"),
                sg("gpt"),
            ]
        },
        LM,
        SHAREGPT,
        "unknown_role",
    ),
    (
        "trl-prompt-completion",
        {"prompt": [sg("user")], "completion": [sg("assistant")]},
        PC,
        SHAREGPT,
        None,
    ),
    (
        "prompt-completion-gpt-in-prompt",
        {"prompt": [sg("human"), sg("gpt")], "completion": [sg("gpt")]},
        PC,
        SHAREGPT,
        "prompt_end",
    ),
)

# --- Vision: image parts and the images column ------------------------------------------

IMAGE = {"type": "image"}


def text(t):
    return {"type": "text", "text": t}


def vision_user(*parts):
    return msg("user", list(parts))


AV = msg("assistant", [text("It is blue.")])
AV2 = msg("assistant", [text("It is green.")])


VISION_EXAMPLES = examples(
    (
        "one-image",
        {"messages": [vision_user(IMAGE, text("What is it?")), AV], "images": ["a.png"]},
        LM,
        {},
        None,
    ),
    (
        "two-images-two-turns",
        {
            "messages": [vision_user(IMAGE, text("And?")), AV, vision_user(IMAGE), AV2],
            "images": ["a.png", "b.png"],
        },
        LM,
        {},
        None,
    ),
    ("no-images", {"messages": [vision_user(text("Hi")), AV], "images": []}, LM, {}, None),
    ("null-images-no-parts", {"messages": [U, A], "images": None}, LM, {}, None, "json"),
    (
        "missing-image",
        {"messages": [vision_user(IMAGE, text("?")), AV], "images": []},
        LM,
        {},
        "image_count",
    ),
    (
        "extra-image",
        {"messages": [vision_user(text("?")), AV], "images": ["a.png"]},
        LM,
        {},
        "image_count",
    ),
    (
        "images-not-a-list",
        {"messages": [vision_user(IMAGE), AV], "images": "a.png"},
        LM,
        {},
        "image_count",
    ),
    (
        "images-json-text",
        {"messages": [vision_user(IMAGE), AV], "images": '["a.png"]'},
        LM,
        {},
        None,
    ),
    (
        "image-url-parts-dont-count",
        {
            "messages": [vision_user({"type": "image_url", "image_url": {"url": "u"}}), AV],
            "images": [],
        },
        LM,
        {},
        None,
    ),
    ("no-images-column-no-count", {"messages": [vision_user(IMAGE, text("?")), AV]}, LM, {}, None),
    (
        "image-only-content-isnt-empty",
        {"messages": [vision_user(IMAGE), AV], "images": ["a"]},
        LM,
        {},
        None,
    ),
    ("empty-parts", {"messages": [vision_user(), AV], "images": []}, LM, {}, "empty_content"),
    (
        "blank-text-parts",
        {"messages": [vision_user(text(" ")), AV], "images": []},
        LM,
        {},
        "empty_content",
    ),
    (
        "image-token",
        {"messages": [msg("user", "<image>Who?"), A], "images": ["a.png"]},
        LM,
        {"image_token": "<image>"},
        None,
    ),
    (
        "image-token-not-set",
        {"messages": [msg("user", "<image>Who?"), A], "images": ["a.png"]},
        LM,
        {},
        "image_count",
    ),
    (
        "image-token-two",
        {"messages": [msg("user", "<image><image>Who?"), A], "images": ["a.png"]},
        LM,
        {"image_token": "<image>"},
        "image_count",
    ),
    (
        "text_key-value",
        {
            "messages": [
                msg("user", [{"type": "text", "value": "hi"}]),
                msg("assistant", [{"type": "text", "value": "yo"}]),
            ]
        },
        LM,
        {"text_key": "value"},
        None,
    ),
    (
        "text_key-value-not-set",
        {
            "messages": [
                msg("user", [{"type": "text", "value": "hi"}]),
                msg("assistant", [{"type": "text", "value": "yo"}]),
            ]
        },
        LM,
        {},
        "empty_content",
    ),
    (
        "trl-prompt-completion",
        {
            "prompt": [vision_user(IMAGE, text("What color?"))],
            "completion": [msg("assistant", [text("Blue.")])],
            "images": ["sky.png"],
        },
        PC,
        {},
        None,
    ),
    (
        "trl-text-only-row-in-a-vision-table",
        {
            "prompt": [vision_user(text("Capital of France?"))],
            "completion": [msg("assistant", [text("Paris.")])],
            "images": [],
        },
        PC,
        {},
        None,
    ),
    (
        "preference-each-pair-counts",
        {
            "prompt": [vision_user(IMAGE, text("?"))],
            "chosen": [A],
            "rejected": [A2],
            "images": ["a"],
        },
        PREF,
        {},
        None,
    ),
    (
        "preference-missing-image",
        {"prompt": [vision_user(IMAGE, text("?"))], "chosen": [A], "rejected": [A2], "images": []},
        PREF,
        {},
        "image_count",
    ),
)

# --- The sample profile ----------------------------------------------------------------

SAMPLE = {"chat": sample_profile()}
# The rules of the profile, with the core's defaults given explicitly over the profile's own.
SAMPLE_STRICT = {"profile": "sample", "alternate": True, "allow_empty": False}

PROFILE_EXAMPLES = examples(
    ("system-user-assistant", {"messages": [S, U, A]}, LM, SAMPLE, None),
    ("user-assistant", {"messages": [U, A]}, LM, SAMPLE, None),
    ("ends-on-user-let-through", {"messages": [U, A, U]}, LM, SAMPLE, None),
    ("two-users-let-through", {"messages": [U, U, A]}, LM, SAMPLE, None),
    ("empty-turn-let-through", {"messages": [U, msg("assistant", "")]}, LM, SAMPLE, None),
    (
        "extra-columns-untouched",
        {"messages": [U, A], "prompt_id": "a1b2", "source": "ultrachat"},
        LM,
        SAMPLE,
        None,
    ),
    ("no-assistant", {"messages": [U]}, LM, SAMPLE, "missing_turn"),
    ("no-user", {"messages": [S, A]}, LM, SAMPLE, "missing_turn"),
    ("lone-system", {"messages": [S]}, LM, SAMPLE, "missing_turn"),
    ("system-last", {"messages": [U, A, S]}, LM, SAMPLE, "system_position"),
    ("two-systems", {"messages": [S, S, U, A]}, LM, SAMPLE, "system_position"),
    ("tool-turn", {"messages": [U, msg("tool", "35"), A]}, LM, SAMPLE, "tool_turn"),
    ("function-turn", {"messages": [U, msg("function", "35"), A]}, LM, SAMPLE, "tool_turn"),
    (
        "assistant-tool-call",
        {
            "messages": [
                U,
                msg(
                    "assistant",
                    None,
                    tool_calls=[{"type": "function", "function": {"name": "f", "arguments": {}}}],
                ),
            ]
        },
        LM,
        SAMPLE,
        "tool_turn",
    ),
    (
        "assistant-null-tool-calls",
        {"messages": [U, msg("assistant", "Hi", tool_calls=None)]},
        LM,
        SAMPLE,
        None,
    ),
    ("bot", {"messages": [U, msg("bot")]}, LM, SAMPLE, "unknown_role"),
    ("tool-before-unknown-role", {"messages": [msg("bot"), msg("tool")]}, LM, SAMPLE, "tool_turn"),
    (
        "sharegpt-observation",
        {"conversations": [sg("human"), sg("function_call", "{}"), sg("observation"), sg("gpt")]},
        LM,
        {"profile": "sample", "sharegpt": True},
        "tool_turn",
    ),
    ("strict-two-users", {"messages": [U, U, A]}, LM, SAMPLE_STRICT, "not_alternating"),
    (
        "strict-empty-turn",
        {"messages": [U, msg("assistant", "")]},
        LM,
        SAMPLE_STRICT,
        "empty_content",
    ),
    (
        "strict-missing-before-first-role",
        {"messages": [A]},
        LM,
        {**SAMPLE_STRICT, "first_role": "user"},
        "missing_turn",
    ),
)

ALL = (
    LANGUAGE_MODELING
    + PROMPT_ONLY
    + PROMPT_COMPLETION
    + PREFERENCE
    + IMPLICIT_PREFERENCE
    + UNPAIRED_PREFERENCE
    + HARMONY_EXAMPLES
    + SHAREGPT_EXAMPLES
    + VISION_EXAMPLES
    + PROFILE_EXAMPLES
)


@pytest.mark.parametrize("row, kind, options, expected, forms", ALL)
def test_example(row, kind, options, expected, forms):
    assert_example(row, kind, options, expected, forms)


def test_examples_run_in_both_forms():
    """Most examples run natively too (Arrow can't hold every mix of value types)."""
    ran = {"json": 0, "native": 0}
    for param in ALL:
        for form in assert_example(*param.values):
            ran[form] += 1
    assert ran["json"] >= len(ALL) - 10
    assert ran["native"] >= len(ALL) * 0.8


def test_every_new_code_has_an_example():
    # tool codes are in tests/test_rules_tools.py
    tools = {"bad_tool_call", "bad_tools", "orphan_tool", "unknown_tool"}
    # the trainers' row rules are in tests/test_rules_trainers.py
    trainers = {"too_few_messages", "unknown_key", "bad_content_type", "bad_weight"}
    trainers |= {"bad_function_call", "missing_role"}
    trainers |= {"bad_image_url", "image_too_large", "image_role", "too_many_images"}
    # OpenAI's and Together's preference rows are in tests/test_rules_openai_preference.py
    trainers |= {"bad_input", "output_count"}
    # too_large (max_value_bytes=) is in tests/test_values_limits.py
    trainers |= {"too_large"}
    # the peers' rules (Mistral's, placeholders) are in tests/test_profile_mistral.py and tests/test_rules_peers.py
    trainers |= {"mistral_tool_call", "content_or_calls", "unanswered_call", "placeholder_content"}
    trainers |= {"audio_count", "video_count"}
    # token limits (max_tokens= with tokenizer=) are in tests/test_tokens.py
    trainers |= {"too_long"}
    codes = {param.values[3] for param in ALL}
    assert set(EXTENDED_REASONS) - tools - trainers <= codes
    assert set(REASONS) <= codes


@pytest.mark.parametrize(
    "kind, good",
    [
        (LM, {"messages": [U, A]}),
        (LM, {"text": "The sky is blue."}),
        (PO, {"prompt": [U]}),
        (PC, {"prompt": [U], "completion": [A]}),
        (PREF, {"prompt": [U], "chosen": [A], "rejected": [A2]}),
        (IMPL, {"chosen": [U, A], "rejected": [U, A2]}),
        (UNP, {"prompt": [U], "completion": [A], "label": True}),
    ],
)
def test_one_batch_of_many_rows(kind, good):
    """Failing rows among passing ones, in one JSON-text batch: each row gets its own code."""
    column = next(iter(good))
    bad = {**good, column: "" if column == "text" else "[]"}
    rows = [good, bad, good, {**good, column: None}]
    table = pa.Table.from_pylist(
        [{k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows]
    )
    codes = dataset_checks(kind, table.column_names)[0].check(table).to_pylist()
    missing = "not_text" if column == "text" else "not_messages"
    assert codes == [None, "empty_text" if column == "text" else "no_messages", None, missing]


# --- Detection and construction -----------------------------------------------------------


@pytest.mark.parametrize(
    "columns, expected",
    [
        (["text"], LM),
        (["messages"], LM),
        (["conversations", "id"], LM),
        (["prompt"], PO),
        (["prompt", "completion", "source"], PC),
        (["prompt", "chosen", "rejected"], PREF),
        (["chosen", "rejected", "score_chosen"], IMPL),
        (["prompt", "completion", "label"], UNP),
        (("label", "completion", "prompt"), UNP),
    ],
)
def test_detect_dataset_type(columns, expected):
    assert detect_dataset_type(columns) == expected


@pytest.mark.parametrize(
    "columns",
    [
        ["id"],
        [],
        ["text", "messages"],
        ["messages", "label"],
        ["conversations", "chosen", "rejected"],
        ["prompt", "chosen"],
        ["completion"],
        ["prompt", "completion", "chosen", "rejected"],
        ["prompt", "label"],
    ],
)
def test_detect_dataset_type_refuses(columns):
    with pytest.raises(ValueError, match="can't tell the dataset type from the columns") as error:
        detect_dataset_type(columns)
    for name in columns:
        if name != "id":
            assert repr(name) in str(error.value)


def test_dataset_checks_detects_through_the_column_mapping():
    checks = dataset_checks(
        None, ["conversations", "chosen", "rejected"], columns={"prompt": "conversations"}
    )
    assert isinstance(checks[0], DatasetCheck)
    assert checks[0].dataset_type == PREF
    assert checks[0].columns == ("conversations", "chosen", "rejected")


def test_dataset_checks_uses_tools_and_images_columns_when_present():
    check = dataset_checks(PC, ["prompt", "completion", "tools", "images"], tools=True)[0]
    assert check.columns == ("prompt", "completion", "tools", "images")
    assert {"bad_tools", "unknown_tool", "image_count"} <= set(check.codes)
    # The tools column is only read with tools=True.
    check = dataset_checks(PC, ["prompt", "completion", "tools"])[0]
    assert check.columns == ("prompt", "completion")
    check = dataset_checks(
        PC,
        ["prompt", "completion", "tools", "images"],
        tools=True,
        tools_column=None,
        images_column=None,
    )[0]
    assert check.columns == ("prompt", "completion")


def test_language_modeling_conversations_is_the_chat_check():
    check = dataset_checks(LM, ["messages", "tools", "images"], tools=True)[0]
    assert isinstance(check, ChatCheck)
    assert check.columns == ("messages", "tools", "images")


BAD_DATASET_ARGUMENTS = [
    pytest.param(("nope", ["prompt"]), {}, ValueError, id="unknown-type"),
    pytest.param((PC, ["prompt"]), {}, ValueError, id="missing-column"),
    pytest.param((PREF, ["prompt", "chosen"]), {}, ValueError, id="missing-rejected"),
    pytest.param((LM, ["id"]), {}, ValueError, id="lm-without-column"),
    pytest.param((LM, ["text", "messages"]), {}, ValueError, id="lm-two-columns"),
    pytest.param((LM, ["messages"]), {"format": "standard"}, ValueError, id="lm-messages-standard"),
    pytest.param(
        (LM, ["text"]), {"format": "conversational"}, ValueError, id="lm-text-conversational"
    ),
    pytest.param((PO, ["prompt"]), {"format": "json"}, ValueError, id="unknown-format"),
    pytest.param(
        (PO, ["prompt"]), {"columns": {"question": "prompt"}}, ValueError, id="unknown-field"
    ),
    pytest.param((PO, ["prompt"]), {"columns": {"prompt": 1}}, TypeError, id="column-not-a-string"),
    pytest.param((PO, ["prompt"]), {"columns": ["prompt"]}, TypeError, id="columns-not-a-mapping"),
    pytest.param(
        (PO, ["prompt"]), {"chat": ChatFormat(), "tools": True}, TypeError, id="chat-and-options"
    ),
    pytest.param((PO, ["prompt"]), {"chat": {"tools": True}}, TypeError, id="chat-not-a-format"),
    pytest.param((PO, ["prompt"]), {"roles": "user"}, TypeError, id="bad-chat-option"),
    pytest.param((PO, ["prompt"]), {"last_role": "bot"}, ValueError, id="bad-last-role"),
    pytest.param((PO, ["prompt"]), {"nonsense": 1}, TypeError, id="unknown-option"),
]


@pytest.mark.parametrize("args, kwargs, error", BAD_DATASET_ARGUMENTS)
def test_dataset_checks_bad_arguments(args, kwargs, error):
    with pytest.raises(error):
        dataset_checks(*args, **kwargs)


def test_missing_column_error_names_it():
    with pytest.raises(ValueError, match=r"\['completion'\]"):
        dataset_checks(PC, ["prompt", "id"])


def test_dataset_check_bad_arguments():
    with pytest.raises(ValueError):
        DatasetCheck("nope")
    with pytest.raises(ValueError):
        DatasetCheck(PO, format="x")
    with pytest.raises(TypeError):
        DatasetCheck(PO, fmt="x")
    with pytest.raises(ValueError):
        DatasetCheck(PO, tools_column="tools")  # needs tools=True
    with pytest.raises(TypeError):
        DatasetCheck(PO, images_column=3)
    with pytest.raises(ValueError):
        DatasetCheck(LM, format="conversational")


# --- Formats of a column ----------------------------------------------------------------


def test_value_format():
    assert value_format("The sky is") == "standard"
    assert value_format("[INST] hi") == "standard"
    assert value_format('[{"role": "user", "content": "x"}]') == "conversational"
    assert value_format(' {"messages": []}') == "conversational"
    assert value_format([U]) == "conversational"
    assert value_format(None) is None
    assert value_format(3) is None


def test_a_mixed_column_is_flagged_once_its_format_is_pinned():
    """auto judges each row alone; counting the column and pinning its majority flags the minority."""
    values = [json.dumps([U]), json.dumps([U, A, U]), "The sky is", json.dumps([S, U]), None]
    table = pa.table({"prompt": values})
    assert dataset_checks(PO, ["prompt"])[0].check(table).to_pylist() == [
        None,
        None,
        None,
        None,
        "not_messages",
    ]
    half = format_counts(table["prompt"].slice(0, 2))
    rest = format_counts(table["prompt"].slice(2))
    counts = {k: half[k] + rest[k] for k in half}
    assert counts == {"conversational": 3, "standard": 1, "other": 1}
    pinned = majority_format(counts)
    assert pinned == "conversational"
    codes = dataset_checks(PO, ["prompt"], format=pinned)[0].check(table).to_pylist()
    assert codes == [None, None, "mixed_format", None, "not_messages"]


def test_format_counts_of_native_and_python_values():
    assert format_counts(pa.array([[U], None])) == {"conversational": 1, "standard": 0, "other": 1}
    assert format_counts(["a", "b", 1]) == {"conversational": 0, "standard": 2, "other": 1}
    assert majority_format({"conversational": 1, "standard": 1}) == "conversational"


# --- The RowCheck interface --------------------------------------------------------------

CHECKS = [
    ChatCheck("messages"),
    ChatCheck("messages", ChatFormat(tools=True, harmony=True), "tools", "images"),
    ChatCheck("conversations", ChatFormat(sharegpt=True)),
    ChatCheck("messages", sample_profile()),
    LabelCheck(),
    *[
        check
        for kind, columns in [
            (LM, ["text"]),
            (PO, ["prompt"]),
            (PC, ["prompt", "completion"]),
            (PREF, ["prompt", "chosen", "rejected", "tools", "images"]),
            (IMPL, ["chosen", "rejected"]),
            (UNP, ["prompt", "completion", "label"]),
        ]
        for fmt in ("auto", "conversational", "standard")
        if not (kind == LM and fmt == "conversational")
        for check in dataset_checks(kind, columns, format=fmt, tools=True)
    ],
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.describe())
def test_row_check_interface(check):
    assert isinstance(check, RowCheck)
    assert isinstance(check.columns, tuple) and all(isinstance(c, str) for c in check.columns)
    assert isinstance(check.codes, tuple)
    assert list(check.codes) == sorted(check.codes, key=reason_rank)
    assert set(check.codes) <= set(ALL_REASONS)
    assert isinstance(check.describe(), str) and check.describe()
    assert json.loads(json.dumps(check.as_dict())) == check.as_dict()
    hash(check)  # frozen: usable as a key


GARBAGE = [
    None,
    "",
    "  ",
    "[]",
    "{}",
    "null",
    "[1, 2]",
    '[{"role": 1}]',
    "\x00",
    "[" * 3000,
    "{" + "]" * 5,
    "42",
    "true",
    '"x"',
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.describe())
def test_row_checks_never_raise_on_a_value(check):
    rows = len(GARBAGE)
    table = pa.table({name: GARBAGE for name in check.columns})
    codes = check.check(table)
    assert codes.type == pa.string() and len(codes) == rows
    assert set(codes.to_pylist()) - {None} <= set(check.codes)
    binary = pa.table(
        {
            name: pa.array([g if g is None else g.encode() for g in GARBAGE], pa.binary())
            for name in check.columns
        }
    )
    assert check.check(binary).to_pylist() == codes.to_pylist()
    assert [check.check_row({n: g for n in check.columns}) for g in GARBAGE] == codes.to_pylist()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.describe())
def test_row_checks_on_empty_and_chunked_tables(check):
    empty = pa.table({name: pa.array([], pa.string()) for name in check.columns})
    assert check.check(empty).to_pylist() == []
    one = pa.table({name: ["[]"] for name in check.columns})
    chunked = pa.concat_tables([one, one, one])
    assert chunked[check.columns[0]].num_chunks == 3
    assert check.check(chunked).to_pylist() == check.check(one).to_pylist() * 3


def test_chat_check_without_extra_columns_is_check_array():
    values = pa.array([json.dumps([U, A]), json.dumps([U, U]), None, "x"])
    fmt = ChatFormat(last_role="assistant")
    table = pa.table({"messages": values, "other": [1, 2, 3, 4]})
    assert (
        ChatCheck("messages", fmt).check(table).to_pylist() == check_array(values, fmt).to_pylist()
    )
    assert ChatCheck("messages", fmt).columns == (
        "messages",
    )  # extra columns are carried, not read


def test_chat_check_codes_follow_the_format():
    assert ChatCheck("m").codes == (
        "too_large",
        "not_messages",
        "no_messages",
        "bad_message",
        "unknown_role",
        "system_position",
        "not_alternating",
        "empty_content",
    )
    assert "last_role" in ChatCheck("m", ChatFormat(last_role="assistant")).codes
    assert {"tool_turn", "missing_turn"} <= set(ChatCheck("m", sample_profile()).codes)
    assert "developer_position" in ChatCheck("m", ChatFormat(harmony=True)).codes


def test_chat_check_bad_arguments():
    with pytest.raises(TypeError):
        ChatCheck(1)
    with pytest.raises(TypeError):
        ChatCheck("m", fmt={"tools": True})
    with pytest.raises(ValueError):
        ChatCheck("m", ChatFormat(), tools_column="tools")
    with pytest.raises(TypeError):
        LabelCheck(column=None)
    with pytest.raises(TypeError):
        LabelCheck(na_pass="no")


def test_label_check():
    table = pa.table({"label": pa.array([True, False, None])})
    assert LabelCheck().check(table).to_pylist() == [None, None, "not_label"]
    assert LabelCheck(na_pass=True).check(table).to_pylist() == [None, None, None]
    assert LabelCheck("ok").check(pa.table({"ok": ["true", "1"]})).to_pylist() == ["not_label"] * 2


def test_as_dict_of_a_dataset_check():
    check = dataset_checks(
        None,
        ["conversations", "chosen", "rejected"],
        columns={"prompt": "conversations"},
        sharegpt=True,
    )[0]
    out = check.as_dict()
    assert out["dataset_type"] == PREF
    assert out["columns"] == {"prompt": "conversations", "chosen": "chosen", "rejected": "rejected"}
    assert out["chat"]["role_key"] == "from" and out["chat"]["sharegpt"] is True
    assert (
        check.describe()
        == "conversations, chosen, rejected form a preference (explicit prompt) row"
    )


# --- ChatFormat: the new options -----------------------------------------------------------


def test_new_options_default_to_the_core_check():
    fmt = ChatFormat()
    assert fmt.is_core
    assert not (
        fmt.tools
        or fmt.harmony
        or fmt.sharegpt
        or fmt.profile
        or fmt.thinking_key
        or fmt.image_token
    )
    assert fmt.text_key == "text"


def test_options_extend_roles_and_keys():
    assert ChatFormat(tools=True).roles == ("system", "user", "assistant", "tool")
    assert ChatFormat(roles=["user", "assistant", "tool"], tools=True).roles == (
        "user",
        "assistant",
        "tool",
    )
    assert ChatFormat(harmony=True).roles[-1] == "developer"
    assert ChatFormat(harmony=True).thinking == "thinking"
    assert ChatFormat(harmony=True, thinking_key="analysis").thinking == "analysis"
    assert ChatFormat(tools=True, last_role="tool").last_role == "tool"
    fmt = ChatFormat(sharegpt=True)
    assert (fmt.role_key, fmt.content_key) == ("from", "value")
    assert ChatFormat(sharegpt=True, role_key="speaker").role_key == "speaker"
    assert not fmt.is_core


def test_as_dict_round_trips_through_first_problem():
    chat = json.dumps([U, A])
    cases = [
        (ChatFormat(tools=True, last_role="assistant"), chat),
        (ChatFormat(sharegpt=True), json.dumps([sg("human"), sg("gpt")])),
        (sample_profile(), chat),
        (ChatFormat(harmony=True, image_token="<image>", text_key="value"), chat),
    ]
    for fmt, value in cases:
        assert ChatFormat(**fmt.as_dict()) == fmt
        assert first_problem(value, **fmt.as_dict()) is None
        assert first_problem("[]", **fmt.as_dict()) == "no_messages"


BAD_OPTIONS = [
    pytest.param({"tools": "yes"}, TypeError, id="tools-string"),
    pytest.param({"harmony": 1}, TypeError, id="harmony-int"),
    pytest.param({"sharegpt": None}, TypeError, id="sharegpt-none"),
    pytest.param({"thinking_key": 1}, TypeError, id="thinking_key-int"),
    pytest.param({"thinking_key": ""}, ValueError, id="thinking_key-empty"),
    pytest.param({"text_key": None}, TypeError, id="text_key-none"),
    pytest.param({"image_token": 5}, TypeError, id="image_token-int"),
    pytest.param({"image_token": ""}, ValueError, id="image_token-empty"),
    pytest.param({"profile": "strict"}, ValueError, id="profile-unknown"),
    pytest.param({"profile": 1}, TypeError, id="profile-int"),
    pytest.param(
        {"profile": "sample", "roles": [*["system", "user", "assistant"], "tool"]},
        ValueError,
        id="profile-with-tool-role",
    ),
    pytest.param({"profile": "sample", "tools": True}, ValueError, id="profile-with-tools"),
    pytest.param({"profile": "sample", "harmony": True}, ValueError, id="profile-with-harmony"),
    pytest.param({"last_role": "tool"}, ValueError, id="last-role-tool-without-tools"),
]


@pytest.mark.parametrize("kwargs, error", BAD_OPTIONS)
def test_bad_options(kwargs, error):
    with pytest.raises(error) as raised:
        ChatFormat(**kwargs)
    assert any(key in str(raised.value) for key in kwargs)
    with pytest.raises(error):
        first_problem(None, na_pass=True, **kwargs)


def test_sample_profile_overrides():
    assert sample_profile(alternate=True).alternate
    assert sample_profile(last_role="assistant").last_role == "assistant"
    assert sample_profile().roles == ("system", "user", "assistant")


def test_sharegpt_role_mapping_is_documented():
    assert SHAREGPT_ROLES["human"] == "user"
    assert SHAREGPT_ROLES["gpt"] == "assistant"
    assert SHAREGPT_ROLES["function_call"] == "assistant"
    assert SHAREGPT_ROLES["observation"] == "tool"


# --- Codes, order and phrases ---------------------------------------------------------------


def test_all_reasons_extend_the_core_order():
    assert set(ALL_REASONS) == set(REASONS) | set(EXTENDED_REASONS)
    assert len(ALL_REASONS) == len(set(ALL_REASONS))
    assert [r for r in ALL_REASONS if r in REASONS] == list(REASONS)
    assert [r for r in ALL_REASONS if r in EXTENDED_REASONS] == list(EXTENDED_REASONS)


# What a note says of one failing row and of several, for each code beyond the core, written out.
EXTENDED_PHRASES = {
    "too_large": ("is too large to read", "are too large to read"),
    "mixed_format": (
        "mixes conversational and standard values",
        "mix conversational and standard values",
    ),
    "not_text": ("has a field that isn't text", "have a field that isn't text"),
    "not_label": ("has a label that isn't true or false", "have a label that isn't true or false"),
    "bad_input": (
        "has an input that isn't an object holding messages",
        "have an input that isn't an object holding messages",
    ),
    "output_count": (
        "has an output that isn't exactly one message",
        "have an output that isn't exactly one message",
    ),
    "too_few_messages": ("has too few messages", "have too few messages"),
    "empty_text": ("has an empty text field", "have an empty text field"),
    "unknown_key": ("has a message key that isn't allowed", "have a message key that isn't allowed"),
    "bad_content_type": (
        "has a content of a kind that isn't allowed",
        "have a content of a kind that isn't allowed",
    ),
    "bad_image_url": (
        "has an image that isn't a base64 data URL of a JPEG, PNG or WEBP",
        "have an image that isn't a base64 data URL of a JPEG, PNG or WEBP",
    ),
    "image_too_large": ("has an image that's too large", "have an image that's too large"),
    "bad_weight": ("has a weight that isn't 0 or 1", "have a weight that isn't 0 or 1"),
    "bad_tool_call": ("has a malformed tool call", "have a malformed tool call"),
    "bad_function_call": ("has a malformed function call", "have a malformed function call"),
    "mistral_tool_call": ("has a tool call outside Mistral's format", "have a tool call outside Mistral's format"),
    "bad_thinking": (
        "has thinking that isn't the assistant's text",
        "have thinking that isn't the assistant's text",
    ),
    "bad_tools": (
        "has a tools list that isn't a list of function schemas",
        "have a tools list that isn't a list of function schemas",
    ),
    "tool_turn": ("has a tool turn", "have a tool turn"),
    "image_role": (
        "has images in a message whose role can't hold them",
        "have images in a message whose role can't hold them",
    ),
    "developer_position": (
        "has a developer message that isn't at the start",
        "have a developer message that isn't at the start",
    ),
    "missing_turn": (
        "lacks a user turn or an assistant turn",
        "lack a user turn or an assistant turn",
    ),
    "missing_role": ("lacks a required role", "lack a required role"),
    "prompt_end": (
        "has a prompt that doesn't end with a user turn",
        "have a prompt that doesn't end with a user turn",
    ),
    "completion_role": (
        "has a completion with a turn that isn't the assistant's",
        "have a completion with a turn that isn't the assistant's",
    ),
    "orphan_tool": (
        "has a tool message that answers no tool call",
        "have a tool message that answers no tool call",
    ),
    "unanswered_call": ("has tool calls that aren't all answered", "have tool calls that aren't all answered"),
    "unknown_tool": (
        "calls a function its tools don't declare",
        "call a function their tools don't declare",
    ),
    "content_or_calls": (
        "has a message without content, or with both content and tool calls",
        "have a message without content, or with both content and tool calls",
    ),
    "placeholder_content": (
        "has a message whose whole text is a placeholder such as NaN or null",
        "have a message whose whole text is a placeholder such as NaN or null",
    ),
    "too_many_images": ("has too many images", "have too many images"),
    "image_count": (
        "has image parts that don't match its images",
        "have image parts that don't match their images",
    ),
    "audio_count": ("has audio tags that don't match its audios", "have audio tags that don't match their audios"),
    "video_count": ("has video tags that don't match its videos", "have video tags that don't match their videos"),
    "too_long": ("has more tokens than max_tokens=", "have more tokens than max_tokens="),
    "same_pair": ("has identical chosen and rejected", "have identical chosen and rejected"),
    "implicit_prompt": (
        "has chosen and rejected that don't share a prompt",
        "have chosen and rejected that don't share a prompt",
    ),
}


def test_every_new_reason_has_its_phrase_written_out():
    assert tuple(EXTENDED_PHRASES) == EXTENDED_REASONS


@pytest.mark.parametrize("reason", EXTENDED_REASONS)
def test_every_new_reason_has_a_phrase(reason):
    one, many = EXTENDED_PHRASES[reason]
    assert phrase(reason, 1) == f"1 {one} (`{reason}`)"
    assert phrase(reason, 2) == f"2 {many} (`{reason}`)"


def test_first_reason_follows_the_global_order():
    assert first_reason(["empty_content", None, "prompt_end"]) == "prompt_end"
    assert first_reason(["same_pair", "image_count"]) == "image_count"
    assert first_reason(["not_label", "completion_role"]) == "not_label"
    assert first_reason([]) is None
    assert reason_rank("unheard_of") == len(ALL_REASONS)


def test_first_row_problem_detects_the_type():
    assert first_row_problem({"prompt": [U], "chosen": [A], "rejected": [A]}) == "same_pair"
    with pytest.raises(ValueError):
        first_row_problem({"id": 1})
