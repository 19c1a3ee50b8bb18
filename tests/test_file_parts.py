"""The embedded engine reading a snapshot's files in parts, each part read and checked by a worker.

The stream split by files (`engines.ibis.split`, `engines.group_check`) must judge exactly as the
single stream does: same counts, codes, reasons order and rows annotated, on a lone chat column
with nulls and on a check of several columns; a part that fails falls back to the single stream.
"""

from __future__ import annotations

import logging

import duckdb
import ibis
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from chatgate.engines.group_check import ROWS_KEY
from chatgate.engines.ibis import stream
from chatgate.engines.ibis.duckdb import DuckDBEngine
from chatgate.engines.parquet_files import ROW_ID, parquet_view, view_parts
from chatgate.engines.workers import run_tasks
from chatgate.errors import ChatgateError
from chatgate.job.registry import store_for
from chatgate.job.runner import run
from chatgate.rules import ChatCheck, ChatFormat, DatasetCheck
from job_helpers import job_config, written_by
from test_engine_ibis import DEFAULT_EXAMPLES
from test_values_unreadable import BAD_UTF8, GOOD, _unchecked_strings

SPLIT_LOG = "each read and checked by a worker of its own"
FALLBACK_LOG = "checking one stream instead"


def _chats_in_files(path: str, files: int = 4, copies: int = 6) -> None:
    """Every code of the examples, nulls among them, in `files` Delta files of uneven sizes."""
    values = [value for _, value, _ in DEFAULT_EXAMPLES] * copies + [None] * 5
    bounds = [0, *sorted({len(values) * (i + 1) // (files + 1) + i for i in range(files - 1)}), len(values)]
    for a, b in zip(bounds, bounds[1:]):
        write_deltalake(path, pa.table({"id": list(range(a, b)), "messages": pa.array(values[a:b], pa.string())}),
                        mode="append")


def _pairs_in_files(path: str, files: int = 3) -> None:
    prompts = ["The sky is", None, "1 + 1 =", "", "Hi", None] * 8
    completions = [" blue.", "x", None, " 2", " there", None] * 8
    step = len(prompts) // files
    for i in range(files):
        rows = slice(i * step, (i + 1) * step if i < files - 1 else len(prompts))
        write_deltalake(path, pa.table({"id": list(range(len(prompts)))[rows], "prompt": prompts[rows],
                                        "completion": completions[rows]}), mode="append")


def _judged(path: str, check, *, workers: int, dedup: str, shape=None, kept: bool | None = None):
    """What the engine says of the table: counts, reasons, dedup and the annotated rows, whole.
    `kept`: whether the workers must have kept the failing rows whole (see `split`)."""
    engine = DuckDBEngine(con=ibis.duckdb.connect(), chunk_size=16, workers=workers, progress=False)
    table, _ = store_for(engine).open_source(path, None)
    judged = engine.judge_check(table if shape is None else shape(table), check, dedup=dedup)
    if kept is not None:
        assert judged.extra["failing_rows_kept"] is kept
    try:
        rows = judged.annotated.to_pyarrow().to_pylist()
    except UnicodeDecodeError:  # text that isn't UTF-8 in a row: its id and reason only
        rows = judged.annotated.select("id", judged.reason_column).to_pyarrow().to_pylist()
    annotated = sorted(((r["id"], r[judged.reason_column]), r) for r in rows)
    return (judged.units, judged.failed, list(judged.reasons.items()), judged.deduplicated, [a for a, _ in annotated],
            [r for _, r in annotated])


@pytest.mark.parametrize("na_pass", [False, True])
@pytest.mark.parametrize("dedup", ["off", "auto"])
def test_a_chat_column_read_in_parts_is_judged_as_in_one_stream(tmp_path, monkeypatch, caplog, dedup, na_pass):
    path = str(tmp_path / "chats")
    _chats_in_files(path, copies=6 if dedup == "off" else 1)  # auto: no repeats, no dedup
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat(na_pass=na_pass))
    one = _judged(path, check, workers=1, dedup=dedup)
    with caplog.at_level(logging.INFO, logger="chatgate"):
        parts = _judged(path, check, workers=3, dedup=dedup, kept=True)
    assert SPLIT_LOG in caplog.text and FALLBACK_LOG not in caplog.text
    assert parts == one and one[3] is False
    assert {code for _, _, code in DEFAULT_EXAMPLES if code} <= {reason for reason, _ in one[2]}


def test_a_check_of_several_columns_read_in_parts_is_judged_as_in_one_stream(tmp_path, monkeypatch, caplog):
    path = str(tmp_path / "pairs")
    _pairs_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = DatasetCheck("prompt_completion")
    one = _judged(path, check, workers=1, dedup="off")
    with caplog.at_level(logging.INFO, logger="chatgate"):
        parts = _judged(path, check, workers=2, dedup="off", kept=True)
    assert SPLIT_LOG in caplog.text and FALLBACK_LOG not in caplog.text
    assert parts == one and one[1] > 0


def test_deduplication_and_a_single_file_keep_one_stream(tmp_path, monkeypatch, caplog):
    many, single = str(tmp_path / "many"), str(tmp_path / "single")
    _chats_in_files(many)
    _chats_in_files(single, files=1)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    with caplog.at_level(logging.INFO, logger="chatgate"):
        assert _judged(many, check, workers=3, dedup="on") == _judged(many, check, workers=1, dedup="on")
        assert _judged(single, check, workers=3, dedup="off") == _judged(single, check, workers=1, dedup="off")
    assert SPLIT_LOG not in caplog.text


def test_a_part_that_fails_falls_back_to_one_stream(tmp_path, monkeypatch, caplog):
    """DuckDB refuses a file holding text that isn't UTF-8 in the worker too: the single stream
    then reads it as it does without parts (unchecked), and every row is judged."""
    path = str(tmp_path / "chats")
    write_deltalake(path, pa.table({"id": [1, 2], "messages": pa.array([GOOD.decode(), "[]"])}))
    write_deltalake(path, pa.table({"id": [3, 4], "messages": _unchecked_strings([BAD_UTF8["in-content"], GOOD])}),
                    mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    with caplog.at_level(logging.INFO, logger="chatgate"):
        parts = _judged(path, check, workers=2, dedup="off")
    assert FALLBACK_LOG in caplog.text
    assert parts[4] == [(1, None), (2, "no_messages"), (3, "not_messages"), (4, None)]


def test_the_parts_of_a_view_hold_its_rows_with_their_row_ids(tmp_path):
    """Each part is the whole view over fewer files: the same columns and types (a column some
    files lack is null there), and every row under the row id the whole view gives it."""
    files = []
    for i in range(5):
        columns = {"id": pa.array(range(i * 10, i * 10 + 3 + i), pa.int64())}
        if i % 2:
            columns["extra"] = pa.array([f"e{i}"] * (3 + i))
        path = tmp_path / f"f{i}.parquet"
        pq.write_table(pa.table(columns), path)
        files.append(str(path))
    con = ibis.duckdb.connect()
    whole = parquet_view(con, files, None, row_ids=True)
    expected = sorted(whole.to_pyarrow().to_pylist(), key=lambda r: r["id"])
    parts = view_parts(con, whole.get_name(), 3)
    assert parts is not None and len(parts) == 3
    assert sorted(f for part in parts for f in part.files) == sorted(files)
    rows = []
    for part in parts:
        worker = duckdb.connect()
        part.create(worker)
        rows += worker.sql(f'SELECT * FROM "{part.name}"').to_arrow_table().to_pylist()
        assert worker.sql(f'SELECT * FROM "{part.name}"').types == con.con.sql(f'SELECT * FROM "{part.name}"').types
    assert sorted(rows, key=lambda r: r["id"]) == expected
    assert len({r[ROW_ID] for r in rows}) == len(rows)


def test_a_view_of_one_file_or_read_unchecked_has_no_parts(tmp_path):
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), path)
    con = ibis.duckdb.connect()
    assert view_parts(con, parquet_view(con, [str(path)], None).get_name(), 4) is None
    assert view_parts(con, "no_such_view", 4) is None


class _Failing:
    """A task that fails in its worker, as a broken read would."""

    schema = pa.schema([("n", pa.int64())])

    def __call__(self, emit):
        emit(pa.record_batch({"n": [1]}, schema=self.schema), {ROWS_KEY: b"1"})
        raise RuntimeError("the read broke in file 3")


def test_a_task_that_fails_stops_the_run_in_one_line(monkeypatch):
    import pathlib

    monkeypatch.setenv("PYTHONPATH", str(pathlib.Path(__file__).parent))  # the worker imports this module
    with pytest.raises(ChatgateError, match="the read broke in file 3") as raised:
        list(run_tasks([_Failing(), _Failing()]))
    assert "\n" not in str(raised.value)


def test_the_job_reading_in_parts_writes_what_one_stream_writes(tmp_path, monkeypatch, caplog):
    source = str(tmp_path / "chats")
    _chats_in_files(source)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    outputs = {}
    for threads in (1, 2):
        config = job_config(tmp_path / f"threads{threads}", source, "duckdb", {}, threads=threads, dedup="off")
        with caplog.at_level(logging.INFO, logger="chatgate"):
            run(config)
        outputs[threads] = written_by(config)
    assert SPLIT_LOG in caplog.text and FALLBACK_LOG not in caplog.text
    assert outputs[2] == outputs[1]


def test_files_are_shared_out_by_size_and_remote_ones_are_left_to_one_stream(tmp_path):
    from chatgate.engines.parquet_files import _balanced, _local_sizes

    assert _balanced([90, 10, 50, 40, 10], 2) == [(0, 1), (2, 3, 4)]
    local = tmp_path / "a.parquet"
    local.write_bytes(b"1234")
    assert _local_sizes([str(local), f"file://{local}"]) == [4, 4]
    assert _local_sizes([str(local), "s3://bucket/b.parquet"]) is None
    assert _local_sizes([str(tmp_path / "gone.parquet")]) is None


def test_auto_dedups_a_stream_in_parts_only_when_nearly_every_row_repeats(tmp_path, monkeypatch):
    """Reading in parts scales with the workers, dedup doesn't: at 84% repeats the parts don't
    deduplicate (one stream would, `EMBEDDED_AUTO`), at 97% they do (`EMBEDDED_PARTS_AUTO`)."""
    from chatgate.engines import base

    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    for copies, repeats, dedup in ((6, 0.84, False), (30, 0.97, True)):
        path = str(tmp_path / f"chats{copies}")
        _chats_in_files(path, copies=copies)
        parts = _judged(path, check, workers=3, dedup="auto")
        assert parts[3] is dedup
        assert base.EMBEDDED_AUTO.decide(repeats) and base.EMBEDDED_PARTS_AUTO.decide(repeats) is dedup
        one = _judged(path, check, workers=1, dedup="on" if dedup else "off")
        assert parts == one


@pytest.mark.parametrize(
    "shape, split",
    [
        (lambda t: t.filter(t.id % 2 == 0).select("id", "messages"), True),  # each row on its own
        (lambda t: t.order_by("id").limit(40), False),  # the first rows of the whole table, not of each part
        (lambda t: t.filter(t.id > t.id.mean()), False),  # a reduction over every row
        (lambda t: t.distinct(), False),
    ],
)
def test_only_row_local_work_on_the_table_is_split(tmp_path, monkeypatch, caplog, shape, split):
    path = str(tmp_path / "chats")
    _chats_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    one = _judged(path, check, workers=1, dedup="off", shape=shape)
    with caplog.at_level(logging.INFO, logger="chatgate"):
        parts = _judged(path, check, workers=3, dedup="off", shape=shape)
    assert (SPLIT_LOG in caplog.text) is split and FALLBACK_LOG not in caplog.text
    # Reasons as counts: rows out of `distinct()` come in no set order, so ties may order either way.
    assert parts[:2] + (dict(parts[2]),) + parts[3:] == one[:2] + (dict(one[2]),) + one[3:]


def test_native_messages_and_a_table_where_nothing_fails(tmp_path, monkeypatch, caplog):
    """Native values join back on the value, never split; a part where nothing fails adds nothing."""
    native, passing = str(tmp_path / "native"), str(tmp_path / "passing")
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    for i in range(3):
        rows = [[{"role": "user", "content": f"hi {i}"}], [], None]
        write_deltalake(native, pa.table({"id": [3 * i, 3 * i + 1, 3 * i + 2],
                                          "messages": pa.array(rows, pa.list_(message))}), mode="append")
        write_deltalake(passing, pa.table({"id": [i], "messages": [GOOD.decode()]}), mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    assert _judged(native, check, workers=3, dedup="off") == _judged(native, check, workers=1, dedup="off")
    with caplog.at_level(logging.INFO, logger="chatgate"):
        parts = _judged(passing, check, workers=3, dedup="off")
    assert SPLIT_LOG in caplog.text and parts[1] == 0 and parts == _judged(passing, check, workers=1, dedup="off")


def test_a_folder_of_parquet_files_is_shared_out_as_duckdb_lists_it(tmp_path, monkeypatch, caplog):
    """DuckDB's glob reads hidden folders too (Python's skips them): the parts read what it reads."""
    from chatgate.stores.deltalake_tables import open_table

    folder = tmp_path / "chats"
    for i, where in enumerate(["a", ".hidden", "b"]):
        (folder / where).mkdir(parents=True)
        pq.write_table(pa.table({"id": [i], "messages": ["[]"]}), folder / where / "part.parquet")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    results = {}
    for workers in (1, 3):
        engine = DuckDBEngine(con=ibis.duckdb.connect(), workers=workers, progress=False)
        with caplog.at_level(logging.INFO, logger="chatgate"):
            judged = engine.judge(open_table(str(folder), con=engine.con), "messages", ChatFormat(), dedup="off")
        results[workers] = (judged.units, judged.failed, judged.reasons)
    assert SPLIT_LOG in caplog.text and FALLBACK_LOG not in caplog.text
    assert results[3] == results[1] == (3, 3, {"no_messages": 3})


def test_the_failing_rows_kept_by_the_workers_are_read_without_the_table(tmp_path, monkeypatch):
    """The workers keep the failing rows whole: DuckDB's plan for reading them (a quarantine)
    scans those rows alone, never the table's files; the passing rows are the table's."""
    path = str(tmp_path / "chats")
    _chats_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    engine = DuckDBEngine(con=ibis.duckdb.connect(), chunk_size=16, workers=2, progress=False)
    table, _ = store_for(engine).open_source(path, None)
    judged = engine.judge_check(table, ChatCheck("messages", ChatFormat()), dedup="off")
    assert judged.extra["failing_rows_kept"] is True

    def plan(rows) -> str:
        assert rows.to_pyarrow().num_rows  # run once: Ibis registers the kept rows then
        return str(engine.con.con.sql(f"EXPLAIN {engine.con.compile(rows)}").fetchall()).upper()

    failing = plan(engine.failing_rows(judged))
    assert "CHATGATE_KEPT" in failing and "PARQUET" not in failing
    assert "PARQUET" in plan(engine.where_reason(judged.annotated, judged.reason_column, present=False))


def test_failing_rows_past_the_budget_are_joined_back_as_before(tmp_path, monkeypatch):
    path = str(tmp_path / "chats")
    _chats_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    kept = _judged(path, check, workers=2, dedup="off", kept=True)
    monkeypatch.setattr(stream, "KEPT_ROWS_BYTES", 2000)
    assert _judged(path, check, workers=2, dedup="off", kept=False) == kept


def test_failing_rows_kept_whole_keep_every_column_and_type(tmp_path, monkeypatch):
    """Columns of many types around the chat column come back from the kept rows as the table has
    them; a chat column read as JSON text isn't read as it is, so its rows are joined back."""
    import datetime
    import decimal

    path = str(tmp_path / "typed")
    values = [value for _, value, _ in DEFAULT_EXAMPLES] + [None]
    for part in range(3):
        n = len(values)
        write_deltalake(path, pa.table({
            "id": pa.array(range(part * n, (part + 1) * n), pa.int64()),
            "messages": pa.array(values, pa.string()),
            "at": pa.array([datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)] * n, pa.timestamp("us", "UTC")),
            "day": pa.array([datetime.date(2026, 1, 2)] * n, pa.date32()),
            "price": pa.array([decimal.Decimal("1.25")] * n, pa.decimal128(10, 2)),
            "tags": pa.array([["a", None], None] * (n // 2) + [["b"]] * (n % 2), pa.list_(pa.string())),
            "meta": pa.array([{"k": 1, "v": "x"}] * n, pa.struct([("k", pa.int32()), ("v", pa.string())])),
            "flag": pa.array([True, None] * (n // 2) + [False] * (n % 2), pa.bool_()),
            "blob": pa.array([b"\x00\xff"] * n, pa.binary()),
            "score": pa.array([0.5, float("nan")] * (n // 2) + [1.0] * (n % 2), pa.float32()),
        }), mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    check = ChatCheck("messages", ChatFormat())
    one = _judged(path, check, workers=1, dedup="off")
    parts = _judged(path, check, workers=3, dedup="off", kept=True)
    assert str(parts) == str(one)  # NaN != NaN: the rows compare as text
    interval = ibis.interval(days=2)
    with_interval = lambda t: t.mutate(wait=interval)  # noqa: E731 - Ibis takes no Arrow interval
    parts = _judged(path, check, workers=3, dedup="off", shape=with_interval, kept=False)
    assert str(parts) == str(_judged(path, check, workers=1, dedup="off", shape=with_interval))


def _two_steps(path: str, workers: int, second: ChatCheck, dedup: str, first: str = "messages"):
    engine = DuckDBEngine(con=ibis.duckdb.connect(), chunk_size=16, workers=workers, progress=False)
    table, _ = store_for(engine).open_source(path, None)
    one = engine.judge_check(table, ChatCheck(first, ChatFormat()), dedup="off", reason_column="r1")
    assert one.extra["failing_rows_kept"] is (workers > 1)
    two = engine.judge_check(one.annotated, second, dedup=dedup, reason_column="r2")
    rows = sorted(map(str, two.annotated.to_pyarrow().to_pylist()))
    return two.units, two.failed, list(two.reasons.items()), two.deduplicated, rows


def test_a_second_step_deduplicates_over_the_kept_rows(tmp_path, monkeypatch):
    """Step 2 judges step 1's annotated table, the kept failing rows first: its dedup joins on row
    ids, with filters DuckDB pushes into the kept rows' scan (which an Arrow scan refuses)."""
    path = str(tmp_path / "chats")
    _chats_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    second = ChatCheck("messages", ChatFormat(allow_empty=True))
    assert _two_steps(path, 2, second, "on") == _two_steps(path, 1, second, "on")


def test_a_second_step_orders_tied_reasons_as_one_stream(tmp_path, monkeypatch):
    """Ties go by each reason's first row in the table's order (the engine's row ids), not in the
    order a plan over the kept rows reads them."""
    good, role, empty = GOOD.decode(), '[{"role": "bot", "content": "x"}]', "[]"
    a = [empty, empty, empty, empty, good, good, good, good]
    b = [empty, empty, good, good, role, role, good, good]
    path = str(tmp_path / "two")
    for k in range(2):
        rows = slice(4 * k, 4 * k + 4)
        write_deltalake(path, pa.table({"id": list(range(8))[rows], "a": a[rows], "b": b[rows]}), mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    second = ChatCheck("b", ChatFormat())
    one, two = (_two_steps(path, workers, second, "off", first="a") for workers in (1, 2))
    assert two == one and one[2] == [("unknown_role", 2), ("no_messages", 2)]


def _kept_where(tmp_path, monkeypatch, con) -> list[str]:
    """The files the workers of a run on `con` kept their failing rows in."""
    path = str(tmp_path / "chats")
    _chats_in_files(path)
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    kept_at: list[str] = []
    read_kept = stream._kept_rows
    monkeypatch.setattr(stream, "_kept_rows", lambda reads: kept_at.extend(r.kept.path for r in reads) or read_kept(reads))
    engine = DuckDBEngine(con=con, chunk_size=16, workers=2, progress=False)
    table, _ = store_for(engine).open_source(path, None)
    judged = engine.judge_check(table, ChatCheck("messages", ChatFormat()), dedup="off")
    assert judged.extra["failing_rows_kept"] is True and len(kept_at) == 2
    return kept_at


@pytest.mark.parametrize("spill", ["made", "there", None])
def test_the_kept_failing_rows_go_to_duckdbs_spill_folder(tmp_path, monkeypatch, spill):
    """The kept rows take up disk as a spill does: in DuckDB's temp_directory when it was set
    (--temp-dir), in the system's temp folder when it wasn't (never DuckDB's default, `.tmp` in
    the working folder); nothing is left behind, not even the folders made to hold them."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "spill" / "deeper"
    if spill == "there":
        folder.mkdir(parents=True)
    con = ibis.duckdb.connect(**({"temp_directory": str(folder)} if spill else {}))
    kept_at = _kept_where(tmp_path, monkeypatch, con)
    assert [str(folder) in p for p in kept_at] == [spill is not None] * 2
    assert not (tmp_path / ".tmp").exists()
    if spill == "there":
        assert not any(folder.iterdir())
    else:
        assert not (tmp_path / "spill").exists()


def test_a_database_files_own_spill_folder_is_left_to_duckdb(tmp_path, monkeypatch):
    """Beside a database file DuckDB spills to `<file>.tmp`, which it makes only when it spills:
    the kept rows go to the system's temp folder, and no such folder appears."""
    con = ibis.duckdb.connect(str(tmp_path / "work.db"))
    kept_at = _kept_where(tmp_path, monkeypatch, con)
    assert not any(str(tmp_path) in p for p in kept_at)
    assert not (tmp_path / "work.db.tmp").exists()


@pytest.mark.parametrize("why", ["a file", "not writable"])
def test_a_spill_folder_that_cant_be_used_leaves_the_kept_rows_in_the_system_temp_folder(tmp_path, monkeypatch, why):
    """A --temp-dir DuckDB never had to spill to may be a file or one that can't be written in (a
    read-only mount: permissions don't tell): the kept rows go to the system's temp folder instead
    of failing the run."""
    folder = tmp_path / "spill"
    con = ibis.duckdb.connect(temp_directory=str(folder))
    if why == "a file":
        folder.write_text("")
    else:
        folder.mkdir()
        mkdtemp = stream.tempfile.mkdtemp
        monkeypatch.setattr(
            stream.tempfile, "mkdtemp",
            lambda prefix=None, dir=None: _refused() if dir == str(folder) else mkdtemp(prefix=prefix, dir=dir),
        )
    kept_at = _kept_where(tmp_path, monkeypatch, con)
    assert not any(str(folder) in p for p in kept_at)


def _refused():
    raise PermissionError("read-only file system")
