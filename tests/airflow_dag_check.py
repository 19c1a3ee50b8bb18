"""Runs inside the Airflow environment (.venv-airflow), started by tests/test_dag.py.

Imports dags/ with Airflow's DagBag, runs the example DAG with `dag.test()` on small
Delta tables (the embedded task for real), renders the Spark task's templated fields
and builds its spark-submit command line, and prints what it saw as one JSON object
on the last line of stdout for the pytest side to judge.

    python tests/airflow_dag_check.py WORKDIR

Airflow's settings come from the environment test_dag.py gives it (AIRFLOW_HOME in
WORKDIR, a SQLite metadata database, dags/ as the DAGs folder).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml
from deltalake import DeltaTable, write_deltalake

GOOD = [
    [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! How can I help?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"},
     {"role": "assistant", "content": "Paris."}],
    [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}],
]
BAD = [
    [{"role": "user", "content": "Hi!"}, {"role": "user", "content": "Hello?"}],  # not_alternating
    [{"role": "user", "content": "2 + 2?"}, {"role": "bot", "content": "4"}],  # unknown_role
]
ROWS = [*GOOD, *GOOD, *BAD]  # 8 rows, 2 bad: a quarter of the table
N_BAD = len(BAD)
MARKER = "AIRFLOW_DAG_CHECK "  # Airflow logs to stdout too: the report is the line that starts with this


def chats_table(path: Path) -> str:
    table = pa.table({"id": list(range(len(ROWS))), "messages": [json.dumps(m) for m in ROWS]})
    write_deltalake(str(path), table)
    return str(path)


def job_config(work: Path, name: str, source: str, thresholds: dict[str, float]) -> str:
    """A job config like conf/example.yaml: the source, one chat column, outputs, thresholds."""
    config = {
        "source": source,
        "engine": "duckdb",
        "columns": ["messages"],
        "checks": {"first_role": "user", "last_role": "assistant"},
        "outputs": {"quarantine": str(work / name / "quarantine"), "summary": str(work / name / "summary")},
        "thresholds": thresholds,
    }
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def rows_of_run(path: str, column: str, run_id: str) -> int:
    ids = DeltaTable(path).to_pyarrow_table(columns=[column]).column(column).to_pylist()
    return sum(1 for i in ids if i == run_id)


def run_dag(dag: Any, when: datetime, config: str, **test_args: Any) -> dict[str, Any]:
    """One DAG run through dag.test(); its run id follows from `when` (same `when`, same id)."""
    conf = {"config": config, **test_args.pop("conf", {})}
    dr = dag.test(logical_date=when, run_after=when, run_conf=conf, **test_args)
    states = {ti.task_id: _name(ti.state) for ti in dr.get_task_instances()}
    return {"run_id": dr.run_id, "dag_state": _name(dr.state), "tasks": states}


def _name(state: Any) -> str | None:
    return None if state is None else str(getattr(state, "value", state))


def outputs(config: str, run_id: str) -> dict[str, int]:
    out = yaml.safe_load(Path(config).read_text())["outputs"]
    return {
        "quarantine_rows": rows_of_run(out["quarantine"], "pb_run_id_", run_id),
        "summary_rows": rows_of_run(out["summary"], "run_id", run_id),
    }


def spark_command(dag: Any, run_id: str, config: str) -> dict[str, Any]:
    """The Spark task's templated fields rendered for a run, and the spark-submit command it builds."""
    task = dag.get_task("quarantine_chats_spark")
    params = {key: dag.params[key] for key in dag.params}
    params["config"] = config
    context = {"run_id": run_id, "params": params, "dag": dag}
    task.render_template_fields(context, jinja_env=dag.get_template_env())
    hook = task._get_hook()  # no spark-submit runs: only its command line is built
    return {"application_args": task.application_args, "command": hook._build_spark_submit_command(task.application)}


def main(work: Path) -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag

    repo = Path(__file__).resolve().parents[1]
    bag = DagBag(dag_folder=str(repo / "dags"))
    report: dict[str, Any] = {"import_errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": sorted(bag.dags)}
    dag = bag.dags["chatgate"]
    for task in dag.tasks:
        task.retries = 0  # a failing task fails the test now, not after a retry delay

    source = chats_table(work / "chats")
    when = datetime(2026, 12, 2, tzinfo=timezone.utc)

    # Below the error level: training runs. Twice with the same run id: no duplicated rows.
    passing = job_config(work, "passing", source, {"warning": 0.1, "error": 0.5, "critical": 0.9})
    report["passing"] = [run_dag(dag, when, passing) for _ in range(2)]
    report["passing_outputs"] = outputs(passing, report["passing"][-1]["run_id"])

    # At the error level (a quarter of the rows fail, error at 10%): training is skipped.
    erroring = job_config(work, "erroring", source, {"error": 0.1, "critical": 0.9})
    report["erroring"] = run_dag(dag, datetime(2026, 12, 3, tzinfo=timezone.utc), erroring)
    report["erroring_outputs"] = outputs(erroring, report["erroring"]["run_id"])

    # At the critical level: the gate fails, and training doesn't run.
    critical = job_config(work, "critical", source, {"error": 0.1, "critical": 0.2})
    report["critical"] = run_dag(dag, datetime(2026, 12, 4, tzinfo=timezone.utc), critical)

    # The Spark path, its spark-submit marked as done (there is no cluster here): training runs.
    report["spark_path"] = run_dag(
        dag, datetime(2026, 12, 5, tzinfo=timezone.utc), passing,
        conf={"engine": "spark"}, mark_success_pattern="quarantine_chats_spark",
    )
    report["spark"] = spark_command(dag, "scheduled__2026-12-02T00:00:00+00:00", passing)
    report["n_bad"] = N_BAD
    return report


if __name__ == "__main__":
    result = main(Path(sys.argv[1]))
    print(MARKER + json.dumps(result))
