"""Delta tables with column mapping and deletion vectors on the embedded engine.

The Spark tables are written by Spark with Delta (as Databricks writes them): the
Parquet files of a column-mapped table hold physical column names (a PyArrow
dataset over them reads all NULLs), and a DELETE on a table with deletion vectors
leaves the rows in the files (a dataset returns them). `open_table` must read both
right, through deltalake's own reader, on every version; a reader feature
deltalake can't read is refused in one line. Three small tables, nine Spark
statements in all.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

import ibis
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pa_fs
import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate.engines.ibis import IbisEngine
from chatgate.job.config import load_config
from chatgate.job.runner import run
from chatgate.rules import ChatFormat
from chatgate.stores.deltalake_tables import DeltaScan, delta_source, open_table

GOOD = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
BAD_ROLE = json.dumps([{"role": "robot", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
IDS = range(20)
DELETED = frozenset(i for i in IDS if i % 5 == 0)  # DELETE ... WHERE id % 5 = 0


def _chat(i: int) -> str:
    return "[]" if i % 4 == 0 else BAD_ROLE if i % 4 == 1 else GOOD


def _reason(i: int) -> str | None:
    return "no_messages" if i % 4 == 0 else "unknown_role" if i % 4 == 1 else None


# kind: (id column, chat column, rows deleted); the columns as the latest version names them
KINDS = {
    "column_mapping": ("id", "messages", frozenset()),
    "deletion_vectors": ("rid", "chat", DELETED),
    "both": ("id", "messages", DELETED),
}
BOTH_BEFORE_DELETE = 2  # versions of the "both" table: 0 CTAS, 1 and 2 renames, 3 DELETE


def _expected(deleted: frozenset) -> dict[int, str]:
    return {i: _reason(i) for i in IDS if i not in deleted and _reason(i) is not None}


def _read_back(path: str) -> pa.Table:
    """A plain Delta table as deltalake's dataset reads it, on Arrow's own filesystem.

    Not `DeltaTable(path).to_pyarrow_table()` alone: on deltalake's default filesystem,
    Arrow's threads may drop it while pytest exits, and the process aborts (see stores/deltalake_tables.py).
    """
    return DeltaTable(path).to_pyarrow_table(
        filesystem=pa_fs.SubTreeFileSystem(path, pa_fs.LocalFileSystem())
    )


@pytest.fixture(scope="module")
def delta_tables(spark, tmp_path_factory):
    """The three tables, written by Spark: {kind: path}."""
    root = tmp_path_factory.mktemp("delta_features")
    spark.createDataFrame([(i, _chat(i)) for i in IDS], "rid BIGINT, chat STRING").createOrReplaceTempView(
        "chatgate_feature_rows"
    )
    properties = {
        "column_mapping": "'delta.columnMapping.mode' = 'name'",
        "deletion_vectors": "'delta.enableDeletionVectors' = 'true'",
        "both": "'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true'",
    }
    paths = {}
    for kind, props in properties.items():
        path = str(root / kind)
        table = f"delta.`{path}`"
        spark.sql(
            f"CREATE TABLE {table} USING delta TBLPROPERTIES ({props}) AS SELECT * FROM chatgate_feature_rows"
        )
        if "columnMapping" in props:
            spark.sql(f"ALTER TABLE {table} RENAME COLUMN chat TO messages")
            spark.sql(f"ALTER TABLE {table} RENAME COLUMN rid TO id")
        if "DeletionVectors" in props:
            id_column = KINDS[kind][0]
            spark.sql(f"DELETE FROM {table} WHERE {id_column} % 5 = 0")
        paths[kind] = path
    spark.catalog.dropTempView("chatgate_feature_rows")

    # What the tests stand on: renamed columns whose files hold other names, real deletion vectors.
    mapping = DeltaTable(paths["column_mapping"])
    assert "deletionVectors" not in (mapping.protocol().reader_features or [])
    assert set(ds.dataset(mapping.file_uris()).schema.names).isdisjoint({"id", "messages"})
    for kind in ("deletion_vectors", "both"):
        vectors = pa.table(DeltaTable(paths[kind]).deletion_vectors())
        assert vectors.num_rows >= 1, f"Spark wrote no deletion vector for {kind}"
    assert DeltaTable(paths["both"]).version() == BOTH_BEFORE_DELETE + 1
    return paths


def _failing(judged) -> dict[int, str]:
    failing = IbisEngine().failing_rows(judged).to_pyarrow()
    id_column = failing.column_names[0]
    return dict(zip(failing[id_column].to_pylist(), failing[judged.reason_column].to_pylist()))


@pytest.mark.spark
@pytest.mark.parametrize("kind", list(KINDS))
def test_engine_reads_column_mapping_and_deletion_vectors(delta_tables, kind, caplog):
    id_column, chat_column, deleted = KINDS[kind]
    with caplog.at_level(logging.INFO, logger="chatgate"):
        table = open_table(delta_tables[kind], con=ibis.duckdb.connect())
    logged = " ".join(r.getMessage() for r in caplog.records if r.name == "chatgate")
    assert "deltalake's own reader" in logged
    assert ("column mapping" in logged) == (kind != "deletion_vectors")
    assert ("deletion vectors" in logged) == (kind != "column_mapping")

    assert table.columns == (id_column, chat_column)
    rows = table.to_pyarrow()
    assert sorted(rows[id_column].to_pylist()) == [i for i in IDS if i not in deleted]
    assert rows[chat_column].null_count == 0
    assert rows[chat_column].to_pylist() == [_chat(i) for i in rows[id_column].to_pylist()]

    judged = IbisEngine().judge(table, chat_column, ChatFormat())
    expected = _expected(deleted)
    assert judged.units == len(IDS) - len(deleted)
    assert judged.failed == len(expected)
    assert judged.reasons == dict(Counter(expected.values()))
    assert _failing(judged) == expected


@pytest.mark.spark
@pytest.mark.parametrize("kind", list(KINDS))
def test_job_quarantines_the_rows_deltalake_reads(delta_tables, kind, tmp_path):
    id_column, chat_column, deleted = KINDS[kind]
    result = run(
        load_config(
            None,
            {
                "source": delta_tables[kind],
                "columns": [chat_column],
                "quarantine": str(tmp_path / "quarantine"),
                "summary": str(tmp_path / "summary"),
                "valid": str(tmp_path / "valid"),
                "run_id": "t1",
            },
        )
    )
    expected = _expected(deleted)
    assert result.source_version == DeltaTable(delta_tables[kind]).version()
    assert result.steps[0].judged.units == len(IDS) - len(deleted)
    assert result.quarantined == len(expected)

    quarantine = _read_back(str(tmp_path / "quarantine"))
    assert quarantine.column_names[:2] == [id_column, chat_column]
    assert dict(zip(quarantine[id_column].to_pylist(), quarantine["pb_reason_"].to_pylist())) == expected
    assert set(quarantine["pb_run_id_"].to_pylist()) == {"t1"}
    valid = _read_back(str(tmp_path / "valid"))
    assert sorted(valid[id_column].to_pylist()) == [i for i in IDS if i not in deleted and i not in expected]


@pytest.mark.spark
def test_time_travel_reads_the_old_snapshot_through_deltalakes_reader(delta_tables, caplog):
    path = delta_tables["both"]
    con = ibis.duckdb.connect()
    with caplog.at_level(logging.INFO, logger="chatgate"):
        before_delete = open_table(path, con=con, version=BOTH_BEFORE_DELETE)
        before_renames = open_table(path, con=con, version=0)
    logged = [r.getMessage() for r in caplog.records if r.name == "chatgate"]
    assert len(logged) == 2 and all("deltalake's own reader" in m for m in logged)
    assert f"(version {BOTH_BEFORE_DELETE})" in logged[0] and "(version 0)" in logged[1]

    # Before the DELETE: every row is back, under the renamed columns.
    assert before_delete.columns == ("id", "messages")
    assert sorted(before_delete.to_pyarrow()["id"].to_pylist()) == list(IDS)
    judged = IbisEngine().judge(before_delete, "messages", ChatFormat())
    assert judged.units == len(IDS)
    assert _failing(judged) == _expected(frozenset())

    # Before the renames: the columns have their first names, and read right under them.
    assert before_renames.columns == ("rid", "chat")
    rows = before_renames.to_pyarrow()
    assert rows["chat"].to_pylist() == [_chat(i) for i in rows["rid"].to_pylist()]
    assert len(rows) == len(IDS)

    latest = open_table(path, con=con)
    assert latest.count().execute() == len(IDS) - len(DELETED)


@pytest.mark.spark
def test_deltalakes_reader_can_be_scanned_again_and_twice_in_one_query(delta_tables):
    table = open_table(delta_tables["both"], con=ibis.duckdb.connect())
    survivors = len(IDS) - len(DELETED)
    assert table.count().execute() == survivors
    assert table.count().execute() == survivors
    twice = ibis.union(table.select("id"), table.select("id"), distinct=False)
    assert twice.count().execute() == 2 * survivors
    other = table.select(other=table.id)
    assert table.join(other, table.id == other.other).count().execute() == survivors


def test_column_mapping_written_by_deltalake(tmp_path, caplog):
    """The same without Spark: deltalake names the files' columns col-<uuid> in name mode too."""
    path = str(tmp_path / "mapped")
    rows = pa.table({"id": list(IDS), "messages": [_chat(i) for i in IDS]})
    write_deltalake(path, rows.slice(0, 12), configuration={"delta.columnMapping.mode": "name"})
    write_deltalake(path, rows.slice(12), mode="append")
    assert _read_back(path)["messages"].null_count == len(IDS)  # what a dataset over the files reads

    with caplog.at_level(logging.INFO, logger="chatgate"):
        table = open_table(path, con=ibis.duckdb.connect())
    assert any("column mapping (name mode)" in r.getMessage() for r in caplog.records)
    judged = IbisEngine().judge(table, "messages", ChatFormat())
    assert _failing(judged) == _expected(frozenset())
    assert open_table(path, con=ibis.duckdb.connect(), version=0).count().execute() == 12


def test_plain_table_keeps_the_pyarrow_dataset(tmp_path, caplog):
    path = str(tmp_path / "plain")
    write_deltalake(path, pa.table({"id": [1, 2, 3], "messages": [GOOD, "[]", GOOD]}))
    assert isinstance(delta_source(path), ds.Dataset)
    with caplog.at_level(logging.INFO, logger="chatgate"):
        table = open_table(path, con=ibis.duckdb.connect())
    assert not [r for r in caplog.records if r.name == "chatgate"]
    assert IbisEngine().judge(table, "messages", ChatFormat()).reasons == {"no_messages": 1}


def test_delta_scan_reads_a_snapshot_again_and_again(tmp_path):
    path = str(tmp_path / "plain")
    write_deltalake(path, pa.table({"id": [1, 2, 3]}))
    write_deltalake(path, pa.table({"id": [4]}), mode="append")
    scan = DeltaScan(DeltaTable(path, version=0))
    assert sorted(pa.table(scan)["id"].to_pylist()) == [1, 2, 3]
    assert sorted(pa.table(scan)["id"].to_pylist()) == [1, 2, 3]


def test_a_reader_feature_deltalake_cant_read_is_refused_in_one_line(tmp_path):
    path = tmp_path / "widened"
    write_deltalake(str(path), pa.table({"id": [1, 2]}))
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["typeWidening"],
        "writerFeatures": ["typeWidening"],
    }
    commit = [{"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}, {"protocol": protocol}]
    (path / "_delta_log" / f"{1:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in commit))

    with pytest.raises(ValueError, match="typeWidening") as raised:
        open_table(str(path), con=ibis.duckdb.connect())
    assert "\n" not in str(raised.value)
    assert open_table(str(path), con=ibis.duckdb.connect(), version=0).count().execute() == 2


NATIVE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


def _native(text: str | None) -> list | None:
    """The messages of a JSON chat as a native list of structs, when they fit one (else None)."""
    try:
        messages = json.loads(text)
    except (TypeError, ValueError):
        return None
    fits = isinstance(messages, list) and all(
        isinstance(m, dict)
        and set(m) <= {"role", "content"}
        and all(v is None or isinstance(v, str) for v in m.values())
        for m in messages
    )
    return messages if fits else None


@pytest.mark.parametrize("dedup", ["off", "on"])
def test_deltalakes_reader_judges_like_the_dataset(tmp_path, monkeypatch, dedup):
    """Several batches, text and native nested columns, filters pushed into the scan: same verdicts."""
    from chatgate.sample import chat_table
    from chatgate.stores import deltalake_tables as tables

    source = chat_table(6_000, seed=5, duplicate_fraction=0.3, defect_fraction=0.1)
    native = pa.array([_native(text) for text in source["messages"].to_pylist()], NATIVE)
    source = source.append_column("native", native)
    path = str(tmp_path / "chats")
    write_deltalake(path, source.slice(0, 3_500))
    write_deltalake(path, source.slice(3_500), mode="append")

    def verdicts(table, column):
        judged = IbisEngine(chunk_size=1_000).judge(table, column, ChatFormat(), dedup=dedup)
        return judged.reasons, _failing(judged)

    plain = open_table(path, con=ibis.duckdb.connect())
    monkeypatch.setattr(tables, "_kernel_reasons", lambda snapshot: ["a test"])
    kernel = open_table(path, con=ibis.duckdb.connect())
    assert isinstance(delta_source(path), DeltaScan)
    for column in ("messages", "native"):
        expected = verdicts(plain, column)
        assert expected[0]  # the table has failing rows
        assert verdicts(kernel, column) == expected
    failing = kernel.filter(kernel.messages.notnull() & (kernel.id > 100)).count().execute()
    assert failing == plain.filter(plain.messages.notnull() & (plain.id > 100)).count().execute()
