"""What the API adds to a step's failing rows: their repairs (`get_fixed_data`) and every
problem of each (`turns="all"`).

Both read the failing rows only, never change a step's verdicts or counts, and give a
table of the input's own kind, as the extracts do. The engine adds the columns
(`Engine.with_computed_columns`):

- on DuckDB and Spark the columns are computed where the rows are
  (`LakehouseEngine.with_arrow_columns`: an Arrow UDF, `mapInArrow`), lazily, in the
  rows' order; nothing reaches the driver;
- a Polars or pandas frame is computed in memory, in one go;
- an Ibis table of another backend is read into Arrow and comes back as a memtable.

Repairs are `repair_array`'s (`rules.repairs_and_codes` on Arrow columns, `rules.repair_value`
on Python values), with the step's own options, and the row is then judged again by the
step's own check (its tools and images columns included). A check that reads the
conversation alone takes each row's code from `pb_reason_` and judges only the values
the repairs changed, once each. Each distinct failing value is repaired once: per
batch, and across batches through a memo (bounded, `MEMO_VALUES`) that lives as long as
the computation, so once in all on one machine and once per partition on Spark.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

import pyarrow as pa

from .engines.base import Engine
from .errors import ChatgateError
from .names import FIXES, REASON, REASONS
from .rules import (
    ChatCheck,
    RowCheck,
    check_array,
    repair_names,
    repair_value,
    repairs_and_codes,
    row_problems,
    row_problems_array,
)
from .rules.base.collector import collector_paused
from .rules.datasets.locate_rows import ROW_PROBLEM_TYPE
from .rules.location.locate import PROBLEM_TYPE
from .steps import Step

MEMO_VALUES = 100_000
"""Distinct failing values whose repair is remembered (beyond them, values are repaired per batch)."""

FIXES_TYPE = pa.list_(pa.string())

Values: TypeAlias = "pa.Array | pa.ChunkedArray | list[Any]"
"""A column of rows: Arrow, or Python values where Arrow can't hold them (a pandas object column)."""
Columns: TypeAlias = Mapping[str, Values]
Compute: TypeAlias = Callable[[Columns], list[Values]]


# --- The step's extract, with every problem (turns="all") -------------------------------------


def step_extract(engine: Engine, step: Step) -> Any:
    """The failing rows of an evaluated step as its extracts show them."""
    rows = _failing_rows(engine, step)
    return with_problems(engine, step.row_check, rows) if step.turns == "all" else rows


def _failing_rows(engine: Engine, step: Step) -> Any:
    # Made once: the local engine numbers a Polars frame's rows in place, so twice would clash.
    assert step.judged is not None  # only evaluated steps have failing rows
    if step.failing_rows is None:
        step.failing_rows = engine.extract(step.judged)
    return step.failing_rows


def problems_type(check: RowCheck) -> pa.DataType:
    """A conversation column's problems are (code, message) pairs; a dataset row's say their column too."""
    return pa.list_(PROBLEM_TYPE if isinstance(check, ChatCheck) else ROW_PROBLEM_TYPE)


@dataclass(frozen=True)
class _Problems:
    """`pb_reasons_` of failing rows: every problem of each row with a code, none of one without."""

    check: RowCheck

    def __call__(self, columns: Columns) -> list[Values]:
        codes = columns[REASON]
        checked = {name: columns[name] for name in self.check.columns}
        if all(not isinstance(values, list) for values in checked.values()):
            found = row_problems_array(self.check, pa.table(checked), codes).to_pylist()
        else:  # Python values: row by row, as row_problems_array does
            found = [
                [] if code is None else [p._asdict() for p in row_problems(self.check, row)]
                for code, row in zip(_python(codes), _rows(checked))
            ]
        if isinstance(self.check, ChatCheck):  # its column is the step's own
            found = [[{"code": p["code"], "message": p["message"]} for p in row] for row in found]
        return [pa.array(found, problems_type(self.check))]


def with_problems(engine: Engine, check: RowCheck, rows: Any) -> Any:
    """`rows` (failing rows with `pb_reason_`) with `pb_reasons_` last."""
    inputs = [*dict.fromkeys(check.columns), REASON]
    added = pa.schema([(REASONS, problems_type(check))])
    columns = engine.columns(rows)
    return engine.with_computed_columns(rows, inputs, added, _Problems(check), {**{c: c for c in columns}, REASONS: REASONS})


# --- get_fixed_data --------------------------------------------------------------------------


class _Fix(NamedTuple):
    value: Any
    applied: list[str]
    code: str | None = None
    """The code of the value after the repairs, judged alone: a check that judges the value alone
    (`ChatCheck.judges_value_alone`) reads it instead of judging the row again."""


@dataclass
class StepRepairs:
    """Repairs a chat step's column in failing rows: its repaired value, the repairs applied, the
    code after them (by the step's check). Picklable, for Spark's workers."""

    check: ChatCheck
    repairs: str | tuple[str, ...]
    """As the user named them: a preset doesn't ask for its repairs' options, its names would."""
    names: tuple[str, ...]
    codes: str | None = None
    """A column of the rows holding the step's code of each row as it is given, read instead of
    judging the failing values again (for a check that judges the value alone)."""
    only_to_pass: bool = False
    """For a caller that keeps only the values the repairs make pass (the job): a value no named
    repair can make pass is left as it is, unread (`repairs_and_codes`)."""
    memo: dict[Any, _Fix] = field(default_factory=dict)

    def __call__(self, columns: Columns) -> list[Values]:
        with collector_paused():
            return self._repaired(columns)

    def _repaired(self, columns: Columns) -> list[Values]:
        values = columns[self.check.column]
        python = _python(values)
        fixes = self._fixes(values, python, self._known_codes(columns))
        repaired = [fix.value if fix.applied else value for value, fix in zip(python, fixes)]
        applied = pa.array([fix.applied for fix in fixes], FIXES_TYPE)
        checked = {**{name: columns[name] for name in self.check.columns}, self.check.column: repaired}
        if isinstance(values, list):  # Python values: judged row by row, kept as they are
            after = pa.array([self.check.check_row(row) for row in _rows(checked)], pa.string())
            return [repaired, applied, after]
        fixed = pa.array(repaired, values.type)
        if self.check.judges_value_alone:
            return [fixed, applied, pa.array([fix.code for fix in fixes], pa.string())]
        checked[self.check.column] = fixed
        return [fixed, applied, self.check.check(pa.table(checked))]

    def _known_codes(self, columns: Columns) -> pa.Array | None:
        codes = columns[self.codes] if self.codes is not None and self.check.judges_value_alone else None
        if codes is None or isinstance(codes, list) or isinstance(columns[self.check.column], list):
            return None
        return (codes.combine_chunks() if isinstance(codes, pa.ChunkedArray) else codes).cast(pa.string())

    def _fixes(self, values: Values, python: list[Any], known: pa.Array | None) -> list[_Fix]:
        """Each row's repair, each distinct value repaired once (and remembered)."""
        keys = [_key(value) for value in python]
        found: dict[Any, _Fix] = {}
        new: dict[Any, int] = {}  # a value not seen before -> its first row
        for row, key in enumerate(keys):
            if key in found or key in new:
                continue
            if key in self.memo:
                found[key] = self.memo[key]
            else:
                new[key] = row
        for key, fix in zip(new, self._repair(values, python, list(new.values()), known)):
            found[key] = fix
            if len(self.memo) < MEMO_VALUES:
                self.memo[key] = fix
        return [found[key] for key in keys]

    def _repair(self, values: Values, python: list[Any], rows: list[int], known: pa.Array | None) -> list[_Fix]:
        if not rows:
            return []
        fmt = self.check.fmt
        if isinstance(values, list):  # what Arrow can't hold: `repair_array`'s function, value by value
            return [_Fix(*repair_value(python[row], self.names, fmt)) for row in rows]
        taken = pa.array(rows, pa.int64())
        given = None if known is None else known.take(taken)
        codes, repaired = repairs_and_codes(values.take(taken), self.names, fmt, given, only_to_pass=self.only_to_pass)
        # A value no repair changed keeps its code; JSON text was judged as it is written back.
        fixes = [
            _Fix(done.value, done.applied, done.reason) if done and done.applied else _Fix(None, [], code)
            for code, done in zip(codes, repaired)
        ]
        if self.check.judges_value_alone:  # a native value is judged as Arrow holds it (struct fields filled in)
            changed = [i for i, fix in enumerate(fixes) if fix.applied and not isinstance(fix.value, (str, bytes))]
            if changed:
                after = check_array(pa.array([fixes[i].value for i in changed], values.type), fmt).to_pylist()
                for i, code in zip(changed, after):
                    fixes[i] = fixes[i]._replace(code=code)
        return fixes


def fixed_data(engine: Engine, step: Step, repairs: str | Iterable[str]) -> Any:
    """The failing rows of `step` with the step's column repaired, `pb_fixes_` and `pb_reason_` after."""
    check = step.row_check
    if step.table_check is not None:
        raise ValueError(f"step {step.i} checks the table as a whole: it has no rows to repair")
    if not isinstance(check, ChatCheck):
        raise ValueError(
            f"step {step.i} is a {step.assertion_type}() step: get_fixed_data() repairs the "
            "conversations of col_vals_chat_format() steps only"
        )
    spec = _spec(repairs)
    names = repair_names(spec, check.fmt)  # a bad name is refused before any row is read
    if step.judged is None:
        why = step.eval_error or "it is inactive"
        raise ChatgateError(f"step {step.i} wasn't evaluated ({why}): it has no failing rows to repair")
    rows = _failing_rows(engine, step)
    value, reason = (f"__pb_fixed_{part}_{uuid.uuid4().hex}__" for part in ("value", "reason"))
    value_type = engine.value_type(rows, check.column)
    added = pa.schema([(value, value_type), (FIXES, FIXES_TYPE), (reason, pa.string())])
    layout = {value if c == check.column else c: c for c in engine.columns(rows) if c != REASON}
    layout.update({FIXES: FIXES, reason: REASON})
    inputs = [*dict.fromkeys(check.columns), REASON]
    fixed = engine.with_computed_columns(rows, inputs, added, StepRepairs(check, spec, names, REASON), layout, (value, FIXES))
    return with_problems(engine, check, fixed) if step.turns == "all" else fixed


def _spec(repairs: Any) -> Any:
    """`repairs=` as a string or a tuple (what can be sent to Spark's workers); other objects are
    left for `repair_names` to refuse."""
    if isinstance(repairs, Iterable) and not isinstance(repairs, (str, bytes, dict)):
        return tuple(repairs)
    return repairs


# --- Values ----------------------------------------------------------------------------------


def _python(values: Values) -> list[Any]:
    return values if isinstance(values, list) else values.to_pylist()


def _rows(columns: Mapping[str, Values]) -> list[dict[str, Any]]:
    """The rows of some columns, as mappings of column name to Python value."""
    names = list(columns)
    return [dict(zip(names, row)) for row in zip(*(_python(columns[name]) for name in names))]


class _Unique:
    """The key of a value that can't be compared: equal to nothing else, so repaired on its own."""


def _key(value: Any) -> Any:
    """A hashable stand-in for a value, equal only for equal values of the same kinds (dict order kept:
    a repaired value keeps its keys' order, so two orders are two values)."""
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Mapping):
        return (dict, tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, Sequence) or type(value).__name__ == "ndarray":
        return (type(value), tuple(_key(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return _Unique()
    return (type(value), value)


__all__ = ["MEMO_VALUES", "fixed_data", "problems_type", "step_extract", "with_problems"]
