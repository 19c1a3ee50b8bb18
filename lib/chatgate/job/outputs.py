"""The output tables' contract: reserved column names and the summary schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from ..engines.base import Judged
from ..names import (
    CHECKED_AT,
    COLUMN,
    FIXES,
    MESSAGE,
    REASON,
    REASON_BEFORE,
    REASONS,
    RUN_ID,
    STEP,
    STEP_REASON_PREFIX,
)
from ..pipeline import TOKEN_STATS
from ..rules.check.token_stats import SUMMARY_FIELDS, TokenStats

__all__ = ["CHECKED_AT", "COLUMN", "REASON", "RUN_ID", "STEP", "STEP_REASON_PREFIX"]

ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "quarantine": (REASON, MESSAGE, REASONS, STEP, COLUMN, RUN_ID, CHECKED_AT),
    "fixed": (REASON_BEFORE, FIXES, RUN_ID),
    "valid": (RUN_ID,),
}
"""What each row output adds after the source's columns, in order."""


def output_columns(output: str, source_columns: list[str]) -> list[str]:
    """The columns of a row output (quarantine, fixed, valid) of a source with `source_columns`."""
    return [*source_columns, *ADDED_COLUMNS[output]]

SUMMARY_RUN_ID = "run_id"
"""The summary's run id column: a run is complete once its summary rows exist."""


TOKENS_PREFIX = "tokens_"
"""The summary's token statistics columns (`token_stats=True`): `tokens_<figure>`, null without."""
TOKENS_HISTOGRAM = "tokens_histogram"
TOKEN_BIN = pa.struct([("min_tokens", pa.int64()), ("max_tokens", pa.int64()), ("conversations", pa.int64())])
"""One bin of `tokens_histogram`: the conversations of `min_tokens` to `max_tokens` tokens (inclusive)."""

TOKEN_COLUMNS = (*(f"{TOKENS_PREFIX}{name}" for name in SUMMARY_FIELDS), TOKENS_HISTOGRAM)
"""The token statistics columns, added after the others: a summary table written before may lack them."""

SUMMARY_SCHEMA = pa.schema(
    [
        (SUMMARY_RUN_ID, pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("finished_at", pa.timestamp("us", tz="UTC")),
        ("engine", pa.string()),
        ("source", pa.string()),
        ("source_version", pa.int64()),
        ("source_version_from", pa.int64()),
        ("scope", pa.string()),
        ("rows_read", pa.int64()),
        ("fingerprint", pa.string()),
        ("step", pa.int32()),
        ("column", pa.string()),
        ("assertion", pa.string()),
        ("units", pa.int64()),
        ("passed", pa.int64()),
        ("failed", pa.int64()),
        ("f_failed", pa.float64()),
        ("distinct_values", pa.int64()),
        ("deduplicated", pa.bool_()),
        ("reasons", pa.map_(pa.string(), pa.int64())),
        ("fixed", pa.int64()),
        ("fixes", pa.map_(pa.string(), pa.int64())),
        ("levels", pa.list_(pa.string())),
        ("parameters", pa.string()),
        *[(name, pa.int64()) for name in TOKEN_COLUMNS[:-1]],
        (TOKENS_HISTOGRAM, pa.list_(TOKEN_BIN)),
    ]
)


def token_columns(stats: TokenStats | None) -> dict[str, Any]:
    """A summary row's token statistics columns: null without `token_stats=True`."""
    if stats is None:
        return {}
    figures = {f"{TOKENS_PREFIX}{name}": value for name, value in stats.as_dict().items()}
    bins = [dict(zip(TOKEN_BIN.names, b)) for b in stats.bins()]
    return {**figures, TOKENS_HISTOGRAM: bins}


@dataclass(frozen=True)
class ReadScope:
    """What a run read: the whole snapshot, or the rows inserted after `since` (exclusive)."""

    scope: str = "full"
    since: int | None = None
    rows: int | None = None
    fingerprint: str | None = None
    """The check's fingerprint (see job/since.py), which `--since last` looks for."""


@dataclass
class StepResult:
    """What one step of a run found, for the summary table and the printed summary."""

    step: int
    column: str
    assertion: str
    judged: Judged
    levels: list[str]
    parameters: dict[str, Any]
    fixed: int | None = None
    """With --fix: the failing rows of the step that the repairs made pass (null without)."""
    fixes: dict[str, int] | None = None
    """With --fix: how many of those rows each repair changed."""


def summary_table(
    results: list[StepResult],
    *,
    run_id: str,
    started_at: datetime,
    finished_at: datetime,
    engine: str,
    source: str,
    source_version: int | None,
    read: ReadScope | None = None,
) -> pa.Table:
    """One row per step of the run, in SUMMARY_SCHEMA."""
    read = read or ReadScope()
    rows = [
        {
            SUMMARY_RUN_ID: run_id,
            "started_at": started_at,
            "finished_at": finished_at,
            "engine": engine,
            "source": source,
            "source_version": source_version,
            "source_version_from": read.since,
            "scope": read.scope,
            "rows_read": read.rows,
            "fingerprint": read.fingerprint,
            "step": r.step,
            "column": r.column,
            "assertion": r.assertion,
            "units": r.judged.units,
            "passed": r.judged.passed,
            "failed": r.judged.failed,
            "f_failed": r.judged.failed / r.judged.units if r.judged.units else 0.0,
            "distinct_values": r.judged.distinct_values,
            "deduplicated": r.judged.deduplicated,
            "reasons": list(r.judged.reasons.items()),
            "fixed": r.fixed,
            "fixes": None if r.fixes is None else sorted(r.fixes.items()),
            "levels": r.levels,
            "parameters": json.dumps(r.parameters, sort_keys=True),
            **token_columns(r.judged.extra.get(TOKEN_STATS)),
        }
        for r in results
    ]
    return pa.Table.from_pylist(rows, schema=SUMMARY_SCHEMA)
