"""Tool calling as documented: calls, the functions a row declares, answers, turns.

Written from the seed's "Appel d'outils" section (002), the README's `tools=True` row
and `ChatFormat`'s docstring:

- a tool call is `{"type": "function", "function": {"name": str, "arguments": ...}}`,
  its `arguments` an object or the JSON text of one, a missing `type` read as
  "function" and `id` optional; a null or empty `tool_calls` means no call;
- ShareGPT's `function_call` turn holds the call itself (`{"name", "arguments"}` or a
  list of them, as JSON text or native values);
- the row's `tools` is a list of JSON schemas (`{"type": "function", "function":
  {"name": ...}}` or the bare `{"name": ...}`), native or JSON text; null declares nothing;
- the tool messages right after an assistant message with k calls answer them: at
  most k, each matching a call by `tool_call_id` (when the calls have ids) and by
  `name` (when it has one); one that answers nothing doesn't count;
- tool turns don't break alternation (`assistant, tool, assistant` is one assistant turn);
- consecutive tool messages (the answers to parallel calls) are one turn, with or without
  tools=True: TRL checks no turn order and mistral-common lets a tool message follow a tool
  message, so `tool, tool` never counts as a repeated role.
"""

from __future__ import annotations

from collections.abc import Mapping

from .values import ABSENT, BAD, decoded, given, is_list, is_missing, is_text


def _name(value):
    """A function's name: a string that isn't blank, else None."""
    return value if isinstance(value, str) and value.strip() else None


def _arguments_ok(arguments):
    if isinstance(arguments, Mapping):
        return True
    return is_text(arguments) and isinstance(decoded(arguments), dict)


def identifier(value):
    """A call's `id` or a tool message's `tool_call_id`: a string or an integer (not a boolean)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def tool_calls(message):
    """A message's calls: None (no call), a list of (id, name) pairs, or BAD."""
    value = given(message, "tool_calls")
    if value is ABSENT or (is_list(value) and len(value) == 0):
        return None
    if not is_list(value):
        return BAD
    calls = []
    for call in value:
        if not isinstance(call, Mapping):
            return BAD
        kind = given(call, "type")
        function = given(call, "function")
        if kind is not ABSENT and kind != "function":
            return BAD
        if not isinstance(function, Mapping) or _name(function.get("name")) is None:
            return BAD
        if not _arguments_ok(given(function, "arguments")):
            return BAD
        calls.append((identifier(given(call, "id")), function["name"]))
    return calls


def sharegpt_calls(value):
    """The calls a ShareGPT `function_call` turn holds in its value, or BAD."""
    value = decoded(value)
    items = value if is_list(value) else [value]
    if len(items) == 0:
        return BAD
    calls = []
    for item in items:
        if not isinstance(item, Mapping) or _name(item.get("name")) is None:
            return BAD
        if not _arguments_ok(given(item, "arguments")):
            return BAD
        calls.append((None, item["name"]))
    return calls


def declared_names(value):
    """The function names a row's `tools` value declares (a set), or BAD."""
    if is_missing(value):
        return frozenset()
    value = decoded(value)
    if not is_list(value):
        return BAD
    names = set()
    for schema in value:
        if not isinstance(schema, Mapping):
            return BAD
        holder = schema.get("function", schema)
        if not isinstance(holder, Mapping) or _name(holder.get("name")) is None:
            return BAD
        names.add(holder["name"])
    return frozenset(names)


def answers(message, calls):
    """Does a tool message match one of the calls it may answer (by id, by name, where given)?"""
    ident = identifier(given(message, "tool_call_id"))
    ids = [call_id for call_id, _ in calls if call_id is not None]
    if ident is not None and ids and not any(type(ident) is type(i) and ident == i for i in ids):
        return False
    name = given(message, "name")
    return not (isinstance(name, str) and name not in [call_name for _, call_name in calls])


def orphan_sites(roles, calls, messages, state=None):
    """The tool messages that answer no call. `state` is (calls, answers so far) of a run the
    messages continue (a completion after its prompt)."""
    run, answered = state if state is not None else (None, 0)
    sites = []
    for i, role in enumerate(roles):
        if role == "tool":
            if run and answered < len(run) and answers(messages[i], run):
                answered += 1
            else:
                sites.append(i)
        else:
            run = calls[i] if role == "assistant" and calls[i] not in (None, BAD) else None
            answered = 0
    return sites


def run_state(roles, calls, messages):
    """The open run at the end of a list of messages (for the messages that continue it)."""
    run, answered = None, 0
    for i, role in enumerate(roles):
        if role == "tool":
            if run and answered < len(run) and answers(messages[i], run):
                answered += 1
        else:
            run = calls[i] if role == "assistant" and calls[i] not in (None, BAD) else None
            answered = 0
    return run, answered


def repeated_turns(roles, turns, tools):
    """The turns whose role repeats the turn before (a tool message after a tool message never
    does): with tools, tool turns are passed over and an assistant turn after a tool run
    continues the assistant's turn."""
    sites = []
    previous, tool_between = None, False
    for i in turns:
        role = roles[i]
        if tools and role == "tool":
            tool_between = True
            continue
        if role == previous and role != "tool" and not (role == "assistant" and tool_between):
            sites.append(i)
        previous, tool_between = role, False
    return sites
