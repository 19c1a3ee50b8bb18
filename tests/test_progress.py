"""Progress on long runs (issue 26, item 2): one reporter for both engines, the job and the API.

A tqdm bar on a terminal, a plain line every few seconds otherwise, nothing with --quiet;
stderr only, the summary on stdout. The CLI runs in a fresh process; a small module
constant (the batches a check must take before progress shows) and the interval
(CHATGATE_PROGRESS_INTERVAL) keep the data small and the waits short.
"""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate import progress
from chatgate.progress import Progress, duration
from chatgate.sample import chat_table

# The CLI, with every check streamed in batches of 100 rows and progress shown however few there are.
CLI = """
import sys
from chatgate.engines.ibis import stream
from chatgate.engines.ibis.duckdb import DuckDBEngine
from chatgate.cli import main

stream.PROGRESS_MIN_BATCHES = 0
DuckDBEngine.__init__.__kwdefaults__["chunk_size"] = 100
"""
RUN = "sys.exit(main(sys.argv[1:]))\n"
CLI += RUN
# The same, with a write that fails after its bar is drawn.
FAILING_WRITE = CLI.removesuffix(RUN) + """
import time
from chatgate.stores.deltalake_store import DeltalakeStore

def replace_run(self, *args, **kwargs):
    time.sleep(1.5)
    raise OSError("the disk is on fire")

DeltalakeStore.replace_run = replace_run
""" + RUN
ROWS = 4_000


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("progress")
    write_deltalake(str(folder / "chats"), chat_table(ROWS, seed=4, defect_fraction=0.2))
    return folder


def _flags(lake: Path, name: str) -> list[str]:
    out = lake / name
    return ["run", "--source", str(lake / "chats"), "--column", "messages", "--quarantine", str(out / "q"),
            "--summary", str(out / "s"), "--valid", str(out / "v"), "--threads", "1"]  # fmt: skip


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != progress.ENV}
    return {**env, progress.INTERVAL_ENV: "0.02", **settings}


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=300, env=env)


# -- off a terminal: a line every few seconds --------------------------------------------------


def test_off_a_terminal_the_cli_prints_a_progress_line_every_interval_on_stderr(lake):
    done = _cli(*_flags(lake, "lines"), env=_env())
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    checked = [line for line in lines if line.startswith("chatgate: step 1 (messages): ")]
    assert checked, done.stderr
    pattern = re.compile(r"chatgate: step 1 \(messages\): [\d,]+ of 4,000 rows checked(, [\d,.]+/s(, about \d+ s left)?)?")
    assert all(pattern.fullmatch(line) for line in checked), checked
    assert "\r" not in done.stderr  # no bar off a terminal
    assert "step 1 (messages)" not in done.stdout and done.stdout.startswith("chatgate run ")


def test_quiet_prints_no_progress(lake):
    done = _cli(*_flags(lake, "quiet"), "--quiet", env=_env())
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("chatgate run ")


def test_progress_off_by_the_environment(lake):
    done = _cli(*_flags(lake, "off"), env=_env(**{progress.ENV: "0"}))
    assert done.returncode == 0, done.stderr
    assert "rows checked" not in done.stderr and "so far" not in done.stderr


# -- on a terminal: a tqdm bar -------------------------------------------------------------------


def _on_a_terminal(args: list[str], env: dict[str, str], code: str = CLI, columns: int = 120) -> tuple[int, bytes]:
    """Run the CLI with stdout and stderr on a terminal (a pseudo-terminal of `columns` columns)."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40 if columns else 0, columns, 0, 0))
        os.execve(sys.executable, [sys.executable, "-c", code, *args], env)
    out = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out


def test_on_a_terminal_the_cli_draws_a_bar_and_clears_it_before_the_summary(lake):
    code, out = _on_a_terminal(_flags(lake, "tty"), _env())
    text = out.decode("utf-8", "replace")
    assert code == 0, text
    assert re.search(r"\rstep 1 \(messages\):\s+\d+%\|", text), text  # tqdm's bar, named by the step
    before, summary = text.split("chatgate run ", 1)
    # The bar's line is cleared: the summary starts on a clean line, never after a half-drawn bar.
    assert before.endswith(("\r", "\n")), repr(before[-200:])
    assert "rows checked" not in text  # no plain lines on a terminal


def test_a_terminal_that_gives_no_width_gets_lines_where_tqdm_would_draw_nothing(lake):
    code, out = _on_a_terminal(_flags(lake, "tty_no_width"), _env(), columns=0)
    text = out.decode("utf-8", "replace")
    assert code == 0, text
    assert re.search(r"chatgate: step 1 \(messages\): [\d,]+ of 4,000 rows checked", text), text
    assert "%|" not in text


def test_on_a_terminal_a_failed_write_clears_its_bar_before_the_one_line_error(lake):
    code, out = _on_a_terminal(_flags(lake, "tty_fails"), _env(), FAILING_WRITE)
    text = out.decode("utf-8", "replace")
    assert code == 1, text
    assert re.search(r"\rwriting the quarantine table .*: 00:0\d", text), text  # its bar was drawn
    before, error = text.split("chatgate: error: ", 1)
    assert before.endswith(("\r", "\n")), repr(before[-200:])  # cleared: the error starts its own line
    assert error.rstrip("\r\n").count("\n") == 0 and "\r" not in error.rstrip("\r\n")
    assert "the disk is on fire" in error


def test_on_a_terminal_quiet_draws_nothing(lake):
    code, out = _on_a_terminal([*_flags(lake, "tty_quiet"), "--quiet"], _env())
    text = out.decode("utf-8", "replace")
    assert code == 0, text
    assert "%|" not in text and "step 1" not in text
    assert text.startswith("chatgate run ")


# -- the reporter itself -------------------------------------------------------------------------


@pytest.fixture
def lines_every_20ms(monkeypatch, caplog):
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.02")
    caplog.set_level(logging.INFO, logger="chatgate.progress")
    return caplog


def _progress_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "chatgate-progress"]


def test_a_line_counts_of_the_total_with_the_pace_and_time_left():
    shown = Progress("step 1 (messages)", 500_000, show="off")
    shown.started -= 4
    shown.update(120_000)
    shown._first = (shown.started + 1, 0)
    said = shown.line()  # 120,000 in the 3 s since the first were done
    assert re.fullmatch(r"step 1 \(messages\): 120,000 of 500,000 rows checked, (39,9\d\d|40,000)/s, about 10 s left", said)
    assert Progress("x", 10, show="off").line() == "x: 0 of 10 rows checked"
    waiting = Progress("writing the quarantine table q", counting=False, show="off")
    waiting.started -= 75
    assert waiting.line() == "writing the quarantine table q: 1 min 15 s so far"


@pytest.mark.parametrize(("seconds", "said"), [(0.4, "0 s"), (9, "9 s"), (125, "2 min 5 s"), (3780, "1 h 3 min")])
def test_durations_read_as_people_say_them(seconds, said):
    assert duration(seconds) == said


def test_lines_come_every_interval_and_stop_with_the_pass(lines_every_20ms):
    with Progress("checking chat", 1_000, show="lines") as shown:
        for _ in range(5):
            shown.update(100)
            time.sleep(0.03)
    said = [r.getMessage() for r in lines_every_20ms.records if r.name == "chatgate.progress"]
    assert len(said) >= 2 and all(line.startswith("checking chat: ") for line in said)
    count = len(said)
    time.sleep(0.1)
    assert len([r for r in lines_every_20ms.records if r.name == "chatgate.progress"]) == count
    assert not _progress_threads()


def test_an_error_stops_the_reporter_and_clears_its_bar(lines_every_20ms, capsys):
    with pytest.raises(ValueError, match="boom"), Progress("checking chat", 100, show="bar") as shown:
        shown.update(10)
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"), Progress("writing", counting=False, show="lines"):
        time.sleep(0.05)
        raise ValueError("boom")
    assert not _progress_threads()
    err = capsys.readouterr().err
    assert err.endswith("\r") or err == ""  # the bar's line cleared


def test_silence_and_the_environment_decide_the_mode(monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    assert progress.mode() == "lines"  # pytest's stderr isn't a terminal
    assert progress.mode(True) == "bar" and progress.mode(False) == "off"
    monkeypatch.setenv(progress.ENV, "1")
    assert progress.mode() == "bar"
    monkeypatch.setenv(progress.ENV, "0")
    assert progress.mode() == "off"
    monkeypatch.setenv(progress.ENV, "lines")
    with progress.silenced():
        assert progress.mode() == "off" and progress.mode(True) == "off"
    assert progress.mode() == "lines"


def test_the_clis_quiet_silences_progress_for_its_run_only(tmp_path, monkeypatch):
    from chatgate.cli import main

    write_deltalake(str(tmp_path / "chats"), chat_table(20, seed=1))
    seen = []
    monkeypatch.setattr("chatgate.job.runner.check_rows", lambda *a, **k: seen.append(progress.mode(True)) or 1 / 0)
    flags = ["run", "--source", str(tmp_path / "chats"), "--column", "messages", "--quarantine", str(tmp_path / "q"),
             "--summary", str(tmp_path / "s"), "--quiet"]  # fmt: skip
    assert main(flags) == 1
    assert seen == ["off"]
    assert progress.mode(True) == "bar"  # as before the run


def test_the_api_engine_reports_through_the_same_reporter(lines_every_20ms, monkeypatch):
    import ibis

    from chatgate.engines.ibis import IbisEngine
    from chatgate.engines.ibis import stream as ibis_stream
    from chatgate.rules import ChatFormat

    monkeypatch.setattr(ibis_stream, "PROGRESS_MIN_BATCHES", 0)
    values = chat_table(3_000, seed=5, defect_fraction=0.2).column("messages").to_pylist()
    keep = ibis_stream._keep

    def slowly(*args, **kwargs):
        time.sleep(0.01)
        return keep(*args, **kwargs)

    monkeypatch.setattr(ibis_stream, "_keep", slowly)
    table = ibis.memtable(pa.table({"chat": pa.array(values, pa.string())}))
    IbisEngine(chunk_size=100, progress=None).judge(table, "chat", ChatFormat(), dedup="off")
    said = [r.getMessage() for r in lines_every_20ms.records if r.name == "chatgate.progress"]
    assert said and all(re.match(r"checking chat: [\d,]+ of 3,000 rows checked", line) for line in said), said


# -- Spark: the tasks of the check's stages, polled on the driver -------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("group", [None, "theirs"])
def test_spark_progress_counts_the_tasks_of_the_blocks_jobs_and_leaves_the_job_group_alone(spark, lines_every_20ms, group):
    from chatgate.engines.spark.progress import spark_progress

    context = spark.sparkContext
    if group is not None:
        context.setJobGroup(group, "their description")
    try:

        def slow(batches):
            for batch in batches:
                time.sleep(0.3)
                yield batch

        assert spark.range(0, 40, numPartitions=20).count() == 40  # 20 tasks before the block: not counted
        frame = spark.range(0, 8, numPartitions=4).mapInArrow(slow, "id long")
        with spark_progress(spark, "step 1 (messages)"):
            assert context.getLocalProperty("spark.jobGroup.id") == group  # a scheduler cancels by it
            assert frame.count() == 8
        assert context.getLocalProperty("spark.job.description") == ("their description" if group else None)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
    said = [r.getMessage() for r in lines_every_20ms.records if r.name == "chatgate.progress"]
    counted = [line for line in said if re.fullmatch(r"step 1 \(messages\): \d+ of \d+ tasks done.*", line)]
    assert counted, said
    totals = {int(re.search(r"of (\d+) tasks", line).group(1)) for line in counted}
    assert max(totals) < 20, said  # the tasks of the block's count (4, then its last stage), never the job's before
    assert not _progress_threads()


@pytest.mark.spark
def test_the_spark_engine_reports_the_check_under_the_steps_name(spark, lines_every_20ms):
    from chatgate.engines.spark import SparkEngine
    from chatgate.rules import ChatFormat

    def slowly(batches):
        for batch in batches:
            time.sleep(0.2)
            yield batch

    values = chat_table(400, seed=6, defect_fraction=0.2).column("messages").to_pylist()
    frame = spark.createDataFrame([(v,) for v in values], "messages string").repartition(4)
    frame = frame.mapInArrow(slowly, frame.schema)
    with progress.labelled("step 1 (messages)"):
        judged = SparkEngine(spark=spark).judge(frame, "messages", ChatFormat())
    assert judged.units == 400
    said = [r.getMessage() for r in lines_every_20ms.records if r.name == "chatgate.progress"]
    assert any(re.fullmatch(r"step 1 \(messages\): \d+ of \d+ tasks done.*", line) for line in said), said
    assert not _progress_threads()
