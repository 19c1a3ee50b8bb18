"""Failures reach the user as one line naming the cause and what to do (issue 23, items 5 and 8).

A corrupt Delta log in the source, a full disk under an output and Spark running out of
memory each end `chatgate run` with exactly one stderr line: no Rust backtrace or panic,
no Java frame, no py4j socket error. The CLI runs in a subprocess, as users run it; the
explanations themselves are also tested on synthetic errors, without a JVM or a disk.
"""

from __future__ import annotations

import errno
import json
import os
import random
import string
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.errors import ChatgateError, OutputError
from chatgate.stores.deltalake_errors import DeltaLogError, delta_error_text, rust_panics_logged
from job_helpers import SPARK_SLOW

CHATGATE = str(Path(sys.executable).with_name("chatgate"))
TIMEOUT = 600

GOOD = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'

RUST_BACKTRACE = (
    "Kernel error: Json error: Truncated record whilst reading string\n"
    "   0: <unknown>\n   1: <unknown>\n  12: start_thread\n"
    "             at ./nptl/pthread_create.c:442:8\n"
)


def _engines() -> list:
    return ["duckdb", pytest.param("spark", marks=pytest.mark.spark)]


def _run(tmp_path: Path, engine: str, source: Path, *flags: str, env: dict[str, str] | None = None):
    """`chatgate run` in a subprocess (its working directory tmp_path), as a user runs it."""
    args = [
        CHATGATE, "run", "--engine", engine, "--source", str(source), "--column", "messages",
        "--quarantine", str(tmp_path / "q"), "--summary", str(tmp_path / "s"), "--run-id", "r1", "--quiet", *flags,
    ]
    environment = {**os.environ, "CHATGATE_SPARK_LOG": str(tmp_path / "spark.log"), **(env or {})}
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path, env=environment)


def _one_line(done: subprocess.CompletedProcess, *phrases: str) -> str:
    """The run failed (status 1) with exactly one line on stderr, holding each phrase and no engine debris."""
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    line = lines[0]
    assert line.startswith("chatgate: error: ")
    for debris in ("Traceback", "panicked", "at org.apache", "<unknown>", "Py4J", "Connection refused", "ParsedLogPath"):
        assert debris not in done.stderr, done.stderr[-3000:]
    for phrase in phrases:
        assert phrase in line, line
    return line


def _three_commits(path: Path) -> Path:
    for _ in range(3):
        write_deltalake(str(path), pa.table({"messages": [GOOD]}), mode="append")
    return path


# -- a corrupt Delta log in the source ------------------------------------------------


@pytest.mark.parametrize("engine", _engines())
def test_a_truncated_commit_in_the_source_is_named_in_one_line(tmp_path, engine):
    source = _three_commits(tmp_path / "chats")
    commit = source / "_delta_log" / "00000000000000000002.json"
    commit.write_bytes(commit.read_bytes()[:200])
    line = _one_line(
        _run(tmp_path, engine, source, env={"RUST_BACKTRACE": "1"}),
        "can't read the source",
        "_delta_log/00000000000000000002.json isn't valid JSON",
        "restore it from a backup",
    )
    assert len(line) < 500


# On Spark, `make test` runs the store's line in this process (below) and the CLI's for a truncated commit (above).
@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_missing_commit_in_the_source_is_named_in_one_line(tmp_path, engine):
    source = _three_commits(tmp_path / "chats")
    (source / "_delta_log" / "00000000000000000001.json").unlink()
    line = _one_line(
        _run(tmp_path, engine, source, env={"RUST_BACKTRACE": "1"}),
        "can't read the source",
        "00000000000000000001.json is missing between versions 0 and 2",
        "restore the missing commit file",
    )
    assert len(line) < 500  # deltalake's own message was 927 characters of a debug dump


# -- a full disk under an output ------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs mounted for the test (skipped where mounting isn't permitted)."""
    mount = tmp_path / "small_disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"can't mount a small tmpfs here to fill: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        # A JVM the run started may still be closing its files there for a moment.
        for _ in range(20):
            if subprocess.run(["umount", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", str(mount)], check=False)


def _incompressible_source(path: Path) -> Path:
    """About 6 MB of failing conversations (random text: Snappy can't shrink it below 2 MB)."""
    rng = random.Random(7)
    rows = [
        json.dumps([{"role": "user", "content": "".join(rng.choices(string.ascii_letters, k=2000))}])
        for _ in range(3000)
    ]
    write_deltalake(str(path), pa.table({"messages": rows}))
    return path


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_full_disk_under_an_output_is_one_line_without_a_panic(tmp_path, engine, small_disk):
    source = _incompressible_source(tmp_path / "chats")
    target = small_disk / "q"
    done = _run(
        tmp_path, engine, source, "--last-role", "assistant", "--quarantine", str(target), env={"RUST_BACKTRACE": "1"}
    )
    _one_line(done, f"no space left on device writing {str(target)!r}", "free space")
    assert not (tmp_path / "s").exists()  # the summary was never written: the run didn't count as done


@pytest.mark.spark
def test_the_spark_store_names_a_missing_commit_of_the_source(tmp_path, spark):
    """The Spark case of the test above, in this process (the CLI's line on Spark is pinned by the truncated commit's)."""
    from chatgate.stores.delta_spark import DeltaSparkStore

    source = _three_commits(tmp_path / "chats")
    (source / "_delta_log" / "00000000000000000001.json").unlink()
    with pytest.raises(ChatgateError, match=r"^can't read the source .*00000000000000000001\.json is missing between versions 0 and 2"):
        DeltaSparkStore(spark).open_source(str(source), None)


# -- Spark running out of memory ---------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_spark_running_out_of_memory_on_a_huge_value_is_one_line(tmp_path):
    huge = json.dumps([{"role": "user", "content": "x" * (97 * 2**20)}])
    write_deltalake(str(tmp_path / "chats"), pa.table({"messages": [huge, GOOD, GOOD]}))
    done = _run(tmp_path, "spark", tmp_path / "chats", env={"SPARK_DRIVER_MEMORY": "1g"})
    line = _one_line(done, "ran out of memory", "OutOfMemoryError", "spark.driver.memory", "max_value_bytes")
    assert str(tmp_path / "spark.log") in line  # the JVM's own output went to the file the line names
    assert "OutOfMemoryError" in (tmp_path / "spark.log").read_text(errors="replace")


# -- the explanations, on synthetic errors -------------------------------------------------


def test_a_call_the_dying_jvm_cant_answer_is_kept_to_the_debug_log(caplog):
    """py4j logs it on the root logger with `logging.exception`, under the run's own one line."""
    import logging

    import py4j.java_gateway

    from chatgate.engines.spark import _quiet_py4j

    root, py4j_logger = logging.getLogger(), logging.getLogger("py4j")
    filters, level = list(root.filters), py4j_logger.level
    dying_call = compile(
        "import logging\n"
        "try:\n    raise ConnectionResetError('reset by peer')\n"
        "except ConnectionResetError:\n    logging.exception('Exception while sending command.')\n",
        py4j.java_gateway.__file__,
        "exec",
    )
    try:
        _quiet_py4j()
        _quiet_py4j()  # each session the job starts: one filter all the same
        assert len(root.filters) == len(filters) + 1
        with caplog.at_level(logging.DEBUG):
            exec(dying_call, {})
            logging.warning("a warning of anyone else's")
    finally:
        root.filters[:] = filters
        py4j_logger.setLevel(level)
    shown = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert shown == [
        ("chatgate", logging.DEBUG, "py4j: Exception while sending command."),
        ("root", logging.WARNING, "a warning of anyone else's"),
    ]
    assert caplog.records[0].exc_info is not None  # the traceback stays in the debug log


class _DeadJavaError(Exception):
    """A Py4JJavaError whose message can't be had: the JVM it would ask is gone."""

    def __str__(self) -> str:
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")


_DeadJavaError.__name__ = "Py4JJavaError"


def _raised_while_handling(first: BaseException, then: BaseException) -> BaseException:
    """`then`, raised while `first` was handled (what py4j does when the JVM dies mid-call)."""
    try:
        try:
            raise first
        except BaseException:
            raise then  # noqa: B904 - the implicit context is the point
    except BaseException as error:
        return error


def _spark_engine(master: str | None = "local[2]"):
    """A Spark engine that never starts a session (its explanations need none)."""
    pytest.importorskip("pyspark")
    from chatgate.engines.spark import SparkEngine

    engine = SparkEngine()
    engine._master = master
    return engine


JAVA_OOM = (
    "An error occurred while calling o104.collectToPython.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 10.0 failed 1 times\n"
    "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)\n"
    "Caused by: java.lang.RuntimeException: Cannot reserve additional contiguous bytes in the vectorized reader\n"
    "\tat org.apache.spark.sql.execution.vectorized.WritableColumnVector.throwUnsupportedException(X.java:1)\n"
    "Caused by: java.lang.OutOfMemoryError: Java heap space\n"
    "\tat org.apache.spark.sql.execution.vectorized.OnHeapColumnVector.reserveInternal(X.java:1)\n"
)


def test_a_dead_jvm_after_an_out_of_memory_error_is_explained_in_one_line():
    engine = _spark_engine()
    from py4j.protocol import Py4JNetworkError

    error = _raised_while_handling(
        RuntimeError(JAVA_OOM), _raised_while_handling(Py4JNetworkError("Answer from Java side is empty"),
                                                       ConnectionRefusedError(111, "Connection refused"))
    )
    explained = engine.explain(error)
    assert isinstance(explained, ChatgateError)
    text = str(explained)
    assert "\n" not in text and "at org.apache" not in text
    assert "ran out of memory (java.lang.OutOfMemoryError: Java heap space) and exited" in text
    assert "SPARK_DRIVER_MEMORY=8g" in text and "--driver-memory 8g" in text and "max_value_bytes" in text


def test_a_dead_jvm_whose_cause_is_unknown_is_one_line_naming_the_log():
    error = _raised_while_handling(_DeadJavaError(), ConnectionRefusedError(111, "Connection refused"))
    text = str(_spark_engine().explain(error))
    assert text.startswith("Spark's JVM exited or stopped answering")
    assert "spark.driver.memory" in text and "Connection refused" not in text


def test_an_executor_out_of_memory_on_a_cluster_names_the_executors_memory():
    text = str(_spark_engine("yarn").explain(RuntimeError(JAVA_OOM)))
    assert text.startswith("a Spark executor ran out of memory")
    assert "spark.executor.memory" in text


def test_sparks_own_out_of_memory_error_is_named_as_it_is():
    error = RuntimeError(
        "An error occurred while calling o9.save.\n"
        ": org.apache.spark.memory.SparkOutOfMemoryError: Unable to acquire 65536 bytes of memory, got 0\n"
    )
    text = str(_spark_engine("local[*]").explain(error))
    assert "ran out of memory (org.apache.spark.memory.SparkOutOfMemoryError: Unable to acquire" in text
    assert "and exited" not in text


def test_a_java_error_is_its_message_and_root_cause_without_frames():
    engine = _spark_engine()
    from chatgate.engines.spark.errors import spark_error_line
    from chatgate.stores.delta_spark_sql import delta_log_problem

    error = RuntimeError(
        "An error occurred while calling o35.sql.\n"
        ": org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
        "file:///lake/chats/_delta_log/00000000000000000007.json.  SQLSTATE: KD001\n"
        "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(QueryExecutionErrors.scala:911)\n"
        "Caused by: com.fasterxml.jackson.core.io.JsonEOFException: Unexpected end-of-input in field name\n"
        "\tat com.fasterxml.jackson.core.base.ParserMinimalBase._reportInvalidEOF(ParserMinimalBase.java:1)\n"
    )
    line = spark_error_line(error)
    assert line == (
        "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
        "file:///lake/chats/_delta_log/00000000000000000007.json. "
        "(caused by JsonEOFException: Unexpected end-of-input in field name)"
    )
    problem = delta_log_problem(error)
    assert problem is not None and "_delta_log/00000000000000000007.json isn't valid JSON" in problem
    from chatgate.job.writes import Lakehouse
    from chatgate.stores.delta_spark import DeltaSparkStore

    explained = str(Lakehouse(engine, DeltaSparkStore(None, failure=engine.jvm_failure)).explain(error))
    assert "00000000000000000007.json" in explained and "\tat " not in explained


def test_deltalakes_errors_lose_their_rust_backtrace():
    assert delta_error_text(RuntimeError(RUST_BACKTRACE)) == "Kernel error: Json error: Truncated record whilst reading string"
    problem = DeltaLogError("nowhere/table", RuntimeError(RUST_BACKTRACE)).problem
    assert problem.startswith("its Delta log (_delta_log) is corrupt: a commit file isn't valid JSON")
    assert "<unknown>" not in problem


def test_the_embedded_engine_explains_a_full_disk_and_memory_in_one_line():
    import duckdb

    from chatgate.engines.ibis.duckdb import DuckDBEngine

    engine = DuckDBEngine()
    full = str(engine.explain(OSError(errno.ENOSPC, "No space left on device")))
    assert full.startswith("no space left on device") and "--temp-dir" in full
    memory = str(engine.explain(duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")))
    assert "ran out of memory" in memory and "--memory-limit" in memory
    assert engine.explain(OutputError("already one line")) is None
    assert engine.explain(KeyError("anything else")) is None


def test_rust_panics_are_kept_off_stderr_and_everything_else_passes(capfd):
    panic = (
        b"before\n\nthread 'tokio-rt-worker' (8321) panicked at /registry/object_store/src/buffered.rs:369:41:\n"
        b"Already shut down\nstack backtrace:\n   0: <unknown>\n             at ./nptl/pthread_create.c:442:8\n"
        b"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"
        b"\nthread 'tokio-rt-worker' (8322) panicked at src/lib.rs:1:1:\nagain\n"
        b"after\n50%\r100%"
    )
    with rust_panics_logged():
        os.write(2, panic)
    assert capfd.readouterr().err == "before\nafter\n50%\r100%"


def test_the_jobs_jvm_prints_to_a_file_unless_told_otherwise(monkeypatch, tmp_path):
    pytest.importorskip("pyspark")
    from chatgate.engines.spark.session import JVM_OUTPUT_ENV, job_jvm_output

    monkeypatch.setenv(JVM_OUTPUT_ENV, "-")
    assert job_jvm_output() is None  # on the console, as Spark prints by default
    monkeypatch.setenv(JVM_OUTPUT_ENV, str(tmp_path / "spark.log"))
    assert job_jvm_output() == tmp_path / "spark.log"
    monkeypatch.delenv(JVM_OUTPUT_ENV)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    default = job_jvm_output()
    assert default is not None and default.parent == tmp_path / "chatgate-spark" and default.suffix == ".log"
