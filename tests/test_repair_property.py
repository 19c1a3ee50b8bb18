"""Properties of `repair`, for random values and options: passing values (and failing ones no repair
changes) come back as the same object; repair is idempotent and deterministic; the reported code
is the check's code of the repaired value; JSON text and native values give the same result; the
"safe" repairs keep every text of the conversation; a repair keeps the problems it says it keeps."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import REPAIRS, first_problem, problems, repair, repair_names
from chatgate.rules.base.values import parse_json
from chatgate.rules.repairs.fixes import DEFAULT_ROLE_MAP, _opens_a_string
from chatgate.rules.repairs.repair import kept_by_all

try:
    from strategies import cases, json_text
except ImportError:  # tests/ imported as a package
    from tests.strategies import cases, json_text

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

NAMES = [r.name for r in REPAIRS]
NEEDS = {r.name: r.needs for r in REPAIRS}


@st.composite
def repair_sets(draw, options: dict):
    """A preset, or a list of repairs whose options are set."""
    named = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4))
    usable = [n for n in named if NEEDS[n] is None or options.get(NEEDS[n]) is not None]
    return draw(st.sampled_from(["safe", "all", usable or "safe"]))


def assert_guarantees(value, repairs, options):
    """The guarantees of one repair, whatever form the value has; returns the result."""
    before = copy.deepcopy(value)
    got = repair(value, repairs, **options)
    assert _same(value, before), "the input was changed in place"
    code = first_problem(value, **options)
    if code is None or not got.applied:
        assert got.value is value and got.applied == [] and got.reason == code
    assert got.applied == [n for n in NAMES if n in got.applied], "applied out of order"
    assert got.reason == first_problem(got.value, **options)
    again = repair(got.value, repairs, **options)
    assert again.value is got.value and again.applied == [] and again.reason == got.reason, "not idempotent"
    twice = repair(copy.deepcopy(value), repairs, **options)
    assert _same(twice.value, got.value) and twice[1:] == got[1:], "not deterministic"
    return got


def _same(a, b) -> bool:
    """Equal, and of the same JSON text (so that 1 and True, or 1 and 1.0, differ)."""
    return a == b and json.dumps(a, sort_keys=False, default=str) == json.dumps(
        b, sort_keys=False, default=str
    )


def assert_forms_agree(value, repairs, options):
    """The native value and its JSON text give the same repairs, code and value."""
    native = assert_guarantees(value, repairs, options)
    text = json.dumps(value, ensure_ascii=False)
    from_text = assert_guarantees(text, repairs, options)
    assert from_text.applied == native.applied and from_text.reason == native.reason
    if native.applied:
        assert json.loads(from_text.value) == json.loads(json.dumps(native.value))


@SETTINGS
@given(cases(max_size=6), st.data())
def test_guarantees_on_any_value(case, data):
    """Values of every kind (garbage included) under the core options."""
    repairs = data.draw(repair_sets(case.kwargs))
    for value, raw in zip(case.values, case.raw):
        if raw or value is None:
            assert_guarantees(json_text(value, raw), repairs, case.kwargs)
        else:
            assert_forms_agree(value, repairs, case.kwargs)


ROLES = ["system", "user", "assistant", "tool", "narrator", *DEFAULT_ROLE_MAP]
CALL = [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]
PART = st.sampled_from([{"type": "text", "text": "p"}, {"type": "text", "text": " "}, {"type": "image"}])
CONTENTS = st.one_of(
    st.sampled_from(["a", "b", "c", "", " ", None, ...]),
    st.lists(PART, max_size=2),
)


@st.composite
def defective(draw):
    """A conversation with the defects the repairs are for: aliases, blanks, misplaced system
    messages, repeated turns, tool calls and answers, text and parts side by side."""
    out = []
    for i in range(draw(st.integers(0, 7))):
        message = {"role": draw(st.sampled_from(ROLES))}
        content = draw(CONTENTS)
        if content is not ...:
            message["content"] = content
        if message["role"] == "assistant" and draw(st.integers(0, 4)) == 0:
            message["tool_calls"] = CALL
        if draw(st.integers(0, 5)) == 0:
            message["name"] = f"n{i}"
        out.append(message)
    return out


@st.composite
def options(draw):
    tools = draw(st.booleans())
    roles = ["system", "user", "assistant"] + (["narrator"] if draw(st.booleans()) else [])
    out = {
        "roles": roles,
        "tools": tools,
        "alternate": draw(st.booleans()),
        "allow_empty": draw(st.booleans()),
        "first_role": draw(st.none() | st.sampled_from(roles)),
        "last_role": draw(st.none() | st.sampled_from(roles)),
        "harmony": draw(st.booleans()),
    }
    if draw(st.booleans()):
        out["role_map"] = {"narrator": "assistant"}
    return out


@SETTINGS
@given(defective(), options(), st.data())
def test_guarantees_on_defective_conversations(value, opts, data):
    repairs = data.draw(repair_sets(opts))
    wrapped = {"id": 1, "messages": value}
    assert_forms_agree(value, repairs, opts)
    assert_forms_agree(wrapped, repairs, opts)
    text = json.dumps(value)
    once = assert_guarantees(text, repairs, opts)
    double = assert_guarantees(json.dumps(text), repairs, opts)
    if "decode_text" in repair_names(repairs):
        assert double.applied == ["decode_text", *once.applied]
        assert double.value == once.value and double.reason == once.reason
    else:
        assert double.reason == "not_messages"


UNREAD_MESSAGES = st.sampled_from(["x", 1, None, [], {"content": "a"}, {"role": 1, "content": "a"}, {"role": None}])
"""Messages the check can't read a role of: not a mapping, or no string role."""


@st.composite
def with_unread_messages(draw):
    """A defective conversation, with messages that aren't mappings with a string role among its own."""
    value = draw(defective())
    for _ in range(draw(st.integers(0, 2))):
        value.insert(draw(st.integers(0, len(value))), draw(UNREAD_MESSAGES))
    return value


@st.composite
def forms(draw, value):
    """The value natively, as JSON text, or as JSON text encoded again (for decode_text)."""
    text = json.dumps(value)
    return draw(st.sampled_from([value, text, json.dumps(text)]))


def codes(value, opts) -> set[str]:
    return {p.code for p in problems(value, **opts)}


@pytest.mark.parametrize("chosen", REPAIRS, ids=NAMES)
@settings(SETTINGS, max_examples=120)
@given(with_unread_messages().flatmap(forms), options(), st.none() | st.integers(1, 4), st.sampled_from(ROLES))
def test_a_repair_keeps_the_problems_it_says_it_keeps(chosen, value, opts, min_messages, aim):
    """`Repair.keeps`: a value that has one of those problems before the repair still has it after."""
    opts = {**opts, "min_messages": min_messages}
    if chosen.needs is not None and opts.get(chosen.needs) is None:
        opts[chosen.needs] = aim if aim in opts["roles"] else "user"
    got = repair(value, chosen.name, **opts)
    assert codes(value, opts) & chosen.keeps <= codes(got.value, opts)


@SETTINGS
@given(with_unread_messages().flatmap(forms), options(), st.none() | st.integers(1, 4), st.data())
def test_a_value_whose_code_every_repair_keeps_fails_after_them(value, opts, min_messages, data):
    opts = {**opts, "min_messages": min_messages}
    repairs = data.draw(repair_sets(opts))
    code = first_problem(value, **opts)
    if code in kept_by_all(repair_names(repairs)):
        assert repair(value, repairs, **opts).reason is not None


def test_the_codes_the_safe_repairs_cant_take_away():
    assert kept_by_all(repair_names("safe")) == {"no_messages", "too_few_messages", "bad_message"}
    assert kept_by_all(repair_names("all")) == {"no_messages", "too_few_messages"}
    assert kept_by_all(["decode_text"]) >= {"unknown_role", "empty_content"}
    assert "not_messages" not in kept_by_all(["decode_text"])


@SETTINGS
@given(defective(), options())
def test_safe_repairs_keep_every_text(value, opts):
    """What "safe" promises: no text that isn't blank is lost (it may be joined to another)."""
    got = repair(value, "safe", **opts)
    kept = [m.get("content") for m in got.value]
    for message in value:
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            assert any(isinstance(k, str) and content in k for k in kept)
        elif isinstance(content, list) and any(
            p.get("text", "").strip() or p["type"] == "image" for p in content
        ):
            assert any(isinstance(k, list) and all(p in k for p in content) for k in kept)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
JSON_SPACE = st.sampled_from([" ", "\t", "\n", "\r", "\u00a0", "\ufeff", "\x0b"])


@SETTINGS
@given(
    st.lists(JSON_SPACE, max_size=3).map("".join),
    st.one_of(st.text(max_size=20), JSON_VALUES.map(json.dumps), st.builds(json.dumps, st.text(max_size=20))),
    st.sampled_from([str, bytes, bytearray, memoryview]),
)
def test_decode_text_skips_only_texts_that_cant_be_a_json_string(space, body, kind):
    """The quick test before decoding says no only where decoding would find no string."""
    text = space + body
    value = text if kind is str else kind(text.encode("utf-8", "surrogatepass"))
    if not _opens_a_string(value):
        assert not isinstance(parse_json(value), str)


def test_a_value_in_a_buffer_re_cant_read_is_repaired_as_before():
    strided = memoryview(b'"x"  "')[::2]  # not contiguous: `re` refuses it, the decoder doesn't
    assert repair(strided, "safe") == (strided, [], "not_messages")
