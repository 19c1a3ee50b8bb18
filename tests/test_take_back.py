"""A failed run whose take-back fails too says, in one line, which tables still hold its rows and
how to remove them; `chatgate clean` (or a rerun with the run id) removes them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import write_deltalake

from chatgate.job.registry import store_for
from chatgate.job.runner import run
from chatgate.job.writes import RowsLeftBehind
from chatgate.sample import chat_table
from job_helpers import SPARK_SLOW, job_config, read_delta

CHATGATE = str(Path(sys.executable).with_name("chatgate"))
CHECKS = {"last_role": "assistant"}


def _source(tmp_path: Path) -> str:
    path = str(tmp_path / "chats")
    write_deltalake(path, chat_table(80, seed=8, defect_fraction=0.3))
    return path


def _run_ids(path: Path, column: str = "pb_run_id_") -> set[str]:
    return set(read_delta(path)[column].to_pylist()) if path.exists() else set()


def _failing_take_back(backend, monkeypatch):
    """The summary write fails (a full disk), and so does every delete of a run's rows but the summary's."""
    delete_run = store_for(backend).delete_run

    def summary_fails(*args, **kwargs):
        raise OSError(28, "No space left on device")

    def only_summary_deletes(target, column, run_id):
        if column != "run_id":
            raise OSError(28, "No space left on device")
        delete_run(target, column, run_id)

    monkeypatch.setattr(store_for(backend), "write_arrow", summary_fails)
    monkeypatch.setattr(store_for(backend), "delete_run", only_summary_deletes)


def test_a_take_back_that_fails_names_the_tables_and_the_run_and_clean_removes_them(tmp_path, engine, backend, monkeypatch):
    source = _source(tmp_path)
    run(job_config(tmp_path, source, engine, CHECKS, run_id="other"), backend)
    with monkeypatch.context() as patch:
        _failing_take_back(backend, patch)
        with pytest.raises(RowsLeftBehind) as info:
            run(job_config(tmp_path, source, engine, CHECKS, run_id="r 7"), backend)
    message = str(info.value)
    assert "No space left on device" in message
    assert f"the quarantine {str(tmp_path / 'quarantine')!r}, the valid {str(tmp_path / 'valid')!r}" in message
    assert "run 'r 7' still has rows" in message
    assert f"`chatgate clean --run-id 'r 7' --quarantine {tmp_path / 'quarantine'} --valid {tmp_path / 'valid'}`" in message
    assert "\n" not in message
    assert _run_ids(tmp_path / "quarantine") == {"other", "r 7"}
    assert _run_ids(tmp_path / "summary", "run_id") == {"other"}  # the failed run is not complete

    from chatgate.job.writes import clean_run

    cleaned = clean_run(store_for(backend), {"quarantine": str(tmp_path / "quarantine"), "valid": str(tmp_path / "valid")}, "r 7")
    assert cleaned == [str(tmp_path / "quarantine"), str(tmp_path / "valid")]
    assert _run_ids(tmp_path / "quarantine") == _run_ids(tmp_path / "valid") == {"other"}


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_rerun_with_the_run_id_replaces_the_rows_left_behind(tmp_path, engine, backend, monkeypatch):
    source = _source(tmp_path)
    with monkeypatch.context() as patch:
        _failing_take_back(backend, patch)
        with pytest.raises(RowsLeftBehind):
            run(job_config(tmp_path, source, engine, CHECKS, run_id="r1"), backend)
    left = read_delta(tmp_path / "quarantine").num_rows
    result = run(job_config(tmp_path, source, engine, CHECKS, run_id="r1"), backend)
    assert read_delta(tmp_path / "quarantine").num_rows == result.quarantined == left


CLEAN_SCRIPT = """
import sys
from chatgate.stores.deltalake_store import DeltalakeStore
from chatgate.cli import main

def fail(*args, **kwargs):
    raise OSError(28, "No space left on device")

DeltalakeStore.write_arrow = fail
deletes = DeltalakeStore.delete_run
DeltalakeStore.delete_run = lambda self, t, c, r: deletes(self, t, c, r) if c == "run_id" else fail()
sys.exit(main(sys.argv[1:]))
"""


def test_the_cli_names_what_remains_in_one_line_and_chatgate_clean_removes_it(tmp_path):
    _source(tmp_path)
    flags = ["--source", "chats", "--column", "messages", "--quarantine", "q", "--summary", "s", "--run-id", "n1"]
    failed = subprocess.run(
        [sys.executable, "-c", CLEAN_SCRIPT, "run", *flags, "--quiet"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert failed.returncode == 1, failed.stderr
    [line] = failed.stderr.strip().splitlines()
    assert "Traceback" not in failed.stderr
    assert line.startswith("chatgate: error: ")
    assert "run 'n1' still has rows in the quarantine 'q': remove them with `chatgate clean --run-id n1 --quarantine q`" in line
    assert _run_ids(tmp_path / "q") == {"n1"}

    cleaned = subprocess.run(
        [CHATGATE, "clean", "--run-id", "n1", "--quarantine", "q", "--summary", "s"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert cleaned.returncode == 0, cleaned.stderr
    assert cleaned.stdout.splitlines() == ["deleted the rows of run 'n1' from q"]
    assert _run_ids(tmp_path / "q") == set()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--run-id", "x"], "name the tables to clean"),
        (["--run-id", "x", "--quarantine", "q", "--summary", "q/"], "are one table"),
        (["--run-id", "", "--quarantine", "q"], "run_id: '' is empty"),
    ],
)
def test_chatgate_clean_refuses_in_one_line(tmp_path, flags, message):
    done = subprocess.run([CHATGATE, "clean", *flags], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert message in line
