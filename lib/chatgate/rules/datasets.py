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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .checks import ChatCheck, RowCheck, label_problem
from .codes import ALL_REASONS, first_reason
from .formats import (
    AUTO,
    CONV,
    CONVERSATIONAL,
    FORMATS,
    MISSING_VALUE,
    PARTS,
    STANDARD,
    TEXT,
    classify,
    format_counts,
    majority_format,
    value_format,
)
from .judge import COMPLETION, PROMPT, WHOLE, judge
from .markers import TOO_LARGE_VALUE
from .messages import Read, image_total, messages_in, read_messages
from .sizes import TOO_LARGE, is_too_large
from .spec import ChatFormat, format_from
from .standard import PART_FIELDS, parts_codes, standard_problems
from .tools import declared_names
from .values import blank_checker, common_prefix, same_value

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

_TITLES = {
    LANGUAGE_MODELING: "language modeling",
    PROMPT_ONLY: "prompt-only",
    PROMPT_COMPLETION: "prompt-completion",
    PREFERENCE: "preference (explicit prompt)",
    IMPLICIT_PREFERENCE: "preference (implicit prompt)",
    UNPAIRED_PREFERENCE: "unpaired preference",
    OPENAI_PREFERENCE: "preference (OpenAI format)",
}


# --- Detection and construction ------------------------------------------------


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
    chat = [name for name in present if name in ("text", *CHAT_FIELDS)]
    if chat and len(chat) == len(present) == 1:
        return LANGUAGE_MODELING
    if not chat:
        for kind, fields in TYPE_FIELDS.items():
            if kind != LANGUAGE_MODELING and set(fields) == set(present):
                return kind
    known = ", ".join(f"{k}: {list(TYPE_FIELDS[k])}" for k in DATASET_TYPES[1:])
    raise ValueError(
        f"can't tell the dataset type from the columns {present or sorted(names)}: "
        f"a language modeling table has one of {['text', *CHAT_FIELDS]}, and the others "
        f"have exactly these columns ({known}). Name the type (and map the columns) instead."
    )


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
    names = _names(columns)
    if chat is not None and chat_options:
        raise TypeError("give chat= or the ChatFormat keyword arguments, not both")
    fmt = chat if chat is not None else format_from(**chat_options)
    if not isinstance(fmt, ChatFormat):
        raise TypeError(f"chat= must be a ChatFormat, not {type(fmt).__name__}")
    if format not in FORMATS:
        raise ValueError(f"format={format!r} isn't one of {list(FORMATS)}")
    if dataset_type is None:
        inverse = {column: name for name, column in names.items()}
        dataset_type = detect_dataset_type(inverse.get(column, column) for column in present)
    if dataset_type not in DATASET_TYPES:
        raise ValueError(f"dataset type {dataset_type!r} isn't one of {list(DATASET_TYPES)}")
    tools = tools_column if fmt.tools and tools_column in present else None
    images = images_column if images_column in present else None
    if dataset_type == LANGUAGE_MODELING:
        found = [f for f in ("text", *CHAT_FIELDS) if names.get(f, f) in present]
        if len(found) != 1:
            raise ValueError(
                f"a language modeling table has one of the columns "
                f"{[names.get(f, f) for f in ('text', *CHAT_FIELDS)]}; found {found or present}"
            )
        if found[0] != "text":
            if format == STANDARD:
                raise ValueError("format='standard' has a `text` column, not a conversation column")
            return [ChatCheck(names.get(found[0], found[0]), fmt, tools, images)]
        if format == CONVERSATIONAL:
            raise ValueError("format='conversational' has a `messages` column, not `text`")
    missing = [names.get(f, f) for f in TYPE_FIELDS[dataset_type] if names.get(f, f) not in present]
    if missing:
        raise ValueError(
            f"a {_TITLES[dataset_type]} table needs the columns {missing}; it has {present}"
        )
    mapped = tuple((f, names[f]) for f in TYPE_FIELDS[dataset_type] if f in names and names[f] != f)
    if dataset_type == OPENAI_PREFERENCE:  # its tools are in `input`; its own module judges it
        from .openai_preference import OpenAIPreferenceCheck

        return [OpenAIPreferenceCheck(dataset_type, fmt, format, mapped)]
    return [DatasetCheck(dataset_type, fmt, format, mapped, tools, images)]


def _names(columns: Mapping[str, str] | None) -> dict[str, str]:
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


# --- The check -------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetCheck(RowCheck):
    """The columns of one TRL dataset type, judged together, one code per row.

    Build it with `dataset_checks`. `names` maps fields to column names where they
    differ (`(("prompt", "conversations"),)`).

    >>> import pyarrow as pa
    >>> check = DatasetCheck("preference")
    >>> check.check(pa.table({"prompt": ["The sky is"], "chosen": [" blue."], "rejected": [" blue."]})).to_pylist()
    ['same_pair']
    """

    dataset_type: str
    fmt: ChatFormat = field(default_factory=ChatFormat)
    format: str = AUTO
    names: tuple[tuple[str, str], ...] = ()
    tools_column: str | None = None
    images_column: str | None = None

    def __post_init__(self) -> None:
        if self.dataset_type not in DATASET_TYPES:
            raise ValueError(
                f"dataset type {self.dataset_type!r} isn't one of {list(DATASET_TYPES)}"
            )
        if not isinstance(self.fmt, ChatFormat):
            raise TypeError(f"fmt= must be a ChatFormat, not {type(self.fmt).__name__}")
        if self.format not in FORMATS:
            raise ValueError(f"format={self.format!r} isn't one of {list(FORMATS)}")
        if self.dataset_type == OPENAI_PREFERENCE and type(self) is DatasetCheck:
            raise ValueError("an openai_preference row is judged by `dataset_checks`' OpenAIPreferenceCheck")
        if self.dataset_type == LANGUAGE_MODELING and self.format == CONVERSATIONAL:
            raise ValueError("a conversational language modeling column is a ChatCheck")
        object.__setattr__(self, "names", tuple(_names(dict(self.names)).items()))
        for key in ("tools_column", "images_column"):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{key}= must be a column name (a string) or None, not {value!r}")
        if self.tools_column is not None and not self.fmt.tools:
            raise ValueError("tools_column= needs tools=True in the ChatFormat")

    # -- the interface

    @property
    def fields(self) -> tuple[str, ...]:
        return TYPE_FIELDS[self.dataset_type]

    def column_of(self, name: str) -> str:
        return dict(self.names).get(name, name)

    @property
    def columns(self) -> tuple[str, ...]:
        extra = tuple(c for c in (self.tools_column, self.images_column) if c)
        return tuple(self.column_of(f) for f in self.fields) + extra

    @property
    def value_limits(self) -> dict[str, int]:
        """Every field's values are measured (`max_value_bytes=`), but a label's."""
        limit = self.fmt.max_value_bytes
        return {} if limit is None else {self.column_of(f): limit for f in self.fields if f != "label"}

    def too_large(self, row: Mapping[str, Any]) -> str | None:
        """The column of the first value of `row` larger than `max_value_bytes=`, if any."""
        limit = self.fmt.max_value_bytes
        for column in self.value_limits:
            value = row.get(column)
            if value is TOO_LARGE_VALUE or is_too_large(value, limit):
                return column
        return None

    @property
    def codes(self) -> tuple[str, ...]:
        kind = self.dataset_type
        codes: set[str] = set()
        values = [f for f in self.fields if f != "label"]
        if kind == LANGUAGE_MODELING or self.format != AUTO or len(values) > 1:
            codes.add("mixed_format")
        if "label" in self.fields:
            codes.add("not_label")
        if kind in (PREFERENCE, IMPLICIT_PREFERENCE):
            codes.add("same_pair")
        if self.fmt.max_value_bytes is not None:
            codes.add(TOO_LARGE)
        if self.format != CONVERSATIONAL:
            codes |= {"not_text", "empty_text"}
            if kind == IMPLICIT_PREFERENCE:
                codes.add("implicit_prompt")
            if self._parts_fields():
                codes |= parts_codes(self.fmt)
        if self.format != STANDARD and kind != LANGUAGE_MODELING:
            codes |= set(self.fmt.codes())
            codes.add("prompt_end")
            if kind != PROMPT_ONLY:
                codes.add("completion_role")
            if kind == IMPLICIT_PREFERENCE:
                codes.add("implicit_prompt")
            if self.tools_column:
                codes |= {"bad_tools", "unknown_tool"}
            if self.images_column:
                codes.add("image_count")
            if kind == PROMPT_ONLY and self.fmt.last_role is not None:
                codes.discard("last_role")
            if kind == PROMPT_ONLY:  # a prompt alone is never judged as a whole conversation
                codes -= {"missing_turn", "too_few_messages", "missing_role"}
        return tuple(code for code in ALL_REASONS if code in codes)

    def describe(self) -> str:
        columns = ", ".join(self.column_of(f) for f in self.fields)
        text = f"{columns} form a {_TITLES[self.dataset_type]} row"
        if self.format != AUTO:
            text += f" ({self.format})"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": "dataset",
            "dataset_type": self.dataset_type,
            "format": self.format,
            "columns": {f: self.column_of(f) for f in self.fields},
            "tools_column": self.tools_column,
            "images_column": self.images_column,
            "chat": self.fmt.as_dict(),
        }

    def check_row(self, row: Mapping[str, Any]) -> str | None:
        if self.too_large(row) is not None:
            return TOO_LARGE  # the first code: no value of the row is read
        values = {f: row.get(self.column_of(f)) for f in self.fields}
        codes: list[str | None] = []
        if "label" in values:
            codes.append(label_problem(values.pop("label"), self.fmt.na_pass))
        kinds = self.kinds(values)
        row_format = self._row_format(kinds)
        if row_format is None:
            codes.append("mixed_format")
        elif row_format == STANDARD:
            codes.extend(self._standard(kinds))
        else:
            codes.extend(self._conversational(kinds, row))
        return first_reason(codes)

    # -- the rules

    def _parts_fields(self) -> set[str]:
        """The fields that may be lists of content parts (standard_parts=True)."""
        if not self.fmt.standard_parts or self.dataset_type == LANGUAGE_MODELING:
            return set()
        return set(PART_FIELDS) & set(self.fields)

    def single_answers(self) -> bool:
        """May an answer (completion, chosen, rejected) be one message object? Only where a
        prompt is given apart (an implicit preference's values are whole conversations)."""
        return self.fmt.single_message_answers and "prompt" in self.fields

    def kinds(self, values: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
        """Each field's (kind, value) as `formats.classify` reads it, in the check's format."""
        mode = STANDARD if self.dataset_type == LANGUAGE_MODELING else self.format
        parts = self._parts_fields()
        role_key = self.fmt.role_key
        return {f: classify(v, mode, role_key if f in parts else None) for f, v in values.items()}

    def _row_format(self, kinds: dict[str, tuple[str, Any]]) -> str | None:
        if self.dataset_type == LANGUAGE_MODELING:
            return STANDARD
        if self.format != AUTO:
            return self.format
        found = {kind for kind, _ in kinds.values()}
        standard = TEXT in found or PARTS in found
        if CONV in found and standard:
            return None
        return STANDARD if standard else CONVERSATIONAL

    def _standard(self, kinds: dict[str, tuple[str, Any]]) -> list[str | None]:
        implicit = self.dataset_type == IMPLICIT_PREFERENCE
        return [code for code, _ in standard_problems(kinds, self.fmt, implicit)]

    def _conversational(
        self, kinds: dict[str, tuple[str, Any]], row: Mapping[str, Any]
    ) -> list[str | None]:
        fmt = self.fmt
        codes: list[str | None] = []
        reads: dict[str, Read] = {}
        raw: dict[str, list[Any]] = {}
        for name, (kind, value) in kinds.items():
            if kind == MISSING_VALUE:
                codes.append(None if fmt.na_pass else "not_messages")
                continue
            if kind in (TEXT, PARTS):
                codes.append("mixed_format")
                continue
            single = self.single_answers() and name != "prompt"
            messages = messages_in(value, fmt, single=single) if kind == CONV else None
            if messages is None:
                codes.append("not_messages")
                continue
            raw[name] = messages
            reads[name] = read_messages(messages, fmt, extras=True)
        declared = declared_names(row.get(self.tools_column)) if self.tools_column else None
        images = image_total(row.get(self.images_column)) if self.images_column else None
        blank = blank_checker(fmt.text_key)

        def judged(read: Read, part: str, whole: bool) -> str | None:
            return judge(
                read.roles,
                read.contents,
                fmt,
                blank,
                read.extras,
                part=part,
                declared=declared if whole else None,
                images=images if whole else None,
            )

        prompt = reads.get("prompt")
        kind = self.dataset_type
        if kind == PROMPT_ONLY and prompt is not None:
            codes.append(judged(prompt, PROMPT, True))
        elif kind in (PROMPT_COMPLETION, UNPAIRED_PREFERENCE, PREFERENCE):
            if prompt is not None:
                codes.append(judged(prompt, PROMPT, False))
            for name in ("completion", "chosen", "rejected"):
                answer = reads.get(name)
                if answer is None:
                    continue
                codes.append(judged(answer, COMPLETION, False))
                if prompt is not None:
                    codes.append(judged(prompt.then(answer), WHOLE, True))
            if "chosen" in raw and "rejected" in raw and same_value(raw["chosen"], raw["rejected"]):
                codes.append("same_pair")
        elif kind == IMPLICIT_PREFERENCE:
            codes.extend(
                judged(reads[name], WHOLE, True) for name in ("chosen", "rejected") if name in reads
            )
            if "chosen" in raw and "rejected" in raw:
                codes.extend(self._implicit(raw, reads, judged))
        return codes

    @staticmethod
    def _implicit(
        raw: dict[str, list[Any]],
        reads: dict[str, Read],
        judged: Callable[[Read, str, bool], str | None],
    ) -> list[str | None]:
        chosen, rejected = raw["chosen"], raw["rejected"]
        if same_value(chosen, rejected):
            return ["same_pair"]
        shared = common_prefix(chosen, rejected)
        if shared == 0 or shared in (len(chosen), len(rejected)):
            return ["implicit_prompt"]
        return [
            judged(reads["chosen"].head(shared), PROMPT, False),
            judged(reads["chosen"].tail(shared), COMPLETION, False),
            judged(reads["rejected"].tail(shared), COMPLETION, False),
        ]


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
