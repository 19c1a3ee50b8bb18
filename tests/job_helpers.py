"""Helpers of the job tests: a config writing every output under one folder, and reading a Delta table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from chatgate.job.config import JobConfig, build_config
from chatgate.stores.deltalake_tables import delta_source


def job_config(tmp_path: Path, source: str, engine: str, checks: dict[str, Any], **overrides: Any) -> JobConfig:
    """Run `run-1` of the messages column of `source`, its outputs under `tmp_path`; flags override."""
    raw = {
        "source": source,
        "engine": engine,
        "columns": ["messages"],
        "checks": checks,
        "outputs": {name: str(tmp_path / name) for name in ("quarantine", "summary", "valid")},
        "run_id": "run-1",
    }
    return build_config(raw, overrides)


def read_delta(path: str | Path) -> pa.Table:
    """A Delta table's rows (read without the dataset that can abort the process at exit)."""
    return delta_source(str(path)).to_table()
