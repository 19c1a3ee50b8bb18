"""Example Airflow DAG: quarantine malformed chats, then train only on a table that passed.

Copy this file into your DAGs folder and edit the constants below. It is written for
Airflow 3 (`airflow.sdk`) with `apache-airflow-providers-apache-spark` for the cluster
task; `make airflow-test` imports it and runs it (see README, "Airflow DAG").

    choose_engine ─┬─ quarantine_chats (embedded: DuckDB on the Airflow worker) ─┬─ passed_thresholds ── train_model
                   └─ quarantine_chats_spark (spark-submit to the cluster) ──────┘

- `choose_engine` follows the `engine` param: "duckdb" (the default) runs the job inside the
  Airflow task through `chatgate.airflow.run_chatgate`, "spark" submits `jobs/validate_chat.py`
  with `SparkSubmitOperator`.
- Both pass the DAG run's id as the job's run id, so a retried or cleared task replaces its
  own rows in the output tables instead of adding them twice, and `--since last`, so each
  run checks only the rows inserted since the last complete run (a retried task re-reads
  the range its first attempt read).
- `passed_thresholds` decides whether training runs: below the error level it goes on; at the
  error level it skips `train_model` (the DAG run still succeeds: the bad rows are in the
  quarantine table); at the critical level it fails. On the Spark path the job's exit status
  decides: the job exits 3 (error) or 4 (critical), so the application fails, spark-submit
  exits non-zero, the Spark task fails, and training doesn't run.

The Airflow workers need chatgate with its DuckDB extra (`pip install 'chatgate[duckdb]'`, or
`make dist`'s wheel with `[duckdb]`) for the embedded task, and a copy of the chatgate repository after `make cluster-pack`
(CHATGATE_HOME) for the Spark task: `jobs/validate_chat.py`, the packed environment and
Delta's jars.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param, TriggerRule, dag, task
from airflow.sdk.exceptions import AirflowFailException

# Where the chatgate repository is checked out on the Airflow workers, after `make cluster-pack`.
CHATGATE_HOME = os.environ.get("CHATGATE_HOME", "/opt/chatgate")
# The job's config: source table, columns, checks, outputs and thresholds (conf/example.yaml
# documents every key). Each DAG run can name another one with the `config` param.
CHATGATE_CONFIG = os.environ.get("CHATGATE_CONFIG", f"{CHATGATE_HOME}/conf/example.yaml")
# Delta's jars (delta-spark 4.1.0 for Spark 4.1.0, Scala 2.13) and chatgate's, which keeps the rows
# it proves passing on the JVM (docs/job/spark.md), as `make cluster-pack` copies them.
JARS = [
    f"{CHATGATE_HOME}/dist/delta-spark_4.1_2.13-4.1.0.jar",
    f"{CHATGATE_HOME}/dist/delta-storage-4.1.0.jar",
    f"{CHATGATE_HOME}/dist/chatgate-shape.jar",
]

EXIT_OK, EXIT_ERROR, EXIT_CRITICAL = 0, 3, 4  # the job's exit statuses (README, "The job")


@dag(
    dag_id="chatgate",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={"retries": 1},
    params={
        "engine": Param("duckdb", enum=["duckdb", "spark"], description="duckdb: in the task; spark: spark-submit"),
        "config": Param(CHATGATE_CONFIG, type="string", description="the job's YAML config"),
    },
    tags=["chatgate"],
)
def chatgate() -> None:
    @task.branch
    def choose_engine(params: dict[str, Any] | None = None) -> str:
        assert params is not None
        return "quarantine_chats_spark" if params["engine"] == "spark" else "quarantine_chats"

    @task
    def quarantine_chats(params: dict[str, Any] | None = None, run_id: str | None = None) -> dict[str, Any]:
        """The embedded job (DuckDB, Delta through `deltalake`) in this task; its summary goes to XCom."""
        from chatgate.airflow import run_chatgate  # imported when the task runs: parsing stays quick

        assert params is not None
        # fail_on_error=False: the thresholds are judged by passed_thresholds, from the summary.
        # since="last": each run checks only the rows inserted since the last complete run.
        return run_chatgate(params["config"], engine="duckdb", run_id=run_id, since="last", fail_on_error=False)

    # The cluster job, as README's spark-submit example (YARN, cluster mode): the packed
    # environment (--archives) for the driver and the executors, Delta's jars (--jars), the
    # config shipped with --files (the driver runs on the cluster and reads it from its working
    # directory) and the job's flags with the DAG run's id. The master comes from the Airflow
    # connection `spark_default`: for YARN, a Spark connection whose host is "yarn"
    # (AIRFLOW_CONN_SPARK_DEFAULT=spark://yarn); without a connection the hook drops deploy_mode.
    quarantine_spark = SparkSubmitOperator(
        task_id="quarantine_chats_spark",
        conn_id="spark_default",
        deploy_mode="cluster",
        application=f"{CHATGATE_HOME}/jobs/validate_chat.py",
        archives=f"{CHATGATE_HOME}/dist/chatgate-env.tar.gz#environment",
        conf={"spark.pyspark.python": "./environment/bin/python"},
        jars=",".join(JARS),
        files="{{ params.config }}",
        name="chatgate-{{ run_id }}",
        application_args=[
            "--config", "{{ params.config.split('/')[-1] }}", "--run-id", "{{ run_id }}", "--since", "last"
        ],
    )

    @task.short_circuit(trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def passed_thresholds(ti: Any = None, params: dict[str, Any] | None = None) -> bool:
        """Go on below the error level; skip training at it; fail at the critical level."""
        assert params is not None
        if params["engine"] == "spark":
            return True  # the Spark task succeeded, so the job exited 0: no step reached its error level
        summary = ti.xcom_pull(task_ids="quarantine_chats")
        status = summary["exit_status"]
        print(f"chatgate run {summary['run_id']}: exit status {status}, {summary['quarantined']} rows quarantined")
        if status == EXIT_CRITICAL:
            raise AirflowFailException(f"chatgate: a step reached its critical level: {summary['steps']}")
        return bool(status == EXIT_OK)

    @task
    def train_model(run_id: str | None = None) -> None:
        """A placeholder: fine-tune on the rows that passed (the job's valid table, or the source
        without the rows of this run in the quarantine table)."""
        print(f"training on the rows that passed chatgate run {run_id}")

    engine = choose_engine()
    embedded = quarantine_chats()
    gate = passed_thresholds()
    engine >> [embedded, quarantine_spark]
    [embedded, quarantine_spark] >> gate >> train_model()


chatgate()
