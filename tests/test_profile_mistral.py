"""The `mistral` profile: mistral-finetune's data rules and mistral-common's fine-tuning validator.

Sources read (cited in the profile's declaration, `trainers.profiles.TRAINER_PROFILES`, and in
`trainers.mistral`): mistral-finetune commit 1943535 (`finetune/data/tokenize.py`,
`utils/validate_data.py`) and mistral-common v1.11.7, commit bc022b9
(`protocol/instruct/validator.py`, `MistralRequestValidatorV3` in fine-tuning mode, and its
tests/validation/test_finetuning_validation.py, whose cases are restated here).

Labelled rows (each on the reference, and on Arrow tables of JSON text and of native values),
the README examples of mistral-finetune from the shared corpus, and drawn conversations of tool
calling with Mistral's ids, judged by chatgate and by the plain reference alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chatgate
from chatgate.rules import first_problem, format_from, locate

try:
    from plain_reference import plain_answers
    from rule_examples import A, S, U, assert_example, examples, msg
except ImportError:  # tests/ imported as a package
    from tests.plain_reference import plain_answers
    from tests.rule_examples import A, S, U, assert_example, examples, msg

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "mistral-finetune" / "readme_examples.jsonl"
M = {"profile": "mistral"}
ID1, ID2 = "TX92Jm8Zi", "3XhQnxLsT"


def mcall(name="generate_anagram", arguments='{"word": "listen"}', **extra):
    """A tool call as mistral-finetune's README writes it (arguments as JSON text, an id)."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}, **extra}


def calls(*ids, **call_options):
    return msg("assistant", ..., tool_calls=[mcall(id=i, **call_options) for i in ids])


def answer(call_id=ID1, content='{"anagram": "silent"}', **extra):
    return msg("tool", content, tool_call_id=call_id, **extra)


def row(*messages):
    return {"messages": list(messages)}


MISTRAL_ROWS = examples(
    # mistral-common's fine-tuning cases (tests/validation/test_finetuning_validation.py)
    ("ends-with-assistant", row(U, A), None, M, None),
    ("weight-one", row(U, msg("assistant", "foo", weight=1)), None, M, None),
    ("weight-half", row(U, msg("assistant", "foo", weight=0.5)), None, M, "bad_weight"),
    ("several-weights", row(U, msg("assistant", "a", weight=0), msg("assistant", "b", weight=1)), None, M, None),
    ("ends-with-tool-call-null", row(U, calls(ID1), answer(), calls("null")), None, M, None),
    ("middle-tool-call-null", row(U, calls("null"), answer(), calls("null")), None, M, "mistral_tool_call"),
    ("one-user-message", row(U), None, M, "too_few_messages"),
    ("ends-with-user", row(U, A, U), None, M, "last_role"),
    ("parallel-calls-last", row(U, calls(ID1, ID2)), None, M, None),
    ("parallel-calls-answered", row(U, calls(ID1, ID2), answer(ID1), answer(ID2), A), None, M, None),
    # mistral-common's structure: no alternation asked, a tool after a user refused
    ("user-user", row(U, U, A), None, M, None),
    ("assistant-assistant", row(U, A, A), None, M, None),
    ("tool-after-user", row(U, answer(), A), None, M, "orphan_tool"),
    ("unknown-role", row(msg("bot", "x"), A), None, M, "unknown_role"),
    # the count of answers ("Not the same number of function calls and responses")
    ("one-of-two-answered", row(U, calls(ID1, ID2), answer(ID1), A), None, M, "unanswered_call"),
    ("unanswered-then-user", row(U, calls(ID1), U, A), None, M, "unanswered_call"),
    ("three-answers-two-calls", row(U, calls(ID1, ID2), answer(ID1), answer(ID2), answer(ID1), A), None, M, "orphan_tool"),
    # _parse_tool_calls / V3 ids and names
    ("call-without-id", row(U, msg("assistant", ..., tool_calls=[mcall()])), None, M, "mistral_tool_call"),
    ("call-id-too-short", row(U, calls("abc"), answer("abc"), A), None, M, "mistral_tool_call"),
    ("call-id-punctuation", row(U, calls("call_1234"), answer("call_1234"), A), None, M, "mistral_tool_call"),
    ("arguments-object", row(U, calls(ID1, arguments={"word": "x"}), answer(), A), None, M, "mistral_tool_call", "json"),
    ("function-name-space", row(U, calls(ID1, name="gen anagram"), answer(), A), None, M, "mistral_tool_call"),
    ("tool-without-call-id", row(U, calls(ID1), msg("tool", "x"), A), None, M, "mistral_tool_call"),
    ("tool-bad-name", row(U, calls(ID1), answer(name="a b"), A), None, M, "mistral_tool_call"),
    ("tool-good-name", row(U, calls(ID1), answer(name="generate_anagram"), A), None, M, None),
    # content or tool calls (V3), and "non-function call message must have content"
    ("content-and-calls", row(U, msg("assistant", "Sure.", tool_calls=[mcall(id=ID1)]), answer(), A), None, M,
     "content_or_calls"),
    ("neither-content-nor-calls", row(U, msg("assistant", "")), None, M, "content_or_calls"),
    ("assistant-null-content", row(U, msg("assistant", None)), None, M, "content_or_calls"),
    ("user-without-content", row(msg("user", ...), A), None, M, "content_or_calls"),
    ("user-null-content", row(msg("user", None), A), None, M, "content_or_calls"),
    ("user-empty-content", row(msg("user", ""), A), None, M, None),
    ("system-first", row(S, U, A), None, M, None),
    # the profile is defaults: an option given overrides them, Mistral's own rules stay on
    ("override-last-role", row(U, A, U), None, {**M, "last_role": None}, None),
    ("override-keeps-own-rules", row(U, calls("abc"), answer("abc"), A, U), None, {**M, "last_role": None},
     "mistral_tool_call"),
)


@pytest.mark.parametrize(("row", "kind", "options", "expected", "forms"), MISTRAL_ROWS)
def test_mistral_rows(row, kind, options, expected, forms):
    assert_example(row, kind, options, expected, forms)
    assert {None if a is None else a[0] for a in plain_answers(row, **options)} == {expected}


def test_the_readme_examples_of_mistral_finetune_pass():
    """Every instruct line of mistral-finetune's README (the shared corpus) passes the profile, as
    JSON text and as native values; its pretraining lines hold no messages."""
    lines = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    chats = [line for line in lines if "messages" in line]
    assert len(chats) == 3
    for chat in chats:
        assert first_problem(chat, **M) is None
        assert plain_answers(chat, **M) == {None}
    texts = pa.array([json.dumps(chat["messages"]) for chat in chats])
    assert chatgate.check_batch(texts, **M).to_pylist() == [None] * 3
    native = pa.array([chat["messages"] for chat in chats])
    assert chatgate.check_batch(native, **M).to_pylist() == [None] * 3


def test_the_readme_examples_broken_as_mistral_refuses_them():
    """The function-calling example of the README, broken in the ways mistral-finetune refuses."""
    chat = next(json.loads(line)["messages"] for line in CORPUS.read_text().splitlines() if "tool_calls" in line)
    no_id = json.loads(json.dumps(chat))
    del no_id[2]["tool_calls"][0]["id"]
    both = json.loads(json.dumps(chat))
    both[2]["content"] = "Let me see."
    unanswered = chat[:3] + chat[4:]
    assert [first_problem(c, **M) for c in (no_id, both, unanswered)] == [
        "mistral_tool_call", "content_or_calls", "unanswered_call"
    ]
    assert first_problem(chat, profile="openai") is None  # OpenAI's rules don't ask for them


def test_the_profile_is_its_defaults():
    fmt = format_from(**M)
    assert fmt.roles == ("system", "user", "assistant", "tool")
    assert (fmt.tools, fmt.alternate, fmt.allow_empty, fmt.last_role, fmt.min_messages) == (True, False, True, "assistant", 2)
    assert (fmt.content_types, fmt.weight_key) == ("text_or_parts", "weight")


# --- Drawn conversations, chatgate against the plain reference ------------------------------------

IDS = st.sampled_from([ID1, ID2, "null", "abc", None, 123456789])
NAMES = st.sampled_from(["generate_anagram", "f", "bad name"])
ARGUMENTS = st.sampled_from(['{"word": "race"}', {"word": "race"}])


@st.composite
def mistral_call(draw):
    call = mcall(name=draw(NAMES), arguments=draw(ARGUMENTS))
    ident = draw(IDS)
    if ident is not None:
        call["id"] = ident
    return call


@st.composite
def mistral_chats(draw):
    """Rounds of a user turn, an assistant's calls (with answers, some missing or extra), a reply."""
    out: list = [S] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        out.append(msg("user", draw(st.sampled_from(["Anagram of race?", "", None, ...]))))
        if draw(st.booleans()):
            made = draw(st.lists(mistral_call(), min_size=1, max_size=2))
            content = draw(st.sampled_from([..., None, "", "Let me see."]))
            out.append(msg("assistant", content, tool_calls=made))
            for call in made[: draw(st.integers(0, len(made)))]:
                out.append(answer(call.get("id"), name=draw(st.sampled_from([None, "generate_anagram", "a b"]))))
            if draw(st.integers(0, 3)) == 0:
                out.append(answer(ID1))
        if draw(st.integers(0, 3)):
            out.append(msg("assistant", draw(st.sampled_from(["care", "", None]))))
    return [{k: v for k, v in m.items() if v is not None or k != "name"} for m in out]


SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
OPTIONS = st.fixed_dictionaries({"profile": st.just("mistral")}, optional={"alternate": st.booleans(), "allow_empty": st.booleans()})


@SETTINGS
@given(st.lists(mistral_chats(), min_size=1, max_size=5), OPTIONS)
def test_mistral_agrees_with_the_plain_reference(values, options):
    codes = chatgate.check_batch(pa.array([json.dumps(v) for v in values]), **options).to_pylist()
    for value, code in zip(values, codes):
        got = None if code is None else (code, locate(value, code, **options))
        assert got in (answers := plain_answers(value, **options)), (value, got, answers)


def test_the_drawn_conversations_reach_mistrals_codes():
    seen: set = set()

    @settings(max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(mistral_chats())
    def collect(value):
        seen.update(a and a[0] for a in plain_answers(value, **M))

    collect()
    wanted = {None, "mistral_tool_call", "content_or_calls", "unanswered_call", "orphan_tool", "last_role"}
    assert wanted - seen == set()
