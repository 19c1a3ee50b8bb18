"""No output is lost or hidden by where it is written: the source and the outputs are compared as
the tables they are, not as the strings typed, before anything is read or written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import write_deltalake

from chatgate.errors import ConfigError
from chatgate.job.config import build_config
from chatgate.job.locations import resolve
from chatgate.sample import chat_table

CHATGATE = str(Path(sys.executable).with_name("chatgate"))
ENGINES = ["duckdb", "spark"]


@pytest.fixture
def lake(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_deltalake("chats", chat_table(40, seed=3, defect_fraction=0.3))
    (tmp_path / "o").mkdir()
    os.symlink(tmp_path / "o", tmp_path / "olink")
    return tmp_path


def _chatgate(lake: Path, *flags: str, engine: str = "duckdb") -> subprocess.CompletedProcess:
    args = [CHATGATE, "run", "--engine", engine, "--source", "chats", "--column", "messages", "--summary", "o/s"]
    return subprocess.run([*args, *flags, "--quiet"], capture_output=True, text=True, timeout=300, cwd=lake)


def _refused(done: subprocess.CompletedProcess, *phrases: str) -> None:
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("chatgate: config error:")
    for phrase in phrases:
        assert phrase in line, line


ONE_TABLE_TWO_NAMES = [
    ("--quarantine", "o/q", "--valid", "o/q/"),
    ("--quarantine", "o/./q", "--valid", "o//q"),
    ("--quarantine", "o/q", "--valid", "olink/q"),
    ("--quarantine", "o/q", "--valid", "{lake}/o/q"),
    ("--valid", "o/v", "--fixed", "o//v"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("first, a, second, b", ONE_TABLE_TWO_NAMES)
def test_one_table_under_two_names_is_refused_before_anything_is_written(lake, engine, first, a, second, b):
    flags = [first, a, second, b.format(lake=lake)]
    if "--quarantine" not in flags:
        flags += ["--quarantine", "o/q", "--fix", "safe"]
    done = _chatgate(lake, *flags, engine=engine)
    where = os.path.realpath(lake / "o" / a.split("/")[-1])
    _refused(done, f"{first} {a!r}", f"{second} {flags[3]!r}", "are one table", f"({where})")
    assert sorted(os.listdir(lake / "o")) == []


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("quarantine", ["chats/quarantine", "./chats/q", "o/q/../../chats/q"])
def test_an_output_inside_the_source_folder_is_refused(lake, engine, quarantine):
    done = _chatgate(lake, "--quarantine", quarantine, engine=engine)
    _refused(done, f"--quarantine {quarantine!r}", "lies inside the folder of the source (--source 'chats')", "VACUUM")
    assert {p for p in os.listdir(lake / "chats") if not p.endswith(".parquet")} == {"_delta_log"}


@pytest.mark.parametrize("quarantine", ["chats", "./chats", "chats/", "{lake}/chats", "srclink"])
def test_an_output_that_is_the_source_is_refused_in_one_line(lake, quarantine):
    os.symlink(lake / "chats", lake / "srclink")
    done = _chatgate(lake, "--quarantine", quarantine.format(lake=lake))
    _refused(done, "is the source table itself", os.path.realpath(lake / "chats"))


def test_an_output_inside_another_output_is_refused(lake):
    _refused(_chatgate(lake, "--quarantine", "o/q", "--valid", "o/q/valid"), "lies inside the folder of the quarantine")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_percent_escape_in_a_path_is_refused_before_writing(lake, engine):
    done = _chatgate(lake, "--quarantine", "o/a%20b", engine=engine)
    _refused(done, "quarantine: the path 'o/a%20b' holds '%20'")
    assert os.listdir(lake / "o") == []


def test_other_url_characters_in_a_path_are_written_and_read_at_the_same_place(lake):
    done = _chatgate(lake, "--quarantine", "o/a #b?c%zz", "--run-id", "r1")
    assert done.returncode == 0, done.stderr
    from job_helpers import read_delta

    assert set(read_delta(lake / "o" / "a #b?c%zz")["pb_run_id_"].to_pylist()) == {"r1"}


@pytest.mark.parametrize(
    "a, b",
    [
        ("s3://bucket/lake/q", "S3A://BUCKET/lake//q/"),
        ("abfss://c@acct.dfs.core.windows.net/q", "abfs://c@acct.dfs.core.windows.net/./q"),
        ("gs://b/q", "gcs://b/q"),
    ],
)
def test_object_store_urls_naming_one_table_are_one_table(a, b):
    assert resolve(a) == resolve(b)
    with pytest.raises(ConfigError, match="are one table"):
        build_config({"source": "s3://bucket/chats", "columns": ["messages"]}, {"quarantine": a, "valid": b, "summary": "s3://b/s"})


def test_catalog_names_on_spark_are_compared_ignoring_case():
    raw = {"source": "db.chats", "engine": "spark", "columns": ["messages"]}
    with pytest.raises(ConfigError, match="are one table"):
        build_config(raw, {"quarantine": "db.q", "summary": "DB.Q"})
    with pytest.raises(ConfigError, match="is the source table itself"):
        build_config(raw, {"quarantine": "DB.Chats", "summary": "db.s"})
    assert build_config(raw, {"quarantine": "db.q", "summary": "db.s"}).outputs.summary == "db.s"


def test_distinct_tables_side_by_side_are_accepted(tmp_path):
    config = build_config(
        {"source": str(tmp_path / "chats"), "columns": ["messages"]},
        {"quarantine": str(tmp_path / "chats_q"), "summary": str(tmp_path / "chats2"), "valid": str(tmp_path / "v")},
    )
    assert config.outputs.quarantine.endswith("chats_q")


def test_file_urls_in_every_spelling_are_the_local_path(tmp_path):
    local = os.path.realpath(tmp_path / "q")
    assert resolve(f"file://{tmp_path}/q") == resolve(f"file:{tmp_path}/q") == resolve(f"file:///{tmp_path}/q/") == local


@pytest.mark.spark
def test_a_catalog_table_and_its_path_are_one_table_on_spark(tmp_path, spark):
    from chatgate.engines.spark import SparkEngine
    from chatgate.job.runner import run

    write_deltalake(str(tmp_path / "chats"), chat_table(10, seed=1))
    location = tmp_path / "o" / "q"
    spark.sql(f"CREATE TABLE chatgate_identity_q (a INT) USING DELTA LOCATION '{location}'")
    try:
        config = build_config(
            {"source": str(tmp_path / "chats"), "engine": "spark", "columns": ["messages"]},
            {"quarantine": "chatgate_identity_q", "valid": str(location), "summary": str(tmp_path / "s")},
        )
        with pytest.raises(ConfigError, match=r"the quarantine \(--quarantine 'chatgate_identity_q'\) and the valid .* are one table"):
            run(config, SparkEngine(spark=spark))
    finally:
        spark.sql("DROP TABLE IF EXISTS chatgate_identity_q")
