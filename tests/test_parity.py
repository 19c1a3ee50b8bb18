"""Engine parity: one test body, every engine, identical failing rows, reasons, valid rows and counts.

Local (Polars), Ibis over DuckDB and Spark judge the same tables; each must agree
with the others and with the reference check `first_problem`, row by row.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from chatgate import first_problem
from chatgate.names import REASON
from chatgate.rules import ChatFormat
from chatgate.sample import chat_table

ENGINES = ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)]

NATIVE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


def _native_table() -> pa.Table:
    conversations = [
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hello?"}],
        [{"role": "system", "content": "Be brief."}, {"role": "assistant", "content": "x"}],
        [{"role": "user", "content": None}, {"role": "assistant", "content": "ok"}],
        [{"role": None, "content": "who?"}],
        [{"role": "bot", "content": "4"}],
        [],
        None,
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}, {"role": "system", "content": "s"}],
    ]
    return pa.table({"id": pa.array(range(1, 11), pa.int64()), "messages": pa.array(conversations, NATIVE)})


CASES = {
    "json-default": (lambda: chat_table(300, seed=11, defect_fraction=0.3), ChatFormat()),
    "json-first-last": (
        lambda: chat_table(300, seed=12, defect_fraction=0.3),
        ChatFormat(first_role="user", last_role="assistant"),
    ),
    "json-lenient": (
        lambda: chat_table(300, seed=13, defect_fraction=0.3),
        ChatFormat(alternate=False, allow_empty=True, na_pass=True, roles=("user", "assistant", "system", "bot")),
    ),
    "native": (_native_table, ChatFormat(last_role="assistant")),
    "native-na-pass": (_native_table, ChatFormat(na_pass=True)),
}


def _to_engine(engine: str, table: pa.Table, request):
    if engine == "local":
        import polars as pl

        return pl.from_arrow(table)
    if engine == "duckdb":
        import ibis

        return ibis.memtable(table)
    return request.getfixturevalue("spark").createDataFrame(table)


def _rows(engine: str, frame) -> pa.Table:
    if engine == "local":
        return frame.to_arrow()
    if engine == "duckdb":
        return frame.to_pyarrow()
    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)


def _engine(engine: str):
    if engine == "local":
        from chatgate.engines.local import LocalEngine

        return LocalEngine()
    if engine == "duckdb":
        from chatgate.engines.ibis import IbisEngine

        return IbisEngine()
    from chatgate.engines.spark import SparkEngine

    return SparkEngine()


def _reference(table: pa.Table, fmt: ChatFormat) -> dict[int, str]:
    out = {}
    for row_id, value in zip(table["id"].to_pylist(), table["messages"].to_pylist()):
        code = first_problem(value, **fmt.as_dict())
        if code is not None:
            out[row_id] = code
    return out


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dedup", ["on", "off"])
@pytest.mark.parametrize("engine", ENGINES)
def test_engines_agree_with_the_reference(engine, case, dedup, request):
    make, fmt = CASES[case]
    source = make()
    expected = _reference(source, fmt)
    eng = _engine(engine)
    judged = eng.judge(_to_engine(engine, source, request), "messages", fmt, dedup=dedup)

    failing = _rows(engine, eng.failing_rows(judged))
    assert dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist())) == expected
    passing = _rows(engine, eng.passing_rows(judged))
    assert REASON not in passing.column_names
    assert sorted(passing["id"].to_pylist()) == sorted(set(source["id"].to_pylist()) - set(expected))

    assert (judged.units, judged.failed) == (source.num_rows, len(expected))
    counts = {code: list(expected.values()).count(code) for code in set(expected.values())}
    assert judged.reasons == counts
    assert list(judged.reasons.values()) == sorted(counts.values(), reverse=True)
    assert judged.deduplicated is (dedup == "on")
    assert judged.distinct_values == (_distinct(source["messages"].to_pylist()) if dedup == "on" else None)


def _distinct(values: list) -> int:
    """The number of distinct non-null values, in plain Python (nested values by their JSON)."""
    return len({v if isinstance(v, (str, bytes)) else json.dumps(v) for v in values if v is not None})


def _confusable_table() -> pa.Table:
    """Values that an engine could wrongly count as one: equal as JSON, different as text."""
    chat = [{"role": "user", "content": "Caf\u00e9?"}, {"role": "assistant", "content": "Oui."}]
    variants = [
        json.dumps(chat),
        json.dumps(chat) + " ",
        " " + json.dumps(chat),
        json.dumps(chat, indent=1),
        json.dumps(chat, separators=(",", ":")),
        json.dumps(chat, ensure_ascii=False),  # é as UTF-8, not as an escape
        json.dumps(chat, ensure_ascii=False).replace("\u00e9", "e\u0301"),  # é decomposed
        json.dumps([{"content": "Caf\u00e9?", "role": "user"}, chat[1]]),  # keys in another order
        json.dumps([{"role": "user", "content": "caf\u00e9?"}, chat[1]]),  # another case
        "[]",
        "[] ",
        "not json",
    ]
    values = [variants[(i * 5) % len(variants)] if i % 4 else None for i in range(60)]
    values += variants  # every variant at least once
    others = [None if i % 3 == 0 else variants[i % 3] for i in range(len(values))]
    return pa.table(
        {"id": pa.array(range(1, len(values) + 1), pa.int64()), "messages": values, "other": others}
    )


@pytest.mark.parametrize("dedup", ["on", "off"])
@pytest.mark.parametrize("engine", ENGINES)
def test_distinct_values_are_the_same_on_every_engine(engine, dedup, request):
    """With dedup, the exact count of distinct non-null values (tuples: not all null); without, None."""
    from chatgate.rules import ChatCheck

    source = _confusable_table()
    values = source["messages"].to_pylist()
    assert values.count(None) > 1 and len(set(values)) < len(values)
    tuples = list(zip(values, source["other"].to_pylist()))
    assert (None, None) in tuples
    eng = _engine(engine)
    table = _to_engine(engine, source, request)

    single = eng.judge_check(table, ChatCheck("messages", ChatFormat()), dedup=dedup)
    assert single.deduplicated is (dedup == "on")
    assert single.distinct_values == (len({v for v in values if v is not None}) if dedup == "on" else None)
    assert single.units == source.num_rows

    # Two columns: a row counts unless both are null.
    pair = ChatCheck("messages", ChatFormat(tools=True), tools_column="other")
    judged = eng.judge_check(table, pair, dedup=dedup)
    want = len({t for t in tuples if t != (None, None)}) if dedup == "on" else None
    assert judged.distinct_values == want


@pytest.mark.parametrize("engine", ENGINES)
def test_validate_api_gives_the_seed_counts_on_every_engine(engine, request):
    import chatgate as pb

    seed = pa.table(
        {
            "id": [1, 2, 3, 4],
            "messages": [
                json.dumps([{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello!"}]),
                json.dumps([{"role": "user", "content": "Hi!"}, {"role": "user", "content": "Hello?"}]),
                json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"},
                            {"role": "assistant", "content": "Paris."}]),
                json.dumps([{"role": "user", "content": "2 + 2?"}, {"role": "bot", "content": "4"}]),
            ],
        }
    )
    validation = (
        pb.Validate(_to_engine(engine, seed, request))
        .col_vals_chat_format(columns="messages", last_role="assistant")
        .interrogate()
    )
    assert (validation.n(i=1, scalar=True), validation.n_failed(i=1, scalar=True)) == (4, 2)
    assert "1 has roles that don't alternate (`not_alternating`) and 1 has a role that isn't allowed" in repr(
        validation
    )
    report = validation.get_step_report(i=1)
    assert "ASSERTION `messages is a chat of {system, user, assistant}`" in repr(report)
    extract = _rows(engine, validation.get_data_extracts(i=1, frame=True))
    assert dict(zip(extract["id"].to_pylist(), extract["pb_reason_"].to_pylist())) == {
        2: "not_alternating",
        4: "unknown_role",
    }
    passing = _rows(engine, validation.get_sundered_data("pass"))
    assert sorted(passing["id"].to_pylist()) == [1, 3]


def _chat(*turns, **extra):
    return [{"role": r, "content": c, **extra} for r, c in turns]


def _row_check_table(rng_seed: int = 5) -> pa.Table:
    """Preference rows with tools, ShareGPT text and labels: every new rule family, with repeats."""
    import random

    rng = random.Random(rng_seed)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    prompts = [
        _chat(("user", "Sky?")),
        _chat(("system", "Be brief."), ("user", "Sun?")),
        _chat(("assistant", "Hi")),  # prompt_end
        [],
    ]
    completions = [
        _chat(("assistant", "Blue.")),
        _chat(("assistant", "Green.")),
        _chat(("user", "Again?")),  # completion_role
        _chat(("assistant", " ")),  # empty_content
    ]
    messages = [
        [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [call]},
         {"role": "tool", "content": "Sunny"}, {"role": "assistant", "content": "Sunny."}],
        [{"role": "user", "content": "Weather?"}, {"role": "tool", "content": "Sunny"}],  # orphan_tool
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    ]
    tools = [json.dumps([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]), "[]", None]
    rows = 120
    return pa.table(
        {
            "id": pa.array(range(1, rows + 1), pa.int64()),
            "prompt": [json.dumps(rng.choice(prompts)) for _ in range(rows)],
            "chosen": [json.dumps(rng.choice(completions)) for _ in range(rows)],
            "rejected": [json.dumps(rng.choice(completions)) for _ in range(rows)],
            "messages": [json.dumps(rng.choice(messages)) for _ in range(rows)],
            "tools": [rng.choice(tools) for _ in range(rows)],
            "label": pa.array([rng.choice([True, False, None]) for _ in range(rows)], pa.bool_()),
        }
    )


def _row_checks():
    from chatgate.rules import ChatCheck, LabelCheck, dataset_checks

    return {
        "preference": dataset_checks("preference", ["prompt", "chosen", "rejected"])[0],
        "prompt-completion": dataset_checks(
            "prompt_completion", ["prompt", "chosen"], columns={"completion": "chosen"}
        )[0],
        "tools": ChatCheck("messages", ChatFormat(tools=True), tools_column="tools"),
        "tools-no-column": ChatCheck("messages", ChatFormat(tools=True, last_role="assistant")),
        "label": LabelCheck("label"),
    }


@pytest.mark.parametrize("name", list(_row_checks()))
@pytest.mark.parametrize("dedup", ["on", "off"])
@pytest.mark.parametrize("engine", ENGINES)
def test_engines_agree_on_row_checks(engine, name, dedup, request):
    check = _row_checks()[name]
    source = _row_check_table()
    rows = source.to_pylist()
    expected = {row["id"]: code for row in rows if (code := check.check_row(row)) is not None}
    assert expected, "the table must hold failing rows for this check"
    eng = _engine(engine)
    judged = eng.judge_check(_to_engine(engine, source, request), check, dedup=dedup)
    failing = _rows(engine, eng.failing_rows(judged))
    assert dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist())) == expected
    assert (judged.units, judged.failed) == (source.num_rows, len(expected))
    assert judged.reasons == {c: list(expected.values()).count(c) for c in set(expected.values())}
    columns = list(dict.fromkeys(check.columns))
    present = {tuple(row[c] for c in columns) for row in rows if any(row[c] is not None for c in columns)}
    assert judged.distinct_values == (len(present) if dedup == "on" else None)
