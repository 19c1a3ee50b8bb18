"""The example DAG (dags/chatgate_dag.py) in Apache Airflow: it imports, and it runs.

Airflow lives in its own environment, .venv-airflow (`make airflow-env`, a dependency of
`make test`), so its pins don't constrain .venv: tests/airflow_dag_check.py runs there in a
subprocess, with a fresh AIRFLOW_HOME and SQLite metadata database, and reports what it saw.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AIRFLOW_PYTHON = REPO / ".venv-airflow" / "bin" / "python"
MARKER = "AIRFLOW_DAG_CHECK "


def _airflow_env() -> None:
    """Build .venv-airflow if it is missing or stale (make's no-op when it is up to date)."""
    try:
        built = subprocess.run(
            ["make", "--no-print-directory", "airflow-env"], cwd=REPO, capture_output=True, text=True, timeout=1200
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        built = None
        reason = str(exc)
    else:
        reason = built.stdout[-2000:] + built.stderr[-2000:]
    if (built is None or built.returncode != 0) and not AIRFLOW_PYTHON.exists():
        pytest.skip(f".venv-airflow is absent and `make airflow-env` couldn't build it: {reason}")
    assert built is not None and built.returncode == 0, f"make airflow-env failed:\n{reason}"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    _airflow_env()
    work = tmp_path_factory.mktemp("airflow")
    # The DAG's defaults (CHATGATE_HOME=/opt/chatgate), whatever this machine sets.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "CHATGATE_HOME", "CHATGATE_CONFIG"))}
    env.update(
        AIRFLOW_HOME=str(work / "airflow_home"),
        AIRFLOW__CORE__DAGS_FOLDER=str(REPO / "dags"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{work / 'airflow.db'}",
        # The connection the Spark task names, as the DAG's comment shows it (master: yarn).
        AIRFLOW_CONN_SPARK_DEFAULT="spark://yarn",
    )
    airflow = str(AIRFLOW_PYTHON.parent / "airflow")
    migrated = subprocess.run([airflow, "db", "migrate"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    done = subprocess.run(
        [str(AIRFLOW_PYTHON), str(REPO / "tests" / "airflow_dag_check.py"), str(work)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    assert done.returncode == 0 and lines, done.stdout[-6000:] + done.stderr[-6000:]
    return json.loads(lines[-1][len(MARKER):])


def test_the_dag_imports_with_no_import_errors(report):
    assert report["import_errors"] == {}
    assert report["dags"] == ["chatgate"]


def test_the_embedded_task_runs_and_training_follows(report):
    for run in report["passing"]:
        assert run["dag_state"] == "success"
        assert run["tasks"] == {
            "choose_engine": "success",
            "quarantine_chats": "success",
            "quarantine_chats_spark": "skipped",
            "passed_thresholds": "success",
            "train_model": "success",
        }


def test_a_rerun_with_the_same_run_id_duplicates_no_rows(report):
    first, second = report["passing"]
    assert first["run_id"] == second["run_id"] == "manual__2026-12-02T00:00:00+00:00"
    # The job got the DAG run's id: its rows carry it, once each after two runs.
    assert report["passing_outputs"] == {"quarantine_rows": report["n_bad"], "summary_rows": 1}


def test_the_error_level_skips_training(report):
    run = report["erroring"]
    assert run["dag_state"] == "success"
    assert run["tasks"]["passed_thresholds"] == "success"
    assert run["tasks"]["train_model"] == "skipped"
    assert report["erroring_outputs"] == {"quarantine_rows": report["n_bad"], "summary_rows": 1}


def test_the_critical_level_fails_the_run(report):
    run = report["critical"]
    assert run["dag_state"] == "failed"
    assert run["tasks"]["passed_thresholds"] == "failed"
    assert run["tasks"]["train_model"] == "upstream_failed"


def test_the_spark_path_leads_to_training(report):
    assert report["spark_path"]["tasks"] == {
        "choose_engine": "success",
        "quarantine_chats": "skipped",
        "quarantine_chats_spark": "success",  # marked so: there is no cluster here
        "passed_thresholds": "success",
        "train_model": "success",
    }


def test_the_spark_task_renders_the_run_id_into_its_command(report):
    run_id = "scheduled__2026-12-02T00:00:00+00:00"
    args = report["spark"]["application_args"]
    assert args == ["--config", "passing.yaml", "--run-id", run_id, "--since", "last"]
    command = report["spark"]["command"]
    assert command[0] == "spark-submit"
    tail = len(args) + 1
    assert command[-tail:] == ["/opt/chatgate/jobs/validate_chat.py", *args]
    flags = dict(zip(command[1:-tail:2], command[2:-tail:2]))
    assert flags["--deploy-mode"] == "cluster"
    assert flags["--archives"] == "/opt/chatgate/dist/chatgate-env.tar.gz#environment"
    assert flags["--jars"] == (
        "/opt/chatgate/dist/delta-spark_4.1_2.13-4.1.0.jar,/opt/chatgate/dist/delta-storage-4.1.0.jar,"
        "/opt/chatgate/dist/chatgate-shape.jar"
    )
    assert flags["--files"].endswith("/passing.yaml")
    assert flags["--conf"] == "spark.pyspark.python=./environment/bin/python"
