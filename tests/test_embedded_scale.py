"""The embedded engine at scale: DuckDB's own Parquet reader, deduplication by row id, the check on every core.

What these tests pin is that none of it changes a verdict: the tables read through
DuckDB's reader hold what deltalake's dataset holds, the row-id deduplication
finds exactly the distinct values (DuckDB's `hash()` collides on long texts that
differ in a byte, SHA-256 doesn't), and worker processes give the codes one
process gives, in the same order. Memory itself is measured in the slow test at
the end and in the benchmark.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import ibis
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate.engines.ibis import stream
from chatgate.engines.ibis.duckdb import DuckDBEngine
from chatgate.engines.parquet_files import ROW_ID
from chatgate.engines.workers import CheckPool
from chatgate.errors import ChatgateError
from chatgate.job.config import build_config
from chatgate.job.embedded import DEFAULT_MEMORY_LIMIT
from chatgate.job.registry import store_for
from chatgate.job.runner import run
from chatgate.rules import ChatCheck, ChatFormat
from chatgate.stores.deltalake_tables import delta_source, open_table
from job_helpers import job_config, written_by
from test_engine_ibis import DEFAULT_EXAMPLES

UTC = dt.timezone.utc


def _typed_rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "small": pa.array([i % 100 for i in ids], pa.int8()),
            "text": pa.array([f"row {i}" if i % 7 else None for i in ids], pa.string()),
            "raw": pa.array([bytes([i % 256]) for i in ids], pa.binary()),
            "flag": pa.array([i % 2 == 0 for i in ids], pa.bool_()),
            "score": pa.array([i / 3 for i in ids], pa.float64()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
            "at": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i) for i in ids],
                           pa.timestamp("us", tz="UTC")),
            "price": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
            "messages": pa.array(
                [[{"role": "user", "content": f"hi {i}"}] if i % 5 else None for i in ids],
                pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])),
            ),
            "meta": pa.array([{"k": i} for i in ids], pa.struct([("k", pa.int64())])),
        }
    )


def _rows(table: ibis.Table) -> list[dict]:
    rows = table.to_pyarrow().to_pylist()
    return sorted(({k: v for k, v in row.items() if k != ROW_ID} for row in rows), key=lambda row: row["id"])


def _native(table: ibis.Table) -> bool:
    """Is `table` a view over Parquet files read by DuckDB (not an Arrow source registered in it)?"""
    return "chatgate_parquet_" in ibis.to_sql(table)


def test_duckdbs_reader_reads_what_the_dataset_reads(tmp_path):
    path = str(tmp_path / "typed")
    write_deltalake(path, _typed_rows(0, 40))
    evolved = _typed_rows(40, 20).append_column("added", pa.array(["new"] * 20))
    write_deltalake(path, evolved, mode="append", schema_mode="merge")

    table = open_table(path, con=ibis.duckdb.connect())
    assert _native(table)
    expected = sorted(delta_source(path).to_table().to_pylist(), key=lambda row: row["id"])
    assert _rows(table) == expected
    assert table.columns == tuple(DeltaTable(path).schema().to_arrow().names)
    old = open_table(path, con=ibis.duckdb.connect(), version=0)
    assert _native(old) and old.count().execute() == 40 and "added" not in old.columns


def test_row_ids_are_unique_and_the_same_in_every_scan(tmp_path):
    path = str(tmp_path / "t")
    for start in (0, 30, 60):
        write_deltalake(path, _typed_rows(start, 30), mode="append")
    table = open_table(path, con=ibis.duckdb.connect(), row_ids=True)
    assert ROW_ID in table.columns and ROW_ID not in DuckDBEngine().columns(table)

    def ids() -> dict[int, int]:
        return {r["id"]: r[ROW_ID] for r in table.select("id", ROW_ID).to_pyarrow().to_pylist()}

    first = ids()
    assert ids() == first and len(first) == len(set(first.values())) == 90


def _partitioned(path: str) -> None:
    write_deltalake(path, _typed_rows(0, 10).select(["id", "flag", "text"]), partition_by=["flag"])


def _virtual_name(path: str) -> None:
    write_deltalake(path, pa.table({"id": [1, 2], "filename": ["a", "b"]}))


def _nested_timestamp(path: str) -> None:
    at = pa.array([{"at": dt.datetime(2024, 1, 1, tzinfo=UTC)}] * 2, pa.struct([("at", pa.timestamp("us", tz="UTC"))]))
    write_deltalake(path, pa.table({"id": [1, 2], "event": at}))


def _column_never_written(path: str) -> None:
    write_deltalake(path, pa.table({"id": [1, 2]}))
    from deltalake.schema import Field, PrimitiveType

    DeltaTable(path).alter.add_columns([Field("later", PrimitiveType("string"))])


def _no_files(path: str) -> None:
    DeltaTable.create(path, schema=pa.schema([("id", pa.int64())]))


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_partitioned, "partitioned by ['flag']"),
        (_virtual_name, "'filename' has the name of one of DuckDB's virtual columns"),
        (_nested_timestamp, "'event' holds timestamps inside a nested type"),
        (_column_never_written, "'later' is in none of its files"),
        (_no_files, "it has no data files"),
    ],
)
def test_snapshots_duckdbs_reader_cant_read_as_they_are_take_the_dataset(tmp_path, caplog, make, why):
    path = str(tmp_path / "t")
    make(path)
    with caplog.at_level(logging.INFO, logger="chatgate"):
        table = open_table(path, con=ibis.duckdb.connect(), row_ids=True)
    assert not _native(table) and ROW_ID not in table.columns
    assert any(why in record.getMessage() for record in caplog.records)
    expected = sorted(delta_source(path).to_table().to_pylist(), key=lambda row: row["id"])
    assert _rows(table) == expected


@pytest.mark.spark
def test_timestamps_spark_wrote_read_as_utc_instants(spark, tmp_path):
    path = str(tmp_path / "spark_ts")
    spark.sql(
        "SELECT id, timestamp'2024-03-01 12:30:00' + make_interval(0, 0, 0, 0, id, 0, 0) AS at "
        "FROM range(5)"
    ).write.format("delta").save(path)
    table = open_table(path, con=ibis.duckdb.connect())
    assert _native(table)
    expected = sorted(delta_source(path).to_table().to_pylist(), key=lambda row: row["id"])
    assert _rows(table) == expected
    assert table.schema()["at"].timezone is not None


def _colliding_chats() -> list[str]:
    """Chats of one long text that differ in one character: DuckDB's hash() gives some the same value."""
    rng = random.Random(7)
    base = "".join(rng.choice("abcdefgh ") for _ in range(3_000))
    texts = [base[:i] + "Z" + base[i + 1:] for i in range(0, 3_000, 7)]
    chats = []
    for n, content in enumerate(texts):
        role = "robot" if n % 3 == 0 else "assistant"
        chats.append(json.dumps([{"role": "user", "content": content}, {"role": role, "content": "ok"}]))
    return chats


def test_dedup_by_row_id_is_exact_where_duckdbs_hash_collides(tmp_path):
    chats = _colliding_chats()
    hashes = duckdb.sql("SELECT count(DISTINCT hash(v)) FROM unnest($v) t(v)", params={"v": chats}).fetchone()
    assert hashes is not None and hashes[0] < len(chats)  # the collisions this test is about
    values = [chat for n, chat in enumerate(chats) for _ in range(1 + n % 3)]
    path = str(tmp_path / "chats")
    write_deltalake(path, pa.table({"id": list(range(len(values))), "messages": values}))

    engine = DuckDBEngine(con=ibis.duckdb.connect(), progress=False)
    table, _ = store_for(engine).open_source(path, None)
    assert ROW_ID in table.columns
    on = engine.judge(table, "messages", ChatFormat(), dedup="on")
    off = engine.judge(table, "messages", ChatFormat(), dedup="off")
    assert on.deduplicated and on.distinct_values == len(chats)
    assert (on.failed, on.reasons) == (off.failed, off.reasons) == (
        sum(1 + n % 3 for n in range(len(chats)) if n % 3 == 0),
        {"unknown_role": on.failed},
    )

    def failing_ids(judged) -> list[int]:
        rows = engine.failing_rows(judged).select("id").to_pyarrow()
        return sorted(rows.column("id").to_pylist())

    assert failing_ids(on) == failing_ids(off)


def _every_code_table(path: str, copies: int = 40) -> None:
    values = [value for _, value, _ in DEFAULT_EXAMPLES] * copies
    write_deltalake(path, pa.table({"id": list(range(len(values))), "messages": pa.array(values, pa.string())}))


@pytest.mark.parametrize("dedup", ["on", "off"])
def test_the_check_in_worker_processes_gives_what_one_process_gives(tmp_path, monkeypatch, dedup):
    path = str(tmp_path / "every_code")
    _every_code_table(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    results = {}
    for workers in (1, 3):
        engine = DuckDBEngine(con=ibis.duckdb.connect(), chunk_size=64, workers=workers, progress=False)
        table, _ = store_for(engine).open_source(path, None)
        judged = engine.judge(table, "messages", ChatFormat(), dedup=dedup)
        by_id = judged.annotated.select("id", judged.reason_column).to_pyarrow().to_pylist()
        results[workers] = (judged.units, judged.failed, list(judged.reasons.items()),
                            judged.distinct_values, sorted((r["id"], r[judged.reason_column]) for r in by_id))
    assert results[3] == results[1]
    assert {code for _, _, code in DEFAULT_EXAMPLES if code} == {reason for reason, _ in results[1][2]}


def test_the_job_in_worker_processes_writes_what_one_process_writes(tmp_path, monkeypatch):
    source = str(tmp_path / "every_code")
    _every_code_table(source, copies=10)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    outputs = {}
    for threads in (1, 2):
        config = job_config(tmp_path / f"threads{threads}", source, "duckdb", {}, threads=threads)
        run(config)
        outputs[threads] = written_by(config)
    assert outputs[2] == outputs[1]


class Exploding(ChatCheck):
    """A check that fails in the worker, as a bug in a rule would."""

    def check(self, batch):
        raise RuntimeError("the rule broke on row 3")


def test_a_worker_that_fails_stops_the_check_in_one_line(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # the worker imports this module
    batch = pa.record_batch({"messages": pa.array(["[]"] * 10)})
    with (
        CheckPool(Exploding("messages", ChatFormat()), 2) as pool,
        pytest.raises(ChatgateError, match="the rule broke on row 3") as raised,
    ):
        list(pool.codes((n, batch) for n in range(6)))
    assert "\n" not in str(raised.value)


def test_workers_start_afresh_and_give_codes_in_order():
    check = ChatCheck("messages", ChatFormat())
    batches = [pa.record_batch({"messages": pa.array([value] * n, pa.string())}) for n, (_, value, _) in
               enumerate(DEFAULT_EXAMPLES, start=1)]
    with CheckPool(check, 3) as pool:
        got = [(n, codes.to_pylist()) for n, codes in pool.codes(enumerate(batches))]
    assert got == [(n, check.check(batch).to_pylist()) for n, batch in enumerate(batches)]


def test_embedded_settings_default_to_a_fixed_memory_and_every_core():
    config = build_config({"source": "lake/chats", "columns": ["messages"],
                           "outputs": {"quarantine": "q", "summary": "s"}}, {})
    resolved = config.embedded.resolved()
    assert resolved["memory_limit"] == DEFAULT_MEMORY_LIMIT == "1GB"
    assert resolved["threads"] == (os.cpu_count() or 1)
    assert resolved["temp_directory"].endswith("chatgate-duckdb")
    given = build_config({"source": "lake/chats", "columns": ["messages"], "outputs": {"quarantine": "q", "summary": "s"},
                          "embedded": {"memory_limit": "3GB", "threads": 1, "temp_directory": "/scratch"}}, {})
    assert given.embedded.resolved() == {"memory_limit": "3GB", "threads": 1, "temp_directory": "/scratch"}


def test_the_job_engine_runs_duckdb_with_the_settings(tmp_path):
    from chatgate.job.runner import engine_for_job

    config = job_config(tmp_path, "lake/chats", "duckdb", {}, memory_limit="700MB", threads=1,
                        temp_directory=str(tmp_path / "spill"))
    engine = engine_for_job(config)
    settings = dict(engine.con.con.sql(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('memory_limit', 'threads', 'temp_directory')"
    ).fetchall())
    assert settings["threads"] == "1" and engine.workers == 1
    assert settings["memory_limit"].startswith("667") or "MiB" in settings["memory_limit"]
    assert settings["temp_directory"] == str(tmp_path / "spill")


def _peak_rss(source: str, dedup: str, tmp_path: Path) -> int:
    """The job's peak RSS in a fresh process, plus its largest check worker's (as the pool logs it)."""
    out = tmp_path / f"out-{Path(source).name}-{dedup}"
    code = (
        "import logging, os\n"
        "logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
        "from chatgate.cli import main\n"
        "from chatgate.engines.workers import peak_memory\n"
        f"main(['run', '--source', {source!r}, '--column', 'messages', '--dedup', {dedup!r},\n"
        f"      '--quarantine', {str(out / 'q')!r}, '--summary', {str(out / 's')!r}, '--quiet'])\n"
        "print(peak_memory(os.getpid()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    workers = [int(line.split()[-2]) for line in done.stderr.splitlines() if "check workers' peak memory" in line]
    assert workers, done.stderr[-2000:]  # the check ran in worker processes
    return int(done.stdout.split()[-1]) + max(workers) * 2**20


@pytest.mark.slow
@pytest.mark.parametrize("dedup", ["on", "off"])
def test_peak_memory_does_not_grow_with_the_table(tmp_path, dedup):
    """The job's process (and its largest worker) at N and 4N rows of 3 KB of JSON: within 1.25x."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.data import source_table

    small, large = source_table(100_000, 0.3), source_table(400_000, 0.3)
    peaks = {rows: _peak_rss(path, dedup, tmp_path) for rows, path in (("N", small), ("4N", large))}
    assert peaks["4N"] <= 1.25 * peaks["N"], peaks


def test_a_small_dev_shm_sends_batches_through_the_temp_directory(monkeypatch):
    """Containers often give /dev/shm 64 MB: the pool then writes its batches to the temp directory."""
    import collections
    import shutil
    import tempfile

    from chatgate.engines import workers

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(64 * 2**20, 0, 64 * 2**20))
    assert workers._shared_memory(workers.IN_FLIGHT * 2 * workers.BATCH_BYTES_ROOM) is None
    check = ChatCheck("messages", ChatFormat())
    batch = pa.record_batch({"messages": pa.array(["[]", None], pa.string())})
    with CheckPool(check, 2) as pool:
        assert Path(pool._folder.name).parent == Path(tempfile.gettempdir())
        assert [codes.to_pylist() for _, codes in pool.codes((n, batch) for n in range(4))] == [
            ["no_messages", "not_messages"]
        ] * 4
