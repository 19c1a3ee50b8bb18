"""`Validate.get_step_report()` drawn as pointblank draws it: a great_tables table of the failing rows.

The title says which step; under it, the assertion in a bordered code box, the failures
out of the units and the extract's size, then the rows with the checked column(s) and
`pb_reason_` in red. A long conversation shows its start and the message at fault
(`pb_message_`), as the run report's examples do. Every cell is escaped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from ..names import MESSAGE, REASON, REASONS
from .look import FLAG_COLOR, MONO, make_gt
from .window import message_window

if TYPE_CHECKING:
    import pyarrow as pa
    from great_tables import GT

    from ..steps import Step

CELL_CHARS = 300
"""About this many characters of each checked value (see `window.message_window`)."""

FAILURE_RED = "#B22222"
FAILURE_FILL = "#FFF0F0"
PASS_GREEN = "#4CA64C"


def _esc(text: str) -> str:
    """Escape text for an HTML text node (quotes stay as they are: they need no escaping there)."""
    return escape(text, quote=False)


@dataclass(frozen=True)
class Extract:
    """The rows a step report shows: `table` as previewed (with `pb_message_`), `cells` as text."""

    table: pa.Table
    cells: list[list[str]]
    checked: list[str]


def step_report_gt(step: Step, header: str, extract: Extract | None, shown: int, flag: str | None = None) -> GT:
    """The step report as a great_tables table; `header` is the report's one-line header (for steps
    that have no rows to show), `shown` the number of rows in the extract, `flag` the words of
    the flag when most rows fail with no level to mark it."""
    from great_tables import html, loc, style

    data, labels = _data(extract)
    table = make_gt(data, f"chatgate_step_{step.i}")
    table = table.tab_header(title=f"Report for Validation Step {step.i}", subtitle=html(_subtitle(step, header, shown, flag)))
    table = table.opt_align_table_header(align="left").tab_options(table_font_size="12px")
    table = table.tab_style(style.text(size="20px", weight="bold", color="#444444"), loc.title())
    if extract is None or not data.num_columns:
        return table
    names = data.column_names
    red = [n for n in names if n in extract.checked or n in (REASON, MESSAGE, REASONS)]
    table = table.fmt(lambda x: "" if x is None else str(x), columns=names)
    table = table.cols_label(cases={n: html(label) for n, label in labels.items()})
    table = table.tab_style(style.text(font=MONO, color="#333333", size="12px"), loc.column_labels())
    table = table.tab_style(style.text(font=MONO, size="11px"), loc.body())
    if extract.checked:
        wrapped = [n for n in names if n in extract.checked]
        table = table.tab_style(style.css("overflow-wrap:anywhere;white-space:pre-wrap"), loc.body(columns=wrapped))
    if "_row_num_" in names:
        table = table.tab_style(style.text(color="#888888"), loc.body(columns="_row_num_"))
    if red and data.num_rows:
        table = table.tab_style(
            [style.text(color=FAILURE_RED), style.fill(color=FAILURE_FILL)], loc.body(columns=red)
        )
    return table


def _data(extract: Extract | None) -> tuple[pa.Table, dict[str, str]]:
    """The cells as escaped HTML strings, one string column each, and each column's label (name, type)."""
    import pyarrow as pa

    if extract is None:
        return pa.table({}), {}
    names = extract.table.column_names
    messages = extract.table.column(MESSAGE).to_pylist() if MESSAGE in names else [None] * len(extract.cells)
    columns: dict[str, list[str]] = {n: [] for n in names}
    for r, row in enumerate(extract.cells):
        for k, name in enumerate(names):
            text = row[k]
            if name in extract.checked:
                text = message_window(extract.table.column(name)[r].as_py(), messages[r], CELL_CHARS)
            columns[name].append(_esc(text))
    labels = {n: _label(n, str(extract.table.schema.field(n).type)) for n in names}
    return pa.table(columns, schema=pa.schema([(n, pa.string()) for n in names])), labels


def _label(name: str, kind: str) -> str:
    """pointblank's column label: the name over its type, in small italics."""
    return f'<div>{_esc(name)}</div><div style="font-size:10px;color:#888"><em>{_esc(kind)}</em></div>'


def _line(inner: str, pad: bool = True) -> str:
    return f'<div style="padding-top:7px">{inner}</div>' if pad else f"<div>{inner}</div>"


def _subtitle(step: Step, header: str, shown: int, flag: str | None) -> str:
    """pointblank's lines under the title: the assertion, the failures, the extract; a flag when most rows fail."""
    if step.eval_error or not step.evaluated or step.failed is None:
        return _line(_esc(header.partition(f"Step {step.i}")[2].lstrip(": ")))
    mark = f'<span style="color:{PASS_GREEN if step.failed == 0 else FAILURE_RED}">{"✓" if step.failed == 0 else "✗"}</span>'
    assertion = _line(
        f'{mark} ASSERTION <span style="border:thin solid lightblue;padding:0 2px">'
        f'<code style="color:#303030;font-family:{MONO};font-size:smaller">{_esc(step.assertion())}</code></span>'
    )
    if step.table_check is not None:
        problems = header.partition("`: ")[2]
        return assertion + (_line(_esc(problems)) if problems else "")
    counts = _line(
        f"<strong>{step.failed:,}</strong> / <strong>{step.units:,}</strong> "
        f"TEST UNIT FAILURES IN COLUMN <strong>{step.column_number}</strong>"
    )
    which = (
        f"ALL <strong>{step.failed:,}</strong>"
        if shown >= step.failed
        else f"FIRST <strong>{shown:,}</strong> OF <strong>{step.failed:,}</strong>"
    )
    extract = _line(
        f'EXTRACT OF {which} ROWS WITH <span style="color:{FAILURE_RED}">TEST UNIT FAILURES IN RED</span>:', pad=False
    )
    return assertion + counts + extract + _flag(flag)


def _flag(flag: str | None) -> str:
    if not flag:
        return ""
    return (
        f'<div class="chatgate-flag" style="padding-top:7px;font-weight:bold;color:{FLAG_COLOR}">'
        f"{_esc(flag)}</div>"
    )
