"""Repairs (`chatgate.repair`): labelled examples per repair and per combination, in JSON and
native forms, the value forms, the guarantees, and the errors users see.

Each example is `(label, value, repairs, options, expected value, applied, reason after)`,
with the value a native list (or wrapper object); `assert_example` runs it as a native
value and as its JSON text. `SAME` as the expected value means the value comes back
untouched: the very same object, in both forms.
"""

from __future__ import annotations

import copy
import doctest
import importlib
import json

import pyarrow as pa
import pytest

import chatgate
from chatgate.rules import REPAIR_PRESETS, REPAIRS, ChatFormat, first_problem, repair, repair_names
from chatgate.rules.repairs.fixes import DEFAULT_ROLE_MAP

repair_module = importlib.import_module("chatgate.rules.repairs.repair")  # `chatgate.rules.repairs.repair` is the function
fixes_module = importlib.import_module("chatgate.rules.repairs.fixes")

try:
    from rule_examples import msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import msg

SAME = object()


def compact(value) -> str:
    """The JSON text a repair writes: compact, keys in order, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def examples(*rows):
    return [pytest.param(*row[1:], id=row[0]) for row in rows]


def assert_example(value, repairs, options, expected, applied, reason):
    native = copy.deepcopy(value)
    got = repair(native, repairs, **options)
    assert native == value, "the input was changed in place"
    text = json.dumps(value)
    got_text = repair(text, repairs, **options)
    if expected is SAME:
        assert got.value is native and got_text.value is text
    else:
        assert got.value == expected
        assert got_text.value == compact(expected)
    assert got.applied == got_text.applied == applied
    assert got.reason == got_text.reason == reason
    assert got.reason == first_problem(got.value, **options)


CALL = [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]
PART_A = {"type": "text", "text": "a"}
IMAGE = {"type": "image"}

MAP_ROLES = examples(
    (
        "sharegpt-style-tags",
        [msg("human", "a"), msg("gpt", "b")],
        "map_roles",
        {},
        [msg("user", "a"), msg("assistant", "b")],
        ["map_roles"],
        None,
    ),
    (
        "capitalised-roles",
        [msg("SYSTEM", "s"), msg("User", "a"), msg("ASSISTANT", "b")],
        "map_roles",
        {},
        [msg("system", "s"), msg("user", "a"), msg("assistant", "b")],
        ["map_roles"],
        None,
    ),
    (
        "other-keys-kept-in-order",
        [msg("user", "a"), {"name": "n", "role": "bot", "content": "b"}],
        "map_roles",
        {},
        [msg("user", "a"), {"name": "n", "role": "assistant", "content": "b"}],
        ["map_roles"],
        None,
    ),
    (
        "unknown-alias-left",
        [msg("user", "a"), msg("narrator", "b")],
        "map_roles",
        {},
        SAME,
        [],
        "unknown_role",
    ),
    (
        "role-map-extends-the-default",
        [msg("user", "a"), msg("narrator", "b"), msg("user", "c"), msg("gpt", "d")],
        "map_roles",
        {"role_map": {"narrator": "assistant"}, "alternate": True, "last_role": "user"},
        [msg("user", "a"), msg("assistant", "b"), msg("user", "c"), msg("assistant", "d")],
        ["map_roles"],
        "last_role",
    ),
    (
        "role-map-wins-over-the-default",
        [msg("user", "a"), msg("bot", "b")],
        "map_roles",
        {
            "roles": ["user", "assistant", "narrator"],
            "role_map": {"bot": "narrator"},
            "last_role": "assistant",
        },
        [msg("user", "a"), msg("narrator", "b")],
        ["map_roles"],
        "last_role",
    ),
    (
        "allowed-role-never-renamed",
        [msg("User", "a"), msg("model", "b")],
        "map_roles",
        {"roles": ["user", "model"]},
        [msg("user", "a"), msg("model", "b")],
        ["map_roles"],
        None,
    ),
    (
        "alias-of-a-role-not-allowed-left",
        [msg("System", "s"), msg("user", "a")],
        "map_roles",
        {"roles": ["user", "assistant"]},
        SAME,
        [],
        "unknown_role",
    ),
)

DROP_EMPTY = examples(
    (
        "blank-null-missing-and-empty-parts",
        [
            msg("user", "a"),
            msg("user", ""),
            msg("assistant", " \n"),
            msg("assistant", None),
            msg("user", ...),
            msg("assistant", []),
            msg("assistant", [{"type": "text", "text": " "}]),
            msg("assistant", "b"),
        ],
        "drop_empty",
        {},
        [msg("user", "a"), msg("assistant", "b")],
        ["drop_empty"],
        None,
    ),
    (
        "keeps-assistant-with-tool-calls",
        [msg("user", "a"), msg("assistant", None, tool_calls=CALL), msg("tool", "r"), msg("assistant", "")],
        "drop_empty",
        {"tools": True},
        [msg("user", "a"), msg("assistant", None, tool_calls=CALL), msg("tool", "r")],
        ["drop_empty"],
        None,
    ),
    (
        "every-message-empty",
        [msg("user", ""), msg("assistant", None)],
        "drop_empty",
        {},
        [],
        ["drop_empty"],
        "no_messages",
    ),
    (
        "image-part-isnt-empty",
        [msg("user", [IMAGE]), msg("assistant", "")],
        "drop_empty",
        {},
        [msg("user", [IMAGE])],
        ["drop_empty"],
        None,
    ),
)

HOIST_SYSTEM = examples(
    (
        "moved-first",
        [msg("user", "a"), msg("system", "s"), msg("assistant", "b")],
        "hoist_system",
        {},
        [msg("system", "s"), msg("user", "a"), msg("assistant", "b")],
        ["hoist_system"],
        None,
    ),
    (
        "into-the-leading-one-in-order",
        [
            msg("system", "s1"),
            msg("user", "a"),
            msg("system", "s2"),
            msg("assistant", "b"),
            msg("system", "s3"),
        ],
        "hoist_system",
        {},
        [msg("system", "s1\n\ns2\n\ns3"), msg("user", "a"), msg("assistant", "b")],
        ["hoist_system"],
        None,
    ),
    (
        "two-leading-system-messages",
        [msg("system", "s1"), msg("system", "s2"), msg("user", "a")],
        "hoist_system",
        {},
        [msg("system", "s1\n\ns2"), msg("user", "a")],
        ["hoist_system"],
        None,
    ),
    (
        "first-system-keys-kept",
        [msg("user", "a"), msg("system", "s1", name="x"), msg("system", "s2", name="y")],
        "hoist_system",
        {},
        [msg("system", "s1\n\ns2", name="x"), msg("user", "a")],
        ["hoist_system"],
        None,
    ),
    (
        "text-and-parts-not-joined",
        [msg("system", "s"), msg("user", "a"), msg("system", [PART_A])],
        "hoist_system",
        {},
        SAME,
        [],
        "system_position",
    ),
    (
        "system-not-allowed-left",
        [msg("user", "a"), msg("system", "s")],
        "hoist_system",
        {"roles": ["user", "assistant"]},
        SAME,
        [],
        "unknown_role",
    ),
)

MERGE_REPEATS = examples(
    (
        "two-user-turns",
        [msg("user", "a"), msg("user", "b"), msg("assistant", "c")],
        "merge_repeats",
        {},
        [msg("user", "a\n\nb"), msg("assistant", "c")],
        ["merge_repeats"],
        None,
    ),
    (
        "keeps-the-first-ones-keys",
        [msg("user", "a"), msg("assistant", "b", name="x"), msg("assistant", "c", name="y", weight=0)],
        "merge_repeats",
        {},
        [msg("user", "a"), msg("assistant", "b\n\nc", name="x")],
        ["merge_repeats"],
        None,
    ),
    (
        "parts-lists-concatenated",
        [msg("user", [PART_A]), msg("user", [IMAGE]), msg("assistant", "c")],
        "merge_repeats",
        {},
        [msg("user", [PART_A, IMAGE]), msg("assistant", "c")],
        ["merge_repeats"],
        None,
    ),
    (
        "text-and-parts-not-merged",
        [msg("user", "a"), msg("user", [IMAGE]), msg("assistant", "c")],
        "merge_repeats",
        {},
        SAME,
        [],
        "not_alternating",
    ),
    (
        "null-content-adds-nothing",
        [msg("user", None), msg("user", "b"), msg("assistant", "c"), msg("assistant", ...)],
        "merge_repeats",
        {},
        [msg("user", "b"), msg("assistant", "c")],
        ["merge_repeats"],
        None,
    ),
    (
        "tool-answers-never-merged",
        [
            msg("user", "a"),
            msg("assistant", None, tool_calls=CALL * 2),
            msg("tool", "r1"),
            msg("tool", "r2"),
            msg("assistant", "b"),
            msg("assistant", "c"),
        ],
        "merge_repeats",
        {"tools": True},
        [
            msg("user", "a"),
            msg("assistant", None, tool_calls=CALL * 2),
            msg("tool", "r1"),
            msg("tool", "r2"),
            msg("assistant", "b\n\nc"),
        ],
        ["merge_repeats"],
        None,
    ),
    (
        "tool-calls-not-folded-into-the-message-before",
        [msg("user", "a"), msg("assistant", "b"), msg("assistant", None, tool_calls=CALL)],
        "merge_repeats",
        {"tools": True},
        SAME,
        [],
        "not_alternating",
    ),
    (
        "a-message-with-calls-absorbs-the-next",
        [msg("user", "a"), msg("assistant", None, tool_calls=CALL), msg("assistant", "b")],
        "merge_repeats",
        {},
        [msg("user", "a"), msg("assistant", "b", tool_calls=CALL)],
        ["merge_repeats"],
        None,
    ),
    (
        "bad-messages-never-merged",
        [msg("user", "a"), {"content": "b"}, {"content": "c"}],
        "merge_repeats",
        {},
        SAME,
        [],
        "bad_message",
    ),
)

DROP_LEADING = examples(
    (
        "turns-before-the-first-user-dropped",
        [
            msg("system", "s"),
            msg("assistant", "a"),
            msg("assistant", "b"),
            msg("user", "c"),
            msg("assistant", "d"),
        ],
        "drop_leading",
        {"first_role": "user"},
        [msg("system", "s"), msg("user", "c"), msg("assistant", "d")],
        ["drop_leading"],
        None,
    ),
    (
        "no-turn-of-that-role",
        [msg("assistant", "a"), msg("tool", "b")],
        "drop_leading",
        {"first_role": "user", "roles": ["user", "assistant", "tool"]},
        SAME,
        [],
        "first_role",
    ),
    (
        "already-first",
        [msg("user", "a"), msg("user", "b")],
        "drop_leading",
        {"first_role": "user"},
        SAME,
        [],
        "not_alternating",
    ),
)

DROP_TRAILING = examples(
    (
        "messages-after-the-last-assistant-dropped",
        [msg("user", "a"), msg("assistant", "b"), msg("user", "c")],
        "drop_trailing",
        {"last_role": "assistant"},
        [msg("user", "a"), msg("assistant", "b")],
        ["drop_trailing"],
        None,
    ),
    (
        "no-message-of-that-role",
        [msg("system", "s"), msg("user", "a")],
        "drop_trailing",
        {"last_role": "assistant"},
        SAME,
        [],
        "last_role",
    ),
)

A_MESS = [
    msg("human", "hi"),
    msg("system", "be brief"),
    msg("user", " "),
    msg("user", "there"),
    msg("bot", "hello"),
    msg("gpt", "again"),
    msg("user", "bye"),
]

COMBINATIONS = examples(
    (
        "safe-on-a-mess",
        A_MESS,
        "safe",
        {"last_role": "assistant"},
        [
            msg("system", "be brief"),
            msg("user", "hi\n\nthere"),
            msg("assistant", "hello\n\nagain"),
            msg("user", "bye"),
        ],
        ["map_roles", "drop_empty", "hoist_system", "merge_repeats"],
        "last_role",
    ),
    (
        "all-on-a-mess",
        A_MESS,
        "all",
        {"last_role": "assistant"},
        [msg("system", "be brief"), msg("user", "hi\n\nthere"), msg("assistant", "hello\n\nagain")],
        ["map_roles", "drop_empty", "hoist_system", "merge_repeats", "drop_trailing"],
        None,
    ),
    (
        "safe-plus-one",
        A_MESS,
        ["safe", "drop_trailing"],
        {"last_role": "assistant"},
        [msg("system", "be brief"), msg("user", "hi\n\nthere"), msg("assistant", "hello\n\nagain")],
        ["map_roles", "drop_empty", "hoist_system", "merge_repeats", "drop_trailing"],
        None,
    ),
    (
        "named-in-any-order",
        [msg("user", "a"), msg("user", ""), msg("user", "b")],
        ["merge_repeats", "drop_empty"],
        {},
        [msg("user", "a\n\nb")],
        ["drop_empty", "merge_repeats"],
        None,
    ),
    (
        "empty-dropped-before-merging",
        [msg("user", "a"), msg("assistant", ""), msg("user", "b"), msg("assistant", "c")],
        ["drop_empty", "merge_repeats"],
        {},
        [msg("user", "a\n\nb"), msg("assistant", "c")],
        ["drop_empty", "merge_repeats"],
        None,
    ),
    (
        "stops-once-it-passes",
        [msg("human", "a"), msg("user", "b"), msg("gpt", "c")],
        ["map_roles", "merge_repeats"],
        {"alternate": False},
        [msg("user", "a"), msg("user", "b"), msg("assistant", "c")],
        ["map_roles"],
        None,
    ),
    (
        "leading-and-trailing",
        [msg("assistant", "a"), msg("user", "b"), msg("assistant", "c"), msg("user", "d")],
        "all",
        {"first_role": "user", "last_role": "assistant"},
        [msg("user", "b"), msg("assistant", "c")],
        ["drop_leading", "drop_trailing"],
        None,
    ),
    (
        "hoisted-then-merged-then-trimmed",
        [
            msg("assistant", "x"),
            msg("user", "a"),
            msg("System", "s"),
            msg("user", "b"),
            msg("assistant", "c"),
        ],
        "all",
        {"first_role": "user"},
        [msg("system", "s"), msg("user", "a\n\nb"), msg("assistant", "c")],
        ["map_roles", "hoist_system", "merge_repeats", "drop_leading"],
        None,
    ),
    (
        "nothing-fits",
        [msg("user", "a"), msg("narrator", "b")],
        "all",
        {"first_role": "user", "last_role": "assistant"},
        SAME,
        [],
        "unknown_role",
    ),
)


EXAMPLES = {
    "map_roles": MAP_ROLES,
    "drop_empty": DROP_EMPTY,
    "hoist_system": HOIST_SYSTEM,
    "merge_repeats": MERGE_REPEATS,
    "drop_leading": DROP_LEADING,
    "drop_trailing": DROP_TRAILING,
    "combinations": COMBINATIONS,
}


@pytest.mark.parametrize(
    "value, repairs, options, expected, applied, reason",
    [pytest.param(*p.values, id=f"{name}-{p.id}") for name, table in EXAMPLES.items() for p in table],
)
def test_example(value, repairs, options, expected, applied, reason):
    assert_example(value, repairs, options, expected, applied, reason)


@pytest.mark.parametrize("alias, role", sorted(DEFAULT_ROLE_MAP.items()))
def test_every_default_alias(alias, role):
    """Each alias of the documented map becomes its role, alone in the conversation."""
    options = {"first_role": role} if role != "system" else {}
    got = repair([msg(alias, "a")], "map_roles", **options)
    assert got == ([msg(role, "a")], ["map_roles"], None)


# --- decode_text --------------------------------------------------------------------------

CHAT = [msg("user", "a"), msg("assistant", "b")]


def test_decode_text_decodes_once():
    inner = json.dumps(CHAT)
    got = repair(json.dumps(inner), "decode_text")
    assert got == (inner, ["decode_text"], None)


def test_decode_text_of_a_wrapper_object_and_bytes():
    inner = json.dumps({"id": 1, "messages": CHAT})
    assert repair(json.dumps(inner).encode(), "safe") == (inner.encode(), ["decode_text"], None)


def test_decode_text_then_other_repairs_write_compact_json():
    inner = json.dumps([msg("user", "a"), msg("gpt", "b")], indent=2)
    got = repair(json.dumps(inner), "safe")
    assert got == (compact([msg("user", "a"), msg("assistant", "b")]), ["decode_text", "map_roles"], None)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(json.dumps(json.dumps(json.dumps(CHAT))), id="triple-encoded"),
        pytest.param(json.dumps("not json"), id="string-of-plain-text"),
        pytest.param(json.dumps(json.dumps(5)), id="string-of-a-number"),
        pytest.param(
            json.dumps(json.dumps({"conversation": CHAT})), id="string-of-an-object-without-messages"
        ),
    ],
)
def test_decode_text_leaves_what_holds_no_message_list(value):
    got = repair(value, "all")
    assert got.value is value and got.applied == [] and got.reason == "not_messages"


def test_decode_text_named_alone_leaves_the_inner_defects():
    inner = json.dumps([msg("user", "a"), msg("user", "b")])
    assert repair(json.dumps(inner), "decode_text") == (inner, ["decode_text"], "not_alternating")


# --- Value forms --------------------------------------------------------------------------


def test_passing_values_come_back_as_the_same_object():
    for value in (CHAT, json.dumps(CHAT), json.dumps(CHAT).encode(), {"messages": CHAT}, tuple(CHAT)):
        got = repair(value, "all", first_role="user", last_role="assistant")
        assert got.value is value and got.applied == [] and got.reason is None


def test_a_missing_value_is_not_repaired():
    assert repair(None, "all") == (None, [], "not_messages")
    assert repair(None, "all", na_pass=True) == (None, [], None)


def test_wrapper_object_keeps_its_other_keys_in_order():
    value = {"id": 7, "messages": [msg("user", "a"), msg("user", "b")], "source": "x"}
    expected = {"id": 7, "messages": [msg("user", "a\n\nb")], "source": "x"}
    assert_example(value, "merge_repeats", {}, expected, ["merge_repeats"], None)
    assert list(repair(value, "merge_repeats").value) == ["id", "messages", "source"]


def test_tuple_in_tuple_out_and_untouched_messages_are_the_same_objects():
    first, second = msg("system", "s"), msg("user", "a")
    got = repair((second, first), "hoist_system")
    assert got == ((first, second), ["hoist_system"], None)
    assert got.value[0] is first and got.value[1] is second


def test_json_numbers_and_text_are_written_as_read():
    value = (
        '{"score": 0.1000000000000000055511151231257827, "big": 1e400, "n": 12345678901234567890123,'
        ' "messages": [{"role": "bot", "content": "\\u00e9t\\u00e9 \\ud83d\\ude00"}]}'
    )
    got = repair(value, "map_roles", roles=["assistant"])
    assert got.value == (
        '{"score":0.1000000000000000055511151231257827,"big":1E+400,"n":12345678901234567890123,'
        '"messages":[{"role":"assistant","content":"été 😀"}]}'
    )
    assert got.applied == ["map_roles"] and got.reason is None


def test_text_the_check_reads_only_by_shortening_numbers_is_left_as_is():
    value = '[{"role": "bot", "content": "x", "n": ' + "9" * 5000 + "}]"
    got = repair(value, "all", roles=["assistant"])
    assert got.value is value and got.applied == [] and got.reason == "unknown_role"


def test_sharegpt_tags_kept_and_aliases_renamed():
    value = [{"from": "human", "value": "a"}, {"from": "Human", "value": "b"}, {"from": "gpt", "value": "c"}]
    expected = [{"from": "human", "value": "a\n\nb"}, {"from": "gpt", "value": "c"}]
    assert_example(value, "safe", {"sharegpt": True}, expected, ["map_roles", "merge_repeats"], None)


def test_sharegpt_function_call_turn_is_never_merged_or_dropped():
    call = json.dumps({"name": "f", "arguments": {}})
    value = [
        {"from": "human", "value": "a"},
        {"from": "gpt", "value": "b"},
        {"from": "function_call", "value": call},
        {"from": "observation", "value": ""},
    ]
    got = repair(value, "safe", sharegpt=True, tools=True)
    assert got.value == value[:3] and got.applied == ["drop_empty"] and got.reason == "not_alternating"


def test_lone_sharegpt_message_stays_one_message():
    assert repair({"from": "Human", "value": "hi"}, "safe", sharegpt=True) == (
        {"from": "user", "value": "hi"},
        ["map_roles"],
        None,
    )
    blank = {"from": "human", "value": " "}
    got = repair(blank, "safe", sharegpt=True)
    assert got.value is blank and got.applied == [] and got.reason == "empty_content"


def test_native_values_from_arrow_go_back_into_their_column():
    """Arrow structs give every message every key (null where absent): repaired values fit the type."""
    column = pa.array([[msg("user", "a", name="n"), msg("user", "b"), msg("bot", "")]])
    value = column.to_pylist()[0]
    got = repair(value, "safe")
    assert got.value == [{"role": "user", "content": "a\n\nb", "name": "n"}]
    assert got.applied == ["map_roles", "drop_empty", "merge_repeats"] and got.reason is None
    assert pa.array([got.value], column.type).to_pylist() == [got.value]


def test_harmony_lead_keeps_the_developer_message():
    value = [msg("system", "s"), msg("developer", "d"), msg("assistant", "a"), msg("user", "b")]
    got = repair(value, "drop_leading", harmony=True, first_role="user")
    assert got == ([msg("system", "s"), msg("developer", "d"), msg("user", "b")], ["drop_leading"], None)


def test_first_role_of_a_lead_role_drops_nothing():
    """No conversation can start its turns with a system message: there is nothing to aim for."""
    value = [msg("system", "s"), msg("user", "a"), msg("system", "t")]
    got = repair(value, "drop_leading", first_role="system")
    assert got.value is value and got.applied == []


# --- Names, presets and errors --------------------------------------------------------------


def test_the_repairs_in_order_and_the_presets():
    names = (
        "decode_text",
        "map_roles",
        "drop_empty",
        "hoist_system",
        "merge_repeats",
        "drop_leading",
        "drop_trailing",
    )
    assert tuple(r.name for r in REPAIRS) == names
    assert {"safe": names[:5], "all": names} == REPAIR_PRESETS
    assert all(r.help for r in REPAIRS)
    assert all(f"| {name} |" in repair_module.__doc__ for name in names)


@pytest.mark.parametrize(
    "given, expected",
    [
        ("safe", REPAIR_PRESETS["safe"]),
        ("all", REPAIR_PRESETS["all"]),
        ("merge_repeats", ("merge_repeats",)),
        (["drop_empty", "map_roles", "drop_empty"], ("map_roles", "drop_empty")),
        (("safe", "drop_trailing"), (*REPAIR_PRESETS["safe"], "drop_trailing")),
    ],
)
def test_repair_names(given, expected):
    assert repair_names(given, ChatFormat(last_role="assistant")) == expected


@pytest.mark.parametrize(
    "repairs, options, error, message",
    [
        (
            "fix_everything",
            {},
            ValueError,
            "unknown repair 'fix_everything': name one of the repairs decode_text, map_roles, drop_empty, "
            "hoist_system, merge_repeats, drop_leading, drop_trailing or the presets safe, all",
        ),
        (
            ["map_roles", "merge"],
            {},
            ValueError,
            "unknown repair 'merge': name one of the repairs decode_text, map_roles, drop_empty, "
            "hoist_system, merge_repeats, drop_leading, drop_trailing or the presets safe, all",
        ),
        (
            [],
            {},
            ValueError,
            "repairs= is empty: name one of the repairs decode_text, map_roles, drop_empty, "
            "hoist_system, merge_repeats, drop_leading, drop_trailing or the presets safe, all",
        ),
        (["safe", 3], {}, TypeError, "repairs= must hold names (strings) only; found 3"),
        (3, {}, TypeError, "repairs= must be a repair's name, a preset or a list of them, not int"),
        (
            "drop_leading",
            {},
            ValueError,
            "repair 'drop_leading' needs first_role= set: it has nothing to aim for",
        ),
        (
            ["safe", "drop_trailing"],
            {"first_role": "user"},
            ValueError,
            "repair 'drop_trailing' needs last_role= set: it has nothing to aim for",
        ),
        ("safe", {"roles": "user"}, TypeError, "roles= must be a list of role names, not str"),
    ],
)
def test_errors_users_see(repairs, options, error, message):
    with pytest.raises(error) as raised:
        repair(CHAT, repairs, **options)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_all_needs_no_option():
    """A preset names drop_leading and drop_trailing without asking for their options."""
    assert repair(A_MESS, "all").applied == ["map_roles", "drop_empty", "hoist_system", "merge_repeats"]


def test_misspelt_option_is_refused():
    with pytest.raises(TypeError, match="last_rol"):
        repair(CHAT, "safe", last_rol="assistant")


def test_public_names():
    assert chatgate.repair is repair
    assert "repair" in chatgate.__all__
    assert "last_role" in str(__import__("inspect").signature(repair))


def test_docstring_examples():
    for module in (repair_module, fixes_module):
        failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried and not failed
