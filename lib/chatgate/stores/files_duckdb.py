"""File sources (see stores/files.py) for the embedded engine: streamed through PyArrow into DuckDB.

Each file is opened on Arrow's own filesystems (local paths, and the object stores this
PyArrow was built with: s3://, gs://, hdfs://, ...), decompressed on the fly by
`CompressedInputStream` (gzip, zstd), split into lines and judged `BATCH_ROWS` at a time by
stores/files.py. The first pass learns the keys; the second streams Arrow batches into a
temporary DuckDB table, which spills to disk past DuckDB's memory limit, so neither pass
holds more than a batch of parsed rows, and the engine's later scans read DuckDB's copy.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..engines.parquet_files import ROW_ID, ROWS_PER_FILE_BITS, quote_identifier
from ..errors import ChatgateError, SourceError
from .files import (
    ACCEPTED,
    FileKind,
    Keys,
    batched,
    file_kind,
    file_schema,
    items_of,
    nothing_there,
    relative_name,
    rows_batch,
)


@dataclass(frozen=True)
class SourceFile:
    """One file of a file source: where it is, its name in `pb_file_`, and its kind."""

    path: str
    name: str
    kind: FileKind


def reads_as_files(source: str) -> bool:
    """Is `source` for this reader: a name ending in a JSONL or JSON extension, or a local folder
    with no Delta log and no Parquet file but such files?"""
    if file_kind(source) is not None:
        return True
    if "://" in source and not source.startswith("file://"):
        return False
    folder = Path(source.removeprefix("file://"))
    if not folder.is_dir() or (folder / "_delta_log").is_dir() or any(folder.rglob("*.parquet")):
        return False
    return any(file_kind(p.name) is not None for p in folder.rglob("*") if p.is_file())


def source_files(source: str) -> tuple[Any, list[SourceFile], bool]:
    """The filesystem, the files of `source` in name order, and whether it is a folder."""
    filesystem, path = _filesystem(source)
    info = filesystem.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise SourceError(f"can't read the source {source!r}: {nothing_there(source)}")
    if info.type == pafs.FileType.File:
        kind = file_kind(path)
        if kind is None:
            raise SourceError(f"can't read the source {source!r}: chatgate reads {ACCEPTED} files, or Delta tables")
        return filesystem, [SourceFile(path, posixpath_name(path), kind)], False
    found = filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
    files = []
    for entry in sorted(found, key=lambda e: e.path):
        name = relative_name(entry.path, path)
        kind = file_kind(entry.path)
        if entry.type == pafs.FileType.File and kind is not None and not _hidden(name):
            files.append(SourceFile(entry.path, name, kind))
    if not files:
        raise SourceError(f"can't read the source {source!r}: the folder holds no {ACCEPTED} files")
    return filesystem, files, True


def posixpath_name(path: str) -> str:
    return path.replace(os.sep, "/").rsplit("/", 1)[-1]


def _hidden(name: str) -> bool:
    """Files Spark's readers skip too (`_SUCCESS`, `.part.crc`), so both engines read the same files."""
    return any(part.startswith(("_", ".")) for part in name.split("/"))


def _filesystem(source: str) -> tuple[Any, str]:
    if "://" in source and not source.startswith("file://"):
        try:
            return pafs.FileSystem.from_uri(source)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
            raise SourceError(f"can't read the source {source!r}: {exc}") from None
    return pafs.LocalFileSystem(), os.path.abspath(source.removeprefix("file://"))


def _items(filesystem: Any, file: SourceFile, source: str) -> Iterator[tuple[int, Any]]:
    try:
        stream = filesystem.open_input_stream(file.path, compression=file.kind.compression)
    except OSError as exc:
        raise SourceError(f"can't read the source {source!r}: {exc}") from None
    with stream:
        try:
            yield from items_of(stream, file.kind, file.path if source != file.path else source)
        except OSError as exc:  # a broken gzip or zstd frame
            raise SourceError(f"can't read the source {source!r}: {file.name}: {exc}") from None


def learn_schema(filesystem: Any, files: list[SourceFile], folder: bool, source: str) -> pa.Schema:
    """The first pass: every file's keys, as the table's schema."""
    keys = Keys()
    for file in files:
        for line, item in _items(filesystem, file, source):
            keys.add(line, item)
    return file_schema(keys.columns(source), folder)


def file_batches(source: str, failed: list[BaseException] | None = None) -> pa.RecordBatchReader:
    """The rows of a file source as one Arrow stream (with the engine's `ROW_ID`), read twice
    (see stores/files.py): the keys now, the rows as the stream is read. A ChatgateError
    raised while it is read is also put in `failed` (DuckDB reports it as its own)."""
    filesystem, files, folder = source_files(source)
    schema = learn_schema(filesystem, files, folder, source)
    with_ids = schema.append(pa.field(ROW_ID, pa.int64()))

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            for index, file in enumerate(files):
                for chunk in batched(_items(filesystem, file, source)):
                    batch = rows_batch(chunk, schema, file.name if folder else None)
                    ids = pa.array([(index << ROWS_PER_FILE_BITS) + line for line, _ in chunk], pa.int64())
                    yield pa.RecordBatch.from_arrays([*batch.columns, ids], schema=with_ids)
        except ChatgateError as exc:
            if failed is not None:
                failed.append(exc)
            raise

    return pa.RecordBatchReader.from_batches(with_ids, batches())


def open_files(con: Any, source: str) -> Any:
    """The file source as an Ibis table: a temporary DuckDB table holding its rows."""
    failed: list[BaseException] = []
    reader = file_batches(source, failed)
    given = f"chatgate_file_rows_{uuid.uuid4().hex[:12]}"
    name = f"chatgate_file_{uuid.uuid4().hex[:12]}"
    con.con.register(given, reader)
    try:
        con.con.execute(f"CREATE TEMP TABLE {quote_identifier(name)} AS SELECT * FROM {quote_identifier(given)}")
    except Exception:
        if failed:
            raise failed[0] from None
        raise
    finally:
        con.con.unregister(given)
    return con.table(name)
