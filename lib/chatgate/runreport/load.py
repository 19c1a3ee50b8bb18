"""Reading a run's report from the job's Delta outputs, with deltalake and PyArrow only.

Either engine's outputs read the same way: the Spark job writes the same Delta
format and the same columns, and `delta_source` reads what Spark may add
(column mapping, deletion vectors). No Spark session is needed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from ..job.outputs import SUMMARY_RUN_ID, SUMMARY_SCHEMA, TOKEN_COLUMNS, TOKENS_HISTOGRAM, TOKENS_PREFIX
from .examples import find_examples
from .model import HistoryPoint, RunInfo, RunReport, StepSummary, StepTokens
from .tables import ReportError, open_delta, require_columns

DEFAULT_RUNS = 20
"""Runs in the history chart: the chosen one and those before it."""

DEFAULT_EXAMPLES = 3
DEFAULT_CHARS = 300
LISTED_RUNS = 5
"""Run ids an unknown --run-id error lists, latest first."""


def load_report(
    summary: str,
    quarantine: str,
    run_id: str | None = None,
    *,
    runs: int = DEFAULT_RUNS,
    examples: int = DEFAULT_EXAMPLES,
    chars: int = DEFAULT_CHARS,
) -> RunReport:
    """The report of `run_id` (default: the latest run of the summary table).

    `runs` runs (the chosen one and those before it) make the history; `examples`
    quarantined rows per step and reason are shown, each value cut at `chars`.
    """
    for name, value, least in (("runs", runs, 1), ("examples", examples, 0), ("chars", chars, 20)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name}= must be a whole number, {least} or more, not {value!r}")
    by_run = _runs(_summary_rows(summary), summary)
    chosen = _choose(by_run, run_id, summary)
    order = list(by_run)
    history_ids = order[max(0, order.index(chosen) + 1 - runs) : order.index(chosen) + 1]
    rows = by_run[chosen]
    steps = [_step(row) for row in sorted(rows, key=lambda r: r["step"])]
    source = open_delta(quarantine, "quarantine")
    found, has_message = find_examples(
        source, chosen, steps, per_reason=examples, chars=chars, table=f"the table at {quarantine!r}"
    )
    return RunReport(
        summary_path=summary,
        quarantine_path=quarantine,
        run=_run_info(rows[0]),
        steps=steps,
        history=[_history_point(run, by_run[run]) for run in history_ids],
        examples=found,
        has_message_index=has_message,
        examples_per_reason=examples,
        example_chars=chars,
    )


def _summary_rows(path: str) -> list[dict[str, Any]]:
    source = open_delta(path, "summary")
    required = tuple(name for name in SUMMARY_SCHEMA.names if name not in TOKEN_COLUMNS)
    require_columns(source.schema.names, required, f"the table at {path!r}", "summary")
    columns = [*required, *(name for name in TOKEN_COLUMNS if name in source.schema.names)]
    # One row per run and step: small enough to read whole, even after years of runs.
    return list(source.to_table(columns=columns).to_pylist())


def _runs(rows: list[dict[str, Any]], path: str) -> dict[str, list[dict[str, Any]]]:
    """Summary rows by run id, oldest run first (by start, then finish, then id)."""
    if not rows:
        raise ReportError(f"the summary table at {path!r} holds no run yet")
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row[SUMMARY_RUN_ID]].append(row)
    order = sorted(
        grouped, key=lambda run: (grouped[run][0]["started_at"], grouped[run][0]["finished_at"], run)
    )
    return {run: grouped[run] for run in order}


def _choose(by_run: dict[str, list[dict[str, Any]]], run_id: str | None, path: str) -> str:
    latest = list(by_run)[-1]
    if run_id is None:
        return latest
    if run_id not in by_run:
        last = list(reversed(by_run))[:LISTED_RUNS]
        raise ReportError(
            f"run {run_id!r} isn't in the summary table at {path!r}; its last runs: {', '.join(last)}"
        )
    return run_id


def _run_info(row: dict[str, Any]) -> RunInfo:
    return RunInfo(
        run_id=row[SUMMARY_RUN_ID],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        engine=row["engine"],
        source=row["source"],
        source_version=row["source_version"],
    )


def _step(row: dict[str, Any]) -> StepSummary:
    return StepSummary(
        step=int(row["step"]),
        column=row["column"],
        assertion=row["assertion"],
        units=int(row["units"]),
        passed=int(row["passed"]),
        failed=int(row["failed"]),
        f_failed=float(row["f_failed"]),
        distinct_values=row["distinct_values"],
        deduplicated=row["deduplicated"],
        reasons=_reasons(row["reasons"]),
        levels=list(row["levels"] or []),
        parameters=_parameters(row["parameters"]),
        tokens=_tokens(row),
    )


def _tokens(row: dict[str, Any]) -> StepTokens | None:
    """The step's token statistics, when it counted them (`token_stats=True`)."""
    figures = {name[len(TOKENS_PREFIX):]: row.get(name) for name in TOKEN_COLUMNS if name != TOKENS_HISTOGRAM}
    if figures.get("conversations") is None:
        return None
    bins = [(b["min_tokens"], b["max_tokens"], b["conversations"]) for b in row.get(TOKENS_HISTOGRAM) or []]
    return StepTokens(figures=figures, bins=bins)


def _reasons(value: Any) -> dict[str, int]:
    """A map column as Arrow hands it (a list of pairs), most frequent first as the job wrote it."""
    pairs = value.items() if isinstance(value, dict) else (value or [])
    return {str(reason): int(count) for reason, count in pairs}


def _parameters(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:  # written by hand or by another tool: keep the text rather than fail the report
        return {"text": text}
    return value if isinstance(value, dict) else {"value": value}


def _history_point(run_id: str, rows: list[dict[str, Any]]) -> HistoryPoint:
    reasons: dict[str, int] = defaultdict(int)
    for row in rows:
        for reason, count in _reasons(row["reasons"]).items():
            reasons[reason] += count
    return HistoryPoint(
        run_id=run_id,
        started_at=rows[0]["started_at"],
        failed=sum(int(row["failed"]) for row in rows),
        reasons=dict(reasons),
    )
