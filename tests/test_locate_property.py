"""Properties of `problems` and `locate` over drawn conversations.

On the core options (tests/strategies.py), the problems of a value are those a
plain oracle finds, written from the documented rules with the plain reference's
helpers; on drawn options, profiles, parts and row inputs, the first problem is
the judge's code and `locate` the message of the first problem with it. Always,
each problem listed is a breach of its rule and each rule that applies is listed.
"""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import check_batch, first_problem, first_reason, format_from, reason_rank
from chatgate.rules.base.values import blank_checker
from chatgate.rules.check.judge import BAD, active_rules, judge
from chatgate.rules.conversation.conversation import PARTS, WHOLE, Conversation
from chatgate.rules.formats.messages import Read
from chatgate.rules.location.locate import locate_array, location_of, problems_array, problems_of, read_value
from chatgate.rules.location.sites import WHOLE_VALUE_CODES

try:
    import plain_reference as plain
    from rule_examples import call
    from strategies import cases, json_text
except ImportError:  # tests/ imported as a package
    import tests.plain_reference as plain
    from tests.rule_examples import call
    from tests.strategies import cases, json_text

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def assert_sound_and_complete(value, fmt, part=WHOLE, declared=None, images=None):
    """Each problem listed is a breach of its rule, and each rule that applies is listed
    (or the value has a message without a role, which is bad_message only)."""
    found = problems_of(value, fmt, part=part, declared=declared, images=images)
    read = read_value(value, fmt)
    if not isinstance(read, Read) or not read.roles:
        return
    c = Conversation(
        read.roles, read.contents, fmt, blank_checker(fmt.text_key), read.extras, declared, images
    )
    rules = active_rules(fmt, part, extras=True, declared=declared is not None, images=images is not None)
    codes = {p.code for p in found}
    earlier = False  # does a rule before this one apply? (the judge then never tries it)
    for rule in rules:
        try:
            applies = rule.applies(c)
        except (TypeError, IndexError):  # only a rule the judge can't reach may fail
            assert earlier, rule.code
            applies = None
        if rule.code in codes and applies is not None:  # (a rule that failed can't say)
            assert applies is True, rule.code
        if applies:
            assert rule.code in codes or "bad_message" in codes, rule.code
        earlier = earlier or bool(applies)
    assert all(p.message is None for p in found if p.code in WHOLE_VALUE_CODES)
    bad = {i for i, role in enumerate(read.roles) if role is BAD}
    assert all(p.code == "bad_message" for p in found if p.message in bad)
    assert found == sorted(found, key=lambda p: (-1 if p.message is None else p.message, reason_rank(p.code)))


def plain_sites(
    value, *, roles, alternate, first_role, last_role, allow_empty, role_key, content_key, na_pass
):
    """The problems of a value under the core options, written from the documented rules
    with the plain reference's helpers (no chatgate code)."""
    if plain.is_missing(value):
        return [] if na_pass else [("not_messages", None)]
    if isinstance(value, str):
        value = plain.read_json(value)
    if isinstance(value, dict):
        value = value.get("messages")
    if value is plain.NOT_JSON or not plain.is_list(value):
        return [("not_messages", None)]
    if not value:
        return [("no_messages", None)]
    found = set()
    bad = [not isinstance(m, dict) or not isinstance(m.get(role_key), str) for m in value]
    role = [None if b else m[role_key] for m, b in zip(value, bad)]
    lead = 1 if role[0] == "system" else 0
    for i, message in enumerate(value):
        if bad[i]:
            found.add(("bad_message", i))
            continue
        if role[i] not in roles:
            found.add(("unknown_role", i))
        if "system" in roles and role[i] == "system" and i > 0:
            found.add(("system_position", i))
        if alternate and i > lead and role[i] == role[i - 1] and not bad[i - 1]:
            found.add(("not_alternating", i))
        if not allow_empty and (content_key not in message or plain.is_blank(message[content_key])):
            found.add(("empty_content", i))
    if first_role is not None:
        if lead == len(value):
            found.add(("first_role", None))
        elif not bad[lead] and role[lead] != first_role:
            found.add(("first_role", lead))
    if last_role is not None and not bad[-1] and role[-1] != last_role:
        found.add(("last_role", len(value) - 1))
    return sorted(found, key=lambda p: (-1 if p[1] is None else p[1], reason_rank(p[0])))


@SETTINGS
@given(cases(max_size=6))
def test_core_problems_are_the_plain_oracles(case):
    fmt = format_from(**case.kwargs)
    texts = [json_text(value, raw) for value, raw in zip(case.values, case.raw)]
    codes = check_batch(pa.array(texts, pa.string()), **case.kwargs).to_pylist()
    for value, raw, text, code in zip(case.values, case.raw, texts, codes):
        found = problems_of(value, fmt)
        assert first_reason(p.code for p in found) == code == first_problem(value, **case.kwargs)
        assert location_of(value, code, fmt) == next((p.message for p in found if p.code == code), None)
        assert_sound_and_complete(value, fmt)
        if not raw and plain.nesting_depth(json.dumps(value)) < plain.SURELY_READ:
            assert found == plain_sites(value, **case.kwargs)
        assert problems_of(text, fmt) == found
    listed = problems_array(pa.array(texts, pa.string()), fmt).to_pylist()
    assert [first_reason(p["code"] for p in row) for row in listed] == codes
    located_ = locate_array(pa.array(texts, pa.string()), pa.array(codes, pa.string()), fmt).to_pylist()
    assert located_ == [
        next((p["message"] for p in row if p["code"] == c), None) for row, c in zip(listed, codes)
    ]


OPTIONS = [
    {},
    {"tools": True},
    {"tools": True, "first_role": "user", "last_role": "assistant"},
    {"harmony": True},
    {"thinking_key": "reasoning", "role_map": {"bot": "assistant", "human": "user"}},
    {"sharegpt": True, "tools": True},
    {"profile": "sample"},
    {"profile": "sample", "alternate": True, "allow_empty": False},
    {"profile": "openai"},
    {"profile": "together"},
    {"profile": "torchtune"},
    {"legacy_functions": True},
    {
        "min_messages": 2,
        "require_roles": ["assistant"],
        "content_types": "text",
        "weight_key": "weight",
        "allowed_keys": ["name"],
    },
]

ROLES = [
    "system",
    "user",
    "assistant",
    "tool",
    "developer",
    "function",
    "bot",
    "human",
    "gpt",
    "observation",
    None,
    5,
]
CONTENTS = [
    "Hi",
    "",
    " ",
    None,
    ...,
    5,
    [],
    [{"type": "text", "text": ""}],
    [{"type": "image"}],
    [{"type": "text", "text": "x"}],
    {"text": "x"},
]
EXTRAS = st.fixed_dictionaries(
    {},
    optional={
        "tool_calls": st.sampled_from(
            [None, [], [call("f", id="c1")], [call("g")], [call("f"), call("g")], "f()", [{"function": {}}]]
        ),
        "tool_call_id": st.sampled_from(["c1", "c2", 7]),
        "name": st.sampled_from(["f", "g"]),
        "thinking": st.sampled_from(["hm", 5, None]),
        "reasoning": st.sampled_from(["hm", 5]),
        "weight": st.sampled_from([0, 1, 2, True, 1.0, None]),
        "function_call": st.sampled_from([{"name": "f"}, {"arguments": "{}"}, "f", None]),
        "foo": st.sampled_from([1, None]),
    },
)


@st.composite
def option_messages(draw, sharegpt):
    """Mostly plain messages (so that the later rules are reached), some odd in one way or more."""
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from(["Hi", 3, None, ["x"]]))
    role_key, content_key = ("from", "value") if sharegpt else ("role", "content")
    message = draw(EXTRAS) if draw(st.booleans()) else {}
    plain_roles = ["human", "gpt", "observation"] if sharegpt else ["system", "user", "assistant", "tool"]
    odd_roles = [*ROLES, "function_call"] if sharegpt else ROLES
    role = draw(st.sampled_from(plain_roles if draw(st.integers(0, 3)) else odd_roles))
    if role is not None or draw(st.booleans()):
        message[role_key] = role
    content = draw(st.sampled_from(CONTENTS)) if draw(st.integers(0, 3)) == 0 else "Hi"
    if content is not ...:
        message[content_key] = content
    if sharegpt and role == "function_call" and draw(st.booleans()):
        message[content_key] = draw(
            st.sampled_from(['{"name": "f", "arguments": {}}', '[{"name": "g", "arguments": "{}"}]'])
        )
    return message


@st.composite
def option_cases(draw):
    options = draw(st.sampled_from(OPTIONS))
    fmt = format_from(**options)
    part = draw(st.sampled_from(PARTS))
    declared = draw(st.sampled_from([None, frozenset({"f"}), BAD])) if fmt.tools else None
    images = draw(st.sampled_from([None, 0, 1, BAD]))
    value = draw(st.lists(option_messages(fmt.sharegpt), max_size=6))
    if fmt.sharegpt and draw(st.booleans()):
        value = {"conversations": value}
    return options, fmt, part, declared, images, value


@SETTINGS
@given(option_cases())
def test_options_first_problem_is_the_judges_code(drawn):
    options, fmt, part, declared, images, value = drawn
    read = read_value(value, fmt)
    code = judge(
        read.roles,
        read.contents,
        fmt,
        blank_checker(fmt.text_key),
        read.extras,
        part=part,
        declared=declared,
        images=images,
    )
    found = problems_of(value, fmt, part=part, declared=declared, images=images)
    assert first_reason(p.code for p in found) == code
    index = location_of(value, code, fmt, part=part, declared=declared, images=images)
    assert index == next((p.message for p in found if p.code == code), None)
    no_turn = code == "first_role" and ("first_role", None) in found
    assert (index is None) == (code is None or code in WHOLE_VALUE_CODES or no_turn)
    assert_sound_and_complete(value, fmt, part, declared, images)
    assert problems_of(json.dumps(value), fmt, part=part, declared=declared, images=images) == found
    if part == WHOLE and declared is None and images is None:
        assert first_reason(p.code for p in found) == first_problem(value, **options)
        assert check_batch(pa.array([json.dumps(value)]), **options).to_pylist() == [code]
