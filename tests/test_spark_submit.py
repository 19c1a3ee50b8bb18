"""End to end: `spark-submit jobs/validate_chat.py` on a generated Delta table, outputs read back.

The table holds every reason code and about 30% duplicate values. The outputs are
checked row by row against the reference check, and the README's Spark SQL runs
over them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate import first_problem
from chatgate.engines.spark.session import delta_jars
from chatgate.rules import REASONS
from chatgate.sample import chat_table
from chatgate.stores.deltalake_tables import delta_source

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
CHECKS = {"first_role": "user", "last_role": "assistant"}


def _spark_submit(*flags: str, conf: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    jars = ",".join(str(j) for j in delta_jars())
    extra = [part for key, value in (conf or {}).items() for part in ("--conf", f"{key}={value}")]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    command = [
        str(Path(sys.executable).with_name("spark-submit")),
        "--master", "local[2]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--jars", jars,
        *extra,
        str(REPO / "jobs" / "validate_chat.py"),
        *flags,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    path = tmp_path_factory.mktemp("lake")
    table = chat_table(600, seed=21, duplicate_fraction=0.3, defect_fraction=0.25)
    write_deltalake(str(path / "chats"), table)
    return path, table


def _flags(path: Path, *extra: str) -> list[str]:
    return [
        "--source", str(path / "chats"),
        "--column", "messages",
        "--first-role", "user",
        "--last-role", "assistant",
        "--quarantine", str(path / "chat_quarantine"),
        "--summary", str(path / "chat_summary"),
        "--valid", str(path / "chats_valid"),
        "--run-id", "nightly",
        *extra,
    ]


def _read(path: Path) -> pa.Table:
    return delta_source(str(path)).to_table()


@pytest.fixture(scope="module")
def first_run(lake):
    path, _ = lake
    done = _spark_submit(*_flags(path))
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_spark_submit_writes_every_failing_row_and_conserves_rows(lake, first_run):
    path, table = lake
    expected = {
        row_id: code
        for row_id, value in zip(table["id"].to_pylist(), table["messages"].to_pylist())
        if (code := first_problem(value, **CHECKS))
    }
    assert set(expected.values()) == set(REASONS)
    assert len(set(table["messages"].to_pylist())) < 0.8 * table.num_rows

    quarantine = _read(path / "chat_quarantine")
    assert dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist())) == expected
    assert quarantine.num_rows == len(expected)
    valid = _read(path / "chats_valid")
    assert sorted(valid["id"].to_pylist()) == sorted(set(table["id"].to_pylist()) - set(expected))
    assert valid.num_rows + len(set(quarantine["id"].to_pylist())) == table.num_rows

    summary = _read(path / "chat_summary").to_pylist()
    assert [(s["run_id"], s["engine"], s["units"], s["failed"]) for s in summary] == [
        ("nightly", "spark", 600, len(expected))
    ]
    assert dict(summary[0]["reasons"]) == {c: list(expected.values()).count(c) for c in set(expected.values())}
    assert "chatgate run nightly · engine spark" in first_run.stdout
    assert "status: 0" in first_run.stdout


def test_spark_logs_at_warn_under_spark_submit(first_run):
    """Spark's INFO log (thousands of lines a run) would bury the job's own lines."""
    info = [line for line in first_run.stderr.splitlines() if " INFO " in line]
    assert len(info) <= 5, info[:20]


def test_a_mistyped_flag_is_one_short_error_under_spark_submit(lake):
    path, _ = lake
    done = _spark_submit(*_flags(path, "--last-rol", "assistant"))
    assert done.returncode == 2
    printed = done.stdout + done.stderr  # spark-submit sends the driver's stderr to its stdout
    assert "validate_chat.py: error: unknown flag --last-rol; did you mean --last-role?" in printed
    assert "usage:" not in printed


@pytest.mark.slow  # a third JVM: reruns on Spark are in make test through tests/test_job.py
def test_rerun_with_the_same_run_id_gives_identical_outputs(lake, first_run):
    path, _ = lake
    before = {name: _read(path / name) for name in ("chat_quarantine", "chat_summary", "chats_valid")}
    done = _spark_submit(*_flags(path))
    assert done.returncode == 0, done.stderr[-3000:]
    after = {name: _read(path / name) for name in before}
    key = {"chat_quarantine": "id", "chats_valid": "id", "chat_summary": "step"}
    drop = {"chat_quarantine": ["pb_checked_at_"], "chat_summary": ["started_at", "finished_at"], "chats_valid": []}
    for name in before:
        assert after[name].drop(drop[name]).sort_by(key[name]).equals(before[name].drop(drop[name]).sort_by(key[name]))


def test_readme_spark_sql_runs_over_the_outputs(lake, first_run, spark):
    """The README's Spark SQL, over the views it names, on the outputs of spark-submit."""
    path, _ = lake
    readme = (REPO / "README.md").read_text()
    queries = re.findall(r"```sql\n-- (?:DuckDB or )?Spark SQL\n(.*?)```", readme, flags=re.S)
    assert len(queries) >= 3
    for name in ("quarantine", "summary"):
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM delta.`{path / f'chat_{name}'}`")
    results = [spark.sql(q.replace("'demo'", "'nightly'").strip().rstrip(";")).collect() for q in queries]
    assert all(results)
    by_reason = next(rows for rows in results if "pb_reason_" in rows[0].asDict() and "rows" in rows[0].asDict())
    assert {r["pb_reason_"] for r in by_reason} == set(REASONS)


FAILING_AT_SCALE = 150_000


@pytest.mark.slow  # a third JVM: in make test, tests/test_job.py counts the rows the Spark job brings to the driver
def test_hundreds_of_thousands_of_failing_values_never_reach_the_driver_and_the_error_level_gives_status_3(tmp_path):
    # 1 MB of results on the driver stands for a billion-row table with a few percent failing
    # under the default 1 GB: the failing keys (~40 bytes each, 6 MB here) must stay on the executors.
    # Every row fails, past the error level: the run still writes its outputs, then exits with 3.
    ids = pa.array(range(FAILING_AT_SCALE), pa.int64())
    messages = pa.array([f'[{{"role": "user", "content": "question {i}"}}]' for i in range(FAILING_AT_SCALE)])
    write_deltalake(str(tmp_path / "chats"), pa.table({"id": ids, "messages": messages}))
    done = _spark_submit(
        "--source", str(tmp_path / "chats"),
        "--column", "messages",
        "--last-role", "assistant",
        "--dedup", "on",
        "--quarantine", str(tmp_path / "q"),
        "--summary", str(tmp_path / "s"),
        "--run-id", "scale",
        "--quiet",
        "--error", "0.05",
        conf={"spark.driver.maxResultSize": "1m"},
    )
    assert done.returncode == 3, done.stderr[-3000:]
    assert "status: 3 (a step reached its error level)" in done.stdout
    [summary] = _read(tmp_path / "s").to_pylist()
    assert (summary["units"], summary["failed"], summary["distinct_values"]) == (FAILING_AT_SCALE,) * 3
    assert dict(summary["reasons"]) == {"last_role": FAILING_AT_SCALE}
    quarantine = _read(tmp_path / "q")
    assert quarantine.num_rows == FAILING_AT_SCALE
    assert sorted(quarantine["id"].to_pylist()) == list(range(FAILING_AT_SCALE))
    assert set(quarantine["pb_reason_"].to_pylist()) == {"last_role"}
