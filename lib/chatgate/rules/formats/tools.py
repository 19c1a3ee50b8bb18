"""Tool calling: the calls an assistant message makes, and the functions a row declares.

A tool call is `{"type": "function", "function": {"name": str, "arguments": ...}}`
(transformers, TRL, OpenAI), where `arguments` is an object or the JSON text of an
object, and `id` is optional. A missing `type` is read as "function" (axolotl's
and others' data leave it out); any other `type` is malformed. A null or empty
`tool_calls` means no call.

The `tools` column of a row is a list of JSON schemas, as native values or JSON
text: `{"type": "function", "function": {"name": ...}}` or the bare
`{"name": ..., "parameters": ...}` (LLaMA-Factory, glaive). A null `tools` declares
nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from ..base.markers import BAD, MISSING
from ..base.values import NOT_JSON, is_missing, is_sequence, parse_json
from ..conversation.conversation import Conversation
from ..conversation.rule import per_message, walk, whole_value
from ..conversation.spec import TOOL_ROLE


class Call(NamedTuple):
    """One well-formed tool call: its id (None when it has none) and function name."""

    id: Any
    name: str


def parse_calls(value: Any) -> tuple[Call, ...] | None | object:
    """The calls of a `tool_calls` value: a tuple of `Call`, None for no calls, or `BAD`.

    >>> parse_calls([{"type": "function", "function": {"name": "f", "arguments": "{}"}}])
    (Call(id=None, name='f'),)
    >>> parse_calls(None) is None, parse_calls([{"function": {"name": "f"}}]) is BAD
    (True, True)
    """
    if value is MISSING or is_missing(value):
        return None
    if not is_sequence(value):
        return BAD
    calls = []
    for call in value:
        parsed = _call(call)
        if parsed is BAD:
            return BAD
        calls.append(parsed)
    return tuple(calls) or None


def _call(call: Any) -> Call | object:
    if not isinstance(call, Mapping):
        return BAD
    kind = call.get("type")
    if not (kind is None or is_missing(kind) or (isinstance(kind, str) and kind == "function")):
        return BAD
    function = call.get("function")
    if not isinstance(function, Mapping):
        return BAD
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        return BAD
    if not _is_arguments(function.get("arguments", MISSING)):
        return BAD
    return Call(identifier(call.get("id")), name)


def identifier(value: Any) -> str | int | None:
    """A call id or a tool message's `tool_call_id`: a string or an integer, else None."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _is_arguments(value: Any) -> bool:
    if isinstance(value, Mapping):
        return True
    if isinstance(value, (str, bytes)):
        return isinstance(parse_json(value), Mapping)
    return False


def sharegpt_calls(value: Any) -> tuple[Call, ...] | None | object:
    """The calls of a ShareGPT `function_call` turn, whose value is the call itself.

    The value is `{"name": ..., "arguments": ...}` or a list of them, as JSON text
    or native values.

    >>> sharegpt_calls('{"name": "f", "arguments": {"x": 1}}')
    (Call(id=None, name='f'),)
    >>> sharegpt_calls("call f") is BAD
    True
    """
    if isinstance(value, (str, bytes)):
        value = parse_json(value)
    if isinstance(value, Mapping):
        value = [value]
    if value is NOT_JSON or value is MISSING or is_missing(value) or not is_sequence(value):
        return BAD
    if not len(value) or not all(isinstance(call, Mapping) for call in value):
        return BAD
    return parse_calls([{"type": "function", "function": call} for call in value])


def declared_names(value: Any) -> frozenset[str] | object:
    """The function names a row's `tools` value declares, or `BAD`.

    >>> sorted(declared_names('[{"type": "function", "function": {"name": "f"}}, {"name": "g"}]'))
    ['f', 'g']
    >>> declared_names(None), declared_names("not json") is BAD
    (frozenset(), True)
    """
    if value is MISSING or is_missing(value):
        return frozenset()
    if isinstance(value, (str, bytes)):
        value = parse_json(value)
    if value is NOT_JSON or not is_sequence(value):
        return BAD
    names = set()
    for schema in value:
        if not isinstance(schema, Mapping):
            return BAD
        function = schema.get("function")
        name = function.get("name") if isinstance(function, Mapping) else schema.get("name")
        if not isinstance(name, str) or not name:
            return BAD
        names.add(name)
    return frozenset(names)


# --- The rules (in the table of `check.judge`) -----------------------------------------------


@per_message(
    "tools",
    "extras",
    phrase=("has a malformed tool call", "have a malformed tool call"),
    raised_by="tools=True",
    meaning='`tool_calls` isn\'t a list of `{"type": "function", "function": {"name", "arguments"}}` on an assistant message',
)
def bad_tool_call(c: Conversation, i: int) -> bool:
    """Refuses malformed `tool_calls`, and tool calls on a message that isn't the assistant's."""
    calls = c.extras[i].calls
    return calls is BAD or (calls is not None and c.roles[i] != "assistant")


@whole_value(
    "declared",
    phrase=("has a tools list that isn't a list of function schemas", "have a tools list that isn't a list of function schemas"),
    raised_by="tools column",
    meaning="the row's `tools` isn't a list of function schemas",
    where="None: the row's `tools` column, not a message",
)
def bad_tools(c: Conversation) -> bool:
    """Refuses a row whose `tools` value isn't a list of function schemas."""
    return c.declared is BAD


@walk(
    "tools",
    "extras",
    "not_completion",
    phrase=("has a tool message that answers no tool call", "have a tool message that answers no tool call"),
    raised_by="tools=True",
    meaning="a tool message that answers no earlier tool call",
    where="each tool message that answers no call (one that does not answer counts as no answer)",
)
def orphan_tool(c: Conversation) -> Iterator[int | None]:
    """Refuses a tool message that answers no call of the assistant message before its run.

    The tool messages right after an assistant message with k calls answer those
    calls: at most k of them, each matching a call by `tool_call_id` (when the calls
    have ids) and by `name` (when it has one).
    """
    calls: Any = None
    answered = 0
    for i, (role, extra) in enumerate(zip(c.roles, c.extras)):
        if role != TOOL_ROLE:
            calls = extra.calls if role == "assistant" and extra.calls is not BAD else None
            answered = 0
        elif not calls or answered >= len(calls) or not _answers(extra, calls):
            yield i
        else:
            answered += 1


@per_message(
    "declared",
    "extras",
    phrase=("calls a function its tools don't declare", "call a function their tools don't declare"),
    raised_by="tools column",
    meaning="a called function isn't declared in the row's `tools`",
)
def unknown_tool(c: Conversation, i: int) -> bool:
    """Refuses a call of a function that the row's tools don't declare."""
    calls, declared = c.extras[i].calls, c.declared
    # Malformed calls and a malformed tools column are bad_tool_call's and bad_tools'.
    if not calls or calls is BAD or declared is BAD:
        return False
    return any(call.name not in declared for call in calls)


def _answers(extra: Any, calls: Sequence[Call]) -> bool:
    """Does a tool message match the calls it answers (by id and by name, where given)?"""
    ids = [call.id for call in calls if call.id is not None]
    if extra.call_id is not None and ids and extra.call_id not in ids:
        return False
    return extra.name is None or extra.name in [call.name for call in calls]
