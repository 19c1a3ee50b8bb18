"""Every documented way of running chatgate and reading its outputs exits cleanly, run after run.

A process that scans a Delta table through a PyArrow dataset on deltalake's default
filesystem (`DeltaTable(path).to_pyarrow_dataset()` or `.to_pyarrow_table()` with no
`filesystem=`) can die at interpreter exit: Arrow's threads hold that Python
filesystem, and when one drops it while the interpreter shuts down, the process
aborts ("terminate called without an active exception", status -6), segfaults or
hangs. chatgate never hands out such a dataset (`chatgate.stores.deltalake_tables`), and
`delta_source` is the way to query its outputs from Python. Each way runs here in
fresh processes: exit status 0 every time, and no "terminate called" on stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import write_deltalake

from chatgate.job.config import load_config
from chatgate.job.runner import run
from chatgate.sample import chat_table
from chatgate.stores.deltalake_tables import delta_source

RUNS = {"demo": 4, "run": 4, "run_column_mapping": 4, "recipe": 8, "recipe_column_mapping": 8}
"""Fresh processes per way in the default suite (the file takes about 40 s on 2 cores; the
ways over a column-mapped table, which differ only in the table they read, run with the slow tests).

Measured with the recipe reading through `DeltaTable(path).to_pyarrow_dataset()`
instead of `delta_source`, 16 of 20 processes died at exit: 8 runs miss that
regression with odds of about 1 in 400,000.
"""

SLOW_RUNS = 25
"""Fresh processes per way in the slow variant (`-m slow`)."""

TIMEOUT = 60  # a hang at exit is a failure too

RECIPE = '''
import sys

import duckdb
from chatgate.stores.deltalake_tables import delta_source

quarantine, summary = sys.argv[1], sys.argv[2]
con = duckdb.connect()
con.register("quarantine", delta_source(quarantine))
con.register("summary", delta_source(summary))
print(con.sql("""
    SELECT q.pb_reason_ AS reason, count(*) AS rows
    FROM quarantine AS q
    WHERE q.pb_run_id_ IN (SELECT run_id FROM summary)
    GROUP BY reason
    ORDER BY rows DESC
"""))
print(delta_source(quarantine).to_table(["pb_reason_"]).num_rows)
print(con.sql("SELECT * FROM quarantine LIMIT 3"))  # a scan left unfinished, just before exit
'''
"""The Python recipe for querying the outputs, as documented, over paths given on the command line."""


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    """Sources (plain; column-mapped) and outputs (plain, several files; a column-mapped copy)."""
    root = tmp_path_factory.mktemp("lake")
    # Enough failing rows that a scan left unfinished still has reads in flight at exit.
    table = chat_table(2_000, seed=7, duplicate_fraction=0.1, defect_fraction=0.4)
    mapped = {"delta.columnMapping.mode": "name"}
    for name, configuration in (("chats", None), ("chats_mapped", mapped)):
        write_deltalake(str(root / name), table.slice(0, 1_000), configuration=configuration)
        write_deltalake(str(root / name), table.slice(1_000), mode="append")
    for run_id in ("r1", "r2", "r3", "r4", "r5", "r6"):  # one file per run
        run(
            load_config(
                None,
                {
                    "source": str(root / "chats"),
                    "columns": ["messages"],
                    "quarantine": str(root / "chat_quarantine"),
                    "summary": str(root / "chat_summary"),
                    "run_id": run_id,
                },
            )
        )
    for name in ("chat_quarantine", "chat_summary"):
        write_deltalake(str(root / f"{name}_mapped"), delta_source(root / name).to_table(), configuration=mapped)
    return root


def _chatgate() -> list[str]:
    script = Path(sys.executable).with_name("chatgate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "chatgate.cli"]


def _ways(lake: Path, tmp_path: Path) -> dict[str, list[str]]:
    def job(source: str) -> list[str]:
        return [
            *_chatgate(), "run", "--source", str(lake / source), "--column", "messages",
            "--quarantine", str(tmp_path / f"{source}_quarantine"),
            "--summary", str(tmp_path / f"{source}_summary"), "--run-id", "exit",
        ]  # fmt: skip

    def recipe(suffix: str) -> list[str]:
        return [
            sys.executable, "-c", RECIPE,
            str(lake / f"chat_quarantine{suffix}"), str(lake / f"chat_summary{suffix}"),
        ]  # fmt: skip

    return {
        "demo": [sys.executable, "-m", "chatgate.demo", "--rows", "300", "--dir", str(tmp_path / "demo")],
        "run": job("chats"),
        "run_column_mapping": job("chats_mapped"),
        "recipe": recipe(""),
        "recipe_column_mapping": recipe("_mapped"),
    }


def _assert_clean_exits(command: list[str], runs: int, cwd: Path) -> None:
    env = {**os.environ, "CHATGATE_PROGRESS": "0"}
    failures = []
    for n in range(runs):
        try:
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            failures.append(f"run {n + 1}: still running after {TIMEOUT} s (a hang at exit?)")
            continue
        if done.returncode != 0 or "terminate called" in done.stderr:
            failures.append(f"run {n + 1}: exit status {done.returncode}\n{done.stderr[-2000:]}")
    assert not failures, f"{len(failures)} of {runs} runs didn't exit cleanly:\n" + "\n".join(failures)


@pytest.mark.parametrize(
    "way", [pytest.param(way, marks=[pytest.mark.slow] if "column_mapping" in way else []) for way in RUNS]
)
def test_every_documented_way_exits_cleanly(lake, tmp_path, way):
    _assert_clean_exits(_ways(lake, tmp_path)[way], RUNS[way], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("way", list(RUNS))
def test_every_documented_way_exits_cleanly_many_times(lake, tmp_path, way):
    _assert_clean_exits(_ways(lake, tmp_path)[way], SLOW_RUNS, tmp_path)


def test_the_recipe_reads_the_outputs(lake, tmp_path):
    """The recipe's answers: the column-mapped copy reads like the outputs themselves."""
    answers = []
    for suffix in ("", "_mapped"):
        done = subprocess.run(
            _ways(lake, tmp_path)["recipe" + ("_column_mapping" if suffix else "")],
            cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        answers.append(re.search(r"^(\d+)$", done.stdout, flags=re.M).group(1))
    assert answers[0] == answers[1] == str(delta_source(lake / "chat_quarantine").to_table().num_rows)
