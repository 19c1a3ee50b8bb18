"""The embedded engine (Ibis over DuckDB) and its Delta/Parquet reader.

Every judgement is compared row by row with the reference check (`first_problem`,
or `problem_of` for a ChatFormat, `check.check_row` for any RowCheck), so the
engine can't drift from it; dedup modes and join strategies must agree.
"""

from __future__ import annotations

import json
import tracemalloc
import uuid
from dataclasses import dataclass

import deltalake
import ibis
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.engines import ibis as ibis_engine
from chatgate.engines.base import FailingColumns, Judged
from chatgate.engines.digests import tuple_sha256
from chatgate.engines.ibis import IbisEngine
from chatgate.engines.ibis import plan as ibis_plan
from chatgate.engines.ibis import stream as ibis_stream
from chatgate.engines.ibis.connection import default_connection, record_batches
from chatgate.rules import (
    REASONS,
    ChatCheck,
    ChatFormat,
    DatasetCheck,
    LabelCheck,
    RowCheck,
    first_problem,
    problem_of,
)
from chatgate.stores.deltalake_tables import delta_version, is_delta, open_table

try:
    from strategies import cases, json_text
except ImportError:  # tests/ imported as a package
    from tests.strategies import cases, json_text

MODES = [
    pytest.param("on", "hash", id="dedup-on-hash"),
    pytest.param("off", "hash", id="dedup-off-hash"),
    pytest.param("auto", "hash", id="dedup-auto-hash"),
    pytest.param("on", "value", id="dedup-on-value"),
    pytest.param("off", "value", id="dedup-off-value"),
]


def m(role, content="x"):
    return {"role": role, "content": content}


def text(value) -> str:
    return json.dumps(value)


OK = text([m("user", "Hi"), m("assistant", "Hello")])

# (label, value, expected code) under the default ChatFormat(): every code the
# default parameters can produce, and passing values of every accepted shape.
DEFAULT_EXAMPLES = [
    ("ok", OK, None),
    ("ok_wrapped", text({"messages": [m("user"), m("assistant")], "id": 3}), None),
    ("ok_system", text([m("system", "Be brief."), m("user"), m("assistant")]), None),
    ("ok_vision", text([m("user", [{"type": "image"}, {"type": "text", "text": ""}])]), None),
    ("bad_json", '[{"role": "user"', "not_messages"),
    ("json_number", "42", "not_messages"),
    ("json_null", "null", "not_messages"),
    ("json_in_a_string", json.dumps(OK), "not_messages"),
    ("object_without_messages", text({"conversation": []}), "not_messages"),
    ("empty_list", "[]", "no_messages"),
    ("empty_wrapped", text({"messages": []}), "no_messages"),
    ("not_a_mapping", text([m("user"), "hello"]), "bad_message"),
    ("no_role", text([{"content": "x"}]), "bad_message"),
    ("role_not_a_string", text([{"role": 1, "content": "x"}]), "bad_message"),
    ("bot_role", text([m("user"), m("bot")]), "unknown_role"),
    ("role_case", text([m("User")]), "unknown_role"),
    ("unknown_beats_empty", text([m("user", ""), m("bot", "x")]), "unknown_role"),
    ("system_second", text([m("user"), m("system"), m("assistant")]), "system_position"),
    ("two_systems", text([m("system"), m("system"), m("user")]), "system_position"),
    ("user_twice", text([m("user", "Hi!"), m("user", "Hello?")]), "not_alternating"),
    ("empty_content", text([m("user", ""), m("assistant")]), "empty_content"),
    ("blank_content", text([m("user", " \n\t"), m("assistant")]), "empty_content"),
    ("missing_content", text([{"role": "user"}, m("assistant")]), "empty_content"),
    ("null_content", text([m("user", None), m("assistant")]), "empty_content"),
    ("missing", None, "not_messages"),
]

ENDS = ChatFormat(first_role="user", last_role="assistant")
ENDS_EXAMPLES = [
    ("ok", OK, None),
    ("starts_with_assistant", text([m("assistant"), m("user"), m("assistant")]), "first_role"),
    ("lone_system", text([m("system")]), "first_role"),
    ("ends_with_user", text([m("user"), m("assistant"), m("user")]), "last_role"),
    ("first_before_alternating", text([m("assistant"), m("assistant")]), "first_role"),
    ("alternating_before_last", text([m("user"), m("user")]), "not_alternating"),
]


def table_of(values, con=None, **columns) -> ibis.Table:
    """A DuckDB table with an `id` column (row order) and a `chat` column."""
    con = con or ibis.duckdb.connect()
    data = {"id": pa.array(range(len(values)), pa.int64()), "chat": pa.array(values, pa.string())}
    data.update(columns)
    name = f"t_{uuid.uuid4().hex[:8]}"
    con.con.register(name, pa.table(data))
    return con.table(name)


def reasons_by_id(judged: Judged) -> list:
    rows = judged.annotated.order_by("id").to_pyarrow()
    return rows.column(judged.reason_column).to_pylist()


DEFAULT = ChatFormat()


def judge(table, fmt=DEFAULT, dedup="auto", join_on="auto", **engine) -> Judged:
    return IbisEngine(join_on=join_on, progress=False, **engine).judge(
        table, "chat", fmt, dedup=dedup
    )


def assert_matches_reference(judged: Judged, values, fmt: ChatFormat, scan_order=None) -> None:
    """Row `id` holds `values[id]`; `scan_order` is the ids in the order the table is read."""
    expected = [problem_of(v, fmt) for v in values]
    assert reasons_by_id(judged) == expected
    assert judged.units == len(values)
    assert judged.failed == sum(code is not None for code in expected)
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for row, id in enumerate(range(len(values)) if scan_order is None else scan_order):
        code = expected[id]
        if code is not None:
            counts[code] = counts.get(code, 0) + 1
            first_seen.setdefault(code, row)
    assert judged.reasons == counts
    # By count, ties by first failing row: the order of the step's note.
    assert list(judged.reasons) == by_count_then_first_row(counts, first_seen)


# -- every reason code, per row, against the reference --------------------------------------


@pytest.mark.parametrize(("dedup", "join_on"), MODES)
@pytest.mark.parametrize(
    ("fmt", "examples"),
    [
        pytest.param(ChatFormat(), DEFAULT_EXAMPLES, id="default"),
        pytest.param(ENDS, ENDS_EXAMPLES, id="ends"),
    ],
)
def test_every_reason_code_matches_the_reference(fmt, examples, dedup, join_on):
    values = [value for _, value, _ in examples]
    for label, value, code in examples:
        assert problem_of(value, fmt) == code, label
    judged = judge(table_of(values), fmt, dedup=dedup, join_on=join_on)
    assert_matches_reference(judged, values, fmt)
    assert judged.extra["join_on"] == join_on


def test_the_examples_cover_every_code():
    codes = {code for _, _, code in DEFAULT_EXAMPLES + ENDS_EXAMPLES}
    assert codes - {None} == set(REASONS)


def test_seed_example():
    values = [
        text([m("user", "Hi!"), m("assistant", "Hello! How can I help?")]),
        text([m("user", "Hi!"), m("user", "Hello?")]),
        text([m("system", "Be brief."), m("user", "Capital of France?"), m("assistant", "Paris.")]),
        text([m("user", "What is 2 + 2?"), m("bot", "4")]),
    ]
    judged = judge(table_of(values), ChatFormat(last_role="assistant"))
    assert (judged.units, judged.passed, judged.failed) == (4, 2, 2)
    # A tie, broken by the first failing row, as in the seed's note.
    assert list(judged.reasons.items()) == [("not_alternating", 1), ("unknown_role", 1)]
    failing = IbisEngine().failing_rows(judged).order_by("id").to_pyarrow()
    assert failing.column("id").to_pylist() == [1, 3]
    assert failing.column("pb_reason_").to_pylist() == ["not_alternating", "unknown_role"]


# -- duplicates, nulls, dedup modes ---------------------------------------------------------


@pytest.mark.parametrize(("dedup", "join_on"), MODES)
def test_duplicates_are_counted_per_row(dedup, join_on):
    twice = text([m("user"), m("user")])
    bot = text([m("user"), m("bot")])
    values = [twice, OK, bot, twice, OK, twice, None, bot, OK]
    judged = judge(table_of(values), dedup=dedup, join_on=join_on)
    assert_matches_reference(judged, values, ChatFormat())
    assert list(judged.reasons.items()) == [
        ("not_alternating", 3),
        ("unknown_role", 2),
        ("not_messages", 1),
    ]
    assert judged.deduplicated is (dedup != "off")
    # Without dedup no count is made; every non-null row is checked.
    assert judged.distinct_values == (3 if dedup != "off" else None)
    assert judged.extra["checked"] == (3 if dedup != "off" else 8)
    assert judged.extra["nulls"] == 1


@pytest.mark.parametrize("na_pass", [False, True])
@pytest.mark.parametrize("dedup", ["on", "off"])
def test_nulls_with_na_pass_both_ways(na_pass, dedup):
    values = [None, OK, None, "null", "[]", None]
    fmt = ChatFormat(na_pass=na_pass)
    judged = judge(table_of(values), fmt, dedup=dedup)
    assert_matches_reference(judged, values, fmt)
    expected = (
        {"not_messages": 4, "no_messages": 1}
        if not na_pass
        else {"not_messages": 1, "no_messages": 1}
    )
    assert judged.reasons == expected
    assert judged.extra["nulls"] == 3


def spy_on_check(monkeypatch, cls=ChatCheck, keep=lambda batch: batch) -> list:
    """`keep(batch)` of each batch `cls.check` is called with, from now on."""
    seen = []
    real = cls.check

    def spy(self, batch):
        seen.append(keep(batch))
        return real(self, batch)

    monkeypatch.setattr(cls, "check", spy)
    return seen


def test_missing_values_never_reach_python(monkeypatch):
    batches = spy_on_check(monkeypatch)
    for dedup in ("on", "off"):
        judge(table_of([None, OK, None, "[]"]), dedup=dedup)
    assert batches and not any(batch.column("chat").null_count for batch in batches)
    assert all(batch.schema.names == ["chat"] for batch in batches)


def test_all_missing():
    judged = judge(table_of([None, None]), ChatFormat(na_pass=True))
    assert (judged.units, judged.failed, judged.distinct_values) == (2, 0, 0)
    assert reasons_by_id(judged) == [None, None]


def test_empty_table():
    judged = judge(table_of([]))
    assert (judged.units, judged.failed, judged.reasons) == (0, 0, {})
    assert judged.annotated.count().execute() == 0


def _mixed_values(n: int) -> list:
    pool = [v for _, v, _ in DEFAULT_EXAMPLES]
    return [
        pool[(i * 7) % len(pool)] if i % 3 else text([m("user", f"q{i}"), m("assistant")])
        for i in range(n)
    ]


def test_dedup_modes_give_identical_results():
    values = _mixed_values(300)
    table = table_of(values)
    results = {}
    for dedup in ("on", "off", "auto"):
        for join_on in ("hash", "value"):
            judged = judge(table, dedup=dedup, join_on=join_on, chunk_size=16)
            results[dedup, join_on] = (
                judged.units,
                judged.failed,
                list(judged.reasons.items()),
                reasons_by_id(judged),
            )
            assert judged.extra["batches"] > 1
    first = next(iter(results.values()))
    assert all(result == first for result in results.values())
    assert first[3] == [first_problem(v) for v in values]


def test_auto_deduplicates_repeated_values_only(monkeypatch):
    from chatgate.engines import base

    monkeypatch.setattr(base, "AUTO_SAMPLE_ROWS", 64)
    repeated = table_of([OK, "[]", text([m("user"), m("user")])] * 100)
    distinct = table_of([text([m("user", f"q{i}"), m("assistant")]) for i in range(300)])
    on = judge(repeated, chunk_size=16)
    off = judge(distinct, chunk_size=16)
    assert on.deduplicated and on.extra["repeats_estimate"] > base.EMBEDDED_AUTO.min_repeats
    assert on.distinct_values == 3
    assert (
        not off.deduplicated and off.extra["repeats_estimate"] < base.EMBEDDED_AUTO.min_repeats
    )
    assert off.distinct_values is None and off.extra["checked"] == 300


def test_auto_estimates_on_the_first_rows_of_large_tables(monkeypatch):
    from chatgate.engines import base

    monkeypatch.setattr(base, "AUTO_SAMPLE_ROWS", 100)
    # The first 100 rows repeat three values; the rest are all distinct.
    values = [OK, "[]", text([m("user"), m("user")])] * 40 + [
        text([m("user", f"q{i}"), m("assistant")]) for i in range(180)
    ]
    judged = judge(table_of(values), chunk_size=16)
    # The stream's first 7 batches of 16 decide: 3 values in 112 rows.
    assert judged.deduplicated and judged.extra["repeats_estimate"] == round(1 - 3 / 112, 4)
    assert reasons_by_id(judged) == [first_problem(v) for v in values]
    # Read in the other order, the first rows are distinct: no dedup.
    judged = judge(table_of(values[::-1]), chunk_size=16)
    assert not judged.deduplicated and judged.extra["repeats_estimate"] == 0.0
    assert reasons_by_id(judged) == [first_problem(v) for v in values[::-1]]


def test_auto_on_a_table_shorter_than_the_sample_checks_it_once():
    values = [OK, "[]", text([m("user"), m("user")])] * 100
    judged = judge(table_of(values), chunk_size=16)
    # Checked whole before the sample filled: no second pass to deduplicate.
    assert not judged.deduplicated and judged.extra["repeats_estimate"] == 0.99
    assert reasons_by_id(judged) == [first_problem(v) for v in values]


def test_failing_keys_are_compacted_without_dedup(monkeypatch):
    monkeypatch.setattr(ibis_stream, "COMPACT_FAILING_ROWS", 5)
    values = ["[]", text([m("user"), m("user")]), OK] * 40
    judged = judge(table_of(values), dedup="off", chunk_size=8)
    assert_matches_reference(judged, values, ChatFormat())


def test_batches_are_bounded_by_chunk_size(monkeypatch):
    batches = spy_on_check(monkeypatch)
    values = _mixed_values(100)
    judge(table_of(values), dedup="off", chunk_size=16)
    sizes = [batch.num_rows for batch in batches]
    assert all(batch.schema.names == ["chat"] for batch in batches)
    assert sum(sizes) == sum(v is not None for v in values) and max(sizes) <= 16


# -- the reference, on drawn data -----------------------------------------------------------


_CON = []


def _shared_con():
    if not _CON:
        _CON.append(ibis.duckdb.connect())
    return _CON[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_size=10), st.sampled_from(["on", "off"]), st.sampled_from(["hash", "value"]))
def test_drawn_batches_match_the_reference(case, dedup, join_on):
    values = [json_text(v, raw) for v, raw in zip(case.values, case.raw)]
    fmt = ChatFormat(**case.kwargs)
    judged = judge(table_of(values, con=_shared_con()), fmt, dedup=dedup, join_on=join_on)
    assert_matches_reference(judged, values, fmt)


# -- keys: a collision must never mislabel a row --------------------------------------------


def test_key_collisions_never_mislabel(monkeypatch):
    # Only the length is left in the key: every value below has the same key.
    monkeypatch.setattr(
        ibis_plan, "_keys", lambda v, length: ((length(v) * 0).cast("int64"), length(v).cast("int64"))
    )
    values = [
        '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]',  # passes
        '[{"role": "user", "content": "a"}, {"role": "user",      "content": "b"}]',  # not_alternating
        '[{"role": "user", "content": "a"}, {"role": "bot",       "content": "b"}]',  # unknown_role
        '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "" }]',  # empty_content
    ]
    assert len({len(v) for v in values}) == 1
    for dedup in ("on", "off"):
        judged = judge(table_of(values * 2), dedup=dedup, join_on="hash")
        assert_matches_reference(judged, values * 2, ChatFormat())
        assert judged.extra["key_collisions"] == 2


def test_a_real_duckdb_hash_collision():
    # DuckDB's hash() gives these two (same length) the same value on DuckDB 1.5.
    pair = [text([m("user", f"q{i}"), m("assistant", f"a{i}")]) for i in (3, 7)]
    table = table_of([pair[0], pair[1], pair[0], OK])
    keys = table.select(h=table.chat.hash(), n=table.chat.length()).to_pyarrow().to_pylist()
    if keys[0] != keys[1]:
        pytest.skip("this DuckDB's hash() doesn't collide on the pair")
    fmt = ChatFormat(last_role="user")
    for dedup in ("on", "off"):
        judged = judge(table, fmt, dedup=dedup, join_on="hash")
        assert reasons_by_id(judged) == ["last_role", "last_role", "last_role", "last_role"]
        assert judged.extra["key_collisions"] == 1


def test_passing_value_sharing_a_failing_key_passes(monkeypatch):
    monkeypatch.setattr(
        ibis_plan, "_keys", lambda v, length: ((length(v) * 0).cast("int64"), length(v).cast("int64"))
    )
    values = ['[{"role": "user", "content": "b"}]', '[{"role": "bot",  "content": "b"}]']
    assert len(values[0]) == len(values[1])
    judged = judge(table_of(values), join_on="hash")
    assert reasons_by_id(judged) == [None, "unknown_role"]
    assert judged.extra["key_collisions"] == 0


# -- row checks: several columns judged together ---------------------------------------------


def rows_table(rows: list[dict], types: dict[str, pa.DataType], con=None) -> ibis.Table:
    """A DuckDB table with an `id` column (row order) and the columns of `types`."""
    con = con or _shared_con()
    data = {"id": pa.array(range(len(rows)), pa.int64())}
    for name, type_ in types.items():
        data[name] = pa.array([row[name] for row in rows], type_)
    name = f"r_{uuid.uuid4().hex[:8]}"
    con.con.register(name, pa.table(data))
    return con.table(name)


def by_count_then_first_row(counts: dict[str, int], first_seen: dict[str, int]) -> list[str]:
    """The order of a note's reasons, written here rather than taken from the engine."""
    return sorted(counts, key=lambda code: (-counts[code], first_seen[code]))


def judge_rows(table, check: RowCheck, dedup="auto", join_on="auto", **engine) -> Judged:
    return IbisEngine(join_on=join_on, progress=False, **engine).judge_check(
        table, check, dedup=dedup
    )


def assert_check_matches_reference(judged: Judged, check: RowCheck, rows: list[dict]) -> list:
    """Row `id` is `rows[id]`: its code is `check.check_row(rows[id])`, counts and order follow."""
    expected = [check.check_row(row) for row in rows]
    assert reasons_by_id(judged) == expected
    assert judged.units == len(rows)
    assert judged.failed == sum(code is not None for code in expected)
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for row, code in enumerate(expected):
        if code is not None:
            counts[code] = counts.get(code, 0) + 1
            first_seen.setdefault(code, row)
    assert judged.reasons == counts
    assert list(judged.reasons) == by_count_then_first_row(counts, first_seen)
    return expected


def assert_modes_agree(table, check: RowCheck, rows: list[dict], joins=("hash", "value")) -> dict:
    """Every dedup mode and join agrees with the reference; returns the judgements by mode."""
    results, judgements = {}, {}
    for dedup in ("on", "off", "auto"):
        for join_on in joins:
            judged = judge_rows(table, check, dedup=dedup, join_on=join_on, chunk_size=16)
            assert judged.extra["join_on"] == join_on
            if dedup != "auto":
                assert judged.deduplicated is (dedup == "on")
            expected = assert_check_matches_reference(judged, check, rows)
            judgements[dedup, join_on] = judged
            results[dedup, join_on] = (
                judged.units,
                judged.failed,
                list(judged.reasons.items()),
                reasons_by_id(judged),
            )
    assert len(set(map(repr, results.values()))) == 1
    # A tuple whose every column is null is missing: not a distinct value.
    columns = list(dict.fromkeys(check.columns))
    distinct = {
        tuple(repr(row[c]) for c in columns)
        for row in rows
        if any(row[c] is not None for c in columns)
    }
    for join_on in joins:
        assert judgements["on", join_on].distinct_values == len(distinct)
        assert judgements["off", join_on].distinct_values is None
        assert judgements["off", join_on].extra["checked"] == len(rows)
    # A wide enough variety of verdicts to mean something.
    assert None in expected and len(set(expected)) >= 3
    return judgements


def pick(pool: list, i: int, step: int) -> object:
    return pool[(i * step + i // len(pool)) % len(pool)]


def repeated(rows: list[dict]) -> list[dict]:
    """`rows` plus copies of some of them, further down: duplicates for dedup to find."""
    return rows + rows[::3] + rows[:5]


def u(content="Q"):
    return m("user", content)


def a(content="A"):
    return m("assistant", content)


PREFERENCE_PROMPTS = [
    text([u("What colour is the sky?")]),
    text([m("system", "Be brief."), u("Hi")]),
    text([u("Q"), a("A"), u("Q2")]),
    text({"messages": [u("Wrapped?")]}),
    text([u("Q"), a("A")]),  # prompt_end
    None,
    "The sky is",  # standard text among conversations: mixed_format
    text([u("")]),  # empty_content
]
PREFERENCE_ANSWERS = [
    text([a("Blue.")]),
    text([a("Grey.")]),
    text({"messages": [a("Blue.")]}),
    text([a("Black, at night.")]),
    text([a("Hello!")]),
    text([u("No.")]),  # completion_role
    None,
    "[]",
    text([a("")]),  # empty_content
]


def preference_rows(n: int = 90) -> list[dict]:
    rows = [
        {
            "prompt": pick(PREFERENCE_PROMPTS, i, 1),
            "chosen": pick(PREFERENCE_ANSWERS, i, 3),
            "rejected": pick(PREFERENCE_ANSWERS, i, 5),
        }
        for i in range(n)
    ]
    return repeated(rows)


TEXTS3 = {"prompt": pa.string(), "chosen": pa.string(), "rejected": pa.string()}


def test_preference_rows_match_the_reference():
    rows = preference_rows()
    check = DatasetCheck("preference")
    judgements = assert_modes_agree(rows_table(rows, TEXTS3), check, rows)
    codes = set(judgements["on", "hash"].reasons)
    assert {"not_messages", "mixed_format", "completion_role", "same_pair"} <= codes
    # A null in one column is the check's business: with na_pass it passes.
    lenient = DatasetCheck("preference", ChatFormat(na_pass=True))
    judged = judge_rows(rows_table(rows, TEXTS3), lenient, dedup="on")
    expected = assert_check_matches_reference(judged, lenient, rows)
    nulls = [i for i, row in enumerate(rows) if row["prompt"] is None and row["chosen"] is None]
    assert nulls and any(expected[i] is None for i in nulls)


def test_preference_batches_hold_exactly_the_check_columns(monkeypatch):
    rows = [{"note": f"n{i}", **row} for i, row in enumerate(preference_rows())]
    table = rows_table(rows, {"note": pa.string(), **TEXTS3})
    check = DatasetCheck("preference")
    for dedup in ("on", "off"):
        batches = spy_on_check(monkeypatch, DatasetCheck)
        judged = judge_rows(table, check, dedup=dedup, chunk_size=16)
        assert all(batch.schema.names == ["prompt", "chosen", "rejected"] for batch in batches)
        assert max(batch.num_rows for batch in batches) <= 16
        # Nulls travel: every tuple is checked, the null ones included.
        assert sum(batch.num_rows for batch in batches) == judged.extra["checked"]
        assert any(batch.column("prompt").null_count for batch in batches)
        assert judged.extra["nulls"] == 0
        monkeypatch.undo()
    rows_back = judged.annotated.order_by("id").to_pyarrow()
    assert rows_back.column_names == ["id", "note", "prompt", "chosen", "rejected", "pb_reason_"]


PROMPT_TEXTS = [
    "The sky is",
    "2 + 2 =",
    "",  # empty_text
    None,
    text([u("Hi")]),
    text([u("Hi"), a("Hello")]),  # prompt_end
    " \n",
]
COMPLETION_TEXTS = [
    " blue.",
    " 4",
    None,
    text([a("Hello")]),
    text([u("Hello")]),  # completion_role
    "[not json",
    "   ",
]


def test_prompt_completion_rows_match_the_reference():
    rows = repeated(
        [
            {"prompt": pick(PROMPT_TEXTS, i, 1), "completion": pick(COMPLETION_TEXTS, i, 3)}
            for i in range(80)
        ]
    )
    types = {"prompt": pa.string(), "completion": pa.string()}
    for check in (
        DatasetCheck("prompt_completion"),
        DatasetCheck("prompt_completion", format="standard"),
        DatasetCheck("prompt_completion", format="conversational"),
    ):
        assert_modes_agree(rows_table(rows, types), check, rows)


def test_renamed_columns_reach_the_check_under_their_own_names(monkeypatch):
    rows = repeated(
        [
            {"question": pick(PROMPT_TEXTS, i, 1), "answer": pick(COMPLETION_TEXTS, i, 2)}
            for i in range(40)
        ]
    )
    table = rows_table(rows, {"question": pa.string(), "answer": pa.string()})
    check = DatasetCheck(
        "prompt_completion", names=(("prompt", "question"), ("completion", "answer"))
    )
    batches = spy_on_check(monkeypatch, DatasetCheck)
    judged = judge_rows(table, check)
    assert {tuple(batch.schema.names) for batch in batches} == {("question", "answer")}
    assert_check_matches_reference(judged, check, rows)


WEATHER = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
TOOLS_FORMAT = ChatFormat(tools=True)
TOOL_CHATS = [
    OK,
    text([u("Weather?"), {"role": "assistant", "content": "", "tool_calls": [WEATHER]}]),
    text(
        [
            u("Weather?"),
            {"role": "assistant", "content": "", "tool_calls": [WEATHER]},
            {"role": "tool", "content": "Sunny"},
            a("Sunny."),
        ]
    ),
    None,
    text([u("x"), {"role": "assistant", "content": "", "tool_calls": [{"function": 3}]}]),
    "[]",
]
TOOL_SCHEMAS = [
    text([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]),
    None,  # declares nothing: passes unless a function is called
    text([{"name": "search", "parameters": {}}]),  # unknown_tool for a weather call
    '{"name": "get_weather"}',  # not a list: bad_tools
    "not json",  # bad_tools
]


def tool_rows(n: int = 80) -> list[dict]:
    return repeated(
        [{"chat": pick(TOOL_CHATS, i, 1), "tools": pick(TOOL_SCHEMAS, i, 2)} for i in range(n)]
    )


def test_chat_with_tools_column_matches_the_reference():
    rows = tool_rows()
    check = ChatCheck("chat", TOOLS_FORMAT, tools_column="tools")
    table = rows_table(rows, {"chat": pa.string(), "tools": pa.string()})
    judgements = assert_modes_agree(table, check, rows)
    assert {"unknown_tool", "bad_tools", "not_messages"} <= set(judgements["on", "hash"].reasons)
    expected = [check.check_row(row) for row in rows]
    passing_null_tools = [
        i for i, row in enumerate(rows) if row["tools"] is None and expected[i] is None
    ]
    assert passing_null_tools  # a null tools value isn't a failure by itself


def test_chat_with_a_json_typed_tools_column():
    rows = [row for row in tool_rows(40) if row["tools"] != "not json"]
    con = ibis.duckdb.connect()
    table = rows_table(rows, {"chat": pa.string(), "tools": pa.string()}, con=con)
    table = table.mutate(tools=table.tools.cast("json"))
    assert table.schema()["tools"].is_json()
    # The check reads JSON as its text, as DuckDB writes it back.
    back = table.select("id", tools=table.tools.cast("string")).order_by("id").to_pyarrow()
    rows = [{**row, "tools": t} for row, t in zip(rows, back.column("tools").to_pylist())]
    check = ChatCheck("chat", TOOLS_FORMAT, tools_column="tools")
    for dedup in ("on", "off"):
        judged = judge_rows(table, check, dedup=dedup)
        assert judged.extra["join_on"] == "hash"
        assert_check_matches_reference(judged, check, rows)


def test_chat_with_a_native_images_column_joins_on_the_values():
    image = {"type": "image"}
    chats = [
        text([m("user", [image, {"type": "text", "text": "What is it?"}]), a("A cat.")]),
        text([m("user", [image, image]), a("Two.")]),
        OK,
        None,
    ]
    images = [["cat.png"], ["a.png", "b.png"], [], None, ["a.png", None]]
    rows = repeated([{"chat": pick(chats, i, 1), "images": pick(images, i, 2)} for i in range(40)])
    table = rows_table(rows, {"chat": pa.string(), "images": pa.list_(pa.string())})
    check = ChatCheck("chat", images_column="images")
    with pytest.raises(ValueError, match="join_on='hash'"):
        judge_rows(table, check, join_on="hash")
    judgements = {}
    for dedup in ("on", "off"):
        judged = judgements[dedup] = judge_rows(table, check, dedup=dedup, chunk_size=16)
        assert judged.extra["join_on"] == "value"
        expected = assert_check_matches_reference(judged, check, rows)
    assert "image_count" in set(expected) and None in expected
    assert reasons_by_id(judgements["on"]) == reasons_by_id(judgements["off"])


@pytest.mark.parametrize("na_pass", [False, True])
def test_label_check_matches_the_reference(na_pass):
    check = LabelCheck("label", na_pass=na_pass)
    labels = repeated([{"label": [True, False, None][i % 3]} for i in range(30)])
    table = rows_table(labels, {"label": pa.bool_()})
    for dedup in ("on", "off", "auto"):
        judged = judge_rows(table, check, dedup=dedup)
        assert judged.extra["join_on"] == "value"  # no text to digest: the values join
        assert_check_matches_reference(judged, check, labels)
        assert judged.failed == (0 if na_pass else sum(row["label"] is None for row in labels))
    with pytest.raises(ValueError, match="join_on='hash'"):
        judge_rows(table, check, join_on="hash")
    # Text labels aren't labels; a text column joins on its hash.
    texts = repeated([{"label": ["true", None, "False", ""][i % 4]} for i in range(20)])
    for dedup in ("on", "off"):
        judged = judge_rows(rows_table(texts, {"label": pa.string()}), check, dedup=dedup)
        assert judged.extra["join_on"] == "hash"
        assert_check_matches_reference(judged, check, texts)


def test_unpaired_preference_digests_a_boolean_label():
    rows = repeated(
        [
            {
                "prompt": pick(PROMPT_TEXTS, i, 1),
                "completion": pick(COMPLETION_TEXTS, i, 2),
                "label": [True, False, None][i % 3],
            }
            for i in range(60)
        ]
    )
    types = {"prompt": pa.string(), "completion": pa.string(), "label": pa.bool_()}
    judgements = assert_modes_agree(
        rows_table(rows, types), DatasetCheck("unpaired_preference"), rows
    )
    assert "not_label" in judgements["on", "hash"].reasons


@dataclass(frozen=True)
class ShorterThan(RowCheck):
    """A check of a text and an integer column: the text has at most `limit` characters."""

    text_column: str = "chat"
    limit_column: str = "limit"

    @property
    def columns(self):
        return (self.text_column, self.limit_column)

    @property
    def codes(self):
        return ("too_long",)

    def describe(self):
        return f"{self.text_column} is at most {self.limit_column} characters"

    def as_dict(self):
        return {"check": "shorter_than"}

    def check_row(self, row):
        value, limit = row.get(self.text_column), row.get(self.limit_column)
        if value is None or limit is None:  # nothing to compare: the row passes
            return None
        return "too_long" if len(value) > limit else None


def test_any_row_check_with_an_integer_column():
    rows = repeated(
        [
            {"chat": ["abc", "", None, "abcdef", "é" * 4][i % 5], "limit": [3, -1, None, 5][i % 4]}
            for i in range(40)
        ]
    )
    table = rows_table(rows, {"chat": pa.string(), "limit": pa.int64()})
    for dedup in ("on", "off"):
        for join_on in ("hash", "value"):
            judged = judge_rows(table, ShorterThan(), dedup=dedup, join_on=join_on)
            expected = assert_check_matches_reference(judged, ShorterThan(), rows)
    assert set(expected) == {None, "too_long"}


def test_tuple_key_collisions_never_mislabel(monkeypatch):
    # Every tuple has the same key: the SHA-256 of the tuple alone tells them apart.
    monkeypatch.setattr(
        ibis_plan,
        "_tuple_keys",
        lambda values, length: (ibis.literal(0, "int64"), ibis.literal(0, "int64")),
    )
    rows = preference_rows(60)
    check = DatasetCheck("preference")
    table = rows_table(rows, TEXTS3)
    for dedup in ("on", "off"):
        judged = judge_rows(table, check, dedup=dedup, join_on="hash", chunk_size=16)
        expected = assert_check_matches_reference(judged, check, rows)
        failing = {tuple(map(repr, row.values())) for row, c in zip(rows, expected) if c}
        assert judged.extra["key_collisions"] == len(failing) - 1 > 10


def test_tuple_digests_agree_between_python_and_the_backend():
    rows = [
        {"t": "é,~", "b": True, "n": -12},
        {"t": None, "b": None, "n": None},
        {"t": "", "b": False, "n": 0},
        {"t": "~", "b": None, "n": 2**62},
    ]
    types = {"t": pa.string(), "b": pa.bool_(), "n": pa.int64()}
    table = rows_table(rows, types)
    kinds = ("text", "bool", "int")
    values = [table[c] for c in types]
    on_backend = (
        table.select("id", d=ibis_engine._tuple_digest(values, kinds))
        .order_by("id")
        .to_pyarrow()
        .column("d")
        .to_pylist()
    )
    arrays = [pa.array([row[c] for row in rows], types[c]) for c in types]
    in_python = tuple_sha256(arrays, kinds).to_pylist()
    assert on_backend == in_python and len(set(in_python)) == len(rows)


def test_row_check_arguments():
    table = rows_table([{"prompt": "a", "completion": "b"}], {"prompt": pa.string()})
    engine = IbisEngine()
    with pytest.raises(KeyError, match="'completion'"):
        engine.judge_check(table, DatasetCheck("prompt_completion"))
    with pytest.raises(TypeError, match="RowCheck"):
        engine.judge_check(table, "prompt")
    with pytest.raises(ValueError, match="dedup="):
        engine.judge_check(table, LabelCheck("prompt"), dedup="maybe")
    with pytest.raises(ValueError, match="already has a column 'prompt'"):
        engine.judge_check(table, LabelCheck("prompt"), reason_column="prompt")


def test_judge_is_judge_check_of_a_chat_check():
    values = _mixed_values(60)
    table = table_of(values)
    for dedup in ("on", "off"):
        by_column = judge(table, dedup=dedup)
        by_check = judge_rows(table, ChatCheck("chat"), dedup=dedup)
        assert reasons_by_id(by_column) == reasons_by_id(by_check)
        assert (by_column.reasons, by_column.extra["nulls"]) == (
            by_check.reasons,
            by_check.extra["nulls"],
        )


def test_sunder_with_row_checks():
    rows = tool_rows(30)
    table = rows_table(rows, {"chat": pa.string(), "tools": pa.string()})
    checks = [ChatCheck("chat", TOOLS_FORMAT, tools_column="tools"), LabelCheck("chat", True)]
    engine = IbisEngine()
    expected_pass = [
        i for i, row in enumerate(rows) if all(c.check_row(row) is None for c in checks)
    ]
    passed = engine.sunder(table, [(c, "auto") for c in checks], "pass")
    failed = engine.sunder(table, [(c, "off") for c in checks], "fail")
    assert sorted(passed.to_pyarrow().column("id").to_pylist()) == expected_pass
    assert engine.row_count(failed) == len(rows) - len(expected_pass)


def test_progress_bar_names_the_columns(monkeypatch, capsys):
    monkeypatch.setenv("CHATGATE_PROGRESS", "1")
    rows = preference_rows(200)
    IbisEngine(chunk_size=10).judge_check(
        rows_table(rows, TEXTS3), DatasetCheck("preference"), dedup="off"
    )
    assert "checking prompt, chosen, rejected" in capsys.readouterr().err


# -- column types ---------------------------------------------------------------------------


def _native_table(values):
    con = ibis.duckdb.connect()
    messages = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    name = f"n_{uuid.uuid4().hex[:8]}"
    con.con.register(
        name,
        pa.table(
            {"id": pa.array(range(len(values)), pa.int64()), "chat": pa.array(values, messages)}
        ),
    )
    return con.table(name)


NATIVE = [
    [m("user", "Hi"), m("assistant", "Hello")],
    [],
    None,
    [m("user", None), m("assistant")],
    [m("user"), m("bot")],
    [m(None), m("assistant")],
    [m("user"), m("user")],
    [m("user", "Hi"), m("assistant", "Hello")],
    [m("system"), m("user", " "), m("assistant")],
]


@pytest.mark.parametrize("dedup", ["on", "off"])
def test_native_list_of_struct_on_duckdb(dedup):
    table = _native_table(NATIVE)
    assert table.schema()["chat"].is_array()
    judged = judge(table, dedup=dedup)
    assert_matches_reference(judged, NATIVE, ChatFormat())
    assert judged.extra["join_on"] == "value"


def test_native_column_on_a_backend_that_cant_hand_it_over(monkeypatch):
    monkeypatch.setattr(ibis_plan, "NATIVE_BACKENDS", frozenset())
    with pytest.raises(
        TypeError, match=r"column 'chat' is array<struct<role: string, content: string>>"
    ):
        judge(_native_table(NATIVE))


def test_a_column_that_cant_hold_conversations():
    """An integer column is judged like any other: each value is not_messages (as on every engine)."""
    table = table_of([OK, OK, OK], n=pa.array([1, None, 1], pa.int64()))
    judged = IbisEngine().judge(table, "n", ChatFormat())
    assert (judged.units, judged.failed, judged.reasons) == (3, 3, {"not_messages": 3})
    assert judged.extra["join_on"] == "value"


@pytest.mark.parametrize("check", [ChatCheck("x", ChatFormat()), LabelCheck("x")], ids=["chat", "tuple"])
def test_a_float_column_joins_its_nan_back(check):
    """DuckDB's hash join matches a NaN with a NaN only now and then: floats join on a NaN flag."""
    values = pa.array([1.5, None, float("nan"), 1.5, 0.0, -0.0], pa.float64())
    for _ in range(8):  # the join used to miss the NaN row in about a third of the runs
        for dedup in ("on", "off"):
            judged = IbisEngine().judge_check(ibis.memtable({"id": range(6), "x": values}), check, dedup=dedup)
            assert judged.extra["join_on"] == "value"
            assert reasons_by_id(judged) == [check.check_row({"x": v}) for v in values.to_pylist()]


def test_json_typed_column():
    con = ibis.duckdb.connect()
    con.con.execute(
        f"CREATE TABLE j AS SELECT * FROM (VALUES (0, '[]'::JSON), (1, NULL::JSON), (2, '{OK}'::JSON)) t(id, chat)"
    )
    table = con.table("j")
    assert table.schema()["chat"].is_json()
    judged = judge(table)
    assert reasons_by_id(judged) == ["no_messages", "not_messages", None]
    assert judged.extra["join_on"] == "hash"


def test_binary_column_joins_on_the_value():
    values = [OK.encode(), b"[]", b"\xff\xfe", None]
    con = ibis.duckdb.connect()
    con.con.register("b", pa.table({"id": [0, 1, 2, 3], "chat": pa.array(values, pa.binary())}))
    judged = judge(con.table("b"))
    assert reasons_by_id(judged) == [None, "no_messages", "not_messages", "not_messages"]
    assert judged.extra["join_on"] == "value"
    with pytest.raises(ValueError, match="join_on='hash'"):
        judge(con.table("b"), join_on="hash")


def test_pandas_memtable_and_extra_columns_carried_untouched():
    frame = pd.DataFrame(
        {
            "id": [0, 1, 2],
            "chat": [OK, "[]", None],
            "score": [0.5, 1.5, None],
            "tag": ["a", "b", "c"],
        }
    )
    judged = judge(ibis.memtable(frame))
    rows = judged.annotated.order_by("id").to_pyarrow()
    assert rows.column_names == ["id", "chat", "score", "tag", "pb_reason_"]
    assert rows.column("tag").to_pylist() == ["a", "b", "c"]
    assert rows.column("pb_reason_").to_pylist() == [None, "no_messages", "not_messages"]


# -- arguments ------------------------------------------------------------------------------


def test_bad_arguments():
    table = table_of([OK])
    engine = IbisEngine()
    with pytest.raises(KeyError, match="'nope'"):
        engine.judge(table, "nope", ChatFormat())
    with pytest.raises(ValueError, match="dedup="):
        engine.judge(table, "chat", ChatFormat(), dedup="maybe")
    with pytest.raises(ValueError, match="already has a column 'id'"):
        engine.judge(table, "chat", ChatFormat(), reason_column="id")
    with pytest.raises(TypeError, match="ChatFormat"):
        engine.judge(table, "chat", {"roles": ["user"]})
    with pytest.raises(TypeError, match="Ibis tables"):
        engine.judge(pd.DataFrame({"chat": [OK]}), "chat", ChatFormat())
    with pytest.raises(ValueError, match="chunk_size"):
        IbisEngine(chunk_size=0)
    computed = FailingColumns(("chat", "pb_reason_", "nope"), pa.schema([("n", pa.int64())]), len)
    with pytest.raises(KeyError, match="column 'nope' isn't in the table"):
        engine.judge_check(table, ChatCheck("chat", ChatFormat()), failing_columns=computed)
    with pytest.raises(ValueError, match="join_on"):
        IbisEngine(join_on="sha")


def test_custom_reason_column():
    judged = IbisEngine().judge(table_of(["[]"]), "chat", ChatFormat(), reason_column="why")
    assert judged.reason_column == "why"
    assert judged.annotated.to_pyarrow().column("why").to_pylist() == ["no_messages"]


# -- the rest of the Engine interface -------------------------------------------------------


def test_engine_interface():
    engine = IbisEngine()
    table = table_of([OK, "[]", None, OK], seg=pa.array(["b", None, "a", "b"]))
    assert engine.accepts(table) and not engine.accepts(pd.DataFrame())
    assert engine.columns(table) == ["id", "chat", "seg"]
    assert engine.row_count(table) == 4
    assert engine.segment_values(table, "seg") == ["a", "b", None]
    assert engine.row_count(engine.filter_equal(table, "seg", "b")) == 2
    assert engine.filter_equal(table, "seg", None).to_pyarrow().column("id").to_pylist() == [1]

    judged = engine.judge(table, "chat", ChatFormat())
    failing = engine.failing_rows(judged).order_by("id").to_pyarrow()
    assert failing.column("id").to_pylist() == [1, 2]
    passing = engine.passing_rows(judged).order_by("id").to_pyarrow()
    assert passing.column_names == ["id", "chat", "seg"] and passing.column("id").to_pylist() == [
        0,
        3,
    ]
    assert engine.row_count(engine.extract(judged)) == 2

    preview = engine.preview(table, 2)
    assert isinstance(preview, pa.Table) and preview.num_rows == 2
    assert engine.columns(engine.drop_columns(table, ["seg"])) == ["id", "chat"]
    both = engine.concat([engine.failing_rows(judged), engine.failing_rows(judged)])
    assert engine.row_count(both) == 4

    passed = engine.sunder(table, [(ChatCheck("chat", ChatFormat()), "auto")], "pass")
    assert sorted(passed.to_pyarrow().column("id").to_pylist()) == [0, 3]
    failed = engine.sunder(table, [(ChatCheck("chat", ChatFormat()), "auto")], "fail")
    assert engine.columns(failed) == ["id", "chat", "seg"] and engine.row_count(failed) == 2


def test_annotated_is_lazy_and_reusable():
    judged = judge(table_of([OK, "[]"] * 3))
    assert isinstance(judged.annotated, ibis.Table)
    first = reasons_by_id(judged)
    assert reasons_by_id(judged) == first == [None, "no_messages"] * 3


# -- progress -------------------------------------------------------------------------------


@pytest.mark.parametrize(("setting", "shown"), [("1", True), ("0", False), (None, False)])
def test_progress_bar(setting, shown, monkeypatch, capsys):
    if setting is None:
        monkeypatch.delenv("CHATGATE_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("CHATGATE_PROGRESS", setting)
    table = table_of(_mixed_values(200))
    IbisEngine(chunk_size=10).judge(table, "chat", ChatFormat(), dedup="off")  # 20 batches
    assert ("checking chat" in capsys.readouterr().err) is shown


def test_no_progress_bar_for_few_batches(monkeypatch, capsys):
    monkeypatch.setenv("CHATGATE_PROGRESS", "1")
    IbisEngine(chunk_size=10).judge(table_of(_mixed_values(50)), "chat", ChatFormat(), dedup="off")
    assert "checking chat" not in capsys.readouterr().err


# -- Delta and Parquet ----------------------------------------------------------------------


@pytest.fixture
def chats() -> pa.Table:
    values = _mixed_values(60)
    return pa.table({"id": pa.array(range(60), pa.int64()), "chat": pa.array(values, pa.string())})


def test_delta_table(tmp_path, chats):
    path = tmp_path / "chats"
    deltalake.write_deltalake(path, chats.slice(0, 40))
    deltalake.write_deltalake(path, chats.slice(40), mode="append")
    assert is_delta(path) and delta_version(path) == 1

    con = ibis.duckdb.connect()
    table = open_table(str(path), con)
    assert IbisEngine().row_count(table) == 60
    # A Delta table has no row order: ties go by the order deltalake lists the files in.
    scan_order = table.select("id").to_pyarrow().column("id").to_pylist()
    assert sorted(scan_order) == list(range(60))
    for dedup in ("on", "off"):
        judged = judge(table, dedup=dedup)
        assert_matches_reference(judged, chats.column("chat").to_pylist(), ChatFormat(), scan_order)

    older = open_table(path, con, version=0)
    assert IbisEngine().row_count(older) == 40
    # Filters reach the scan: the table is a deltalake dataset, not a copy.
    assert open_table(path, con).filter(ibis._.id >= 55).count().execute() == 5


def test_parquet_file_and_directory(tmp_path, chats):
    pq.write_table(chats, tmp_path / "one.parquet")
    folder = tmp_path / "many" / "part=1"
    folder.mkdir(parents=True)
    pq.write_table(chats.slice(0, 30), folder / "a.parquet")
    pq.write_table(chats.slice(30), tmp_path / "many" / "b.parquet")
    con = ibis.duckdb.connect()
    for source in (tmp_path / "one.parquet", tmp_path / "many"):
        table = open_table(str(source), con)
        assert delta_version(source) is None
        scan_order = table.select("id").to_pyarrow().column("id").to_pylist()
        judged = judge(table)
        assert_matches_reference(judged, chats.column("chat").to_pylist(), ChatFormat(), scan_order)


def test_sources_that_arent_tables(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        open_table(str(missing))
    assert delta_version(missing) is None
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"notes\.csv.*neither a Delta table nor a Parquet file"):
        open_table(str(tmp_path / "notes.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"empty.*_delta_log"):
        open_table(str(tmp_path / "empty"))
    pq.write_table(pa.table({"a": [1]}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="version=1 needs a Delta table"):
        open_table(str(tmp_path / "x.parquet"), version=1)


def test_bad_delta_version(tmp_path, chats):
    deltalake.write_deltalake(tmp_path / "d", chats)
    with pytest.raises(ValueError, match="can't open the Delta table"):
        open_table(tmp_path / "d", ibis.duckdb.connect(), version=7)


def test_record_batches_streams_any_table(tmp_path, chats):
    deltalake.write_deltalake(tmp_path / "d", chats)
    for table in (open_table(tmp_path / "d", ibis.duckdb.connect()), ibis.memtable(chats)):
        reader = record_batches(table.filter(table.id < 50), chunk_size=16)
        sizes = [len(batch) for batch in reader]
        assert sum(sizes) == 50 and max(sizes) <= 16


def test_default_connection_is_shared(tmp_path, chats):
    assert default_connection() is default_connection()
    deltalake.write_deltalake(tmp_path / "d", chats)
    table = open_table(tmp_path / "d")
    assert table.get_backend() is default_connection()


# -- bounded memory -------------------------------------------------------------------------


def test_memory_stays_bounded_on_a_table_larger_than_a_batch(tmp_path, monkeypatch):
    rows = 120_000  # 12 batches
    filler = "lorem ipsum " * 136  # about 1.7 KB per conversation: 200 MB of JSON text
    values = [
        f'[{{"role": "user", "content": "q{i} {filler}"}}, '
        f'{{"role": "{"user" if i % 50 == 0 else "assistant"}", "content": "a{i}"}}]'
        for i in range(rows)
    ]
    chats = pa.table(
        {"id": pa.array(range(rows), pa.int64()), "chat": pa.array(values, pa.string())}
    )
    text_bytes = chats.column("chat").nbytes
    del values
    deltalake.write_deltalake(tmp_path / "big", chats)
    del chats

    shapes = spy_on_check(monkeypatch, keep=lambda batch: (batch.schema.names, batch.num_rows))
    engine = IbisEngine(progress=False)
    table = open_table(tmp_path / "big", ibis.duckdb.connect())
    assert engine.row_count(table) == rows  # imports and first-query setup happen before measuring

    tracemalloc.start()
    try:
        judged = engine.judge(table, "chat", ChatFormat(), dedup="auto")
        quarantined = engine.row_count(engine.failing_rows(judged))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert (judged.units, judged.failed, quarantined) == (rows, rows // 50, rows // 50)
    assert judged.reasons == {"not_alternating": rows // 50}
    assert text_bytes > 190 * 2**20
    assert peak < text_bytes / 40, (
        f"peak {peak / 2**20:.1f} MB for {text_bytes / 2**20:.0f} MB of text"
    )
    sizes = [rows for _, rows in shapes]
    assert all(names == ["chat"] for names, _ in shapes)
    assert len(sizes) >= rows // ibis_engine.CHUNK_SIZE and max(sizes) <= ibis_engine.CHUNK_SIZE
