"""Engines compute, stores read and write tables, and the registry pairs them: a new store is
one module and one registry entry, which the CLI, the config and the runner pick up."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from deltalake import write_deltalake

from chatgate.cli import build_parser, main
from chatgate.engines.lakehouse import LakehouseEngine
from chatgate.errors import ConfigError
from chatgate.job import registry
from chatgate.job.config import build_config
from chatgate.sample import chat_table
from chatgate.stores.base import TableStore
from chatgate.stores.deltalake_store import DeltalakeStore
from job_helpers import read_delta

LIB = Path(__file__).resolve().parent.parent / "lib" / "chatgate"
STORAGE_METHODS = {"open_source", "target_schema", "replace_run", "write_arrow", "delete_run", "is_conflict", "changes"}


def _imported_modules(path: Path) -> set[str]:
    """The modules `path` imports, relative ones resolved against lib/, those inside functions too."""
    package = ".".join(path.relative_to(LIB.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            found.add(".".join(part for part in (base, node.module or "") if part))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_engines_never_import_a_store_or_a_table_library():
    for path in sorted((LIB / "engines").rglob("*.py")):
        imported = _imported_modules(path)
        assert not {m for m in imported if m.startswith("chatgate.stores") or m.split(".")[0] == "deltalake"}, path


def test_engines_have_no_storage_methods_and_stores_promise_them():
    assert not STORAGE_METHODS & set(dir(LakehouseEngine))
    assert STORAGE_METHODS.issubset(TableStore.__abstractmethods__)
    for name in STORAGE_METHODS:
        assert getattr(TableStore, name).__doc__, f"TableStore.{name} says what every store must promise"


def test_the_cli_offers_each_backend_with_its_line_of_help():
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices["run"]._actions if "--engine" in a.option_strings)
    assert list(run.choices) == list(registry.BACKENDS)
    for name, backend in registry.BACKENDS.items():
        assert f"{name}: {backend.description}" in run.help


def test_an_unknown_backend_is_one_line_naming_the_known_ones():
    with pytest.raises(ConfigError, match=r"engine: 'iceberg' isn't one of \['duckdb', 'spark'\]"):
        build_config({"engine": "iceberg"}, {"source": "chats", "columns": ["messages"], "quarantine": "q", "summary": "s"})


class RecordingStore(DeltalakeStore):
    """A store for "another format": here deltalake's, recording what the run asks of it."""

    name = "recording"

    def __init__(self, con):
        super().__init__(con)
        self.asked: list[str] = []

    def open_source(self, source, version):
        self.asked.append("open_source")
        return super().open_source(source, version)

    def replace_run(self, table, target, run_id_column, run_id):
        self.asked.append("replace_run")
        return super().replace_run(table, target, run_id_column, run_id)

    def write_arrow(self, rows, target, run_id_column, run_id):
        self.asked.append("write_arrow")
        super().write_arrow(rows, target, run_id_column, run_id)


def test_a_store_added_with_one_registry_entry_runs_the_job_from_the_cli(tmp_path, monkeypatch, capsys):
    stores: list[RecordingStore] = []

    def make_store(engine):
        stores.append(RecordingStore(engine.con))
        return stores[-1]

    duckdb = registry.BACKENDS["duckdb"]
    monkeypatch.setitem(
        registry.BACKENDS,
        "recorded",
        registry.Backend("duckdb", "recording", "Delta, every call recorded", duckdb.make_engine, make_store),
    )
    write_deltalake(str(tmp_path / "chats"), chat_table(120, seed=3, defect_fraction=0.3))
    flags = ["--source", str(tmp_path / "chats"), "--column", "messages", "--last-role", "assistant"]
    outputs = ["--quarantine", str(tmp_path / "q"), "--summary", str(tmp_path / "s"), "--run-id", "r1", "--quiet"]
    assert main(["run", "--engine", "recorded", *flags, *outputs]) in (0, 3)
    [store] = stores
    assert store.asked == ["open_source", "replace_run", "write_arrow"]
    summary = read_delta(tmp_path / "s").to_pylist()
    assert [row["engine"] for row in summary] == ["recorded"]
    assert read_delta(tmp_path / "q").num_rows == summary[0]["failed"] > 0
    assert "recorded: Delta, every call recorded" in registry.engine_help()
