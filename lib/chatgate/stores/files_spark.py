"""File sources (see stores/files.py) for Spark: the lines are read where they are, judged by stores/files.py.

JSONL files (`.jsonl`, and `.jsonl.gz` and `.jsonl.zst`, which Spark's text reader
decompresses with Hadoop's codecs; Spark 4.1 ships both) are read by `spark.read.text`, split
at "\\n" only (as the embedded engine splits them), so a large plain file is read in parallel
splits. A line's number is where its split starts plus its place in the split:

- each line gets `monotonically_increasing_id()`, consecutive within a task's partition;
- one aggregate counts the lines of each split (file, `_metadata.file_block_start`) and
  keeps its first id; the lines of the earlier splits of its file are its offset;
- line = offset + (id - first id) + 1.

The aggregate and the lines are two scans of the same plan, so they see the same splits
whatever the cluster's size (splits depend on its cores, and can differ from one query to
the next; no numbers are carried over from one query to another). `.json` files (one JSON
array, which no line split can cut) are read whole, one task per file, with
`binaryFile` (Spark's limit: 2 GB a file), and decoded element by element in that task.

`mapInArrow` hands the bytes of each line to `parse_line`, the function the embedded engine
calls. A first pass collects the keys (the schema must be known before the rows are), a
second makes the rows.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from ..errors import ChatgateError, SourceError
from .files import (
    ACCEPTED,
    BATCH_ROWS,
    Item,
    Keys,
    array_items,
    file_kind,
    file_schema,
    nothing_there,
    parse_line,
    relative_name,
    rows_batch,
)
from .files_duckdb import reads_as_files

LINES_SCHEMA = "f string, line long, value binary"
KEYS_SCHEMA = "f string, first long, keys string, objects long, bad long, bad_line long, bad_what string, error string"


def reads_as_files_spark(source: str) -> bool:
    """Is `source` a path (not a catalog name) to a JSONL or JSON file, or a local folder of them?"""
    is_path = "/" in source or "://" in source or source.startswith(".") or os.path.exists(source)
    return is_path and reads_as_files(source)


def refused_file(source: str) -> str | None:
    """Why Spark won't read the local file `source` (its name isn't one chatgate reads), else None."""
    local = source.removeprefix("file://")
    if "://" in local or not os.path.isfile(local) or local.lower().endswith(".parquet") or file_kind(local):
        return None
    return f"can't read the source {source!r}: chatgate reads {ACCEPTED} files, folders of them, and Delta tables"


def file_key(uri: str) -> str:
    """A file's path as Spark names it, comparable whatever its spelling (file:/a, file:///a, %20)."""
    return unquote(urlsplit(uri).path) if "://" in uri or uri.startswith("file:") else uri


def _listed(spark: Any, source: str) -> tuple[list[str], dict[str, str], bool]:
    """The files of `source` (as Spark names them), their names relative to the folder, and
    whether it is a folder."""
    local = source.removeprefix("file://")
    if "://" not in local and not os.path.exists(local):
        raise SourceError(f"can't read the source {source!r}: {nothing_there(source)}")
    if file_kind(source) is not None:
        return [source], {}, False
    rows = (
        spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(source).select("path").collect()
    )
    files = sorted(str(row["path"]) for row in rows if file_kind(str(row["path"])) is not None)
    if not files:
        raise SourceError(f"can't read the source {source!r}: the folder holds no {ACCEPTED} files")
    folder = file_key(source) if "://" in source else os.path.abspath(source.removeprefix("file://"))
    return files, {file_key(f): relative_name(file_key(f), folder) for f in files}, True


def _numbered_lines(spark: Any, files: list[str]) -> Any:
    """The lines of JSONL files as (f, line, value), numbered per file (see the module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    text = spark.read.option("lineSep", "\n").text(files)
    rows = text.select(
        F.col("value").cast("binary").alias("value"),
        F.col("_metadata.file_path").alias("f"),
        F.col("_metadata.file_block_start").alias("b"),
        F.monotonically_increasing_id().alias("id"),
    )
    earlier = Window.partitionBy("f").orderBy("b").rowsBetween(Window.unboundedPreceding, -1)
    splits = rows.groupBy("f", "b").agg(F.count(F.lit(1)).alias("n"), F.min("id").alias("first_id"))
    splits = splits.select("f", "b", "first_id", F.coalesce(F.sum("n").over(earlier), F.lit(0)).alias("before"))
    line = (F.col("before") + F.col("id") - F.col("first_id") + F.lit(1)).alias("line")
    return rows.join(F.broadcast(splits), ["f", "b"]).select("f", line, "value")


def _array_elements(spark: Any, files: list[str]) -> Any:
    """The `.json` files whole, one row each: (f, line = 0, value = the file's bytes)."""
    from pyspark.sql import functions as F

    read = spark.read.format("binaryFile").load(files)
    return read.select(F.col("path").alias("f"), F.lit(0).cast("long").alias("line"), F.col("content").alias("value"))


def _items(f: str, line: int, value: bytes) -> Iterator[tuple[int, Item]]:
    """The numbered items of one row of `_numbered_lines` (a line) or `_array_elements` (a file)."""
    if line == 0:
        return array_items(io.BytesIO(value), file_key(f))
    item = parse_line(value)
    return iter(() if item is None else ((line, item),))


def _rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[str, int, bytes]]:
    for batch in batches:
        yield from zip(*(batch.column(i).to_pylist() for i in range(3)))


def _chunks(rows: Iterator[tuple[str, int, bytes]]) -> Iterator[tuple[str, list[tuple[int, Item]]]]:
    """The items of the rows, `BATCH_ROWS` at a time, each chunk of one file."""
    chunk: list[tuple[int, Item]] = []
    current = ""
    for f, line, value in rows:
        for item in _items(f, line, value):
            if chunk and (f != current or len(chunk) >= BATCH_ROWS):
                yield current, chunk
                chunk = []
            current = f
            chunk.append(item)
    if chunk:
        yield current, chunk


def _keys_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The first pass, in a task: the keys of each file's lines it reads, with the first line."""
    found: dict[str, tuple[int, Keys]] = {}
    error = None
    try:
        for f, line, value in _rows(batches):
            first, keys = found.setdefault(f, (line, Keys()))
            found[f] = (min(first, line), keys)
            for number, item in _items(f, line, value):
                keys.add(number, item)
    except ChatgateError as exc:  # a .json that isn't one array: told by the driver, in one line
        error = str(exc)
    rows = [
        {
            "f": f, "first": first, "keys": json.dumps(list(keys.order)), "objects": keys.objects, "bad": keys.bad,
            "bad_line": keys.first_bad[0] if keys.first_bad else None,
            "bad_what": keys.first_bad[1] if keys.first_bad else None, "error": None,
        }
        for f, (first, keys) in found.items()
    ]
    if error is not None:
        rows.append({"f": "", "first": 0, "keys": "[]", "objects": 0, "bad": 0, "bad_line": None, "bad_what": None, "error": error})
    if rows:
        yield pa.RecordBatch.from_pylist(rows)


def _merged_keys(rows: list[Any], order: list[str], source: str) -> list[str]:
    """The keys of every file, in the order they first appear (files in name order)."""
    errors = [row["error"] for row in rows if row["error"]]
    if errors:
        raise SourceError(errors[0])
    index = {file_key(f): n for n, f in enumerate(order)}
    keys = Keys()
    for row in sorted(rows, key=lambda r: (index.get(file_key(r["f"]), len(index)), r["first"])):
        part = Keys(dict.fromkeys(json.loads(row["keys"])), row["objects"], row["bad"])
        if row["bad_line"] is not None:
            part.first_bad = (row["bad_line"], row["bad_what"])
        keys.merge(part)
    return keys.columns(source)


ZSTD_MISSING = ("zstandard", "zstd")
"""Words of Hadoop's error when its zstd codec has no library (a Hadoop built without it)."""


def zstd_refusal(source: str, error: BaseException) -> SourceError | None:
    """The one line for a `.zst` file this Spark's Hadoop can't decompress, else None."""
    text = str(error).lower()
    if ".zst" not in source.lower() and ".zst" not in text:
        return None
    if not any(word in text for word in ZSTD_MISSING) or ("native" not in text and "codec" not in text):
        return None
    return SourceError(
        f"can't read the source {source!r}: this Spark's Hadoop can't decompress .zst files; "
        "decompress it first (zstd -d), or gzip it (.jsonl.gz), or check it with --engine duckdb"
    )


def open_files_spark(spark: Any, source: str) -> Any:
    """The file source as a DataFrame of the table stores/files.py describes.

    `.jsonl.zst` files are decompressed by Hadoop's `ZStandardCodec`, which Spark 4.1's own
    Hadoop has; where a cluster's Hadoop lacks it, the read stops with `zstd_refusal`'s line."""
    try:
        return _open_files_spark(spark, source)
    except ChatgateError:
        raise
    except Exception as exc:
        refusal = zstd_refusal(source, exc)
        if refusal is not None:
            raise refusal from exc
        raise


def _open_files_spark(spark: Any, source: str) -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    files, names, folder = _listed(spark, source)
    lines = [f for f in files if not file_kind(f).array]  # type: ignore[union-attr]
    arrays = [f for f in files if file_kind(f).array]  # type: ignore[union-attr]
    parts = ([_numbered_lines(spark, lines)] if lines else []) + ([_array_elements(spark, arrays)] if arrays else [])
    read = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    keys = _merged_keys(read.mapInArrow(_keys_of, KEYS_SCHEMA).collect(), files, source)
    schema = file_schema(keys, folder)

    positional = [f"_{i}" for i in range(len(schema))]

    def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for f, chunk in _chunks(_rows(batches)):
            batch = rows_batch(chunk, schema, names.get(file_key(f)) if folder else None)
            yield pa.RecordBatch.from_arrays(batch.columns, names=positional)

    fields = [StructField(f"_{i}", StringType()) for i in range(len(keys))] + [StructField(f"_{len(keys)}", LongType())]
    fields += [StructField(f"_{len(keys) + 1}", StringType())] if folder else []
    return read.mapInArrow(rows_of, StructType(fields)).toDF(*schema.names)
