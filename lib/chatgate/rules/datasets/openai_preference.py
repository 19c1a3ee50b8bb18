"""OpenAI's and Together's preference rows: `input`, `preferred_output`, `non_preferred_output`.

The format of OpenAI's DPO fine-tuning (its guide, and `FineTunePreferenceRequestInput`
in openai/openai-openapi), which Together's preference fine-tuning reads too (its SDK's
`validate_preference_openai`):

    {"input": {"messages": [...], "tools": [...], "parallel_tool_calls": true},
     "preferred_output": [{"role": "assistant", "content": "..."}],
     "non_preferred_output": [{"role": "assistant", "content": "..."}]}

Its rules (a row's code is the first of its problems in `codes.ALL_REASONS` order):

- `input` is an object whose `messages` is a list of messages: `bad_input` for a bare
  list, an object without `messages`, or a `parallel_tool_calls` that isn't true or
  false; `not_messages` for a missing value, text that isn't JSON of an object, or
  `messages` that isn't a list;
- each output is a list of exactly one message (`output_count`; `not_messages` when it
  isn't a list) whose role is the assistant's (`completion_role`: both trainers want the
  assistant's message, so a tool message doesn't do, even with tools=True);
- the input's messages are judged as a conversational prompt (`prompt_end`: they end
  with a user turn, or a tool turn with tools=True), each output as a completion, and
  the input followed by each output as a whole conversation, all with the check's
  `ChatFormat` (a profile's rules included); with tools=True the called functions are
  those `input.tools` declares (`bad_tools`, `unknown_tool`), when it is given.

Values are JSON text or native (a struct `input`, lists of structs): a key whose value
is null counts as absent. Identical outputs pass, as both trainers take them (chatgate's
TRL preference types refuse them, `same_pair`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.sizes import TOO_LARGE
from ..base.values import blank_checker, is_missing
from ..check.codes import ALL_REASONS, first_reason
from ..check.judge import format_codes, judge
from ..conversation.conversation import COMPLETION, PROMPT, WHOLE
from ..conversation.spec import ChatFormat
from ..formats.messages import Read, messages_in, read_messages
from ..formats.tools import declared_names
from ..location.sites import Problem, RowProblem, problems_in
from .dataset_check import DatasetCheck
from .dataset_types import OPENAI_PREFERENCE, TYPE_FIELDS
from .value_formats import CONV, CONVERSATIONAL, MISSING_VALUE, STANDARD, classify

INPUT, PREFERRED, NON_PREFERRED = TYPE_FIELDS[OPENAI_PREFERENCE]
OUTPUTS = (PREFERRED, NON_PREFERRED)

Sizes = tuple[tuple[str, int], ...]
"""The fields a judged list of messages is made of, in order, with their lengths."""


@dataclass(frozen=True)
class OpenAIPreferenceCheck(DatasetCheck):
    """The columns of an OpenAI (and Together) preference row, judged together (see the module).

    Build it with `dataset_checks("openai_preference", ...)`. It has no standard
    format, and no tools or images columns: its tools are the input's.

    >>> import pyarrow as pa
    >>> row = {"input": '{"messages": [{"role": "user", "content": "Sky?"}]}',
    ...        "preferred_output": '[{"role": "assistant", "content": "Blue."}]',
    ...        "non_preferred_output": '[{"role": "user", "content": "Green."}]'}
    >>> OpenAIPreferenceCheck().check(pa.table({k: [v] for k, v in row.items()})).to_pylist()
    ['completion_role']
    """

    dataset_type: str = OPENAI_PREFERENCE

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dataset_type != OPENAI_PREFERENCE:
            raise ValueError(f"an OpenAIPreferenceCheck is of the type {OPENAI_PREFERENCE!r}")
        if self.format == STANDARD:
            raise ValueError("an openai_preference row is conversational: format='standard' doesn't apply")
        if self.tools_column is not None or self.images_column is not None:
            raise ValueError("an openai_preference row has no tools or images column (its tools are in `input`)")

    @property
    def codes(self) -> tuple[str, ...]:
        codes = {"not_messages", "bad_input", "output_count", "prompt_end", "completion_role", *format_codes(self.fmt)}
        if self.fmt.tools:
            codes |= {"bad_tools", "unknown_tool"}
        return tuple(code for code in ALL_REASONS if code in codes)

    def check_row(self, row: Mapping[str, Any]) -> str | None:
        if self.too_large(row) is not None:
            return TOO_LARGE  # the first code: no value of the row is read
        read = _read_row(self, row)
        fmt, blank = self.fmt, blank_checker(self.fmt.text_key)
        codes: list[str | None] = [code for code, _, _ in read.found]
        for part, messages, _, declared in read.parts():
            codes.append(
                judge(messages.roles, messages.contents, fmt, blank, messages.extras, part=part, declared=declared)
            )
        return first_reason(codes)


def located(check: DatasetCheck, row: Mapping[str, Any]) -> list[RowProblem]:
    """Every problem of one row, in its column and at its message (`locate_rows.row_problems`):
    the walk of `check_row`, with `problems_in` for `judge`."""
    read = _read_row(check, row)
    found = [RowProblem(code, check.column_of(name), message) for code, name, message in read.found]
    for part, messages, sizes, declared in read.parts():
        found.extend(_placed(check, p, sizes) for p in problems_in(messages, check.fmt, part=part, declared=declared))
    return found


def _placed(check: DatasetCheck, problem: Problem, sizes: Sizes) -> RowProblem:
    """A problem of a judged list placed in the field its message is in (a whole
    conversation's own problem in its output's; malformed tools in the input)."""
    if problem.code == "bad_tools":
        return RowProblem(problem.code, check.column_of(INPUT), None)
    message = problem.message
    last = sizes[-1][0]
    if message is None:
        return RowProblem(problem.code, check.column_of(last), None)
    for name, size in sizes:
        if message < size or name == last:
            return RowProblem(problem.code, check.column_of(name), message)
        message -= size
    raise AssertionError("unreachable: the last field takes what is left")


# --- Reading a row ---------------------------------------------------------------------------


@dataclass
class _Row:
    """One row as read: the problems found while reading it (code, field, message), the
    input's messages, each output's one message, and the functions the input declares."""

    found: list[tuple[str, str, int | None]] = field(default_factory=list)
    prompt: Read | None = None
    outputs: dict[str, Read] = field(default_factory=dict)
    declared: Any = None

    def parts(self) -> Iterator[tuple[str, Read, Sizes, Any]]:
        """What is judged: the prompt, each output, and the prompt followed by each output
        (with the declared functions), as (part, messages, their fields, declared)."""
        prompt = self.prompt
        if prompt is not None:
            yield PROMPT, prompt, ((INPUT, len(prompt.roles)),), None
        for name, output in self.outputs.items():
            yield COMPLETION, output, ((name, 1),), None
            if prompt is not None:
                yield WHOLE, prompt.then(output), ((INPUT, len(prompt.roles)), (name, 1)), self.declared


def _read_row(check: DatasetCheck, row: Mapping[str, Any]) -> _Row:
    fmt = check.fmt
    read = _Row()
    _read_input(read, row.get(check.column_of(INPUT)), fmt)
    for name in OUTPUTS:
        kind, value = classify(row.get(check.column_of(name)), CONVERSATIONAL)
        if kind == MISSING_VALUE:
            if not fmt.na_pass:
                read.found.append(("not_messages", name, None))
            continue
        messages = _output_messages(value, fmt) if kind == CONV else None
        if messages is None:
            read.found.append(("not_messages", name, None))
        elif len(messages) != 1:
            read.found.append(("output_count", name, None))
        else:
            output = read_messages(messages, fmt, extras=True)
            role = output.roles[0]  # BAD when it isn't a string: `judge` says so (bad_message)
            if isinstance(role, str) and role != "assistant":
                read.found.append(("completion_role", name, 0))
            read.outputs[name] = output
    return read


def _read_input(read: _Row, raw: Any, fmt: ChatFormat) -> None:
    kind, value = classify(raw, CONVERSATIONAL)
    if kind == MISSING_VALUE:
        if not fmt.na_pass:
            read.found.append(("not_messages", INPUT, None))
        return
    if kind != CONV:
        read.found.append(("not_messages", INPUT, None))
        return
    if not isinstance(value, Mapping) or is_missing(value.get("messages")):
        read.found.append(("bad_input", INPUT, None))  # both trainers want the messages under `input`
        return
    parallel = value.get("parallel_tool_calls")
    if not is_missing(parallel) and not isinstance(parallel, bool):
        read.found.append(("bad_input", INPUT, None))
    messages = messages_in(value, fmt)
    if messages is None:
        read.found.append(("not_messages", INPUT, None))
        return
    read.prompt = read_messages(messages, fmt, extras=True)
    tools = value.get("tools")
    if fmt.tools and not is_missing(tools):
        read.declared = declared_names(tools)


def _output_messages(value: Any, fmt: ChatFormat) -> list[Any] | None:
    """An output's messages: a list; one message object only where answers may be one
    (`single_message_answers`, ShareGPT), never `{"messages": [...]}`."""
    if isinstance(value, Mapping):
        loose = fmt.single_message_answers or fmt.sharegpt
        return [value] if loose and "messages" not in value and fmt.role_key in value else None
    return messages_in(value, fmt)


__all__ = ["OpenAIPreferenceCheck", "located"]
