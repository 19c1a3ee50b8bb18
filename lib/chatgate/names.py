"""The column names chatgate adds to tables, declared once; a source can't already have one.

Engines compare names ignoring case (Spark and DuckDB do by default), so the
clash check does too.
"""

from __future__ import annotations

from collections.abc import Iterable

REASON = "pb_reason_"
"""The problem code of a row (null where it passes)."""

ROW_NUMBER = "_row_num_"
"""The 1-based row number of a failing row in the API's extracts."""

STEP = "pb_step_"
COLUMN = "pb_column_"
RUN_ID = "pb_run_id_"
CHECKED_AT = "pb_checked_at_"
MESSAGE = "pb_message_"
"""The 0-based index of the message where a quarantined row's problem is (null: the whole value)."""

FIXES = "pb_fixes_"
"""The repairs applied to a row, in the order applied (the job's fixed rows: those that made it pass)."""
REASON_BEFORE = "pb_reason_before_"
"""A fixed row's problem code before its repairs."""

REASONS = "pb_reasons_"
"""Every problem of a failing row (its code and message index; a dataset row's, its column too):
the per-turn audit of the API's `turns="all"`."""

LINE = "pb_line_"
"""Where a row of a file source (JSONL, JSON array) is: the 1-based line of the file (blank lines
counted), or for a JSON array the 1-based index of its element. A source column like any other:
it flows to the quarantine and the valid rows."""

FILE = "pb_file_"
"""The file a row came from when the source is a folder of files, relative to that folder."""

FILE_SOURCE_COLUMNS = (LINE, FILE)
"""What a file source adds to its keys; a key of the file with one of these names is refused."""

STEP_REASON_PREFIX = "__pb_reason_"
"""The job's working column of step n is STEP_REASON_PREFIX + n."""

API_RESERVED = (ROW_NUMBER, REASON, FIXES, REASONS)
"""What the API's results add."""

JOB_RESERVED = (REASON, MESSAGE, REASONS, STEP, COLUMN, RUN_ID, CHECKED_AT)
"""What the job's outputs add (and its working columns, by prefix)."""


def reserved_clash(columns: Iterable[str], reserved: Iterable[str], prefix: str | None = None) -> str | None:
    """The first of `columns` that is one of `reserved` (or starts with `prefix`), ignoring case."""
    taken = {name.lower() for name in reserved}
    for name in columns:
        if name.lower() in taken or (prefix is not None and name.lower().startswith(prefix)):
            return name
    return None
