"""The job as a Structured Streaming query (`--stream`), and `split` inside a user's own stream.

Appends between available-now runs are checked once each; a replayed micro-batch replaces its
own rows; two streams keep their own rows; a stream killed between its writes and restarted
from its checkpoint ends with each batch's rows written exactly once (slow: real processes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate import first_problem, split
from chatgate.errors import ConfigError
from chatgate.job.config import build_config
from chatgate.sample import chat_table
from job_helpers import read_delta

CHECKS = {"last_role": "assistant"}


def _append(path: Path, start: int, rows: int, seed: int) -> dict[int, str | None]:
    """Append `rows` rows with ids from `start`; {id: expected code}."""
    table = chat_table(rows, seed=seed, duplicate_fraction=0.2, defect_fraction=0.3)
    table = table.set_column(0, "id", pa.array(range(start, start + rows), pa.int64()))
    write_deltalake(str(path), table, mode="append")
    return {i: first_problem(m, **CHECKS) for i, m in zip(table["id"].to_pylist(), table["messages"].to_pylist())}


def _config(tmp_path: Path, checkpoint: str | None = "checkpoint", **extra):
    raw = {
        "source": str(tmp_path / "chats"), "engine": "spark", "columns": ["messages"], "checks": CHECKS,
        "stream": True, "checkpoint": None if checkpoint is None else str(tmp_path / checkpoint),
        "outputs": {"quarantine": str(tmp_path / "q"), "valid": str(tmp_path / "v"), "summary": str(tmp_path / "s")},
        **extra,
    }
    return build_config({k: v for k, v in raw.items() if v is not None}, {})


@pytest.mark.spark
def test_appends_between_available_now_runs_are_checked_once_each(tmp_path, spark):
    from chatgate.engines.spark import SparkEngine
    from chatgate.job.stream import run_stream

    engine = SparkEngine(spark=spark)
    expected = _append(tmp_path / "chats", 0, 60, seed=1)
    expected |= _append(tmp_path / "chats", 60, 40, seed=2)
    first = run_stream(_config(tmp_path), engine)
    assert sum(b.steps[0].judged.units for b in first.batches) == 100

    expected |= _append(tmp_path / "chats", 100, 30, seed=3)
    second = run_stream(_config(tmp_path), engine)
    assert [b.steps[0].judged.units for b in second.batches] == [30]
    assert run_stream(_config(tmp_path), engine).batches == []  # nothing new

    quarantine, valid = read_delta(tmp_path / "q"), read_delta(tmp_path / "v")
    ids = quarantine["id"].to_pylist() + valid["id"].to_pylist()
    assert Counter(ids) == Counter(range(130))  # every row once, in one of the two
    got = dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist()))
    assert got == {i: code for i, code in expected.items() if code is not None}
    runs = set(read_delta(tmp_path / "s")["run_id"].to_pylist())
    stream_id = _config(tmp_path).run_id
    assert stream_id.startswith("stream-") and runs == {f"{stream_id}-{b}" for b in range(len(runs))}
    assert set(read_delta(tmp_path / "s")["scope"].to_pylist()) == {"stream"}


@pytest.mark.spark
@pytest.mark.slow  # make test runs one stream's appends (above)
def test_a_second_stream_on_the_same_outputs_keeps_its_own_rows(tmp_path, spark):
    from chatgate.engines.spark import SparkEngine
    from chatgate.job.stream import run_stream

    engine = SparkEngine(spark=spark)
    _append(tmp_path / "chats", 0, 50, seed=4)
    run_stream(_config(tmp_path, "one"), engine)
    before = read_delta(tmp_path / "q").to_pylist()
    run_stream(_config(tmp_path, "two", run_id="other"), engine)
    quarantine = read_delta(tmp_path / "q")
    mine = [row for row in quarantine.to_pylist() if not row["pb_run_id_"].startswith("other-")]
    assert sorted(mine, key=lambda r: r["id"]) == sorted(before, key=lambda r: r["id"])
    assert Counter(quarantine["pb_run_id_"].to_pylist())["other-0"] == len(before)


@pytest.mark.spark
def test_split_gates_a_users_own_stream_into_two_delta_tables(tmp_path, spark):
    expected = _append(tmp_path / "chats", 0, 80, seed=5)
    stream = spark.readStream.format("delta").load(str(tmp_path / "chats"))
    passing, failing = split(stream, "messages", **CHECKS)
    queries = [
        rows.writeStream.format("delta").option("checkpointLocation", str(tmp_path / f"{name}-checkpoint"))
        .trigger(availableNow=True).start(str(tmp_path / name))
        for name, rows in (("curated", passing), ("rejected", failing))
    ]
    for query in queries:
        query.awaitTermination()
    curated, rejected = read_delta(tmp_path / "curated"), read_delta(tmp_path / "rejected")
    assert sorted(curated["id"].to_pylist()) == sorted(i for i, code in expected.items() if code is None)
    assert dict(zip(rejected["id"].to_pylist(), rejected["pb_reason_"].to_pylist())) == {
        i: code for i, code in expected.items() if code is not None
    }


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"engine": "duckdb"}, "stream: the duckdb engine reads no stream; use --engine spark"),
        ({"checkpoint": None}, "checkpoint: name where the stream keeps its progress"),
        ({"trigger": "soon"}, "trigger: 'soon' is neither 'available-now' nor an interval"),
        ({"since": "last"}, "since: a stream reads what is new by its checkpoint"),
        ({"stream": False}, "checkpoint: is for a stream; add --stream"),
    ],
)
def test_stream_settings_that_cant_work_are_one_line_naming_the_key(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        _config(tmp_path, **extra)  # checkpoint=None: no checkpoint key at all


def test_a_checkpoint_inside_an_output_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="checkpoint"):
        _config(tmp_path, checkpoint="q/_checkpoint")


KILL_SCRIPT = """
import os, signal, sys
from chatgate.cli import main
from chatgate.stores.delta_spark import DeltaSparkStore

if sys.argv[1] == "kill":
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)  # after the quarantine and valid writes, before the summary
    DeltaSparkStore.write_arrow = die
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_stream_killed_between_its_writes_and_restarted_writes_each_batch_exactly_once(tmp_path):
    expected = _append(tmp_path / "chats", 0, 70, seed=6)
    flags = [
        "run", "--engine", "spark", "--stream", "--checkpoint", str(tmp_path / "checkpoint"),
        "--source", str(tmp_path / "chats"), "--column", "messages", "--last-role", "assistant",
        "--quarantine", str(tmp_path / "q"), "--valid", str(tmp_path / "v"), "--summary", str(tmp_path / "s"),
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    killed = subprocess.run([sys.executable, "-c", KILL_SCRIPT, "kill", *flags], env=env, capture_output=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (tmp_path / "s").exists() or read_delta(tmp_path / "s").num_rows == 0
    assert read_delta(tmp_path / "q").num_rows > 0  # the batch's rows were written, its summary not

    restarted = subprocess.run([sys.executable, "-c", KILL_SCRIPT, "run", *flags], env=env, capture_output=True, timeout=600)
    assert restarted.returncode in (0, 3), restarted.stderr[-2000:]
    quarantine, valid = read_delta(tmp_path / "q"), read_delta(tmp_path / "v")
    assert Counter(quarantine["id"].to_pylist() + valid["id"].to_pylist()) == Counter(range(70))
    assert dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist())) == {
        i: code for i, code in expected.items() if code is not None
    }
    assert read_delta(tmp_path / "s").num_rows == 1
