"""Step tables in pointblank's look, drawn with great_tables: a Validate's steps, and a run's.

One builder serves both (`steps_table`): a status strip, the step, its columns and
values, units, pass and fail counts with a bar, and the W/E/C threshold levels.
Every value from the data (column names, reasons, briefs, notes) is escaped here
or left to great_tables, which escapes plain cells; the cells given as HTML are
the ones `fmt()` passes through untouched, and each of their parts is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..report import FLAG_MARK, FLAG_WORDS, Validation, most_rows_fail, notes
from .look import FLAG_COLOR, MONO, make_gt

if TYPE_CHECKING:
    from great_tables import GT

LEVELS = ("warning", "error", "critical")

SEVERITY_COLORS = {"warning": "#AAAAAA", "error": "#EBBC14", "critical": "#FF3300", "green": "#4CA64C"}
"""pointblank's colors for the levels, and for a step that passed."""



DASH = "—"
SHOWN_REASONS = 4
HTML_COLUMNS = ["step", "eval", "pass", "fail", "w", "e", "c", "reasons"]


@dataclass(frozen=True)
class StepRow:
    """One row of a step table; `levels` maps each level to reached, not reached, or None (no threshold)."""

    i: int
    assertion: str
    columns: str
    values: str
    units: int | None
    passed: int | None
    failed: int | None
    levels: dict[str, bool | None]
    evaluated: str = "✓"
    brief: str | None = None
    reasons: dict[str, int] | None = None

    @property
    def flagged(self) -> bool:
        """Most rows fail and no level is known to mark it (no threshold, or none reached in a run's summary)."""
        no_level = all(state is None for state in self.levels.values())
        return no_level and most_rows_fail(self.failed, self.units)

    @property
    def status_color(self) -> str | None:
        """pointblank's strip: green when nothing failed, the worst level reached, the flag's purple
        when most rows fail with no level, else pale green."""
        if self.failed is None:
            return None
        if self.failed == 0:
            return SEVERITY_COLORS["green"]
        for level in reversed(LEVELS):
            if self.levels.get(level):
                return SEVERITY_COLORS[level]
        if self.flagged:
            return FLAG_COLOR
        return SEVERITY_COLORS["green"] + "66"


def steps_table(
    rows: list[StepRow],
    *,
    title: str | None,
    badges: list[tuple[str, str]],
    notes: list[str],
    table_id: str,
    with_reasons: bool = False,
) -> GT:
    """The steps as a great_tables table; `badges` (label, text) sit under the title, `notes` under the rows."""
    from great_tables import html, loc, style

    data = _steps_data(rows)
    if not with_reasons:
        data = data.drop(["reasons"])
    table = make_gt(data, table_id)
    table = table.fmt(_as_is, columns=[c for c in HTML_COLUMNS if c in data.column_names])
    if title is not None:
        subtitle = _badges(badges) + _flag_badge(rows)
        table = table.tab_header(title=title, subtitle=html(subtitle) if subtitle else None)
    for index, row in enumerate(rows):
        if color := row.status_color:
            table = table.tab_style(style.fill(color=color), loc.body(columns="status", rows=[index]))
    for note in notes:
        table = table.tab_source_note(note)
    return _look(table, with_reasons)


STEP_COLUMNS = ("status", "i", "step", "columns", "values", "eval", "units", "pass", "fail", "w", "e", "c", "reasons")


def _steps_data(rows: list[StepRow]) -> pa.Table:
    """One string cell per step and column of STEP_COLUMNS."""
    cells: dict[str, list[str]] = {
        "status": [""] * len(rows),
        "i": [str(r.i) for r in rows],
        "step": [_step_cell(r) for r in rows],
        "columns": [r.columns for r in rows],
        "values": [r.values for r in rows],
        "eval": [_eval_cell(r) for r in rows],
        "units": [DASH if r.units is None else f"{r.units:,}" for r in rows],
        "pass": [_count_cell(r.passed, r.units, SEVERITY_COLORS["green"]) for r in rows],
        "fail": [_count_cell(r.failed, r.units, SEVERITY_COLORS["critical"]) for r in rows],
        **{level[0]: [_level_cell(r.levels.get(level), level) for r in rows] for level in LEVELS},
        "reasons": [_reasons_cell(r.reasons) for r in rows],
    }
    return pa.table(cells, schema=pa.schema([(name, pa.string()) for name in STEP_COLUMNS]))


def _as_is(value: Any) -> str:
    """The cell's HTML, built (and escaped) here."""
    return "" if value is None else str(value)


def _look(table: GT, with_reasons: bool) -> GT:
    """pointblank's styles: bold gray labels, a left-aligned large title, mono data, shaded level cells."""
    from great_tables import loc, style

    data_columns = ["step", "columns", "values", "units", "pass", "fail"] + (
        ["reasons"] if with_reasons else []
    )
    widths = {
        "status": "6px",
        "i": "35px",
        "step": "190px",
        "columns": "120px",
        "values": "160px",
        "eval": "50px",
        "units": "70px",
        "pass": "80px",
        "fail": "80px",
        "w": "30px",
        "e": "30px",
        "c": "30px",
    }
    labels: dict[str, Any] = {
        "status": "",
        "i": "",
        "step": "STEP",
        "columns": "COLUMNS",
        "values": "VALUES",
        "eval": "EVAL",
        "units": "UNITS",
        "pass": "PASS",
        "fail": "FAIL",
        "w": "W",
        "e": "E",
        "c": "C",
    }
    if with_reasons:
        widths["reasons"] = "220px"
        labels["reasons"] = "REASONS"
    return (
        table.cols_label(cases=labels)
        .cols_width(cases=widths)
        .cols_align(align="center", columns=["eval", "w", "e", "c"])
        .cols_align(align="right", columns=["units", "pass", "fail"])
        .opt_align_table_header(align="left")
        .tab_options(table_font_size="13px", table_width="100%")
        .tab_style(style.text(weight="bold", color="#666666"), loc.column_labels())
        .tab_style(style.text(weight="bold", color="#666666", size="13px"), loc.body(columns="i"))
        .tab_style(style.text(size="24px", weight="bold", color="#444444"), loc.title())
        .tab_style(style.text(font=MONO, size="11px", color="black"), loc.body(columns=data_columns))
        .tab_style(style.fill(color="#FCFCFC"), loc.body(columns=["eval", "w", "e", "c"]))
        .tab_style(
            style.borders(sides="left", color="#E5E5E5", style="dashed"),
            loc.body(columns=["values", "pass", "fail"]),
        )
        .tab_style(
            style.borders(sides="left", color="#D3D3D3", style="solid"), loc.body(columns=["eval", "w"])
        )
        .tab_style(style.css("overflow-wrap: anywhere;"), loc.body(columns=["columns", "values"]))
    )


def _step_cell(row: StepRow) -> str:
    brief = (
        f'<div style="font-size:10px;color:#666;font-family:sans-serif">{escape(row.brief)}</div>'
        if row.brief
        else ""
    )
    return f"{escape(row.assertion)}{brief}{_flag_line(row)}"


def _flag_line(row: StepRow) -> str:
    """'⚑ most rows fail (100%), no level marks it' in the flag's color, under a flagged step."""
    if not row.flagged:
        return ""
    share = (row.failed or 0) / (row.units or 1)
    return (
        f'<div class="chatgate-flag" style="font-size:11px;font-weight:bold;color:{FLAG_COLOR};'
        f'font-family:sans-serif">{FLAG_MARK} {FLAG_WORDS} ({share:.0%}), no level marks it</div>'
    )


def _eval_cell(row: StepRow) -> str:
    """pointblank's ✓ (evaluated), ✗ (an error) or — (inactive); the flag when most rows fail with no level."""
    if row.flagged:
        return (
            f'<span class="chatgate-flag" style="color:{FLAG_COLOR};font-size:15px;font-weight:bold" '
            f'title="{FLAG_WORDS}, and no level marks the step">{FLAG_MARK}</span>'
        )
    return escape(row.evaluated)


def _count_cell(count: int | None, units: int | None, color: str) -> str:
    """'12' over '0.30', over a bar as long as the fraction."""
    if count is None:
        return DASH
    fraction = count / units if units else 0.0
    bar = (
        '<div style="margin-left:auto;height:4px;width:60px;background:#EEEEEE">'
        f'<div style="height:4px;width:{100 * fraction:.1f}%;background:{color}"></div></div>'
    )
    return f'<div>{count:,}</div><div style="font-size:10px;color:#666">{fraction:.2f}</div>{bar}'


def _level_cell(state: bool | None, level: str) -> str:
    """A filled circle for a level reached, a ring for one not reached, a dash for no threshold."""
    if state is None:
        return DASH
    mark, said = ("●", "reached") if state else ("○", "not reached")
    return f'<span style="color:{SEVERITY_COLORS[level]};font-size:15px" title="{level} level {said}">{mark}</span>'


def _reasons_cell(reasons: dict[str, int] | None) -> str:
    if not reasons:
        return DASH
    items = list(reasons.items())
    lines = [f"{escape(reason)} {count:,}" for reason, count in items[:SHOWN_REASONS]]
    if len(items) > SHOWN_REASONS:
        lines.append(f"+{len(items) - SHOWN_REASONS} more")
    return "<br>".join(lines)


def _badges(badges: list[tuple[str, str]]) -> str:
    """pointblank's subtitle: small bordered labels, each with its value."""
    return "".join(
        '<span style="display:inline-block;margin:6px 6px 0 0;font-size:11px;border:1px solid #999;'
        'border-radius:3px;font-family:sans-serif">'
        f'<span style="padding:1px 4px;background:#999;color:#FFF">{escape(label)}</span>'
        f'<span style="padding:1px 5px;color:#333">{escape(text)}</span></span>'
        for label, text in badges
    )


def _flag_badge(rows: list[StepRow]) -> str:
    """A badge in the flag's color naming the flagged steps ('⚑ MOST ROWS FAIL | step 2'), or nothing."""
    steps = [str(row.i) for row in rows if row.flagged]
    if not steps:
        return ""
    said = ("step " if len(steps) == 1 else "steps ") + ", ".join(steps)
    return (
        '<span class="chatgate-flag" style="display:inline-block;margin:6px 6px 0 0;font-size:11px;'
        f'border:1px solid {FLAG_COLOR};border-radius:3px;font-family:sans-serif">'
        f'<span style="padding:1px 4px;background:{FLAG_COLOR};color:#FFF">{FLAG_MARK} {FLAG_WORDS.upper()}</span>'
        f'<span style="padding:1px 5px;color:{FLAG_COLOR};font-weight:bold">{said}</span></span>'
    )


def validation_table(v: Validation, title: str | None = ":default:") -> GT:
    """The tabular report of an interrogated Validate (see `Validate.get_tabular_report`)."""
    rows = [
        StepRow(
            i=step.i,
            assertion=step.assertion_type + "()",
            columns=step.columns_text(),
            values=step.values_text(),
            units=step.units,
            passed=step.passed,
            failed=step.failed,
            levels={
                level: (level in step.levels) if getattr(step.thresholds, level) is not None else None
                for level in LEVELS
            },
            evaluated=DASH if not step.active else ("✗" if step.eval_error else "✓"),
            brief=step.brief_text(),
        )
        for step in v.steps
    ]
    return steps_table(
        rows,
        title=_title(v, title),
        badges=_validation_badges(v),
        notes=notes(v),
        table_id="chatgate_validation",
    )


def _title(v: Validation, title: str | None) -> str | None:
    """pointblank's title choices: ':default:', ':tbl_name:', ':none:' (or None), or a text of one's own."""
    if title is None or title == ":none:":
        return None
    if title == ":default:":
        return "chatgate validation"
    if title == ":tbl_name:":
        return v.tbl_name or "chatgate validation"
    return title


def _validation_badges(v: Validation) -> list[tuple[str, str]]:
    badges = [("ENGINE", v.engine.name)]
    if v.tbl_name:
        badges.append(("TABLE", v.tbl_name))
    if v.label:
        badges.append(("LABEL", v.label))
    if not v.thresholds.is_empty():
        shown = {level: getattr(v.thresholds, level) for level in LEVELS}
        badges += [
            (level[0].upper(), DASH if value is None else str(value)) for level, value in shown.items()
        ]
    if v.time_start is not None:
        badges.append(("STARTED", v.time_start.strftime("%Y-%m-%d %H:%M:%S UTC")))
    return badges
