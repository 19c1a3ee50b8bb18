"""Delta through the `deltalake` package, for the embedded engine (DuckDB behind Ibis)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..engines.parquet_files import parquet_view, quote_identifier, schema_refusal
from ..engines.tables import _without_views, delta_source, is_delta
from .base import ChangedRows, TableStore
from .changes import appended_files, commit_actions

CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
INSERTED = ("insert", "update_postimage")
"""The change data feed's rows that a table holds after the commit: new rows and updated ones."""


class DeltalakeStore(TableStore):
    """Delta tables read and written with deltalake, as Ibis tables on the DuckDB connection `con`."""

    name = "deltalake"

    def __init__(self, con: Any) -> None:
        self.con = con

    def read_columns(self, target: str, columns: Sequence[str]) -> pa.Table | None:
        if not is_delta(target):
            return None
        source = delta_source(target)
        if any(c not in source.schema.names for c in columns):
            return None
        return source.to_table(columns=list(columns))

    def changes(self, source: str, since: int, until: int) -> ChangedRows:
        from deltalake import DeltaTable

        snapshot = DeltaTable(source, version=until)
        schema = pa.schema([f.with_type(_without_views(f.type)) for f in pa.schema(snapshot.schema().to_arrow())])
        if since >= until:
            return ChangedRows(self.con.table(self._kept(schema.empty_table())))
        if str(snapshot.metadata().configuration.get(CHANGE_DATA_FEED, "")).lower() == "true":
            return ChangedRows(self._change_feed(snapshot, since, until, schema))
        return self._appended(source, snapshot, since, until, schema)

    def _change_feed(self, snapshot: Any, since: int, until: int, schema: pa.Schema) -> Any:
        feed = pa.RecordBatchReader.from_stream(snapshot.load_cdf(starting_version=since + 1, ending_version=until))
        inserted = pa.array(INSERTED)

        def rows() -> Iterator[pa.RecordBatch]:
            for batch in feed:
                kept = pc.is_in(batch.column("_change_type").cast(pa.string()), inserted)
                columns = [batch.column(f.name).cast(f.type) for f in schema]
                yield pa.RecordBatch.from_arrays(columns, schema=schema).filter(kept)

        return self.con.table(self._kept(pa.RecordBatchReader.from_batches(schema, rows())))

    def _appended(self, source: str, snapshot: Any, since: int, until: int, schema: pa.Schema) -> ChangedRows:
        partitions = list(snapshot.metadata().partition_columns)
        mapping = str(snapshot.metadata().configuration.get("delta.columnMapping.mode") or "none").lower()
        if partitions or mapping != "none":
            what = f"is partitioned by {partitions}" if partitions else f"uses column mapping ({mapping} mode)"
            return ChangedRows(why_not=f"the table {what} and has no change data feed ({CHANGE_DATA_FEED})")
        log = Path(source.removeprefix("file://")) / "_delta_log"
        commits = []
        for version in range(since + 1, until + 1):
            path = log / f"{version:020d}.json"
            if not path.is_file():
                return ChangedRows(why_not=f"the log of commit {version} is gone (past the log's retention)")
            commits.append((version, commit_actions(path.read_text(encoding="utf-8"))))
        appends = appended_files(commits)
        if appends.not_appends:
            return ChangedRows(why_not=f"{appends.not_appends}, and the table has no change data feed ({CHANGE_DATA_FEED})")
        files = [str(log.parent / f.path) if "://" not in f.path else f.path for f in appends.files]
        gone = next((f for f in files if "://" not in f and not os.path.exists(f)), None)
        if gone is not None:
            return ChangedRows(why_not=f"the file {gone!r} that a commit after version {since} added is gone (vacuumed)")
        if not files:
            return ChangedRows(self.con.table(self._kept(schema.empty_table())))
        view = None if schema_refusal(schema) else parquet_view(self.con, files, schema, row_ids=True)
        if view is None:
            import pyarrow.dataset as ds

            view = self.con.table(self._kept(ds.dataset(files, schema=schema, format="parquet").to_table()))
        return ChangedRows(view)

    def _kept(self, rows: pa.Table | pa.RecordBatchReader) -> str:
        """A temporary table in DuckDB's own storage (it spills past memory_limit) holding `rows`."""
        given = f"chatgate_rows_{uuid.uuid4().hex[:12]}"
        name = f"chatgate_changed_{uuid.uuid4().hex[:12]}"
        self.con.con.register(given, rows)
        try:
            self.con.con.execute(f"CREATE TEMP TABLE {quote_identifier(name)} AS SELECT * FROM {quote_identifier(given)}")
        finally:
            self.con.con.unregister(given)
        return name
