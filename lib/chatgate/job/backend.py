"""What the job needs of an engine beyond judging: read the source, shape and write the outputs.

One subclass per engine (job/duckdb.py, job/spark.py); the run itself (job/runner.py)
never asks which engine it drives.

Every write of a run touches the rows of its own run id and nothing else, so runs
with different ids can share output tables, and a failed run can take its rows
back without undoing anyone else's commits.
"""

from __future__ import annotations

import json
import os
import uuid
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import __version__
from ..engines.base import Engine
from ..errors import ConfigError, OutputError


class JobBackend(ABC):
    engine: Engine

    @abstractmethod
    def open_source(self, source: str, version: int | None) -> tuple[Any, int | None]:
        """The source table at one snapshot (`version`, else the latest), and the Delta version read.

        Every later read of the run goes through the returned table, so rows that
        another process appends meanwhile are never half-seen. The version is None
        for a source without versions (Parquet).
        """

    @abstractmethod
    def quarantine_rows(
        self,
        annotated: Any,
        reason_column: str,
        source_columns: list[str],
        *,
        step: int,
        column: str,
        run_id: str,
        checked_at: datetime,
    ) -> Any:
        """The failing rows of one step: source columns, then the pb_*_ columns of outputs.py."""

    @abstractmethod
    def valid_rows(
        self, annotated: Any, reason_columns: list[str], source_columns: list[str], *, run_id: str
    ) -> Any:
        """The rows whose every reason is null: the source columns, then the run id column."""

    @abstractmethod
    def union(self, tables: list[Any]) -> Any:
        """The rows of `tables` (same columns), one after the other."""

    @abstractmethod
    def columns_of(self, table: Any) -> list[str]:
        """The column names of a table this backend built (known before it runs)."""

    @abstractmethod
    def target_columns(self, target: str) -> list[str] | None:
        """The columns of the output Delta table at `target`, None when there's none yet.

        Raises OutputError, naming the target, when something that isn't a Delta
        table is in the way (a file, a folder of other files, a bad table name).
        """

    @abstractmethod
    def replace_run(self, table: Any, target: str, run_id_column: str, run_id: str) -> int:
        """In one commit, replace the rows of `run_id` in `target` with `table`; the rows written."""

    @abstractmethod
    def write_arrow(self, rows: pa.Table, target: str, run_id_column: str, run_id: str) -> None:
        """`replace_run` for a small table built on the driver (the summary)."""

    @abstractmethod
    def delete_run(self, target: str, run_id_column: str, run_id: str) -> None:
        """Delete the rows of `run_id` from `target` (nothing when the table doesn't exist)."""

    @abstractmethod
    def is_conflict(self, error: BaseException) -> bool:
        """Did a write lose a race with another writer's commit (worth retrying)?"""


def pinned_version(source: str, latest: int | None, asked: int | None) -> int | None:
    """The Delta version a run reads: the one asked for, else the latest; checked against the table."""
    if asked is None:
        return latest
    if latest is None:
        raise ConfigError(f"source_version: {source!r} isn't a Delta table, so it has no versions to pin")
    if asked > latest:
        raise ConfigError(f"source_version: {asked} is past the latest version ({latest}) of {source!r}")
    return asked


def commit_metadata(run_id: str) -> dict[str, str]:
    """What each commit of a run records in the Delta log (DESCRIBE HISTORY shows it).

    `write` tells two commits of the same run apart, so a backend can find its own
    commit in the history even when other runs commit in between.
    """
    return {"chatgate_run_id": run_id, "chatgate_version": __version__, "write": uuid.uuid4().hex}


def commit_metadata_json(metadata: dict[str, str]) -> str:
    return json.dumps(metadata, sort_keys=True)


def is_local_path(target: str) -> bool:
    return "://" not in target or target.startswith("file://")


def local_target_state(target: str) -> str:
    """'absent' or 'delta' for a local output path; OutputError when something else is there."""
    path = Path(target.removeprefix("file://"))
    for parent in [path, *path.parents]:
        if parent.exists():
            if parent.is_file():
                where = "is a file" if parent == path else f"is under {str(parent)!r}, which is a file"
                raise OutputError(f"can't write a Delta table at {target!r}: it {where}; choose another path")
            break
    if not path.exists():
        return "absent"
    if (path / "_delta_log").is_dir():
        return "delta"
    if any(os.scandir(path)):
        raise OutputError(
            f"{target!r} holds files but no Delta table (no _delta_log); "
            "chatgate won't write into it: choose a new path, or move those files away"
        )
    return "absent"


def schema_mismatch(name: str, target: str, have: list[str], want: list[str]) -> OutputError:
    """The one-line error for an output table whose columns aren't this run's."""
    missing = [c for c in want if c.lower() not in {h.lower() for h in have}]
    extra = [c for c in have if c.lower() not in {w.lower() for w in want}]
    parts = ([f"lacks {missing}"] if missing else []) + ([f"has {extra} that this run doesn't write"] if extra else [])
    return OutputError(
        f"the {name} table {target!r} {' and '.join(parts)} (its source's columns changed?); "
        f"write to a new path with --{name} PATH, or move the old table aside"
    )
