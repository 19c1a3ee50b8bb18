"""Row checks: the one interface every engine judges through.

A `RowCheck` reads some columns of a table (`columns`), can produce some codes
(`codes`, in `ALL_REASONS` order), and turns an Arrow batch into one code per row
(`check`), null where the row passes; it never raises on a value. `check_row` is
the same judgment on one row (a mapping of column name to value): the per-row
reference that `check` must agree with.

- `ChatCheck`: one conversation column (the core check, and the options of
  `ChatFormat`), optionally with the row's `tools` and `images` columns. Without
  them it is `batch.check_array`, fast path included.
- `LabelCheck`: a label column of true/false values.
- `datasets.DatasetCheck`: the columns of a TRL dataset type together.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..base.markers import TOO_LARGE_VALUE
from ..base.sizes import array_bytes
from ..base.values import is_missing
from ..conversation.spec import ChatFormat
from ..formats.messages import image_total, media_totals
from ..formats.tools import declared_names
from .batch import check_array, python_values
from .codes import ALL_REASONS, first_reason
from .judge import format_codes
from .reference import problem_of

_JSON_EXTENSION = getattr(pa, "JsonType", ())


class RowCheck(ABC):
    """What every row check offers; see the module's docstring."""

    @property
    @abstractmethod
    def columns(self) -> tuple[str, ...]:
        """The source columns the check reads."""

    @property
    @abstractmethod
    def codes(self) -> tuple[str, ...]:
        """The codes the check can produce, in `ALL_REASONS` order."""

    @abstractmethod
    def describe(self) -> str:
        """The assertion text of the check."""

    @abstractmethod
    def as_dict(self) -> dict[str, Any]:
        """The parameters as JSON-ready values."""

    @abstractmethod
    def check_row(self, row: Mapping[str, Any]) -> str | None:
        """The code of one row (column name -> value), or None when it passes."""

    @property
    def value_limits(self) -> dict[str, int]:
        """The columns whose values are measured (`max_value_bytes=`), with their limit."""
        return {}

    def check(self, batch: pa.RecordBatch | pa.Table) -> pa.StringArray:
        """One code per row of `batch`, null where the row passes.

        A value of `value_limits`' columns larger than its limit is measured on its Arrow
        array and never read: `check_row` sees `markers.TOO_LARGE_VALUE` in its place.
        """
        limits = self.value_limits
        values = {name: column_values(batch, name, limits.get(name)) for name in self.columns}
        rows = ({name: values[name][i] for name in values} for i in range(batch.num_rows))
        return pa.array([self.check_row(row) for row in rows], pa.string())


def column_values(batch: pa.RecordBatch | pa.Table, name: str, limit: int | None = None) -> list[Any]:
    """The Python values of one column of a batch (maps as dicts, JSON as its text; see
    `batch.python_values`); with `limit`, `markers.TOO_LARGE_VALUE` for each value larger
    than `limit` bytes (`sizes`), which isn't read."""
    array = batch.column(name)
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    out: list[Any] = []
    for chunk in chunks:
        if isinstance(chunk.type, _JSON_EXTENSION):
            chunk = chunk.storage
        over = array_bytes(chunk) > limit if limit is not None else None
        if over is None or not over.any():
            out.extend(python_values(chunk))
            continue
        values: list[Any] = [TOO_LARGE_VALUE] * len(chunk)
        kept = np.flatnonzero(~over)
        for row, value in zip(kept.tolist(), python_values(chunk.take(pa.array(kept, pa.int64())))):
            values[row] = value
        out.extend(values)
    return out


@dataclass(frozen=True)
class ChatCheck(RowCheck):
    """One conversation column, judged with a `ChatFormat`.

    `tools_column` (with `fmt.tools`) names the row's declared functions: a called
    function must be declared there (`unknown_tool`), and the value must be a list
    of function schemas (`bad_tools`). `images_column` names the row's images: the
    image parts must be as many (`image_count`). The format's `audios_column=` and
    `videos_column=` name the row's audios and videos, counted alike (`audio_count`,
    `video_count`).

    >>> ChatCheck("messages").check(pa.table({"messages": ['[{"role": "user", "content": "Hi"}]', "[]"]})).to_pylist()
    [None, 'no_messages']
    """

    column: str
    fmt: ChatFormat = field(default_factory=ChatFormat)
    tools_column: str | None = None
    images_column: str | None = None

    def __post_init__(self) -> None:
        _check_names(self, ("column",), ("tools_column", "images_column"))
        if not isinstance(self.fmt, ChatFormat):
            raise TypeError(f"fmt= must be a ChatFormat, not {type(self.fmt).__name__}")
        if self.tools_column is not None and not self.fmt.tools:
            raise ValueError("tools_column= needs tools=True in the ChatFormat")

    @property
    def columns(self) -> tuple[str, ...]:
        media = (self.fmt.audios_column, self.fmt.videos_column)
        return tuple(dict.fromkeys(c for c in (self.column, self.tools_column, self.images_column, *media) if c))

    @property
    def value_limits(self) -> dict[str, int]:
        """The conversation column's values are measured (not the tools and images columns)."""
        limit = self.fmt.max_value_bytes
        return {} if limit is None else {self.column: limit}

    @property
    def codes(self) -> tuple[str, ...]:
        codes = set(format_codes(self.fmt))
        if self.tools_column:
            codes |= {"bad_tools", "unknown_tool"}
        if self.images_column:
            codes.add("image_count")
        return tuple(code for code in ALL_REASONS if code in codes)

    def describe(self) -> str:
        text = f"{self.column} is a chat of {{{', '.join(self.fmt.roles)}}}"
        if self.tools_column:
            text += f", calling the functions of {self.tools_column}"
        if self.images_column:
            text += f", with one image part per item of {self.images_column}"
        for kind, name in (("audio", self.fmt.audios_column), ("video", self.fmt.videos_column)):
            if name:
                text += f", with one {kind} per item of {name}"
        return text

    def as_dict(self) -> dict[str, Any]:
        out = {"check": "chat", "column": self.column, **self.fmt.as_dict()}
        out["tools_column"] = self.tools_column
        out["images_column"] = self.images_column
        return out

    @property
    def judges_value_alone(self) -> bool:
        """Is a row's code its conversation's own (`check_array` of the value), with no other column read?"""
        return self.tools_column is None and self.images_column is None and not self.fmt.counts_media

    def check(self, batch: pa.RecordBatch | pa.Table) -> pa.StringArray:
        if self.judges_value_alone:
            return check_array(batch.column(self.column), self.fmt)
        return super().check(batch)

    def check_row(self, row: Mapping[str, Any]) -> str | None:
        declared = declared_names(row.get(self.tools_column)) if self.tools_column else None
        images = image_total(row.get(self.images_column)) if self.images_column else None
        media = media_totals(row, self.fmt)
        return problem_of(row.get(self.column), self.fmt, declared=declared, images=images, media=media)


@dataclass(frozen=True)
class LabelCheck(RowCheck):
    """A label column: each value is true or false (`not_label`); null only with na_pass.

    >>> LabelCheck().check(pa.table({"label": [True, None]})).to_pylist()
    [None, 'not_label']
    """

    column: str = "label"
    na_pass: bool = False

    def __post_init__(self) -> None:
        _check_names(self, ("column",), ())
        if not isinstance(self.na_pass, bool):
            raise TypeError(f"na_pass= must be True or False, not {self.na_pass!r}")

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def codes(self) -> tuple[str, ...]:
        return ("not_label",)

    def describe(self) -> str:
        return f"{self.column} is true or false"

    def as_dict(self) -> dict[str, Any]:
        return {"check": "label", "column": self.column, "na_pass": self.na_pass}

    def check_row(self, row: Mapping[str, Any]) -> str | None:
        return label_problem(row.get(self.column), self.na_pass)


def label_problem(value: Any, na_pass: bool = False) -> str | None:
    """`not_label` unless `value` is a boolean (a missing one passes with na_pass).

    >>> label_problem(True), label_problem("true"), label_problem(None, na_pass=True)
    (None, 'not_label', None)
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    if is_missing(value):
        return None if na_pass else "not_label"
    return "not_label"


def first_codes(arrays: Iterable[pa.Array]) -> pa.StringArray:
    """Row by row, the first code (in `ALL_REASONS` order) of several checks' codes.

    >>> first_codes([pa.array([None, "empty_content"]), pa.array([None, "not_label"])]).to_pylist()
    [None, 'not_label']
    """
    columns = [array.to_pylist() for array in arrays]
    if not columns:
        return pa.array([], pa.string())
    return pa.array([first_reason(codes) for codes in zip(*columns)], pa.string())


def _check_names(check: Any, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    for key in required:
        if not isinstance(getattr(check, key), str):
            raise TypeError(f"{key}= must be a column name (a string), not {getattr(check, key)!r}")
    for key in optional:
        value = getattr(check, key)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{key}= must be a column name (a string) or None, not {value!r}")
