"""`annotate` and `split` on every kind of table: the job's codes, the input's own type, rows conserved,
and nothing read (no Spark job) before the caller asks for rows."""

from __future__ import annotations

import json

import ibis
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate import annotate, split
from chatgate.job.config import build_config
from chatgate.job.runner import run
from chatgate.sample import chat_table
from job_helpers import read_delta

OPTIONS = {"last_role": "assistant", "first_role": "user"}
KINDS = ["arrow", "polars", "polars-lazy", "pandas", "duckdb", "memtable", pytest.param("spark", marks=pytest.mark.spark)]


@pytest.fixture(scope="module")
def chats() -> pa.Table:
    table = chat_table(240, seed=21, duplicate_fraction=0.3, defect_fraction=0.35)
    return table.set_column(0, "id", pa.array(range(table.num_rows), pa.int64()))


@pytest.fixture(scope="module")
def quarantined(chats, tmp_path_factory) -> dict[int, str]:
    """{id: pb_reason_} of the job's quarantine for the same rows and options."""
    where = tmp_path_factory.mktemp("job")
    write_deltalake(str(where / "chats"), chats)
    config = build_config(
        {"source": str(where / "chats"), "columns": ["messages"], "checks": OPTIONS, "run_id": "r",
         "outputs": {"quarantine": str(where / "q"), "summary": str(where / "s")}},
        {},
    )
    run(config)
    rows = read_delta(where / "q").to_pylist()
    return {row["id"]: row["pb_reason_"] for row in rows}


def as_kind(table: pa.Table, kind: str, request) -> object:
    if kind == "arrow":
        return table
    if kind == "polars":
        return pl.from_arrow(table)
    if kind == "polars-lazy":
        return pl.from_arrow(table).lazy()
    if kind == "pandas":
        return table.to_pandas()
    if kind == "memtable":
        return ibis.memtable(table)
    if kind == "duckdb":
        con = ibis.duckdb.connect()
        con.con.register("given", table)
        con.con.execute("CREATE TABLE chats AS SELECT * FROM given")
        return con.table("chats")
    return request.getfixturevalue("spark").createDataFrame(table)


def to_arrow(result: object) -> pa.Table:
    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pl.LazyFrame):
        return result.collect().to_arrow()
    if isinstance(result, pl.DataFrame):
        return result.to_arrow()
    if isinstance(result, pd.DataFrame):
        return pa.Table.from_pandas(result, preserve_index=False)
    if hasattr(result, "to_pyarrow"):
        return result.to_pyarrow()
    return result.toArrow()


def spark_jobs(request, kind) -> int:
    if kind != "spark":
        return 0
    return len(request.getfixturevalue("spark").sparkContext.statusTracker().getJobIdsForGroup(None))


@pytest.mark.parametrize("kind", KINDS)
def test_annotate_gives_the_jobs_codes_in_the_tables_own_type(chats, quarantined, kind, request):
    table = as_kind(chats, kind, request)
    jobs = spark_jobs(request, kind)
    annotated = annotate(table, "messages", **OPTIONS)
    assert spark_jobs(request, kind) == jobs  # nothing ran: the check runs when rows are asked for
    assert type(annotated) is type(table) or kind in ("duckdb", "memtable") and isinstance(annotated, ibis.Table)
    rows = to_arrow(annotated)
    assert rows.column_names == [*chats.column_names, "pb_reason_", "pb_message_"]
    got = {i: r for i, r in zip(rows["id"].to_pylist(), rows["pb_reason_"].to_pylist()) if r is not None}
    assert got == quarantined and len(got) > 10


@pytest.mark.parametrize("kind", KINDS)
def test_split_conserves_the_rows_and_keeps_the_passing_rows_as_they_came(chats, quarantined, kind, request):
    table = as_kind(chats, kind, request)
    jobs = spark_jobs(request, kind)
    passing, failing = split(table, "messages", **OPTIONS)
    assert spark_jobs(request, kind) == jobs
    passing, failing = to_arrow(passing), to_arrow(failing)
    assert passing.column_names == chats.column_names
    assert passing.num_rows + failing.num_rows == chats.num_rows
    assert set(failing["id"].to_pylist()) == set(quarantined)
    assert set(passing["id"].to_pylist()).isdisjoint(quarantined)


def test_several_columns_take_the_first_failing_ones_code_and_turns_all_lists_its_problems():
    good = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    bad_role = json.dumps([{"role": "robot", "content": "Hi"}])
    empty = json.dumps([])
    frame = pl.DataFrame({"a": [good, bad_role, good, None], "b": [good, empty, empty, good]})
    annotated = annotate(frame, ["a", "b"], turns="all")
    assert annotated["pb_reason_"].to_list() == [None, "unknown_role", "no_messages", "not_messages"]
    assert annotated["pb_message_"].to_list()[1] == 0
    problems = annotated["pb_reasons_"].to_list()
    assert problems[0] == [] or problems[0] is None
    assert [p["code"] for p in problems[1]][0] == "unknown_role"


def test_a_dataset_type_selects_the_row_check():
    prompt = json.dumps([{"role": "user", "content": "Hi"}])
    reply = json.dumps([{"role": "assistant", "content": "Hello"}])
    other = json.dumps([{"role": "assistant", "content": "Go away"}])
    frame = pd.DataFrame({"prompt": [prompt, prompt, prompt], "chosen": [reply, "[]", reply], "rejected": [other, other, reply]})
    annotated = annotate(frame, dataset_type="preference")
    reasons = annotated["pb_reason_"]
    assert reasons.isna().tolist() == [True, False, False]
    assert reasons.tolist()[1:] == ["no_messages", "same_pair"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda t: annotate(t, "messages", last_rol="assistant"), "last_rol"),
        (lambda t: annotate(t, "nope"), "no column 'nope'"),
        (lambda t: annotate(t), "name the chat column"),
        (lambda t: split(t, "messages", turns="some"), "turns="),
        (lambda t: annotate(t, "messages", dataset_type="preference"), "columns= maps the type's fields"),
    ],
)
def test_bad_arguments_raise_before_any_row_is_read(chats, call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call(pl.from_arrow(chats).lazy())


def test_a_table_that_already_has_the_verdict_columns_is_refused(chats):
    with pytest.raises(ValueError, match="already has \\['pb_reason_'\\]"):
        annotate(chats.append_column("pb_reason_", pa.nulls(chats.num_rows, pa.string())), "messages")
