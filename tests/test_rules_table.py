"""The table of rules (`judge.RULES`): its order is the order of the codes, and the batch
checker's fast path is built from it."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import (
    ALL_REASONS,
    REASONS,
    ChatFormat,
    check_batch,
    first_problem,
    format_codes,
    sample_profile,
)
from chatgate.rules.base.values import blank_checker
from chatgate.rules.check.batch import _StrictPath
from chatgate.rules.check.judge import (
    RULES,
    SWITCHES,
    active_rules,
    first_code,
    judge,
    switches,
)
from chatgate.rules.conversation.conversation import COMPLETION, PARTS, PROMPT, WHOLE, Conversation
from chatgate.rules.formats.messages import read_messages

try:
    from plain_reference import plain_problem
    from strategies import chat_formats
except ImportError:  # tests/ imported as a package
    from tests.plain_reference import plain_problem
    from tests.strategies import chat_formats

TOKENIZER = Path(__file__).parent / "data" / "tokens" / "tokenizer.json"

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

TABLE_CODES = [
    "no_messages",
    "too_few_messages",
    "bad_message",
    "unknown_key",
    "bad_content_type",
    "bad_image_url",
    "image_too_large",
    "bad_weight",
    "bad_tool_call",
    "bad_function_call",
    "mistral_tool_call",
    "bad_thinking",
    "bad_tools",
    "tool_turn",
    "unknown_role",
    "image_role",
    "system_position",
    "developer_position",
    "missing_turn",
    "missing_role",
    "first_role",
    "prompt_end",
    "completion_role",
    "orphan_tool",
    "unanswered_call",
    "not_alternating",
    "last_role",
    "unknown_tool",
    "content_or_calls",
    "empty_content",
    "placeholder_content",
    "too_many_images",
    "image_count",
    "audio_count",
    "video_count",
    "too_long",
]


def test_the_table_in_order():
    assert [rule.code for rule in RULES] == TABLE_CODES


def test_all_reasons_is_the_table_order_with_the_codes_decided_elsewhere():
    assert ALL_REASONS == (
        "too_large",
        "not_messages",
        "mixed_format",
        "not_text",
        "not_label",
        "bad_input",
        "output_count",
        "no_messages",
        "too_few_messages",
        "empty_text",
        "bad_message",
        "unknown_key",
        "bad_content_type",
        "bad_image_url",
        "image_too_large",
        "bad_weight",
        "bad_tool_call",
        "bad_function_call",
        "mistral_tool_call",
        "bad_thinking",
        "bad_tools",
        "tool_turn",
        "unknown_role",
        "image_role",
        "system_position",
        "developer_position",
        "missing_turn",
        "missing_role",
        "first_role",
        "prompt_end",
        "completion_role",
        "orphan_tool",
        "unanswered_call",
        "not_alternating",
        "last_role",
        "unknown_tool",
        "content_or_calls",
        "empty_content",
        "placeholder_content",
        "too_many_images",
        "image_count",
        "audio_count",
        "video_count",
        "too_long",
        "same_pair",
        "implicit_prompt",
    )
    table = [rule.code for rule in RULES]
    assert [code for code in ALL_REASONS if code in table] == table
    # The others are decided before any conversation is read, or by comparing two values.
    assert [code for code in ALL_REASONS if code not in table] == [
        "too_large",
        "not_messages",
        "mixed_format",
        "not_text",
        "not_label",
        "bad_input",
        "output_count",
        "empty_text",
        "same_pair",
        "implicit_prompt",
    ]
    assert [code for code in REASONS if code in table] == list(REASONS[1:])


def test_each_rule_says_what_it_refuses():
    for rule in RULES:
        assert rule.applies.__name__ == rule.code
        assert inspect.getdoc(rule.applies).startswith("Refuses "), rule.code


def test_switches_are_named_once():
    used = {name for rule in RULES for name in rule.when}
    assert used == set(SWITCHES)
    fmt = ChatFormat(tools=True, harmony=True, first_role="user", last_role="assistant")
    everything = switches(fmt, WHOLE, extras=True, declared=True, images=True)
    row_options = {"min_messages", "allowed_keys", "content_types", "weight_key", "legacy_functions", "require_roles"}
    row_options |= {"image_data_urls", "max_image_bytes", "image_roles", "max_images"}
    assert everything == set(SWITCHES) - {"profile", "mistral", "placeholder_contents", "audios_column", "videos_column", "max_tokens", "prompt", "completion"} - row_options
    trainer = ChatFormat(
        min_messages=2,
        allowed_keys=["weight"],
        content_types="text",
        weight_key="weight",
        legacy_functions=True,
        require_roles=["assistant"],
        image_data_urls=True,
        max_image_bytes=1,
        image_roles=["user"],
        max_images=1,
    )
    assert switches(trainer, WHOLE) >= row_options
    assert "content_types" in switches(ChatFormat(part_types=["text"]))
    assert switches(sample_profile(), PROMPT) == {
        "profile",
        "system_role",
        "prompt",
        "not_completion",
    }


def test_active_rules_of_the_core_defaults():
    assert [rule.code for rule in active_rules(ChatFormat())] == [
        "no_messages",
        "bad_message",
        "unknown_role",
        "system_position",
        "not_alternating",
        "empty_content",
    ]
    fmt = ChatFormat(roles=["user", "assistant"], first_role="user", last_role="assistant")
    assert [rule.code for rule in active_rules(fmt)] == [
        "no_messages",
        "bad_message",
        "unknown_role",
        "first_role",
        "not_alternating",
        "last_role",
        "empty_content",
    ]


def test_active_rules_of_the_parts_of_a_row():
    fmt = ChatFormat(tools=True, first_role="user", last_role="assistant")
    codes = {
        part: [rule.code for rule in active_rules(fmt, part, extras=True, declared=True)]
        for part in PARTS
    }
    assert codes[WHOLE] == [
        "no_messages",
        "bad_message",
        "bad_tool_call",
        "bad_tools",
        "unknown_role",
        "system_position",
        "first_role",
        "orphan_tool",
        "not_alternating",
        "last_role",
        "unknown_tool",
        "empty_content",
    ]
    assert codes[PROMPT] == [
        "no_messages",
        "bad_message",
        "bad_tool_call",
        "bad_tools",
        "unknown_role",
        "system_position",
        "first_role",
        "prompt_end",
        "orphan_tool",
        "not_alternating",
        "unknown_tool",
        "empty_content",
    ]
    assert codes[COMPLETION] == [
        "no_messages",
        "bad_message",
        "bad_tool_call",
        "bad_tools",
        "unknown_role",
        "system_position",
        "completion_role",
        "not_alternating",
        "unknown_tool",
        "empty_content",
    ]


def test_active_rules_are_chosen_once_per_format():
    fmt = ChatFormat(last_role="assistant")
    assert active_rules(fmt) is active_rules(fmt)
    assert active_rules(fmt) is not active_rules(fmt, PROMPT)


@pytest.mark.parametrize(
    "fmt, codes",
    [
        (
            ChatFormat(),
            (
                "too_large",
                "not_messages",
                "no_messages",
                "bad_message",
                "unknown_role",
                "system_position",
                "not_alternating",
                "empty_content",
            ),
        ),
        (
            ChatFormat(harmony=True, allow_empty=True, alternate=False),
            (
                "too_large",
                "not_messages",
                "no_messages",
                "bad_message",
                "bad_thinking",
                "unknown_role",
                "system_position",
                "developer_position",
            ),
        ),
        (
            sample_profile(),
            (
                "too_large",
                "not_messages",
                "no_messages",
                "bad_message",
                "tool_turn",
                "unknown_role",
                "system_position",
                "missing_turn",
            ),
        ),
    ],
    ids=["defaults", "harmony", "sample"],
)
def test_format_codes_come_from_the_table(fmt, codes):
    assert format_codes(fmt) == codes


# --- The batch checker's fast path ------------------------------------------------------------


def test_the_strict_path_splits_the_table():
    strict = _StrictPath.of(ChatFormat(first_role="user", last_role="assistant"))
    assert [rule.code for rule in strict.role_rules] == [
        "no_messages",
        "bad_message",
        "unknown_role",
        "system_position",
        "first_role",
        "not_alternating",
        "last_role",
    ]
    assert [rule.code for rule in strict.content_rules] == ["empty_content"]
    assert _StrictPath.of(ChatFormat(allow_empty=True)).content_rules == ()


def test_only_empty_content_reads_the_contents():
    # The strict path remembers the verdict of the other rules per sequence of roles,
    # and tests blank contents as `is_blank` does for strings.
    # (The rules of content parts read them too, but only with their options set, which take
    # the general path: the strict path never holds them.)
    parts = ["bad_content_type", "bad_image_url", "image_too_large", "image_role", "too_many_images"]
    others = ["content_or_calls", "empty_content", "placeholder_content"]  # Mistral's, the peers'
    tokens = ["too_long"]  # max_tokens= (with tokenizer=): the general path
    assert [rule.code for rule in RULES if rule.reads_contents] == [*parts[:4], *others, parts[4], *tokens]
    assert not ChatFormat(content_types="text").is_core
    assert not ChatFormat(placeholder_contents=True).is_core and not ChatFormat(profile="mistral").is_core
    assert not ChatFormat(max_tokens=9, tokenizer=str(TOKENIZER)).is_core
    for options in ({"part_types": ["text"]}, {"image_data_urls": True}, {"max_image_bytes": 9},
                    {"image_roles": ["user"]}, {"max_images": 1}):
        assert not ChatFormat(**options).is_core, options


class Untouchable:
    """Contents that no rule but a content rule may read."""

    def _refuse(self, *args):
        raise AssertionError("a rule that doesn't read the contents read them")

    __iter__ = __len__ = __getitem__ = __contains__ = __bool__ = _refuse


OPTIONS = st.fixed_dictionaries(
    {
        "tools": st.booleans(),
        "harmony": st.booleans(),
        "thinking_key": st.none() | st.just("reasoning_content"),
        "first_role": st.none() | st.sampled_from(["user", "assistant"]),
        "last_role": st.none() | st.sampled_from(["user", "assistant"]),
        "alternate": st.booleans(),
    }
)
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "bot"])},
        optional={
            "content": st.sampled_from(["x", "", None]),
            "tool_calls": st.sampled_from(
                [None, [], [{"function": {"name": "f", "arguments": {}}}], "bad"]
            ),
            "tool_call_id": st.sampled_from(["a", 1]),
            "name": st.sampled_from(["f", "g"]),
            "reasoning_content": st.sampled_from(["why", 3]),
            "thinking": st.just("why"),
        },
    ),
    max_size=6,
)


@SETTINGS
@given(OPTIONS, MESSAGES, st.sampled_from(PARTS), st.sampled_from([None, frozenset({"f"})]))
def test_rules_that_dont_read_contents_never_touch_them(options, messages, part, declared):
    fmt = ChatFormat(allow_empty=True, **options)
    read = read_messages(messages, fmt, extras=True)
    images = len(messages) % 2
    rules = active_rules(fmt, part, extras=True, declared=declared is not None, images=True)
    conversation = Conversation(
        read.roles, Untouchable(), fmt, blank_checker("text"), read.extras, declared, images
    )
    with_contents = Conversation(
        read.roles, read.contents, fmt, blank_checker("text"), read.extras, declared, images
    )
    assert first_code(rules, conversation) == judge(
        read.roles,
        read.contents,
        fmt,
        blank_checker("text"),
        read.extras,
        part=part,
        declared=declared,
        images=images,
    )
    assert first_code(rules, conversation) == first_code(rules, with_contents)


@settings(SETTINGS, max_examples=500)
@given(
    chat_formats().filter(lambda kw: kw["role_key"] != kw["content_key"]),
    st.lists(st.integers(0, 4), max_size=4),
    st.lists(st.sampled_from(["Hi", "", " \n", "\u3000", "ok"]), max_size=6),
)
def test_the_strict_path_agrees_with_the_plain_reference(kwargs, picks, contents):
    """Conversations the strict decoder accepts (allowed roles, string contents), judged
    by the table split in two, and as native values, against the plain reference."""

    roles = list(kwargs["roles"])
    messages = [
        {kwargs["role_key"]: roles[pick % len(roles)], kwargs["content_key"]: content}
        for pick, content in zip(picks, contents + ["x"] * len(picks))
    ]
    text = json.dumps(messages)
    expected = plain_problem(text, **kwargs)
    assert check_batch(pa.array([text, text]), **kwargs).to_pylist() == [expected, expected]
    assert first_problem(messages, **kwargs) == expected
