"""Properties: the trainers' profiles and the image rules agree with the plain reference.

The plain reference (tests/plain_reference/) writes each profile down from the
README's table of rules per trainer (sample, openai, together, torchtune, mistral), as
defaults that an option given explicitly overrides. On drawn conversations (tool
calling, Harmony, images, with mutations), `chatgate.check_batch` gives the
reference's code and `chatgate.rules.locate` its message, under every profile with
some options over it, and under the options of content parts and images alone.
"""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chatgate
from chatgate.rules import format_from, locate

try:
    import strategies as drawn
    from plain_reference import PROFILES, plain_answers
except ImportError:  # tests/ imported as a package
    import tests.strategies as drawn
    from tests.plain_reference import PROFILES, plain_answers

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

CHATS = st.one_of(
    drawn.tool_chats(),
    drawn.image_chats(),
    drawn.harmony_chats(),
    drawn.well_formed("role", "content", ["system", "user", "assistant"]),
    drawn.well_formed("role", "content", ["system", "user", "assistant"]),
)
MUTATED = drawn.mutated(CHATS, most=2)

PROFILE_OPTIONS = st.fixed_dictionaries(
    {"profile": st.sampled_from(["openai", "sample", "together", "torchtune"])},
    optional={"alternate": st.booleans(), "allow_empty": st.booleans()},
)
"""The profiles whose codes these chats reach (Mistral's are reached by tests/test_profile_mistral.py's)."""
EVERY_PROFILE = st.fixed_dictionaries(
    {"profile": st.sampled_from(sorted(PROFILES))},
    optional={"alternate": st.booleans(), "allow_empty": st.booleans()},
)
IMAGE_RULES = {
    "content_types": st.sampled_from(["text_or_parts", "text"]),
    "part_types": st.sampled_from([["text", "image_url"], ["text", "image_url", "image"]]),
    "image_data_urls": st.just(True),
    "max_image_bytes": st.integers(1, 9),
    "image_roles": st.sampled_from([["user"], ["user", "assistant"]]),
    "max_images": st.integers(0, 3),
}
SHARED = {"alternate": st.booleans(), "allow_empty": st.booleans(), "image_token": st.just("<image>")}


@st.composite
def image_options(draw) -> dict:
    """One or two of the image rules (so that each decides often), some shared options."""
    rules = draw(st.lists(st.sampled_from(sorted(IMAGE_RULES)), min_size=1, max_size=2, unique=True))
    options = {rule: draw(IMAGE_RULES[rule]) for rule in rules}
    options |= draw(st.fixed_dictionaries({}, optional=SHARED))
    if draw(st.integers(0, 3)) == 0:
        options["text_key"] = "value"
    return options


IMAGE_OPTIONS = image_options()


def assert_agree(values, options):
    texts = [json.dumps(v) for v in values]
    codes = chatgate.check_batch(pa.array(texts), **options).to_pylist()
    for value, code in zip(values, codes):
        got = None if code is None else (code, locate(value, code, **options))
        assert got in (answers := plain_answers(value, **options)), (value, got, answers)


@SETTINGS
@given(st.lists(MUTATED, min_size=1, max_size=6), EVERY_PROFILE)
def test_the_profiles_agree_with_the_plain_reference(values, options):
    assert_agree(values, options)


@SETTINGS
@given(st.lists(drawn.mutated(drawn.image_chats(), most=1), min_size=1, max_size=6), IMAGE_OPTIONS)
def test_the_image_rules_agree_with_the_plain_reference(values, options):
    if options.get("text_key") == "value":  # text parts under the other key
        values = json.loads(json.dumps(values).replace('"text": ', '"value": '))
    assert_agree(values, options)


def test_the_profiles_are_the_readmes_defaults():
    """Each profile's defaults, as chatgate builds them, are the plain reference's (the README's)."""
    for name, defaults in PROFILES.items():
        fmt = format_from(profile=name).as_dict()
        for option, value in defaults.items():
            expected = list(value) if isinstance(value, tuple) else value
            assert fmt[option] == expected, (name, option)


def test_the_drawn_conversations_reach_the_codes_of_the_profiles():
    seen: set = set()

    @settings(max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.tuples(MUTATED, PROFILE_OPTIONS), st.tuples(drawn.image_chats(), IMAGE_OPTIONS)))
    def collect(case):
        value, options = case
        seen.update((options.get("profile"), a and a[0]) for a in plain_answers(value, **options))

    collect()
    wanted = {("sample", "tool_turn"), ("sample", "missing_turn"), ("openai", "unknown_key")}
    wanted |= {("openai", "missing_role"), ("torchtune", "too_few_messages"), ("torchtune", "not_alternating")}
    wanted |= {(None, code) for code in ("bad_image_url", "image_too_large", "image_role", "too_many_images")}
    assert wanted - seen == set()


# --- Where chatgate and the documented rules once disagreed ---------------------------------------


def test_sample_profile_lets_tool_calls_on_a_user_message_through():
    """The docs refuse tool or function turns and assistant messages with tool calls only (once a
    strict xfail: chatgate refused tool_calls on a user message as tool_turn)."""
    value = [
        {"role": "user", "content": "Hi", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
        {"role": "assistant", "content": "Hello."},
    ]
    assert plain_answers(value, profile="sample") == {None}
    assert chatgate.first_problem(value, profile="sample") is None
