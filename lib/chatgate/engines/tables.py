"""Delta and Parquet tables as Ibis tables, for the embedded engine (DuckDB behind Ibis).

Delta tables are read through deltalake, never through DuckDB's delta extension
(`read_delta`, `delta_scan`): that extension is downloaded at run time and fails
with no route to its host (CI, air-gapped clusters). A deltalake snapshot is
handed to DuckDB as a PyArrow dataset, so projections and filters are still
pushed down into the scan.

>>> import ibis
>>> con = ibis.duckdb.connect()
>>> table = open_table("warehouse/chats", con)  # doctest: +SKIP
>>> delta_version("warehouse/chats")  # doctest: +SKIP
3
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ibis
    import pyarrow as pa
    from ibis.backends.duckdb import Backend as DuckDBBackend

__all__ = ["default_connection", "delta_version", "is_delta", "open_table", "record_batches"]

_LOCK = threading.Lock()
_CONNECTION: DuckDBBackend | None = None


def default_connection() -> DuckDBBackend:
    """The process-wide in-memory DuckDB connection behind Ibis, created on first use.

    DuckDB's own progress bar is off on it: chatgate shows its own, and DuckDB's
    floods logs (Airflow, CI) with carriage-return updates when stderr isn't a terminal.
    """
    global _CONNECTION
    with _LOCK:
        if _CONNECTION is None:
            import ibis

            con = ibis.duckdb.connect()
            con.raw_sql("SET enable_progress_bar = false")
            _CONNECTION = con
        return _CONNECTION


def open_table(
    source: str | os.PathLike,
    con: DuckDBBackend | None = None,
    *,
    version: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> ibis.Table:
    """An Ibis table over the Delta table or Parquet file(s) at `source`.

    `source` is a Delta table (a directory with `_delta_log`, or a URI deltalake
    can open), a Parquet file, or a directory of Parquet files (read recursively).
    `version` reads an older version of a Delta table. `con` defaults to
    `default_connection()`.

    Raises `FileNotFoundError` when nothing is at a local `source`, and
    `ValueError` when it is neither Delta nor Parquet.
    """
    con = con if con is not None else default_connection()
    path = os.fspath(source)
    if is_delta(path, storage_options=storage_options):
        return _open_delta(path, con, version=version, storage_options=storage_options)
    if version is not None:
        raise ValueError(f"version={version} needs a Delta table, and {path!r} isn't one")
    if _is_remote(path):
        if path.rstrip("/").endswith(".parquet"):
            return con.read_parquet(path)
        raise ValueError(
            f"{path!r} isn't a Delta table that deltalake can open, nor a .parquet file"
        )
    local = Path(_strip_file_scheme(path))
    if not local.exists():
        raise FileNotFoundError(f"no table at {path!r}: the path doesn't exist")
    if local.is_file():
        if not _is_parquet_file(local):
            raise ValueError(f"{path!r} is neither a Delta table nor a Parquet file")
        return con.read_parquet(str(local))
    if not any(local.rglob("*.parquet")):
        raise ValueError(
            f"{path!r} is a directory with neither a _delta_log (Delta) nor .parquet files"
        )
    return con.read_parquet(str(local / "**" / "*.parquet"))


def delta_version(
    source: str | os.PathLike, *, storage_options: dict[str, str] | None = None
) -> int | None:
    """The current version of the Delta table at `source`, or None when it isn't one."""
    path = os.fspath(source)
    if not is_delta(path, storage_options=storage_options):
        return None
    from deltalake import DeltaTable

    return DeltaTable(path, storage_options=storage_options).version()


def is_delta(source: str | os.PathLike, *, storage_options: dict[str, str] | None = None) -> bool:
    """Is there a Delta table at `source`? (A local directory with `_delta_log`, or a URI.)"""
    path = os.fspath(source)
    if not _is_remote(path):
        return (Path(_strip_file_scheme(path)) / "_delta_log").is_dir()
    from deltalake import DeltaTable

    try:
        return DeltaTable.is_deltatable(path, storage_options=storage_options)
    except Exception:  # noqa: BLE001 - unreachable or unknown scheme: not a Delta table we can read
        return False


def record_batches(expr: ibis.Table, *, chunk_size: int = 10_000) -> pa.RecordBatchReader:
    """The rows of an Ibis table as a stream of Arrow record batches of at most `chunk_size` rows.

    Use this rather than `Table.to_pyarrow_batches()`: on DuckDB 2.0, Ibis 12's
    version calls `fetch_record_batch` on a cursor, which DuckDB 2.0 removed. Here
    DuckDB streams through a relation's Arrow reader instead; until that reader is
    read to the end or closed, it owns the connection (other queries on it fail).
    Other backends use `to_pyarrow_batches()`.
    """
    backend = expr.get_backend()
    if backend.name != "duckdb":
        return expr.to_pyarrow_batches(chunk_size=chunk_size)
    backend._run_pre_execute_hooks(expr)  # registers the memtables and UDFs the query uses
    relation = backend.con.sql(backend.compile(expr))
    if hasattr(relation, "to_arrow_reader"):
        return relation.to_arrow_reader(batch_size=chunk_size)
    return relation.fetch_record_batch(chunk_size)  # DuckDB before 1.4


def _open_delta(path, con, *, version, storage_options) -> ibis.Table:
    from deltalake import DeltaTable

    try:
        snapshot = DeltaTable(path, version=version, storage_options=storage_options)
    except Exception as error:  # deltalake raises its own errors for bad versions and logs
        raise ValueError(f"can't open the Delta table at {path!r}: {error}") from error
    name = f"chatgate_delta_{uuid.uuid4().hex[:12]}"
    con.con.register(
        name, snapshot.to_pyarrow_dataset(filesystem=_local_filesystem(path, snapshot))
    )
    return con.table(name)


def _local_filesystem(path: str, snapshot):
    """Arrow's own filesystem for a local table whose files all sit under its root, else None.

    deltalake's default filesystem reads through Python: each column chunk becomes a
    Python bytes object (Python memory grows with the row group) and scans are about
    4x slower. Remote tables keep it, for its credentials handling.
    """
    if _is_remote(path):
        return None
    import pyarrow.fs as pa_fs

    root = Path(_strip_file_scheme(path)).resolve()
    for uri in snapshot.file_uris():
        file = Path(_strip_file_scheme(uri))
        if not file.is_absolute() or not file.resolve().is_relative_to(root):
            return None
    return pa_fs.SubTreeFileSystem(str(root), pa_fs.LocalFileSystem())


def _strip_file_scheme(path: str) -> str:
    return path.removeprefix("file://")


def _is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _is_parquet_file(path: Path) -> bool:
    if path.suffix == ".parquet":
        return True
    with path.open("rb") as handle:
        return handle.read(4) == b"PAR1"
