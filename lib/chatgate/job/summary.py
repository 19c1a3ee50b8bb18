"""The one-screen summary printed at the end of a run."""

from __future__ import annotations

from ..pipeline import TOKEN_STATS
from .runner import EXIT_CRITICAL, EXIT_ERROR, RunResult

TOP_REASONS = 3
STATUS_TEXT = {
    0: "no step reached its error level",
    EXIT_ERROR: "a step reached its error level",
    EXIT_CRITICAL: "a step reached its critical level",
}


def format_summary(result: RunResult) -> str:
    """Per step: units, failed, the top reasons, the levels reached; then the outputs and status."""
    c = result.config
    version = "" if result.source_version is None else f" (Delta version {result.source_version})"
    seconds = (result.finished_at - result.started_at).total_seconds()
    lines = [
        f"chatgate run {c.run_id} · engine {c.engine} · {seconds:.1f} s",
        f"source: {c.source}{version}",
        "",
    ]
    lines += _steps_table(result)
    for s in result.steps:
        lines += [f"step {s.step}: {detail}" for detail in s.parameters.get("problems", {}).values()]
        stats = s.judged.extra.get(TOKEN_STATS)
        if stats is not None:
            lines += [f"step {s.step}: {line}" for line in stats.lines()]
    lines.append("")
    lines += _outputs(result)
    status = result.exit_status
    lines.append(f"status: {status} ({STATUS_TEXT[status]})")
    lines += result.hints
    return "\n".join(lines)


def _outputs(result: RunResult) -> list[str]:
    c = result.config
    lines = [f"quarantine: {c.outputs.quarantine} ({_rows(result.quarantined)} of this run)"]
    lines.append(f"summary:    {c.outputs.summary} ({_rows(len(result.steps))} of this run)")
    if c.outputs.fixed:
        lines.append(f"fixed:      {c.outputs.fixed} ({_rows(result.fixed)} of this run, {_fixes(result)})")
    if c.outputs.valid:
        included = ", the fixed ones included" if c.valid_includes_fixed else ""
        lines.append(f"valid:      {c.outputs.valid} ({_rows(result.valid)}{included})")
    return lines


def _steps_table(result: RunResult) -> list[str]:
    """One line per step under a header, in columns."""
    header = ("step", "column", "units", "failed", "fraction", "distinct", "levels", "top reasons")
    rows = [
        (
            str(s.step),
            s.column,
            f"{s.judged.units:,}",
            f"{s.judged.failed:,}",
            f"{(s.judged.failed / s.judged.units if s.judged.units else 0):.4f}",
            "-" if s.judged.distinct_values is None else f"{s.judged.distinct_values:,}",
            ",".join(s.levels) or "-",
            _top(s.judged.reasons),
        )
        for s in result.steps
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    return lines + ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _rows(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n:,} row" if n == 1 else f"{n:,} rows"


def _top(reasons: dict[str, int]) -> str:
    shown = [f"{reason} {count:,}" for reason, count in list(reasons.items())[:TOP_REASONS]]
    more = len(reasons) - TOP_REASONS
    return ", ".join(shown) + (f", +{more} more" if more > 0 else "") if shown else "-"


def _fixes(result: RunResult) -> str:
    """How many fixed rows each repair changed, over every step."""
    total: dict[str, int] = {}
    for step in result.steps:
        for name, count in (step.fixes or {}).items():
            total[name] = total.get(name, 0) + count
    return ", ".join(f"{name} {count:,}" for name, count in sorted(total.items())) or "no repair applied"


def format_stream_summary(batches: list[RunResult], status: int) -> str:
    """One line per micro-batch a stream checked, then the stream's status (the worst batch's)."""
    if not batches:
        return "chatgate stream: no new rows since the checkpoint; nothing checked\nstatus: 0 (nothing to check)"
    lines = []
    for batch in batches:
        units = batch.steps[0].judged.units if batch.steps else 0
        lines.append(
            f"run {batch.config.run_id}: {units:,} rows checked, {batch.quarantined:,} quarantined, status {batch.exit_status}"
        )
    rows = sum(b.steps[0].judged.units for b in batches if b.steps)
    lines.append(f"chatgate stream: {len(batches)} micro-batches, {rows:,} rows checked")
    lines.append(f"status: {status} ({STATUS_TEXT.get(status, 'failed')})")
    return "\n".join(lines)
