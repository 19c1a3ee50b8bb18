"""The run protocol on each engine: one snapshot, own rows only, retried commits, complete runs.

Each test drives the job the way a lakehouse does: other processes writing the same
outputs or appending to the source mid-run, orchestrators' run ids, a killed run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from chatgate import first_problem
from chatgate.errors import ConfigError
from chatgate.job import writes
from chatgate.job.registry import store_for
from chatgate.job.runner import run
from chatgate.sample import chat_table
from job_helpers import SPARK_SLOW, job_config, read_delta

REPO = Path(__file__).resolve().parents[1]
CHECKS = {"last_role": "assistant"}



def _readme_sql(marker: str) -> str:
    """The README's SQL block that holds `marker`, exactly as written there."""
    blocks = re.findall(r"```sql\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    [block] = [b for b in blocks if marker in b]
    return block


# What the README gives consumers who must see complete runs only.
COMPLETE_RUNS_SQL = _readme_sql("IN (SELECT run_id FROM summary)")


def _source(tmp_path: Path, rows: int = 120, seed: int = 4, start: int = 0) -> tuple[str, pa.Table]:
    table = chat_table(rows, seed=seed, duplicate_fraction=0.3, defect_fraction=0.3)
    table = table.set_column(0, "id", pa.array(range(start, start + rows), pa.int64()))
    path = str(tmp_path / "chats")
    write_deltalake(path, table, mode="append")
    return path, table


def _config(tmp_path, source, engine, **overrides):
    return job_config(tmp_path, source, engine, CHECKS, **overrides)


def _read(path) -> pa.Table:
    return read_delta(path)


def _failing_ids(table: pa.Table) -> set[int]:
    return {
        row_id
        for row_id, value in zip(table["id"].to_pylist(), table["messages"].to_pylist())
        if first_problem(value, **CHECKS) is not None
    }


def _rows_of(path, run_id: str, column: str = "pb_run_id_") -> list[dict]:
    return [row for row in _read(path).to_pylist() if row[column] == run_id]


def _assert_conserved(tmp_path: Path, table: pa.Table, run_id: str) -> None:
    """Quarantine + valid of `run_id` are exactly the source rows read, each where it belongs."""
    quarantined = {row["id"] for row in _rows_of(tmp_path / "quarantine", run_id)}
    valid = {row["id"] for row in _rows_of(tmp_path / "valid", run_id)}
    assert quarantined == _failing_ids(table)
    assert quarantined | valid == set(table["id"].to_pylist())
    assert not quarantined & valid
    assert len(_rows_of(tmp_path / "valid", run_id)) == len(valid)
    [summary] = _rows_of(tmp_path / "summary", run_id, "run_id")
    assert (summary["units"], summary["failed"]) == (table.num_rows, len(quarantined))


# -- one snapshot per run ----------------------------------------------------------------------

APPEND_SCRIPT = """
import sys
import pyarrow as pa
from deltalake import write_deltalake
from chatgate.sample import chat_table
table = chat_table(50, seed=99, defect_fraction=0.5)
table = table.set_column(0, "id", pa.array(range(10_000, 10_050), pa.int64()))
write_deltalake(sys.argv[1], table, mode="append")
"""


def test_rows_appended_by_another_process_mid_run_are_not_half_seen(tmp_path, engine, backend, monkeypatch):
    source, table = _source(tmp_path)
    judge = backend.judge_check

    def judge_then_append(*args, **kwargs):
        judged = judge(*args, **kwargs)
        # Another process appends to the source after the check and before the writes read it again.
        subprocess.run([sys.executable, "-c", APPEND_SCRIPT, source], check=True, timeout=120)
        return judged

    monkeypatch.setattr(backend, "judge_check", judge_then_append)
    result = run(_config(tmp_path, source, engine), backend)
    assert DeltaTable(source).version() == 1
    assert result.source_version == 0
    assert _rows_of(tmp_path / "summary", "run-1", "run_id")[0]["source_version"] == 0
    _assert_conserved(tmp_path, table, "run-1")


def test_source_version_pins_an_older_snapshot(tmp_path, engine, backend):
    source, table = _source(tmp_path)
    _source(tmp_path, rows=30, seed=8, start=5_000)
    result = run(_config(tmp_path, source, engine, source_version=0), backend)
    assert result.source_version == 0
    _assert_conserved(tmp_path, table, "run-1")


@pytest.mark.parametrize(
    "version, message",
    [(7, r"source_version: 7 is past the latest version \(0\) of '.*chats'"), ("x", "source_version: 'x' isn't a Delta version")],
)
def test_a_source_version_that_isnt_there_is_named(tmp_path, engine, backend, version, message):
    source, _ = _source(tmp_path)
    with pytest.raises(ConfigError, match=message):
        run(_config(tmp_path, source, engine, source_version=version), backend)


def test_a_source_version_needs_a_delta_source(tmp_path, engine, backend):
    path = tmp_path / "plain.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1], "messages": ["[]"]}), path)
    with pytest.raises(ConfigError, match="isn't a Delta table, so it has no versions"):
        run(_config(tmp_path, str(path), engine, source_version=0), backend)


# -- own rows only, and retried commits --------------------------------------------------------


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_failed_run_deletes_only_its_own_rows(tmp_path, engine, backend, monkeypatch):
    source, table = _source(tmp_path)
    run(_config(tmp_path, source, engine, run_id="a"), backend)
    before = {name: _read(tmp_path / name).sort_by("id") for name in ("quarantine", "valid")}

    def summary_fails(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store_for(backend), "write_arrow", summary_fails)
    with pytest.raises(OSError, match="disk full"):
        run(_config(tmp_path, source, engine, run_id="b"), backend)
    for name, rows in before.items():
        assert _read(tmp_path / name).sort_by("id").equals(rows)
    assert _read(tmp_path / "summary")["run_id"].to_pylist() == ["a"]
    _assert_conserved(tmp_path, table, "a")


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_failed_rerun_is_no_longer_a_complete_run(tmp_path, engine, backend, monkeypatch):
    source, _ = _source(tmp_path)
    run(_config(tmp_path, source, engine), backend)
    monkeypatch.setattr(store_for(backend), "write_arrow", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        run(_config(tmp_path, source, engine), backend)
    for name, column in (("quarantine", "pb_run_id_"), ("valid", "pb_run_id_"), ("summary", "run_id")):
        assert _rows_of(tmp_path / name, "run-1", column) == []


def test_a_write_that_loses_a_commit_race_is_tried_again(tmp_path, engine, backend, monkeypatch):
    source, table = _source(tmp_path)
    monkeypatch.setattr(writes, "RETRY_FIRST_WAIT", 0.01)
    replace_run, calls = store_for(backend).replace_run, []

    def first_attempt_loses(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 1:
            raise _conflict(engine)
        return replace_run(*args, **kwargs)

    monkeypatch.setattr(store_for(backend), "replace_run", first_attempt_loses)
    run(_config(tmp_path, source, engine), backend)
    assert calls[:2] == [str(tmp_path / "quarantine")] * 2
    _assert_conserved(tmp_path, table, "run-1")


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_write_that_keeps_losing_gives_up_and_takes_its_rows_back(tmp_path, engine, backend, monkeypatch):
    source, _ = _source(tmp_path)
    run(_config(tmp_path, source, engine, run_id="other"), backend)
    monkeypatch.setattr(writes, "RETRY_FIRST_WAIT", 0.001)
    monkeypatch.setattr(store_for(backend), "write_arrow", lambda *a, **k: (_ for _ in ()).throw(_conflict(engine)))
    with pytest.raises(Exception) as info:
        run(_config(tmp_path, source, engine), backend)
    assert store_for(backend).is_conflict(info.value)
    assert set(_read(tmp_path / "quarantine")["pb_run_id_"].to_pylist()) == {"other"}


def _conflict(engine: str) -> Exception:
    if engine == "spark":
        return RuntimeError("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added")
    return CommitFailedError("Transaction failed: version already exists")


# -- run ids that orchestrators make --------------------------------------------------------------

RUN_IDS = [
    "scheduled__2026-12-02T00:00:00+00:00",
    "manual__2026-12-02T10:11:12.123456+00:00",
    "it's",
    "it''s",
    "back\\slash' OR '1'='1",
    "dataset_triggered__ü 日本",
]


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_orchestrator_run_ids_are_stored_exactly_and_replace_only_their_rows(tmp_path, engine, backend):
    source, table = _source(tmp_path, rows=40)
    # On Spark (a few seconds a run), the ids that quoting in its SQL could confuse.
    ids = RUN_IDS if engine == "duckdb" else RUN_IDS[2:5]
    for run_id in ids:
        run(_config(tmp_path, source, engine, run_id=run_id), backend)
    run(_config(tmp_path, source, engine, run_id=ids[-1]), backend)  # a rerun replaces its own rows only
    for run_id in ids:
        _assert_conserved(tmp_path, table, run_id)
    assert sorted(_read(tmp_path / "summary")["run_id"].to_pylist()) == sorted(ids)


@pytest.mark.parametrize(
    "run_id, message",
    [("a\nb", "control character"), (" padded", "white space"), ("x" * 251, "the most is 250")],
)
def test_a_run_id_that_would_hide_in_logs_is_refused(tmp_path, run_id, message):
    with pytest.raises(ConfigError, match=message):
        _config(tmp_path, "chats", "duckdb", run_id=run_id)


# -- complete runs, and a killed run ---------------------------------------------------------------

KILLED_SCRIPT = """
import os, signal, sys
from chatgate.cli import main
from chatgate.stores.deltalake_store import DeltalakeStore

def die(*args, **kwargs):
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))

DeltalakeStore.write_arrow = die  # the process dies as it would write its summary
sys.exit(main(sys.argv[2:]))
"""


def _cli_flags(tmp_path: Path, source: str, run_id: str) -> list[str]:
    return [
        "run", "--source", source, "--column", "messages", "--last-role", "assistant",
        "--quarantine", str(tmp_path / "quarantine"), "--summary", str(tmp_path / "summary"),
        "--valid", str(tmp_path / "valid"), "--run-id", run_id, "--quiet",
    ]


def _complete_quarantine(tmp_path: Path) -> pa.Table:
    con = duckdb.connect()
    con.register("quarantine", _read(tmp_path / "quarantine"))
    con.register("summary", _read(tmp_path / "summary"))
    return con.execute(COMPLETE_RUNS_SQL).to_arrow_table()


def test_a_killed_run_is_invisible_to_the_complete_runs_query_until_rerun(tmp_path):
    source, table = _source(tmp_path)
    run(_config(tmp_path, source, "duckdb", run_id="done"), None)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_SCRIPT, "SIGKILL", *_cli_flags(tmp_path, source, "killed")],
        capture_output=True, text=True, timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL
    # SIGKILL leaves its rows behind, without a summary row: the README's query doesn't see them.
    assert "killed" in set(_read(tmp_path / "quarantine")["pb_run_id_"].to_pylist())
    assert set(_complete_quarantine(tmp_path)["pb_run_id_"].to_pylist()) == {"done"}
    run(_config(tmp_path, source, "duckdb", run_id="killed"), None)
    _assert_conserved(tmp_path, table, "killed")
    _assert_conserved(tmp_path, table, "done")


def test_a_terminated_run_takes_its_rows_back(tmp_path):
    source, _ = _source(tmp_path)
    run(_config(tmp_path, source, "duckdb", run_id="done"), None)
    stopped = subprocess.run(
        [sys.executable, "-c", KILLED_SCRIPT, "SIGTERM", *_cli_flags(tmp_path, source, "stopped")],
        capture_output=True, text=True, timeout=120,
    )
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr
    for name in ("quarantine", "valid"):
        assert set(_read(tmp_path / name)["pb_run_id_"].to_pylist()) == {"done"}


# -- concurrent runs in real processes -------------------------------------------------------------

CONCURRENT_SCRIPT = """
import os, sys, time
from pathlib import Path
from chatgate.cli import main
from chatgate.job import runner
from chatgate.job import writes

barrier, me, engine = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
write_outputs = runner.write_outputs

def together(*args, **kwargs):
    # Both processes reach their writes, then start them at the same moment.
    (barrier / me).touch()
    deadline = time.time() + 300
    while len(list(barrier.iterdir())) < 2 and time.time() < deadline:
        time.sleep(0.01)
    return write_outputs(*args, **kwargs)

runner.write_outputs = together
writes.RETRY_FIRST_WAIT = 0.2
for round_ in ("fresh", "existing"):
    barrier = Path(sys.argv[1]) / round_
    barrier.mkdir(exist_ok=True)
    flags = sys.argv[4:] + ["--run-id", f"{me}-{round_}", "--engine", engine]
    status = main(flags)
    if status != 0:
        sys.exit(status)
"""


# Two JVMs take over a minute; the duckdb case and the in-process Spark conflict tests above stay fast.
@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_concurrent_runs_on_the_same_outputs_both_land(tmp_path, engine):
    source, table = _source(tmp_path, rows=80)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    flags = _cli_flags(tmp_path, source, "unused")[:-3]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    started = time.monotonic()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_SCRIPT, str(barrier), me, engine, *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
        )
        for me in ("a", "b")
    ]
    outcomes = [p.communicate(timeout=600) for p in processes]
    for process, (_out, err) in zip(processes, outcomes):
        assert process.returncode == 0, err[-3000:]
    assert time.monotonic() - started < 600
    for run_id in ("a-fresh", "b-fresh", "a-existing", "b-existing"):
        _assert_conserved(tmp_path, table, run_id)
    assert _read(tmp_path / "summary").num_rows == 4
