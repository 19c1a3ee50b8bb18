"""Incremental runs (`--since last`): only the rows inserted since the last complete run of the same
check are read, on both engines, with and without Delta's change data feed.

On Spark, `make test` runs the store's own paths (appends, the change feed, a version pinned
while rows arrive); what the log's commits or the summary decide is shared by both stores, and
runs on Spark with the slow tests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate import first_problem
from chatgate.job import runner
from chatgate.job.runner import run
from chatgate.sample import chat_table
from job_helpers import SPARK_SLOW, engine_cases, job_config, read_delta

CHECKS = {"last_role": "assistant"}
CDF = {"delta.enableChangeDataFeed": "true"}


def _rows(start: int, count: int, seed: int) -> pa.Table:
    table = chat_table(count, seed=seed, defect_fraction=0.4)
    return table.set_column(0, "id", pa.array(range(start, start + count), pa.int64()))


def _append(source: str, start: int, count: int, seed: int, **kwargs) -> pa.Table:
    rows = _rows(start, count, seed)
    write_deltalake(source, rows, mode="append", **kwargs)
    return rows


def _since(tmp_path: Path, source: str, engine: str, backend, run_id: str, **overrides):
    return run(job_config(tmp_path, source, engine, CHECKS, run_id=run_id, since="last", **overrides), backend)


def _of_run(name: str, tmp_path: Path, run_id: str) -> list[dict]:
    return [row for row in read_delta(tmp_path / name).to_pylist() if row["pb_run_id_"] == run_id]


def _summary(tmp_path: Path, run_id: str) -> dict:
    [row] = [row for row in read_delta(tmp_path / "summary").to_pylist() if row["run_id"] == run_id]
    return row


def _assert_read_exactly(tmp_path: Path, run_id: str, rows: pa.Table) -> None:
    """The run read `rows` and nothing else: each failing one quarantined with its code, the rest valid."""
    expected = {r["id"]: first_problem(r["messages"], **CHECKS) for r in rows.to_pylist()}
    quarantined = {r["id"]: r["pb_reason_"] for r in _of_run("quarantine", tmp_path, run_id)}
    valid = {r["id"] for r in _of_run("valid", tmp_path, run_id)}
    assert quarantined == {i: code for i, code in expected.items() if code is not None}
    assert valid == {i for i, code in expected.items() if code is None}
    summary = _summary(tmp_path, run_id)
    assert summary["rows_read"] == summary["units"] == rows.num_rows == len(quarantined) + len(valid)


@pytest.fixture(params=["plain", "change data feed"])
def feed(request) -> dict:
    return CDF if request.param == "change data feed" else {}


def test_appends_are_read_once_each(tmp_path, engine, backend, feed):
    source = str(tmp_path / "chats")
    first = _append(source, 0, 80, 1, configuration=feed or None)
    _since(tmp_path, source, engine, backend, "r1")
    _assert_read_exactly(tmp_path, "r1", first)
    assert _summary(tmp_path, "r1")["scope"] == "full"

    new = pa.concat_tables([_append(source, 1000, 30, 2), _append(source, 2000, 20, 3)])
    _since(tmp_path, source, engine, backend, "r2")
    _assert_read_exactly(tmp_path, "r2", new)
    summary = _summary(tmp_path, "r2")
    assert (summary["scope"], summary["source_version_from"], summary["source_version"]) == ("changes", 0, 2)

    _since(tmp_path, source, engine, backend, "r3")  # nothing new
    assert (_summary(tmp_path, "r3")["scope"], _summary(tmp_path, "r3")["rows_read"]) == ("changes", 0)


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_compaction_between_runs_reads_no_row_twice(tmp_path, engine, backend):
    source = str(tmp_path / "chats")
    _append(source, 0, 60, 1)
    _since(tmp_path, source, engine, backend, "r1")
    new = _append(source, 1000, 25, 2)
    DeltaTable(source).optimize.compact()
    new = pa.concat_tables([new, _append(source, 2000, 15, 3)])
    _since(tmp_path, source, engine, backend, "r2")
    _assert_read_exactly(tmp_path, "r2", new)


@pytest.mark.parametrize(("engine", "change"), engine_cases([("delete",), ("update",)], spark_fast=1))
def test_an_update_or_delete_without_the_change_data_feed_makes_a_full_run_naming_the_commit(
    tmp_path, engine, backend, change, caplog
):
    source = str(tmp_path / "chats")
    _append(source, 0, 60, 1)
    _since(tmp_path, source, engine, backend, "r1")
    _append(source, 1000, 10, 2)
    table = DeltaTable(source)
    if change == "update":
        table.update({"id": "id + 100000"}, predicate="id = 3")
    else:
        table.delete("id = 3")
    _since(tmp_path, source, engine, backend, "r2")
    assert _summary(tmp_path, "r2")["scope"] == "full"
    assert f"commit 2 ({change.upper()}) deleted or rewrote rows, and the table has no change data feed" in caplog.text
    _assert_read_exactly(tmp_path, "r2", read_delta(source))


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_with_the_change_data_feed_updates_are_read_as_their_new_rows_and_deletes_add_none(tmp_path, engine, backend):
    source = str(tmp_path / "chats")
    _append(source, 0, 60, 1, configuration=CDF)
    _since(tmp_path, source, engine, backend, "r1")
    DeltaTable(source).delete("id = 5")
    DeltaTable(source).update({"id": "id + 100000"}, predicate="id = 3")
    _since(tmp_path, source, engine, backend, "r2")
    assert _summary(tmp_path, "r2")["scope"] == "changes"
    updated = read_delta(source).filter(pa.compute.equal(read_delta(source)["id"], 100003))
    _assert_read_exactly(tmp_path, "r2", updated)


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_change_of_options_or_no_earlier_run_makes_a_full_run(tmp_path, engine, backend, caplog):
    source = str(tmp_path / "chats")
    first = _append(source, 0, 50, 1)
    _since(tmp_path, source, engine, backend, "r1")
    assert "no earlier complete run of this check" in caplog.text
    whole = pa.concat_tables([first, _append(source, 1000, 10, 2)])
    run(job_config(tmp_path, source, engine, {"last_role": "assistant", "first_role": "user"}, run_id="r2", since="last"), backend)
    assert _summary(tmp_path, "r2")["scope"] == "full"
    assert _summary(tmp_path, "r2")["rows_read"] == whole.num_rows
    assert _summary(tmp_path, "r1")["fingerprint"] != _summary(tmp_path, "r2")["fingerprint"]


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_rows_appended_during_an_incremental_run_wait_for_the_next(tmp_path, engine, backend, monkeypatch):
    source = str(tmp_path / "chats")
    _append(source, 0, 40, 1)
    _since(tmp_path, source, engine, backend, "r1")
    new = _append(source, 1000, 20, 2)
    late: list[pa.Table] = []
    rows_to_read = runner._rows_to_read

    def append_meanwhile(*args, **kwargs):
        read = rows_to_read(*args, **kwargs)
        late.append(_append(source, 5000, 7, 3))  # committed after this run pinned its version
        return read

    monkeypatch.setattr(runner, "_rows_to_read", append_meanwhile)
    _since(tmp_path, source, engine, backend, "r2")
    monkeypatch.undo()
    _assert_read_exactly(tmp_path, "r2", new)
    _since(tmp_path, source, engine, backend, "r3")
    _assert_read_exactly(tmp_path, "r3", late[0])


def test_since_a_version_reads_the_rows_after_it(tmp_path, engine, backend):
    source = str(tmp_path / "chats")
    _append(source, 0, 30, 1)
    new = _append(source, 1000, 12, 2)
    run(job_config(tmp_path, source, engine, CHECKS, run_id="r1", since=0), backend)
    _assert_read_exactly(tmp_path, "r1", new)


@pytest.mark.parametrize("engine", SPARK_SLOW)
def test_a_retried_run_with_the_same_id_reads_what_its_first_attempt_read(tmp_path, engine, backend):
    source = str(tmp_path / "chats")
    _append(source, 0, 40, 1)
    _since(tmp_path, source, engine, backend, "r1")
    new = _append(source, 1000, 15, 2)
    _since(tmp_path, source, engine, backend, "r2")
    _since(tmp_path, source, engine, backend, "r2")  # the task retried: same range, its rows replaced
    _assert_read_exactly(tmp_path, "r2", new)
