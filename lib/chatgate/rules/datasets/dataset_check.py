"""The check of a TRL dataset type's row (`DatasetCheck`); see `datasets` for the types and
for building the checks of a table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..base.markers import TOO_LARGE_VALUE
from ..base.sizes import TOO_LARGE, is_too_large
from ..base.values import blank_checker, common_prefix, same_value
from ..check.checks import RowCheck, label_problem
from ..check.codes import ALL_REASONS, first_reason
from ..check.judge import format_codes, judge
from ..conversation.conversation import COMPLETION, PROMPT, WHOLE
from ..conversation.spec import TOOL_ROLE, ChatFormat
from ..formats.messages import Read, image_total, media_totals, messages_in, read_messages
from ..formats.tools import declared_names
from .dataset_types import (
    DATASET_TYPES,
    IMPLICIT_PREFERENCE,
    LANGUAGE_MODELING,
    OPENAI_PREFERENCE,
    PREFERENCE,
    PROMPT_ONLY,
    TITLES,
    TYPE_FIELDS,
    field_names,
)
from .standard import PART_FIELDS, parts_codes, standard_problems
from .value_formats import (
    AUTO,
    CONV,
    CONVERSATIONAL,
    FORMATS,
    MISSING_VALUE,
    PARTS,
    STANDARD,
    TEXT,
    classify,
)


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
        object.__setattr__(self, "names", tuple(field_names(dict(self.names)).items()))
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
        media = (self.fmt.audios_column, self.fmt.videos_column)
        extra = tuple(c for c in (self.tools_column, self.images_column, *media) if c)
        return tuple(dict.fromkeys(tuple(self.column_of(f) for f in self.fields) + extra))

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
            codes |= self._standard_codes()
        if self.format != STANDARD and kind != LANGUAGE_MODELING:
            codes |= self._conversational_codes()
        return tuple(code for code in ALL_REASONS if code in codes)

    def _standard_codes(self) -> set[str]:
        codes = {"not_text", "empty_text"}
        if self.dataset_type == IMPLICIT_PREFERENCE:
            codes.add("implicit_prompt")
        if self._parts_fields():
            codes |= parts_codes(self.fmt)
        return codes

    def _conversational_codes(self) -> set[str]:
        kind = self.dataset_type
        codes = {*format_codes(self.fmt), "prompt_end"}
        if kind != PROMPT_ONLY:
            codes.add("completion_role")
        if kind == IMPLICIT_PREFERENCE:
            codes.add("implicit_prompt")
        if self.tools_column:
            codes |= {"bad_tools", "unknown_tool"}
        if self.images_column:
            codes.add("image_count")
        if kind == PROMPT_ONLY:  # a prompt alone is never judged as a whole conversation
            codes -= {"last_role", "missing_turn", "too_few_messages", "missing_role"}
        return codes

    def describe(self) -> str:
        columns = ", ".join(self.column_of(f) for f in self.fields)
        text = f"{columns} form a {TITLES[self.dataset_type]} row"
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
        read = self.read_conversational(kinds, row)
        fmt, blank = self.fmt, blank_checker(self.fmt.text_key)
        codes: list[str | None] = [code for code, _, _ in read.found]
        for judged in read.judged:
            declared, images, media = (read.declared, read.images, read.media) if judged.whole else (None,) * 3
            messages = judged.read
            codes.append(
                judge(
                    messages.roles,
                    messages.contents,
                    fmt,
                    blank,
                    messages.extras,
                    part=judged.part,
                    declared=declared,
                    images=images,
                    media=media,
                )
            )
        return codes

    def read_conversational(self, kinds: dict[str, tuple[str, Any]], row: Mapping[str, Any]) -> RowRead:
        """A conversational row as judged: the problems found reading its values, and the lists
        of messages judged (`check_row` judges them, `locate_rows` places their problems)."""
        read = RowRead()
        raw: dict[str, list[Any]] = {}
        for name, (kind, value) in kinds.items():
            code = self._read_value(name, kind, value, raw)
            if code is not None:
                read.found.append((code, name, None))
        if self.tools_column:
            read.declared = declared_names(row.get(self.tools_column))
        if self.images_column:
            read.images = image_total(row.get(self.images_column))
        read.media = media_totals(row, self.fmt)
        reads = {name: read_messages(messages, self.fmt, extras=True) for name, messages in raw.items()}
        if self.dataset_type == IMPLICIT_PREFERENCE:
            _implicit(read, raw, reads, self.fmt)
        else:
            self._with_prompt(read, raw, reads)
        return read

    def _read_value(self, name: str, kind: str, value: Any, raw: dict[str, list[Any]]) -> str | None:
        """The code of a field's value that holds no messages; else its messages go in `raw`."""
        if kind == MISSING_VALUE:
            return None if self.fmt.na_pass else "not_messages"
        if kind in (TEXT, PARTS):
            return "mixed_format"
        single = self.single_answers() and name != "prompt"
        messages = messages_in(value, self.fmt, single=single) if kind == CONV else None
        if messages is None:
            return "not_messages"
        raw[name] = messages
        return None

    def _with_prompt(self, read: RowRead, raw: dict[str, list[Any]], reads: dict[str, Read]) -> None:
        """A row with a `prompt` field: the prompt, each answer, and the prompt with each answer."""
        prompt = reads.get("prompt")
        if self.dataset_type == PROMPT_ONLY:
            if prompt is not None:  # a prompt alone: judged with the row's tools and images
                read.judged.append(Judged(PROMPT, prompt, (("prompt", len(prompt.roles)),), whole=True))
            return
        if prompt is not None:
            read.judged.append(Judged(PROMPT, prompt, (("prompt", len(prompt.roles)),)))
        for name in ("completion", "chosen", "rejected"):
            answer = reads.get(name)
            if answer is None:
                continue
            read.judged.append(Judged(COMPLETION, answer, ((name, len(answer.roles)),)))
            if prompt is not None:
                sizes = (("prompt", len(prompt.roles)), (name, len(answer.roles)))
                read.judged.append(Judged(WHOLE, prompt.then(answer), sizes, whole=True))
        if "chosen" in raw and "rejected" in raw and same_value(raw["chosen"], raw["rejected"]):
            read.found.append(("same_pair", None, None))


class Judged(NamedTuple):
    """A list of messages judged for a row: its part, the messages, the fields it is made of
    (field, length), in order; where it starts in a one-field value (a continuation after a
    shared prompt); and whether it is judged with the row's tools and images."""

    part: str
    read: Read
    fields: tuple[tuple[str, int], ...]
    offset: int = 0
    whole: bool = False


@dataclass
class RowRead:
    """A conversational row as judged (`DatasetCheck.read_conversational`): the problems found
    reading it (code, field or None for the row as a whole, message), what is judged, and the
    row's declared functions and images (None: no such column)."""

    found: list[tuple[str, str | None, int | None]] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    declared: Any = None
    images: Any = None
    media: Any = None
    """The row's (audios, videos), see `messages.media_totals`."""


def _implicit(read: RowRead, raw: dict[str, list[Any]], reads: dict[str, Read], fmt: ChatFormat) -> None:
    """An implicit preference: each value whole, then the shared prompt and the two continuations
    (their messages at their index in chosen and rejected). No shared prompt, one that doesn't
    end on a user turn (or a tool turn, with tools=True), or nothing after it: `implicit_prompt`."""
    for name in ("chosen", "rejected"):
        if name in reads:
            read.judged.append(Judged(WHOLE, reads[name], ((name, len(reads[name].roles)),), whole=True))
    if "chosen" not in raw or "rejected" not in raw:
        return
    chosen, rejected = raw["chosen"], raw["rejected"]
    if same_value(chosen, rejected):
        read.found.append(("same_pair", None, None))
        return
    shared = common_prefix(chosen, rejected)
    if shared == 0 or shared in (len(chosen), len(rejected)) or not _ends_a_prompt(reads["chosen"].roles[shared - 1], fmt):
        read.found.append(("implicit_prompt", None, None))
        return
    read.judged.append(Judged(PROMPT, reads["chosen"].head(shared), (("chosen", shared),)))
    for name in ("chosen", "rejected"):
        tail = reads[name].tail(shared)  # the continuation starts at message `shared`
        read.judged.append(Judged(COMPLETION, tail, ((name, len(tail.roles)),), offset=shared))


def _ends_a_prompt(role: Any, fmt: ChatFormat) -> bool:
    """Can a prompt end on this role (a user turn, or a tool turn with tools=True)?"""
    return role == "user" or (fmt.tools and role == TOOL_ROLE)
