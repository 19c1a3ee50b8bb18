"""The TRL dataset types: their names and fields, and the type a table's columns make.

A leaf: the checks of the types (`dataset_check`, `openai_preference`), their construction
(`datasets`) and their locations (`locate_rows`) all read these names from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

LANGUAGE_MODELING = "language_modeling"
PROMPT_ONLY = "prompt_only"
PROMPT_COMPLETION = "prompt_completion"
PREFERENCE = "preference"
IMPLICIT_PREFERENCE = "implicit_preference"
UNPAIRED_PREFERENCE = "unpaired_preference"
OPENAI_PREFERENCE = "openai_preference"

DATASET_TYPES: tuple[str, ...] = (
    LANGUAGE_MODELING,
    PROMPT_ONLY,
    PROMPT_COMPLETION,
    PREFERENCE,
    IMPLICIT_PREFERENCE,
    UNPAIRED_PREFERENCE,
    OPENAI_PREFERENCE,
)

TYPE_FIELDS: dict[str, tuple[str, ...]] = {
    LANGUAGE_MODELING: ("text",),
    PROMPT_ONLY: ("prompt",),
    PROMPT_COMPLETION: ("prompt", "completion"),
    PREFERENCE: ("prompt", "chosen", "rejected"),
    IMPLICIT_PREFERENCE: ("chosen", "rejected"),
    UNPAIRED_PREFERENCE: ("prompt", "completion", "label"),
    OPENAI_PREFERENCE: ("input", "preferred_output", "non_preferred_output"),
}
"""The fields of each type, as `DatasetCheck` reads them (a conversational language
modeling table is a `ChatCheck` on its `messages` column)."""

CHAT_FIELDS: tuple[str, ...] = ("messages", "conversations")
"""Names of a language modeling table's conversation column (ShareGPT's is `conversations`)."""

FIELDS: tuple[str, ...] = (
    "text", *CHAT_FIELDS, "prompt", "completion", "chosen", "rejected", "label", *TYPE_FIELDS[OPENAI_PREFERENCE]
)

TITLES = {
    LANGUAGE_MODELING: "language modeling",
    PROMPT_ONLY: "prompt-only",
    PROMPT_COMPLETION: "prompt-completion",
    PREFERENCE: "preference (explicit prompt)",
    IMPLICIT_PREFERENCE: "preference (implicit prompt)",
    UNPAIRED_PREFERENCE: "unpaired preference",
    OPENAI_PREFERENCE: "preference (OpenAI format)",
}


def detect_dataset_type(column_names: Iterable[str]) -> str:
    """The TRL dataset type a table's columns make; ValueError when they make none or several.

    Columns other than `text`, `messages`, `conversations`, `prompt`, `completion`,
    `chosen`, `rejected` and `label` are extra columns and don't count.

    >>> detect_dataset_type(["prompt", "chosen", "rejected", "id"])
    'preference'
    >>> detect_dataset_type(["chosen", "rejected"])
    'implicit_preference'
    >>> detect_dataset_type(["messages", "prompt"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: can't tell the dataset type from the columns ['messages', 'prompt']: ...
    """
    names = [str(name) for name in column_names]
    present = [name for name in FIELDS if name in names]
    openai_input, *openai_outputs = TYPE_FIELDS[OPENAI_PREFERENCE]
    if openai_input in present and not set(openai_outputs) & set(present):
        present.remove(openai_input)  # a common column name: a field only beside an OpenAI preference output
    found = _type_of(present)
    if found is not None:
        return found
    known = ", ".join(f"{k}: {list(TYPE_FIELDS[k])}" for k in DATASET_TYPES[1:])
    raise ValueError(
        f"can't tell the dataset type from the columns {present or sorted(names)}: "
        f"a language modeling table has one of {['text', *CHAT_FIELDS]}, and the others "
        f"have exactly these columns ({known}). Name the type (and map the columns) instead."
    )


def _type_of(present: list[str]) -> str | None:
    """The type whose fields are exactly the fields `present` (a language modeling table has one
    of its text or chat columns alone), or None."""
    chat = [name for name in present if name in ("text", *CHAT_FIELDS)]
    if chat:
        return LANGUAGE_MODELING if len(chat) == len(present) == 1 else None
    for kind, fields in TYPE_FIELDS.items():
        if kind != LANGUAGE_MODELING and set(fields) == set(present):
            return kind
    return None


def field_names(columns: Mapping[str, str] | None) -> dict[str, str]:
    """`columns=` (fields to the table's column names) as a dict; TypeError or ValueError naming what is wrong."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise TypeError(f"columns= must map fields to column names, not {type(columns).__name__}")
    for name, column in columns.items():
        if name not in FIELDS:
            raise ValueError(
                f"columns= maps {name!r}, which isn't one of the fields {list(FIELDS)}"
            )
        if not isinstance(column, str):
            raise TypeError(
                f"columns= must map {name!r} to a column name (a string), not {column!r}"
            )
    return dict(columns)
