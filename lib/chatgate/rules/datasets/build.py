"""TRL dataset types: the columns of a fine-tuning table, checked together.

| type | columns | conversational rules | standard rules |
|---|---|---|---|
| language_modeling | `messages` (or ShareGPT `conversations`) / `text` | the chat check (`ChatCheck`) | non-empty string |
| prompt_only | `prompt` | the prompt ends with a user turn (or a tool turn with tools=True) | non-empty string |
| prompt_completion | `prompt`, `completion` | prompt as above; completion holds assistant (and tool) turns only; prompt + completion passes the chat check | non-empty strings |
| preference | `prompt`, `chosen`, `rejected` | as prompt_completion, for prompt + chosen and prompt + rejected; chosen and rejected differ | non-empty strings; chosen and rejected differ |
| implicit_preference | `chosen`, `rejected` | each passes the chat check; they differ; they share a non-empty common prefix ending with a user (or tool) turn, each continues after it with assistant (and tool) turns only | non-empty strings that differ, share a non-empty common prefix and both continue after it |
| unpaired_preference | `prompt`, `completion`, `label` | as prompt_completion; label is true or false | non-empty strings; label is true or false |
| openai_preference | `input`, `preferred_output`, `non_preferred_output` | OpenAI's and Together's preference rows (`openai_preference`) | none |

Format. A value is conversational (a list of messages) or standard (other text);
`format="auto"` reads each row in the format of its values, and a row that mixes
both is `mixed_format`. See `formats` for the pinned formats and for counting the
formats of a whole column.

Missing values (null, NaN) in a type's columns are `not_messages` (conversational)
or `not_text` (standard) and `not_label` for a label; with the ChatFormat's
`na_pass=True` they pass and the rules that need them are skipped. A row whose
values are all missing (or neither text nor conversations) is read as conversational.

The whole conversations of a row (prompt + completion, prompt + chosen, ...) are
judged with the ChatFormat, including `first_role`/`last_role` (except that a
prompt-only row's last role is the prompt rule's business). A row's `tools` (with
tools=True) and `images` columns, when present, apply to each whole conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..check.checks import ChatCheck, RowCheck
from ..check.codes import first_reason
from ..conversation.spec import ChatFormat
from ..trainers.profiles import format_from
from .dataset_check import DatasetCheck
from .dataset_types import (
    CHAT_FIELDS,
    DATASET_TYPES,
    LANGUAGE_MODELING,
    OPENAI_PREFERENCE,
    TITLES,
    TYPE_FIELDS,
    detect_dataset_type,
    field_names,
)
from .openai_preference import OpenAIPreferenceCheck
from .value_formats import (
    AUTO,
    CONVERSATIONAL,
    FORMATS,
    STANDARD,
    format_counts,
    majority_format,
    value_format,
)

# --- Construction ------------------------------------------------------------------


def dataset_checks(
    dataset_type: str | None,
    columns_present: Iterable[str],
    *,
    chat: ChatFormat | None = None,
    format: str = AUTO,
    columns: Mapping[str, str] | None = None,
    tools_column: str | None = "tools",
    images_column: str | None = "images",
    **chat_options: Any,
) -> list[RowCheck]:
    """The row checks of a dataset type over a table with `columns_present`.

    `dataset_type` is one of `DATASET_TYPES`, or None to detect it from the columns.
    `chat` (or `**chat_options`, the fields of `ChatFormat`) says what a
    conversation is; `format` is "auto", "conversational" or "standard";
    `columns` maps a type's fields to the table's column names (`{"prompt":
    "conversations"}`); `tools_column` (with tools=True) and `images_column` are
    checked when the table has them.

    >>> [c.describe() for c in dataset_checks(None, ["prompt", "completion"])]
    ['prompt, completion form a prompt-completion row']
    >>> dataset_checks("language_modeling", ["messages", "id"], last_role="assistant")[0].column
    'messages'
    """
    present = [str(name) for name in columns_present]
    names = field_names(columns)
    fmt = _format(chat, chat_options, format)
    if dataset_type is None:
        inverse = {column: name for name, column in names.items()}
        dataset_type = detect_dataset_type(inverse.get(column, column) for column in present)
    if dataset_type not in DATASET_TYPES:
        raise ValueError(f"dataset type {dataset_type!r} isn't one of {list(DATASET_TYPES)}")
    tools = tools_column if fmt.tools and tools_column in present else None
    images = images_column if images_column in present else None
    if dataset_type == LANGUAGE_MODELING:
        chat_column = _chat_column(names, present, format)
        if chat_column is not None:
            return [ChatCheck(chat_column, fmt, tools, images)]
    mapped = _mapped_fields(dataset_type, names, present)
    if dataset_type == OPENAI_PREFERENCE:  # its tools are in `input`; its own module judges it
        return [OpenAIPreferenceCheck(dataset_type, fmt, format, mapped)]
    return [DatasetCheck(dataset_type, fmt, format, mapped, tools, images)]


def _mapped_fields(dataset_type: str, names: dict[str, str], present: list[str]) -> tuple[tuple[str, str], ...]:
    """The type's fields that `columns=` maps to other column names; ValueError naming the
    columns the table lacks."""
    missing = [names.get(f, f) for f in TYPE_FIELDS[dataset_type] if names.get(f, f) not in present]
    if missing:
        raise ValueError(
            f"a {TITLES[dataset_type]} table needs the columns {missing}; it has {present}"
        )
    return tuple((f, names[f]) for f in TYPE_FIELDS[dataset_type] if f in names and names[f] != f)


def _format(chat: ChatFormat | None, chat_options: dict[str, Any], format: str) -> ChatFormat:
    """The ChatFormat of `dataset_checks` (given, or made of the options), with `format=` checked."""
    if chat is not None and chat_options:
        raise TypeError("give chat= or the ChatFormat keyword arguments, not both")
    fmt = chat if chat is not None else format_from(**chat_options)
    if not isinstance(fmt, ChatFormat):
        raise TypeError(f"chat= must be a ChatFormat, not {type(fmt).__name__}")
    if format not in FORMATS:
        raise ValueError(f"format={format!r} isn't one of {list(FORMATS)}")
    return fmt


def _chat_column(names: dict[str, str], present: list[str], format: str) -> str | None:
    """A language modeling table's conversation column, or None when its column is `text`."""
    candidates = ("text", *CHAT_FIELDS)
    found = [f for f in candidates if names.get(f, f) in present]
    if len(found) != 1:
        raise ValueError(
            f"a language modeling table has one of the columns "
            f"{[names.get(f, f) for f in candidates]}; found {found or present}"
        )
    if found[0] == "text":
        if format == CONVERSATIONAL:
            raise ValueError("format='conversational' has a `messages` column, not `text`")
        return None
    if format == STANDARD:
        raise ValueError("format='standard' has a `text` column, not a conversation column")
    return names.get(found[0], found[0])


def first_row_problem(
    row: Mapping[str, Any], dataset_type: str | None = None, **options: Any
) -> str | None:
    """The first problem code of one row (column name -> value), or None when it passes.

    The per-row reference of `dataset_checks` (same keyword arguments).

    >>> first_row_problem({"prompt": "The sky is", "completion": " blue."}) is None
    True
    >>> first_row_problem({"prompt": [{"role": "user", "content": "Hi"}], "completion": [{"role": "user", "content": "Yo"}]})
    'completion_role'
    """
    checks = dataset_checks(dataset_type, list(row), **options)
    return first_reason(check.check_row(row) for check in checks)


__all__ = [
    "DATASET_TYPES",
    "FORMATS",
    "DatasetCheck",
    "dataset_checks",
    "detect_dataset_type",
    "first_row_problem",
    "format_counts",
    "majority_format",
    "value_format",
]
