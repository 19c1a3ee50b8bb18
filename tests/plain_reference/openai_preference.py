"""OpenAI's and Together's preference rows: `input`, `preferred_output`, `non_preferred_output`.

Written from the README's section on `openai_preference` and its rows of the trainers'
table ("preference rows: ..."):

- `input` is an object whose `messages` is a list of messages, with optional `tools`
  and `parallel_tool_calls` (true or false): `bad_input` for a bare list of messages,
  an object without `messages` or another `parallel_tool_calls`; `not_messages` for a
  missing value, text that isn't JSON of an object, or `messages` that isn't a list;
- each output is a list of exactly one message (`output_count`; `not_messages` when not a
  list, a single message object included unless `single_message_answers=True`), the
  assistant's (`completion_role`, even with tools=True);
- the input's messages are a prompt (`prompt_end`), and the input followed by each output
  is judged as a whole conversation with the check's options; with tools=True an output's
  calls are checked against `input.tools` when given (`bad_tools`, `unknown_tool`);
- identical outputs pass; a key whose value is null counts as absent.

Where: a problem is in `input` or in the output its message is in (a whole
conversation's own problem in its output's; malformed tools in the input).
"""

from __future__ import annotations

from collections.abc import Mapping

from .conversation import OUTPUT, PROMPT, WHOLE, judge_all
from .datasets import Found, _placed, _split
from .options import resolve
from .tools import declared_names
from .values import ABSENT, given, is_list, is_missing, is_text, read_json

OUTPUTS = ("preferred_output", "non_preferred_output")


def _decoded(value):
    """A value with its JSON text read (text that isn't JSON is neither a list nor an object)."""
    return read_json(value) if is_text(value) else value


def read_input(value, o, found):
    """The input's messages and declared functions (None where a code was found)."""
    if is_missing(value):
        if not o.na_pass:
            found.add("not_messages", "input")
        return None, None
    value = _decoded(value)
    if is_list(value):
        found.add("bad_input", "input")
        return None, None
    if not isinstance(value, Mapping):
        found.add("not_messages", "input")
        return None, None
    messages, parallel, tools = (given(value, key) for key in ("messages", "parallel_tool_calls", "tools"))
    if parallel is not ABSENT and not isinstance(parallel, bool):
        found.add("bad_input", "input")
    if messages is ABSENT:
        found.add("bad_input", "input")
        return None, None
    if not is_list(messages):
        found.add("not_messages", "input")
        return None, None
    return list(messages), (declared_names(tools) if o.tools and tools is not ABSENT else None)


def read_output(value, field, o, found):
    """An output's one message as a list, or None where a code was found."""
    if is_missing(value):
        if not o.na_pass:
            found.add("not_messages", field)
        return None
    value = _decoded(value)
    if isinstance(value, Mapping) and "messages" not in value and (o.single_message_answers or o.sharegpt):
        value = [value] if o.role_key in value else value
    if not is_list(value):
        found.add("not_messages", field)
        return None
    if len(value) != 1:
        found.add("output_count", field)
        return None
    return list(value)


def preference_found(row, options):
    o = resolve(options)
    found = Found(("input", *OUTPUTS), "input")
    messages, declared = read_input(row.get("input"), o, found)
    outputs = {field: read_output(row.get(field), field, o, found) for field in OUTPUTS}
    if messages is not None:
        found.add_judged(judge_all(messages, o, PROMPT), _placed("input"))
    for field, output in outputs.items():
        if output is None:
            continue
        found.add_judged(judge_all(output, o, OUTPUT), _placed(field))
        if messages is not None:
            place = _split([("input", len(messages)), (field, 1)])
            found.add_judged(judge_all(messages + output, o, WHOLE, declared), place)
    return found


def plain_preference_answers(row, **options):
    """The right answers for one OpenAI preference row: (code, column, message) or None."""
    return {preference_found(row, options).first()}

