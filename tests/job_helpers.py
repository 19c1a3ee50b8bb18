"""Helpers of the job tests: a config writing every output under one folder, and reading a Delta table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from chatgate.job.config import JobConfig, build_config
from chatgate.stores.deltalake_tables import delta_source

SPARK_SLOW = ["duckdb", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow])]
"""The `engine` of a test whose Spark case runs with the slow tests (`make test-all`): what it
pins on Spark is engine-independent, or another test in `make test` runs its Spark path."""


def engine_cases(cases: Sequence[tuple[Any, ...]], spark_fast: int) -> list[Any]:
    """`(engine, *case)` parameters: every case on DuckDB, and on Spark the first `spark_fast`
    in `make test`, the others with the slow tests (as `SPARK_SLOW`)."""
    duckdb = [pytest.param("duckdb", *case) for case in cases]
    spark = [
        pytest.param("spark", *case, marks=[pytest.mark.spark, *([pytest.mark.slow] if i >= spark_fast else [])])
        for i, case in enumerate(cases)
    ]
    return duckdb + spark


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


def written_by(config: JobConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What a run of `config` wrote, to compare two runs: its quarantine by id (without the
    time it was checked at) and its summary's counts."""
    quarantine = read_delta(config.outputs.quarantine).drop_columns(["pb_checked_at_"]).sort_by("id")
    summary = read_delta(config.outputs.summary).select(["units", "failed", "reasons", "distinct_values"])
    return quarantine.to_pylist(), summary.to_pylist()
