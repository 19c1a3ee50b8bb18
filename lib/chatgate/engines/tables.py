"""Delta and Parquet tables as Ibis tables, for the embedded engine (DuckDB behind Ibis).

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

import errno
import json
import logging
import os
import re
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ibis
    import pyarrow as pa
    from ibis.backends.duckdb import Backend as DuckDBBackend

__all__ = [
    "DeltaLogError",
    "DeltaScan",
    "default_connection",
    "delta_source",
    "delta_version",
    "is_delta",
    "open_table",
    "record_batches",
]

log = logging.getLogger("chatgate")

PLAIN_READER_FEATURES = frozenset({"timestampNtz", "variantType", "variantType-preview"})
"""Reader features a PyArrow dataset over the Parquet files reads as they are (deltalake's own list)."""

KERNEL_READER_FEATURES = frozenset({"columnMapping", "deletionVectors"})
"""Reader features that send a snapshot to deltalake's own reader, which applies them."""

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

    con = ibis.duckdb.connect(**{k: v for k, v in settings.items() if v is not None})
    con.raw_sql("SET enable_progress_bar = false")
    # Its cache of the files' blocks grows with every file read; each run reads a file once or twice.
    con.raw_sql("SET enable_external_file_cache = false")
    return con


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
        return _parquet_files(con, [str(local)], row_ids=row_ids)
    if not any(local.rglob("*.parquet")):
        raise ValueError(
            f"{path!r} is a directory with neither a _delta_log (Delta) nor .parquet files"
        )
    return _parquet_files(con, [str(local / "**" / "*.parquet")], row_ids=row_ids)


def _parquet_files(con: Any, files: list[str], *, row_ids: bool) -> ibis.Table:
    from .parquet_files import parquet_view

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
            [field.with_type(_without_views(field.type)) for field in found], metadata=found.metadata
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


def _without_views(kind: Any) -> Any:
    """The Arrow type with its view types (string_view, binary_view, list views) made plain, nested too."""
    import pyarrow as pa
    import pyarrow.types as t

    if kind == pa.string_view():
        return pa.string()
    if kind == pa.binary_view():
        return pa.binary()
    if t.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        return pa.struct([field.with_type(_without_views(field.type)) for field in fields])
    if t.is_map(kind):
        return pa.map_(
            kind.key_field.with_type(_without_views(kind.key_type)),
            kind.item_field.with_type(_without_views(kind.item_type)),
            kind.keys_sorted,
        )
    if t.is_list(kind) or getattr(t, "is_list_view", lambda _: False)(kind):
        return pa.list_(kind.value_field.with_type(_without_views(kind.value_type)))
    if t.is_large_list(kind) or getattr(t, "is_large_list_view", lambda _: False)(kind):
        return pa.large_list(kind.value_field.with_type(_without_views(kind.value_type)))
    if t.is_fixed_size_list(kind):
        return pa.list_(kind.value_field.with_type(_without_views(kind.value_type)), kind.list_size)
    return kind


def _open_delta(
    path: str, con: Any, *, version: int | None, storage_options: dict[str, str] | None, row_ids: bool = False
) -> ibis.Table:
    snapshot = _snapshot(path, version, storage_options)
    if not _kernel_reasons(snapshot) and _local_filesystem(path, snapshot) is not None:
        from .parquet_files import snapshot_view

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


def _one_line(error: BaseException) -> str:
    return delta_error_text(error)


class DeltaLogError(ValueError):
    """deltalake can't open the Delta table at `path`; `problem` says why, on one line.

    A corrupt log (a commit file that isn't JSON, a commit file missing between two
    others) is named with the file and what to do; any other error is deltalake's own
    message without the Rust backtrace that `RUST_BACKTRACE` adds to it.
    """

    def __init__(self, path: str, error: BaseException) -> None:
        self.path = path
        self.problem = delta_log_problem(path, error) or delta_error_text(error)
        super().__init__(f"can't open the Delta table at {path!r}: {self.problem}")


_FRAME = re.compile(r"^\s*(\d+: |stack backtrace:|Stack backtrace:)")
"""The first line of a Rust backtrace, which deltalake's messages carry when RUST_BACKTRACE is set."""

_COMMIT_FILE = re.compile(r'filename: "(\d{20})\.json"')


def delta_error_text(error: BaseException) -> str:
    """deltalake's error as one line: its message up to the Rust backtrace, if any, whitespace folded."""
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - an error whose message can't be read
        text = ""
    kept = []
    for line in text.splitlines():
        if _FRAME.match(line):
            break
        kept.append(line)
    return " ".join(" ".join(kept).split()) or type(error).__name__


def delta_log_problem(path: str, error: BaseException) -> str | None:
    """What is wrong with the Delta log at `path`, when `error` (deltalake's) says it is corrupt; else None."""
    text = delta_error_text(error)
    if "Expected contiguous commit files, but found gap" in text:
        versions = [int(found) for found in _COMMIT_FILE.findall(text)]
        if len(versions) >= 2:
            return missing_commits(versions[0], versions[1])
        return missing_commits(None, None)
    if "json error" in text.lower():
        cause = text.split("Json error:", 1)[-1].strip() if "Json error:" in text else text
        return corrupt_commit(_unparsable_commit(path), cause)
    return None


def missing_commits(before: int | None, after: int | None) -> str:
    """The one-line problem of a Delta log with a gap between the commits `before` and `after`."""
    if before is None or after is None or after - before < 2:
        gap = "a commit file is missing from it"
    else:
        missing = [f"{version:020d}.json" for version in range(before + 1, after)]
        names = missing[0] if len(missing) == 1 else f"{missing[0]} to {missing[-1]}"
        gap = f"{names} {'is' if len(missing) == 1 else 'are'} missing between versions {before} and {after}"
    return (
        f"its Delta log (_delta_log) has a gap: {gap}, so Delta can't rebuild the table; "
        "restore the missing commit file from a backup (or your object store's versioning), then rerun"
    )


def corrupt_commit(file: str | None, cause: str) -> str:
    """The one-line problem of a Delta log with a commit file that can't be parsed (`file`, if known)."""
    which = f"the commit file {file}" if file else "a commit file"
    cause = cause if len(cause) <= 160 else cause[:157] + "..."
    return (
        f"its Delta log (_delta_log) is corrupt: {which} isn't valid JSON ({cause}), cut short or overwritten; "
        "restore it from a backup (or your object store's versioning), then rerun"
    )


def _unparsable_commit(path: str) -> str | None:
    """The name of the newest commit file of a local Delta log (among its last `_COMMITS_SEARCHED`)
    that isn't JSON lines, if any."""
    if _is_remote(path):
        return None
    log_dir = Path(_strip_file_scheme(path)) / "_delta_log"
    try:
        commits = sorted(log_dir.glob("*.json"), reverse=True)[:_COMMITS_SEARCHED]
        for commit in commits:
            with commit.open("rb") as handle:
                for line in handle:
                    if line.strip():
                        json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return f"_delta_log/{commit.name}"
    except OSError:
        return None
    return None


_COMMITS_SEARCHED = 1000
"""How many of the newest commit files a corrupt log's message looks through for the bad one
(readers replay the commits after the last checkpoint, usually far fewer)."""


def no_space_left(error: BaseException) -> bool:
    """Did `error`, or an error it chains to, come from a full disk (or a full disk quota)?"""
    for link in error_chain(error):
        if isinstance(link, OSError) and link.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        try:
            text = str(link)
        except Exception:  # noqa: BLE001
            continue
        if any(phrase in text for phrase in _NO_SPACE):
            return True
    return False


_NO_SPACE = ("No space left on device", "os error 28)", "Disk quota exceeded", "os error 122)")


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, then each error it was raised from or while handling, each once."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending and len(seen) < 50:
        link = pending.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        pending.extend(e for e in (link.__cause__, link.__context__) if e is not None)


_PANIC = re.compile(r"^thread '.*' (\(\d+\) )?panicked at ")
_PANIC_FRAME = re.compile(r"^\s+(\d+: |at )")
_QUIET_LOCK = threading.Lock()
_quiet_depth = 0


@contextmanager
def rust_panics_logged() -> Iterator[None]:
    """Within the block, Rust panics that deltalake's threads print to stderr are logged (at DEBUG) instead.

    A panic in one of deltalake's worker threads (object_store's "Already shut down" after a
    failed write, on a full disk) is printed to the process's stderr by Rust's panic hook,
    which Python can't replace; deltalake then raises its error as usual. Here stderr (file
    descriptor 2) is a pipe for the block's length, and a thread copies what comes through
    it back to stderr as it comes, but for a panic's lines (its message, and its backtrace
    when RUST_BACKTRACE is set). Nested and concurrent blocks share one pipe.
    """
    global _quiet_depth
    with _QUIET_LOCK:
        _quiet_depth += 1
        first = _quiet_depth == 1
        redirect = _PanicFilter.start() if first else None
        if first:
            _PanicFilter.active = redirect
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                active, _PanicFilter.active = _PanicFilter.active, None
                if active is not None:
                    active.stop()


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # stderr closed: nothing to show it on


class _PanicFilter:
    """fd 2 through a pipe, copied back to the saved stderr but for Rust panics (see `rust_panics_logged`)."""

    active: _PanicFilter | None = None

    def __init__(self, saved: int, reader: int) -> None:
        self.saved = saved
        self.reader = reader
        self.state = "normal"  # normal, message (the line after "panicked at"), after, frames
        self.swallowed: list[str] = []
        self.blank = b""
        self.thread = threading.Thread(target=self._copy, name="chatgate-stderr", daemon=True)

    @classmethod
    def start(cls) -> _PanicFilter | None:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):
            return None  # no stderr to filter
        reader, writer = os.pipe()
        os.dup2(writer, 2)
        os.close(writer)
        running = cls(saved, reader)
        running.thread.start()
        return running

    def stop(self) -> None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os.dup2(self.saved, 2)  # closes the pipe's last writer: the copying thread reads to its end
        self.thread.join(timeout=5)
        if not self.thread.is_alive():  # else a child process holds the pipe: the thread keeps the descriptor
            os.close(self.saved)
        if self.swallowed:
            log.debug("deltalake's Rust code panicked (kept off stderr):\n%s", "\n".join(self.swallowed))

    def _copy(self) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self.reader, 65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._line(line + b"\n")
                could_be_panic = pending.startswith(b"thread '") or b"thread '".startswith(pending)
                if pending and self.state == "normal" and not could_be_panic:
                    # A progress bar's line in the making: shown now.
                    _write_all(self.saved, self.blank + pending)
                    self.blank = pending = b""
            if pending:
                self._line(pending)
            _write_all(self.saved, self.blank)
        finally:
            os.close(self.reader)

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if self.state == "normal" and not line.strip():
            self.blank += raw  # Rust's panic hook starts with an empty line: held until the next line
            return
        if _PANIC.match(line):
            self.blank = b""
            self.state = "message"
        elif self.state == "message":
            self.state = "after"
        elif self.state == "after" and line.startswith("stack backtrace:"):
            self.state = "frames"
        elif self.state in ("after", "frames") and line.startswith("note: "):
            self.state = "normal"
        elif self.state == "frames" and _PANIC_FRAME.match(line):
            pass
        else:
            self.state = "normal"
            _write_all(self.saved, self.blank + raw)
            self.blank = b""
            return
        self.swallowed.append(line)


def _local_filesystem(path: str, snapshot: Any) -> Any:
    """Arrow's own filesystem for a local table whose files all sit under its root, else None.

    deltalake's default filesystem reads through Python: each column chunk becomes a
    Python bytes object (Python memory grows with the row group), scans are about
    4x slower, and Arrow's threads dropping it at interpreter exit abort the process.
    Without a local root (a remote table), deltalake's own reader is used instead.
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
