"""How the Spark store writes a run's rows to a Delta path: one commit per write, whether the
table is new or not, and the log read once a write, to count what the write added (its latest
commit first). Its schema and the deletion of a run's rows look at the path once, without
reading the history."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from chatgate.errors import OutputError
from chatgate.stores.delta_spark import USER_METADATA_CONF, DeltaSparkStore
from chatgate.stores.delta_spark_sql import HISTORY_SEARCHED
from job_helpers import read_delta

pytestmark = pytest.mark.spark


@pytest.fixture
def history_reads(spark, monkeypatch) -> list[str]:
    """The DESCRIBE HISTORY statements the session runs while the test lasts."""
    statements: list[str] = []
    sql = spark.sql

    def recording(statement: str, *args, **kwargs):
        if statement.startswith("DESCRIBE HISTORY"):
            statements.append(statement)
        return sql(statement, *args, **kwargs)

    monkeypatch.setattr(spark, "sql", recording)
    return statements


def _rows(spark, run_id: str, ids: range, column: str = "run"):
    return spark.createDataFrame([(i, run_id) for i in ids], f"id long, `{column}` string")


def test_a_new_path_and_a_rerun_are_each_one_write_whose_log_is_read_once_to_count(spark, tmp_path, history_reads):
    store, target = DeltaSparkStore(spark), str(tmp_path / "q")
    assert store.replace_run(_rows(spark, "a", range(3)), target, "run", "a") == 3
    assert store.replace_run(_rows(spark, "b", range(10, 12)), target, "run", "b") == 2
    assert store.replace_run(_rows(spark, "a", range(20, 24)), target, "run", "a") == 4  # a rerun replaces its rows
    assert sorted(read_delta(target).to_pylist(), key=lambda r: r["id"]) == [
        *({"id": i, "run": "b"} for i in range(10, 12)),
        *({"id": i, "run": "a"} for i in range(20, 24)),
    ]
    assert len(history_reads) == 3  # one per write: its own commit's row count


def test_a_write_finds_its_own_commit_behind_a_later_one(spark, tmp_path, history_reads):
    store, target = DeltaSparkStore(spark), str(tmp_path / "q")
    metadata = store._replace(_rows(spark, "a", range(3)), target, "run", "a")
    store.replace_run(_rows(spark, "b", range(10, 12)), target, "run", "b")  # another writer's commit since
    history_reads.clear()
    assert store._rows_written(target, metadata) == 3
    assert [read.split("LIMIT ")[1] for read in history_reads] == ["1", str(HISTORY_SEARCHED)]


def test_a_new_table_whose_names_need_mapping_is_created_with_it(spark, tmp_path, history_reads):
    store, target = DeltaSparkStore(spark), str(tmp_path / "q")
    assert store.replace_run(_rows(spark, "a", range(2), column="run id"), target, "run id", "a") == 2
    assert store.replace_run(_rows(spark, "a", range(5), column="run id"), target, "run id", "a") == 5
    assert sorted(row["id"] for row in read_delta(target).to_pylist()) == list(range(5))
    assert len(history_reads) == 4  # before each write, whether a table is there to create, and its count


def test_a_paths_schema_and_a_runs_deletion_read_no_history(spark, tmp_path, history_reads):
    store, target = DeltaSparkStore(spark), str(tmp_path / "q")
    store.replace_run(_rows(spark, "a", range(3)), target, "run", "a")
    store.replace_run(_rows(spark, "b", range(10, 12)), target, "run", "b")
    history_reads.clear()
    assert store.target_schema(target) == pa.schema([("id", pa.int64()), ("run", pa.string())])
    store.delete_run(target, "run", "a")
    assert sorted(row["id"] for row in read_delta(target).to_pylist()) == [10, 11]
    assert history_reads == []


def test_a_path_without_a_delta_table_has_no_schema_and_no_run_to_delete(spark, tmp_path):
    store = DeltaSparkStore(spark)
    assert store.target_schema(str(tmp_path / "absent")) is None
    store.delete_run(str(tmp_path / "absent"), "run", "a")
    pq.write_table(pa.table({"run": ["a"]}), tmp_path / "files.parquet")
    store.delete_run(str(tmp_path), "run", "a")  # other files: left as they are
    assert pq.read_table(tmp_path / "files.parquet").num_rows == 1
    assert not (tmp_path / "absent").exists()


def test_a_path_spark_cant_look_at_is_an_error_naming_it(spark):
    store, target = DeltaSparkStore(spark), "nosuchscheme://bucket/q"
    with pytest.raises(OutputError, match=r"^can't write to 'nosuchscheme://bucket/q': "):
        store.target_schema(target)
    with pytest.raises(Exception, match="nosuchscheme"):
        store.delete_run(target, "run", "a")


def test_a_new_catalog_table_counts_the_rows_its_first_write_added(spark, tmp_path):
    store, name = DeltaSparkStore(spark), "chatgate_first_write_q"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        assert store.replace_run(_rows(spark, "r1", range(4)), name, "run", "r1") == 4
        assert store.replace_run(_rows(spark, "r2", range(3)), name, "run", "r2") == 3
        assert spark.conf.get(USER_METADATA_CONF, None) is None
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
