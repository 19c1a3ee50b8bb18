"""Values a reader may refuse: text that isn't UTF-8, a map that repeats a key.

Each engine judges what its files hold, one row at a time: such a row gets a code (the
one its JSON text would get) and every other row keeps its own, on every engine, and
the row is conserved in the quarantine (quarantine + valid = the source's rows).

- Text that isn't UTF-8 is `not_messages`, wherever the bad byte is (in a key the fast
  path skips too). DuckDB's Parquet reader refuses such a file whole; the embedded
  engine then reads it with PyArrow's reader (`parquet_files.read_despite_bad_text`).
- A map repeating a key is read as a JSON object repeating a key: the last value wins.
  DuckDB reads such maps but refuses them back from Arrow, so the embedded engine joins
  failing maps back on their JSON text (`ibis.plan.MAPPED`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.job.registry import store_for
from chatgate.job.runner import run
from chatgate.names import REASON
from chatgate.rules import ChatCheck, ChatFormat, check_batch, dataset_checks, first_problem
from job_helpers import job_config, read_delta

CHATGATE = str(Path(sys.executable).with_name("chatgate"))

GOOD = b'[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]'
BAD_UTF8 = {
    "in-content": b'[{"role":"user","content":"\xff\xfe"},{"role":"assistant","content":"yo"}]',
    "in-skipped-key": b'[{"role":"user","content":"hi","x":"\xff"},{"role":"assistant","content":"yo"}]',
    "in-key-name": b'[{"role":"user","content":"hi","\xc3":1},{"role":"assistant","content":"yo"}]',
    "after-the-json": b'[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]\xff',
    "truncated-sequence": b'[{"role":"user","content":"h\xe2\x82"},{"role":"assistant","content":"yo"}]',
}


def _unchecked_strings(values: list[bytes | None], large: bool = False) -> pa.Array:
    """Strings as an engine hands over what its files hold: bytes, never validated."""
    binary = pa.array(values, pa.large_binary() if large else pa.binary())
    return binary.view(pa.large_string() if large else pa.string())


# --- The rules ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(BAD_UTF8))
@pytest.mark.parametrize("large", [False, True])
def test_a_string_that_isnt_utf8_is_not_messages_wherever_the_bad_byte_is(case, large):
    values = [GOOD, BAD_UTF8[case], None]
    expected = [None, "not_messages", "not_messages"]
    assert check_batch(_unchecked_strings(values, large)).to_pylist() == expected
    assert check_batch(pa.array(values, pa.binary())).to_pylist() == expected
    assert first_problem(BAD_UTF8[case]) == "not_messages"
    # Beyond the core check (the reference path), and with na_pass.
    assert check_batch(_unchecked_strings(values, large), tools=True).to_pylist() == expected
    assert check_batch(_unchecked_strings(values, large), na_pass=True).to_pylist() == [None, "not_messages", None]


def test_checks_of_several_columns_judge_a_string_that_isnt_utf8():
    prompt = _unchecked_strings([b'[{"role":"user","content":"hi"}]', b'[{"role":"user","content":"\xff"}]'])
    completion = pa.array(['[{"role":"assistant","content":"yo"}]'] * 2)
    (check,) = dataset_checks("prompt_completion", ["prompt", "completion"])
    assert check.check(pa.table({"prompt": prompt, "completion": completion})).to_pylist() == [None, "not_messages"]
    tools = pa.array(['[{"type": "function", "function": {"name": "f"}}]'] * 2)
    chat = ChatCheck("prompt", ChatFormat(tools=True), tools_column="tools")
    assert chat.check(pa.table({"prompt": prompt, "tools": tools})).to_pylist() == [None, "not_messages"]


def test_a_native_value_holding_text_that_isnt_utf8_is_not_messages():
    role = _unchecked_strings([b"user", b"\xff", b"assistant"])
    content = pa.array(["hi", "x", "yo"])
    messages = pa.StructArray.from_arrays([role, content], names=["role", "content"])
    array = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), messages)
    assert check_batch(array).to_pylist() == [None, "not_messages"]


def _maps(rows: list[list[list[tuple[str, str]]]]) -> pa.Array:
    return pa.array(rows, pa.list_(pa.map_(pa.string(), pa.string())))


MAP_ROWS = [
    [[("role", "user"), ("content", "hi")], [("role", "assistant"), ("content", "yo")]],
    [[("role", "user"), ("role", "bot"), ("content", "hi")], [("role", "assistant"), ("content", "yo")]],
    [[("role", "bot"), ("role", "user"), ("content", "hi")], [("role", "assistant"), ("content", "yo")]],
    [[("role", "user"), ("content", "hi"), ("content", "")], [("role", "assistant"), ("content", "yo")]],
]
MAP_CODES = [None, "unknown_role", None, "empty_content"]


def _as_json(row: list[list[tuple[str, str]]]) -> str:
    """The JSON text of a list of maps, a repeated key written twice."""
    return "[" + ",".join("{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in m) + "}" for m in row) + "]"


def test_a_map_repeating_a_key_is_read_as_json_repeating_it_the_last_value_wins():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pyarrow warns of each repeated key: not through the rules
        assert check_batch(_maps(MAP_ROWS)).to_pylist() == MAP_CODES
    assert check_batch(pa.array([_as_json(row) for row in MAP_ROWS])).to_pylist() == MAP_CODES
    assert [first_problem(_as_json(row)) for row in MAP_ROWS] == MAP_CODES


# --- Every engine, from Delta tables its reader reads -----------------------------------------


def _bad_utf8_source(path: Path) -> Path:
    values = [GOOD, BAD_UTF8["in-content"], GOOD, BAD_UTF8["in-skipped-key"], None, b"[]", BAD_UTF8["in-content"]]
    write_deltalake(str(path), pa.table({"id": list(range(1, 8)), "messages": _unchecked_strings(values)}))
    return path


BAD_UTF8_CODES = {2: "not_messages", 4: "not_messages", 5: "not_messages", 6: "no_messages", 7: "not_messages"}


def _map_source(path: Path) -> Path:
    write_deltalake(str(path), pa.table({"id": list(range(1, 5)), "messages": _maps(MAP_ROWS)}))
    return path


MAP_SOURCE_CODES = {i + 1: code for i, code in enumerate(MAP_CODES) if code is not None}


def _judged(backend, source: Path, dedup: str) -> tuple[dict[int, str], list[int]]:
    table, _ = store_for(backend).open_source(str(source), None)
    judged = backend.judge(table, "messages", ChatFormat(), dedup=dedup)
    failing = backend.preview(backend.failing_rows(judged), 100)
    passing = backend.preview(backend.passing_rows(judged), 100)
    return dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist())), sorted(passing["id"].to_pylist())


@pytest.mark.parametrize("dedup", ["auto", "on", "off"])
def test_every_engine_judges_each_row_of_a_file_holding_text_that_isnt_utf8(tmp_path, backend, dedup):
    source = _bad_utf8_source(tmp_path / "chats")
    failing, passing = _judged(backend, source, dedup)
    assert failing == BAD_UTF8_CODES
    assert passing == [1, 3]


@pytest.mark.parametrize("dedup", ["auto", "on", "off"])
def test_every_engine_judges_each_row_of_maps_repeating_a_key(tmp_path, backend, dedup):
    source = _map_source(tmp_path / "chats")
    failing, passing = _judged(backend, source, dedup)
    assert failing == MAP_SOURCE_CODES
    assert passing == [1, 3]


@pytest.mark.parametrize("make, codes", [(_bad_utf8_source, BAD_UTF8_CODES), (_map_source, MAP_SOURCE_CODES)])
def test_the_job_conserves_those_rows_in_the_quarantine(tmp_path, engine, backend, make, codes):
    source = make(tmp_path / "chats")
    result = run(job_config(tmp_path, str(source), engine, {}), backend)
    quarantine = read_delta(result.config.outputs.quarantine)
    valid = read_delta(result.config.outputs.valid)
    assert dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist())) == codes
    assert sorted(quarantine["id"].to_pylist() + valid["id"].to_pylist()) == list(range(1, len(codes) + 3))
    # The row is kept as its file holds it, bytes and all.
    written = quarantine.sort_by("id").column("messages")
    original = read_delta(source).sort_by("id").column("messages").take([i - 1 for i in sorted(codes)])
    assert written.equals(original)


def test_the_command_line_job_on_text_that_isnt_utf8_exits_0_with_the_row_quarantined(tmp_path):
    source = tmp_path / "chats"
    write_deltalake(str(source), pa.table({"messages": _unchecked_strings([GOOD, BAD_UTF8["in-content"]])}))
    done = subprocess.run(
        [CHATGATE, "run", "--source", str(source), "--column", "messages",
         "--quarantine", str(tmp_path / "q"), "--summary", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "isn't UTF-8" in done.stderr
    quarantine = read_delta(tmp_path / "q")
    assert quarantine["pb_reason_"].to_pylist() == ["not_messages"]


@pytest.mark.parametrize("dedup", ["on", "off"])
def test_the_embedded_engine_reads_every_file_and_column_of_the_table_unchecked(tmp_path, dedup):
    """Files written apart (a column added in the second, timestamps), the bad text in the
    first: the rows read unchecked are the rows deltalake reads."""
    from datetime import datetime

    from chatgate.engines.ibis.duckdb import DuckDBEngine

    source = str(tmp_path / "chats")
    stamp = pa.array([datetime(2024, 1, 2, 3, 4, 5)] * 3, pa.timestamp("us"))
    first = pa.table({"id": [1, 2, 3], "at": stamp, "messages": _unchecked_strings([GOOD, BAD_UTF8["in-content"], GOOD])})
    write_deltalake(source, first)
    second = pa.table({"id": [4, 5], "at": stamp[:2], "messages": [GOOD.decode(), "[]"], "extra": ["a", "b"]})
    write_deltalake(source, second, mode="append", schema_mode="merge")
    backend = DuckDBEngine()
    table, _ = store_for(backend).open_source(source, None)
    judged = backend.judge(table, "messages", ChatFormat(), dedup=dedup)
    assert judged.reasons == {"not_messages": 1, "no_messages": 1}
    annotated = backend.preview(judged.annotated, 10).sort_by("id")
    assert annotated.column(REASON).to_pylist() == [None, "not_messages", None, None, "no_messages"]
    assert annotated["extra"].to_pylist() == [None, None, None, "a", "b"]
    expected = read_delta(source).sort_by("id")
    assert annotated["at"].to_pylist() == expected["at"].to_pylist()
    assert annotated["id"].to_pylist() == expected["id"].to_pylist()


def test_text_that_isnt_utf8_in_a_column_no_step_judges_is_written_as_it_is(tmp_path, engine, backend):
    """The outputs copy every source column: a bad byte outside the chat column doesn't fail the write."""
    source = tmp_path / "chats"
    note = _unchecked_strings([b"ok", b"caf\xe9", b"\xff"])
    write_deltalake(str(source), pa.table({"id": [1, 2, 3], "note": note, "messages": [GOOD.decode(), "[]", GOOD.decode()]}))
    result = run(job_config(tmp_path, str(source), engine, {}), backend)
    assert (result.quarantined, result.valid) == (1, 2)
    written = pa.concat_tables([read_delta(tmp_path / "quarantine").select(["id", "note"]), read_delta(tmp_path / "valid").select(["id", "note"])])
    assert written.sort_by("id").column("note").equals(read_delta(source).sort_by("id").column("note"))
