"""Which rows the commits after a version inserted, read from a Delta table's log.

Without the change data feed, the rows a range of commits inserted are the rows of
the files those commits added with `dataChange=true`, provided no commit in the range
deleted or rewrote rows. A compaction (OPTIMIZE, Z-ORDER, auto-compaction) removes
and adds files with `dataChange=false`: it adds no rows, and its files are skipped. A
commit that removes a file with `dataChange=true` (DELETE, UPDATE, MERGE, an
overwrite) or attaches a deletion vector has changed rows that are no longer all
where they were: the range can't be read as appends, and `appended_files` says which
commit and why.

The log is parsed here, once, for every store: a store only fetches the commits'
JSON lines (each store through its own file system).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

COLUMN_MAPPING_KEY = "delta.columnMapping.mode"


@dataclass(frozen=True)
class AddedFile:
    """A data file a commit added, with the partition values its rows take."""

    path: str
    """Relative to the table's root (decoded), or an absolute URI."""
    version: int
    partition_values: Mapping[str, str | None] = field(default_factory=dict)
    rows: int | None = None
    """The row count from the file's statistics, when the writer recorded them."""


@dataclass(frozen=True)
class Appends:
    """The files a range of commits appended, or why the range isn't appends only."""

    files: tuple[AddedFile, ...] = ()
    not_appends: str | None = None
    """Set when a commit in the range deleted or rewrote rows: which commit, and what it did."""

    @property
    def rows(self) -> int | None:
        counts = [f.rows for f in self.files]
        return None if any(n is None for n in counts) else sum(n for n in counts if n is not None)


def commit_actions(text: str) -> list[dict[str, Any]]:
    """The actions of one commit file (JSON lines)."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def appended_files(commits: Iterable[tuple[int, list[dict[str, Any]]]]) -> Appends:
    """The files the `(version, actions)` commits appended, in version order; or, at the first commit
    that deleted or rewrote rows, why the range can't be read as appends."""
    files: list[AddedFile] = []
    for version, actions in sorted(commits, key=lambda commit: commit[0]):
        operation = _operation(actions)
        for action in actions:
            reason = _not_an_append(action, version, operation)
            if reason is not None:
                return Appends(not_appends=reason)
            add = action.get("add")
            if add is not None and add.get("dataChange", True):
                files.append(_added(add, version))
    return Appends(files=tuple(files))


def _operation(actions: list[dict[str, Any]]) -> str:
    info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    return str(info.get("operation") or "a commit")


def _not_an_append(action: dict[str, Any], version: int, operation: str) -> str | None:
    remove = action.get("remove")
    if remove is not None and remove.get("dataChange", True):
        return f"commit {version} ({operation}) deleted or rewrote rows"
    add = action.get("add")
    if add is not None and add.get("dataChange", True) and add.get("deletionVector"):
        return f"commit {version} ({operation}) deleted rows through a deletion vector"
    metadata = action.get("metaData")
    if metadata is not None:
        mode = str((metadata.get("configuration") or {}).get(COLUMN_MAPPING_KEY) or "none").lower()
        if mode != "none":
            return f"commit {version} ({operation}) set column mapping ({mode} mode), whose files need a full read"
    return None


def _added(add: dict[str, Any], version: int) -> AddedFile:
    path = str(add["path"])
    rows = None
    stats = add.get("stats")
    if stats:
        try:
            rows = int(json.loads(stats).get("numRecords"))
        except (TypeError, ValueError):
            rows = None
    return AddedFile(
        path=path if "://" in path else unquote(path),
        version=version,
        partition_values=dict(add.get("partitionValues") or {}),
        rows=rows,
    )
