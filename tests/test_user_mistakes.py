"""The mistakes people make, each answered by the `chatgate` command in one line and an exit status.

Run as a user runs it: the installed command in a fresh process, its stderr read whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate.airflow import run_chatgate
from chatgate.cli import main
from chatgate.errors import ConfigError
from chatgate.sample import chat_table
from chatgate.stores.deltalake_tables import delta_source

CHATGATE = str(Path(sys.executable).with_name("chatgate"))


@pytest.fixture
def lake(tmp_path):
    write_deltalake(str(tmp_path / "chats"), chat_table(60, seed=5, defect_fraction=0.2))
    return tmp_path


def _flags(lake: Path, **changes: str) -> list[str]:
    flags = {
        "--source": str(lake / "chats"),
        "--column": "messages",
        "--quarantine": str(lake / "q"),
        "--summary": str(lake / "s"),
        "--run-id": "r1",
        **changes,
    }
    return ["run", *[part for pair in flags.items() for part in pair if part is not None], "--quiet"]


def _chatgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHATGATE, *args], capture_output=True, text=True, timeout=300)


def _one_line(done: subprocess.CompletedProcess, status: int, *phrases: str) -> str:
    assert done.returncode == status, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for phrase in phrases:
        assert phrase in lines[0]
    return lines[0]


def test_a_reserved_column_in_any_case_is_named(tmp_path):
    write_deltalake(str(tmp_path / "chats"), pa.table({"messages": ["[]"], "PB_REASON_": ["x"]}))
    _one_line(_chatgate(*_flags(tmp_path)), 1, "chatgate: error: the source ", "already has a column 'PB_REASON_'")


def test_a_wrong_column_name_is_a_usage_error(lake):
    line = _one_line(_chatgate(*_flags(lake, **{"--column": "mesages"})), 2, "column 'mesages' isn't in the source")
    assert line.startswith("chatgate: config error:")
    assert line.endswith("; did you mean 'messages'?")


def test_a_column_name_far_from_every_column_gets_no_guess(lake):
    line = _one_line(_chatgate(*_flags(lake, **{"--column": "zzz"})), 2, "column 'zzz' isn't in the source")
    assert "did you mean" not in line


def test_an_output_under_a_file_is_named(lake):
    (lake / "afile").write_text("x")
    _one_line(_chatgate(*_flags(lake, **{"--quarantine": str(lake / "afile" / "q")})), 1, "which is a file")


def test_a_parquet_folder_as_output_is_refused_untouched(lake):
    (lake / "q").mkdir()
    pq.write_table(pa.table({"a": [1]}), lake / "q" / "part-0.parquet")
    _one_line(_chatgate(*_flags(lake)), 1, "holds files but no Delta table")
    assert sorted(p.name for p in (lake / "q").iterdir()) == ["part-0.parquet"]


def test_an_output_table_with_other_columns_is_named_with_the_way_out(lake):
    write_deltalake(str(lake / "q"), pa.table({"other": [1]}))
    line = _one_line(_chatgate(*_flags(lake)), 1, "the quarantine table", "--quarantine PATH")
    assert "lacks" in line
    assert DeltaTable(str(lake / "q")).version() == 0
    assert not (lake / "s").exists()  # nothing of the run was written


def test_a_config_that_isnt_utf8_is_named(lake):
    config = lake / "job.yaml"
    config.write_bytes(b"source: caf\xe9\n")
    _one_line(_chatgate("run", "--config", str(config)), 2, "isn't UTF-8 text")


@pytest.mark.parametrize(
    "yaml_text, phrase",
    [
        ("source: x\noutputs:\n  quarantine: {a: 1}\n  summary: s\n", "outputs.quarantine: must be text"),
        ("source: [a, b]\n", "source: must be text"),
        ("source_version: -1\nsource: x\noutputs: {quarantine: q, summary: s}\n", "source_version: -1 isn't a Delta"),
        ("source: x\n  bad: [indent\n", "isn't valid YAML"),
    ],
)
def test_config_values_of_the_wrong_kind_are_named(lake, yaml_text, phrase):
    config = lake / "job.yaml"
    config.write_text(yaml_text + "columns: [messages]\n")
    _one_line(_chatgate("run", "--config", str(config)), 2, phrase)


def test_an_unexpected_failure_is_one_line_and_debug_shows_the_traceback(lake, monkeypatch, capsys):
    from chatgate.job import runner

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(runner, "row_checks", broken)
    assert main(_flags(lake)) == 1
    err = capsys.readouterr().err
    assert err.strip() == "chatgate: error: KeyError: 'boom' (rerun with --debug for details)"
    with pytest.raises(KeyError):
        main([*_flags(lake), "--debug"])


@pytest.mark.parametrize(
    "typo, message",
    [({"last_rol": "assistant"}, "unknown option 'last_rol'; did you mean 'last_role'?"),
     ({"column": ["messages"]}, "unknown option 'column'; did you mean 'columns'?")],
)
def test_the_airflow_callable_names_a_mistyped_option(lake, typo, message):
    flags = {"source": str(lake / "chats"), "columns": ["messages"], "quarantine": str(lake / "q"),
             "summary": str(lake / "s"), "run_id": "scheduled__2026-12-02T00:00:00+00:00"}
    with pytest.raises(ConfigError, match=message.replace("?", r"\?")):
        run_chatgate(**{**flags, **typo})
    assert not (lake / "q").exists()


def test_the_airflow_callable_takes_airflow_run_ids(lake):
    run_id = "scheduled__2026-12-02T00:00:00+00:00"
    out = run_chatgate(source=str(lake / "chats"), columns=["messages"], quarantine=str(lake / "q"),
                       summary=str(lake / "s"), run_id=run_id)
    assert out["run_id"] == run_id
    assert delta_source(str(lake / "s")).to_table()["run_id"].to_pylist() == [run_id]


# -- Spark: names Delta and Spark SQL treat specially ------------------------------------------------

NAMES = ["chat `log`", "id;x=1", "ünï.dot\tcol"]


@pytest.mark.spark
def test_spark_job_takes_any_column_name(tmp_path, spark, capsys):
    table = chat_table(40, seed=2, defect_fraction=0.3)
    renamed = pa.table({NAMES[0]: table["messages"], NAMES[1]: table["id"], NAMES[2]: table["source"]})
    write_deltalake(str(tmp_path / "chats"), renamed)
    flags = _flags(tmp_path, **{"--column": NAMES[0]}) + ["--engine", "spark", "--valid", str(tmp_path / "v")]
    flags += ["--fix", "safe", "--fixed", str(tmp_path / "f"), "--turns", "all"]
    assert main(flags) == 0, capsys.readouterr().err
    # Such names need Delta's column mapping, which Spark turns on for the new outputs.
    outputs = [spark.read.format("delta").load(str(tmp_path / name)) for name in ("q", "v", "f")]
    assert all(output.columns[:3] == NAMES for output in outputs)
    ids = [row[0] for output in outputs for row in output.select(output.columns[1]).collect()]
    assert sorted(ids) == sorted(table["id"].to_pylist())
    assert outputs[2].count() > 0


@pytest.mark.spark
@pytest.mark.parametrize("name", ["db..chats", "a b", "`unclosed"])
def test_spark_catalog_output_name_that_doesnt_parse_is_named(lake, spark, capsys, name):
    assert main(_flags(lake, **{"--quarantine": name}) + ["--engine", "spark"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"chatgate: error: {name!r} isn't a table name Spark can parse")
    assert len(err.splitlines()) == 1


def test_a_config_cannot_run_code(lake):
    config = lake / "job.yaml"
    marker = lake / "ran"
    config.write_text(f'source: !!python/object/apply:os.system ["touch {marker}"]\ncolumns: [messages]\n')
    _one_line(_chatgate("run", "--config", str(config)), 2, "isn't valid YAML")
    assert not marker.exists()


def test_python_dash_m_chatgate_is_the_command():
    done = subprocess.run([sys.executable, "-m", "chatgate", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("chatgate ")
