"""`max_value_bytes=`: a value larger than the limit gets `too_large`, unread, first of all codes.

The rules measure each value (`rules.sizes`): JSON text by its bytes, from the Arrow
offsets; a native value by the bytes of the texts it holds (keys and field names
included) and 8 bytes for each other value. Labelled examples at the limit and one byte
over, in every form an engine hands over; the rules' paths that must not read such a
value (locating, repairing); and every engine giving the same rows the same code.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from chatgate.names import REASON
from chatgate.rules import (
    ALL_REASONS,
    ChatCheck,
    ChatFormat,
    DatasetCheck,
    check_batch,
    dataset_checks,
    first_problem,
    first_row_problem,
    format_codes,
    locate_array,
    phrase,
    problems_array,
    repair_array,
    row_problems_array,
)
from chatgate.rules.base.sizes import OTHER_BYTES, array_bytes, value_bytes
from chatgate.rules.conversation.spec import MAX_VALUE_BYTES
from job_helpers import SPARK_SLOW

GOOD = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
LIMIT = len(GOOD.encode())
OVER = GOOD[:-1] + " ]"  # the same conversation, one byte longer
NATIVE = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
NATIVE_BYTES = 2 * len("role" + "content") + len("user" + "Hi" + "assistant" + "Hello")
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])


def test_the_default_limit_is_16_mib_and_the_code_comes_first():
    assert ChatFormat().max_value_bytes == MAX_VALUE_BYTES == 16 * 2**20
    assert ALL_REASONS[0] == "too_large"
    assert format_codes(ChatFormat())[:2] == ("too_large", "not_messages")
    assert "too_large" not in format_codes(ChatFormat(max_value_bytes=None))
    assert phrase("too_large", 1) == "1 is too large to read (`too_large`)"
    assert phrase("too_large", 3) == "3 are too large to read (`too_large`)"


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "16MB"])
def test_a_limit_is_a_whole_number_of_at_least_one_or_none(bad):
    with pytest.raises(ValueError, match="max_value_bytes="):
        ChatFormat(max_value_bytes=bad)
    assert ChatFormat(max_value_bytes=None).max_value_bytes is None


def test_a_job_takes_a_limit_and_refuses_zero_in_one_line():
    from chatgate.errors import ConfigError
    from chatgate.job.config import build_config

    base = {"source": "lake/chats", "columns": ["messages"], "outputs": {"quarantine": "q", "summary": "s"}}
    assert build_config({**base, "checks": {"max_value_bytes": 1024}}, {}).steps[0].fmt.max_value_bytes == 1024
    # A YAML null is the default, as for every option: no limit is for Python only.
    assert build_config({**base, "checks": {"max_value_bytes": None}}, {}).steps[0].fmt.max_value_bytes == MAX_VALUE_BYTES
    with pytest.raises(ConfigError, match="max_value_bytes= must be a whole number of at least 1"):
        build_config(base, {"max_value_bytes": "0"})


# --- JSON text: its UTF-8 bytes ---------------------------------------------------------


@pytest.mark.parametrize(
    "kind", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.string_view()]
)
def test_json_text_at_the_limit_passes_and_one_byte_over_is_too_large(kind):
    assert len(OVER.encode()) == LIMIT + 1
    array = pa.array([GOOD, OVER, None, "[]"], kind)
    assert check_batch(array, max_value_bytes=LIMIT).to_pylist() == [None, "too_large", "not_messages", "no_messages"]
    assert [first_problem(v, max_value_bytes=LIMIT) for v in array.to_pylist()] == [
        None, "too_large", "not_messages", "no_messages",
    ]


def test_text_is_measured_in_utf8_bytes_not_characters():
    text = json.dumps([{"role": "user", "content": "héllo"}], ensure_ascii=False)
    size = len(text.encode())
    assert size == len(text) + 1
    for value in (text, text.encode(), pa.array([text]), pa.array([text.encode()])):
        if isinstance(value, pa.Array):
            assert check_batch(value, max_value_bytes=size).to_pylist() == [None]
            assert check_batch(value, max_value_bytes=size - 1).to_pylist() == ["too_large"]
        else:
            assert first_problem(value, max_value_bytes=size) is None
            assert first_problem(value, max_value_bytes=size - 1) == "too_large"


def test_a_value_over_the_limit_is_too_large_whatever_it_holds():
    # Not JSON, not UTF-8, a JSON string: each would be not_messages, but it isn't read.
    values = [b"{" * 40, b"\xff" * 40, json.dumps("x" * 40).encode()]
    assert check_batch(pa.array(values, pa.binary()), max_value_bytes=39).to_pylist() == ["too_large"] * 3
    assert check_batch(pa.array(values, pa.binary()), max_value_bytes=None).to_pylist() == ["not_messages"] * 3
    assert [first_problem(v, max_value_bytes=39) for v in values] == ["too_large"] * 3


def test_options_beyond_the_core_check_measure_first_too():
    array = pa.array([GOOD, OVER])
    for options in ({"tools": True}, {"profile": "openai"}, {"sharegpt": True}, {"role_map": {"bot": "assistant"}}):
        assert check_batch(array, max_value_bytes=LIMIT, **options).to_pylist()[1] == "too_large", options


def test_dictionary_and_chunked_arrays_are_measured_per_value():
    chunked = pa.chunked_array([[GOOD, OVER], [OVER, None]])
    assert check_batch(chunked, max_value_bytes=LIMIT).to_pylist() == [None, "too_large", "too_large", "not_messages"]
    encoded = pa.array([OVER, GOOD, OVER, None]).dictionary_encode()
    assert check_batch(encoded, max_value_bytes=LIMIT).to_pylist() == ["too_large", None, "too_large", "not_messages"]


def test_sixteen_mebibytes_pass_and_one_byte_more_is_too_large_by_default():
    head = '[{"role": "user", "content": "'
    tail = '"}, {"role": "assistant", "content": "ok"}]'
    at = head + "a" * (MAX_VALUE_BYTES - len(head) - len(tail)) + tail
    assert len(at) == MAX_VALUE_BYTES
    over = head + "a" * (MAX_VALUE_BYTES + 1 - len(head) - len(tail)) + tail
    assert check_batch(pa.array([at, over], pa.large_string())).to_pylist() == [None, "too_large"]
    assert first_problem(over) == "too_large"
    assert first_problem(over, max_value_bytes=None) is None


# --- Native values: the bytes of their texts, keys included, 8 for any other value --------


def test_a_native_conversation_at_the_limit_passes_and_one_byte_over_is_too_large():
    array = pa.array([NATIVE, NATIVE + [{"role": "user", "content": None}], None], pa.list_(MESSAGE))
    sizes = array_bytes(array).tolist()
    assert sizes == [NATIVE_BYTES, NATIVE_BYTES + len("role" + "content" + "user"), 0]
    assert check_batch(array, max_value_bytes=NATIVE_BYTES).to_pylist() == [None, "too_large", "not_messages"]
    assert check_batch(array, max_value_bytes=NATIVE_BYTES - 1).to_pylist() == ["too_large", "too_large", "not_messages"]
    assert first_problem(NATIVE, max_value_bytes=NATIVE_BYTES) is None
    assert first_problem(NATIVE, max_value_bytes=NATIVE_BYTES - 1) == "too_large"


NATIVE_CASES = {
    "list<struct>": (pa.array([NATIVE, [], None, [None]], pa.list_(MESSAGE)), [NATIVE_BYTES, 0, 0, 0]),
    "large_list<struct<large_string>>": (
        pa.array([NATIVE], pa.large_list(pa.struct([("role", pa.large_string()), ("content", pa.large_string())]))),
        [NATIVE_BYTES],
    ),
    "list<map>": (
        pa.array([[[("role", "user"), ("content", "Hi")]]], pa.list_(pa.map_(pa.string(), pa.string()))),
        [len("role" + "user" + "content" + "Hi")],
    ),
    "struct with messages": (
        pa.array([{"messages": NATIVE}], pa.struct([("messages", pa.list_(MESSAGE))])),
        [len("messages") + NATIVE_BYTES],
    ),
    "numbers and booleans": (
        pa.array([{"role": "user", "content": "Hi", "weight": 1, "ok": True}]),
        [len("role" + "user" + "content" + "Hi" + "weight" + "ok") + 2 * OTHER_BYTES],
    ),
    "a sliced list": (pa.array([NATIVE, [NATIVE[0]], None], pa.list_(MESSAGE)).slice(1), [len("roleusercontentHi"), 0]),
}


@pytest.mark.parametrize("case", list(NATIVE_CASES))
def test_native_sizes_are_the_same_from_arrow_and_from_python(case):
    array, expected = NATIVE_CASES[case]
    assert array_bytes(array).tolist() == expected
    assert [value_bytes(v) for v in array.to_pylist(maps_as_pydicts="lossy")] == expected


def test_a_native_value_over_the_limit_is_never_read_into_python(monkeypatch):
    import chatgate.rules.check.batch as batch

    read = []
    original = batch.python_values
    monkeypatch.setattr(batch, "python_values", lambda array: read.append(len(array)) or original(array))
    array = pa.array([NATIVE, NATIVE * 100, NATIVE], pa.list_(MESSAGE))
    assert check_batch(array, max_value_bytes=NATIVE_BYTES).to_pylist() == [None, "too_large", None]
    assert read == [2]


# --- Checks of several columns, locating and repairing ----------------------------------


def test_a_dataset_row_with_a_value_over_the_limit_is_too_large():
    table = pa.table({"prompt": ["The sky is", "x" * 11], "completion": [" blue.", " blue."]})
    (check,) = dataset_checks("prompt_completion", table.column_names, max_value_bytes=10)
    assert "too_large" in check.codes
    assert check.check(table).to_pylist() == [None, "too_large"]
    assert first_row_problem(table.slice(1).to_pylist()[0], max_value_bytes=10) == "too_large"
    problems = row_problems_array(check, table).to_pylist()
    assert problems[1] == [{"code": "too_large", "column": "prompt", "message": None}]
    chats = pa.table({"input": ['{"messages": [{"role": "user", "content": "' + "x" * 50 + '"}]}'],
                      "preferred_output": ["[]"], "non_preferred_output": ["[]"]})
    (openai,) = dataset_checks("openai_preference", chats.column_names, max_value_bytes=50)
    assert openai.check(chats).to_pylist() == ["too_large"]


def test_a_label_is_not_measured():
    check = DatasetCheck("unpaired_preference", ChatFormat(max_value_bytes=10))
    assert "label" not in str(check.value_limits)
    row = {"prompt": "The sky is", "completion": " blue.", "label": True}
    assert check.check_row(row) is None


def test_a_chat_check_with_a_tools_column_measures_the_conversation():
    tools = json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    table = pa.table({"messages": [GOOD, OVER], "tools": [tools, tools]})
    check = ChatCheck("messages", ChatFormat(tools=True, max_value_bytes=LIMIT), tools_column="tools")
    assert check.check(table).to_pylist() == [None, "too_large"]


def test_locating_and_repairing_leave_a_too_large_value_unread():
    fmt = ChatFormat(max_value_bytes=LIMIT)
    values = pa.array([OVER, '[{"role": "bot", "content": "x"}]'])
    codes = check_batch(values, max_value_bytes=LIMIT)
    assert codes.to_pylist() == ["too_large", "unknown_role"]
    assert locate_array(values, codes, fmt).to_pylist() == [None, 0]
    assert problems_array(values, fmt).to_pylist()[0] == [{"code": "too_large", "message": None}]
    fixed, applied, after = repair_array(values, "all", ChatFormat(roles=["user", "assistant"], max_value_bytes=LIMIT))
    assert fixed.to_pylist()[0] == OVER and applied.to_pylist()[0] == [] and after.to_pylist()[0] == "too_large"


def test_a_missing_value_is_never_too_large():
    assert check_batch(pa.array([None], pa.string()), max_value_bytes=1).to_pylist() == ["not_messages"]
    assert check_batch(pa.array([None], pa.string()), max_value_bytes=1, na_pass=True).to_pylist() == [None]
    assert first_problem(float("nan"), max_value_bytes=1) == "not_messages"
    assert value_bytes(np.array([1, 2])) == 2 * OTHER_BYTES


# --- Every engine: the same rows, the same code ------------------------------------------

ENGINES = ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)]


def _text_table() -> pa.Table:
    values = [GOOD, OVER, None, "[]", OVER, "{" * (LIMIT + 5), "\u00e9" * (LIMIT // 2), GOOD]
    return pa.table({"id": pa.array(range(1, len(values) + 1), pa.int64()), "messages": values})


def _native_table() -> pa.Table:
    values = [NATIVE, NATIVE + NATIVE, None, [], NATIVE + NATIVE, [{"role": "bot", "content": "x"}]]
    return pa.table({"id": pa.array(range(1, len(values) + 1), pa.int64()), "messages": pa.array(values, pa.list_(MESSAGE))})


def _engine(name: str):
    if name == "local":
        from chatgate.engines.local import LocalEngine

        return LocalEngine()
    if name == "duckdb":
        from chatgate.engines.ibis import IbisEngine

        return IbisEngine()
    from chatgate.engines.spark import SparkEngine

    return SparkEngine()


def _frame(name: str, table: pa.Table, request):
    if name == "local":
        import polars as pl

        return pl.from_arrow(table)
    if name == "duckdb":
        import ibis

        return ibis.memtable(table)
    return request.getfixturevalue("spark").createDataFrame(table)


def _arrow(name: str, frame) -> pa.Table:
    if name == "local":
        return frame.to_arrow()
    if name == "duckdb":
        return frame.to_pyarrow()
    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)


@pytest.mark.parametrize("form", ["json", "native"])
@pytest.mark.parametrize("dedup", ["on", "off", "auto"])
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gives_too_large_to_the_same_rows(engine, dedup, form, request):
    table = _text_table() if form == "json" else _native_table()
    limit = LIMIT if form == "json" else NATIVE_BYTES
    fmt = ChatFormat(max_value_bytes=limit)
    expected = {
        row_id: code
        for row_id, value in zip(table["id"].to_pylist(), table["messages"].to_pylist())
        if (code := first_problem(value, max_value_bytes=limit)) is not None
    }
    assert list(expected.values()).count("too_large") == 3 if form == "json" else 2
    eng = _engine(engine)
    judged = eng.judge(_frame(engine, table, request), "messages", fmt, dedup=dedup)
    failing = _arrow(engine, eng.failing_rows(judged))
    assert dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist())) == expected
    passing = _arrow(engine, eng.passing_rows(judged))
    assert passing.num_rows + failing.num_rows == table.num_rows
    assert judged.reasons["too_large"] == list(expected.values()).count("too_large")


# --- A 30 MB value from a Delta table, the default limit, the job ---------------------------


def _huge_source(path) -> tuple[str, int]:
    from deltalake import write_deltalake

    huge = json.dumps([{"role": "user", "content": "x" * (30 * 2**20)}, {"role": "assistant", "content": "ok"}])
    write_deltalake(str(path), pa.table({"id": [1, 2], "messages": [huge, GOOD]}))
    return str(path), len(huge)


# On Spark it takes about 20 s (the value crosses to the check's Python worker and back).
@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_30_mb_value_is_too_large_by_default_and_kept_whole_in_the_quarantine(tmp_path, engine, backend):
    from chatgate.job.runner import run
    from job_helpers import job_config, read_delta

    source, size = _huge_source(tmp_path / "chats")
    result = run(job_config(tmp_path, source, engine, {}), backend)
    quarantine = read_delta(result.config.outputs.quarantine)
    assert quarantine.select(["id", "pb_reason_"]).to_pylist() == [{"id": 1, "pb_reason_": "too_large"}]
    assert pa.compute.binary_length(quarantine["messages"]).to_pylist() == [size]
    assert read_delta(result.config.outputs.valid)["id"].to_pylist() == [2]
    summary = read_delta(result.config.outputs.summary).to_pylist()[0]
    assert json.loads(summary["parameters"])["max_value_bytes"] == MAX_VALUE_BYTES


@pytest.mark.spark
def test_spark_measures_a_value_in_the_jvm_and_sends_a_stand_in_when_only_keys_come_back(spark):
    from chatgate.engines.spark import _within

    frame = spark.createDataFrame([("short",), ("é" * 8,), ("x" * 30,), (None,)], "m string")
    sent = [row[0] for row in frame.select(_within(frame, "m", 10)).collect()]
    # "é" * 8 is 16 bytes, over 10, and not cut (8 characters); 30 bytes of x are cut to 11.
    assert sent == ["short", "é" * 8, "x" * 11, None]
    assert [row[0] for row in frame.select(_within(frame, "m", None)).collect()] == ["short", "é" * 8, "x" * 30, None]
