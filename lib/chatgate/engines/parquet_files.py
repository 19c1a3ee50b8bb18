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

Text that isn't UTF-8: DuckDB's reader refuses a whole file (and the query) for one
such string, while Spark reads its bytes as they are and the check gives the row a
code (`not_messages`). `read_despite_bad_text` runs a query and, when DuckDB refuses
a file for that reason, points the views over it to `UncheckedParquet` (PyArrow's
reader, which hands the bytes over unchecked; DuckDB's Arrow scan keeps them as they
are, and so does a Delta write of them) and runs it again: every row is then judged
and written, the common case paying nothing. That reader reads whole record batches
and every column of each file, so it holds more memory than DuckDB's own.

With `row_ids`, the view has one more column, `ROW_ID`: a number unique to each
row and the same in every scan of the snapshot (the file's index in the list,
then the row's number in its file). The engine deduplicates on it: it groups the
rows by a digest of their value, keeps the smallest row id of each group, and
joins those ids back, so no value sits in a hash table (DuckDB can't spill a
group-by whose keys are long texts, and runs out of memory instead).
"""

from __future__ import annotations

import glob
import logging
import os
import re
import uuid
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

if TYPE_CHECKING:
    import ibis

T = TypeVar("T")

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
        values = [(name, kind, quote_identifier(name)) for name, kind in found.items()]
    else:
        missing = [f.name for f in schema if f.name not in found]
        if missing:
            log.info("reading %s through a PyArrow dataset: its column %r is in none of its files", label, missing[0])
            return None
        values = [(f.name, found[f.name], _value(f, found[f.name])) for f in schema]
    columns = [f"{value} AS {quote_identifier(name)}" for name, _, value in values]
    if row_ids:
        columns.append(f"(file_index::BIGINT << {ROWS_PER_FILE_BITS}) + file_row_number AS {quote_identifier(ROW_ID)}")
    name = f"chatgate_parquet_{uuid.uuid4().hex[:12]}"
    con.con.execute(f"CREATE TEMP VIEW {quote_identifier(name)} AS SELECT {', '.join(columns)} FROM {scan}")
    _VIEWS.setdefault(con, {})[name] = _View(files, schema, row_ids, tuple(values))
    return con.table(name)


def _value(field: pa.Field, found_type: str) -> str:
    """The value of one column: as stored, or a naive timestamp read as UTC."""
    name = quote_identifier(field.name)
    if pat.is_timestamp(field.type) and field.type.tz is not None and "TIME ZONE" not in found_type.upper():
        return f"timezone('UTC', {name})"
    return name


@dataclass(frozen=True)
class ViewPart:
    """A view of `parquet_view` over some of its files, made again under its name in another
    DuckDB connection (a check worker's): the same columns, types and row ids, fewer rows."""

    name: str
    files: tuple[str, ...]
    indices: tuple[int, ...]  # each file's place in the whole view's list, for its row ids
    values: tuple[tuple[str, str, str], ...]  # each column's name, DuckDB type in the whole view, and value
    row_ids: bool

    def create(self, con: Any) -> None:
        """Create the view on the DuckDB connection `con`; a column missing from these files is null."""
        scan = f"read_parquet([{', '.join(_literal(f) for f in self.files)}], union_by_name = true)"
        found = {row[0]: str(row[1]) for row in con.sql(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
        columns = [
            f"{_as_type(value if name in found else 'NULL', found.get(name), kind)} AS {quote_identifier(name)}"
            for name, kind, value in self.values
        ]
        if self.row_ids:
            index = f"list_extract([{', '.join(map(str, self.indices))}]::BIGINT[], file_index::BIGINT + 1)"
            columns.append(f"({index} << {ROWS_PER_FILE_BITS}) + file_row_number AS {quote_identifier(ROW_ID)}")
        con.execute(f"CREATE TEMP VIEW {quote_identifier(self.name)} AS SELECT {', '.join(columns)} FROM {scan}")


def _as_type(value: str, found: str | None, kind: str) -> str:
    """`value` as the whole view's type `kind` (files of one view may store a column differently)."""
    return value if found == kind else f"CAST({value} AS {kind})"


def view_parts(con: Any, name: str, parts: int) -> list[ViewPart] | None:
    """The view `name` of `con` as up to `parts` views over disjoint sets of its files of about
    the same size, or None: not a view of `parquet_view`, read unchecked, fewer than two local
    files, or files a worker can't be trusted to list as DuckDB does (globs, with row ids)."""
    view = _VIEWS.get(con, {}).get(name)
    if view is None or view.unchecked or parts < 2:
        return None
    files = _expanded(con, view.files)
    sizes = _local_sizes(files)
    if sizes is None or len(files) < 2:
        return None
    if view.row_ids and any(glob.has_magic(f.removeprefix("file://")) for f in view.files):
        return None
    return [
        ViewPart(name, tuple(files[i] for i in group), group, view.values, view.row_ids)
        for group in _balanced(sizes, min(parts, len(files)))
    ]


def _local_sizes(files: list[str]) -> list[int] | None:
    """The size of each file, or None when one isn't a local file (a worker may lack the credentials)."""
    paths = [f.removeprefix("file://") for f in files]
    if any("://" in path for path in paths):
        return None
    try:
        return [os.path.getsize(path) for path in paths]
    except OSError:
        return None


def _balanced(sizes: list[int], groups: int) -> list[tuple[int, ...]]:
    """The indices of `sizes` in `groups` groups of about the same total, each in order."""
    members: list[list[int]] = [[] for _ in range(groups)]
    loads = [0] * groups
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        lightest = loads.index(min(loads))
        members[lightest].append(index)
        loads[lightest] += sizes[index]
    return [tuple(sorted(group)) for group in members]


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


# --- Text that isn't UTF-8 (see the module docstring) -------------------------------------------

BAD_TEXT_ERROR = "Invalid string encoding found in Parquet file"
"""How DuckDB's Parquet reader refuses a file holding a string that isn't UTF-8."""

_BAD_FILE = re.compile(re.escape(BAD_TEXT_ERROR) + r' "(.+?)": value')


@dataclass
class _View:
    """How a view of `parquet_view` was made, to make it again over `UncheckedParquet`."""

    files: list[str]
    schema: pa.Schema | None
    row_ids: bool
    values: tuple[tuple[str, str, str], ...] = ()  # see `ViewPart.values`
    unchecked: bool = False


_VIEWS: weakref.WeakKeyDictionary[Any, dict[str, _View]] = weakref.WeakKeyDictionary()
"""The views of `parquet_view` on each connection (Ibis backend), by name."""


def read_despite_bad_text(con: Any, action: Callable[[], T]) -> T:
    """`action()`, run again after each time DuckDB refuses a Parquet file of a view of `con`
    for text that isn't UTF-8, once the views over that file read it unchecked."""
    while True:
        try:
            return action()
        except Exception as error:
            if not read_unchecked(con, error):
                raise


def read_unchecked(con: Any, error: BaseException) -> bool:
    """Point the views of `con` over the file `error` names to `UncheckedParquet`, when
    `error` is DuckDB refusing it for text that isn't UTF-8; True when a view changed."""
    text = str(error)
    if BAD_TEXT_ERROR not in text:
        return False
    named = _BAD_FILE.search(text)
    bad = _file_key(named.group(1)) if named else None
    changed = False
    for name, view in _VIEWS.get(con, {}).items():
        if view.unchecked:
            continue
        files = _expanded(con, view.files)
        if bad is not None and bad not in {_file_key(f) for f in files}:
            continue
        source = UncheckedParquet(files, view.schema, row_ids=view.row_ids)
        con.con.register(f"{name}_unchecked", source)
        columns = ", ".join(quote_identifier(column) for column in source.schema.names)
        con.con.execute(
            f"CREATE OR REPLACE TEMP VIEW {quote_identifier(name)} AS SELECT {columns} "
            f"FROM {quote_identifier(name + '_unchecked')}"
        )
        view.unchecked = changed = True
        log.warning(
            "a Parquet file holds text that isn't UTF-8 (%s): reading %d file(s) with PyArrow's reader, "
            "which hands it over as it is (rows holding it get their codes)",
            named.group(1) if named else "a file", len(files),
        )
    return changed


class UncheckedParquet:
    """Parquet files as an Arrow stream that DuckDB scans (any number of times), text unchecked.

    The columns of `schema` (all the files' columns if None), a column missing from a
    file as nulls, each cast to the schema's type (a naive timestamp read as UTC), and
    with `row_ids` the `ROW_ID` of each row as `parquet_view` numbers it.
    """

    BATCH_ROWS = 10_000

    def __init__(self, files: list[str], schema: pa.Schema | None, *, row_ids: bool = False) -> None:
        import pyarrow.parquet as pq

        self.files = files
        if schema is None:
            schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
        self.table_schema = schema
        fields = list(self.table_schema) + ([pa.field(ROW_ID, pa.int64())] if row_ids else [])
        self.schema = pa.schema(fields)
        self.row_ids = row_ids

    def __arrow_c_schema__(self) -> Any:
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        reader = pa.RecordBatchReader.from_batches(self.schema, self._batches())
        return reader.__arrow_c_stream__(requested_schema)

    def _batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        for index, path in enumerate(self.files):
            with pq.ParquetFile(path) as handle:
                present = [name for name in self.table_schema.names if name in handle.schema_arrow.names]
                first = 0
                for batch in handle.iter_batches(batch_size=self.BATCH_ROWS, columns=present or None):
                    yield self._conformed(batch, present, index, first)
                    first += batch.num_rows

    def _conformed(self, batch: pa.RecordBatch, present: list[str], index: int, first: int) -> pa.RecordBatch:
        """A batch of a file's rows with the schema's columns (and row ids from `first` on)."""
        n = batch.num_rows
        arrays = [
            _conform(batch.column(f.name), f.type) if f.name in present else pa.nulls(n, f.type)
            for f in self.table_schema
        ]
        if self.row_ids:
            ids = (index << ROWS_PER_FILE_BITS) + first + np.arange(n, dtype=np.int64)
            arrays.append(pa.array(ids, pa.int64()))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _conform(array: pa.Array, kind: pa.DataType) -> pa.Array:
    """`array` as `kind` (casts between text types keep the bytes as they are)."""
    return array if array.type == kind else array.cast(kind)


def _expanded(con: Any, files: list[str]) -> list[str]:
    """The files a view of `con` reads: its globs expanded by DuckDB itself, in its order (Python's
    glob differs: it skips hidden files and folders, which DuckDB's reader reads)."""
    out: list[str] = []
    for item in files:
        path = item.removeprefix("file://")
        if glob.has_magic(path):
            out.extend(row[0] for row in con.con.execute("SELECT file FROM glob(?)", [path]).fetchall())
        else:
            out.append(path)
    return out


def _file_key(path: str) -> str:
    return os.path.realpath(path.removeprefix("file://"))
