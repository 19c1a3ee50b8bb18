"""What an engine needs beyond judging to run the job: read the source, write the outputs.

The DuckDB engine (engines/ibis/duckdb.py) and the Spark engine (engines/spark)
are lakehouse engines; the run itself (job/runner.py) never asks which one it
drives.

Every write of a run touches the rows of its own run id and nothing else, so runs
with different ids can share output tables, and a failed run can take its rows
back without undoing anyone else's commits.
"""

from __future__ import annotations

import json
import os
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._version import __version__
from ..errors import ChatgateError, ConfigError, OutputError
from .base import Engine


class LakehouseEngine(Engine):
    """An engine that reads Delta (or Parquet) sources and writes Delta outputs."""

    @abstractmethod
    def open_source(self, source: str, version: int | None) -> tuple[Any, int | None]:
        """The source table at one snapshot (`version`, else the latest), and the Delta version read.

        Every later read of the run goes through the returned table, so rows that
        another process appends meanwhile are never half-seen. The version is None
        for a source without versions (Parquet).
        """

    @contextmanager
    def reused(self, table: Any, *, small: bool = False) -> Iterator[Any]:
        """`table`, to be read several times in the block (each output of a run reads it).

        Engines whose tables are lazy plans over the source keep the rows for the
        block, so the source is read once more, not once per read. `small`: the
        table holds a fraction of the source's rows (its failing rows), which an engine
        that rereads its source rather than keep a copy of it keeps too.
        """
        yield table

    @abstractmethod
    def where_any(self, table: Any, columns: list[str]) -> Any:
        """The rows of `table` where any of `columns` isn't null."""

    @abstractmethod
    def list_item_counts(self, table: Any, column: str) -> tuple[int, dict[str, int]]:
        """The rows whose list `column` isn't null, and how many of them hold each item."""

    @abstractmethod
    def with_arrow_columns(
        self, table: Any, inputs: list[str], added: pa.Schema, compute: Callable[[pa.RecordBatch], list[pa.Array]]
    ) -> Any:
        """`table` plus the columns of `added`: `compute` of each Arrow batch of the `inputs`
        columns gives them (one array per added column, one value per row). It runs in
        Python where the rows are, never on the driver."""

    @abstractmethod
    def project(
        self, table: Any, columns: list[str], renamed: dict[str, str], constants: dict[str, pa.Scalar]
    ) -> Any:
        """`columns` of `table`, then each `renamed` column under its new name, then `constants`."""

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

    def explain(self, error: BaseException) -> ChatgateError | None:
        """A one-line error for a failure this engine recognises (out of memory, a full disk, a
        corrupt Delta log), naming the cause and the setting to change; None for any other.

        The run raises it in place of `error` (chained to it, for --debug), so no engine
        frame, panic or socket error reaches the user as the reason a run failed.
        """
        return None


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
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(
                    f"can't write a Delta table at {target!r}: this user may not write in {str(parent)!r}; "
                    "choose another path or change the folder's permissions"
                )
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
