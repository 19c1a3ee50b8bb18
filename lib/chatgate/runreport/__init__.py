"""The run report: one run of the job, from its summary and quarantine tables, for people and machines.

The lines marked to skip need the summary and quarantine tables a run of the job wrote
(Delta tables on disk), which the doctests don't have; tests/test_run_report.py runs them:

>>> from pathlib import Path
>>> from chatgate.runreport import load_report, render_page, report_json
>>> report = load_report("lake/chat_summary", "lake/chat_quarantine")  # doctest: +SKIP
>>> Path("report.html").write_text(render_page(report))  # doctest: +SKIP

Modules: `load` reads the tables (deltalake and PyArrow, no Spark), `examples`
picks quarantined rows, `window` cuts a long conversation around its message at fault,
`page` draws the HTML page, `jsonform` the JSON form, `chart` the history chart (a color
per reason code), `tabular` the step tables (also `Validate.get_tabular_report()`), with
their flag for a step that fails most rows with no level to mark it, `steptable`
`Validate.get_step_report()`'s table, `look` what the tables share, `command` the
`chatgate report` command.
"""

from __future__ import annotations

from .jsonform import report_dict, report_json
from .load import load_report
from .model import RunReport
from .page import render_page
from .tables import ReportError

__all__ = ["ReportError", "RunReport", "load_report", "render_page", "report_dict", "report_json"]
