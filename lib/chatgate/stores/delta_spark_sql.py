"""Delta on Spark: how the delta-spark store names tables, quotes run ids and spots lost commit races.

The store speaks to Delta through SQL (`DESCRIBE HISTORY`, `DELETE FROM`) rather than
delta-spark's Python `DeltaTable`: over Spark Connect, `DeltaTable` needs Delta's Connect
plugin on the server, while Delta's SQL needs only its session extension, so one code
path serves classic and Connect sessions. No text of a name or run id reaches SQL
unquoted: names are backquoted part by part, run ids travel as hex digits.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from pyspark.errors import AnalysisException

from ..engines.spark.errors import error_text, java_throwables, simple_class, without_source
from ..errors import error_chain
from .deltalake_errors import corrupt_commit, missing_commits

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

NOT_A_DELTA_PATH = ("DELTA_TABLE_ONLY_OPERATION", "DELTA_MISSING_DELTA_TABLE", "DELTA_TABLE_NOT_FOUND", "PATH_NOT_FOUND")
"""Delta's error conditions for a path without a Delta table (nothing there, other files, a file):
DESCRIBE HISTORY's, other commands', and those a read or a DELETE of `delta.`path`` gives."""

HISTORY_SEARCHED = 100
"""How far back in a table's history a write looks for its own commit (others may commit meanwhile)."""


def is_path(target: str) -> bool:
    """A Delta path (local or URI) rather than a catalog table name such as db.chats."""
    return "/" in target or "://" in target or target.startswith(".") or os.path.exists(target)


_GAP = re.compile(r"Versions \((\d+), (\d+)\) are not contiguous")
_LOG_FILE = re.compile(r"_delta_log/(\d{20}\.json)")


def delta_log_problem(error: BaseException) -> str | None:
    """What is wrong with a Delta log, when Spark's `error` (or one it chains to) says it is corrupt."""
    for link in error_chain(error):
        text = error_text(link)
        gap = _GAP.search(text)
        if gap or "DELTA_VERSIONS_NOT_CONTIGUOUS" in text:
            return missing_commits(int(gap.group(1)), int(gap.group(2))) if gap else missing_commits(None, None)
        thrown = java_throwables(link)
        if thrown and "FAILED_READ_FILE" in thrown[0][1]:
            commit = _LOG_FILE.search(thrown[0][1])
            if commit:
                root_class, root = thrown[-1]
                cause = f"{simple_class(root_class)}: {without_source(root)}"
                return corrupt_commit(f"_delta_log/{commit.group(1)}", cause)
    return None


def equals_sql(column: str, value: str) -> str:
    """`column = value` as SQL text (replaceWhere, DELETE), the value carried as hex digits."""
    return f"{quoted(column)} = decode(unhex('{value.encode('utf-8').hex()}'), 'UTF-8')"


def quoted(part: str) -> str:
    """One SQL identifier part in backquotes, its backquotes doubled."""
    return "`" + part.replace("`", "``") + "`"


def path_ref(path: str) -> str:
    """The SQL name of the Delta table at `path`: delta.`path`.

    Delta takes only absolute paths there (delta.`lake/chats` is "table not found"), so a
    relative local path is made absolute from the working directory, as the reads and
    writes of a path resolve it.
    """
    if "://" not in path and not path.startswith("file:"):
        path = os.path.abspath(path)
    return f"delta.{quoted(path)}"


def table_ref(parts: Iterable[str | None]) -> str:
    """The SQL name of a catalog table from its parts (catalog, namespace..., name), each quoted."""
    return ".".join(quoted(part) for part in parts if part is not None)


def is_not_a_delta_path(error: BaseException) -> bool:
    """Is `error` Delta saying there's no Delta table at a path (rather than failing to look)?"""
    return isinstance(error, AnalysisException) and error.getCondition() in NOT_A_DELTA_PATH
