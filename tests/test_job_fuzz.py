"""Fuzzing the whole job on each engine: drawn tables and options, rows always conserved.

Bounded in `make test`; `make fuzz` draws many more (CHATGATE_FUZZ_EXAMPLES).
Each drawn table holds valid, broken, garbage and missing values with repeats; the
job's outputs must hold every source row exactly once, in quarantine with the code
the plain reference gives it, or in the valid table.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate import first_problem
from chatgate.job.config import build_config
from chatgate.job.runner import run
from chatgate.stores.deltalake_tables import delta_source
from strategies import cases, json_text

EXAMPLES = int(os.environ.get("CHATGATE_FUZZ_EXAMPLES", "0"))
BOUNDED = {"duckdb": 10, "spark": 3}


@st.composite
def tables(draw):
    """A drawn case as a table with repeats (the same value on several rows), and a dedup mode."""
    case = draw(cases(max_size=10))
    values = [json_text(v, raw) for v, raw in zip(case.values, case.raw)]
    repeats = draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=6)) if values else []
    values += [values[i] for i in repeats]
    return case.kwargs, values, draw(st.sampled_from(["auto", "on", "off"]))


def _job_conserves_rows(engine: str, backend, drawn) -> None:
    kwargs, values, dedup = drawn
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp)
        table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "messages": pa.array(values, pa.string())})
        write_deltalake(str(lake / "chats"), table)
        checks = {**kwargs, "roles": list(kwargs["roles"])}
        config = build_config(
            {
                "source": str(lake / "chats"),
                "engine": engine,
                "columns": ["messages"],
                "checks": checks,
                "dedup": dedup,
                "outputs": {k: str(lake / k) for k in ("quarantine", "summary", "valid")},
                "run_id": "fuzz",
            },
            {},
        )
        result = run(config, backend)
        quarantine = delta_source(str(lake / "quarantine")).to_table()
        valid = delta_source(str(lake / "valid")).to_table()
        expected = {i: code for i, v in enumerate(values) if (code := first_problem(v, **kwargs)) is not None}
        assert dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist())) == expected
        assert quarantine.num_rows == len(expected)
        assert sorted(valid["id"].to_pylist()) == sorted(set(range(len(values))) - set(expected))
        [step] = result.steps
        assert (step.judged.units, step.judged.failed) == (len(values), len(expected))


def _settings(engine: str):
    return settings(
        max_examples=EXAMPLES or BOUNDED[engine],
        deadline=None,
        derandomize=not EXAMPLES,  # the same draws in every CI run; `make fuzz` explores
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@_settings("duckdb")
@given(drawn=tables())
def test_embedded_job_conserves_rows(drawn):
    from chatgate.engines.ibis.duckdb import DuckDBEngine

    _job_conserves_rows("duckdb", DuckDBEngine(), drawn)


@pytest.mark.spark
@_settings("spark")
@given(drawn=tables())
def test_spark_job_conserves_rows(spark, drawn):
    from chatgate.engines.spark import SparkEngine

    _job_conserves_rows("spark", SparkEngine(spark=spark), drawn)
