"""What the job needs of an engine beyond judging: read the source, shape and write the outputs.

One subclass per engine (job/duckdb.py, job/spark.py); the run itself (job/runner.py)
never asks which engine it drives.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

import pyarrow as pa

from ..engines.base import Engine


class JobBackend(ABC):
    engine: Engine

    @abstractmethod
    def read_source(self, source: str) -> Any:
        """The source table, lazily where the engine is lazy."""

    @abstractmethod
    def source_version(self, source: str) -> int | None:
        """The Delta version read, or None for a source without versions."""

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
    def valid_rows(self, annotated: Any, reason_columns: list[str], source_columns: list[str]) -> Any:
        """The rows whose every reason is null, with the source columns only."""

    @abstractmethod
    def union(self, tables: list[Any]) -> Any:
        """The rows of `tables` (same columns), one after the other."""

    @abstractmethod
    def table_version(self, target: str) -> int | None:
        """The current version of an output table, or None when it doesn't exist yet."""

    @abstractmethod
    def replace_run(self, table: Any, target: str, run_id_column: str, run_id: str) -> int:
        """Atomically replace the rows of `run_id` in `target` with `table`; the rows written."""

    @abstractmethod
    def overwrite(self, table: Any, target: str) -> int:
        """Atomically replace all of `target` with `table`; the rows written."""

    @abstractmethod
    def write_arrow(self, rows: pa.Table, target: str, run_id_column: str, run_id: str) -> None:
        """`replace_run` for a small table built on the driver (the summary)."""

    @abstractmethod
    def restore(self, target: str, version: int | None) -> None:
        """Undo this run's writes to `target`: back to `version`, or emptied if it was new."""
