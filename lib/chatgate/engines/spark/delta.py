"""Delta on Spark: how the Spark engine names tables, quotes run ids and spots lost commit races."""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql import functions as F

from .keys import column_ref

CONCURRENT_WRITE_ERRORS = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "DELTA_CONCURRENT_",
    "DELTA_PROTOCOL_CHANGED",
    "DELTA_METADATA_CHANGED",
)
"""Delta's errors for a commit that lost the race with another writer's (names and error classes)."""

NAME_NEEDS_MAPPING = set(" ,;{}()\n\t=")
"""Characters Delta refuses in column names unless the table maps names to physical columns."""

COLUMN_MAPPING = {
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}

HISTORY_SEARCHED = 100
"""How far back in a table's history a write looks for its own commit (others may commit meanwhile)."""


def is_path(target: str) -> bool:
    """A Delta path (local or URI) rather than a catalog table name such as db.chats."""
    return "/" in target or "://" in target or target.startswith(".") or os.path.exists(target)


def first_line(error: BaseException) -> str:
    """The first non-blank line of an error's message (Spark's start with a newline)."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)


def equals_column(column: str, value: str) -> Any:
    """`column = value` as a Column: the value never passes through SQL text."""
    return column_ref(column) == F.lit(value)


def equals_sql(column: str, value: str) -> str:
    """`column = value` as SQL text (what replaceWhere takes), the value carried as hex digits."""
    escaped_column = "`" + column.replace("`", "``") + "`"
    return f"{escaped_column} = decode(unhex('{value.encode('utf-8').hex()}'), 'UTF-8')"


