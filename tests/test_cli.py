"""The command line: flags, the printed summary, exit statuses, and the demo behind `make run`."""

from __future__ import annotations

import pytest
from deltalake import write_deltalake

from chatgate.cli import main
from chatgate.demo import main as demo_main
from chatgate.sample import chat_table
from chatgate.stores.deltalake_tables import delta_source


@pytest.fixture
def lake(tmp_path):
    write_deltalake(str(tmp_path / "chats"), chat_table(300, seed=5, defect_fraction=0.2))
    return tmp_path


def _flags(lake, *extra):
    return [
        "run",
        "--source", str(lake / "chats"),
        "--column", "messages",
        "--first-role", "user",
        "--last-role", "assistant",
        "--quarantine", str(lake / "q"),
        "--summary", str(lake / "s"),
        "--valid", str(lake / "v"),
        "--run-id", "cli-1",
        "--quiet",
        *extra,
    ]


def test_run_prints_a_one_screen_summary(lake, capsys):
    status = main(_flags(lake, "--warning", "1"))
    out = capsys.readouterr().out
    assert status == 0
    assert "chatgate run cli-1 · engine duckdb" in out
    assert "source: " in out and "(Delta version 0)" in out
    assert "step  column    units  failed" in out
    assert "messages  300" in out
    assert "warning" in out
    assert "status: 0 (no step reached its error level)" in out
    failed = delta_source(str(lake / "q")).to_table().num_rows
    assert f"({failed:,} rows of this run)" in out
    assert "(1 row of this run)" in out
    assert len(out.splitlines()) < 25


def test_error_level_gives_status_3_and_critical_4(lake, capsys):
    assert main(_flags(lake, "--error", "0.05")) == 3
    assert "status: 3 (a step reached its error level)" in capsys.readouterr().out
    assert main(_flags(lake, "--error", "5", "--critical", "10")) == 4


def test_config_error_gives_status_2_and_names_the_key(lake, capsys):
    assert main(_flags(lake, "--last-role", "bot")) == 2
    err = capsys.readouterr().err
    assert err.startswith("chatgate: config error:")
    assert "last_role='bot'" in err


def test_unreadable_source_gives_status_1(lake, capsys):
    flags = _flags(lake)
    flags[flags.index("--source") + 1] = str(lake / "missing")
    assert main(flags) == 1
    assert "chatgate: error: can't read the source" in capsys.readouterr().err


def test_unknown_flag_is_a_usage_error(lake):
    with pytest.raises(SystemExit) as info:
        main(_flags(lake, "--colum", "x"))
    assert info.value.code == 2


def test_demo_builds_a_lakehouse_runs_and_queries(tmp_path, capsys):
    assert demo_main(["--rows", "800", "--dir", str(tmp_path / "lake")]) == 0
    out = capsys.readouterr().out
    assert "Built a sample Delta table of 800 conversations" in out
    assert "chatgate run demo · engine duckdb" in out
    assert "SQL over the quarantine table (DuckDB):" in out
    assert "reason" in out and "first_id" in out
    for code in ("not_messages", "empty_content", "not_alternating"):
        assert code in out


def test_run_with_the_embedded_engines_settings(lake, capsys):
    flags = _flags(lake, "--memory-limit", "64MB", "--threads", "1", "--temp-dir", str(lake / "spill"))
    assert main(flags) == 0, capsys.readouterr().err
    assert "status: 0" in capsys.readouterr().out


def test_run_help_gives_an_example_and_every_exit_status():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "chatgate", "run", "--help"], capture_output=True, text=True, check=True)
    text = done.stdout
    assert "example:\n  chatgate run --source lake/chats --column messages" in text
    for line in (
        "0  no step reached its error level",
        "1  the run failed (an unreadable source, a write error); it took its rows back",
        "2  a bad flag, config key or column name",
        "3  a step reached its error level (--error)",
        "4  a step reached its critical level (--critical)",
    ):
        assert line in text
