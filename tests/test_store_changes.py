"""Which files a range of Delta commits appended, read from logs that deltalake writes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from chatgate.stores.changes import appended_files, commit_actions


def _commits(table: Path, first: int, last: int) -> list[tuple[int, list[dict]]]:
    return [
        (version, commit_actions((table / "_delta_log" / f"{version:020d}.json").read_text()))
        for version in range(first, last + 1)
    ]


@pytest.fixture
def table(tmp_path) -> Path:
    for n in range(3):  # versions 0, 1, 2
        write_deltalake(str(tmp_path / "t"), pa.table({"a": [n, n + 10]}), mode="append")
    return tmp_path / "t"


def test_appends_are_read_as_the_files_they_added(table):
    appends = appended_files(_commits(table, 1, 2))
    assert appends.not_appends is None
    assert [f.version for f in appends.files] == [1, 2]
    assert appends.rows == 4
    assert all((table / f.path).is_file() for f in appends.files)


def test_a_compaction_between_appends_adds_no_rows(table):
    DeltaTable(str(table)).optimize.compact()  # version 3
    write_deltalake(str(table), pa.table({"a": [99]}), mode="append")  # version 4
    appends = appended_files(_commits(table, 3, 4))
    assert [(f.version, f.rows) for f in appends.files] == [(4, 1)]


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda t: DeltaTable(str(t)).delete("a = 1"), "commit 3 (DELETE) deleted or rewrote rows"),
        (lambda t: DeltaTable(str(t)).update({"a": "a + 1"}, predicate="a = 1"), "commit 3 (UPDATE) deleted or rewrote rows"),
        (lambda t: write_deltalake(str(t), pa.table({"a": [5]}), mode="overwrite"), "commit 3 (WRITE) deleted or rewrote rows"),
    ],
)
def test_a_commit_that_deleted_or_rewrote_rows_is_named(table, change, why):
    change(table)
    write_deltalake(str(table), pa.table({"a": [7]}), mode="append")
    assert appended_files(_commits(table, 1, 4)).not_appends == why


def test_partition_values_and_escaped_paths_are_kept(tmp_path):
    path = tmp_path / "p"
    write_deltalake(str(path), pa.table({"a": [1], "day": ["2026-12-04 10:00"]}), partition_by=["day"])
    [added] = appended_files(_commits(path, 0, 0)).files
    assert added.partition_values == {"day": "2026-12-04 10:00"}
    assert (path / added.path).is_file()


def test_a_deletion_vector_or_column_mapping_in_the_range_is_named():
    dv = {"add": {"path": "f.parquet", "dataChange": True, "deletionVector": {"storageType": "u"}}}
    mapping = {"metaData": {"configuration": {"delta.columnMapping.mode": "name"}}}
    info = {"commitInfo": {"operation": "DELETE"}}
    assert appended_files([(4, [info, dv])]).not_appends == "commit 4 (DELETE) deleted rows through a deletion vector"
    assert "set column mapping (name mode)" in (appended_files([(5, [mapping])]).not_appends or "")
