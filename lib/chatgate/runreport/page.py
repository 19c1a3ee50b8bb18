"""The run report as one self-contained HTML page: tables by great_tables, the chart as inline SVG.

Nothing on the page is fetched: no script, stylesheet, font or image comes from
elsewhere, and a Content-Security-Policy that allows none of them says so to the
browser too (a value that slipped through escaping still couldn't run a script).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._version import __version__
from ..report import FLAG_MARK, FLAG_WORDS
from ..steps import failure_sentence
from .chart import history_svg, tokens_svg
from .look import MONO, make_gt
from .model import LEVELS, ReasonExamples, RunReport, StepSummary
from .tabular import StepRow, steps_table

if TYPE_CHECKING:
    from great_tables import GT

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

SHOWN_PARAMETERS = (
    "dataset_type",
    "format",
    "profile",
    "first_role",
    "last_role",
    "tools",
    "sharegpt",
    "harmony",
)
"""The parameters of a step shown in its VALUES cell, when set (the JSON form has them all)."""

PAGE_CSS = (
    'body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; '
    "color: #333; max-width: 1200px; margin: 24px auto; padding: 0 16px; } "
    "h1 { font-size: 20px; margin-bottom: 4px; } "
    "h2 { font-size: 17px; margin-top: 32px; color: #444; } "
    "p.meta, p.hint { color: #666; font-size: 13px; margin-top: 0; } "
    f"code {{ font-family: {MONO}; }}"
)


def render_page(report: RunReport) -> str:
    """The whole page, as text."""
    run = report.run
    sections = [
        f"<h1>chatgate run report</h1>"
        f'<p class="meta">summary table <code>{escape(report.summary_path)}</code> · quarantine table '
        f"<code>{escape(report.quarantine_path)}</code> · made by chatgate {escape(__version__)}</p>",
        f'<section id="steps">{steps_gt(report).as_raw_html()}</section>',
        f'<section id="history"><h2>Failed rows per reason, {_runs(len(report.history))} up to this one</h2>'
        f"{history_svg(report.history, run.run_id)}</section>",
        *_tokens_sections(report),
        f'<section id="examples">{_examples_section(report)}</section>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>chatgate run {escape(run.run_id)}</title><style>{PAGE_CSS}</style></head>\n"
        "<body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )


def steps_gt(report: RunReport) -> GT:
    """The run's steps in pointblank's look, with their reasons; notes say what failed."""
    run = report.run
    version = "" if run.source_version is None else f" @ v{run.source_version}"
    badges = [
        ("ENGINE", run.engine),
        ("SOURCE", run.source + version),
        ("STARTED", run.started_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()),
        ("DURATION", f"{run.seconds:.1f} s"),
        ("LEVELS REACHED", ", ".join(report.levels) or "none"),
    ]
    notes = [
        f"Step {s.step} ({s.column}): " + failure_sentence(s.failed, s.reasons)
        for s in report.steps
        if s.failed
    ]
    rows = [_step_row(s) for s in report.steps]
    notes += [
        f"Step {row.i} ({row.columns}): {FLAG_MARK} {FLAG_WORDS} ({(row.failed or 0) / (row.units or 1):.0%}) "
        "and the step reached no level."
        for row in rows
        if row.flagged
    ]
    notes.append(
        "W, E, C: ● the step reached its warning, error or critical level (the summary keeps the levels "
        "reached, not the thresholds)."
    )
    return steps_table(
        rows,
        title=f"Run {run.run_id}",
        badges=badges,
        notes=notes,
        table_id="chatgate_run_steps",
        with_reasons=True,
    )


def _step_row(s: StepSummary) -> StepRow:
    return StepRow(
        i=s.step,
        assertion=s.assertion,
        columns=s.column,
        values=_values(s.parameters),
        units=s.units,
        passed=s.passed,
        failed=s.failed,
        levels={level: (True if level in s.levels else None) for level in LEVELS},
        reasons=s.reasons,
    )


def _values(parameters: dict[str, Any]) -> str:
    shown = [
        (k, parameters[k]) for k in SHOWN_PARAMETERS if parameters.get(k) not in (None, False, "", "auto")
    ]
    return ", ".join(k if v is True else f"{k}: {v}" for k, v in shown) or "—"


def _tokens_sections(report: RunReport) -> list[str]:
    """A histogram per step that counted its tokens (`token_stats=True`), its figures above it."""
    sections = []
    for s in report.steps:
        if s.tokens is None:
            continue
        f = s.tokens.figures
        figures = (
            f"{_n(f['total'])} tokens in {_plural(f['conversations'], 'conversation')}: min {_n(f['min'])}, "
            f"median {_n(f['median'])}, p95 {_n(f['p95'])}, max {_n(f['max'])}; assistant {_n(f['assistant'])}. "
            f"Billed: {_n(f['billed'])} over {_plural(f['epochs'], 'epoch')}"
            + ("" if f.get("limit") is None else f"; {_n(f['over_limit'])} over max_tokens={_n(f['limit'])}")
            + "."
        )
        sections.append(
            f'<section class="tokens" id="tokens-step-{s.step}"><h2>Tokens per conversation, step {s.step} '
            f"({escape(s.column)})</h2><p class=\"meta\">{escape(figures)}</p>{tokens_svg(s.tokens)}</section>"
        )
    return sections


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _plural(value: int | None, noun: str) -> str:
    return f"{_n(value)} {noun}" + ("" if value == 1 else "s")


def _examples_section(report: RunReport) -> str:
    failing = [e for e in report.examples if e.count]
    if not failing:
        return "<h2>Quarantined examples</h2><p>No row of this run failed.</p>"
    if not report.examples_per_reason:
        return ""
    hint = f"The first rows of each step and reason in the quarantine, each value cut to about {report.example_chars} characters" + (
        ": a long conversation shows its start and, after the length left out, the message at fault "
        "(MESSAGE, counted from 0) with the one before it."
        if report.has_message_index
        else "."
    )
    return f'<h2>Quarantined examples</h2><p class="hint">{escape(hint)}</p>{examples_gt(report, failing).as_raw_html()}'


def examples_gt(report: RunReport, groups: list[ReasonExamples]) -> GT:
    """One table, a group per step and reason: the checked value(s), a few other columns, the message index."""
    from great_tables import loc, style

    rows: list[dict[str, str]] = []
    for group in groups:
        label = f"Step {group.step} · {group.column} · {group.reason} · {group.count:,} {'row' if group.count == 1 else 'rows'}"
        if not group.examples:
            rows.append(
                {
                    "group": label,
                    "message": "",
                    "value": _muted("no row of this run in the quarantine"),
                    "others": "",
                }
            )
        for example in group.examples:
            rows.append(
                {
                    "group": label,
                    "message": "" if example.message is None else str(example.message),
                    "value": _fields(example.values, len(example.values) > 1),
                    "others": _fields(example.others, True),
                }
            )
    data = pa.Table.from_pylist(
        rows, schema=pa.schema([(k, pa.string()) for k in ("group", "message", "value", "others")])
    )
    if not report.has_message_index:
        data = data.drop(["message"])
    table = make_gt(data, "chatgate_run_examples", groupname_col="group")
    labels = {"message": "MESSAGE", "value": "VALUE", "others": "OTHER COLUMNS"}
    return (
        table.fmt(lambda x: "" if x is None else str(x), columns=["value", "others"])
        .cols_label(cases={k: v for k, v in labels.items() if k in data.column_names})
        .cols_width(
            cases={"value": "65%", "others": "25%"} | ({"message": "10%"} if report.has_message_index else {})
        )
        .tab_options(table_font_size="12px", table_width="100%", row_group_font_weight="bold")
        .tab_style(style.text(weight="bold", color="#666666"), loc.column_labels())
        .tab_style(style.text(font=MONO, size="11px"), loc.body())
    )


def _fields(values: dict[str, str], named: bool) -> str:
    """Escaped values, one block each, named when there are several (or for the other columns)."""
    blocks = [(f"<b>{escape(name)}</b>: " if named else "") + escape(text) for name, text in values.items()]
    return "".join(
        f'<div style="white-space:pre-wrap;overflow-wrap:anywhere;max-height:14em;overflow:auto">{b}</div>'
        for b in blocks
    )


def _muted(text: str) -> str:
    return f'<span style="color:#999">{escape(text)}</span>'


def _runs(n: int) -> str:
    return "the run" if n == 1 else f"the {n} runs"
