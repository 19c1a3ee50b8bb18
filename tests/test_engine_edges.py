"""Edges every engine must take alike: columns of any type, and column names of any spelling.

Each test runs on the local engine (a Polars frame), the embedded engine (an
`ibis.memtable` and a DuckDB table) and Spark (a DataFrame), and expects the same
codes, counts and reasons on each.
"""

from __future__ import annotations

import datetime
import json
import uuid

import pyarrow as pa
import pytest

from chatgate.rules import ChatCheck, ChatFormat, DatasetCheck

TARGETS = ["polars", "memtable", "duckdb", pytest.param("spark", marks=pytest.mark.spark)]

OK = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
MISSING = object()
"""Stands for the code of a missing value: not_messages, or none with na_pass=True."""


def _frame(target: str, table: pa.Table, request):
    if target == "polars":
        import polars as pl

        return pl.from_arrow(table)
    if target == "memtable":
        import ibis

        return ibis.memtable(table)
    if target == "duckdb":
        import ibis

        con = ibis.duckdb.connect()
        source = f"src_{uuid.uuid4().hex[:8]}"
        con.con.register(source, table)
        con.con.execute(f"CREATE TABLE t AS SELECT * FROM {source}")
        con.con.unregister(source)
        return con.table("t")
    return request.getfixturevalue("spark").createDataFrame(table)


def _engine(target: str):
    if target == "polars":
        from chatgate.engines.local import LocalEngine

        return LocalEngine()
    if target in ("memtable", "duckdb"):
        from chatgate.engines.ibis import IbisEngine

        return IbisEngine()
    from chatgate.engines.spark import SparkEngine

    return SparkEngine()


def _rows(target: str, frame, columns: list[str]) -> list[tuple]:
    """The rows of `frame` (only `columns`), sorted, as tuples."""
    if target == "polars":
        rows = frame.select(columns).rows()
    elif target in ("memtable", "duckdb"):
        data = frame.select(*columns).to_pyarrow()
        rows = list(zip(*(data[c].to_pylist() for c in columns)))
    else:
        from chatgate.engines.spark.keys import column_ref

        rows = [tuple(row) for row in frame.select(*map(column_ref, columns)).collect()]
    return sorted(rows, key=repr)


# -- columns of any type ------------------------------------------------------------------------

NM = "not_messages"

KINDS = {
    # Values that can never be a list of messages: each one is not_messages.
    "int": (pa.array([1, None, 3, 1], pa.int64()), [NM, MISSING, NM, NM], 2),
    # NaN is a missing value, as in a pandas column: it follows na_pass like a null.
    "float": (pa.array([1.5, None, float("nan"), 1.5], pa.float64()), [NM, MISSING, MISSING, NM], 2),
    "bool": (pa.array([True, None, False, True]), [NM, MISSING, NM, NM], 2),
    "date": (
        pa.array([datetime.date(2024, 1, 1), None, datetime.date(2024, 1, 2), datetime.date(2024, 1, 1)]),
        [NM, MISSING, NM, NM],
        2,
    ),
    "struct": (
        pa.array(
            [{"a": 1, "b": "x"}, None, {"a": 2, "b": None}, {"a": 1, "b": "x"}],
            pa.struct([("a", pa.int64()), ("b", pa.string())]),
        ),
        [NM, MISSING, NM, NM],
        2,
    ),
    # Bytes are read as UTF-8 JSON text, as a string column is.
    "binary": (pa.array([OK.encode(), None, b"\xff\xfe[]", b"[]"], pa.binary()), [None, MISSING, NM, "no_messages"], 3),
    # A list is a list of messages whose items aren't messages, as its JSON text '["Hi"]' is.
    "list_of_strings": (
        pa.array([["Hi"], None, [], ["Hi"]], pa.list_(pa.string())),
        ["bad_message", MISSING, "no_messages", "bad_message"],
        2,
    ),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("target", TARGETS)
def test_a_column_of_any_type_is_judged_alike_on_every_engine(target, kind, request):
    values, codes, distinct = KINDS[kind]
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "chat": values})
    engine = _engine(target)
    for na_pass, dedup in ((False, "on"), (True, "off")):
        judged = engine.judge_check(
            _frame(target, table, request), ChatCheck("chat", ChatFormat(na_pass=na_pass)), dedup=dedup
        )
        missing = None if na_pass else NM
        want = [missing if code is MISSING else code for code in codes]
        assert _rows(target, judged.annotated, ["id", judged.reason_column]) == list(enumerate(want))
        counts = {code: want.count(code) for code in set(want) if code is not None}
        assert (judged.units, judged.failed, judged.reasons) == (len(want), sum(counts.values()), counts)
        assert judged.distinct_values == (distinct if dedup == "on" else None)


# -- column names of any spelling ---------------------------------------------------------------

NAMES = ["chat `x`.v;1=2", "été ü messages", "`", 'a"b.c']
ID, NOTE, REASON = "id.x", "`note` ;=é", "why `.`;= ?"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("target", TARGETS)
def test_column_names_with_dots_backticks_spaces_and_letters(target, name, request):
    table = pa.table({ID: [1, 2, 3, 4], NOTE: ["a", "b", "c", "d"], name: [OK, "[]", None, OK]})
    engine = _engine(target)
    judged = engine.judge_check(_frame(target, table, request), ChatCheck(name), dedup="on", reason_column=REASON)
    assert (judged.units, judged.failed, judged.reasons) == (4, 2, {"no_messages": 1, "not_messages": 1})
    assert judged.distinct_values == 2
    failing = engine.failing_rows(judged)
    assert _rows(target, failing, [ID, NOTE, REASON]) == [(2, "b", "no_messages"), (3, "c", "not_messages")]
    passing = engine.passing_rows(judged)
    assert engine.columns(passing) == [ID, NOTE, name]
    assert _rows(target, passing, [ID, name]) == [(1, OK), (4, OK)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_check_of_several_columns_with_odd_names(target, request):
    prompt, chosen, rejected = "p.r`o \"m;pt=", "chosen é", "rej`ected"
    user = json.dumps([{"role": "user", "content": "Q"}])
    answer, other = (json.dumps([{"role": "assistant", "content": c}]) for c in ("A", "B"))
    table = pa.table({ID: [1, 2, 3], prompt: [user, user, None], chosen: [answer, None, None], rejected: [other] * 3})
    check = DatasetCheck("preference", names=(("prompt", prompt), ("chosen", chosen), ("rejected", rejected)))
    engine = _engine(target)
    judged = engine.judge_check(_frame(target, table, request), check, dedup="on", reason_column=REASON)
    want = {
        row[ID]: code
        for row in table.to_pylist()
        if (code := check.check_row(row)) is not None
    }
    assert want and 1 not in want
    assert dict(_rows(target, engine.failing_rows(judged), [ID, REASON])) == want
    assert _rows(target, engine.passing_rows(judged), [ID]) == [(1,)]
    assert judged.distinct_values == 3


@pytest.mark.spark
def test_column_ref_names_a_top_level_column_never_a_field(spark):
    from chatgate.engines.spark.keys import column_ref

    df = spark.createDataFrame(
        pa.table({"a": pa.array([{"b": 1}]), "a.b": [2], "c`d": [3], "é ;=": [4]})
    )
    assert df.select(column_ref("a.b"), column_ref("c`d"), column_ref("é ;=")).first() == (2, 3, 4)


def test_polars_extracts_leave_the_annotated_frame_as_it_was():
    import polars as pl

    from chatgate.engines.local import LocalEngine
    from chatgate.rules import ChatFormat

    frame = pl.DataFrame({"m": ["[]", '[{"role": "user", "content": "a"}]']})
    engine = LocalEngine()
    judged = engine.judge(frame, "m", ChatFormat())
    before = judged.annotated.columns
    first, second = engine.extract(judged), engine.extract(judged)
    assert judged.annotated.columns == before
    assert first.equals(second) and first["_row_num_"].to_list() == [1]
