"""DuckDB connections behind Ibis, and the rows of an Ibis table as a stream of Arrow batches."""

from __future__ import annotations

import os
import tempfile
import threading
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError

if TYPE_CHECKING:
    import ibis
    import pyarrow as pa
    from ibis.backends.duckdb import Backend as DuckDBBackend

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
            _CONNECTION = duckdb_connection()
        return _CONNECTION


def duckdb_connection(**settings: Any) -> DuckDBBackend:
    """A new in-memory DuckDB connection behind Ibis, with DuckDB `settings` such as
    memory_limit="1GB", threads=2 or temp_directory="/scratch" (where it spills);
    its progress bar is off, as on the default connection."""
    import ibis

    if settings.get("temp_directory") is not None:
        check_spill_folder(str(settings["temp_directory"]))
    con = ibis.duckdb.connect(**{k: v for k, v in settings.items() if v is not None})
    con.raw_sql("SET enable_progress_bar = false")
    # Its cache of the files' blocks grows with every file read; each run reads a file once or twice.
    con.raw_sql("SET enable_external_file_cache = false")
    return con


def check_spill_folder(path: str) -> None:
    """ConfigError, before any row is read, when DuckDB couldn't spill to `path`: it is a file, lies
    under one, or the folder it is (or would be made in) can't be written in. DuckDB makes the
    folder only when it first spills, deep in a run; nothing is left behind here."""
    missing = missing_folders(path)
    folder = os.path.dirname(missing[0]) if missing else os.path.abspath(path)
    where = f"would be made in {folder!r}, which is" if missing else "is"
    if not os.path.isdir(folder):
        problem = f"{where} a file"
    elif not _writable(folder):
        problem = f"{where} a folder this process may not write in"
    else:
        return
    raise ConfigError(
        f"temp_directory: DuckDB's spill folder {path!r} {problem}; name another with --temp-dir PATH "
        "(temp_directory: under embedded:)"
    )


def missing_folders(path: str) -> list[str]:
    """The folders of `path` (made absolute) that don't exist yet, outermost first: empty when it exists."""
    missing: list[str] = []
    folder = os.path.abspath(path)
    while not os.path.exists(folder) and os.path.dirname(folder) != folder:
        missing.insert(0, folder)
        folder = os.path.dirname(folder)
    return missing


def _writable(folder: str) -> bool:
    """Can a folder be made in `folder` (tried: permissions don't tell for root, nor for a read-only mount)?"""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".chatgate-probe-", dir=folder))
    except OSError:
        return False
    return True


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
