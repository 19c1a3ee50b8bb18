"""The reference check of one value (`first_problem`): every code, parameter and resolution.

Labelled examples, one list per code, fed to `pytest.mark.parametrize` (as in trl's
tests/test_data_utils.py). Each example is `(label, value, kwargs, expected code)`.
The examples are the ground truth: `first_problem`, `check_batch` and the plain
reference (tests/plain_reference.py) must all give their code.
"""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from chatgate.rules import DEFAULT_ROLES, REASONS, ChatFormat, check_batch, first_problem, phrase

try:
    from plain_reference import CODES as PLAIN_CODES
    from plain_reference import TRAINER_OPTIONS, plain_problem
    from rule_examples import msg
except ImportError:  # tests/ imported as a package
    from tests.plain_reference import CODES as PLAIN_CODES
    from tests.plain_reference import TRAINER_OPTIONS, plain_problem
    from tests.rule_examples import msg


USER = msg("user", "Hi!")
ASSISTANT = msg("assistant", "Hello! How can I help?")
SYSTEM = msg("system", "Be brief.")
CHAT = [USER, ASSISTANT]

# Unicode whitespace that `str.strip()` removes (not only ASCII).
UNICODE_BLANK = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
)


def examples(*rows):
    """Labelled rows as pytest params, the label as the test id."""
    return [pytest.param(value, kwargs, code, id=label) for label, value, kwargs, code in rows]


PASSING = examples(
    ("user-assistant", CHAT, {}, None),
    ("system-user-assistant", [SYSTEM, USER, ASSISTANT], {}, None),
    ("one-user-message", [USER], {}, None),
    ("ends-with-user", [USER, ASSISTANT, msg("user", "More?")], {}, None),
    ("starts-with-assistant", [ASSISTANT, USER], {}, None),
    ("lone-system", [SYSTEM], {}, None),
    ("json-text-of-list", json.dumps(CHAT), {}, None),
    ("json-bytes-of-list", json.dumps(CHAT).encode(), {}, None),
    ("json-object-with-messages", json.dumps({"messages": CHAT}), {}, None),
    (
        "json-object-other-keys-ignored",
        json.dumps({"id": 7, "messages": CHAT, "source": None, "tools": [{"x": [1]}]}),
        {},
        None,
    ),
    ("native-mapping", {"messages": CHAT, "id": 1}, {}, None),
    ("tuple-of-messages", tuple(CHAT), {}, None),
    ("mapping-holding-tuple", {"messages": tuple(CHAT)}, {}, None),
    ("numpy-object-array", np.array(CHAT, dtype=object), {}, None),
    (
        "extra-keys-ignored",
        [
            msg("user", "Hi", name="ann", thinking=""),
            msg("assistant", "Yo", tool_calls=[{"id": 1}]),
        ],
        {},
        None,
    ),
    ("extra-key-null", [msg("user", "Hi", name=None)], {}, None),
    ("non-string-content-is-content", [msg("user", 0), msg("assistant", False)], {}, None),
    ("object-content-is-content", [msg("user", {"text": ""})], {}, None),
    (
        "content-parts-with-text",
        [msg("user", [{"type": "text", "text": "What's here?"}])],
        {},
        None,
    ),
    ("content-parts-image-only", [msg("user", [{"type": "image"}])], {}, None),
    (
        "content-parts-blank-text-and-image",
        [
            msg(
                "user",
                [{"type": "text", "text": ""}, {"type": "image_url", "image_url": {"url": "u"}}],
            )
        ],
        {},
        None,
    ),
    ("content-parts-non-mapping-part", [msg("user", ["look"])], {}, None),
    ("zero-width-space-is-not-whitespace", [msg("user", "\u200b")], {}, None),
    ("json-escaped-keys", '[{"r\\u006fle": "user", "content": "x"}]', {}, None),
    ("json-surrounding-whitespace", "  \n" + json.dumps(CHAT) + "\t ", {}, None),
    ("json-duplicate-key-last-wins", '[{"role": "bot", "role": "user", "content": "x"}]', {}, None),
    (
        "huge-integer-in-extra-key",
        '[{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}]",
        {},
        None,
    ),
    ("huge-float-in-extra-key", '[{"role": "user", "content": "x", "n": -1e400}]', {}, None),
)

NOT_MESSAGES = examples(
    ("none", None, {}, "not_messages"),
    ("nan", float("nan"), {}, "not_messages"),
    ("numpy-nan", np.nan, {}, "not_messages"),
    ("numpy-float32-nan", np.float32("nan"), {}, "not_messages"),
    ("pandas-na", pd.NA, {}, "not_messages"),
    ("pandas-nat", pd.NaT, {}, "not_messages"),
    ("invalid-json", '[{"role": "user", "content": "x"}', {}, "not_messages"),
    ("empty-text", "", {}, "not_messages"),
    ("blank-text", "   ", {}, "not_messages"),
    ("plain-text", "Hello there", {}, "not_messages"),
    ("json-number", "42", {}, "not_messages"),
    ("json-true", "true", {}, "not_messages"),
    ("json-null-text-is-a-value", "null", {}, "not_messages"),
    ("json-null-text-even-with-na_pass", "null", {"na_pass": True}, "not_messages"),
    ("json-string", '"hello"', {}, "not_messages"),
    ("json-string-holding-json", json.dumps(json.dumps(CHAT)), {}, "not_messages"),
    ("json-object-without-messages", json.dumps({"conversation": CHAT}), {}, "not_messages"),
    (
        "json-object-messages-is-string",
        json.dumps({"messages": json.dumps(CHAT)}),
        {},
        "not_messages",
    ),
    ("json-object-messages-is-object", json.dumps({"messages": USER}), {}, "not_messages"),
    ("json-object-messages-is-null", '{"messages": null}', {}, "not_messages"),
    ("json-empty-object", "{}", {}, "not_messages"),
    ("json-nan-literal", '[{"role": "user", "content": NaN}]', {}, "not_messages"),
    (
        "json-infinity-literal",
        '[{"role": "user", "content": "x", "n": Infinity}]',
        {},
        "not_messages",
    ),
    ("json-trailing-garbage", json.dumps(CHAT) + " x", {}, "not_messages"),
    ("json-trailing-comma", '[{"role": "user", "content": "x"},]', {}, "not_messages"),
    ("json-single-quotes", "[{'role': 'user', 'content': 'x'}]", {}, "not_messages"),
    ("json-byte-order-mark", "\ufeff" + json.dumps(CHAT), {}, "not_messages"),
    ("invalid-utf8-bytes", b'[{"role": "user", "content": "\xff"}]', {}, "not_messages"),
    (
        "json-lone-surrogate",
        '[{"role": "user", "content": "x", "n": "\\ud800"}]',
        {},
        "not_messages",
    ),
    ("json-raw-control-character", '[{"role": "user", "content": "a\x01b"}]', {}, "not_messages"),
    ("json-deep-nesting", "[" * 100_000 + "]" * 100_000, {}, "not_messages"),
    ("native-int", 42, {}, "not_messages"),
    ("native-mapping-without-messages", {"conversation": CHAT}, {}, "not_messages"),
    ("native-mapping-messages-none", {"messages": None}, {}, "not_messages"),
    ("native-mapping-messages-string", {"messages": json.dumps(CHAT)}, {}, "not_messages"),
    ("native-set", {"user"}, {}, "not_messages"),
    ("zero-dim-numpy-array", np.array(5), {}, "not_messages"),
)

NO_MESSAGES = examples(
    ("empty-list", [], {}, "no_messages"),
    ("empty-tuple", (), {}, "no_messages"),
    ("empty-numpy-array", np.array([], dtype=object), {}, "no_messages"),
    ("json-empty-list", "[]", {}, "no_messages"),
    ("json-object-empty-messages", '{"messages": [], "id": 1}', {}, "no_messages"),
    ("native-mapping-empty-messages", {"messages": []}, {}, "no_messages"),
)

BAD_MESSAGE = examples(
    ("message-is-string", [USER, "Hello"], {}, "bad_message"),
    ("message-is-number", [1], {}, "bad_message"),
    ("message-is-null", [USER, None], {}, "bad_message"),
    ("message-is-list", [["user", "Hi"]], {}, "bad_message"),
    ("message-without-role", [{"content": "Hi"}], {}, "bad_message"),
    ("empty-message", [{}], {}, "bad_message"),
    ("role-is-null", [msg(None)], {}, "bad_message"),
    ("role-is-number", [msg(1)], {}, "bad_message"),
    ("role-is-list", [msg(["user"])], {}, "bad_message"),
    ("role-is-bytes", [msg(b"user")], {}, "bad_message"),
    ("role-is-pandas-na", [msg(pd.NA)], {}, "bad_message"),
    ("json-role-null", '[{"role": null, "content": "x"}]', {}, "bad_message"),
    ("json-role-number", '[{"role": 3, "content": "x"}]', {}, "bad_message"),
    ("json-message-is-string", '["user: hi"]', {}, "bad_message"),
    (
        "json-duplicate-role-last-not-string",
        '[{"role": "user", "role": 5, "content": "x"}]',
        {},
        "bad_message",
    ),
    ("role-under-another-key", [msg("user")], {"role_key": "from"}, "bad_message"),
)

UNKNOWN_ROLE = examples(
    ("bot", [USER, msg("bot")], {}, "unknown_role"),
    ("case-sensitive", [msg("User")], {}, "unknown_role"),
    ("no-trimming", [msg(" user")], {}, "unknown_role"),
    ("empty-string-role", [msg("")], {}, "unknown_role"),
    ("system-not-in-roles", [SYSTEM, USER], {"roles": ["user", "assistant"]}, "unknown_role"),
    ("tool-not-in-default-roles", [USER, msg("tool")], {}, "unknown_role"),
)

SYSTEM_POSITION = examples(
    ("system-second", [USER, SYSTEM, ASSISTANT], {}, "system_position"),
    ("system-last", [USER, ASSISTANT, SYSTEM], {}, "system_position"),
    ("two-leading-systems", [SYSTEM, SYSTEM, USER], {}, "system_position"),
)

FIRST_ROLE = examples(
    ("first-turn-assistant", [ASSISTANT, USER], {"first_role": "user"}, "first_role"),
    ("first-turn-after-system", [SYSTEM, ASSISTANT], {"first_role": "user"}, "first_role"),
    ("lone-system-has-no-turn", [SYSTEM], {"first_role": "user"}, "first_role"),
    ("first-turn-user-passes", [SYSTEM, USER], {"first_role": "user"}, None),
    ("first-role-assistant-passes", [ASSISTANT], {"first_role": "assistant"}, None),
)

NOT_ALTERNATING = examples(
    ("user-user", [USER, msg("user", "Hello?")], {}, "not_alternating"),
    ("assistant-assistant", [USER, ASSISTANT, ASSISTANT], {}, "not_alternating"),
    ("after-system", [SYSTEM, USER, USER], {}, "not_alternating"),
    ("system-is-not-a-turn", [SYSTEM, USER, ASSISTANT, USER], {}, None),
)

LAST_ROLE = examples(
    ("ends-with-user", [USER], {"last_role": "assistant"}, "last_role"),
    ("lone-system-is-the-last-message", [SYSTEM], {"last_role": "assistant"}, "last_role"),
    ("lone-system-last-role-system", [SYSTEM], {"last_role": "system"}, None),
    ("ends-with-assistant", [SYSTEM, USER, ASSISTANT], {"last_role": "assistant"}, None),
)

EMPTY_CONTENT = examples(
    ("empty-string", [USER, msg("assistant", "")], {}, "empty_content"),
    ("spaces", [msg("user", "   ")], {}, "empty_content"),
    ("unicode-whitespace", [msg("user", UNICODE_BLANK)], {}, "empty_content"),
    ("null", [msg("user", None)], {}, "empty_content"),
    ("nan", [msg("user", float("nan"))], {}, "empty_content"),
    ("pandas-na", [msg("user", pd.NA)], {}, "empty_content"),
    ("missing-key", [msg("user", ...)], {}, "empty_content"),
    ("empty-parts", [msg("user", [])], {}, "empty_content"),
    (
        "only-empty-text-parts",
        [msg("user", [{"type": "text", "text": ""}, {"type": "text", "text": " \n"}])],
        {},
        "empty_content",
    ),
    ("text-part-without-text", [msg("user", [{"type": "text"}])], {}, "empty_content"),
    ("text-part-null-text", [msg("user", [{"type": "text", "text": None}])], {}, "empty_content"),
    ("empty-numpy-parts", [msg("user", np.array([], dtype=object))], {}, "empty_content"),
    ("json-unicode-whitespace", json.dumps([msg("user", UNICODE_BLANK)]), {}, "empty_content"),
    ("json-null", '[{"role": "user", "content": null}]', {}, "empty_content"),
    ("json-missing", '[{"role": "user"}]', {}, "empty_content"),
    ("content-under-another-key", [msg("user", "Hi")], {"content_key": "value"}, "empty_content"),
)

# The first code in REASONS' order wins, wherever in the conversation it applies.
ORDER = examples(
    ("unknown_role-before-empty_content", [msg("user", ""), msg("bot", "x")], {}, "unknown_role"),
    (
        "bad_message-later-beats-unknown_role-earlier",
        [msg("bot"), {"content": "x"}],
        {},
        "bad_message",
    ),
    ("unknown_role-before-system_position", [USER, SYSTEM, msg("bot")], {}, "unknown_role"),
    (
        "system_position-before-first_role",
        [ASSISTANT, SYSTEM],
        {"first_role": "user"},
        "system_position",
    ),
    ("system_position-before-not_alternating", [USER, USER, SYSTEM], {}, "system_position"),
    (
        "first_role-before-not_alternating",
        [ASSISTANT, ASSISTANT],
        {"first_role": "user"},
        "first_role",
    ),
    (
        "not_alternating-before-last_role",
        [USER, USER],
        {"last_role": "assistant"},
        "not_alternating",
    ),
    ("last_role-before-empty_content", [msg("user", "")], {"last_role": "assistant"}, "last_role"),
    (
        "no_messages-before-everything",
        [],
        {"first_role": "user", "last_role": "assistant"},
        "no_messages",
    ),
)

PARAMETERS = examples(
    # roles=
    ("roles-custom", [msg("human"), msg("gpt")], {"roles": ("human", "gpt")}, None),
    ("roles-custom-refuses-user", [USER], {"roles": ["human", "gpt"]}, "unknown_role"),
    ("roles-empty-string-allowed", [msg("")], {"roles": ["", "user"]}, None),
    (
        "roles-without-system-no-system-rule",
        [msg("user"), msg("assistant")],
        {"roles": ["user", "assistant"]},
        None,
    ),
    (
        "roles-with-tool",
        [USER, msg("assistant"), msg("tool"), msg("assistant")],
        {"roles": [*DEFAULT_ROLES, "tool"]},
        None,
    ),
    # alternate=
    (
        "alternate-false-allows-repeats",
        [USER, USER, ASSISTANT, ASSISTANT],
        {"alternate": False},
        None,
    ),
    (
        "alternate-false-still-checks-system",
        [USER, SYSTEM],
        {"alternate": False},
        "system_position",
    ),
    # first_role= / last_role=
    (
        "first-and-last-role",
        [SYSTEM, USER, ASSISTANT],
        {"first_role": "user", "last_role": "assistant"},
        None,
    ),
    # allow_empty=
    (
        "allow_empty-passes-blank",
        [msg("user", " "), msg("assistant", ...)],
        {"allow_empty": True},
        None,
    ),
    ("allow_empty-passes-empty-parts", [msg("user", [])], {"allow_empty": True}, None),
    ("allow_empty-still-checks-roles", [msg("bot", "")], {"allow_empty": True}, "unknown_role"),
    # role_key= / content_key=
    (
        "sharegpt-keys",
        [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}],
        {"roles": ["system", "human", "gpt"], "role_key": "from", "content_key": "value"},
        None,
    ),
    (
        "sharegpt-keys-blank",
        [{"from": "user", "value": ""}],
        {"role_key": "from", "content_key": "value"},
        "empty_content",
    ),
    (
        "keys-swapped",
        [{"role": "x", "content": "user"}],
        {"role_key": "content", "content_key": "role"},
        None,
    ),
    # na_pass=
    ("na_pass-none", None, {"na_pass": True}, None),
    ("na_pass-nan", float("nan"), {"na_pass": True}, None),
    ("na_pass-numpy-float32-nan", np.float32("nan"), {"na_pass": True}, None),
    ("na_pass-decimal-nan", Decimal("NaN"), {"na_pass": True}, None),
    ("na_pass-pandas-na", pd.NA, {"na_pass": True}, None),
    ("na_pass-pandas-nat", pd.NaT, {"na_pass": True}, None),
    ("na_pass-does-not-pass-bad-values", "oops", {"na_pass": True}, "not_messages"),
    ("na_pass-does-not-pass-empty-list", [], {"na_pass": True}, "no_messages"),
)

ALL = (
    PASSING
    + NOT_MESSAGES
    + NO_MESSAGES
    + BAD_MESSAGE
    + UNKNOWN_ROLE
    + SYSTEM_POSITION
    + FIRST_ROLE
    + NOT_ALTERNATING
    + LAST_ROLE
    + EMPTY_CONTENT
    + ORDER
    + PARAMETERS
)


@pytest.mark.parametrize("value, kwargs, expected", ALL)
def test_first_problem(value, kwargs, expected):
    assert first_problem(value, **kwargs) == expected


@pytest.mark.parametrize("value, kwargs, expected", ALL)
def test_plain_reference(value, kwargs, expected):
    assert plain_problem(value, **kwargs) == expected


def _as_json_text(value):
    """The JSON text of an example value, or None when it has none (NaN, sets, ...)."""
    if isinstance(value, (str, bytes)):
        return value if isinstance(value, str) else None
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None


JSON_EXAMPLES = [
    p for p in ALL if p.values[0] is not None and _as_json_text(p.values[0]) is not None
]


@pytest.mark.parametrize("value, kwargs, expected", JSON_EXAMPLES)
def test_check_batch_agrees_on_json_text(value, kwargs, expected):
    text = _as_json_text(value)
    assert first_problem(text, **kwargs) == expected
    assert plain_problem(text, **kwargs) == expected
    codes = check_batch(pa.array([text, text]), **kwargs)
    assert codes.to_pylist() == [expected, expected]
    binary = check_batch(pa.array([text.encode("utf-8", "surrogatepass")], pa.binary()), **kwargs)
    assert binary.to_pylist() == [expected]


def test_every_reason_has_a_failing_example():
    codes = {p.values[2] for p in ALL}
    assert set(REASONS) <= codes


def test_reasons_are_in_the_documented_order():
    assert REASONS == (
        "not_messages",
        "no_messages",
        "bad_message",
        "unknown_role",
        "system_position",
        "first_role",
        "not_alternating",
        "last_role",
        "empty_content",
    )


# --- The seed's example table -------------------------------------------------

SEED_ROWS = [
    '[{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! How can I help?"}]',
    '[{"role": "user", "content": "Hi!"}, {"role": "user", "content": "Hello?"}]',
    (
        '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}, '
        '{"role": "assistant", "content": "Paris."}]'
    ),
    '[{"role": "user", "content": "What is 2 + 2?"}, {"role": "bot", "content": "4"}]',
]


def test_seed_example():
    codes = [first_problem(row, last_role="assistant") for row in SEED_ROWS]
    assert codes == [None, "not_alternating", None, "unknown_role"]
    assert [plain_problem(row, last_role="assistant") for row in SEED_ROWS] == codes


# --- Native values as pandas gives them for Arrow list columns ----------------


def _pandas_values(values, type=None):
    """The Python values pandas holds for an Arrow column of `values` (NumPy object arrays)."""
    return pa.table({"c": pa.array(values, type)}).to_pandas()["c"].tolist()


def test_pandas_list_of_struct_values_are_numpy_arrays():
    values = _pandas_values([CHAT, [USER, USER], [], None])
    assert isinstance(values[0], np.ndarray)
    assert [first_problem(v) for v in values] == [
        None,
        "not_alternating",
        "no_messages",
        "not_messages",
    ]


def test_pandas_values_with_missing_fields():
    values = _pandas_values([[USER, {"role": "assistant"}], [{"content": "x"}], [msg("bot", "")]])
    assert [first_problem(v) for v in values] == ["empty_content", "bad_message", "unknown_role"]


def test_pandas_values_with_content_parts():
    values = _pandas_values(
        [
            [msg("user", [{"type": "text", "text": "Hi"}])],
            [msg("user", [{"type": "text", "text": " "}])],
            [msg("user", [{"type": "image", "text": None}])],
            [msg("user", [])],
        ]
    )
    assert isinstance(values[0][0]["content"], np.ndarray)
    assert [first_problem(v) for v in values] == [None, "empty_content", None, "empty_content"]


def test_pandas_struct_with_messages():
    values = _pandas_values([{"messages": CHAT, "id": 1}, {"messages": None, "id": 2}, None])
    assert [first_problem(v) for v in values] == [None, "not_messages", "not_messages"]
    assert [first_problem(v, na_pass=True) for v in values] == [None, "not_messages", None]


def test_pandas_missing_values():
    values = pd.Series(['[{"role": "user", "content": "x"}]', None, np.nan, pd.NA], dtype=object)
    assert [first_problem(v) for v in values] == [
        None,
        "not_messages",
        "not_messages",
        "not_messages",
    ]
    assert [first_problem(v, na_pass=True) for v in values] == [None, None, None, None]


def test_pandas_string_dtype_missing_value():
    values = pd.array(['[{"role": "user", "content": "x"}]', None], dtype="string")
    assert [first_problem(v, na_pass=True) for v in values] == [None, None]
    assert first_problem(values[1]) == "not_messages"


# --- Argument errors: raised at call time, before any value is read -----------

BAD_ARGUMENTS = [
    pytest.param({"roles": "user"}, TypeError, id="roles-bare-string"),
    pytest.param({"roles": b"user"}, TypeError, id="roles-bytes"),
    pytest.param({"roles": ["user", 1]}, TypeError, id="roles-with-int"),
    pytest.param({"roles": ["user", None]}, TypeError, id="roles-with-none"),
    pytest.param({"roles": None}, TypeError, id="roles-none"),
    pytest.param({"roles": 3}, TypeError, id="roles-int"),
    pytest.param({"roles": {"user": 1}}, TypeError, id="roles-mapping"),
    pytest.param({"role_key": 1}, TypeError, id="role_key-int"),
    pytest.param({"role_key": None}, TypeError, id="role_key-none"),
    pytest.param({"content_key": b"content"}, TypeError, id="content_key-bytes"),
    pytest.param({"content_key": ["content"]}, TypeError, id="content_key-list"),
    pytest.param({"alternate": "yes"}, TypeError, id="alternate-string"),
    pytest.param({"allow_empty": None}, TypeError, id="allow_empty-none"),
    pytest.param({"na_pass": 1}, TypeError, id="na_pass-int"),
    pytest.param({"first_role": 1}, TypeError, id="first_role-int"),
    pytest.param({"roles": []}, ValueError, id="roles-empty-list"),
    pytest.param({"roles": ()}, ValueError, id="roles-empty-tuple"),
    pytest.param({"first_role": "bot"}, ValueError, id="first_role-not-in-roles"),
    pytest.param({"last_role": "bot"}, ValueError, id="last_role-not-in-roles"),
    pytest.param({"last_role": "User"}, ValueError, id="last_role-case-sensitive"),
    pytest.param(
        {"roles": ["user", "assistant"], "first_role": "system"},
        ValueError,
        id="first_role-not-in-custom-roles",
    ),
    pytest.param({"first_role": ""}, ValueError, id="first_role-empty-string"),
    pytest.param({"content_key": "role"}, ValueError, id="same-role-and-content-key"),
]


@pytest.mark.parametrize("kwargs, error", BAD_ARGUMENTS)
@pytest.mark.parametrize("value", [None, CHAT, "not json"], ids=["none", "chat", "garbage"])
def test_first_problem_bad_arguments(kwargs, error, value):
    with pytest.raises(error):
        first_problem(value, **{"na_pass": True, **kwargs})


@pytest.mark.parametrize("kwargs, error", BAD_ARGUMENTS)
def test_check_batch_bad_arguments_on_empty_array(kwargs, error):
    with pytest.raises(error):
        check_batch(pa.array([], pa.string()), **kwargs)


@pytest.mark.parametrize("kwargs, error", BAD_ARGUMENTS)
def test_chat_format_bad_arguments(kwargs, error):
    with pytest.raises(error):
        ChatFormat(**kwargs)


def test_roles_bare_string_message_suggests_a_list():
    with pytest.raises(TypeError, match=r"\['user'\]"):
        ChatFormat(roles="user")


def test_chat_format_roles_become_a_tuple():
    fmt = ChatFormat(roles=["user", "assistant"], last_role="assistant")
    assert fmt.roles == ("user", "assistant")
    assert not fmt.has_system
    assert fmt.as_dict()["roles"] == ["user", "assistant"]
    assert hash(fmt) == hash(ChatFormat(roles=("user", "assistant"), last_role="assistant"))


# --- Note phrases ---------------------------------------------------------------


def test_phrase_singular_matches_seed():
    assert phrase("not_alternating", 1) == "1 has roles that don't alternate (`not_alternating`)"
    assert phrase("unknown_role", 1) == "1 has a role that isn't allowed (`unknown_role`)"


def test_phrase_plural():
    assert phrase("empty_content", 3) == "3 have a message with no content (`empty_content`)"


@pytest.mark.parametrize("reason", REASONS)
def test_every_reason_has_a_phrase(reason):
    # Each phrase is written out in tests/test_validate_reports.py (CODE_PHRASES).
    assert phrase(reason, 1) != f"1 fails (`{reason}`)"
    assert phrase(reason, 2).startswith("2 ")


def test_unknown_code_phrase():
    assert phrase("made_up", 2) == "2 fail (`made_up`)"


# --- The trainers' options: the plain reference on the labelled examples ---------------------


def _plain_examples():
    """The labelled chat examples of the trainers' options and the image rules whose options the
    plain reference knows (no profile, tool calling, ShareGPT or text_key)."""
    try:
        import test_rules_images as images
        import test_rules_trainers as trainers
    except ImportError:  # tests/ imported as a package
        import tests.test_rules_images as images
        import tests.test_rules_trainers as trainers
    from chatgate.rules.check.options import option_names

    known = set(option_names()[:8]) | set(TRAINER_OPTIONS)
    params = []
    for param in trainers.OPTION_EXAMPLES + images.OPTION_EXAMPLES:
        row, kind, options, expected, _ = param.values
        if kind == "language_modeling" and list(row) == ["messages"] and set(options) <= known:
            params.append(pytest.param(row["messages"], options, expected, id=param.id))
    return params


PLAIN_TRAINER_EXAMPLES = _plain_examples()


@pytest.mark.parametrize("value, kwargs, expected", PLAIN_TRAINER_EXAMPLES)
def test_plain_reference_on_the_trainers_examples(value, kwargs, expected):
    assert plain_problem(value, **kwargs) == expected
    assert plain_problem(json.dumps(value), **kwargs) == expected
    assert first_problem(value, **kwargs) == expected


def test_the_plain_reference_knows_every_code_of_its_options():
    codes = {p.values[2] for p in PLAIN_TRAINER_EXAMPLES}
    assert set(PLAIN_CODES) - {"not_messages", "no_messages"} <= codes | set(REASONS)
    assert len(PLAIN_TRAINER_EXAMPLES) >= 70
