"""Delta and Parquet tables read with deltalake, as Ibis tables for the embedded engine (DuckDB behind Ibis).

Delta tables are read through deltalake, never through DuckDB's delta extension
(`read_delta`, `delta_scan`): that extension is downloaded at run time and fails
with no route to its host (CI, air-gapped clusters). Each snapshot is read one of
two ways (`delta_source` makes the choice, and the same object can be queried
from Python):

- a plain local table (no column mapping, no deletion vectors) is a PyArrow
  dataset over its Parquet files on Arrow's own filesystem: projections and
  filters are pushed down into the scan;
- any other table is read by deltalake's own reader (`DeltaTable.scan()`,
  DataFusion), which applies column mapping (`delta.columnMapping.mode` name or
  id: the files hold physical column names, which a dataset reads as all NULLs)
  and deletion vectors (which a dataset ignores, returning deleted rows). It
  streams, and each scan DuckDB makes opens a fresh reader (`DeltaScan`), so the
  table can be scanned any number of times; projections aren't pushed down. A
  reader feature deltalake can't read stops with a one-line `ValueError` naming it.
  The choice is logged on the "chatgate" logger.

Remote tables take deltalake's reader too. A dataset over deltalake's default
filesystem (what `DeltaTable.to_pyarrow_dataset()` and `to_pyarrow_table()` use
when given none) reads through Python: Arrow's threads then hold Python objects,
and when they drop the last one while the interpreter exits, the process aborts
("terminate called without an active exception"), segfaults or hangs at exit.
Nothing here hands out such a dataset.

(The last two lines are skipped in the doctests: there is no table at warehouse/chats.)

>>> import ibis
>>> con = ibis.duckdb.connect()
>>> table = open_table("warehouse/chats", con)  # doctest: +SKIP
>>> delta_version("warehouse/chats")  # doctest: +SKIP
3
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engines.ibis.connection import default_connection
from .base import is_local_path
from .deltalake_errors import DeltaLogError, _one_line, _strip_file_scheme
from .files import ACCEPTED, nothing_there

if TYPE_CHECKING:
    import ibis
    import pyarrow as pa
    from ibis.backends.duckdb import Backend as DuckDBBackend

__all__ = [
    "DeltaScan",
    "delta_source",
    "delta_version",
    "is_delta",
    "open_table",
]

log = logging.getLogger("chatgate")

READS = f"chatgate reads {ACCEPTED} files, folders of them, and Delta tables"

PLAIN_READER_FEATURES = frozenset({"timestampNtz", "variantType", "variantType-preview"})
"""Reader features a PyArrow dataset over the Parquet files reads as they are (deltalake's own list)."""

KERNEL_READER_FEATURES = frozenset({"columnMapping", "deletionVectors"})
"""Reader features that send a snapshot to deltalake's own reader, which applies them."""


def open_table(
    source: str | os.PathLike[str],
    con: DuckDBBackend | None = None,
    *,
    version: int | None = None,
    storage_options: dict[str, str] | None = None,
    row_ids: bool = False,
) -> ibis.Table:
    """An Ibis table over the Delta table or Parquet file(s) at `source`.

    `source` is a Delta table (a directory with `_delta_log`, or a URI deltalake
    can open), a Parquet file, or a directory of Parquet files (read recursively).
    `version` reads an older version of a Delta table. `con` defaults to
    `default_connection()`. Local Parquet files are read by DuckDB's own reader
    (see `parquet_files`); with `row_ids`, such a table has one more column,
    `parquet_files.ROW_ID`, for the engine's deduplication.

    Raises `FileNotFoundError` when nothing is at a local `source`, and
    `ValueError` when it is neither Delta nor Parquet.
    """
    con = con if con is not None else default_connection()
    path = os.fspath(source)
    if is_delta(path, storage_options=storage_options):
        return _open_delta(path, con, version=version, storage_options=storage_options, row_ids=row_ids)
    if version is not None:
        raise ValueError(f"version={version} needs a Delta table, and {path!r} isn't one")
    if not is_local_path(path):
        if path.rstrip("/").endswith(".parquet"):
            return con.read_parquet(path)
        raise ValueError(
            f"{path!r} isn't a Delta table that deltalake can open, nor a .parquet file"
        )
    local = Path(_strip_file_scheme(path))
    if not local.exists():
        raise FileNotFoundError(f"no table at {path!r}: {nothing_there(path)}")
    if local.is_file():
        if not _is_parquet_file(local):
            raise ValueError(f"{path!r} is neither a Delta table nor a Parquet file nor JSON lines: {READS}")
        return _parquet_files(con, [str(local)], row_ids=row_ids)
    if not any(local.rglob("*.parquet")):
        raise ValueError(f"{path!r} is a directory with neither a _delta_log (Delta) nor .parquet files: {READS}")
    return _parquet_files(con, [str(local / "**" / "*.parquet")], row_ids=row_ids)


def _parquet_files(con: Any, files: list[str], *, row_ids: bool) -> ibis.Table:
    from ..engines.parquet_files import parquet_view

    view = parquet_view(con, files, None, row_ids=row_ids)
    assert view is not None  # without a schema to match, every column found is read
    return view


def delta_version(
    source: str | os.PathLike[str], *, storage_options: dict[str, str] | None = None
) -> int | None:
    """The current version of the Delta table at `source`, or None when it isn't one."""
    path = os.fspath(source)
    if not is_delta(path, storage_options=storage_options):
        return None
    from deltalake import DeltaTable

    try:
        return DeltaTable(path, storage_options=storage_options).version()
    except Exception as error:  # deltalake raises its own errors for a log it can't read
        raise DeltaLogError(path, error) from error


def is_delta(source: str | os.PathLike[str], *, storage_options: dict[str, str] | None = None) -> bool:
    """Is there a Delta table at `source`? (A local directory with `_delta_log`, or a URI.)"""
    path = os.fspath(source)
    if is_local_path(path):
        return (Path(_strip_file_scheme(path)) / "_delta_log").is_dir()
    from deltalake import DeltaTable

    try:
        return DeltaTable.is_deltatable(path, storage_options=storage_options)
    except Exception:  # noqa: BLE001 - unreachable or unknown scheme: not a Delta table we can read
        return False


def delta_source(
    source: str | os.PathLike[str],
    *,
    version: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> Any:
    """The Delta table at `source` as an Arrow source that DuckDB, PyArrow or Polars can scan.

    Use it to query Delta tables (chatgate's outputs included) from Python: it reads
    column mapping and deletion vectors right, and never leaves the process to
    crash at exit (see the module docstring). A plain local table is a
    `pyarrow.dataset.Dataset` on Arrow's own filesystem (projections and filters
    pushed down); any other table is a `DeltaScan`, which streams through
    deltalake's reader and can be scanned again and again. Both have
    `to_table(columns=None)`.

    (Skipped in the doctests: there is no table at lake/chat_quarantine.)

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> con.register("quarantine", delta_source("lake/chat_quarantine"))  # doctest: +SKIP
    >>> con.sql("SELECT pb_reason_, count(*) FROM quarantine GROUP BY 1").fetchall()  # doctest: +SKIP

    Raises `ValueError` when `source` isn't a Delta table deltalake can read.
    """
    path = os.fspath(source)
    if not is_delta(path, storage_options=storage_options):
        raise ValueError(f"{path!r} isn't a Delta table")
    snapshot = _snapshot(path, version, storage_options)
    return _arrow_source(path, snapshot)


class DeltaScan:
    """A Delta snapshot as an Arrow stream that can be read any number of times.

    DuckDB reads a registered Arrow stream only once, and the engine scans a table
    several times (to count, to check, to write the outputs), sometimes twice in one
    query; each `__arrow_c_stream__` call here opens a fresh deltalake reader over the
    same snapshot, and `__arrow_c_schema__` lets DuckDB bind without opening one.
    Batches stream through: nothing holds the whole table.

    deltalake's reader hands text as `string_view` (binary as `binary_view`), which
    PyArrow can't filter (DuckDB pushes filters, join filters included, into Arrow
    scans through PyArrow); each batch is cast to the plain types on the way.
    """

    def __init__(self, snapshot: Any, *, path: str = "") -> None:
        import pyarrow as pa

        self.snapshot = snapshot
        self.path = path
        reader = _kernel_reader(snapshot)  # raises for a feature deltalake can't read
        found = pa.schema(reader.schema)
        del reader
        self.schema = pa.schema(
            [field.with_type(without_views(field.type)) for field in found], metadata=found.metadata
        )
        self._cast = not self.schema.equals(found)

    def __arrow_c_schema__(self) -> Any:
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        import pyarrow as pa

        reader = _kernel_reader(self.snapshot)
        if self._cast:
            reader = pa.RecordBatchReader.from_stream(reader, schema=self.schema)
        return reader.__arrow_c_stream__(requested_schema)

    def to_table(self, columns: list[str] | None = None) -> pa.Table:
        """The rows (only `columns`, if given) as one PyArrow table, like a dataset's `to_table`."""
        import pyarrow as pa

        if columns is None:
            return pa.table(self)
        if not hasattr(self.snapshot, "scan"):  # deltalake before scan(): read all, then project
            return pa.table(self).select(list(columns))
        schema = pa.schema([self.schema.field(column) for column in columns])
        reader = self.snapshot.scan(columns=list(columns))
        return pa.RecordBatchReader.from_stream(reader, schema=schema).read_all()

    def __repr__(self) -> str:
        return f"DeltaScan({self.path!r}, version={self.snapshot.version()})"


def without_views(kind: Any) -> Any:
    """The Arrow type with its view types (string_view, binary_view, list views) made plain, nested too."""
    import pyarrow as pa
    import pyarrow.types as t

    if kind == pa.string_view():
        return pa.string()
    if kind == pa.binary_view():
        return pa.binary()
    if t.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        return pa.struct([field.with_type(without_views(field.type)) for field in fields])
    if t.is_map(kind):
        return pa.map_(
            kind.key_field.with_type(without_views(kind.key_type)),
            kind.item_field.with_type(without_views(kind.item_type)),
            kind.keys_sorted,
        )
    if t.is_list(kind) or getattr(t, "is_list_view", lambda _: False)(kind):
        return pa.list_(kind.value_field.with_type(without_views(kind.value_type)))
    if t.is_large_list(kind) or getattr(t, "is_large_list_view", lambda _: False)(kind):
        return pa.large_list(kind.value_field.with_type(without_views(kind.value_type)))
    if t.is_fixed_size_list(kind):
        return pa.list_(kind.value_field.with_type(without_views(kind.value_type)), kind.list_size)
    return kind


def _open_delta(
    path: str, con: Any, *, version: int | None, storage_options: dict[str, str] | None, row_ids: bool = False
) -> ibis.Table:
    snapshot = _snapshot(path, version, storage_options)
    if not _kernel_reasons(snapshot) and _local_filesystem(path, snapshot) is not None:
        from ..engines.parquet_files import snapshot_view

        view = snapshot_view(con, snapshot, row_ids=row_ids)
        if view is not None:
            return view
    name = f"chatgate_delta_{uuid.uuid4().hex[:12]}"
    con.con.register(name, _arrow_source(path, snapshot))
    return con.table(name)


def _snapshot(path: str, version: int | None, storage_options: dict[str, str] | None) -> Any:
    from deltalake import DeltaTable

    try:
        return DeltaTable(path, version=version, storage_options=storage_options)
    except Exception as error:  # deltalake raises its own errors for bad versions and logs
        raise DeltaLogError(path, error) from error


def _arrow_source(path: str, snapshot: Any) -> Any:
    """A PyArrow dataset for a plain local snapshot, else a `DeltaScan`; see the module docstring."""
    reasons = _kernel_reasons(snapshot)
    if not reasons:
        filesystem = _local_filesystem(path, snapshot)
        if filesystem is not None:
            return snapshot.to_pyarrow_dataset(filesystem=filesystem)
        # Remote, or files outside the table's folder: a dataset would read them through
        # deltalake's Python filesystem, whose references Arrow's threads may drop while
        # the interpreter exits (an abort, a segfault or a hang at exit).
        log.info("reading the Delta table at %s with deltalake's own reader (its files aren't local)", path)
    else:
        log.info(
            "reading the Delta table at %s (version %s) with deltalake's own reader, for its %s; "
            "every column is read",
            path,
            snapshot.version(),
            " and ".join(reasons),
        )
    try:
        return DeltaScan(snapshot, path=path)
    except Exception as error:  # noqa: BLE001 - deltalake's own errors: a feature it can't read
        named = ", ".join(reasons) or "its protocol"
        raise ValueError(
            f"can't read the Delta table at {path!r} (version {snapshot.version()}), "
            f"which uses {named}: {_one_line(error)}"
        ) from error


def _kernel_reasons(snapshot: Any) -> list[str]:
    """Why a PyArrow dataset over the snapshot's files would read it wrong (empty: it wouldn't)."""
    protocol = snapshot.protocol()
    features = set(protocol.reader_features or ())
    mode = str(snapshot.metadata().configuration.get("delta.columnMapping.mode") or "none").lower()
    reasons = []
    if mode != "none" or "columnMapping" in features:
        reasons.append(f"column mapping ({mode} mode)")
    if "deletionVectors" in features:
        # Even before a row is deleted (Databricks turns the feature on for new tables):
        # deltalake's dataset refuses the feature, whether a file has a vector or not.
        reasons.append("deletion vectors")
    other = sorted(features - PLAIN_READER_FEATURES - KERNEL_READER_FEATURES)
    if other:
        reasons.append("reader feature" + ("s " if len(other) > 1 else " ") + ", ".join(other))
    if protocol.min_reader_version > 3:
        reasons.append(f"reader version {protocol.min_reader_version}")
    return reasons


def _kernel_reader(snapshot: Any) -> Any:
    """A fresh stream of the snapshot's rows from deltalake's own reader (DataFusion)."""
    if hasattr(snapshot, "scan"):
        return snapshot.scan()
    from deltalake import QueryBuilder  # deltalake before scan()

    return QueryBuilder().register("snapshot", snapshot).execute("SELECT * FROM snapshot")


def _local_filesystem(path: str, snapshot: Any) -> Any:
    """Arrow's own filesystem for a local table whose files all sit under its root, else None.

    deltalake's default filesystem reads through Python: each column chunk becomes a
    Python bytes object (Python memory grows with the row group), scans are about
    4x slower, and Arrow's threads dropping it at interpreter exit abort the process.
    Without a local root (a remote table), deltalake's own reader is used instead.
    """
    if not is_local_path(path):
        return None
    import pyarrow.fs as pa_fs

    root = Path(_strip_file_scheme(path)).resolve()
    for uri in snapshot.file_uris():
        file = Path(_strip_file_scheme(uri))
        if not file.is_absolute() or not file.resolve().is_relative_to(root):
            return None
    return pa_fs.SubTreeFileSystem(str(root), pa_fs.LocalFileSystem())


def _is_parquet_file(path: Path) -> bool:
    if path.suffix == ".parquet":
        return True
    with path.open("rb") as handle:
        return handle.read(4) == b"PAR1"
