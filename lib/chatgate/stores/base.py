"""What a store does: table storage for one table library, apart from the engine that computes.

A store reads and writes tables in the engine's own kind (an Ibis table for the
DuckDB engine, a DataFrame for Spark), but knows nothing of rules or checks. Each
method's docstring says what every store must promise.

Every write of a run touches the rows of its own run id and nothing else, so runs
with different ids can share output tables, and a failed run can take its rows
back without undoing anyone else's commits. Adding a store for another table
format is one module with a `TableStore` subclass, and one line in
`job/registry.py`'s BACKENDS.
"""

from __future__ import annotations

import json
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._version import __version__
from ..errors import ChatgateError, ConfigError, OutputError


@dataclass(frozen=True)
class ChangedRows:
    """The rows the commits in a range inserted, or why they can't be read apart from the rest."""

    table: Any = None
    """An engine table of the inserted rows (the source's columns), None when `why_not` is set."""
    why_not: str = ""
    """One line: which commit, or what of the table, makes a full read necessary."""


class TableStore(ABC):
    """One table library's reads and writes, for the job's runs."""

    name: str
    """The table library, as the CLI's help and the run's log name it."""

    @abstractmethod
    def open_source(self, source: str, version: int | None) -> tuple[Any, int | None]:
        """The source table at one snapshot (`version`, else the latest), and the Delta version read.

        Every later read of the run goes through the returned table, so rows that
        another process appends meanwhile are never half-seen. The version is None
        for a source without versions (Parquet).
        """


    def open_stream(self, source: str) -> Any:
        """The source as a stream of the rows each new commit adds (Structured Streaming), read
        from where its checkpoint left off when the engine starts it. Only stores whose engine
        streams have it (their backend says `streams`)."""
        raise ConfigError(f"the {self.name} store reads no stream of {source!r}")

    @abstractmethod
    def target_schema(self, target: str) -> pa.Schema | None:
        """The columns and their Arrow types of the output Delta table at `target`, None when
        there's none yet.

        Raises OutputError, naming the target, when something that isn't a Delta
        table is in the way (a file, a folder of other files, a bad table name).
        """

    def writes_into(self, have: pa.DataType, want: pa.DataType) -> bool:
        """Whether a column of type `want` is written into a table's column of type `have`: within a
        type family (see `type_kind`), as the deltalake writer casts."""
        kinds = type_kind(have), type_kind(want)
        return None in kinds or kinds[0] == kinds[1]

    def target_columns(self, target: str) -> list[str] | None:
        """The columns of the output Delta table at `target`, None when there's none yet."""
        schema = self.target_schema(target)
        return None if schema is None else list(schema.names)

    @abstractmethod
    def replace_run(self, table: Any, target: str, run_id_column: str, run_id: str) -> int:
        """In one commit, replace the rows of `run_id` in `target` with `table`; the rows written."""

    @abstractmethod
    def write_arrow(self, rows: pa.Table, target: str, run_id_column: str, run_id: str) -> None:
        """`replace_run` for a small table built on the driver (the summary)."""

    @abstractmethod
    def delete_run(self, target: str, run_id_column: str, run_id: str) -> None:
        """Delete the rows of `run_id` from `target` in one commit (nothing when the table doesn't exist)."""

    @abstractmethod
    def is_conflict(self, error: BaseException) -> bool:
        """Did a write lose a race with another writer's commit (worth retrying)?"""

    def explain(self, error: BaseException) -> ChatgateError | None:
        """A one-line error for a storage failure this store recognises (a corrupt log, the table
        library's own error), naming the table and what to do; None for any other."""
        return None

    @abstractmethod
    def read_columns(self, target: str, columns: Sequence[str]) -> pa.Table | None:
        """The `columns` of the small table at `target` (a summary), as Arrow; None when there is
        no table there or it lacks one of them. Never for a source: it reads every row to the caller."""

    def location(self, target: str) -> str | None:
        """Where the catalog table named `target` keeps its files, when the store has a catalog
        and the table exists (None otherwise: a path is its own location)."""
        return None

    @abstractmethod
    def changes(self, source: str, since: int, until: int) -> ChangedRows:
        """The rows that the commits after version `since`, up to and including `until`, inserted.

        Every store must promise:
        - rows from the change data feed where the table has it (inserts and the post-images
          of updates), else from the files that commits added with `dataChange=true`;
        - a commit that only rearranged files (`dataChange=false`, a compaction) adds no rows,
          so no row is read twice;
        - where a commit deleted or rewrote rows and there is no change data feed, or a file
          or commit needed is gone, no table and one line naming the commit or file and why;
        - nothing after `until` is read, so rows committed meanwhile wait for the next run.
        """


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

    `write` tells two commits of the same run apart, so a store can find its own
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


def type_kind(kind: pa.DataType) -> str | None:
    """The family of an Arrow type that a Delta write keeps apart (None: a null type, which fits any).

    A write casts within a family (int32 into int64, string into large_string) but not across
    (a string into a long): a table whose column is of another family fails at the write.
    """
    families = (
        (pa.types.is_null, None),
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_integer, "number"),
        (pa.types.is_floating, "number"),
        (pa.types.is_decimal, "number"),
        (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), "text"),
        (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t), "binary"),
        (pa.types.is_timestamp, "timestamp"),
        (pa.types.is_date, "date"),
        (lambda t: pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t), "list"),
        (pa.types.is_struct, "struct"),
        (pa.types.is_map, "map"),
    )
    for test, family in families:
        if test(kind):
            return family
    return str(kind)


def type_mismatch(name: str, target: str, column: str, have: pa.DataType, want: pa.DataType) -> OutputError:
    """The one-line error for an output table whose column holds values of another type than this run's."""
    return OutputError(
        f"the {name} table {target!r} has {column!r} as {have}, but this run writes it as {want} "
        f"(its source's column changed type?); write to a new path with --{name} PATH, or move the old table aside"
    )
