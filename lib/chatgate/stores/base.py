"""What a store does: table storage for one table library, apart from the engine that computes.

A store reads and writes tables in the engine's own kind (an Ibis table for the
DuckDB engine, a DataFrame for Spark), but knows nothing of rules or checks. Each
method's docstring says what every store must promise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa


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
