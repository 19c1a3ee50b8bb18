"""The Spark engine over Spark Connect gives what it gives on the classic session.

A local Spark Connect server (pyspark's own, with Delta's jars and settings) is
started once for this module. The Connect side runs in a child process (see
tests/spark_connect.py for why); the classic side on the shared `spark` session.
Each test compares the two: the job's Delta outputs row by row, `Validate`'s counts,
reasons and extract, the engine's Delta I/O on catalog tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate.engines.spark.session import delta_jars
from chatgate.sample import chat_table
from job_helpers import read_delta
from spark_connect import (
    CHECKS,
    ConnectServer,
    catalog_report,
    client,
    java_missing,
    job_report,
    server_jar,
    validate_report,
)

pytestmark = pytest.mark.spark

OUTPUTS = ("quarantine", "valid", "summary")
TIMES = ("pb_checked_at_", "started_at", "finished_at")
"""Columns that hold when a run ran: the only ones allowed to differ between the sessions."""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Spark Connect server for this module; its `url` waits until it listens."""
    if java_missing():
        pytest.skip("no java on this machine: the Spark Connect server can't start")
    if server_jar() is None:
        pytest.skip("this pyspark's jars hold no Spark Connect server (spark-connect_*.jar)")
    jars = delta_jars()
    if not jars:
        pytest.skip("Delta's jars aren't in .cache/jars (make jars)")
    connect_server = ConnectServer(tmp_path_factory.mktemp("spark-connect"), jars)
    yield connect_server
    connect_server.stop()


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A small Delta table whose failing rows have several codes (repeated values among them)."""
    path = str(tmp_path_factory.mktemp("connect-source") / "chats")
    write_deltalake(path, chat_table(240, seed=5, duplicate_fraction=0.3, defect_fraction=0.3))
    return path


def _same_json(value):
    """`value` as the child process reports it (tuples become lists)."""
    return json.loads(json.dumps(value))


def _rows(path) -> list[dict]:
    """A Delta table's rows without the run's times, in a fixed order."""
    table = read_delta(path)
    table = table.drop_columns([c for c in TIMES if c in table.column_names])
    return sorted(table.to_pylist(), key=lambda row: json.dumps(row, sort_keys=True, default=str))


def _outputs(folder) -> dict[str, list[dict]]:
    return {name: _rows(folder / name) for name in OUTPUTS}


def _rerun_with_the_command_line(url: str, source: str, folder) -> None:
    """`chatgate run --engine spark` with $SPARK_REMOTE: the job's own session is a Connect one."""
    flags = ["--engine", "spark", "--source", source, "--column", "messages", "--run-id", "run-1", "--quiet"]
    flags += [f"--{name.replace('_', '-')}={value}" for name, value in CHECKS.items()]
    flags += [f"--{name}={folder / name}" for name in OUTPUTS]
    done = subprocess.run(
        [sys.executable, "-m", "chatgate", "run", *flags],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SPARK_REMOTE": url},
    )
    assert done.returncode == 0, done.stderr[-4000:]


def _job_both_ways(tmp_path, spark, server, source) -> dict[str, list[dict]]:
    """The job on the classic session and through Connect: the outputs, the same both ways."""
    classic = job_report(spark, source, str(tmp_path / "classic"))
    expected = _outputs(tmp_path / "classic")
    # The check really failed rows of several codes, and passed others.
    assert len({row["pb_reason_"] for row in expected["quarantine"]}) >= 4
    assert expected["valid"] and len(expected["summary"]) == 1

    connect = client(server.url, "job", source, str(tmp_path / "connect"))
    assert connect == _same_json(classic)
    assert _outputs(tmp_path / "connect") == expected
    return expected


def test_the_job_through_spark_connect_writes_what_the_classic_session_writes(tmp_path, spark, server, source):
    _job_both_ways(tmp_path, spark, server, source)


@pytest.mark.slow  # a third Python process and session: reruns on Spark are in make test through tests/test_job.py
def test_a_rerun_through_spark_remote_replaces_its_rows(tmp_path, spark, server, source):
    expected = _job_both_ways(tmp_path, spark, server, source)
    # A rerun of run-1 through Connect replaces its rows: nothing is duplicated.
    _rerun_with_the_command_line(server.url, source, tmp_path / "connect")
    assert _outputs(tmp_path / "connect") == expected
    operations = [commit["operation"] for commit in DeltaTable(str(tmp_path / "connect" / "summary")).history()]
    # Newest first: the rerun's summary write, after the DELETE that made the first run's summary
    # stop counting as complete (delete_run, in SQL over Connect), after the first write.
    assert operations == ["WRITE", "DELETE", "WRITE"]


def test_validate_through_spark_connect_finds_what_the_classic_session_finds(spark, server, source):
    classic = validate_report(spark, source)
    assert classic["n_failed"] == len(classic["extract"]) > 0
    assert len(classic["reasons"]) >= 4
    assert client(server.url, "validate", source) == _same_json(classic)


def _classic_catalog_report(spark, location) -> dict:
    """The engine's Delta I/O on catalog tables of the classic session, checked."""
    classic = catalog_report(spark, location)
    assert classic["columns"] == ["run_id", "n"]
    assert classic["rows"] == [["run-1", 1], ["run-1", 2]]
    assert classic["absent"] is None
    assert "isn't a Delta table" in classic["refused"]
    return classic


def test_catalog_tables_on_the_classic_session(tmp_path, spark):
    _classic_catalog_report(spark, str(tmp_path / "classic"))


@pytest.mark.slow  # another client process; the classic session's half is the test above
def test_catalog_tables_through_spark_connect_as_on_the_classic_session(tmp_path, spark, server):
    classic = _classic_catalog_report(spark, str(tmp_path / "classic"))
    assert client(server.url, "catalog", str(tmp_path / "connect")) == _same_json(classic)


def test_a_connect_session_is_what_spark_remote_asks_for(server):
    """With $SPARK_REMOTE, `get_spark` (the job's default session) connects to that server."""
    script = (
        "from chatgate.engines.spark.session import get_spark; "
        "s = get_spark(); print(type(s).__module__, s.range(3).count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARK_REMOTE": server.url},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == ["pyspark.sql.connect.session", "3"]

