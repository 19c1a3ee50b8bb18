"""Hypothesis strategies for conversations, valid and broken, and for the check's parameters.

`cases()` draws a `Case`: the keyword arguments of the check and a batch of values,
each a Python object (a list of messages, a wrapper object, ...) or raw text (garbage
JSON), or None (a missing value). Messages use the drawn `role_key`/`content_key`,
so most are read, and some are broken on purpose: unknown or non-string roles,
missing keys, non-mapping messages, blank or odd contents.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

ROLE_POOL = ["system", "user", "assistant", "tool", "human", "gpt", "bot", "User", "", " user"]
KEY_POOL = ["role", "content", "from", "value", "messages", "type", "text"]
WHITESPACE = " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2009\u2028\u202f\u3000"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
# Keys without NUL: Polars panics exporting such struct fields to Arrow.
keys = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=4)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=6,
)

blank_texts = st.text(alphabet=WHITESPACE, max_size=4)
texts = st.one_of(
    blank_texts, st.text(max_size=8), st.sampled_from(["Hi", "\u200b", "x y", "null", "[]"])
)

text_parts = st.fixed_dictionaries(
    {"type": st.just("text")}, optional={"text": st.one_of(texts, st.none(), st.integers(0, 3))}
)
other_parts = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["image", "image_url", "input_audio"])},
        optional={"image_url": st.just({"url": "u"})},
    ),
    st.fixed_dictionaries({}, optional={"text": texts}),
    texts,
    st.integers(0, 3),
)
contents = st.one_of(
    texts,
    st.none(),
    st.lists(st.one_of(text_parts, other_parts), max_size=3),
    st.integers(-2, 2),
    st.booleans(),
    st.dictionaries(st.sampled_from(["text", "type"]), texts, max_size=2),
)


def role_values(pool: list[str]):
    """Mostly allowed roles, some unknown ones, a few non-strings."""
    return st.one_of(
        st.sampled_from(pool),
        st.sampled_from(ROLE_POOL),
        st.text(max_size=4),
        st.one_of(
            st.none(), st.integers(0, 3), st.booleans(), st.lists(st.sampled_from(pool), max_size=2)
        ),
    )


@st.composite
def messages(draw, role_key: str, content_key: str, pool: list[str]) -> Any:
    kind = draw(st.sampled_from(["good"] * 6 + ["no_role", "no_content", "other", "non_mapping"]))
    if kind == "non_mapping":
        return draw(
            st.one_of(
                st.text(max_size=5),
                st.integers(0, 3),
                st.none(),
                st.lists(st.text(max_size=3), max_size=2),
            )
        )
    message: dict[str, Any] = {}
    if kind != "no_role":
        message[role_key] = (
            draw(st.sampled_from(pool)) if kind == "good" else draw(role_values(pool))
        )
    if kind != "no_content":
        message[content_key] = (
            draw(st.sampled_from(["Hi", "Sure.", "x"])) if kind == "good" else draw(contents)
        )
    extra = draw(
        st.dictionaries(
            st.sampled_from(["name", "thinking", "tool_calls", "id", *KEY_POOL]),
            json_values,
            max_size=2,
        )
    )
    for key, value in extra.items():
        message.setdefault(key, value)
    return message


@st.composite
def well_formed(draw, role_key: str, content_key: str, pool: list[str]) -> list:
    """A conversation that often passes: an optional system message, then alternating turns
    (one in four has one blank, null or missing content)."""
    turns = [r for r in pool if r != "system"] or pool
    n = draw(st.integers(0, 5))  # none: a lone system message, or an empty list
    first = draw(st.integers(0, len(turns) - 1))
    roles = [turns[(first + i) % len(turns)] for i in range(n)]
    if "system" in pool and draw(st.booleans()):
        roles.insert(0, "system")
    out = [
        {role_key: role, content_key: draw(st.sampled_from(["Hi", "Sure.", "ok"]))}
        for role in roles
    ]
    if out and draw(st.integers(0, 3)) == 0:  # one message with a blank content, or none at all
        message = out[draw(st.integers(0, len(out) - 1))]
        blank = draw(st.one_of(blank_texts, st.none(), st.just(...)))
        if blank is ...:
            del message[content_key]
        else:
            message[content_key] = blank
    return out


@st.composite
def polars_conversations(draw, role_key: str, content_key: str, pool: list[str]) -> list:
    """A list of messages that Polars holds as one list of structs: string or null roles
    and contents, keys sometimes missing (Polars fills them with nulls)."""
    out = []
    for _ in range(draw(st.integers(0, 5))):
        message: dict[str, Any] = {}
        if draw(st.integers(0, 5)):
            message[role_key] = draw(st.none() | st.sampled_from(pool) | st.sampled_from(ROLE_POOL))
        if draw(st.integers(0, 5)):
            message[content_key] = draw(st.none() | texts)
        if draw(st.booleans()):
            message.setdefault("name", draw(st.text(max_size=3)))
        out.append(message)
    return out


def conversations(role_key: str, content_key: str, pool: list[str]):
    listed = st.one_of(
        well_formed(role_key, content_key, pool),
        st.lists(messages(role_key, content_key, pool), max_size=5),
    )
    wrapped = st.builds(
        lambda msgs, extra: {**extra, "messages": msgs},
        listed,
        st.dictionaries(st.sampled_from(["id", "source", "tools"]), json_values, max_size=2),
    )
    broken_wrapper = st.one_of(
        st.fixed_dictionaries(
            {"messages": st.one_of(scalars, st.dictionaries(keys, scalars, max_size=2))}
        ),
        st.fixed_dictionaries({"conversation": listed}),
    )
    return st.one_of(listed, listed, wrapped, broken_wrapper)


garbage_text = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        [
            "",
            " ",
            "null",
            "true",
            "1",
            "1e400",
            "[1,]",
            "{}",
            "[{]",
            "NaN",
            "[NaN]",
            "\ufeff[]",
            '"[]"',
        ]
    ),
    json_values.map(json.dumps),
)


# Valid JSON that a decoder may choke on, and invalid JSON that a skipping decoder may let
# through, to be spliced into an otherwise ordinary conversation.
FRAGMENTS = [
    "1e400",
    "-1e400",
    "1.5e-400",
    "9" * 5000,
    "-" + "9" * 4400,
    "1" + "0" * 30,
    "1" + "0" * 400 + ".5",
    "0" + "9" * 5000,
    "[" * 900 + "]" * 900,
    "[" * 1300 + "]" * 1300,
    '{"a":' * 1150 + "1" + "}" * 1150,
    "[" * 100_000 + "]" * 100_000,
    "NaN",
    "-Infinity",
    '"\\ud800"',
    '"\\ud83d\\ude00"',
    '"\\u0000"',
    '"\\q"',
    "[1,]",
    "01",
]
_SENTINEL = "\x00fragment\x00"


@st.composite
def spliced(draw, conversation) -> str:
    """The JSON text of a conversation with a fragment in place of a key's value or a content."""
    value = draw(conversation)
    holders = [value] if isinstance(value, dict) else []
    listed = value.get("messages") if isinstance(value, dict) else value
    if isinstance(listed, list):
        holders += [m for m in listed if isinstance(m, dict)]
    if not holders:
        return json.dumps(value)
    holder = draw(st.sampled_from(holders))
    key = draw(st.sampled_from(["extra", *holder]))
    holder[key] = _SENTINEL
    return json.dumps(value).replace(json.dumps(_SENTINEL), draw(st.sampled_from(FRAGMENTS)), 1)


@dataclass
class Case:
    """The check's keyword arguments and a batch of values (objects, raw text or None)."""

    kwargs: dict
    values: list = field(default_factory=list)
    raw: list = field(default_factory=list)  # True where the value is raw text, not an object


@st.composite
def chat_formats(draw) -> dict:
    """Keyword arguments of the check, always valid."""
    roles = draw(st.lists(st.sampled_from(ROLE_POOL), min_size=1, max_size=5, unique=True))
    if draw(st.booleans()):
        roles = ["system", "user", "assistant"]
    role_key = draw(st.sampled_from(["role"] * 4 + KEY_POOL))
    content_key = draw(st.sampled_from(["content"] * 4 + KEY_POOL))
    return {
        "roles": roles if draw(st.booleans()) else tuple(roles),
        "alternate": draw(st.booleans()),
        "first_role": draw(st.none() | st.sampled_from(roles)),
        "last_role": draw(st.none() | st.sampled_from(roles)),
        "allow_empty": draw(st.booleans()),
        "role_key": role_key,
        "content_key": content_key,
        "na_pass": draw(st.booleans()),
    }


@st.composite
def cases(draw, max_size: int = 12) -> Case:
    kwargs = draw(chat_formats())
    pool = list(kwargs["roles"])
    conversation = conversations(kwargs["role_key"], kwargs["content_key"], pool)
    case = Case(kwargs)
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(["object"] * 6 + ["text", "none"]))
        if kind == "object":
            case.values.append(draw(conversation))
            case.raw.append(False)
        elif kind == "text":
            case.values.append(draw(garbage_text | spliced(conversation)))
            case.raw.append(True)
        else:
            case.values.append(None)
            case.raw.append(False)
    return case


def json_text(value: Any, raw: bool, ensure_ascii: bool = False) -> str | None:
    """The JSON text of a drawn value (None stays a missing value)."""
    if raw or value is None:
        return value
    return json.dumps(value, ensure_ascii=ensure_ascii)
