"""`get_fixed_data` and `turns="all"` through the API, on every kind of table.

One labelled table holds a failing value per repair (and a few that no repair fixes,
one that passes, and repeats): each kind of table, in JSON and native forms, gives the
same fixed rows, and those of `repair_array` on the PyArrow array itself. Then: every
problem of each failing row with `turns="all"` (the same on every kind, verdicts
unchanged), idempotence, each distinct value repaired once, and the errors users see.
"""

from __future__ import annotations

import json
import math

import ibis
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import chatgate as pb
from chatgate import fixes
from chatgate.errors import ChatgateError
from chatgate.rules import ChatFormat, first_reason, repair_array

OPTIONS = {"first_role": "user", "last_role": "assistant"}


def m(role, content):
    return {"role": role, "content": content}


# (label, value, expected value or SAME, repairs applied, code after)
SAME = object()
CASES = [
    ("passes", [m("user", "Hi"), m("assistant", "Hello")], None, None, None),
    ("map_roles", [m("human", "Hi"), m("gpt", "Hello")], [m("user", "Hi"), m("assistant", "Hello")], ["map_roles"], None),
    ("drop_empty", [m("user", "Hi"), m("user", " "), m("assistant", "Yo")], [m("user", "Hi"), m("assistant", "Yo")], ["drop_empty"], None),
    (
        "hoist_system",
        [m("user", "Hi"), m("system", "Be brief."), m("assistant", "Yo")],
        [m("system", "Be brief."), m("user", "Hi"), m("assistant", "Yo")],
        ["hoist_system"],
        None,
    ),
    ("merge_repeats", [m("user", "a"), m("user", "b"), m("assistant", "c")], [m("user", "a\n\nb"), m("assistant", "c")], ["merge_repeats"], None),
    ("drop_leading", [m("assistant", "Hey"), m("user", "Hi"), m("assistant", "Yo")], [m("user", "Hi"), m("assistant", "Yo")], ["drop_leading"], None),
    ("drop_trailing", [m("user", "Hi"), m("assistant", "Yo"), m("user", "Bye")], [m("user", "Hi"), m("assistant", "Yo")], ["drop_trailing"], None),
    (
        "combination",
        [m("human", "a"), m("human", "b"), m("gpt", "c"), m("user", "d")],
        [m("user", "a\n\nb"), m("assistant", "c")],
        ["map_roles", "merge_repeats", "drop_trailing"],
        None,
    ),
    ("still_failing", [m("human", "Hi"), m("robot", "Yo")], [m("user", "Hi"), m("robot", "Yo")], ["map_roles"], "unknown_role"),
    ("no_repair_applies", [], SAME, [], "no_messages"),
    ("map_roles_again", [m("human", "Hi"), m("gpt", "Hello")], [m("user", "Hi"), m("assistant", "Hello")], ["map_roles"], None),
]
JSON_ONLY_CASES = [
    # A double-encoded value (JSON text only: a native column can't hold it) is decoded once, as written.
    ("decode_text", json.dumps(json.dumps([m("user", "Hi"), m("assistant", "Yo")])), json.dumps([m("user", "Hi"), m("assistant", "Yo")]), ["decode_text"], None),
    ("not_json", "not json", SAME, [], "not_messages"),
]


def compact(value) -> str:
    """The JSON text a repair writes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def source(form: str) -> tuple[list[int], list]:
    """The ids and values of the labelled table: JSON text or native lists."""
    cases = CASES + (JSON_ONLY_CASES if form == "json" else [])
    values = [case[1] if isinstance(case[1], str) else (json.dumps(case[1]) if form == "json" else case[1]) for case in cases]
    return list(range(len(cases))), values


def expected(form: str) -> list[dict]:
    """The fixed rows, by id: the failing cases with their repaired value, repairs and code after."""
    ids, values = source(form)
    cases = CASES + (JSON_ONLY_CASES if form == "json" else [])
    rows = []
    for i, value, (_, _, fixed, applied, after) in zip(ids, values, cases):
        if applied is None:  # passes: not among the failing rows
            continue
        if isinstance(fixed, str):
            value = fixed
        elif fixed is not SAME:
            value = compact(fixed) if form == "json" else fixed
        rows.append({"id": i, "messages": value, "pb_fixes_": applied, "pb_reason_": after})
    return rows


def make_table(kind: str, form: str, spark=None):
    ids, values = source(form)
    columns = {"id": ids, "messages": values}
    if kind in ("polars", "pandas"):
        return (pl.DataFrame if kind == "polars" else pd.DataFrame)(columns)
    return ibis.memtable(pa.table(columns)) if kind == "duckdb" else spark.createDataFrame(pa.table(columns))


def plain(value):
    """A cell as plain Python: NaN and pandas' missing values as None, NumPy arrays as lists."""
    if type(value).__name__ == "ndarray":
        return [plain(v) for v in value.tolist()]
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def rows_of(frame) -> list[dict]:
    """The rows of any kind of result, as plain dicts in their own order."""
    if isinstance(frame, pl.DataFrame):
        rows = frame.to_dicts()
    elif isinstance(frame, pd.DataFrame):
        rows = frame.to_dict("records")
    elif hasattr(frame, "to_pyarrow"):
        rows = frame.to_pyarrow().to_pylist()
    else:
        rows = frame.toArrow().to_pylist()
    return [plain(row) for row in rows]


def by_id(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in row.items() if k != "_row_num_"} for row in rows), key=lambda r: r["id"])


def fixed_rows(kind, form, spark=None, **step):
    validation = pb.Validate(make_table(kind, form, spark)).col_vals_chat_format("messages", **OPTIONS, **step)
    return validation.interrogate().get_fixed_data(1, repairs="all")


def pyarrow_rows(form: str) -> list[dict]:
    """`repair_array` on the PyArrow array itself: what every kind must give."""
    ids, values = source(form)
    array = pa.array(values)
    codes = pb.check_batch(array, **OPTIONS).to_pylist()
    fixed, applied, after = repair_array(array, "all", ChatFormat(**OPTIONS))
    return [
        {"id": i, "messages": value, "pb_fixes_": names, "pb_reason_": code}
        for i, value, names, code, before in zip(ids, fixed.to_pylist(), applied.to_pylist(), after.to_pylist(), codes)
        if before is not None
    ]


LOCAL_KINDS = ["polars", "pandas", "duckdb"]
KINDS = [*LOCAL_KINDS, pytest.param("spark", marks=pytest.mark.spark)]
FORMS = ["json", "native"]


@pytest.fixture
def spark_or_none(request, kind):
    """The shared SparkSession for kind="spark" (started only then)."""
    return request.getfixturevalue("spark") if kind == "spark" else None


# --- get_fixed_data: the labelled cases, the same on every kind ----------------------------------


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", KINDS)
def test_each_repair_through_the_api(kind, form, spark_or_none):
    got = fixed_rows(kind, form, spark_or_none)
    assert type(got).__module__.split(".")[0] == type(make_table(kind, form, spark_or_none)).__module__.split(".")[0]
    assert by_id(rows_of(got)) == expected(form) == pyarrow_rows(form)


@pytest.mark.parametrize("form", FORMS)
def test_every_kind_gives_the_same_fixed_rows(form):
    results = {kind: by_id(rows_of(fixed_rows(kind, form))) for kind in LOCAL_KINDS}
    results["pyarrow"] = pyarrow_rows(form)
    assert all(rows == results["pyarrow"] for rows in results.values()), results


@pytest.mark.parametrize("kind", ["polars", "pandas"])
def test_fixed_data_is_the_extract_repaired_in_the_input_kind_and_order(kind):
    validation = pb.Validate(make_table(kind, "json")).col_vals_chat_format("messages", **OPTIONS).interrogate()
    extract = validation.get_data_extracts(1, frame=True)
    fixed = validation.get_fixed_data(1, repairs="safe")
    assert type(fixed) is type(extract)
    assert list(fixed.columns) == ["_row_num_", "id", "messages", "pb_fixes_", "pb_reason_"]
    assert list(fixed["_row_num_"]) == list(extract["_row_num_"]) == sorted(extract["_row_num_"])
    rows = {row["id"]: row for row in rows_of(fixed)}
    # "safe" doesn't drop turns: the row that only drop_trailing fixes still fails, untouched.
    assert rows[6]["pb_fixes_"] == [] and rows[6]["pb_reason_"] == "last_role"
    assert rows[6]["messages"] == json.dumps(CASES[6][1])
    assert validation.n_failed(i=1, scalar=True) == len(extract)  # the step's verdicts stay as they were


def test_ibis_keeps_the_backend_and_the_value_types():
    fixed = fixed_rows("duckdb", "native")
    assert isinstance(fixed, ibis.expr.types.Table)
    schema = fixed.to_pyarrow().schema
    assert schema.field("messages").type == pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    assert schema.field("pb_fixes_").type == pa.list_(pa.string())
    assert schema.names == ["id", "messages", "pb_fixes_", "pb_reason_"]


def test_an_ibis_table_of_another_backend_comes_back_as_an_ibis_table():
    con = ibis.polars.connect()
    ids, values = source("json")
    table = con.create_table("chats", pa.table({"id": ids, "messages": values}))
    validation = pb.Validate(table).col_vals_chat_format("messages", **OPTIONS, turns="all").interrogate()
    fixed = validation.get_fixed_data(1, repairs="all")
    assert isinstance(fixed, ibis.expr.types.Table)
    rows = by_id(rows_of(fixed))
    assert [{k: v for k, v in row.items() if k != "pb_reasons_"} for row in rows] == expected("json")
    assert all(row["pb_reasons_"] == ([] if row["pb_reason_"] is None else row["pb_reasons_"]) for row in rows)


def test_the_step_check_judges_again_with_its_tools_column():
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    ]}
    messages = [m("human", "Weather?"), calls, {"role": "tool", "tool_call_id": "c1", "content": "Sunny"}, m("assistant", "Sunny.")]
    declared = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
    table = pl.DataFrame({"messages": [json.dumps(messages)] * 2, "tools": [json.dumps(declared), "[]"]})
    validation = pb.Validate(table).col_vals_chat_format("messages", tools=True, tools_column="tools").interrogate()
    fixed = validation.get_fixed_data(1, repairs="map_roles")
    # map_roles fixes the role; the function isn't declared in the row's tools: still failing.
    assert fixed["pb_fixes_"].to_list() == [["map_roles"], ["map_roles"]]
    assert fixed["pb_reason_"].to_list() == ["unknown_tool", "unknown_tool"]


def test_a_pandas_column_arrow_cant_hold_is_repaired_value_by_value():
    odd = pd.DataFrame({"messages": ['[{"role": "human", "content": "Hi"}]', 5, {"x": 1}]})
    validation = pb.Validate(odd).col_vals_chat_format("messages", turns="all").interrogate()
    fixed = validation.get_fixed_data(1, repairs="safe")
    assert rows_of(fixed) == [
        {"_row_num_": 1, "messages": '[{"role":"user","content":"Hi"}]', "pb_fixes_": ["map_roles"], "pb_reason_": None, "pb_reasons_": []},
        {"_row_num_": 2, "messages": 5, "pb_fixes_": [], "pb_reason_": "not_messages", "pb_reasons_": [{"code": "not_messages", "message": None}]},
        {"_row_num_": 3, "messages": {"x": 1}, "pb_fixes_": [], "pb_reason_": "not_messages", "pb_reasons_": [{"code": "not_messages", "message": None}]},
    ]


def test_pandas_keeps_its_own_objects_where_no_repair_applies():
    kept = [m("robot", "Hi")]
    table = pd.DataFrame({"messages": [kept, [m("human", "Hi")]]})
    fixed = pb.Validate(table).col_vals_chat_format("messages").interrogate().get_fixed_data(1, repairs="safe")
    assert fixed["messages"][0] is kept
    assert fixed["messages"][1] == [m("user", "Hi")]


def test_a_step_without_failures_gives_no_rows():
    table = pl.DataFrame({"messages": [json.dumps([m("user", "Hi")])]})
    fixed = pb.Validate(table).col_vals_chat_format("messages").interrogate().get_fixed_data(1, repairs="all")
    assert fixed.height == 0 and fixed.columns == ["_row_num_", "messages", "pb_fixes_", "pb_reason_"]


def test_a_step_with_pre_and_segments_fixes_the_rows_it_judged():
    table = pl.DataFrame({"lang": ["en", "fr", "fr"], "messages": [json.dumps([m("human", "Hi")])] * 3})
    validation = (
        pb.Validate(table)
        .col_vals_chat_format("messages", segments="lang", pre=lambda t: t.head(2))
        .interrogate()
    )
    assert [rows_of(validation.get_fixed_data(i, repairs="safe"))[0]["lang"] for i in (1, 2)] == ["en", "fr"]
    assert [len(validation.get_fixed_data(i, repairs="safe")) for i in (1, 2)] == [1, 1]


# --- Idempotence and dedup ------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", KINDS)
def test_fixing_the_fixed_data_changes_nothing(kind, form, spark_or_none):
    first = fixed_rows(kind, form, spark_or_none)
    again_rows = pb.Validate(_without_api_columns(first)).col_vals_chat_format("messages", **OPTIONS).interrogate()
    again = by_id(rows_of(again_rows.get_fixed_data(1, repairs="all")))
    still = [row for row in by_id(rows_of(first)) if row["pb_reason_"] is not None]
    assert again == [{**row, "pb_fixes_": []} for row in still]


def _without_api_columns(frame):
    names = ["_row_num_", "pb_fixes_", "pb_reason_"]
    if isinstance(frame, pl.DataFrame):
        return frame.drop([n for n in names if n in frame.columns])
    if isinstance(frame, pd.DataFrame):
        return frame.drop(columns=[n for n in names if n in frame.columns])
    return frame.drop(*[n for n in names if n in frame.columns])


def repeated_failures(kind: str, monkeypatch) -> tuple[object, list[str], list[str]]:
    """A table of 20,000 rows, half of them failing with one of 3 values (DuckDB's UDF gets them in
    several batches), and the list of the values `repairs_and_codes` is given."""
    repaired: list[str] = []
    real = fixes.repairs_and_codes

    def counting(array, names, fmt, codes=None, **options):
        repaired.extend(array.to_pylist())
        return real(array, names, fmt, codes, **options)

    monkeypatch.setattr(fixes, "repairs_and_codes", counting)
    bad = [json.dumps([m("human", f"Hi {n}")]) for n in range(3)]
    columns = {"id": list(range(20_000)), "messages": [bad[i % 3] if i % 2 else json.dumps([m("user", "ok")]) for i in range(20_000)]}
    table = {"polars": pl.DataFrame, "pandas": pd.DataFrame}.get(kind, lambda c: ibis.memtable(pa.table(c)))(columns)
    return table, bad, repaired


@pytest.mark.parametrize("kind", LOCAL_KINDS)
def test_each_distinct_failing_value_is_repaired_once(kind, monkeypatch):
    table, bad, repaired = repeated_failures(kind, monkeypatch)
    fixed = pb.Validate(table).col_vals_chat_format("messages").interrogate().get_fixed_data(1, repairs="safe")
    rows = rows_of(fixed)
    assert len(rows) == 10_000 and all(row["pb_fixes_"] == ["map_roles"] for row in rows)
    assert sorted(repaired) == sorted(bad)


def test_values_past_the_memo_are_repaired_per_batch(monkeypatch):
    monkeypatch.setattr(fixes, "MEMO_VALUES", 0)
    table, bad, repaired = repeated_failures("duckdb", monkeypatch)
    fixed = pb.Validate(table).col_vals_chat_format("messages").interrogate().get_fixed_data(1, repairs="safe")
    assert all(row["pb_fixes_"] == ["map_roles"] for row in rows_of(fixed))
    assert set(repaired) == set(bad) and len(repaired) > len(bad)  # once per batch: the memo is what saves it


# --- turns="all" -------------------------------------------------------------------------------------

# Some failing rows' problems, by id: in message order, and at one message in the order of the codes.
ALL_PROBLEMS = {
    1: [("unknown_role", 0), ("first_role", 0), ("unknown_role", 1), ("last_role", 1)],
    2: [("not_alternating", 1), ("empty_content", 1)],
    7: [
        ("unknown_role", 0),
        ("first_role", 0),
        ("unknown_role", 1),
        ("not_alternating", 1),
        ("unknown_role", 2),
        ("last_role", 3),
    ],
    9: [("no_messages", None)],
}


def problems_by_id(frame) -> dict[int, list[tuple[str, int | None]]]:
    return {row["id"]: [(p["code"], p["message"]) for p in row["pb_reasons_"]] for row in rows_of(frame)}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", KINDS)
def test_turns_all_lists_every_problem_of_each_failing_row(kind, form, spark_or_none):
    def validated(**step):
        table = make_table(kind, form, spark_or_none)
        return pb.Validate(table).col_vals_chat_format("messages", **OPTIONS, **step).interrogate()

    first, every = validated(), validated(turns="all")
    extract = every.get_data_extracts(1, frame=True)
    found = problems_by_id(extract)
    assert {i: found[i] for i in ALL_PROBLEMS} == ALL_PROBLEMS
    # A row's code is the first of its problems in the codes' order.
    assert all(first_reason(code for code, _ in found[row["id"]]) == row["pb_reason_"] for row in rows_of(extract))
    assert "pb_reasons_" not in rows_of(first.get_data_extracts(1, frame=True))[0]
    # Verdicts and counts don't change.
    assert every.n_failed(i=1) == first.n_failed(i=1) and every.steps[0].reasons == first.steps[0].reasons
    assert by_id(rows_of(extract)) == [
        {**row, "pb_reasons_": [{"code": c, "message": n} for c, n in found[row["id"]]]}
        for row in by_id(rows_of(first.get_data_extracts(1, frame=True)))
    ]
    # The fixed rows list what is left: nothing where the row now passes.
    fixed = rows_of(every.get_fixed_data(1, repairs="all"))
    assert [row["pb_reasons_"] == [] for row in fixed] == [row["pb_reason_"] is None for row in fixed]


@pytest.mark.parametrize("form", FORMS)
def test_turns_all_is_the_same_on_every_kind(form):
    def extract(kind):
        validation = pb.Validate(make_table(kind, form)).col_vals_chat_format("messages", **OPTIONS, turns="all")
        return problems_by_id(validation.interrogate().get_data_extracts(1, frame=True))

    results = [extract(kind) for kind in LOCAL_KINDS]
    assert results[0] == results[1] == results[2]
    ids, values = source(form)
    codes = pb.check_batch(pa.array(values), **OPTIONS).to_pylist()
    problems = pb.rules.problems_array(pa.array(values), ChatFormat(**OPTIONS)).to_pylist()
    assert results[0] == {
        i: [(p["code"], p["message"]) for p in found] for i, found, code in zip(ids, problems, codes) if code
    }


def test_turns_all_in_the_fixed_data_lists_what_is_left():
    rows = by_id(rows_of(fixed_rows("polars", "json", turns="all")))
    left = {row["id"]: [(p["code"], p["message"]) for p in row["pb_reasons_"]] for row in rows}
    assert left[8] == [("unknown_role", 1), ("last_role", 1)]  # "still_failing": the robot is left
    assert left[1] == [] and left[9] == [("no_messages", None)]


@pytest.mark.parametrize("kind", ["polars", "pandas", "duckdb"])
def test_the_step_report_shows_every_problem(kind):
    validation = pb.Validate(make_table(kind, "json")).col_vals_chat_format("messages", **OPTIONS, turns="all")
    report = validation.interrogate().get_step_report(1)
    names, rows = report.rows()
    assert names[-3:] == ["pb_reason_", "pb_message_", "pb_reasons_"]
    cells = {row[names.index("id")]: row[-1] for row in rows}
    assert cells["1"] == "unknown_role@0, first_role@0, unknown_role@1, last_role@1"
    assert cells["2"] == "not_alternating@1, empty_content@1"
    assert cells["9"] == "no_messages"
    assert "not_alternating@1, empty_content@1" in repr(report)


def test_turns_all_on_a_dataset_type_step_says_the_column_too():
    table = pd.DataFrame(
        {
            "prompt": [json.dumps([m("user", "Sky?")]), json.dumps([m("user", "Sun?")])],
            "completion": [json.dumps([m("user", "Blue.")]), json.dumps([m("assistant", "Hot.")])],
        }
    )
    validation = pb.Validate(table).col_vals_dataset_type("prompt_completion", turns="all").interrogate()
    extract = validation.get_data_extracts(1, frame=True)
    assert plain(extract["pb_reasons_"][0]) == [
        {"code": "completion_role", "column": "completion", "message": 0},
        {"code": "not_alternating", "column": "completion", "message": 0},
    ]
    _, rows = validation.get_step_report(1).rows()
    assert rows[0][-1] == "completion_role@completion[0], not_alternating@completion[0]"


def test_turns_is_a_setting_of_both_step_methods():
    import inspect

    for method in (pb.Validate.col_vals_chat_format, pb.Validate.col_vals_dataset_type):
        parameter = inspect.signature(method).parameters["turns"]
        assert parameter.default == "first" and parameter.kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(ValueError, match=r"^turns= must be one of \['first', 'all'\], not 'every'$"):
        pb.Validate(make_table("polars", "json")).col_vals_chat_format("messages", turns="every")


# --- What users are told ---------------------------------------------------------------------------


def interrogated(**step):
    return pb.Validate(make_table("polars", "json")).col_vals_chat_format("messages", **step).interrogate()


@pytest.mark.parametrize(
    ("repairs", "message"),
    [
        ("fix_everything", "unknown repair 'fix_everything': name one of the repairs decode_text, map_roles, "
         "drop_empty, hoist_system, merge_repeats, drop_leading, drop_trailing or the presets safe, all"),
        (["map_roles", "drop_evrything"], "unknown repair 'drop_evrything'"),
        ([], "repairs= is empty"),
        ("drop_trailing", "repair 'drop_trailing' needs last_role= set: it has nothing to aim for"),
    ],
)
def test_a_bad_repairs_argument_is_named_in_one_line(repairs, message):
    with pytest.raises(ValueError) as raised:
        interrogated().get_fixed_data(1, repairs=repairs)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_repairs_of_the_wrong_type_are_refused():
    with pytest.raises(TypeError, match="repairs= must be a repair's name, a preset or a list of them, not int"):
        interrogated().get_fixed_data(1, repairs=5)
    with pytest.raises(TypeError, match=r"repairs= must hold names \(strings\) only; found 1"):
        interrogated().get_fixed_data(1, repairs=["safe", 1])


def test_get_fixed_data_before_interrogate_says_what_to_do():
    plan = pb.Validate(make_table("polars", "json")).col_vals_chat_format("messages")
    with pytest.raises(ChatgateError, match=r"^call \.interrogate\(\) first: the plan hasn't been run$"):
        plan.get_fixed_data(1, repairs="safe")


def test_a_dataset_type_step_is_refused_naming_the_step():
    table = pd.DataFrame({"prompt": [json.dumps([m("user", "Hi")])], "completion": [json.dumps([m("user", "Yo")])]})
    validation = (
        pb.Validate(table).col_vals_chat_format("prompt").col_vals_dataset_type("prompt_completion").interrogate()
    )
    with pytest.raises(ValueError) as raised:
        validation.get_fixed_data(2, repairs="safe")
    assert str(raised.value) == (
        "step 2 is a col_vals_dataset_type() step: get_fixed_data() repairs the conversations "
        "of col_vals_chat_format() steps only"
    )


def test_a_step_that_did_not_run_is_named():
    with pytest.raises(ChatgateError, match=r"^step 1 wasn't evaluated \(it is inactive\): it has no failing rows to repair$"):
        interrogated(active=False).get_fixed_data(1, repairs="safe")
    broken = interrogated(pre=lambda t: t.drop("messages"))
    with pytest.raises(ChatgateError, match=r"^step 1 wasn't evaluated \(column 'messages' isn't in the table"):
        broken.get_fixed_data(1, repairs="safe")
    with pytest.raises(IndexError, match="there is no step 3; steps are 1 to 1"):
        interrogated().get_fixed_data(3, repairs="safe")


def test_a_source_with_a_column_the_api_adds_is_refused():
    table = make_table("polars", "json").with_columns(pb_fixes_=pl.lit("x"))
    validation = pb.Validate(table).col_vals_chat_format("messages").interrogate()
    assert "already has a column 'pb_fixes_'" in validation.steps[0].eval_error
