"""Incremental runs: which rows a run reads when it checks only what changed (`--since`).

A run records, in each of its summary rows, the source version it read and a
fingerprint of its check (the source's location, the steps with their columns and
options, turns and repairs). `--since last` starts after the source version of the
last complete run with the same fingerprint in the same summary table; `--since N`
starts after version N. Where no such run exists, or the source isn't a Delta table,
the run reads the whole table and says why in one line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

SINCE_LAST = "last"

LAST_RUN_COLUMNS = ("run_id", "fingerprint", "source_version")
"""What `--since last` reads of the summary table."""

Scope = Literal["full", "changes"]


@dataclass(frozen=True)
class ReadPlan:
    """What a run reads: the whole snapshot, or the rows inserted after `since` up to the version pinned."""

    scope: Scope
    since: int | None = None
    """Exclusive: the rows the commits after this version inserted."""
    why: str = ""
    """One line for the log: why the run reads what it reads."""


def check_fingerprint(source_location: str, checks: Sequence[dict[str, Any]], extra: dict[str, Any]) -> str:
    """A short digest of what makes two runs the same check: where the source is, every step's
    columns and options, and the options that change the outputs' rows (`extra`)."""
    text = json.dumps({"source": source_location, "steps": list(checks), **extra}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def last_checked_version(summary: pa.Table | None, fingerprint: str, run_id: str) -> int | None:
    """The source version the last complete run with `fingerprint` read (from its summary rows).

    The run's own earlier attempt (the same `run_id`) doesn't count: a retried task reads what
    its first attempt read, and replaces its rows.
    """
    if summary is None or summary.num_rows == 0:
        return None
    same = summary.filter(
        pc.and_(pc.equal(summary["fingerprint"], fingerprint), pc.not_equal(summary["run_id"], run_id))
    )
    versions = [v for v in same["source_version"].to_pylist() if v is not None]
    return max(versions) if versions else None


def read_plan(since: str | int | None, *, pinned: int | None, last: int | None) -> ReadPlan:
    """The rows a run with `--since` reads, given the version it pinned and the last complete run's."""
    if since is None:
        return ReadPlan("full")
    if pinned is None:
        return ReadPlan("full", why="the source isn't a Delta table, so it has no versions to compare: a full run")
    start = last if since == SINCE_LAST else int(since)
    if start is None:
        return ReadPlan("full", why="no earlier complete run of this check is in the summary table: a full run")
    if start > pinned:
        return ReadPlan(
            "full", why=f"the last run read version {start}, past the source's version {pinned} (was it replaced?): a full run"
        )
    if start == pinned:
        return ReadPlan("changes", since=start, why=f"nothing was committed since version {start}: no rows to read")
    return ReadPlan("changes", since=start, why=f"reading the rows inserted after version {start}, up to version {pinned}")
