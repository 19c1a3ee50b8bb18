"""Opening the job's output tables, with one-line errors that name the table and what's wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ChatgateError


class ReportError(ChatgateError):
    """A report can't be made from these tables: the message says which table and why."""


def open_delta(path: str, kind: str) -> Any:
    """The Delta table at `path` as an Arrow source (`kind` names it in errors: summary, quarantine)."""
    try:
        from ..stores.deltalake_tables import delta_source, is_delta
    except ImportError as error:  # pragma: no cover - deltalake comes with the duckdb extra
        raise ReportError(
            f"reading Delta tables needs deltalake: pip install 'chatgate[duckdb]' ({error})"
        ) from error
    local = "://" not in path or path.startswith("file://")
    if local and not Path(path.removeprefix("file://")).exists():
        raise ReportError(f"there is no {kind} table at {path!r}: the path doesn't exist")
    if not is_delta(path):
        raise ReportError(f"the {kind} table at {path!r} isn't a Delta table")
    try:
        return delta_source(path)
    except ValueError as error:
        raise ReportError(f"can't read the {kind} table at {path!r}: {error}") from error


def require_columns(names: list[str], wanted: tuple[str, ...], table: str, kind: str) -> None:
    """Stop unless the table has every column of `wanted`, naming those it lacks."""
    missing = [column for column in wanted if column not in names]
    if missing:
        raise ReportError(f"{table} isn't a chatgate {kind}: it lacks the columns {', '.join(missing)}")
