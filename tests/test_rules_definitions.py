"""Each rule is written once (`chatgate.rules.conversation.rule`): its verdict and its sites come
from one predicate, and a hand-tuned verdict (`fast=`, kept where the benchmark showed the
derived one slower) says what the sites say.

Over drawn formats and conversations (messages without a role, tool calls, thinking, weights,
unknown keys, content parts and images included), for every rule of the table:

- where no message lacks a role, the rule applies exactly when it has a site (the derived
  verdicts by construction, the hand-tuned ones by this test);
- always, the judge's first code is the code of the first active rule with a site, so a
  hand-tuned verdict never changes a code, messages without a role included.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chatgate.rules import format_from
from chatgate.rules.base.markers import BAD
from chatgate.rules.base.values import blank_checker
from chatgate.rules.check.judge import active_rules, first_code, judge
from chatgate.rules.check.table import CODES, RULES
from chatgate.rules.conversation.conversation import PARTS, Conversation
from chatgate.rules.conversation.rule import Code, Rule
from chatgate.rules.formats.messages import read_messages

SETTINGS = settings(
    max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

PNG = "data:image/png;base64,iVBORw0KGgo="

OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "roles": st.sampled_from([["system", "user", "assistant"], ["user", "assistant"]]),
        "alternate": st.booleans(),
        "allow_empty": st.booleans(),
        "first_role": st.sampled_from(["user", "assistant"]),
        "last_role": st.sampled_from(["user", "assistant"]),
        "tools": st.booleans(),
        "harmony": st.booleans(),
        "thinking_key": st.just("reasoning_content"),
        "min_messages": st.integers(1, 4),
        "require_roles": st.just(["assistant"]),
        "content_types": st.sampled_from(["text", "text_or_parts"]),
        "weight_key": st.just("weight"),
        "allowed_keys": st.just(["name", "weight", "tool_calls", "tool_call_id"]),
        "legacy_functions": st.booleans(),
        "image_data_urls": st.booleans(),
        "max_image_bytes": st.integers(1, 16),
        "image_roles": st.just(["user"]),
        "max_images": st.integers(0, 2),
        "part_types": st.just(["text", "image_url"]),
        "profile": st.sampled_from(["sample", "openai", "together", "torchtune"]),
    },
)

CONTENTS = st.sampled_from(
    [
        "x",
        "",
        " ",
        None,
        3,
        [{"type": "text", "text": "hi"}],
        [{"type": "text", "text": " "}],
        [{"type": "image"}],
        [{"type": "image_url", "image_url": {"url": PNG}}],
        [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
        ["not a part"],
    ]
)

CALLS = st.sampled_from(
    [
        None,
        [],
        [{"type": "function", "function": {"name": "f", "arguments": {}}, "id": "a"}],
        [{"function": {"name": "g", "arguments": "{}"}}],
        "bad",
    ]
)

MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "function", "bot", 7])},
    optional={
        "content": CONTENTS,
        "tool_calls": CALLS,
        "tool_call_id": st.sampled_from(["a", "b", 1]),
        "name": st.sampled_from(["f", "g"]),
        "reasoning_content": st.sampled_from(["why", 3]),
        "thinking": st.sampled_from(["why", None]),
        "weight": st.sampled_from([0, 1, 2, True, None]),
        "function_call": st.sampled_from([{"name": "f"}, {"name": ""}, "f", None]),
        "extra": st.just("x"),
    },
)

MESSAGES = st.lists(st.one_of(MESSAGE, MESSAGE, MESSAGE, st.sampled_from(["text", None, 1])), max_size=6)


def _format(options):
    try:
        return format_from(**options)
    except ValueError:  # a combination the options refuse (the sample profile's roles, ...)
        assume(False)


def _conversation(fmt, messages, declared, images, extras=True):
    """A conversation as the judge reads it: with extras (the options' path) or without (the
    core check's path, where only the rules without the "extras" switch are tried)."""
    read = read_messages(messages, fmt, extras=extras)
    blank = blank_checker(fmt.text_key)
    return read, Conversation(read.roles, read.contents, fmt, blank, read.extras, declared, images)


DECLARED = st.sampled_from([None, frozenset({"f"}), BAD])
IMAGES = st.sampled_from([None, 0, 1, 2, BAD])


def test_every_entry_of_the_table_is_a_code_or_a_rule_with_its_words():
    for entry in CODES:
        assert isinstance(entry, (Code, Rule)), entry
        one, many = entry.phrase
        assert one and many and entry.raised_by and entry.meaning, entry.code
    for rule in RULES:
        assert rule.where, rule.code


def test_the_fast_verdicts_are_the_measured_few():
    """A hand-tuned verdict is kept where the benchmark showed the derived one slower (see the
    module `conversation.rule`); each reads as its rule."""
    fast = [rule.code for rule in RULES if rule.fast]
    assert fast == ["bad_message", "unknown_role", "system_position", "developer_position", "empty_content"]
    for rule in RULES:
        assert rule.applies.__name__ == rule.code


@SETTINGS
@given(OPTIONS, MESSAGES, st.sampled_from(PARTS), DECLARED, IMAGES, st.booleans())
def test_a_rule_applies_exactly_where_it_has_a_site(options, messages, part, declared, images, extras):
    fmt = _format(options)
    read, c = _conversation(fmt, messages, declared, images, extras)
    assume(read.roles)  # no_messages comes first: the other rules may read the last message
    if BAD in read.roles:
        return  # bad_message's alone: the next test covers it
    rules = active_rules(fmt, part, extras=extras, declared=declared is not None, images=images is not None)
    earlier = False
    for rule in rules:
        try:
            sites = rule.sites(c)
            applies = rule.applies(c)
        except (TypeError, IndexError):  # only a rule the judge can't reach may fail on what it reads
            assert earlier, rule.code
            continue
        assert applies is bool(sites), rule.code
        earlier = earlier or applies


@SETTINGS
@given(OPTIONS, MESSAGES, st.sampled_from(PARTS), DECLARED, IMAGES, st.booleans())
def test_the_judges_code_is_the_first_rule_with_a_site(options, messages, part, declared, images, extras):
    fmt = _format(options)
    read, c = _conversation(fmt, messages, declared, images, extras)
    assume(read.roles)
    rules = active_rules(fmt, part, extras=extras, declared=declared is not None, images=images is not None)
    by_sites = None
    for rule in rules:
        if rule.sites(c):
            by_sites = rule.code
            break
    code = judge(
        read.roles, read.contents, fmt, blank_checker(fmt.text_key), read.extras,
        part=part, declared=declared, images=images,
    )
    assert code == by_sites == first_code(rules, c)
