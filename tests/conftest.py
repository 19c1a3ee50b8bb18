"""Shared fixtures: one local SparkSession (with Delta) for every test marked `spark`."""

from __future__ import annotations

import pytest

# tests/typing holds files for mypy to read (test_signatures.py runs it), not modules to import.
collect_ignore = ["typing"]

SPARK_TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.session.timeZone": "UTC",
}


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession with Delta Lake, shared by the whole test session."""
    from chatgate.engines.spark.session import get_spark

    session = get_spark(app_name="chatgate-tests", master="local[2]", extra_conf=SPARK_TEST_CONF)
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()


@pytest.fixture(params=["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def engine(request):
    """The job's engine name: each test that takes it runs on both."""
    return request.param


@pytest.fixture
def backend(engine, request):
    """The lakehouse engine `engine` names (Spark on the shared session)."""
    if engine == "spark":
        from chatgate.engines.spark import SparkEngine

        return SparkEngine(spark=request.getfixturevalue("spark"))
    from chatgate.engines.ibis.duckdb import DuckDBEngine

    return DuckDBEngine()
