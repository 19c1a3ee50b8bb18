"""Public homes (issue 29, item 6): chatgate.read_delta and chatgate.spark_session, and a
benchmark that imports no private name of chatgate."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

import chatgate
from chatgate.stores.deltalake_tables import delta_source

ROOT = Path(__file__).resolve().parent.parent


def test_read_delta_reads_the_latest_version_or_the_one_asked(tmp_path):
    write_deltalake(str(tmp_path), pa.table({"id": [1, 2]}))
    write_deltalake(str(tmp_path), pa.table({"id": [3]}), mode="append")
    assert sorted(chatgate.read_delta(tmp_path).to_table().column("id").to_pylist()) == [1, 2, 3]
    assert sorted(chatgate.read_delta(str(tmp_path), version=0).to_table().column("id").to_pylist()) == [1, 2]
    assert type(chatgate.read_delta(tmp_path)) is type(delta_source(tmp_path))


def test_read_delta_refuses_what_isnt_a_delta_table(tmp_path):
    try:
        chatgate.read_delta(tmp_path)
    except ValueError as error:
        assert "isn't a Delta table" in str(error)
    else:  # pragma: no cover - the assertion's message
        raise AssertionError("read_delta read a folder that holds no Delta table")


def test_importing_chatgate_imports_neither_pyspark_nor_deltalake():
    code = "import sys, chatgate; print(sorted(m for m in ('pyspark', 'deltalake') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_spark_session_is_get_spark():
    import inspect

    from chatgate.engines.spark.session import get_spark

    ours = list(inspect.signature(chatgate.spark_session).parameters)
    assert ours == list(inspect.signature(get_spark).parameters)[: len(ours)]


def _private_chatgate_names(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chatgate"):
            found += [f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            if any(part.startswith("_") for part in (node.module or "").split(".")):
                found.append(f"{path.name}:{node.lineno} {node.module}")
    return found


def test_the_benchmark_imports_no_private_name():
    assert [name for path in sorted((ROOT / "bench").glob("*.py")) for name in _private_chatgate_names(path)] == []
