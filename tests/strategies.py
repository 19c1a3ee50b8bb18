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
    content_key = draw(st.sampled_from([key for key in ["content"] * 4 + KEY_POOL if key != role_key]))
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


# --- Conversations for the plain reference's areas (tests/test_oracle_*.py) -----------------------
#
# Mostly plausible conversations of each area (tool calling, Harmony, ShareGPT, images, the
# trainers' profiles), then a few mutations each, so that every rule is reached and broken.

NAMES = ["f", "g"]
CALL_IDS = ["c1", "c2", 1]
GOOD_ARGUMENTS = st.sampled_from([{}, {"x": 1}, "{}", '{"x": 1}'])
BAD_ARGUMENTS = st.sampled_from(["[1]", "x", 5, ""])


@st.composite
def tool_call_items(draw, ids: bool) -> Any:
    """One entry of a `tool_calls` list: mostly well formed, else broken in one way."""
    call: Any = {"type": "function", "function": {"name": draw(st.sampled_from(NAMES))}}
    call["function"]["arguments"] = draw(GOOD_ARGUMENTS)
    if ids:
        call["id"] = draw(st.sampled_from(CALL_IDS))
    kind = draw(st.integers(0, 70))
    if kind == 1:
        del call["type"]
    elif kind == 2:
        call["type"] = "custom"
    elif kind == 3:
        call["function"]["name"] = draw(st.sampled_from(["", " ", 3]))
    elif kind == 4:
        call["function"]["arguments"] = draw(BAD_ARGUMENTS)
    elif kind == 5:
        del call["function"]["arguments"]
    elif kind == 6:
        call = {"name": call["function"]["name"], "arguments": {}}
    elif kind == 7:
        call = draw(st.sampled_from(["f()", 3, ["f"]]))
    elif kind == 8:
        call["id"] = draw(st.sampled_from([True, 2.5, ["c1"]]))
    return call


def tool_call_lists(ids: bool):
    calls = st.lists(tool_call_items(ids), min_size=1, max_size=3)
    return st.one_of(*[calls] * 9, st.sampled_from([None, [], "f()", {}, {"f": 1}]))


@st.composite
def tool_answers(draw, calls: Any, tag: str = "tool") -> list:
    """Tool messages after a call: as many as the calls, give or take one, with ids and names
    that mostly match."""
    count = len(calls) if isinstance(calls, list) else 1
    out = []
    for _ in range(max(0, count + draw(st.sampled_from([0, 0, 0, -1, 1])))):
        answer: dict[str, Any] = {"role": tag, "content": draw(st.sampled_from(["r", "r", "", None]))}
        if draw(st.integers(0, 2)) == 0:
            answer["tool_call_id"] = draw(st.sampled_from([*CALL_IDS, "c9", True]))
        if draw(st.integers(0, 2)) == 0:
            answer["name"] = draw(st.sampled_from([*NAMES, "h", 3]))
        out.append(answer)
    return out


REPLIES = st.sampled_from(["Sure.", "Sure.", "Sure.", "", " ", None, [{"type": "text", "text": "ok"}]])


@st.composite
def tool_chats(draw) -> list:
    """A conversation of tool calling: rounds of a user turn, calls and their answers, a reply."""
    out: list[Any] = []
    if draw(st.booleans()):
        out.append({"role": "system", "content": "Use tools."})
    ids = draw(st.booleans())
    for _ in range(draw(st.integers(0, 3))):
        out.append({"role": "user", "content": draw(st.sampled_from(["Turn it on.", "Hi", ""]))})
        while draw(st.integers(0, 1)) == 0:
            calls = draw(tool_call_lists(ids))
            call: dict[str, Any] = {"role": "assistant", "tool_calls": calls}
            content = draw(st.sampled_from([None, "", "On it.", ...]))
            if content is not ...:
                call["content"] = content
            out.append(call)
            out += draw(tool_answers(calls))
        if draw(st.integers(0, 3)):
            out.append({"role": "assistant", "content": draw(REPLIES)})
    return out


@st.composite
def harmony_chats(draw, key: str = "thinking") -> list:
    """Harmony: a system message and a developer message leading, thinking beside the replies."""
    out: list[Any] = []
    lead = draw(st.sampled_from([[], ["system"], ["developer"], ["system", "developer"], ["developer", "system"]]))
    out += [{"role": role, "content": "Be kind."} for role in lead]
    for _ in range(draw(st.integers(0, 3))):
        out.append({"role": "user", "content": draw(st.sampled_from(["Why?", "Why?", ""]))})
        reply: dict[str, Any] = {"role": "assistant", "content": draw(REPLIES)}
        if draw(st.integers(0, 2)):
            reply[key] = draw(st.sampled_from(["Deep reflection...", "Deep reflection...", "", 5, None, ["x"]]))
        out.append(reply)
    if draw(st.integers(0, 3)) == 0:  # a developer message, or thinking, where it doesn't belong
        message = draw(st.sampled_from([{"role": "developer", "content": "Later."}, {"role": "user", "content": "Hm", key: "x"}]))
        out.insert(draw(st.integers(0, len(out))), message)
    return out


SHAREGPT_CALLS = st.sampled_from(
    [
        '{"name": "f", "arguments": {"q": "rice"}}',
        '{"name": "g", "arguments": "{}"}',
        '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}]',
        {"name": "f", "arguments": {}},
        "search(rice)",
        '{"name": "f"}',
        '{"name": "", "arguments": {}}',
        "[]",
        "",
    ]
)


@st.composite
def sharegpt_chats(draw) -> Any:
    """ShareGPT: from/value messages (human, gpt, system, function_call, observation), as a list,
    under "conversations", or one message object."""
    out: list[Any] = []
    if draw(st.booleans()):
        out.append({"from": "system", "value": "Be brief."})
    for _ in range(draw(st.integers(0, 3))):
        out.append({"from": draw(st.sampled_from(["human", "human", "human", "user", "bot"])), "value": "Hi"})
        if draw(st.integers(0, 2)) == 0:
            value = draw(SHAREGPT_CALLS)
            out.append({"from": "function_call", "value": value})
            count = 2 if isinstance(value, str) and value.startswith("[{") else 1
            for _ in range(count + draw(st.sampled_from([0, 0, -1, 1]))):
                out.append({"from": "observation", "value": draw(st.sampled_from(["{}", "r", ""]))})
        out.append({"from": draw(st.sampled_from(["gpt", "gpt", "assistant", "model"])), "value": draw(REPLIES)})
    shape = draw(st.integers(0, 5))
    if shape == 0:
        return {"conversations": out}
    if shape == 1 and out:
        return out[-1]
    return out


def data_url(kind: str, size: int) -> str:
    import base64

    return f"data:image/{kind};base64," + base64.b64encode(b"\x89" * size).decode()


IMAGE_URLS = st.one_of(
    st.builds(data_url, st.sampled_from(["png", "jpeg", "webp"]), st.integers(1, 12)),
    st.builds(data_url, st.sampled_from(["png", "jpeg", "webp"]), st.integers(1, 12)),
    st.sampled_from(["https://x/y.png", "data:image/gif;base64,AAAA", "data:image/png;base64,AAA", "", None]),
)
TEXTS_WITH_TOKENS = st.sampled_from(["What is it?", "<image> What is it?", "<image><image>", "What?", " "])


@st.composite
def image_contents(draw, text_key: str = "text") -> Any:
    """A content of parts (text, image, image_url; sometimes odd), or text holding image tokens."""
    if draw(st.integers(0, 3)) == 0:
        return draw(TEXTS_WITH_TOKENS)
    text = st.builds(lambda text: {"type": "text", text_key: text}, TEXTS_WITH_TOKENS)
    image = st.builds(lambda url: {"type": "image_url", "image_url": {"url": url}}, IMAGE_URLS)
    odd = st.sampled_from([{"type": "input_audio"}, {"type": "text", "text": 5}, {"text": "x"}, "look"])
    part = st.one_of(text, text, text, st.just({"type": "image"}), image, image, odd)
    return draw(st.lists(part, min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=3))


@st.composite
def image_chats(draw, text_key: str = "text") -> list:
    out: list[Any] = []
    if draw(st.booleans()):
        out.append({"role": "system", "content": "Describe images."})
    for _ in range(draw(st.integers(1, 3))):
        out.append({"role": "user", "content": draw(image_contents(text_key))})
        reply = draw(image_contents(text_key)) if draw(st.integers(0, 3)) == 0 else "A cat."
        out.append({"role": "assistant", "content": reply})
    return out


ROW_IMAGES = st.sampled_from([None, [], ["a"], ["a", "b"], ["a", "b", "c"], '["a"]', "a", 3, [None]])
TOOLS_COLUMN = st.sampled_from(
    [
        None,
        [],
        [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        [{"type": "function", "function": {"name": "f"}}, {"name": "g", "parameters": {}}],
        '[{"type": "function", "function": {"name": "g"}}]',
        '[{"name": "f"}, {"name": "g"}]',
        "[]",
        "f",
        {"name": "f"},
        [5],
        [{"function": {"name": ""}}],
    ]
)

MUTANT_ROLES = ["system", "user", "assistant", "tool", "developer", "function", "bot", "observation", None, 5]
MUTANT_CONTENTS = ["Hi", "", " ", None, 5, [], {"text": "x"}, [{"type": "image"}]]
MUTANT_EXTRAS = {
    "tool_calls": st.one_of(tool_call_lists(False), tool_call_lists(True)),
    "tool_call_id": st.sampled_from([*CALL_IDS, "c9"]),
    "name": st.sampled_from([*NAMES, "h"]),
    "thinking": st.sampled_from(["hm", 5, None]),
    "weight": st.sampled_from([0, 1, 2, True, 1.0, None]),
    "function_call": st.sampled_from([{"name": "f", "arguments": "{}"}, {"arguments": "{}"}, "f", None]),
    "refusal": st.sampled_from(["No.", None]),
    "foo": st.sampled_from([1, None]),
}


@st.composite
def mutated(draw, chat, role_key: str = "role", content_key: str = "content", most: int = 2) -> Any:
    """A drawn conversation with up to `most` mutations: a role, a content or an extra key changed,
    a message dropped, repeated or replaced by a non-message."""
    value = draw(chat)
    messages = value.get("conversations", value) if isinstance(value, dict) else value
    if not isinstance(messages, list) or not messages:
        return value
    for _ in range(draw(st.integers(0, most))):
        i = draw(st.integers(0, len(messages) - 1))
        if not isinstance(messages[i], dict):
            continue
        kind = draw(st.integers(0, 9))
        if kind <= 1:
            messages[i] = {**messages[i], role_key: draw(st.sampled_from(MUTANT_ROLES))}
        elif kind <= 3:
            messages[i] = {**messages[i], content_key: draw(st.sampled_from(MUTANT_CONTENTS))}
        elif kind <= 6:
            key = draw(st.sampled_from(sorted(MUTANT_EXTRAS)))
            messages[i] = {**messages[i], key: draw(MUTANT_EXTRAS[key])}
        elif kind == 7:
            del messages[i]
        elif kind == 8:
            messages.insert(i, dict(messages[i]))
        else:
            messages[i] = draw(st.sampled_from(["Hi", 3, None]))
        if not messages:
            break
    return value


# --- Rows of the TRL dataset types -------------------------------------------------------------

DATASET_FIELDS = {
    "prompt_only": ["prompt"],
    "prompt_completion": ["prompt", "completion"],
    "preference": ["prompt", "chosen", "rejected"],
    "implicit_preference": ["chosen", "rejected"],
    "unpaired_preference": ["prompt", "completion", "label"],
}
STANDARD_VALUES = st.sampled_from(["The sky is", "The sky is blue.", " blue.", " green.", "", " ", "[x", " {x", "5"])
ODD_VALUES = st.sampled_from([None, None, 5, [], {"a": 1}, "[1]", '{"messages": 3}'])


@st.composite
def prompts(draw, tools: bool = False) -> list:
    """A conversational prompt: mostly ends with a user turn (or a tool answer)."""
    out: list[Any] = []
    if draw(st.integers(0, 3)) == 0:
        out.append({"role": "system", "content": "Be brief."})
    if draw(st.integers(0, 3)) == 0:
        out += [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    out.append({"role": "user", "content": draw(st.sampled_from(["What color is the sky?", "Sky?"]))})
    if tools and draw(st.booleans()):
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": draw(st.sampled_from(NAMES)), "arguments": {}}}]})
        out.append({"role": "tool", "content": "blue"})
    if draw(st.integers(0, 7)) == 0:  # a prompt that doesn't end with a user turn
        out.append({"role": draw(st.sampled_from(["assistant", "system"])), "content": "Well?"})
    return out


@st.composite
def answers(draw, tools: bool = False) -> list:
    """A conversational completion: mostly the assistant's turns (calls and answers with tools)."""
    out: list[Any] = []
    if tools and draw(st.booleans()):
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": draw(st.sampled_from(NAMES)), "arguments": {}}}]})
        out.append({"role": "tool", "content": "blue"})
    out.append({"role": "assistant", "content": draw(st.sampled_from(["It is blue.", "It is green.", "Blue."]))})
    if draw(st.integers(0, 7)) == 0:  # a completion holding another turn than the assistant's
        out.insert(draw(st.integers(0, len(out))), {"role": draw(st.sampled_from(["user", "system"])), "content": "And?"})
    return out


def dataset_values(conversation):
    """A field's value: conversational (as drawn, mutated, or its JSON text), standard, or odd."""
    value = mutated(conversation, most=1)
    return st.one_of(value, value, value, value.map(json.dumps), value, STANDARD_VALUES, ODD_VALUES)


@st.composite
def dataset_rows(draw, kind: str, tools: bool = False) -> dict:
    """A row of a TRL dataset type, of one format mostly (conversational two times in three),
    with values broken now and then, and `tools`/`images` columns sometimes."""
    conversational = draw(st.integers(0, 2)) > 0
    pick = {"prompt": prompts(tools), "completion": answers(tools), "chosen": answers(tools)}
    pick["rejected"] = answers(tools)
    if kind == "implicit_preference":
        shared = draw(prompts(tools))
        pick["chosen"] = answers(tools).map(lambda a: shared + a)
        pick["rejected"] = answers(tools).map(lambda a: shared + a)
    row: dict[str, Any] = {}
    for name in DATASET_FIELDS[kind]:
        if name == "label":
            row[name] = draw(st.sampled_from([True, False, True, None, "true", 1]))
        elif draw(st.integers(0, 4)) == 0:
            row[name] = draw(dataset_values(pick[name]))
        elif conversational:
            row[name] = draw(pick[name])
        elif name in ("prompt", "completion") and draw(st.integers(0, 3)) == 0:
            row[name] = draw(image_contents())  # parts, as standard text with standard_parts=True
        else:
            row[name] = draw(STANDARD_VALUES)
    if kind == "implicit_preference" and not conversational and draw(st.booleans()):
        shared = draw(st.sampled_from(["The sky is", "The sky", ""]))
        row["chosen"], row["rejected"] = (shared + draw(st.sampled_from([" blue.", " green.", ""])) for _ in "cr")
    if "rejected" in row and draw(st.integers(0, 5)) == 0:
        row["rejected"] = row["chosen"]
    if draw(st.integers(0, 3)) == 0:
        row["tools"] = draw(TOOLS_COLUMN)
    if draw(st.integers(0, 4)) == 0:
        row["images"] = draw(ROW_IMAGES)
    return row


@st.composite
def openai_preference_rows(draw, tools: bool = False) -> dict:
    """A row of OpenAI's preference format: mostly `{"messages": [...]}` inputs and one-message
    outputs, each broken now and then (a bare list, a missing or odd key, two messages, a tool's)."""
    messages: Any = draw(mutated(prompts(tools), most=1))
    shape = draw(st.integers(0, 12))
    if shape == 0:
        value: Any = messages
    elif shape == 1:
        value = {"msgs": messages}
    elif shape == 2:
        value = draw(st.sampled_from([None, "not json", 5, '"x"', {"messages": "[]"}]))
    else:
        value = {"messages": messages}
        if draw(st.integers(0, 3)) == 0:
            value["parallel_tool_calls"] = draw(st.sampled_from([True, False, None, "yes", 1]))
        if draw(st.integers(0, 2)) == 0:
            value["tools"] = draw(TOOLS_COLUMN)
    row = {"input": draw(st.sampled_from([value, value, json.dumps(value)]))}
    for output_name in ("preferred_output", "non_preferred_output"):
        output: Any = [{"role": "assistant", "content": draw(st.sampled_from(["Blue.", "Green.", ""]))}]
        if tools and draw(st.integers(0, 3)) == 0:
            output[0]["tool_calls"] = [{"type": "function", "function": {"name": draw(st.sampled_from(NAMES)), "arguments": {}}}]
        shape = draw(st.integers(0, 14))
        if shape == 0:
            output = output[0]
        elif shape == 1:
            output = output * 2
        elif shape == 2:
            output = draw(st.sampled_from([[], None, "x", {"messages": output}]))
        elif shape == 3:
            output = [{**output[0], "role": draw(st.sampled_from(["user", "tool", "system", "bot"]))}]
        elif shape == 4:
            output = draw(mutated(st.just(output), most=1))
        row[output_name] = draw(st.sampled_from([output, json.dumps(output)]))
    return row
