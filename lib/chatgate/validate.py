"""The pointblank-style Python API: `Validate(data).col_vals_chat_format(...).interrogate()`.

Step methods only record a plan and return self; `interrogate()` runs it on the
data's own engine. Reports and extracts read what the steps found.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from .engines import engine_for
from .engines.base import Engine
from .errors import ChatgateError
from .fixes import fixed_data, step_extract
from .names import API_RESERVED
from .options_given import options_format
from .pipeline import judge_step, judge_table, preflight
from .report import StepReport, render_html, render_text, step_json
from .rules import ChatCheck, ChatFormat, RowCheck, dataset_checks
from .rules.datasets.table_checks import TableCheck
from .selectors import Column, Selector, resolve_columns
from .step_methods import StepMethods
from .step_params import StepSettings, check_brief, check_segments
from .steps import ASSERTION_TYPE, DATASET_ASSERTION_TYPE, DEFAULT_DIMENSION, Step, table_step
from .thresholds import Actions, normalize_thresholds, run_actions


@dataclass
class _Directive:
    """One call of a step method, expanded into steps by interrogate()."""

    columns: Any
    fmt: ChatFormat
    make_check: Callable[[str], RowCheck]
    settings: StepSettings
    assertion_type: str = ASSERTION_TYPE


class Validate(StepMethods):
    """A validation plan for one table, and what it found.

    The step methods (`col_vals_chat_format`, `col_vals_dataset_type`) come from
    `StepMethods`, their parameters written out from the spec; they call `_add_chat_format`
    and `_add_dataset_type` here.

    >>> import polars as pl
    >>> tbl = pl.DataFrame({"messages": ['[{"role": "user", "content": "Hi"}]', "[]"]})
    >>> Validate(tbl).col_vals_chat_format("messages").interrogate().n_failed(i=1, scalar=True)
    1
    """

    def __init__(
        self,
        data: Any,
        tbl_name: str | None = None,
        label: str | None = None,
        thresholds: Any = None,
        actions: Actions | None = None,
        brief: str | bool | None = None,
    ) -> None:
        self.data = data
        self.engine: Engine = engine_for(data)
        self.tbl_name = tbl_name
        self.label = label
        self.thresholds = normalize_thresholds(thresholds)
        if actions is not None and not isinstance(actions, Actions):
            raise TypeError(f"actions= must be an Actions object, not {type(actions).__name__}")
        self.actions = actions
        self.brief = check_brief(brief)
        self._plan: list[_Directive] = []
        self.steps: list[Step] = []
        self.time_start: datetime | None = None
        self.time_end: datetime | None = None

    # -- the plan ---------------------------------------------------------------
    # The step methods' implementations: their own parameters and docstrings are the spec of
    # `StepMethods.col_vals_*` (after editing them: `make signatures`).

    def _add_chat_format(
        self,
        columns: Any,
        *,
        tools_column: str | None = None,
        images_column: str | None = None,
        arguments: Mapping[str, Any],
    ) -> None:
        """Check that each value of `columns` is a well-formed chat conversation.

        One step per column (and per segment). The core options may be given by
        position after `columns`, as in pointblank; the others (tool calls,
        Harmony, ShareGPT, vision, profiles) by keyword. See the README for them
        and for the problem codes.
        """
        fmt = options_format(arguments)
        ChatCheck("_", fmt, tools_column, images_column)  # fail fast on the extra columns
        settings = StepSettings.pick(arguments)
        if isinstance(columns, (list, tuple)) and not columns:
            raise ValueError("columns= is empty: name at least one column")
        resolve_columns(columns, self.engine.columns(self.data))  # fail fast on a bad columns=

        def make_check(column: str) -> RowCheck:
            return ChatCheck(column, fmt, tools_column, images_column)

        self._plan.append(_Directive(columns, fmt, make_check, settings))

    def _add_dataset_type(
        self,
        dataset_type: str | None = None,
        *,
        columns: dict[str, str] | None = None,
        format: Literal["auto", "conversational", "standard"] = "auto",
        tools_column: str | None = "tools",
        images_column: str | None = "images",
        arguments: Mapping[str, Any],
    ) -> None:
        """Check the rows of a TRL dataset type (detected from the columns when not named).

        `columns` maps the type's fields to the table's columns (`{"prompt": "question"}`);
        the check's options say what a conversation is (roles, tools, sharegpt, ...).
        """
        fmt = options_format(arguments)
        settings = StepSettings.pick(arguments)
        checks = dataset_checks(
            dataset_type,
            self.engine.columns(self.data),
            format=format,
            columns=columns,
            tools_column=tools_column,
            images_column=images_column,
            chat=fmt,
        )
        for check in checks:
            fmt = getattr(check, "fmt", ChatFormat())

            def make_check(_name: str, check: RowCheck = check) -> RowCheck:
                return check

            self._plan.append(
                _Directive([", ".join(check.columns)], fmt, make_check, settings, DATASET_ASSERTION_TYPE)
            )

    # -- running it -------------------------------------------------------------

    def interrogate(self) -> Validate:
        """Run every step of the plan."""
        self.time_start = datetime.now(timezone.utc)
        self.steps = []
        for directive in self._plan:
            for step in self._expand(directive):
                self.steps.append(step)
                self._run(step)
        self.time_end = datetime.now(timezone.utc)
        return self

    def _expand(self, d: _Directive) -> list[Step]:
        """The steps of one directive; what can't be expanded becomes a step with an eval error."""
        available = self.engine.columns(self.data)
        columns = resolve_columns(d.columns, available) if d.assertion_type == ASSERTION_TYPE else d.columns
        error = None
        if not columns:
            columns = [_columns_text(d.columns)]
            error = f"columns= {columns[0]} matches no column of the table (columns: {available})"
        active, active_error = self._active(d.settings.active)
        error = error or active_error
        segments: list[tuple[str, Any] | None] = [None]
        if error is None:
            try:
                segments = self._segments(d.settings.segments)
            except Exception as exc:  # noqa: BLE001 - a segment column that isn't there, ...
                error = f"segments= couldn't be resolved: {_describe(exc)}"
        out: list[Step] = []
        for column in columns:
            for segment in segments:
                out.append(self._new_step(d, len(self.steps) + len(out) + 1, column, segment, active, error))
        table = TableCheck.of([step.row_check for step in out]) if error is None else None
        if table is not None:
            out.append(table_step(out[0], i=len(self.steps) + len(out) + 1, check=table))
        return out

    def _active(self, active: bool | Callable[[Any], Any]) -> tuple[bool, str | None]:
        """active=, a callable's asked of the data; one that raises leaves the step active, with the error."""
        if not callable(active):
            return bool(active), None
        try:
            return bool(active(self.data)), None
        except Exception as exc:  # noqa: BLE001 - reported as the step's eval error
            return True, f"active= raised {_describe(exc)}"

    def _new_step(
        self, d: _Directive, i: int, column: str, segment: tuple[str, Any] | None, active: bool, error: str | None
    ) -> Step:
        """Step `i` of directive `d`: its settings, or the plan's where it has none."""
        step = Step(
            i=i,
            column=column,
            fmt=d.fmt,
            thresholds=d.settings.own_thresholds or self.thresholds,
            actions=d.settings.actions or self.actions,
            brief=d.settings.brief if d.settings.brief is not None else self.brief,
            pre=d.settings.pre,
            segment=segment,
            active=active,
            dimension=d.settings.dimension or DEFAULT_DIMENSION,
            dedup=d.settings.dedup,
            turns=d.settings.turns,
            check=d.make_check(column),
            assertion_type=d.assertion_type,
        )
        step.eval_error = error if step.active else None
        return step

    def _segments(self, spec: Any) -> list[tuple[str, Any] | None]:
        if spec is None:
            return [None]
        out: list[tuple[str, Any] | None] = []
        for item in check_segments(spec):
            if isinstance(item, str):
                if item not in self.engine.columns(self.data):
                    raise ChatgateError(f"the segment column {item!r} isn't in the table")
                out.extend((item, v) for v in self.engine.segment_values(self.data, item))
            else:
                values = item[1] if isinstance(item[1], (list, tuple)) else [item[1]]
                out.extend((item[0], v) for v in values)
        return out

    def _run(self, step: Step) -> None:
        if not step.active or step.eval_error:
            return
        started = time.perf_counter()
        try:
            table = step.pre(self.data) if step.pre else self.data
            columns = self.engine.columns(table)
            if step.table_check is not None:
                step.judged = judge_table(step.table_check, self.engine.row_count(table), columns)
                step.levels = step.thresholds.reached(failed=step.judged.failed, units=1)
                return
            if step.segment is not None:
                if step.segment[0] not in columns:
                    raise ChatgateError(f"the segment column {step.segment[0]!r} isn't in the table")
                table = self.engine.filter_equal(table, *step.segment)
            preflight(step.row_check, columns, API_RESERVED)
            step.column_number = columns.index(step.row_check.columns[0]) + 1
            outcome = judge_step(
                self.engine, table, step.row_check, dedup=step.dedup, thresholds=step.thresholds
            )
            step.judged, step.levels = outcome.judged, outcome.levels
        except ChatgateError as exc:
            step.eval_error = str(exc)
            return
        except Exception as exc:  # noqa: BLE001 - pre= or the engine failed: the report says so
            step.eval_error = _describe(exc)
            return
        finally:
            step.seconds = time.perf_counter() - started
        if step.levels and step.actions is not None:
            run_actions(
                step.actions,
                step.levels,
                {
                    "step": step.i,
                    "column": step.column,
                    "type": step.assertion_type,
                    "failed": step.failed,
                    "units": step.units,
                    "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                },
            )

    # -- what it found ----------------------------------------------------------

    def _step(self, i: int) -> Step:
        self._require_interrogated()
        for step in self.steps:
            if step.i == i:
                return step
        raise IndexError(f"there is no step {i}; steps are 1 to {len(self.steps)}")

    def _require_interrogated(self) -> None:
        if self.time_start is None:
            raise ChatgateError("call .interrogate() first: the plan hasn't been run")

    def _per_step(self, value: Callable[[Step], Any], i: int | list[int] | None, scalar: bool) -> Any:
        """`value` of each step asked for (all by default): a dict, or one value with scalar=True."""
        self._require_interrogated()
        wanted = [s.i for s in self.steps] if i is None else ([i] if isinstance(i, int) else list(i))
        values = {n: value(self._step(n)) for n in wanted}
        if scalar:
            if len(values) != 1:
                raise ValueError("scalar=True needs a single step: pass i=<step number>")
            return next(iter(values.values()))
        return values

    def n(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        """Test units (rows) per step."""
        return self._per_step(lambda s: s.units, i, scalar)

    def n_passed(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        return self._per_step(lambda s: s.passed, i, scalar)

    def n_failed(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        return self._per_step(lambda s: s.failed, i, scalar)

    def f_passed(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        return self._per_step(lambda s: s.f_passed, i, scalar)

    def f_failed(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        return self._per_step(lambda s: s.f_failed, i, scalar)

    def warning(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        """Whether each step reached its warning level."""
        return self._per_step(lambda s: "warning" in s.levels, i, scalar)

    def error(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        return self._per_step(lambda s: "error" in s.levels, i, scalar)

    def critical(self, i: int | list[int] | None = None, scalar: bool = False) -> Any:
        return self._per_step(lambda s: "critical" in s.levels, i, scalar)

    def all_passed(self) -> bool:
        """True when every active step ran and no unit failed."""
        self._require_interrogated()
        return all(s.eval_error is None and (not s.active or s.failed == 0) for s in self.steps)

    def assert_passing(self) -> None:
        """Raise AssertionError naming each step with failures."""
        if self.all_passed():
            return
        problems = [s.note() for s in self.steps if s.eval_error or (s.failed or 0) > 0]
        raise AssertionError("The following steps failed:\n" + "\n".join(f"- {p}" for p in problems))

    def get_step_report(self, i: int, limit: int = 100) -> StepReport:
        """The failing rows of step i with `pb_reason_`, under a header with the assertion.

        A great_tables table in pointblank's look (`.gt`; `.as_raw_html()`, `.show()`, `.save()`
        and GT's other methods work on the report), a long conversation shown around its message
        at fault. `limit` is the number of rows shown (the report's `data` holds them all;
        `rows()` gives those shown as text).
        """
        step = self._step(i)
        return StepReport(step, self._extract(step), self.engine, limit=limit)

    def get_data_extracts(self, i: int | None = None, frame: bool = False) -> Any:
        """The failing rows with `_row_num_` and `pb_reason_`: a frame of the input's own kind.

        A dict of step number to frame, or the frame itself with `frame=True` and one step.
        With `turns="all"` on the step, `pb_reasons_` lists every problem of each row.
        """
        self._require_interrogated()
        wanted = [s.i for s in self.steps if s.evaluated] if i is None else [i]
        extracts = {n: self._extract(self._step(n)) for n in wanted}
        if frame:
            if len(extracts) != 1:
                raise ValueError("frame=True needs a single step: pass i=<step number>")
            return next(iter(extracts.values()))
        return extracts

    def _extract(self, step: Step) -> Any:
        if step.judged is None or step.table_check is not None:  # not evaluated, or no rows to show
            return None
        if step.extract is None:
            step.extract = step_extract(self.engine, step)
        return step.extract

    def get_fixed_data(self, i: int, repairs: str | Iterable[str]) -> Any:
        """The failing rows of step i, repaired: in the input's own kind, as its extract.

        `repairs` names the repairs (a preset, "safe" or "all", a repair's name, or a list of
        them: see `chatgate.repair`), applied with the step's options. The step's column holds
        each row's repaired value, `pb_fixes_` the repairs applied, and `pb_reason_` its code
        after them (null where the row now passes); `pb_reasons_` too with `turns="all"`.
        Steps of `col_vals_chat_format()` only.
        """
        return fixed_data(self.engine, self._step(i), repairs)

    def get_sundered_data(self, type: Literal["pass", "fail"] = "pass") -> Any:
        """The rows that pass every step (type="pass") or fail at least one (type="fail").

        Steps with pre= or segments= judge other tables, so they are left out.
        """
        self._require_interrogated()
        if type not in ("pass", "fail"):
            raise ValueError(f"type= must be 'pass' or 'fail', not {type!r}")
        steps = [s for s in self.steps if s.evaluated and s.pre is None and s.segment is None and not s.table_check]
        return self.engine.sunder(self.data, [(s.row_check, s.dedup) for s in steps], type)

    def get_health(self) -> dict[str, float]:
        """The fraction of passing units, overall and per dimension (evaluated steps only)."""
        self._require_interrogated()
        scores: dict[str, list[float]] = {}
        for s in self.steps:
            if s.evaluated:
                f_passed = s.f_passed
                assert f_passed is not None  # an evaluated step has one
                scores.setdefault(s.dimension, []).append(f_passed)
        per = {d: sum(v) / len(v) for d, v in scores.items()}
        overall = sum(per.values()) / len(per) if per else 1.0
        return {"overall": overall, **per}

    def get_json_report(self) -> str:
        """Every step and its results as JSON."""
        import json

        self._require_interrogated()
        return json.dumps([step_json(s) for s in self.steps], indent=2, default=str)

    def get_tabular_report(self, title: str | None = ":default:") -> Any:
        """The validation table in pointblank's look, as a great_tables `GT`.

        It shows in notebooks, and `.as_raw_html()` gives its HTML. `title` is
        ":default:", ":tbl_name:", ":none:" (or None) for no header, or a text of one's own.
        """
        from .runreport.tabular import validation_table

        self._require_interrogated()
        return validation_table(self, title)

    # -- display ----------------------------------------------------------------

    def __repr__(self) -> str:
        return render_text(self, planned=len(self._plan))

    def _repr_html_(self) -> str:
        return render_html(self, planned=len(self._plan))


def _columns_text(columns: Any) -> str:
    """How a columns= spec that matched nothing is shown in the COLUMNS cell."""
    items = columns if isinstance(columns, (list, tuple)) else [columns]
    texts = []
    for item in items:
        if isinstance(item, Column):
            item = item.target
        texts.append(item.text if isinstance(item, Selector) else str(item))
    return ", ".join(texts)


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ChatgateError) else f"{type(exc).__name__}: {exc}"
