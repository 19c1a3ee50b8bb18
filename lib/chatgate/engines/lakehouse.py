"""What an engine computes beyond judging to run the job: keep, filter, count, add and shape columns.

The DuckDB engine (engines/ibis/duckdb.py) and the Spark engine (engines/spark)
are lakehouse engines; the run itself (job/runner.py) never asks which one it
drives. Reading and writing tables is a store's work (stores/), not an engine's.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pyarrow as pa

from ..errors import ChatgateError
from ..progress import Progress
from .base import Engine


class LakehouseEngine(Engine):
    """An engine that computes on the tables a store reads (Delta, Parquet) and hands back to it to write."""

    @contextmanager
    def reused(self, table: Any, *, small: bool = False) -> Iterator[Any]:
        """`table`, to be read several times in the block (each output of a run reads it).

        Engines whose tables are lazy plans over the source keep the rows for the
        block, so the source is read once more, not once per read. `small`: the
        table holds a fraction of the source's rows (its failing rows), which an engine
        that rereads its source rather than keep a copy of it keeps too.
        """
        yield table

    def watched(self, label: str) -> AbstractContextManager[Any]:
        """Progress of the work the block runs on this engine (a write), named `label` (see
        `chatgate.progress`): how long it has run; an engine that counts its tasks says how many are done."""
        return Progress(label, counting=False)

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

    def run_stream(
        self, stream: Any, on_batch: Callable[[Any, int], None], checkpoint: str, trigger: str | None
    ) -> None:
        """Run `on_batch(rows, batch_id)` on each micro-batch of `stream`, keeping progress at
        `checkpoint`: with `trigger` None, every batch available now, then return; else one batch
        per interval ("30 seconds") until stopped. A replayed batch keeps its id."""
        raise NotImplementedError(f"the {self.name} engine runs no stream")

    def explain(self, error: BaseException) -> ChatgateError | None:
        """A one-line error for a failure this engine recognises (out of memory, a full disk
        where it spills), naming the cause and the setting to change; None for any other.

        The run raises it in place of `error` (chained to it, for --debug), so no engine
        frame, panic or socket error reaches the user as the reason a run failed.
        """
        return None
