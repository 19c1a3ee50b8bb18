"""Reports people read: the validation table (text and HTML) and the step report."""

from __future__ import annotations

import html
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from .names import MESSAGE, REASON, REASONS
from .pipeline import TOKEN_STATS
from .rules import locate_row
from .steps import Step
from .thresholds import Thresholds

if TYPE_CHECKING:
    from great_tables import GT

    from .engines.base import Engine


class Validation(Protocol):
    """What the reports read of a `Validate` (which is one: the reports don't import it)."""

    @property
    def engine(self) -> Engine: ...

    @property
    def tbl_name(self) -> str | None: ...

    @property
    def label(self) -> str | None: ...

    @property
    def thresholds(self) -> Thresholds: ...

    @property
    def steps(self) -> list[Step]: ...

    @property
    def time_start(self) -> datetime | None: ...

    def get_health(self) -> dict[str, float]: ...


def _esc(text: str) -> str:
    """Escape text for an HTML text node (quotes stay as they are: they need no escaping there)."""
    return html.escape(text, quote=False)


MOST_ROWS_FAIL = 0.5
"""A step without thresholds that fails more than this fraction of its rows is flagged in the
reports ("most rows fail"): with no level to reach, nothing else would mark it."""

FLAG_WORDS = "most rows fail"
FLAG_MARK = "⚑"


def most_rows_fail(failed: int | None, units: int | None) -> bool:
    """Whether `failed` is more than half (`MOST_ROWS_FAIL`) of `units`.

    >>> most_rows_fail(3, 5), most_rows_fail(2, 4), most_rows_fail(0, 0), most_rows_fail(None, 4)
    (True, False, False, False)
    """
    return bool(failed and units and failed / units > MOST_ROWS_FAIL)


def flagged(step: Step) -> bool:
    """A step with no thresholds at all that fails most of its rows (see `MOST_ROWS_FAIL`)."""
    return step.thresholds.is_empty() and most_rows_fail(step.failed, step.units)


def flag_note(step: Step) -> str:
    """'Step 2: ⚑ most rows fail (100%) and the step has no thresholds, so no level marks it.'"""
    share = (step.failed or 0) / (step.units or 1)
    return (
        f"Step {step.i}: {FLAG_MARK} {FLAG_WORDS} ({share:.0%}) and the step has no thresholds, "
        "so no level marks it."
    )


HEADERS = ("STEP", "COLUMNS", "VALUES", "TBL", "EVAL", "UNITS", "PASS", "FAIL", "W", "E", "C", "EXT")
DASH = "—"


def _level_cell(step: Step, level: str) -> str:
    if getattr(step.thresholds, level) is None:
        return DASH
    return "●" if level in step.levels else "○"


def _count_cell(count: int | None, fraction: float | None) -> str:
    return DASH if count is None else f"{count} {fraction:.2f}"


def step_cells(step: Step) -> list[str]:
    """The cells of a step's row, in HEADERS order."""
    if not step.active:
        evaluated = DASH
    elif step.eval_error:
        evaluated = "✗"
    else:
        evaluated = "✓"
    return [
        str(step.i),
        step.assertion_type + "()",
        step.columns_text(),
        step.values_text(),
        "",
        evaluated,
        DASH if step.units is None else str(step.units),
        _count_cell(step.passed, step.f_passed),
        _count_cell(step.failed, step.f_failed),
        _level_cell(step, "warning"),
        _level_cell(step, "error"),
        _level_cell(step, "critical"),
        "✓" if step.failed else DASH,
    ]


def _title(v: Validation) -> str:
    parts = ["chatgate validation", v.engine.name]
    if v.tbl_name:
        parts.append(v.tbl_name)
    if v.label:
        parts.append(v.label)
    return " · ".join(parts)


def notes(v: Validation) -> list[str]:
    """The steps' notes, then a flag line for each step without thresholds that fails most rows."""
    found = [note for step in v.steps if (note := step.note())]
    found += [flag_note(step) for step in v.steps if flagged(step)]
    return found + [f"Step {step.i} {line}" for step in v.steps for line in _token_lines(step)]


def _token_lines(step: Step) -> list[str]:
    stats = step.judged.extra.get(TOKEN_STATS) if step.judged is not None else None
    return stats.lines() if stats is not None else []


def render_text(v: Validation, planned: int) -> str:
    """The validation table as text: one row per step, the notes under it (before
    interrogate(): how many step calls are `planned`)."""
    if v.time_start is None:
        return f"{_title(v)}\n{planned} planned step call(s); call .interrogate() to run them."
    headers = ("STEP", "", "COLUMNS", "VALUES", "TBL", "EVAL", "UNITS", "PASS", "FAIL", "W", "E", "C", "EXT")
    rows = [step_cells(s) for s in v.steps]
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(headers)]
    lines = [_title(v), "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    for step in v.steps:
        if text := step.brief_text():
            lines.append(f"Step {step.i} brief: {text}")
    found = notes(v)
    if found:
        lines += ["Notes", *found]
    health = v.get_health()
    lines.append(f"Health: {health['overall']:.2f} overall")
    return "\n".join(lines)


def render_html(v: Validation, planned: int) -> str:
    """The validation table as HTML, for notebooks."""
    esc = _esc
    if v.time_start is None:
        return f"<p>{esc(render_text(v, planned))}</p>"
    head = "".join(f"<th>{esc(h)}</th>" for h in ("STEP", "", *HEADERS[1:]))
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in step_cells(s)) + "</tr>" for s in v.steps
    )
    note_html = "".join(f"<li>{esc(n)}</li>" for n in notes(v))
    return (
        f'<div class="chatgate-report"><p><strong>{esc(_title(v))}</strong></p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        + (f"<p>Notes</p><ul>{note_html}</ul>" if note_html else "")
        + "</div>"
    )


class StepReport:
    """The failing rows of one step, under a header with the assertion and the failure counts.

    Shown as pointblank shows it: a great_tables table (`gt`; `as_raw_html()` and every other
    method of a `GT` work on the report too), its repr is the same as text. `data` is the
    extract in the input's own kind (a Polars or pandas DataFrame, an Ibis table, a Spark
    DataFrame), with `pb_reason_` as its last column; `rows()` gives the rows shown, as text.
    """

    def __init__(self, step: Step, data: Any, engine: Engine, limit: int = 100) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"limit= must be a number of rows, 1 or more, not {limit!r}")
        self.step = step
        self.data = data
        self.engine = engine
        self.limit = limit

    def header(self) -> str:
        s = self.step
        if s.eval_error:
            return f"Report for Validation Step {s.i} ✗ {s.eval_error}"
        if not s.evaluated:
            return f"Report for Validation Step {s.i}: inactive, not evaluated"
        assert s.failed is not None and s.judged is not None  # an evaluated step has a count
        mark = "✓" if s.failed == 0 else "✗"
        if s.table_check is not None:
            problems = "; ".join(s.judged.extra.get("problems", {}).values())
            return f"Report for Validation Step {s.i} {mark} ASSERTION `{s.assertion()}`" + (
                f": {problems}" if problems else ""
            )
        shown = min(s.failed, self.limit)
        extract = (
            f"EXTRACT OF ALL {s.failed} ROWS (WITH TEST UNIT FAILURES IN RED):"
            if shown >= s.failed
            else f"EXTRACT OF FIRST {shown} OF {s.failed} ROWS (WITH TEST UNIT FAILURES IN RED):"
        )
        return (
            f"Report for Validation Step {s.i} {mark} ASSERTION `{s.assertion()}` "
            f"{s.failed} / {s.units} TEST UNIT FAILURES IN COLUMN {s.column_number} {extract}"
        )

    def rows(self, limit: int | None = None) -> tuple[list[str], list[list[str]]]:
        """Column names and up to `limit` rows (the report's limit by default), as strings."""
        table, cells = self._shown(limit)
        return ([], []) if table is None else (table.column_names, cells)

    def _shown(self, limit: int | None = None) -> tuple[pa.Table | None, list[list[str]]]:
        """The rows shown, as read (with `pb_message_`) and as text; no table for a step without rows."""
        if self.data is None:
            return None, []
        shown = self.limit if limit is None else limit
        table = with_messages(self.step, self.engine.preview(self.data, shown), self.engine, self.data)
        names = table.column_names
        columns = [table.column(n).to_pylist() for n in names]
        cells = [[_cell(col[r]) for col in columns] for r in range(table.num_rows)]
        if REASONS in names:
            k = names.index(REASONS)
            for row, problems in zip(cells, self._problems(table)):
                row[k] = _problems_cell(problems)
        return table, cells

    def _problems(self, table: pa.Table) -> list[Any]:
        """The `pb_reasons_` lists of the rows shown (pandas' preview shows each cell as text: read its frame)."""
        column = table.column(REASONS)
        if pa.types.is_string(column.type):
            return list(self.data[REASONS].head(table.num_rows))
        return list(column.to_pylist())

    @property
    def gt(self) -> GT:
        """The report as a great_tables table, in pointblank's look."""
        from .runreport.steptable import Extract, step_report_gt

        table, cells = self._shown()
        extract = None if table is None else Extract(table, cells, list(self.step.row_check.columns))
        flag = flag_note(self.step).split(": ", 1)[1] if flagged(self.step) else None
        return step_report_gt(self.step, self.header(), extract, min(self.step.failed or 0, self.limit), flag)

    def as_raw_html(self, **options: Any) -> str:
        """The table's HTML (great_tables' `GT.as_raw_html`, with its options)."""
        return str(self.gt.as_raw_html(**options))

    def __getattr__(self, name: str) -> Any:
        """Any other method of great_tables' `GT` (`show`, `save`, `tab_header`, ...), on `gt`."""
        if name.startswith("_") or name in ("step", "data", "engine", "limit"):
            raise AttributeError(name)
        return getattr(self.gt, name)

    def __repr__(self) -> str:
        names, rows = self.rows()
        if not names:
            return self.header()
        widths = [min(60, max(len(n), *(len(r[k]) for r in rows))) if rows else len(n) for k, n in enumerate(names)]
        lines = [self.header(), "  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip()]
        lines += ["  ".join(_clip(c, w).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return str(self.gt._repr_html_())


def with_messages(step: Step, table: pa.Table, engine: Engine, data: Any) -> pa.Table:
    """`table` (the first failing rows, as shown) with `pb_message_` after `pb_reason_`: where
    each row's problem is, found in the rows' own values (`data`), not in their display."""
    check = step.row_check
    names = table.column_names
    if REASON not in names or MESSAGE in names or not set(check.columns) <= set(names) or not table.num_rows:
        return table
    values = engine.head_values(data, [*check.columns, REASON], table.num_rows)
    messages = []
    for i, code in enumerate(values[REASON]):
        problem = locate_row(check, {c: values[c][i] for c in check.columns}, code) if code else None
        messages.append(None if problem is None else problem.message)
    return table.add_column(names.index(REASON) + 1, MESSAGE, pa.array(messages, pa.int32()))


def _problems_cell(problems: Any) -> str:
    """'not_alternating@1, empty_content@1', 'no_messages', 'completion_role@completion[0]': each
    problem's code at its message (and its column, for a dataset row's)."""
    texts = []
    for problem in problems if problems is not None else []:
        column, message = problem.get("column"), problem.get("message")
        where = "" if message is None else str(message)
        if column is not None:
            where = column if message is None else f"{column}[{message}]"
        texts.append(f"{problem['code']}@{where}" if where else problem["code"])
    return ", ".join(texts)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def step_json(s: Step) -> dict[str, Any]:
    """A step and its results, as `Validate.get_json_report` lists it."""
    return {
        "i": s.i,
        "assertion_type": s.assertion_type,
        "column": s.column,
        "values": s.row_check.as_dict(),
        "pre": s.pre is not None,
        "segments": None if s.segment is None else list(s.segment),
        "thresholds": s.thresholds.as_dict(),
        "brief": s.brief_text(),
        "active": s.active,
        "dimension": s.dimension,
        "eval_error": s.eval_error,
        "all_passed": s.evaluated and s.failed == 0,
        "n": s.units,
        "n_passed": s.passed,
        "n_failed": s.failed,
        "f_passed": s.f_passed,
        "f_failed": s.f_failed,
        "warning": "warning" in s.levels,
        "error": "error" in s.levels,
        "critical": "critical" in s.levels,
        "reasons": s.reasons,
        "distinct_values": s.judged.distinct_values if s.judged else None,
        "proc_duration_s": s.seconds,
        "notes": s.note(),
    }
