"""The run report for machines: the same figures and examples as the page, as JSON.

The layout is versioned (`"version"`): keys may be added within a version, never
renamed or removed. Times are ISO 8601 in UTC.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

from .model import RunReport

REPORT_KIND = "chatgate.run_report"
VERSION = 1


def report_dict(report: RunReport) -> dict[str, Any]:
    """The report as JSON-ready values."""
    run = report.run
    return {
        "report": REPORT_KIND,
        "version": VERSION,
        "summary_table": report.summary_path,
        "quarantine_table": report.quarantine_path,
        "run": {
            "run_id": run.run_id,
            "started_at": _time(run.started_at),
            "finished_at": _time(run.finished_at),
            "seconds": run.seconds,
            "engine": run.engine,
            "source": run.source,
            "source_version": run.source_version,
            "levels": report.levels,
        },
        # most_rows_fail: the page's flag (most rows fail and the step reached no level).
        "steps": [{**asdict(step), "most_rows_fail": step.flagged} for step in report.steps],
        "history": [
            {"run_id": p.run_id, "started_at": _time(p.started_at), "failed": p.failed, "reasons": p.reasons}
            for p in report.history
        ],
        "examples": [
            {
                "step": e.step,
                "column": e.column,
                "reason": e.reason,
                "count": e.count,
                "rows": [asdict(row) for row in e.examples],
            }
            for e in report.examples
        ],
        "has_message_index": report.has_message_index,
        "examples_per_reason": report.examples_per_reason,
        "example_chars": report.example_chars,
    }


def report_json(report: RunReport) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False)


def _time(value: datetime) -> str:
    return value.isoformat()
