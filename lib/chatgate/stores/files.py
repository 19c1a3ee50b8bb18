"""Files as sources: JSONL and JSON arrays, judged line by line by one parser on every engine.

A source named `chats.jsonl`, `chats.jsonl.gz`, `chats.jsonl.zst` (one JSON object a line)
or `chats.json` (a top-level JSON array of objects, as FastChat and LLaMA-Factory ship) is
read as a table; so is a folder of such files (read recursively, each file by its name).
Parquet files and folders are read as they always were (see `deltalake_tables.open_table`).

The table a file gives, on every engine alike (the functions here decide it; the engines
only move bytes to them):

- one column per top-level key found in ANY line, in the order the keys first appear:
  a key that only a late line has is a column too, null on the lines without it. This
  needs the keys before the first row is made (Arrow streams and Spark's `mapInArrow` are
  typed up front), so a file is read twice: once for its keys, once for its rows;
- every such column is text. A JSON string is kept as the string; any other value
  (an object, an array, a number, true/false) as its JSON text; null and a missing key
  are null. So a chat column is JSON text whatever each line holds (a string `content`
  on one line, a list of parts on the next never fails the read), and the engines check
  JSON-text chat columns as they check any other;
- `pb_line_` (`names.LINE`): the row's 1-based line in its file, blank lines counted;
  for a JSON array, the element's 1-based index. With a folder, `pb_file_` (`names.FILE`):
  the file, relative to the folder. Both are source columns: they reach the quarantine
  and the valid rows;
- a blank line is no row (its number is still counted);
- a line that isn't a JSON object (invalid JSON, text that isn't UTF-8, a bare list, a
  number) is a row all the same: every column holds that line's text as a JSON *string*,
  which no check reads as a conversation, so its chat columns fail with `not_messages`
  and the quarantine shows the line as it was, with its number. A JSON array's element
  that isn't an object is such a row too; but an array that isn't valid JSON stops the
  read (one line naming the element), as nothing after the error can be trusted.

Nothing holds a file's parsed rows at once: lines go through `BATCH_ROWS` at a time.
"""

from __future__ import annotations

import codecs
import json
import os
import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import pyarrow as pa

from ..errors import ConfigError, SourceError, nearest
from ..names import FILE, FILE_SOURCE_COLUMNS, LINE
from .base import is_local_path

LINE_FILES = {".jsonl.gz": "gzip", ".jsonl.zst": "zstd", ".jsonl": None}
"""One JSON object a line, and how each is compressed (longest names first)."""

ARRAY_FILES = (".json",)
"""A top-level JSON array of objects."""

ACCEPTED = ".jsonl, .jsonl.gz, .jsonl.zst, .json (an array of objects) or .parquet"
"""The file names a source may have, for the errors that list them."""

BATCH_ROWS = 2_000
"""Rows per Arrow batch: the parsed lines held at once."""

READ_BYTES = 1 << 20

NO_VERSIONS = "{source!r} is a file source, which has no versions: {which} needs a Delta table"


@dataclass(frozen=True)
class FileKind:
    """How a file's rows are laid out (lines or one array) and compressed."""

    array: bool
    compression: str | None = None


def file_kind(name: str) -> FileKind | None:
    """The kind of a file by its name (case ignored), None when it isn't one chatgate reads as rows."""
    lower = name.lower().rstrip("/")
    for suffix, compression in LINE_FILES.items():
        if lower.endswith(suffix):
            return FileKind(array=False, compression=compression)
    if lower.endswith(ARRAY_FILES):
        return FileKind(array=True)
    return None


def no_versions(source: str, which: str = "source_version") -> ConfigError:
    """The one-line refusal of a version (or `--since`) asked of a file source."""
    return ConfigError(NO_VERSIONS.format(source=source, which=which))


def nothing_there(path: str) -> str:
    """Why a path that doesn't exist can't be read, with the nearest name beside it when there is one
    (a local path only: listing a bucket would cost a request)."""
    plain = "no file or folder is there"
    parent, name = os.path.split(path.removeprefix("file://").rstrip("/"))
    if not is_local_path(path) or not name:
        return plain
    try:
        names = [n for n in os.listdir(parent or ".") if name.startswith(".") or not n.startswith(".")]
    except OSError:
        return plain
    near = nearest(name, names)
    if near is None:
        return plain
    scheme = "file://" if path.startswith("file://") else ""
    return f"{plain}; did you mean {scheme + os.path.join(parent, near)!r}?"


# --- One line, one row ------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """A line (or array element) that isn't a JSON object: its text, and what it is instead."""

    text: str
    what: str

    @property
    def cell(self) -> str:
        """What every column of its row holds: the text as a JSON string (a check reads no chat in it)."""
        return json.dumps(self.text, ensure_ascii=False)


Item = dict[str, Any] | Bad


def parse_line(raw: bytes) -> Item | None:
    """A line of a JSONL file judged: its object, a `Bad` line, or None for a blank line."""
    text = raw.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except UnicodeDecodeError:
        return Bad(text.decode("utf-8", "replace"), "text that isn't UTF-8")
    except (ValueError, RecursionError):
        return Bad(text.decode("utf-8", "replace"), "invalid JSON")
    return judged_value(value, lambda: text.decode("utf-8", "replace"))


def judged_value(value: Any, text: Any) -> Item:
    """A decoded line or element: the object, else a `Bad` one with `text()` and its kind."""
    if isinstance(value, dict):
        return value
    return Bad(text(), f"a JSON {_json_kind(value)}, not an object")


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "boolean" if isinstance(value, bool) else "number"


def cell(value: Any) -> str | None:
    """A column's value: a JSON string as it is, null as null, anything else as its JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value if _utf8(value) else value.encode("utf-8", "replace").decode("utf-8")
    try:
        text = json.dumps(value, ensure_ascii=False)
    except ValueError:  # a circular structure can't come from JSON; be safe anyway
        return None
    # A lone surrogate (JSON's "\ud800") can't be UTF-8: escaped, it reads back the same.
    return text if _utf8(text) else json.dumps(value)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def file_schema(keys: Iterable[str], folder: bool) -> pa.Schema:
    """The table of a file source: a text column per key, the line, and with a folder the file."""
    fields = [pa.field(key, pa.string()) for key in keys] + [pa.field(LINE, pa.int64())]
    return pa.schema(fields + ([pa.field(FILE, pa.string())] if folder else []))


def rows_batch(items: list[tuple[int, Item]], schema: pa.Schema, file: str | None) -> pa.RecordBatch:
    """The rows of numbered items (line, object or `Bad`) in `schema` (see `file_schema`)."""
    keys = [name for name in schema.names if name not in FILE_SOURCE_COLUMNS]
    columns: list[list[str | None]] = [[] for _ in keys]
    for _, item in items:
        if isinstance(item, Bad):
            bad = item.cell
            for values in columns:
                values.append(bad)
        else:
            for key, values in zip(keys, columns):
                values.append(cell(item.get(key)))
    arrays = [pa.array(values, pa.string()) for values in columns]
    arrays.append(pa.array([line for line, _ in items], pa.int64()))
    if FILE in schema.names:
        arrays.append(pa.array([file] * len(items), pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass
class Keys:
    """The keys of a file's objects, in the order they first appear, and what was found besides."""

    order: dict[str, None] = field(default_factory=dict)
    objects: int = 0
    bad: int = 0
    first_bad: tuple[int, str] | None = None

    def add(self, line: int, item: Item) -> None:
        if isinstance(item, Bad):
            self.bad += 1
            if self.first_bad is None:
                self.first_bad = (line, item.what)
            return
        self.objects += 1
        for key in item:
            if key not in self.order:
                self.order[key] = None

    def merge(self, other: Keys) -> None:
        for key in other.order:
            if key not in self.order:
                self.order[key] = None
        self.objects += other.objects
        self.bad += other.bad
        self.first_bad = self.first_bad or other.first_bad

    def columns(self, source: str) -> list[str]:
        """The key columns; SourceError when there are none, or a key clashes with another or ours."""
        if not self.order:
            if self.first_bad is not None:
                line, what = self.first_bad
                raise SourceError(
                    f"can't read the source {source!r}: none of its {self.bad} rows is a JSON object "
                    f"(row {line} is {what}), so it has no columns; chatgate reads one object a line "
                    "(JSONL) or an array of objects (.json)"
                )
            raise SourceError(
                f"can't read the source {source!r}: it holds no rows (empty, or blank lines only), "
                "so it has no columns to check"
            )
        seen: dict[str, str] = {}
        for key in self.order:
            if key.lower() in {c.lower() for c in FILE_SOURCE_COLUMNS}:
                raise SourceError(
                    f"can't read the source {source!r}: its key {key!r} is a column chatgate adds to a file's rows; rename it"
                )
            if key.lower() in seen:
                raise SourceError(
                    f"can't read the source {source!r}: its keys {seen[key.lower()]!r} and {key!r} differ only in case, "
                    "and the engines compare column names ignoring case; rename one"
                )
            seen[key.lower()] = key
        return list(self.order)


# --- Files to numbered items --------------------------------------------------------------------


def split_lines(stream: IO[bytes] | Any, size: int = READ_BYTES) -> Iterator[bytes]:
    """The lines of a byte stream (split at "\\n" only, as Spark's text reader is told to), read
    `size` bytes at a time; a last line without "\\n" is a line, an empty end isn't."""
    pending: list[bytes] = []
    while True:
        data = stream.read(size)
        if not data:
            break
        data = bytes(data)
        start = 0
        end = data.find(b"\n")
        while end >= 0:
            if pending:
                pending.append(data[start:end])
                yield b"".join(pending)
                pending = []
            else:
                yield data[start:end]
            start = end + 1
            end = data.find(b"\n", start)
        if start < len(data):
            pending.append(data[start:])
    if pending:
        yield b"".join(pending)


def line_items(lines: Iterable[bytes], first: int = 1) -> Iterator[tuple[int, Item]]:
    """The numbered items of JSONL lines (blank lines skipped, still counted)."""
    for number, raw in enumerate(lines, start=first):
        item = parse_line(raw)
        if item is not None:
            yield number, item


def array_items(stream: IO[bytes] | Any, where: str, size: int = READ_BYTES) -> Iterator[tuple[int, Item]]:
    """The elements of a top-level JSON array in a byte stream, numbered from 1, one at a time.

    SourceError, naming the element, when the text isn't one JSON array."""
    reader = _ArrayReader(stream, where, size)
    yield from reader.items()


class _ArrayReader:
    """A JSON array decoded element by element from a stream: the text of one element at a time
    is held (an element not yet whole makes it read more), never the whole array's objects."""

    def __init__(self, stream: Any, where: str, size: int) -> None:
        self.stream = stream
        self.where = where
        self.size = size
        self.text = ""
        self.pos = 0
        self.eof = False
        self.decode = codecs.getincrementaldecoder("utf-8-sig")(errors="replace").decode
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        data = self.stream.read(self.size)
        if self.pos > 0:
            self.text, self.pos = self.text[self.pos:], 0
        if not data:
            self.eof = True
            self.text += self.decode(b"", final=True)
            return False
        self.text += self.decode(bytes(data))
        return True

    def _next_char(self) -> str:
        """The next character that isn't whitespace ("" at the end), not consumed."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def _fail(self, what: str) -> SourceError:
        return SourceError(f"can't read the source {self.where!r}: {what}")

    def items(self) -> Iterator[tuple[int, Item]]:
        first = self._next_char()
        if first != "[":
            found = {"{": "an object", "": "nothing"}.get(first, f"{first!r}")
            raise self._fail(
                f"a .json source holds one JSON array of objects, and this one starts with {found}; "
                "for one object a line, name it .jsonl"
            )
        self.pos += 1
        index = 0
        if self._next_char() == "]":
            self.pos += 1
        else:
            while True:
                index += 1
                value = self._element(index)
                yield index, judged_value(value, lambda v=value: json.dumps(v, ensure_ascii=False))
                sep = self._next_char()
                self.pos += 1
                if sep == "]":
                    break
                if sep != ",":
                    raise self._fail(f"invalid JSON after element {index} of its array (expected ',' or ']')")
        if self._next_char() != "":
            raise self._fail(f"text follows its JSON array's closing ']' (after element {index})")

    def _element(self, index: int) -> Any:
        """Decode the element at the cursor, reading more until it is whole."""
        if self._next_char() == "":
            raise self._fail(f"its JSON array ends inside element {index} (is the file cut short?)")
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                if self._more():
                    continue
                raise self._fail(f"invalid JSON in element {index} of its array: {error.msg}") from None
            except RecursionError:
                raise self._fail(f"element {index} of its array is nested too deep to read") from None
            if end == len(self.text) and self._more():
                continue  # a number (or true, null) may go on in the next read
            self.pos = end
            return value


def items_of(stream: Any, kind: FileKind, where: str) -> Iterator[tuple[int, Item]]:
    """The numbered items of one (decompressed) file stream."""
    if kind.array:
        return array_items(stream, where)
    return line_items(split_lines(stream))


def batched(items: Iterable[tuple[int, Item]], rows: int = BATCH_ROWS) -> Iterator[list[tuple[int, Item]]]:
    chunk: list[tuple[int, Item]] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= rows:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def relative_name(path: str, folder: str) -> str:
    """`path` (a file found in `folder`) relative to that folder, with "/" between its parts."""
    path, folder = path.replace(os.sep, "/"), folder.replace(os.sep, "/").rstrip("/")
    if path.startswith(folder + "/"):
        return path[len(folder) + 1:]
    return posixpath.basename(path)
