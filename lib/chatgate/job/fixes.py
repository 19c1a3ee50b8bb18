"""`--fix`: repair the failing rows of a run, and split them into fixed and still failing.

The repairs run where the rows are, on the failing rows only: each chat step's repairs
are applied in step order to its own column, and the row is checked again by the step's
own check (with its tools and images columns), as `get_fixed_data` does it
(`fixes.StepRepairs`: each distinct value repaired once per worker, through a bounded
memo; a value whose code no named repair can take away, `kept_by_all`, isn't read). A
row is fixed when every step it failed passes after the repairs; a row that still fails
any step keeps its original values and goes to the quarantine. A dataset
type step is never repaired: its failing rows stay failing.

A run of one step hands its repairs to the engine with the check (`FixPlan.as_failing_columns`):
the processes that check the rows and keep the failing ones whole (the embedded engine's
workers reading the files in parts, Spark's check pass) repair them there, on every core,
while they hold them. Otherwise, or when the engine didn't, they are repaired after the
check (`LakehouseEngine.with_arrow_columns`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..engines.base import FailingColumns
from ..engines.lakehouse import LakehouseEngine
from ..errors import ConfigError
from ..fixes import StepRepairs
from ..names import FIXES, REASON_BEFORE, RUN_ID
from ..rules import ChatCheck, RowCheck, repair_names
from ..rules.base.collector import collector_paused

_PREFIX = "__chatgate_fix_"
BEFORE = f"{_PREFIX}before__"
"""The first failing step's code of a fixed row; null for a row that still fails."""
APPLIED = f"{_PREFIX}applied__"


def _value_column(step: int) -> str:
    return f"{_PREFIX}value_{step}__"


def _applied_column(step: int) -> str:
    return f"{_PREFIX}applied_{step}__"


@dataclass(frozen=True)
class FixPlan:
    """The run's steps, as the repairs see them: (step number, check, reason column)."""

    steps: tuple[tuple[int, RowCheck, str], ...]
    repairs: tuple[str, ...]
    value_types: dict[str, pa.DataType]
    """The Arrow type of each repaired column (the repaired value keeps the source's type)."""
    repairers: dict[int, StepRepairs] = field(default_factory=dict)

    def __post_init__(self) -> None:
        changed: set[str] = set()  # the columns the steps so far repair
        for n, check, reason in self.steps:
            if not isinstance(check, ChatCheck):
                continue
            try:
                names = repair_names(self.repairs, check.fmt)
            except ValueError as exc:
                raise ConfigError(f"fix: step {n} ({check.column}): {exc}") from None
            # The step's codes are its values' own until an earlier step repairs a column it reads.
            codes = None if changed.intersection(check.columns) else reason
            # A row that still fails keeps its values: its partial repairs needn't be made.
            self.repairers[n] = StepRepairs(check, self.repairs, names, codes, only_to_pass=True)
            changed.add(check.column)

    def repaired(self) -> list[tuple[int, ChatCheck]]:
        """The chat steps, whose columns the repairs change."""
        return [(n, check) for n, check, _ in self.steps if isinstance(check, ChatCheck)]

    def added(self) -> pa.Schema:
        fields = [pa.field(BEFORE, pa.string()), pa.field(APPLIED, pa.list_(pa.string()))]
        for n, check in self.repaired():
            fields.append(pa.field(_value_column(n), self.value_types[check.column]))
            fields.append(pa.field(_applied_column(n), pa.list_(pa.string())))
        return pa.schema(fields)

    def as_failing_columns(self) -> FailingColumns | None:
        """The repairs as columns of a lone step's failing rows, which its engine may compute as it
        checks them; None for several steps (a step's repairs read the rows the steps before repaired)."""
        if len(self.steps) != 1:
            return None
        return FailingColumns(tuple(self.inputs()), self.added(), functools.partial(fix_batch, self))

    def inputs(self) -> list[str]:
        names: list[str] = []
        for _, check, reason in self.steps:
            names += [c for c in (*check.columns, reason) if c not in names]
        return names


def fix_batch(plan: FixPlan, batch: pa.RecordBatch) -> list[pa.Array]:
    """The added columns (`FixPlan.added`) of a batch of failing rows."""
    with collector_paused():
        return _fixed_columns(plan, batch)


def _fixed_columns(plan: FixPlan, batch: pa.RecordBatch) -> list[pa.Array]:
    step_codes = [batch.column(reason).to_pylist() for _, _, reason in plan.steps]
    before = [_first_code(codes) for codes in zip(*step_codes)]
    still, repaired = _repair_steps(plan, batch, step_codes)
    fixed = [b is not None and not s for b, s in zip(before, still)]
    not_fixed = pa.array([not f for f in fixed], pa.bool_())
    return [
        pa.array([b if f else None for b, f in zip(before, fixed)], pa.string()),
        pa.array([a if f else None for a, f in zip(_applied_per_row(repaired, len(fixed)), fixed)], pa.list_(pa.string())),
        *(pc.if_else(not_fixed, pa.nulls(len(column), column.type), column) for column in repaired),
    ]


def _first_code(codes: tuple[str | None, ...]) -> str | None:
    return next((c for c in codes if c is not None), None)


def _repair_steps(
    plan: FixPlan, batch: pa.RecordBatch, step_codes: list[list[str | None]]
) -> tuple[list[bool], list[pa.Array]]:
    """Each chat step's repairs, in order, each on the values the steps before it repaired: which rows
    still fail a step after them, and per chat step its repaired values and the repairs applied."""
    still = [False] * batch.num_rows
    repaired: list[pa.Array] = []
    for (n, check, _), codes in zip(plan.steps, step_codes):
        if not isinstance(check, ChatCheck):
            still = [s or code is not None for s, code in zip(still, codes)]
            continue
        repairer = plan.repairers[n]
        wanted = [*check.columns, *([repairer.codes] if repairer.codes else [])]
        values, fixes, after = repairer({c: batch.column(c) for c in wanted})
        assert isinstance(values, pa.Array) and isinstance(fixes, pa.Array) and isinstance(after, pa.Array)
        batch = _replaced(batch, check.column, values)
        still = [s or (code is not None and now is not None) for s, code, now in zip(still, codes, after.to_pylist())]
        applied = [None if code is None else (f or []) for code, f in zip(codes, fixes.to_pylist())]
        repaired += [values, pa.array(applied, pa.list_(pa.string()))]
    return still, repaired


def _applied_per_row(repaired: list[pa.Array], rows: int) -> list[list[str]]:
    """Every repair applied to each row, over the steps (the lists among `repaired`)."""
    if not repaired:
        return [[] for _ in range(rows)]
    per_row = zip(*(column.to_pylist() for column in repaired[1::2]))
    return [[name for names in lists if names for name in names] for lists in per_row]


def _replaced(batch: pa.RecordBatch, name: str, values: pa.Array) -> pa.RecordBatch:
    index = batch.schema.get_field_index(name)
    return batch.set_column(index, name, values)


def repair_failing(engine: LakehouseEngine, annotated: Any, plan: FixPlan) -> Any:
    """The rows of `annotated` that failed a step, with their repairs: `BEFORE` is null
    on the rows that still fail."""
    reasons = [reason for _, _, reason in plan.steps]
    failing = engine.where_any(annotated, reasons)
    return engine.with_arrow_columns(failing, plan.inputs(), plan.added(), functools.partial(fix_batch, plan))


def fixed_output(
    engine: LakehouseEngine, fixed: Any, plan: FixPlan, source_columns: Sequence[str], run_id: str
) -> Any:
    """The fixed table: every source column (each repaired column holding its repaired value),
    then the code before the repairs, the repairs applied and the run id."""
    return engine.project(
        fixed, [], {**repaired_columns(plan, source_columns), BEFORE: REASON_BEFORE, APPLIED: FIXES}, _run(run_id)
    )


def fixed_as_valid(engine: LakehouseEngine, fixed: Any, plan: FixPlan, source_columns: Sequence[str], run_id: str) -> Any:
    """The fixed rows in the valid table's shape: the source columns, repaired, then the run id."""
    return engine.project(fixed, [], repaired_columns(plan, source_columns), _run(run_id))


def repaired_columns(plan: FixPlan, source_columns: Sequence[str]) -> dict[str, str]:
    """Where each source column comes from in a fixed row: its repaired value, or itself."""
    last = {check.column: _value_column(n) for n, check in plan.repaired()}
    return {last.get(c, c): c for c in source_columns}


def _run(run_id: str) -> dict[str, pa.Scalar]:
    return {RUN_ID: pa.scalar(run_id, pa.string())}


def step_fix_counts(engine: LakehouseEngine, fixed: Any, plan: FixPlan) -> dict[int, tuple[int, dict[str, int]]]:
    """Per chat step: the rows it failed that are now fixed, and how many of them each repair changed."""
    counts: dict[int, tuple[int, dict[str, int]]] = {}
    for n, _ in plan.repaired():
        counts[n] = engine.list_item_counts(fixed, _applied_column(n))
    return counts
