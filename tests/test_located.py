"""The embedded job locates each failing value's problem as it checks it (`IbisEngine(locate=True)`,
`Judged.locate`): the quarantine's `pb_message_` must be what locating the failing rows afterwards
gives (`rules.message_indices`, the other engines' way), in one stream, in file parts, with dedup."""

from __future__ import annotations

import ibis
import pyarrow as pa
import pytest

from chatgate.engines.ibis import join as ibis_join
from chatgate.engines.ibis import plan as ibis_plan
from chatgate.engines.ibis import stream
from chatgate.engines.ibis.connection import duckdb_connection
from chatgate.engines.ibis.duckdb import DuckDBEngine
from chatgate.job.registry import store_for
from chatgate.job.runner import run
from chatgate.rules import ChatCheck, ChatFormat, DatasetCheck, message_indices
from job_helpers import job_config, read_delta
from test_file_parts import _chats_in_files, _pairs_in_files


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dedup", ["on", "off"])
def test_the_job_quarantine_located_by_the_check_is_the_one_located_after(tmp_path, monkeypatch, dedup, threads):
    source = str(tmp_path / "chats")
    _chats_in_files(source)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)  # workers, and files read in parts without dedup
    quarantines = {}
    for locate in (True, False):
        config = job_config(tmp_path / f"locate-{locate}", source, "duckdb", {"first_role": "user"},
                            threads=threads, dedup=dedup)
        engine = DuckDBEngine(con=duckdb_connection(threads=threads), workers=threads, locate=locate)
        result = run(config, engine)
        assert (result.steps[0].judged.locate is not None) is locate
        table = read_delta(config.outputs.quarantine).drop_columns(["pb_checked_at_"]).sort_by("id")
        quarantines[locate] = table
    assert quarantines[True].schema == quarantines[False].schema
    assert quarantines[True].to_pylist() == quarantines[False].to_pylist()
    messages = quarantines[True].column("pb_message_")
    assert 0 < messages.null_count < len(messages)  # problems at a message, and problems at none


def test_the_job_registry_locates_and_turns_all_still_lists_every_problem(tmp_path):
    source = str(tmp_path / "chats")
    _chats_in_files(source, files=1)
    first = run(job_config(tmp_path / "first", source, "duckdb", {}))
    every = run(job_config(tmp_path / "all", source, "duckdb", {}, turns="all"))
    assert first.steps[0].judged.locate is not None
    q_first = read_delta(first.config.outputs.quarantine).sort_by("id")
    q_all = read_delta(every.config.outputs.quarantine).sort_by("id")
    assert q_first.column("pb_message_").to_pylist() == q_all.column("pb_message_").to_pylist()
    assert q_first.column("pb_reasons_").null_count == q_first.num_rows
    assert q_all.column("pb_reasons_").null_count < q_all.num_rows


@pytest.mark.parametrize("workers", [1, 2])
def test_a_check_of_several_columns_is_located_as_message_indices_locates_it(tmp_path, monkeypatch, workers):
    path = str(tmp_path / "pairs")
    _pairs_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = DatasetCheck("prompt_completion")
    engine = DuckDBEngine(con=ibis.duckdb.connect(), chunk_size=16, workers=workers, locate=True, progress=False)
    table, _ = store_for(engine).open_source(path, None)
    judged = engine.judge_check(table, check, dedup="off")
    assert judged.locate is not None
    rows = judged.locate(engine.failing_rows(judged), "m").order_by("id").to_pyarrow()
    batch = pa.RecordBatch.from_arrays([rows.column(c).combine_chunks() for c in check.columns], names=list(check.columns))
    expected = message_indices(check, batch, rows.column(judged.reason_column).combine_chunks())
    assert rows.column("m").combine_chunks().cast(pa.int32()).equals(expected)


def test_without_locate_or_on_the_value_join_nothing_is_located(tmp_path):
    table = ibis.memtable({"chat": ['[{"role": "user", "content": ""}]', "[]"]})
    assert DuckDBEngine(progress=False).judge(table, "chat", ChatFormat()).locate is None
    engine = DuckDBEngine(progress=False, locate=True, join_on="value")
    assert engine.judge_check(table, ChatCheck("chat", ChatFormat())).locate is None
    located = DuckDBEngine(progress=False, locate=True).judge(table, "chat", ChatFormat())
    assert located.locate is not None
    rows = located.locate(DuckDBEngine().failing_rows(located), "m").to_pyarrow().to_pylist()
    assert sorted((r["pb_reason_"], r["m"]) for r in rows) == [("empty_content", 0), ("no_messages", None)]


SAME_LENGTH = [
    '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]',  # passes
    '[{"role": "bot",  "content": "a"}, {"role": "assistant", "content": "b"}]',  # unknown_role at 0
    '[{"role": "user", "content": "a"}, {"role": "bot",       "content": "b"}]',  # unknown_role at 1
    '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "" }]',  # empty_content at 1
]


@pytest.mark.parametrize("failing", [1, 3])
@pytest.mark.parametrize("dedup", ["on", "off"])
def test_every_row_is_located_as_message_indices_locates_it_where_keys_collide(monkeypatch, failing, dedup):
    # Only the length is left in the key: every value shares one, so the failing set files
    # `failing` tuples under it, and the passing value's key is a failing one's.
    monkeypatch.setattr(ibis_plan, "_keys", lambda v, length: ((length(v) * 0).cast("int64"), length(v).cast("int64")))
    values = SAME_LENGTH[: 1 + failing] * 2
    assert len({len(v) for v in values}) == 1
    table = ibis.memtable({"id": list(range(len(values))), "chat": values})
    judged = DuckDBEngine(progress=False, locate=True, join_on="hash").judge(table, "chat", ChatFormat(), dedup=dedup)
    assert judged.locate is not None
    rows = judged.locate(judged.annotated, "m").order_by("id").to_pyarrow()
    codes = rows.column(judged.reason_column).combine_chunks()
    assert codes.null_count == 2  # the passing value, twice
    expected = message_indices(ChatCheck("chat", ChatFormat()), pa.RecordBatch.from_arrays([pa.array(values)], ["chat"]), codes)
    assert rows.column("m").combine_chunks().cast(pa.int32()).equals(expected)
    assert rows.column("m").to_pylist()[: 1 + failing] == [None, 0, 1, 1][: 1 + failing]


@pytest.mark.parametrize("dedup", ["on", "off"])
def test_a_failing_row_alone_under_its_key_takes_its_message_without_its_digest(monkeypatch, dedup):
    # The messages' lookup by digest finds nothing here (the reasons' still works): every
    # message must come from its key's lone entry.
    filed, patched = ibis_join._filed, []

    def reasons_only(joined, column, plan, nothing):
        if column.endswith("_fmessage"):
            patched.append(column)
            return nothing
        return filed(joined, column, plan, nothing)

    monkeypatch.setattr(ibis_join, "_filed", reasons_only)
    values = SAME_LENGTH * 2
    table = ibis.memtable({"id": list(range(len(values))), "chat": values})
    judged = DuckDBEngine(progress=False, locate=True, join_on="hash").judge(table, "chat", ChatFormat(), dedup=dedup)
    assert judged.locate is not None
    rows = judged.locate(judged.annotated, "m").order_by("id").to_pyarrow()
    codes = rows.column(judged.reason_column).combine_chunks()
    expected = message_indices(ChatCheck("chat", ChatFormat()), pa.RecordBatch.from_arrays([pa.array(values)], ["chat"]), codes)
    assert expected.null_count < len(expected)  # messages to take
    assert patched  # the messages' lookup is the one that found nothing
    assert rows.column("m").combine_chunks().cast(pa.int32()).equals(expected)


def _two_chat_columns(path: str) -> None:
    """Two chat columns, each with every code of the examples, in two Delta files."""
    from deltalake import write_deltalake

    from test_engine_ibis import DEFAULT_EXAMPLES

    values = [value for _, value, _ in DEFAULT_EXAMPLES] * 2 + [None]
    other = list(reversed(values))
    half = len(values) // 2
    for rows in (slice(0, half), slice(half, len(values))):
        write_deltalake(path, pa.table({"id": list(range(len(values)))[rows], "messages": values[rows],
                                        "reply": other[rows]}), mode="append")


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["auto", *(pytest.param(d, marks=pytest.mark.slow) for d in ("on", "off"))])
def test_the_spark_job_quarantine_located_by_the_check_is_the_one_located_after(tmp_path, spark, dedup):
    """The Spark check locates each failing row's problem too (`SparkEngine(locate=True)`, as the job's
    registry makes it); two chat columns: the second step judges the first's annotated table, and
    the first step's messages are joined to rows that went through the second."""
    from chatgate.engines.spark import SparkEngine

    source = str(tmp_path / "chats")
    _two_chat_columns(source)
    quarantines = {}
    for locate in (True, False):
        config = job_config(tmp_path / f"locate-{locate}", source, "spark", {"first_role": "user"},
                            dedup=dedup, columns=["messages", "reply"])
        result = run(config, SparkEngine(spark=spark, locate=locate))
        assert all((step.judged.locate is not None) is locate for step in result.steps)
        table = read_delta(config.outputs.quarantine).drop_columns(["pb_checked_at_"])
        quarantines[locate] = table.sort_by([("pb_step_", "ascending"), ("id", "ascending")])
    assert quarantines[True].schema == quarantines[False].schema
    assert quarantines[True].to_pylist() == quarantines[False].to_pylist()
    messages = quarantines[True].column("pb_message_")
    assert 0 < messages.null_count < len(messages)
    assert set(quarantines[True].column("pb_step_").to_pylist()) == {1, 2}


@pytest.mark.spark
def test_a_spark_check_of_several_columns_is_located_as_message_indices_locates_it(tmp_path, spark):
    from chatgate.engines.spark import SparkEngine

    path = str(tmp_path / "pairs")
    _pairs_in_files(path)
    table = spark.read.format("delta").load(path)
    check = DatasetCheck("prompt_completion")
    engine = SparkEngine(spark=spark, locate=True)
    judged = engine.judge_check(table, check, dedup="off")
    assert judged.locate is not None
    rows = judged.locate(engine.failing_rows(judged), "m").orderBy("id").toArrow()
    codes = rows.column(judged.reason_column)
    expected = message_indices(check, rows.select(list(check.columns)).combine_chunks().to_batches()[0], codes)
    assert rows.column("m").to_pylist() == expected.to_pylist() and rows.num_rows == judged.failed
