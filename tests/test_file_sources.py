"""Files as sources (issue 26 item 4): JSONL (plain, gzip, zstd), JSON arrays and Parquet, on both engines.

Every file is judged by stores/files.py, whichever engine reads it: a column per key of
any line, JSON text for anything but a string, `pb_line_` for where each row is, and a
line that isn't a JSON object a `not_messages` row rather than a failed read.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from deltalake import write_deltalake

from chatgate.errors import ChatgateError, ConfigError, SourceError
from chatgate.job.runner import run
from chatgate.names import FILE, LINE
from chatgate.stores.files import (
    array_items,
    cell,
    file_kind,
    line_items,
    nothing_there,
    parse_line,
    split_lines,
)
from job_helpers import SPARK_SLOW, engine_cases, job_config, read_delta

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"

GOOD = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
PARTS = [
    {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
]

# Line: what it is (the line numbers count the blank line 3).
LINES = [
    json.dumps({"id": 1, "messages": GOOD}),  # 1: string contents
    json.dumps({"id": 2, "messages": PARTS}),  # 2: lists of parts
    "",  # 3: blank: no row
    json.dumps(GOOD),  # 4: a bare list: not_messages
    '{"id": 5, "messages": [',  # 5: invalid JSON: not_messages
    json.dumps({"id": 6, "messages": json.dumps(GOOD)}),  # 6: the chat as a JSON string
    json.dumps({"id": 7, "messages": []}),  # 7: fails a rule
    "   ",  # 8: blank too
    json.dumps({"id": 9, "messages": GOOD, "late": {"k": [1, 2]}, "score": 0.5, "ok": True}),  # 9: late keys
]
FAILING = {4: "not_messages", 5: "not_messages", 7: "no_messages"}
PASSING = {1, 2, 6, 9}


def _write(path: Path, lines: list[str]) -> str:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return str(path)


def _verdicts(config) -> dict[int, str]:
    quarantine = read_delta(config.outputs.quarantine)
    return dict(zip(quarantine[LINE].to_pylist(), quarantine["pb_reason_"].to_pylist()))


# --- the parser alone ------------------------------------------------------------------------


def test_lines_split_at_newlines_only_whatever_the_reads():
    data = b'{"a": 1}\r\n\n{"b": "x\\ny"}\n' + b"x" * 50 + b"\nlast"
    for size in (1, 3, 7, 1000):
        assert list(split_lines(io.BytesIO(data), size)) == [b'{"a": 1}\r', b"", b'{"b": "x\\ny"}', b"x" * 50, b"last"]
    assert list(split_lines(io.BytesIO(b"a\n"), 1)) == [b"a"]
    assert list(split_lines(io.BytesIO(b""), 4)) == []


def test_a_line_is_an_object_a_bad_row_or_nothing():
    assert parse_line(b'  {"a": 1}\r') == {"a": 1}
    assert parse_line(b" \t\r") is None
    assert parse_line(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # a byte order mark at the file's start
    bare = parse_line(b'[{"role": "user"}]')
    assert (bare.what, bare.text, bare.cell) == ("a JSON array, not an object", '[{"role": "user"}]', '"[{\\"role\\": \\"user\\"}]"')
    assert parse_line(b"{nope").what == "invalid JSON"
    assert parse_line(b'{"a": "\xff"}').what == "text that isn't UTF-8"
    assert [n for n, _ in line_items([b"{}", b"", b"{}"])] == [1, 3]


def test_a_cell_is_a_string_as_it_is_and_anything_else_as_json_text():
    assert [cell(v) for v in ("Hi", None, 3, 0.5, True, [1, "é"], {"k": None})] == [
        "Hi", None, "3", "0.5", "true", '[1, "é"]', '{"k": null}'
    ]
    assert cell(["\ud800"]) == '["\\ud800"]'  # a lone surrogate, escaped: it reads back the same


def test_a_json_array_is_read_element_by_element_whatever_the_reads():
    text = '\ufeff [ {"a": 1}, [2], 123456 , {"b": "]"} ]\n'.encode()
    for size in (1, 2, 5, 1000):
        items = list(array_items(io.BytesIO(text), "x.json", size))
        assert [(n, getattr(i, "what", i)) for n, i in items] == [
            (1, {"a": 1}), (2, "a JSON array, not an object"), (3, "a JSON number, not an object"), (4, {"b": "]"})
        ]
        assert items[2][1].text == "123456"  # read whole, though a read ended inside it
    assert list(array_items(io.BytesIO(b"[]"), "x.json")) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b'{"a": 1}', "starts with an object; for one object a line, name it .jsonl"),
        (b"", "starts with nothing"),
        (b'[{"a": 1}, {"b": ', "invalid JSON in element 2"),
        (b'[{"a": 1} {"b": 2}]', "invalid JSON after element 1"),
        (b'[{"a": 1}] [', "text follows its JSON array's closing ']' (after element 1)"),
    ],
)
def test_a_json_file_that_isnt_one_array_is_one_line(text, message):
    with pytest.raises(SourceError, match=re.escape(message)):
        list(array_items(io.BytesIO(text), "x.json", 4))


def test_a_file_is_streamed_in_batches(tmp_path):
    from chatgate.stores.files import BATCH_ROWS
    from chatgate.stores.files_duckdb import file_batches

    path = _write(tmp_path / "many.jsonl.gz", [json.dumps({"messages": GOOD, "n": i}) for i in range(2 * BATCH_ROWS + 5)])
    reader = file_batches(path)
    assert [reader.read_next_batch().num_rows for _ in range(3)] == [BATCH_ROWS, BATCH_ROWS, 5]


def test_file_kinds_by_name():
    assert [file_kind(n) for n in ("a.JSONL", "a.jsonl.gz", "a.jsonl.zst", "a.json", "a.csv", "a.parquet")] == [
        file_kind("a.jsonl"), file_kind("b.jsonl.gz"), file_kind("c.jsonl.zst"), file_kind("d.json"), None, None
    ]
    assert file_kind("a.jsonl.gz").compression == "gzip" and file_kind("a.json").array


# --- the job, on both engines ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_jsonl_rows_keep_their_line_numbers_to_the_quarantine(tmp_path, engine, backend, suffix):
    path = _write(tmp_path / f"chats{suffix}", LINES)
    config = job_config(tmp_path, path, engine, {})
    result = run(config, backend)
    assert (result.steps[0].judged.units, result.quarantined, result.valid) == (7, 3, 4)
    assert _verdicts(config) == FAILING
    valid = read_delta(config.outputs.valid).sort_by(LINE)
    assert valid[LINE].to_pylist() == sorted(PASSING)
    # A key that only the last line has is a column; values are text, JSON text unless a string.
    assert valid.column_names[:6] == ["id", "messages", "late", "score", "ok", LINE]
    assert valid["late"].to_pylist() == [None, None, None, '{"k": [1, 2]}']
    assert valid["ok"].to_pylist() == [None, None, None, "true"]
    assert valid["messages"].to_pylist()[2] == json.dumps(GOOD)  # a JSON string, kept as the string
    quarantine = read_delta(config.outputs.quarantine).sort_by(LINE)
    assert quarantine["messages"].to_pylist()[:2] == [json.dumps(json.dumps(GOOD)), json.dumps('{"id": 5, "messages": [')]


def test_a_json_array_numbers_its_elements(tmp_path, engine, backend):
    path = tmp_path / "chats.json"
    path.write_text(json.dumps([{"messages": GOOD}, GOOD, {"messages": PARTS, "extra": 1}, "text"], indent=2))
    config = job_config(tmp_path, str(path), engine, {})
    run(config, backend)
    assert _verdicts(config) == {2: "not_messages", 4: "not_messages"}
    assert sorted(read_delta(config.outputs.valid)["extra"].to_pylist(), key=str) == ["1", None]


def test_a_folder_of_files_names_each_rows_file(tmp_path, engine, backend):
    folder = tmp_path / "shards"
    (folder / "more").mkdir(parents=True)
    _write(folder / "a.jsonl", LINES[:5])
    _write(folder / "more" / "b.jsonl.gz", [json.dumps({"messages": GOOD}), json.dumps([1])])
    (folder / "c.json").write_text(json.dumps([{"messages": "nope"}]))
    (folder / "_SUCCESS").write_text("")
    (folder / "notes.txt").write_text("not a source file")
    config = job_config(tmp_path, str(folder), engine, {})
    run(config, backend)
    quarantine = read_delta(config.outputs.quarantine)
    found = sorted(zip(quarantine[FILE].to_pylist(), quarantine[LINE].to_pylist(), quarantine["pb_reason_"].to_pylist()))
    assert found == [
        ("a.jsonl", 4, "not_messages"), ("a.jsonl", 5, "not_messages"),
        ("c.json", 1, "not_messages"), ("more/b.jsonl.gz", 2, "not_messages"),
    ]
    assert sorted(read_delta(config.outputs.valid)[FILE].to_pylist()) == ["a.jsonl", "a.jsonl", "more/b.jsonl.gz"]


def test_parquet_files_and_folders_are_sources(tmp_path, engine, backend):
    rows = pa.table({"id": [1, 2], "messages": [json.dumps(GOOD), "[]"]})
    pq.write_table(rows, tmp_path / "chats.parquet")
    (tmp_path / "folder").mkdir()
    pq.write_table(rows, tmp_path / "folder" / "part-0.parquet")
    pq.write_table(rows, tmp_path / "folder" / "part-1.parquet")
    single = run(job_config(tmp_path / "one", str(tmp_path / "chats.parquet"), engine, {}), backend)
    assert (single.steps[0].judged.units, single.quarantined) == (2, 1)
    folder = run(job_config(tmp_path / "many", str(tmp_path / "folder"), engine, {}), backend)
    assert (folder.steps[0].judged.units, folder.quarantined) == (4, 2)


def test_a_source_version_of_a_file_is_refused_in_one_line(tmp_path, engine, backend):
    path = _write(tmp_path / "chats.jsonl", LINES)
    with pytest.raises(ConfigError, match=r"'.*chats.jsonl' is a file source, which has no versions: source_version needs a Delta table"):
        run(job_config(tmp_path, path, engine, {}, source_version=0), backend)


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_since_last_on_a_file_reads_it_whole(tmp_path, engine, backend, caplog):
    path = _write(tmp_path / "chats.jsonl", LINES)
    for run_id in ("run-1", "run-2"):
        result = run(job_config(tmp_path, path, engine, {}, since="last", run_id=run_id), backend)
        assert result.steps[0].judged.units == 7
    assert "the source isn't a Delta table, so it has no versions to compare: a full run" in caplog.text


@pytest.mark.parametrize(
    ("given", "guess"),
    [("chat.jsonl", "chats.jsonl"), ("lake/chat", "lake/chats"), ("lake/zzz", None), ("nowhere/chats", None)],
)
def test_a_source_that_isnt_there_gets_the_nearest_name_beside_it(tmp_path, engine, backend, given, guess):
    _write(tmp_path / "chats.jsonl", LINES)
    write_deltalake(str(tmp_path / "lake" / "chats"), pa.table({"messages": ["[]"]}))
    with pytest.raises(SourceError) as caught:
        run(job_config(tmp_path / "out", str(tmp_path / given), engine, {}), backend)
    hint = "" if guess is None else f"; did you mean {str(tmp_path / guess)!r}?"
    assert str(caught.value) == f"can't read the source {str(tmp_path / given)!r}: no file or folder is there{hint}"


def test_the_guess_keeps_a_file_scheme_and_skips_hidden_names(tmp_path):
    (tmp_path / "chats").mkdir()
    (tmp_path / ".chat").mkdir()
    assert nothing_there(f"file://{tmp_path}/chat") == f"no file or folder is there; did you mean 'file://{tmp_path}/chats'?"
    (tmp_path / "chats").rmdir()
    assert nothing_there(str(tmp_path / "chat")) == "no file or folder is there"
    assert nothing_there(str(tmp_path / ".cha")) == f"no file or folder is there; did you mean {str(tmp_path / '.chat')!r}?"
    assert nothing_there("s3://bucket/chat") == "no file or folder is there"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.jsonl", None, "no file or folder is there"),
        ("empty.jsonl", "", r"it holds no rows \(empty, or blank lines only\), so it has no columns to check"),
        ("blank.jsonl.gz", "\n\n", "it holds no rows"),
        ("lists.jsonl", "[1]\n[2]\n", r"none of its 2 rows is a JSON object \(row 1 is a JSON array, not an object\)"),
        ("ours.jsonl", '{"messages": "[]", "PB_LINE_": 1}\n', "its key 'PB_LINE_' is a column chatgate adds"),
        ("cases.jsonl", '{"messages": "[]"}\n{"Messages": "[]"}\n', "its keys 'messages' and 'Messages' differ only in case"),
        ("object.json", '{"messages": []}', "starts with an object"),
        ("broken.jsonl.gz", "x", "can't read the source"),
    ],
)
def test_file_source_errors_are_one_line(tmp_path, engine, backend, name, content, message):
    path = tmp_path / name
    if content is not None:
        if name == "broken.jsonl.gz":
            path.write_bytes(b"\x1f\x8b not gzip at all")
        else:
            _write(path, [content]) if name.endswith(".gz") else path.write_text(content)
    with pytest.raises(ChatgateError, match=message) as caught:
        run(job_config(tmp_path / "out", str(path), engine, {}), backend)
    assert "\n" not in str(caught.value)
    assert str(path) in str(caught.value) or name in str(caught.value)


def test_an_unknown_extension_names_the_accepted_ones(tmp_path, engine, backend):
    path = tmp_path / "chats.csv"
    path.write_text("messages\n[]\n")
    with pytest.raises(SourceError, match=r"\.jsonl, \.jsonl\.gz, \.jsonl\.zst, \.json \(an array of objects\) or \.parquet"):
        run(job_config(tmp_path / "out", str(path), engine, {}), backend)


# --- real files, the same verdicts as the same rows in a Delta table ------------------------


def _as_delta(tmp_path: Path, rows: list, name: str) -> str:
    """The file's rows as the rule says (JSON text unless a string), numbered, in a Delta table."""
    keys = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
    table = {k: [cell(row.get(k)) if isinstance(row, dict) else json.dumps(json.dumps(row)) for row in rows] for k in keys}
    table[LINE] = list(range(1, len(rows) + 1))
    path = str(tmp_path / name)
    write_deltalake(path, pa.table({k: pa.array(v, pa.int64() if k == LINE else pa.string()) for k, v in table.items()}))
    return path


REAL_FILES = [
    ("fastchat/dummy_conversation.json", "conversations", {"sharegpt": True}),
    ("mistral-finetune/readme_examples.jsonl", "messages", {}),
    ("llamafactory/kto_en_demo.json", "messages", {}),
    ("llamafactory/mllm_demo.json", "messages", {}),
    ("llamafactory/v1_sft_demo.jsonl", "messages", {}),
    ("xtuner/qwen35_tokenize_data.jsonl", "messages", {}),
]


# On Spark, a JSON array and a JSONL file in `make test`.
@pytest.mark.parametrize(("engine", "name", "column", "checks"), engine_cases(REAL_FILES, spark_fast=2))
def test_real_files_judge_as_their_rows_do(tmp_path, engine, backend, name, column, checks):
    path = CORPUS / name
    text = path.read_text("utf-8")
    rows = json.loads(text) if name.endswith(".json") else [json.loads(line) for line in text.splitlines() if line.strip()]
    assert all(line.strip() for line in text.splitlines()) or name.endswith(".json")  # line numbers = row numbers
    reference = job_config(tmp_path / "ref", _as_delta(tmp_path, rows, "ref_table"), engine, {**checks}, columns=[column])
    config = job_config(tmp_path / "file", str(path), engine, {**checks}, columns=[column])
    expected, result = run(reference, backend), run(config, backend)
    assert result.steps[0].judged.units == len(rows)
    assert (result.steps[0].judged.reasons, result.quarantined) == (expected.steps[0].judged.reasons, expected.quarantined)
    assert _verdicts(config) == _verdicts(reference)


def test_a_file_of_bare_lists_says_it_has_no_objects(tmp_path, engine, backend):
    path = str(CORPUS / "xtuner" / "openai_sft.jsonl")
    with pytest.raises(SourceError, match=r"none of its 20 rows is a JSON object \(row 1 is a JSON array, not an object\)"):
        run(job_config(tmp_path, path, engine, {}), backend)


@pytest.mark.spark
def test_both_engines_give_a_file_the_same_verdicts(tmp_path, spark):
    from chatgate.engines.ibis.duckdb import DuckDBEngine
    from chatgate.engines.spark import SparkEngine

    extra = ["\ufeffnot json", json.dumps({"messages": [{"role": "tool"}]}) + "\r", json.dumps({"messages": None}), "\r"]
    lines = [*LINES, *extra] * 3
    path = _write(tmp_path / "chats.jsonl.zst", lines)
    found = {}
    for name, engine in (("duckdb", DuckDBEngine()), ("spark", SparkEngine(spark=spark))):
        config = job_config(tmp_path / name, path, name, {}, turns="all")
        run(config, engine)
        quarantine = read_delta(config.outputs.quarantine)
        found[name] = sorted(
            zip(quarantine[LINE].to_pylist(), quarantine["pb_reason_"].to_pylist(), quarantine["messages"].to_pylist(), strict=True),
            key=str,
        )
    assert found["duckdb"] == found["spark"]
    assert len(found["duckdb"]) == 3 * 6


@pytest.mark.spark
def test_spark_numbers_lines_across_splits(tmp_path, spark):
    from chatgate.stores.files_spark import open_files_spark

    path = tmp_path / "big.jsonl"
    lines = [json.dumps({"i": i, "messages": GOOD}) if i % 7 else "" for i in range(1, 20_001)]
    _write(path, lines)
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "64k")
    try:
        table = open_files_spark(spark, str(path))
        assert table.rdd.getNumPartitions() > 5
        rows = table.select("i", LINE).toArrow()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    pairs = list(zip(rows["i"].to_pylist(), rows[LINE].to_pylist()))
    assert len(pairs) == 20_000 - 20_000 // 7
    assert all(int(i) == line for i, line in pairs)


def test_a_spark_without_zstd_says_how_to_read_the_file():
    from chatgate.stores.files_spark import zstd_refusal

    hadoop = RuntimeError(
        "java.lang.RuntimeException: native zStandard library not available: "
        "this version of libhadoop was built without zstd support."
    )
    refusal = zstd_refusal("s3://b/chats.jsonl.zst", hadoop)
    assert str(refusal) == (
        "can't read the source 's3://b/chats.jsonl.zst': this Spark's Hadoop can't decompress .zst files; "
        "decompress it first (zstd -d), or gzip it (.jsonl.gz), or check it with --engine duckdb"
    )
    assert zstd_refusal("chats.jsonl.gz", hadoop) is None
    assert zstd_refusal("chats.jsonl.zst", RuntimeError("Path does not exist")) is None


# --- the command line -------------------------------------------------------------------------


def test_the_cli_checks_a_jsonl_file(tmp_path):
    _write(tmp_path / "chats.jsonl", LINES)
    done = subprocess.run(
        [sys.executable, "-m", "chatgate", "run", "--source", "chats.jsonl", "--column", "messages",
         "--quarantine", "q", "--summary", "s"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "neither a Delta table" not in done.stderr
    assert _verdicts_at(tmp_path / "q") == FAILING
    assert read_delta(tmp_path / "s")["units"].to_pylist() == [7]


def _verdicts_at(path: Path) -> dict[int, str]:
    quarantine = read_delta(path)
    return dict(zip(quarantine[LINE].to_pylist(), quarantine["pb_reason_"].to_pylist()))
