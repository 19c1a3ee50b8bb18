"""Where a failing row's problems are, for every row check: the column and the message.

A row check (`checks.RowCheck`) may read several columns: a conversation column
with the row's `tools` and `images` (`ChatCheck`), a label (`LabelCheck`), the
columns of a dataset type (`datasets.DatasetCheck`). A problem of a row is then
a `RowProblem`: its code, the column it was found in, and the index of the
message in that column's list (as `location.sites` places it).

- The column is None for a problem of the row as a whole: a row that mixes
  formats (`mixed_format` under format="auto"), `same_pair`, `implicit_prompt`.
- `not_messages`, `not_text`, `empty_text`, `not_label` and a `mixed_format`
  value (format pinned) are in their column, at no message (None); `bad_tools`
  is in the tools column, `image_count` in the conversation's.
- An OpenAI preference row's problems are placed by its own module
  (`openai_preference.located`): in `input`, or in the output they are in.
- The parts of a dataset row are judged as `DatasetCheck` judges them, each
  problem placed in the column its message is in: a prompt's in the prompt, a
  completion's in the completion, and the problem of a whole conversation made
  of the prompt and an answer (completion, chosen, rejected) in whichever of the
  two holds the message (a problem of that whole conversation, such as
  `missing_role`, in the answer's column). A problem found in several parts (a
  prompt's unknown role, judged with each answer) is listed once.
- Order: the row's own problems first, then column by column in the check's
  order, in message order, and at one message in table order. The first in
  `ALL_REASONS` order is the row's code (`RowCheck.check_row`).

A dataset row is read once for both (`DatasetCheck.read_conversational`): the check judges
the lists it reads, this module places the problems of the same lists; tests/test_locate_agreement.py
pins that both give the same code on every labelled example and on the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..base.sizes import TOO_LARGE
from ..check.checks import ChatCheck, LabelCheck, RowCheck, column_values, label_problem
from ..check.codes import first_reason, reason_rank
from ..formats.messages import image_total, media_totals
from ..formats.tools import declared_names
from ..location.locate import locate_array, problems_of
from ..location.sites import Problem, RowProblem, problems_in
from .dataset_check import DatasetCheck, Judged
from .dataset_types import IMPLICIT_PREFERENCE, OPENAI_PREFERENCE
from .openai_preference import located
from .standard import standard_problems
from .value_formats import STANDARD


def row_problems(check: RowCheck, row: Mapping[str, Any]) -> list[RowProblem]:
    """Every problem of one row (column name -> value) under a row check; empty when it passes.

    >>> from chatgate.rules import dataset_checks
    >>> check = dataset_checks("prompt_completion", ["prompt", "completion"])[0]
    >>> row_problems(check, {"prompt": [{"role": "user", "content": "Hi"}], "completion": [{"role": "user", "content": "Yo"}]})
    [RowProblem(code='completion_role', column='completion', message=0), RowProblem(code='not_alternating', column='completion', message=0)]
    """
    if isinstance(check, ChatCheck):
        found = _chat_problems(check, row)
    elif isinstance(check, DatasetCheck):
        found = _dataset_problems(check, row)
    elif isinstance(check, LabelCheck):
        code = label_problem(row.get(check.column), check.na_pass)
        found = [] if code is None else [RowProblem(code, check.column, None)]
    else:  # a check this module doesn't know: its code, for the row as a whole
        code = check.check_row(row)
        found = [] if code is None else [RowProblem(code, None, None)]
    place = {column: i for i, column in enumerate(check.columns)}
    unique = dict.fromkeys(found)  # one problem found by several parts is listed once
    return sorted(
        unique,
        key=lambda p: (
            -1 if p.column is None else place.get(p.column, len(place)),
            -1 if p.message is None else p.message,
            reason_rank(p.code),
        ),
    )


def locate_row(check: RowCheck, row: Mapping[str, Any], code: str | None = None) -> RowProblem | None:
    """The first problem of a row with `code` (None: the row's own code), or None when it passes.

    >>> locate_row(ChatCheck("messages"), {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": ""}]})
    RowProblem(code='not_alternating', column='messages', message=1)
    """
    found = row_problems(check, row)
    if code is None:
        code = first_reason(problem.code for problem in found)
    return next((problem for problem in found if problem.code == code), None)


def _chat_problems(check: ChatCheck, row: Mapping[str, Any]) -> list[RowProblem]:
    tools, images = check.tools_column, check.images_column
    declared = declared_names(row.get(tools)) if tools else None
    count = image_total(row.get(images)) if images else None
    media = media_totals(row, check.fmt)
    found = problems_of(row.get(check.column), check.fmt, declared=declared, images=count, media=media)
    return [RowProblem(p.code, tools if p.code == "bad_tools" else check.column, p.message) for p in found]


# --- Dataset types: `DatasetCheck.check_row`, each part's problems placed in their column ---


def _dataset_problems(check: DatasetCheck, row: Mapping[str, Any]) -> list[RowProblem]:
    large = check.too_large(row)
    if large is not None:  # nothing of the row is read
        return [RowProblem(TOO_LARGE, large, None)]
    if check.dataset_type == OPENAI_PREFERENCE:  # its own walk, in its module
        return located(check, row)
    values = {f: row.get(check.column_of(f)) for f in check.fields}
    found: list[RowProblem] = []
    if "label" in values:
        code = label_problem(values.pop("label"), check.fmt.na_pass)
        if code is not None:
            found.append(RowProblem(code, check.column_of("label"), None))
    kinds = check.kinds(values)
    row_format = check._row_format(kinds)
    if row_format is None:
        found.append(RowProblem("mixed_format", None, None))
    elif row_format == STANDARD:
        found.extend(_standard(check, kinds))
    else:
        found.extend(_conversational(check, kinds, row))
    return found


def _standard(check: DatasetCheck, kinds: dict[str, tuple[str, Any]]) -> list[RowProblem]:
    """`DatasetCheck._standard`, each code in its column (a list of parts' problem at no message)."""
    found = standard_problems(kinds, check.fmt, check.dataset_type == IMPLICIT_PREFERENCE)
    return [RowProblem(code, None if name is None else check.column_of(name), None) for code, name in found]


def _conversational(
    check: DatasetCheck, kinds: dict[str, tuple[str, Any]], row: Mapping[str, Any]
) -> list[RowProblem]:
    """`DatasetCheck._conversational`'s row as it reads it, each problem in its column."""
    read = check.read_conversational(kinds, row)
    found = [RowProblem(code, None if name is None else check.column_of(name), at) for code, name, at in read.found]
    for judged in read.judged:
        declared, images, media = (read.declared, read.images, read.media) if judged.whole else (None,) * 3
        problems = problems_in(
            judged.read, check.fmt, part=judged.part, declared=declared, images=images, media=media
        )
        found.extend(_placed(check, p, judged) for p in problems)
    return found


def _placed(check: DatasetCheck, problem: Problem, judged: Judged) -> RowProblem:
    """A problem of a judged list placed in the column its message is in (a whole conversation's
    own problem in the column of its last part; malformed tools in the tools column)."""
    if problem.code == "bad_tools":
        return RowProblem(problem.code, check.tools_column, None)
    last = judged.fields[-1][0]
    message = problem.message
    if message is None:
        return RowProblem(problem.code, check.column_of(last), None)
    for name, size in judged.fields:
        if message < size or name == last:
            return RowProblem(problem.code, check.column_of(name), message + judged.offset)
        message -= size
    raise AssertionError("unreachable: the last column takes what is left")


# --- Arrow batches, for the engines -------------------------------------------------------

ROW_PROBLEM_TYPE = pa.struct([("code", pa.string()), ("column", pa.string()), ("message", pa.int32())])
"""The type of one problem in `row_problems_array`."""


def row_problems_array(
    check: RowCheck, batch: pa.RecordBatch | pa.Table, codes: pa.Array | pa.ChunkedArray | None = None
) -> pa.ListArray:
    """`row_problems` for each row of a batch: a list of struct<code, column, message>.

    `codes` are the rows' codes when the caller has them (`check.check(batch)`, computed
    here otherwise): only the rows with a code are read; the others get an empty list.
    """
    found: list[str | None] = (check.check(batch) if codes is None else codes).to_pylist()
    if len(found) != batch.num_rows:
        raise ValueError(f"{len(found)} codes for {batch.num_rows} rows")
    rows = [i for i, code in enumerate(found) if code is not None]
    out: list[list[RowProblem]] = [[] for _ in found]
    if rows:
        failing = batch.take(pa.array(rows, pa.int64()))
        values = _values(check, failing)
        for k, i in enumerate(rows):
            out[i] = row_problems(check, {name: column[k] for name, column in values.items()})
    return pa.array([[p._asdict() for p in problems] for problems in out], pa.list_(ROW_PROBLEM_TYPE))


def _values(check: RowCheck, failing: pa.Table | pa.RecordBatch) -> dict[str, list[Any]]:
    """The Python values of the check's columns (a value too large to read as its marker)."""
    limits = check.value_limits
    return {name: column_values(failing, name, limits.get(name)) for name in check.columns}


def message_indices(
    check: RowCheck, batch: pa.RecordBatch | pa.Table, codes: pa.Array | pa.ChunkedArray
) -> pa.Int32Array:
    """The message index of each row's problem (`codes`: the rows' codes): what a quarantine's
    `pb_message_` holds. Null where the row passes or its problem isn't at one message.

    Only the rows with a code are read. A conversation column alone takes the
    column's own path (`locate_array`); other checks place each row's code among its
    problems (`locate_row`).
    """
    if isinstance(check, ChatCheck) and check.columns == (check.column,):
        return locate_array(batch.column(check.column), codes, check.fmt)
    found: list[str | None] = codes.to_pylist()
    rows = [i for i, code in enumerate(found) if code is not None]
    out: list[int | None] = [None] * len(found)
    if rows:
        failing = batch.take(pa.array(rows, pa.int64()))
        values = _values(check, failing)
        for k, i in enumerate(rows):
            problem = locate_row(check, {name: column[k] for name, column in values.items()}, found[i])
            out[i] = None if problem is None else problem.message
    return pa.array(out, pa.int32())
