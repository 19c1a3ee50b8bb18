"""A local Spark Connect server for the tests, and the Connect client they run in a child process.

The server is pyspark's own (`spark-connect_2.13-4.1.0.jar` ships in pyspark's jars),
started with `spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`
and Delta's jars and settings, on a free port.

The client runs in a child process (`python tests/spark_connect.py URL COMMAND ...`):
creating a Connect session, even with `SparkSession.builder.remote(url).create()`, sets
pyspark's process-wide Connect mode (`SPARK_CONNECT_MODE_ENABLED`), after which
`pyspark.sql.functions` builds Connect columns that the classic session shared by the
other tests can't take. It prints one JSON line: what the job or `Validate` found.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chatgate.engines.spark.session import DELTA_CATALOG, DELTA_EXTENSION
from conftest import SPARK_TEST_CONF

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
SERVER_CONF = {"spark.sql.extensions": DELTA_EXTENSION, "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
               **SPARK_TEST_CONF}
START_SECONDS = 180
CLIENT_SECONDS = 600


def pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def server_jar() -> Path | None:
    """The Spark Connect server jar in pyspark's jars, if this pyspark ships it."""
    return next(iter(sorted((pyspark_home() / "jars").glob("spark-connect_*.jar"))), None)


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free now (each socket held until all are found)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


START_ATTEMPTS = 3
"""Starts tried: a port found free can be taken by another process before the server binds it."""


class ConnectServer:
    """A Spark Connect server process; `url` waits until it listens.

    The server's gRPC, driver and block manager ports are chosen here, distinct: left to
    the JVM, the block manager's could be the very port chosen for gRPC."""

    def __init__(self, workdir: Path, delta_jars: list[Path]) -> None:
        self.workdir, self.delta_jars = workdir, delta_jars
        self.log = workdir / "spark-connect-server.log"
        self._up = False
        self._start()

    def _start(self) -> None:
        self.port, driver, block_manager = free_ports(3)
        conf = {
            **SERVER_CONF,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.port": str(driver),
            "spark.blockManager.port": str(block_manager),
            "spark.port.maxRetries": "0",  # a port taken fails the start, which is retried with others
            "spark.sql.warehouse.dir": str(self.workdir / "warehouse"),
        }
        home = pyspark_home()
        command = [
            str(home / "bin" / "spark-submit"),
            "--class", SERVER_CLASS,
            "--master", "local[2]",
            "--driver-memory", "1g",
            "--jars", ",".join(map(str, self.delta_jars)),
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
            "spark-internal",
        ]
        # The server's Python workers (mapInArrow) must run this interpreter, which has chatgate.
        env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
        env.pop("SPARK_REMOTE", None)
        with self.log.open("wb") as log:
            # Its own process group: stopping it stops its Python workers too.
            self.process = subprocess.Popen(
                command, cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def url(self) -> str:
        for attempt in range(1, START_ATTEMPTS + 1):
            if self._up or self._wait():
                break
            if attempt == START_ATTEMPTS or "BindException" not in self.log.read_text(errors="replace"):
                raise RuntimeError(f"the Spark Connect server exited ({self.process.returncode}):\n{self.log_tail()}")
            self._start()  # a port was taken meanwhile: others
        return f"sc://localhost:{self.port}"

    def _wait(self) -> bool:
        """Did the server come to listen? False if it exited first."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("localhost", self.port), timeout=1):
                    self._up = True
                    return True
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"the Spark Connect server didn't listen within {START_SECONDS} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def java_missing() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists())


def client(url: str, *args: str) -> dict[str, Any]:
    """Run this module as the Connect client in a child process; what it printed."""
    done = subprocess.run(
        [sys.executable, __file__, url, *args],
        capture_output=True,
        text=True,
        timeout=CLIENT_SECONDS,
        env={k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")},
    )
    if done.returncode != 0:
        raise AssertionError(f"the Connect client failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- what both sessions report, compared by the tests -----------------------------

CHECKS = {"first_role": "user", "last_role": "assistant"}


def job_report(spark: Any, source: str, folder: str) -> dict[str, Any]:
    """Run `run-1` of the job on `source` with the Spark engine on `spark`, its outputs under `folder`."""
    from chatgate.engines.spark import SparkEngine
    from chatgate.job.runner import run
    from job_helpers import job_config

    result = run(job_config(Path(folder), source, "spark", CHECKS), SparkEngine(spark=spark))
    return {"quarantined": result.quarantined, "valid": result.valid, "exit_status": result.exit_status}


def validate_report(spark: Any, source: str) -> dict[str, Any]:
    """`Validate` of the messages column of the Delta table at `source`: counts, reasons, extract."""
    from chatgate import Validate

    validation = Validate(spark.read.format("delta").load(source)).col_vals_chat_format("messages").interrogate()
    step = validation.steps[0]
    assert step.judged is not None, step.eval_error
    extract = validation.get_data_extracts(i=1, frame=True).toArrow().to_pylist()
    return {
        "n": validation.n(i=1, scalar=True),
        "n_failed": validation.n_failed(i=1, scalar=True),
        "reasons": [[code, count] for code, count in step.judged.reasons.items()],
        "extract": sorted([row["id"], row["pb_reason_"]] for row in extract),
    }


def catalog_report(spark: Any, location: str) -> dict[str, Any]:
    """The engine's Delta I/O on catalog tables (a database at `location`): create, append, delete, refuse."""
    import pyarrow as pa

    from chatgate.engines.spark import SparkEngine
    from chatgate.errors import OutputError
    from chatgate.job.registry import store_for

    engine, name = store_for(SparkEngine(spark=spark)), "chatgate_catalog.runs"
    spark.sql(f"CREATE DATABASE chatgate_catalog LOCATION '{location}'")
    try:
        for run_id in ("run-1", "run-2"):
            engine.write_arrow(pa.table({"run_id": [run_id] * 2, "n": [1, 2]}), name, "run_id", run_id)
        # The catalog reads this name as `chatgate_catalog.runs`; pasted into SQL, the comment would
        # swallow the WHERE clause and the DELETE would empty the table.
        engine.delete_run(f"{name} -- WHERE clause", "run_id", "run-2")
        spark.sql("CREATE TABLE chatgate_catalog.plain (a INT) USING parquet")
        try:
            engine.target_columns("chatgate_catalog.plain")
            refused = None
        except OutputError as exc:
            refused = str(exc)
        return {
            "columns": engine.target_columns(name),
            "version": engine._version(name),
            "rows": sorted(list(row) for row in spark.table(name).collect()),
            "absent": engine.target_columns("chatgate_catalog.absent"),
            "refused": refused,
        }
    finally:
        spark.sql("DROP DATABASE chatgate_catalog CASCADE")


# -- the client (child process) ---------------------------------------------------------

REPORTS = {"job": job_report, "validate": validate_report, "catalog": catalog_report}


def main(argv: list[str]) -> None:
    """`URL REPORT ARG...`: the report of REPORTS run on a Connect session to URL, as one JSON line."""
    from pyspark.sql import SparkSession

    url, report, *args = argv
    spark = SparkSession.builder.remote(url).create()
    print(json.dumps(REPORTS[report](spark, *args)))


if __name__ == "__main__":
    main(sys.argv[1:])
