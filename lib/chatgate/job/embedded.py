"""Settings of the embedded engine (DuckDB): its memory before it spills, its threads, where it spills."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


@dataclass(frozen=True)
class EmbeddedConfig:
    """Settings of the embedded engine: None takes chatgate's default (see `resolved`)."""

    memory_limit: str | None = None  # e.g. "1GB": past it, DuckDB spills to temp_directory
    threads: int | None = None  # DuckDB's threads and the check's worker processes
    temp_directory: str | None = None

    def __post_init__(self) -> None:
        if self.memory_limit is not None and not _MEMORY.fullmatch(str(self.memory_limit)):
            raise ConfigError(f"memory_limit: {self.memory_limit!r} isn't a size such as 512MB or 2GB")
        if self.temp_directory is not None and not str(self.temp_directory).strip():
            raise ConfigError(f"temp_directory: {self.temp_directory!r} is empty; name a folder, or leave the key out")
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise ConfigError(f"threads: {self.threads!r} isn't a number of threads (1 or more)")

    def settings(self) -> dict[str, Any]:
        """The settings given (in the config or as flags)."""
        return {k: v for k, v in vars(self).items() if v is not None}

    def resolved(self) -> dict[str, Any]:
        """Every setting, chatgate's defaults where none was given."""
        return {
            "memory_limit": DEFAULT_MEMORY_LIMIT if self.memory_limit is None else self.memory_limit,
            "threads": (os.cpu_count() or 1) if self.threads is None else self.threads,
            "temp_directory": default_temp_directory() if self.temp_directory is None else self.temp_directory,
        }


DEFAULT_MEMORY_LIMIT = "1GB"
"""DuckDB's memory before it spills: the job's peak stays near it whatever the table's size."""


def default_temp_directory() -> str:
    """Where DuckDB spills by default: a folder of the system's temp directory, never the working one."""
    return os.path.join(tempfile.gettempdir(), "chatgate-duckdb")


_MEMORY = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)
