"""Delta snapshots and Parquet files read by DuckDB's own Parquet reader.

DuckDB reads Parquet row group by row group under its memory limit and pushes
projections down. A PyArrow dataset registered in DuckDB reads ahead whole record
batches instead (measured: 1.6 GB resident for 250,000 rows of 3 KB of JSON,
against 0.5 GB here, and growing with the table). A Delta snapshot is read here
when its files hold its columns as they are:

- no column mapping or deletion vectors (the caller sends those to deltalake's
  own reader, which applies them);
- no partition columns (their values live in the Delta log, not in the files);
- every column of the table's schema in at least one file (a column added since
  the last write exists in the log only);
- no timestamp inside a list, struct or map, and no column named like DuckDB's
  virtual columns (`file_index`, `file_row_number`, `filename`).

Top-level timestamps that a writer stored without a time zone (Spark's INT96) are
read as UTC, as Delta defines its `timestamp` type.

With `row_ids`, the view has one more column, `ROW_ID`: a number unique to each
row and the same in every scan of the snapshot (the file's index in the list,
then the row's number in its file). The engine deduplicates on it: it groups the
rows by a digest of their value, keeps the smallest row id of each group, and
joins those ids back, so no value sits in a hash table (DuckDB can't spill a
group-by whose keys are long texts, and runs out of memory instead).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.types as pat

if TYPE_CHECKING:
    import ibis

log = logging.getLogger("chatgate")

ROW_ID = "__chatgate_row_id__"
"""The row id column of a view made with `row_ids=True` (see the module docstring)."""

VIRTUAL_COLUMNS = frozenset({"file_index", "file_row_number", "filename"})
"""DuckDB's virtual columns of a Parquet scan: a table column of the same name would hide one."""

ROWS_PER_FILE_BITS = 40
"""Row ids are file_index << 40 | file_row_number: a file holds fewer than 2**40 rows."""


def snapshot_view(con: Any, snapshot: Any, *, row_ids: bool = False) -> ibis.Table | None:
    """The Delta `snapshot` as a view over its Parquet files, or None (and a log line) when it can't be one."""
    why = snapshot_refusal(snapshot)
    if why is None:
        schema = pa.schema(snapshot.schema().to_arrow())
        return parquet_view(con, list(snapshot.file_uris()), schema, row_ids=row_ids, label=str(snapshot.version()))
    log.info("reading Delta version %s through a PyArrow dataset, not DuckDB's Parquet reader: %s",
             snapshot.version(), why)
    return None


def snapshot_refusal(snapshot: Any) -> str | None:
    """Why the snapshot's Parquet files don't hold its rows as they are (None: they do)."""
    partitions = list(snapshot.metadata().partition_columns)
    if partitions:
        return f"it is partitioned by {partitions}, whose values live in the Delta log"
    if not snapshot.file_uris():
        return "it has no data files"
    return schema_refusal(pa.schema(snapshot.schema().to_arrow()))


def schema_refusal(schema: pa.Schema) -> str | None:
    """Why DuckDB's reader can't give these columns as the table defines them (None: it can)."""
    hidden = sorted(VIRTUAL_COLUMNS & {name.lower() for name in schema.names})
    if hidden:
        return f"its column {hidden[0]!r} has the name of one of DuckDB's virtual columns"
    nested = [f.name for f in schema if _nested_timestamp(f.type)]
    if nested:
        return f"its column {nested[0]!r} holds timestamps inside a nested type"
    return None


def parquet_view(
    con: Any, files: list[str], schema: pa.Schema | None, *, row_ids: bool = False, label: str = ""
) -> ibis.Table | None:
    """A view over the Parquet `files` with the columns of `schema` (all the files' columns if None).

    None when a column of `schema` is in none of the files.
    """
    scan = f"read_parquet([{', '.join(_literal(f) for f in files)}], union_by_name = true)"
    found = {row[0]: str(row[1]) for row in con.con.sql(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
    if schema is None:
        columns = [quote_identifier(name) for name in found]
    else:
        missing = [f.name for f in schema if f.name not in found]
        if missing:
            log.info("reading %s through a PyArrow dataset: its column %r is in none of its files", label, missing[0])
            return None
        columns = [_column(f, found[f.name]) for f in schema]
    if row_ids:
        columns.append(f"(file_index::BIGINT << {ROWS_PER_FILE_BITS}) + file_row_number AS {quote_identifier(ROW_ID)}")
    name = f"chatgate_parquet_{uuid.uuid4().hex[:12]}"
    con.con.execute(f"CREATE TEMP VIEW {quote_identifier(name)} AS SELECT {', '.join(columns)} FROM {scan}")
    return con.table(name)


def _column(field: pa.Field, found_type: str) -> str:
    """The select item of one column: as stored, or a naive timestamp read as UTC."""
    name = quote_identifier(field.name)
    if pat.is_timestamp(field.type) and field.type.tz is not None and "TIME ZONE" not in found_type.upper():
        return f"timezone('UTC', {name}) AS {name}"
    return name


def _nested_timestamp(kind: pa.DataType, top: bool = True) -> bool:
    if pat.is_timestamp(kind):
        return not top
    if pat.is_struct(kind):
        return any(_nested_timestamp(kind.field(i).type, False) for i in range(kind.num_fields))
    if pat.is_map(kind):
        return _nested_timestamp(kind.key_type, False) or _nested_timestamp(kind.item_type, False)
    if pat.is_list(kind) or pat.is_large_list(kind) or pat.is_fixed_size_list(kind):
        return _nested_timestamp(kind.value_type, False)
    return False


def quote_identifier(name: str) -> str:
    """A name as a SQL identifier (DuckDB's double quotes, doubled inside)."""
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
