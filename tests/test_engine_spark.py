"""The Spark engine against the reference check, on tiny DataFrames in one shared session.

Every expected reason comes from `rules.first_problem` (or, for a `RowCheck` of
several columns, its `check_row`), row by row, so the engine and the reference
can't drift apart.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from chatgate.engines.spark import session as spark_session
from chatgate.rules import (
    REASONS,
    ChatCheck,
    ChatFormat,
    DatasetCheck,
    LabelCheck,
    RowCheck,
    first_problem,
)


def _j(*messages) -> str:
    return json.dumps([{"role": r, "content": c} for r, c in messages])


# A format under which every reason code can happen.
FMT = ChatFormat(first_role="user", last_role="assistant")

# (label, JSON text) pairs, at least one per reason code.
TEXT_CASES = [
    ("ok", _j(("user", "Hi"), ("assistant", "Hello"))),
    ("ok_system", _j(("system", "Be brief"), ("user", "Hi"), ("assistant", "Hello"))),
    (
        "ok_wrapped",
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "b"},
                ],
                "id": 3,
            }
        ),
    ),
    ("bad_json", '[{"role": "user", "content": "Hi"'),
    ("json_in_string", json.dumps(_j(("user", "Hi"), ("assistant", "Hello")))),
    ("json_null", "null"),
    ("number", "42"),
    ("object_without_messages", '{"turns": []}'),
    ("empty_list", "[]"),
    ("empty_wrapped", '{"messages": []}'),
    ("not_a_mapping", '["user: Hi"]'),
    ("no_role", '[{"content": "Hi"}]'),
    ("role_not_string", '[{"role": 1, "content": "Hi"}]'),
    ("bot_role", _j(("user", ""), ("bot", "x"))),
    ("system_second", _j(("user", "Hi"), ("system", "x"), ("assistant", "y"))),
    ("starts_with_assistant", _j(("assistant", "Hi"), ("user", "x"), ("assistant", "y"))),
    ("lone_system", _j(("system", "x"))),
    ("two_users", _j(("user", "Hi"), ("user", "again"), ("assistant", "y"))),
    ("ends_with_user", _j(("user", "Hi"), ("assistant", "x"), ("user", "y"))),
    ("blank_reply", _j(("user", "Hi"), ("assistant", " \n"))),
    ("missing_content", '[{"role": "user", "content": "Hi"}, {"role": "assistant"}]'),
    ("unicode", _j(("user", "héllo ✓"), ("assistant", "日本語"))),
]

TEXT_SCHEMA = "id int, label string, messages string"
NATIVE_SCHEMA = "id int, messages array<struct<role:string,content:string>>"


def expected(value, fmt: ChatFormat = FMT):
    return first_problem(value, **fmt.as_dict())


def text_rows():
    return [(i, label, value) for i, (label, value) in enumerate(TEXT_CASES)]


@pytest.fixture(scope="module")
def engine():
    from chatgate.engines.spark import SparkEngine

    return SparkEngine()


@pytest.fixture(scope="module")
def text_df(spark):
    return spark.createDataFrame(text_rows(), TEXT_SCHEMA)


@pytest.fixture(scope="module")
def repeated(spark):
    """Highly duplicated values (so `auto` deduplicates) with nulls, as the source and its rows."""
    values = [_j(("user", "Hi"), ("assistant", "Hello"))] * 6 + [
        _j(("user", "a"), ("user", "b"))
    ] * 5
    values += ["nope"] * 3 + [None] * 2 + [_j(("assistant", "x"))] * 4
    rows = [(i, v) for i, v in enumerate(values)]
    return spark.createDataFrame(rows, "id int, messages string"), rows


@pytest.fixture(scope="module")
def judged_by_mode(engine, repeated):
    df, _ = repeated
    return {mode: engine.judge(df, "messages", FMT, dedup=mode) for mode in ("on", "off", "auto")}


def assert_annotated(annotated, rows, schema, fmt=FMT, value_index=-1):
    """`annotated` is `rows` (of `schema`, an id first) plus their expected reasons, in any order.

    One Spark job (a collect), where comparing two DataFrames with sorted rows takes four.
    """
    want_schema = annotated.sparkSession.createDataFrame([], f"{schema}, pb_reason_ string").schema
    assert [(f.name, f.dataType) for f in annotated.schema] == [
        (f.name, f.dataType) for f in want_schema
    ]
    names = annotated.columns
    want = {row[0]: dict(zip(names, (*row, expected(row[value_index], fmt)))) for row in rows}
    got = {r[0]: r.asDict(recursive=True) for r in annotated.collect()}
    assert got == want


def _counts(rows, fmt=FMT, value_index=-1):
    counts: dict[str, int] = {}
    for row in rows:
        code = expected(row[value_index], fmt)
        if code is not None:
            counts[code] = counts.get(code, 0) + 1
    return counts


def _final_plan(df) -> str:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return plan.split("== Initial Plan ==")[0]


def _first_line(plan: str, pattern: str) -> int:
    for number, line in enumerate(plan.splitlines()):
        if re.search(pattern, line):
            return number
    raise AssertionError(f"no {pattern!r} in the plan:\n{plan}")


AGGREGATE = r"\b(Hash|Sort|ObjectHash)Aggregate\("
PYTHON_STEP = r"\b(Python)?MapInArrow\b"


@pytest.mark.spark
def test_every_reason_in_json_text(spark, engine, text_df):
    judged = engine.judge(text_df, "messages", FMT)

    rows = text_rows()
    assert set(REASONS) <= {expected(v) for _, _, v in rows}
    assert_annotated(judged.annotated, rows, TEXT_SCHEMA)
    assert judged.units == len(rows)
    assert judged.reasons == _counts(rows)
    assert list(judged.reasons.values()) == sorted(judged.reasons.values(), reverse=True)
    assert judged.failed == sum(judged.reasons.values())
    assert judged.passed == 4
    assert not judged.deduplicated  # every value distinct: auto doesn't pay for a shuffle
    assert judged.distinct_values is None  # every row checked: no count made


@pytest.mark.spark
def test_binary_json_matches_text(spark, engine):
    rows = [(i, value.encode()) for i, (_, value) in enumerate(TEXT_CASES)] + [(99, b"\xff\xfe[]")]
    df = spark.createDataFrame(rows, "id int, messages binary")
    judged = engine.judge(df, "messages", FMT, dedup="off")
    got = {r["id"]: r["pb_reason_"] for r in judged.annotated.select("id", "pb_reason_").collect()}
    assert got == {i: expected(v) for i, v in rows}


@pytest.mark.spark
def test_large_arrow_types(spark, engine):
    rows = [(1, _j(("user", "a"), ("assistant", "b"))), (2, "[]"), (3, "[]"), (4, _j(("bot", "a")))]
    df = spark.createDataFrame(rows, "id int, messages string")
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        judged = engine.judge(df, "messages", FMT, dedup="on")
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    got = {r["id"]: r["pb_reason_"] for r in judged.annotated.select("id", "pb_reason_").collect()}
    assert got == {i: expected(v) for i, v in rows}


@pytest.mark.spark
def test_duplicates_multiply_counts(judged_by_mode, repeated):
    _, rows = repeated
    on, off = judged_by_mode["on"], judged_by_mode["off"]
    want = _counts(rows, value_index=1)
    assert want == {"not_alternating": 5, "first_role": 4, "not_messages": 5}
    for judged in (on, off):
        assert judged.reasons == want
        # A tie of counts goes to the reason whose first row comes first.
        assert list(judged.reasons) == ["not_alternating", "not_messages", "first_role"]
        assert (judged.units, judged.failed, judged.passed) == (20, 14, 6)
    assert on.deduplicated and on.distinct_values == 4
    assert not off.deduplicated and off.distinct_values is None
    assert on.extra["failing_distinct"] == 3  # the nulls have no key


@pytest.mark.spark
def test_dedup_modes_give_the_same_table(spark, judged_by_mode, repeated):
    _, rows = repeated
    for judged in judged_by_mode.values():
        assert_annotated(judged.annotated, rows, "id int, messages string")
    auto, off = judged_by_mode["auto"], judged_by_mode["off"]
    assert auto.reasons == off.reasons and (auto.units, auto.failed) == (off.units, off.failed)
    # auto doesn't shuffle to deduplicate: no distinct count, as without dedup.
    assert not auto.deduplicated and auto.distinct_values is None
    # The 6 passing rows are proven on the JVM (`shapes`); Python judges the 14 others.
    assert (off.extra["values_judged"], off.extra["values_proven"]) == (14, 6)


@pytest.mark.spark
def test_auto_judges_each_value_once_per_partition(spark, engine):
    # 3 values, each 10 times, in 2 partitions: each partition judges each of its values once.
    values = [_j(("user", "Hi"), ("assistant", "Hello")), "[]", _j(("user", "a"), ("user", "b"))] * 10
    rows = [(i, v) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, "id int, messages string").repartition(2, "id")
    auto = engine.judge(df, "messages", FMT, dedup="auto")
    assert auto.extra["values_judged"] <= 6
    assert auto.reasons == engine.judge(df, "messages", FMT, dedup="off").reasons
    assert_annotated(auto.annotated, rows, "id int, messages string")
    one = engine.judge(df.coalesce(1), "messages", FMT, dedup="auto")
    # The passing value's 10 rows are proven on the JVM (`shapes`): Python judges the 2 others once.
    assert (one.extra["values_judged"], one.extra["values_proven"]) == (2, 10)


@pytest.mark.spark
def test_python_runs_after_the_aggregation_and_joins_back_by_broadcast(judged_by_mode):
    on_plan = _final_plan(judged_by_mode["on"].extra["checked"])
    # A plan prints top-down: a node's input is below it.
    assert _first_line(on_plan, PYTHON_STEP) < _first_line(on_plan, AGGREGATE), on_plan
    off_plan = _final_plan(judged_by_mode["off"].extra["checked"])
    # Without dedup, Python reads the scan directly and sends failing rows back whole: no aggregate, no shuffle.
    _first_line(off_plan, PYTHON_STEP)
    assert not re.search(AGGREGATE, off_plan) and "Exchange" not in off_plan, off_plan

    for judged in judged_by_mode.values():
        annotated_plan = judged.annotated._jdf.queryExecution().executedPlan().toString()
        assert "BroadcastHashJoin" in annotated_plan
        assert "SortMergeJoin" not in annotated_plan
        assert not re.search(PYTHON_STEP, annotated_plan)  # the check ran once, in judge


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["on", "off", "auto"])
@pytest.mark.parametrize("na_pass", [False, True])
def test_nulls_follow_na_pass(spark, engine, na_pass, dedup):
    fmt = ChatFormat(na_pass=na_pass)
    rows = [(1, None), (2, _j(("user", "Hi"))), (3, "null"), (4, None), (5, "[]")]
    df = spark.createDataFrame(rows, "id int, messages string")
    judged = engine.judge(df, "messages", fmt, dedup=dedup)
    assert_annotated(judged.annotated, rows, "id int, messages string", fmt)
    # Each split of the annotated table on its own (they take different branches of its plan).
    failing = {r["id"] for r in engine.failing_rows(judged).collect()}
    assert failing == {i for i, v in rows if expected(v, fmt) is not None}
    assert {r["id"] for r in engine.passing_rows(judged).collect()} == {i for i, _ in rows} - failing
    assert judged.reasons == _counts(rows, fmt)
    assert judged.reasons["not_messages"] == (1 if na_pass else 3)
    if dedup == "on":
        assert judged.distinct_values == 3  # nulls aren't distinct values


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["off", "auto"])
def test_failing_rows_are_read_from_the_check_not_the_source(spark, engine, tmp_path, dedup):
    rows = [(i, v) for i, v in enumerate([_j(("user", "Hi"), ("assistant", "Hello")), "[]", None, "nope"] * 5)]
    spark.createDataFrame(rows, "id int, messages string").repartition(4).write.parquet(str(tmp_path / "src"))
    df = spark.read.parquet(str(tmp_path / "src"))
    judged = engine.judge(df, "messages", FMT, dedup=dedup)
    failing = engine.failing_rows(judged)
    plan = failing._jdf.queryExecution().executedPlan().toString()
    assert "FileScan" not in plan and not re.search(PYTHON_STEP, plan), plan
    assert sorted((r["id"], r["pb_reason_"]) for r in failing.collect()) == sorted(
        (i, expected(v)) for i, v in rows if expected(v) is not None
    )
    # Few failing rows are read in one partition: a Python pass over them starts one worker task.
    assert failing.rdd.getNumPartitions() == 1 < df.rdd.getNumPartitions()
    # The passing rows are the source's others: one more scan, never the check again.
    plan = engine.passing_rows(judged)._jdf.queryExecution().executedPlan().toString()
    assert "FileScan" in plan and not re.search(PYTHON_STEP, plan), plan


@pytest.mark.spark
def test_a_column_arrow_cant_carry_is_judged_by_key(spark, engine):
    from pyspark.sql import functions as F

    rows = [(1, _j(("user", "Hi"), ("assistant", "Hello"))), (2, "[]"), (3, "[]")]
    df = spark.createDataFrame(rows, "id int, messages string").withColumn("span", F.make_interval(F.lit(1)))
    judged = engine.judge(df, "messages", FMT, dedup="off")
    assert judged.deduplicated and judged.distinct_values == 2
    assert judged.reasons == {"no_messages": 2}
    got = {r["id"]: r["pb_reason_"] for r in judged.annotated.select("id", "pb_reason_").collect()}
    assert got == {1: None, 2: "no_messages", 3: "no_messages"}


NATIVE_CASES = [
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    [],
    [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hi"}],
    [{"role": "bot", "content": "Hi"}],
    [{"role": "user", "content": "Hi"}, {"role": "system", "content": "x"}],
    [{"role": "assistant", "content": "Hi"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": ""}],
    # Spark's hashes skip nulls: these two hash alike but fail differently.
    [{"role": None, "content": "user"}, {"role": "assistant", "content": "x"}],
    [{"role": "user", "content": None}, {"role": "assistant", "content": "x"}],
    [None],
    None,
]


@pytest.mark.spark
def test_native_list_of_structs(spark, engine):
    rows = [(i, value) for i, value in enumerate(NATIVE_CASES)]
    df = spark.createDataFrame(rows, NATIVE_SCHEMA)
    judged = engine.judge(df, "messages", FMT, dedup="on")
    assert_annotated(judged.annotated, rows, NATIVE_SCHEMA)
    assert judged.reasons == _counts(rows)
    assert judged.distinct_values == len(rows) - 2  # one repeat, one null
    by_id = {r["id"]: r["pb_reason_"] for r in judged.annotated.collect()}
    assert (by_id[8], by_id[9]) == ("bad_message", "empty_content")


@pytest.mark.spark
def test_native_list_of_maps(spark, engine):
    rows = [(i, value) for i, value in enumerate(NATIVE_CASES[:8])]
    df = spark.createDataFrame(rows, "id int, messages array<map<string,string>>")
    judged = engine.judge(df, "messages", FMT, dedup="off")
    got = {r["id"]: r["pb_reason_"] for r in judged.annotated.select("id", "pb_reason_").collect()}
    assert got == {i: expected(v) for i, v in rows}


@pytest.mark.spark
def test_splits_and_helpers(spark, engine, judged_by_mode, repeated):
    df, rows = repeated
    judged = judged_by_mode["auto"]
    failing, passing = engine.failing_rows(judged), engine.passing_rows(judged)
    assert failing.columns == [*df.columns, "pb_reason_"]
    assert passing.columns == df.columns
    assert sorted(r["id"] for r in failing.collect()) == [
        r[0] for r in rows if expected(r[1]) is not None
    ]
    assert passing.count() == judged.passed

    assert engine.accepts(df) and not engine.accepts(rows)
    assert engine.columns(df) == ["id", "messages"]
    assert engine.row_count(df) == len(rows)
    assert engine.segment_values(df, "messages") == sorted({v for _, v in rows if v}) + [None]
    assert engine.filter_equal(df, "messages", "nope").count() == 3
    assert engine.filter_equal(df, "messages", None).count() == 2
    assert engine.preview(df, 3).num_rows == 3
    assert engine.drop_columns(df, ["messages"]).columns == ["id"]
    assert engine.concat([df, df]).count() == 2 * len(rows)


@pytest.mark.spark
def test_edge_tables(spark, engine):
    empty = spark.createDataFrame([], "id int, messages string")
    judged = engine.judge(empty, "messages", FMT)
    assert (judged.units, judged.failed, judged.reasons, judged.distinct_values) == (0, 0, {}, None)
    assert judged.annotated.columns == ["id", "messages", "pb_reason_"]
    judged = engine.judge_check(empty, ChatCheck("messages", FMT, images_column="id"), dedup="on")
    assert (judged.units, judged.failed, judged.distinct_values) == (0, 0, 0)  # no stats pass

    clean = spark.createDataFrame(
        [(1, _j(("user", "a"), ("assistant", "b")))], "id int, `odd.name` string"
    )
    judged = engine.judge(clean, "odd.name", FMT, reason_column="why")
    assert judged.failed == 0
    assert [tuple(r) for r in judged.annotated.collect()] == [
        (1, _j(("user", "a"), ("assistant", "b")), None)
    ]


@pytest.mark.spark
def test_bad_arguments_raise_before_any_job(spark, engine, text_df):
    with pytest.raises(ValueError, match="dedup="):
        engine.judge(text_df, "messages", FMT, dedup="yes")
    with pytest.raises(KeyError, match="nope"):
        engine.judge(text_df, "nope", FMT)
    with pytest.raises(ValueError, match="already has a column"):
        engine.judge(text_df, "messages", FMT, reason_column="label")
    with pytest.raises(KeyError, match="chosen"):
        engine.judge_check(text_df, DatasetCheck("implicit_preference"))
    with pytest.raises(TypeError, match="RowCheck"):
        engine.judge_check(text_df, "messages")


# --- Row checks of several columns (and of a label) -------------------------------

PROMPT = _j(("user", "Hi"))
REPLY, OTHER_REPLY = _j(("assistant", "Hello")), _j(("assistant", "Hey"))
CALLING = json.dumps(
    [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]
)
WEATHER_TOOLS = json.dumps([{"type": "function", "function": {"name": "get_weather"}}])

# check, schema of its columns, rows of values (repeats, so dedup="on" groups some).
ROW_CHECKS = {
    "preference": (
        DatasetCheck("preference"),
        "prompt string, chosen string, rejected string",
        [(PROMPT, REPLY, OTHER_REPLY)] * 3
        + [(PROMPT, REPLY, REPLY)] * 2
        + [
            (_j(("user", "Hi"), ("assistant", "x")), REPLY, OTHER_REPLY),
            (PROMPT, _j(("user", "x")), OTHER_REPLY),
            (PROMPT, _j(("assistant", "a"), ("assistant", "b")), OTHER_REPLY),
            (PROMPT, '[{"role": "assistant"', OTHER_REPLY),
            ("The sky is", REPLY, OTHER_REPLY),
        ]
        + [("The sky is", " blue.", " green.")] * 2
        + [("The sky is", "", " green."), ("The sky is", " blue.", " blue.")]
        + [(None, REPLY, OTHER_REPLY)] * 2
        + [("The sky is", None, " green."), ("The sky is", " green.", None)]
        + [(None, None, None)] * 2
        + [("", None, "x"), (None, "", "x")],
    ),
    # With na_pass a null is skipped, so (null, x) and (x, null) differ: the key must too.
    "prompt_completion": (
        DatasetCheck("prompt_completion", ChatFormat(na_pass=True)),
        "prompt string, completion string",
        [(PROMPT, REPLY)] * 3
        + [("The sky is", " blue.")] * 2
        + [(None, PROMPT)] * 2
        + [(PROMPT, None)] * 2
        + [(None, ""), ("", None), (None, None), (None, None)]
        + [(REPLY, REPLY), (PROMPT, _j(("assistant", ""))), ("The sky is", REPLY)],
    ),
    "chat_with_tools": (
        ChatCheck("messages", ChatFormat(tools=True), tools_column="tools"),
        "messages string, tools string",
        [(CALLING, WEATHER_TOOLS)] * 3
        + [(CALLING, json.dumps([{"name": "get_time"}]))] * 2
        + [(CALLING, None)] * 2
        + [(CALLING, '{"name": "get_weather"}'), (CALLING, "not json")]
        + [(_j(("user", "a"), ("assistant", "b")), None)] * 2
        + [(None, WEATHER_TOOLS), (None, None), (None, None), ("[]", WEATHER_TOOLS)],
    ),
    "label": (
        LabelCheck("label"),
        "label boolean",
        [(True,)] * 3 + [(False,)] * 2 + [(None,)] * 3,
    ),
}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(ROW_CHECKS))
def test_row_checks_match_check_row(spark, engine, name):
    from pyspark.sql import functions as F

    check, schema, values = ROW_CHECKS[name]
    rows = [(i, *value) for i, value in enumerate(values)]
    df = spark.createDataFrame(rows, f"id int, {schema}")
    want = {row[0]: check.check_row(dict(zip(df.columns, row))) for row in rows}
    assert None in want.values() and len(set(want.values())) >= 2
    counts = Counter(code for code in want.values() if code)
    first: dict[str, int] = {}
    for i, code in want.items():
        if code:
            first.setdefault(code, i)
    # By count, ties by first failing row (written here rather than taken from the engine).
    reasons = {code: counts[code] for code in sorted(counts, key=lambda code: (-counts[code], first[code]))}

    judged = {mode: engine.judge_check(df, check, dedup=mode) for mode in ("on", "off")}
    both = [j.annotated.select(F.lit(mode).alias("mode"), "id", "pb_reason_") for mode, j in judged.items()]
    got: dict[str, dict] = {mode: {} for mode in judged}
    for mode, i, code in both[0].unionByName(both[1]).collect():  # one job for both
        got[mode][i] = code
    assert got == {mode: want for mode in judged}
    for mode, j in judged.items():
        assert list(j.reasons.items()) == list(reasons.items()), mode
        assert (j.units, j.failed) == (len(rows), counts.total())
        assert j.annotated.columns == [*df.columns, "pb_reason_"]
    # Nulls go to Python like any value: one key per distinct row of values; a row whose
    # every value is null is missing, not a distinct value.
    present = {value for value in values if any(v is not None for v in value)}
    assert judged["on"].deduplicated and judged["on"].distinct_values == len(present)
    assert not judged["off"].deduplicated and judged["off"].distinct_values is None

    on_plan = _final_plan(judged["on"].extra["checked"])
    assert _first_line(on_plan, PYTHON_STEP) < _first_line(on_plan, AGGREGATE), on_plan
    annotated_plan = judged["off"].annotated._jdf.queryExecution().executedPlan().toString()
    assert "BroadcastHashJoin" in annotated_plan and not re.search(PYTHON_STEP, annotated_plan)


@pytest.mark.spark
def test_wide_key_tells_nulls_empties_and_positions_apart(spark):
    from pyspark.sql import functions as F

    from chatgate.engines.spark.keys import KEYS, wide_key_columns

    pairs = [
        (None, None), ("", ""), (None, ""), ("", None), ("x", None), (None, "x"),
        ("ab", ""), ("a", "b"), ("", "ab"),
    ]  # fmt: skip
    df = spark.createDataFrame(pairs, "a string, b string")
    keys = wide_key_columns([F.col("a"), F.col("b")])
    got = df.select(
        F.xxhash64("a", "b").alias("plain"), *(k.alias(n) for k, n in zip(keys, KEYS))
    ).collect()
    # Spark's hash skips nulls: (x, null) and (null, x) hash alike without the null flags.
    assert got[4]["plain"] == got[5]["plain"]
    assert len({tuple(r)[1:] for r in got}) == len(pairs)
    assert all(value is not None for r in got for value in r)
    assert [r[KEYS[2]] for r in got] == [0, 0, 0, 0, 1, 1, 2, 2, 2]


@pytest.mark.spark
def test_key_of_one_column_is_xxhash64_crc32_and_byte_length(spark):
    import zlib

    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from chatgate.engines.spark.keys import KEYS, key_columns

    # CRC-32s above 2^31 ('a', the JSON) must fit the key's int without overflow.
    texts = ["", "a", "Hi", '[{"role": "user"}]', "\u00e9t\u00e9"]
    df = spark.createDataFrame([(t, t.encode()) for t in texts], "s string, b binary")
    for name, dtype in (("s", T.StringType()), ("b", T.BinaryType())):
        keys = key_columns(F.col(name), dtype)
        got = df.select(F.xxhash64(name).alias("x"), *(k.alias(n) for k, n in zip(keys, KEYS))).collect()
        assert [r[KEYS[0]] for r in got] == [r["x"] for r in got]
        assert [r[KEYS[1]] for r in got] == [zlib.crc32(t.encode()) - 2**31 for t in texts]
        assert [r[KEYS[2]] for r in got] == [len(t.encode()) for t in texts]


@pytest.mark.spark
def test_a_check_gets_only_its_columns_named_as_in_the_table(spark, engine):
    import pyarrow as pa

    class Seen(RowCheck):
        """Fails every row with the names of the columns it was sent."""

        columns = ("odd.name", "b")
        codes = ()

        def describe(self):
            return "seen"

        def as_dict(self):
            return {}

        def check_row(self, row):
            return None

        def check(self, batch):
            return pa.array(["|".join(batch.schema.names)] * batch.num_rows, pa.string())

    df = spark.createDataFrame([(1, "x", None), (2, None, 5)], "id int, `odd.name` string, b int")
    judged = engine.judge_check(df, Seen(), dedup="off")
    assert judged.reasons == {"odd.name|b": 2}
    assert [r[-1] for r in judged.annotated.collect()] == ["odd.name|b"] * 2


@pytest.mark.spark
def test_session_has_delta(spark, tmp_path):
    assert spark_session.DELTA_EXTENSION in spark.conf.get("spark.sql.extensions")
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a")], "id int, v string").write.format("delta").save(path)
    assert spark.read.format("delta").load(path).collect()[0]["v"] == "a"
    assert spark_session.get_spark() is spark  # an active session is reused
    # With a JVM up and Delta loadable, no jars are added to a launcher's settings.
    conf = spark_session.delta_conf({"spark.master": "local[2]"})
    assert conf["spark.sql.extensions"] == spark_session.DELTA_EXTENSION
    assert "spark.jars" not in conf and "spark.jars.packages" not in conf


def test_jars_dir_from_env(tmp_path, monkeypatch):
    (tmp_path / "delta-spark_4.1_2.13-4.1.0.jar").write_bytes(b"")
    (tmp_path / "delta-storage-4.1.0.jar").write_bytes(b"")
    monkeypatch.setenv(spark_session.JARS_DIR_ENV, str(tmp_path))
    assert spark_session.find_jars_dir() == tmp_path
    conf = spark_session.delta_conf({})
    assert conf["spark.jars"].split(",") == [str(p) for p in sorted(tmp_path.glob("*.jar"))]
    assert "spark.jars.packages" not in conf

    monkeypatch.setenv(spark_session.JARS_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        spark_session.find_jars_dir()


def test_delta_conf_keeps_what_the_launcher_set(monkeypatch):
    launched = {
        "spark.jars.packages": spark_session.DELTA_PACKAGE,
        "spark.sql.extensions": "com.example.Ext",
        "spark.sql.catalog.spark_catalog": "com.example.Catalog",
    }
    conf = spark_session.delta_conf(launched)
    assert conf == {
        "spark.sql.extensions": f"com.example.Ext,{spark_session.DELTA_EXTENSION}",
        "spark.sql.catalog.spark_catalog": "com.example.Catalog",
    }


def test_delta_conf_falls_back_to_packages(monkeypatch):
    monkeypatch.delenv(spark_session.JARS_DIR_ENV, raising=False)
    monkeypatch.setattr(spark_session, "find_jars_dir", lambda: None)
    conf = spark_session.delta_conf({})
    assert conf["spark.jars.packages"] == spark_session.DELTA_PACKAGE
    assert conf["spark.sql.catalog.spark_catalog"] == spark_session.DELTA_CATALOG


def test_delta_conf_warns_when_a_running_driver_lacks_delta(monkeypatch):
    monkeypatch.setattr(spark_session, "_delta_loadable", lambda: False)
    with pytest.warns(RuntimeWarning, match="--packages io.delta"):
        assert spark_session.delta_conf({"spark.master": "yarn"}) == {}


# -- chispa: the failing and passing rows as whole DataFrames -----------------------


def _expected_failing(spark, rows, schema, fmt=FMT):
    """The rows the reference says fail, with their reason, as a DataFrame of `schema` + pb_reason_."""
    failing = [(*row, code) for row in rows if (code := expected(row[-1], fmt)) is not None]
    return spark.createDataFrame(failing, f"{schema}, pb_reason_ string")


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["on", "off"])
def test_chispa_failing_rows_of_json_text(spark, engine, text_df, dedup):
    from chispa import assert_df_equality

    judged = engine.judge(text_df, "messages", FMT, dedup=dedup)
    assert_df_equality(
        engine.failing_rows(judged),
        _expected_failing(spark, text_rows(), TEXT_SCHEMA),
        ignore_row_order=True,
        ignore_nullable=True,
    )


@pytest.mark.spark
def test_chispa_native_rows_and_duplicates(spark, engine):
    from chispa import assert_df_equality

    rows = [(i, value) for i, value in enumerate(NATIVE_CASES * 2)]
    df = spark.createDataFrame(rows, NATIVE_SCHEMA)
    judged = engine.judge(df, "messages", FMT, dedup="on")
    assert_df_equality(
        engine.failing_rows(judged),
        _expected_failing(spark, rows, NATIVE_SCHEMA),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    passing = [row for row in rows if expected(row[-1]) is None]
    assert_df_equality(
        engine.passing_rows(judged),
        spark.createDataFrame(passing, NATIVE_SCHEMA),
        ignore_row_order=True,
        ignore_nullable=True,
    )


@pytest.mark.spark
@pytest.mark.parametrize("na_pass", [False, True])
def test_chispa_nulls(spark, engine, repeated, na_pass):
    from chispa import assert_df_equality

    df, rows = repeated
    fmt = ChatFormat(first_role="user", last_role="assistant", na_pass=na_pass)
    judged = engine.judge(df, "messages", fmt)
    assert_df_equality(
        engine.failing_rows(judged),
        _expected_failing(spark, rows, "id int, messages string", fmt),
        ignore_row_order=True,
        ignore_nullable=True,
    )


class _CountingCheck(ChatCheck):
    """The core check, counting the values it is given."""

    seen = 0

    def check(self, batch):
        _CountingCheck.seen += batch.num_rows
        return super().check(batch)


def test_memo_gives_every_row_its_own_code_and_judges_each_key_once(monkeypatch):
    import pyarrow as pa

    from chatgate.engines.spark import check as spark_check

    values = [_j(("user", "Hi"), ("assistant", "Hello")), "[]", None, "nope"]
    keys = [(1, 1, 10), (2, 2, 2), (42, 42, None), (3, 3, 4)]
    memo = spark_check._Memo(_CountingCheck("messages", FMT))
    _CountingCheck.seen = 0
    order = [0, 1, 0, 2, 3, 1, 2]
    batch = pa.record_batch([pa.array([values[i] for i in order])], names=["messages"])
    codes, judged = memo.codes(batch, [keys[i] for i in order])
    want = [first_problem(values[i], **FMT.as_dict()) if values[i] is not None else "not_messages" for i in order]
    assert codes.to_pylist() == want
    assert judged == _CountingCheck.seen == 4
    # The next batch of the partition: known keys aren't judged again.
    codes, judged = memo.codes(batch.slice(0, 2), [keys[0], keys[1]])
    assert codes.to_pylist() == want[:2] and judged == 0 and _CountingCheck.seen == 4
    # Full: a new key is judged but not remembered.
    monkeypatch.setattr(spark_check, "MEMO_KEYS", len(memo.known))
    new = pa.record_batch([pa.array([_j(("user", "x"), ("assistant", "y"))] * 2)], names=["messages"])
    codes, judged = memo.codes(new, [(9, 9, 9)] * 2)
    assert codes.to_pylist() == [None, None] and judged == 1 and (9, 9, 9) not in memo.known


def _keys_repeating_enough(rows: int) -> int:
    """A number of distinct keys among `rows` rows whose repeats keep Spark's memo on (by a margin)."""
    from chatgate.engines import base

    return int(rows * (1 - base.SPARK_MEMO.min_repeats)) - rows // 10


def test_memo_stops_where_a_partitions_first_rows_repeat_too_little(monkeypatch):
    import pyarrow as pa

    from chatgate.engines import base
    from chatgate.engines.spark import check as spark_check

    def value(key):  # one value per key: odd keys pass, even ones have no messages
        return _j(("user", f"q{key[0]}"), ("assistant", "a")) if key[0] % 2 else "[]"

    monkeypatch.setattr(base, "AUTO_SAMPLE_ROWS", 200)
    distinct = [(i, i, i) for i in range(200)]
    few = _keys_repeating_enough(200)
    for keys, active in ((distinct, False), ([(i % few, 0, 0) for i in range(200)], True)):
        memo = spark_check._Memo(_CountingCheck("messages", FMT))
        batch = pa.record_batch([pa.array([value(k) for k in keys])], names=["messages"])
        memo.codes(batch.slice(0, 100), keys[:100])
        assert memo.active  # 100 rows of 200 looked up: not decided yet
        codes, _ = memo.codes(batch.slice(100), keys[100:])
        assert codes.to_pylist() == [None if k[0] % 2 else "no_messages" for k in keys[100:]]
        assert memo.active is active and bool(memo.known) is active  # enough repeated keys go on
    # In the Python step, an inactive memo's batches are judged row by row, each row given its own code.
    values = pa.array([value(k) for k in distinct])
    batches = [pa.record_batch([values, *(pa.array(k) for k in zip(*distinct)), pa.array(range(200))],
                               names=["_0", *spark_check.KEYS, spark_check.ROW])] * 3
    out = spark_check.check_batches(iter(batches), check=_CountingCheck("messages", FMT), names={"_0": "messages"},
                                    counted=False, large_strings=False, memo=True)
    tallies = list(out)
    assert [b.column(spark_check.JUDGED).to_pylist()[-1] for b in tallies] == [200, 200, 200]
    assert [b.num_rows for b in tallies] == [101, 101, 101]  # 100 failing rows each, then the tally row


def test_memo_counts_a_lone_columns_nulls_as_no_repeats(monkeypatch):
    import math

    import pyarrow as pa

    from chatgate.engines import base
    from chatgate.engines.spark import check as spark_check

    monkeypatch.setattr(base, "AUTO_SAMPLE_ROWS", 200)
    null_key = (42, None, None)  # Spark's xxhash64, CRC-32 and byte length of a null: one key for every null
    bar = base.SPARK_MEMO.min_repeats
    per_value = math.ceil(bar / (1 - bar)) + 1  # counted as repeats, these nulls would keep any memo on
    for distinct, active in ((200, False), (_keys_repeating_enough(200), True)):
        keys = [key for i in range(200) for key in ((i % distinct, 0, 0), *[null_key] * per_value)]
        chats = [_j(("user", f"q{i % distinct}"), ("assistant", "a")) for i in range(200)]
        values = [v for chat in chats for v in (chat, *[None] * per_value)]
        memo = spark_check._Memo(_CountingCheck("messages", FMT))
        codes, judged = memo.codes(pa.record_batch([pa.array(values, pa.string())], names=["messages"]), keys)
        assert codes.to_pylist() == [expected(v) for v in values] and judged == distinct + 1
        assert memo.active is active
    # A partition of nulls has no values to repeat: it decides after as many rows as any other.
    memo = spark_check._Memo(_CountingCheck("messages", FMT))
    memo.codes(pa.record_batch([pa.array([None] * 200, pa.string())], names=["messages"]), [null_key] * 200)
    assert not memo.active


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["off", "auto", "on"])
def test_failing_rows_come_back_with_every_column_type_intact(spark, engine, dedup):
    import datetime as dt
    from decimal import Decimal

    schema = (
        "id int, flag boolean, small tinyint, big bigint, ratio double, price decimal(12,3), day date, "
        "at timestamp, local timestamp_ntz, raw binary, tags array<string>, scores map<string,int>, "
        "meta struct<source:string,turns:int>, messages string"
    )
    values = [_j(("user", "Hi"), ("assistant", "Hello")), "[]", None, _j(("bot", "x"))]
    rows = [
        (
            i, i % 2 == 0, i, 2**40 + i, i / 3, Decimal(f"{i}.125"), dt.date(2026, 1, 1 + i),
            dt.datetime(2026, 1, 1, 12, i, tzinfo=dt.timezone.utc), dt.datetime(2026, 1, 1, 8, i),
            bytes([i, 0, 255]), [f"t{i}", None], {"a": i}, {"source": f"s{i}", "turns": None}, value,
        )
        for i, value in enumerate(values * 2)
    ]
    df = spark.createDataFrame(rows, schema)
    judged = engine.judge(df, "messages", FMT, dedup=dedup)
    assert judged.annotated.schema.simpleString() == f"struct<{schema.replace(', ', ',').replace(' ', ':')},pb_reason_:string>"
    want = {row["id"]: (*row, expected(row["messages"])) for row in df.collect()}
    assert {r["id"]: tuple(r) for r in judged.annotated.collect()} == want
    failing = {r["id"]: tuple(r) for r in engine.failing_rows(judged).collect()}
    assert failing == {i: row for i, row in want.items() if row[-1] is not None}
