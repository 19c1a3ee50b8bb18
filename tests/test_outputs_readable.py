"""Outputs stay readable whatever the source holds (issue 23, item 3).

A 30 MB (and, in the slow run, a 200 MB) conversation lands in the quarantine (it fails) and
another in the valid table (it passes: `max_value_bytes` is raised past it). Every output the embedded engine wrote is then read back
by deltalake's own reader, by DuckDB (through `delta_source`) and by Spark, and its commit
log stays small: the outputs are compressed, and their statistics (Parquet footers, Delta
log) hold truncated prefixes of the values, never the values.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate.stores.deltalake_tables import DeltaScan, delta_source

CHATGATE = str(Path(sys.executable).with_name("chatgate"))
LOG_LIMIT = 2**20
"""The most an output's whole _delta_log may hold: the huge value's size never shows in it."""

OUTPUTS = ("quarantine", "summary", "valid")


def _huge_source(path: Path, megabytes: int) -> dict[int, int]:
    """A Delta table with one failing and one passing conversation of `megabytes` MB; their lengths by id."""
    size = megabytes * 2**20
    failing = json.dumps([{"role": "user", "content": "x" * size}])  # ends with the user: last_role
    passing = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "y" * size}])
    small = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'
    rows = {1: failing, 2: passing, 3: small}
    write_deltalake(str(path), pa.table({"id": list(rows), "messages": list(rows.values())}))
    return {key: len(value) for key, value in rows.items()}


@pytest.fixture(
    scope="module",
    params=[
        ("duckdb", 30),
        pytest.param(("spark", 30), marks=[pytest.mark.spark, pytest.mark.slow]),
        pytest.param(("duckdb", 200), marks=pytest.mark.slow),
    ],
    ids=lambda param: f"{param[0]}-{param[1]}MB",
)
def lake(request, tmp_path_factory):
    """The job's outputs (written by one engine) over a source holding a huge value:
    (folder, the values' lengths by id)."""
    engine, megabytes = request.param
    folder = tmp_path_factory.mktemp(f"{engine}{megabytes}")
    lengths = _huge_source(folder / "chats", megabytes)
    done = subprocess.run(
        [
            CHATGATE, "run", "--engine", engine, "--source", str(folder / "chats"), "--column", "messages",
            "--last-role", "assistant", "--max-value-bytes", str(2**30), "--run-id", "huge", "--quiet",
            *(item for name in OUTPUTS for item in (f"--{name}", str(folder / name))),
        ],
        capture_output=True, text=True, timeout=900, cwd=folder,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, lengths


def _expected(lengths: dict[int, int]) -> dict[str, dict[int, int]]:
    """Each row output's rows: id -> length of its messages."""
    return {"quarantine": {1: lengths[1]}, "valid": {2: lengths[2], 3: lengths[3]}}


def _lengths(table: pa.Table) -> dict[int, int]:
    lengths = pc.utf8_length(table["messages"]).to_pylist()
    return dict(zip(table["id"].to_pylist(), lengths))


def test_commit_logs_stay_small(lake):
    folder, _ = lake
    for name in OUTPUTS:
        log = folder / name / "_delta_log"
        size = sum(f.stat().st_size for f in log.iterdir() if f.is_file())
        assert size < LOG_LIMIT, f"the {name} table's commit log holds {size} bytes"


def test_outputs_are_compressed_with_truncated_statistics(lake):
    folder, lengths = lake
    for name in ("quarantine", "valid"):
        for file in (folder / name).glob("*.parquet"):
            metadata = pq.ParquetFile(file).metadata
            assert metadata.serialized_size < LOG_LIMIT, f"{file}'s footer holds {metadata.serialized_size} bytes"
            for group in range(metadata.num_row_groups):
                for index in range(metadata.num_columns):
                    column = metadata.row_group(group).column(index)
                    assert column.compression != "UNCOMPRESSED", f"{file}: {column.path_in_schema}"
                    stats = column.statistics
                    if stats is not None and stats.has_min_max and isinstance(stats.min, (str, bytes)):
                        assert len(stats.min) <= 64 and len(stats.max) <= 64
    for name in OUTPUTS:
        for line in _log_lines(folder / name):
            if "add" in line and line["add"].get("stats"):
                stats = json.loads(line["add"]["stats"])
                for bound in ("minValues", "maxValues"):
                    for value in _leaves(stats.get(bound, {})):
                        assert not isinstance(value, str) or len(value) <= 64


def _log_lines(table: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((table / "_delta_log").glob("*.json")) for line in f.open()]


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def test_deltalake_reads_every_output(lake):
    folder, lengths = lake
    for name, rows in _expected(lengths).items():
        table = DeltaScan(DeltaTable(str(folder / name))).to_table()  # deltalake's own reader
        assert _lengths(table) == rows
        arrow = DeltaTable(str(folder / name)).to_pyarrow_dataset().to_table()  # PyArrow's Parquet reader
        assert _lengths(arrow) == rows
    summary = DeltaScan(DeltaTable(str(folder / "summary"))).to_table()
    assert summary["run_id"].to_pylist() == ["huge"]


def test_duckdb_reads_every_output(lake):
    folder, lengths = lake
    con = duckdb.connect()
    for name, rows in _expected(lengths).items():
        con.register(name, delta_source(folder / name))
        found = con.sql(f"SELECT id, length(messages) FROM {name}").fetchall()
        assert dict(found) == rows
    con.register("summary", delta_source(folder / "summary"))
    assert con.sql("SELECT run_id, failed FROM summary").fetchall() == [("huge", 1)]


SPARK_READ = """
import json, sys
from pyspark.sql import functions as F
from chatgate.engines.spark.session import get_spark

spark = get_spark("chatgate-read", master="local[1]", extra_conf={"spark.driver.memory": "4g", "spark.ui.enabled": "false"})
found = {}
for name in ("quarantine", "valid"):
    rows = spark.read.format("delta").load(f"{sys.argv[1]}/{name}").select("id", F.length("messages")).collect()
    found[name] = {row[0]: row[1] for row in rows}
found["summary"] = [list(r) for r in spark.read.format("delta").load(f"{sys.argv[1]}/summary").select("run_id", "failed").collect()]
print(json.dumps(found))
"""
"""Spark's reads of the outputs in a driver of its own, with the memory a 200 MB value needs."""


def _spark_reads(spark, folder: Path) -> dict:
    """id -> length of each row output's rows, and the summary's (run_id, failed), as Spark reads them."""
    from pyspark.sql import functions as F

    found: dict = {}
    for name in ("quarantine", "valid"):
        rows = spark.read.format("delta").load(str(folder / name)).select("id", F.length("messages")).collect()
        found[name] = {row[0]: row[1] for row in rows}
    summary = spark.read.format("delta").load(str(folder / "summary")).select("run_id", "failed").collect()
    found["summary"] = [list(row) for row in summary]
    return found


@pytest.mark.spark
def test_spark_reads_every_output(lake, request):
    folder, lengths = lake
    if max(lengths.values()) < 100 * 2**20:
        found = _spark_reads(request.getfixturevalue("spark"), folder)
    else:
        # The shared session's 1 GB driver can't hold a 200 MB value in Parquet's vectorized
        # reader, and its OutOfMemoryError would end the session for every later test.
        done = subprocess.run(
            [sys.executable, "-c", SPARK_READ, str(folder)], capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        found = {k: (v if k == "summary" else {int(i): n for i, n in v.items()}) for k, v in found.items()}
    assert found == {**_expected(lengths), "summary": [["huge", 1]]}
