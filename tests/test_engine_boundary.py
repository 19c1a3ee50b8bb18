"""Callers never ask which engine runs: outside lib/chatgate/engines/, no `isinstance` (or
`issubclass`, `type(...) is`) names an engine class; the engines answer through their methods."""

from __future__ import annotations

import ast
from pathlib import Path

import chatgate.engines as engines_package
from chatgate.engines.base import Engine

LIB = Path(__file__).resolve().parent.parent / "lib" / "chatgate"


def _engine_class_names() -> set[str]:
    """Every class deriving from Engine defined in lib/chatgate/engines (read from the source)."""
    names = {"Engine"}
    for path in (LIB / "engines").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Engine"):
                names.add(node.name)
    return names


def _named(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


def engine_questions() -> list[str]:
    engines = _engine_class_names()
    found = []
    for path in sorted(LIB.rglob("*.py")):
        if (LIB / "engines") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            asked = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
                asked = node.args[1] if len(node.args) > 1 else None
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq)) for op in node.ops):
                asked = node
            if asked is not None and _named(asked) & engines:
                found.append(f"{path.relative_to(LIB.parent)}:{node.lineno}")
    return found


def test_the_engine_classes_are_found():
    names = _engine_class_names()
    assert {"LocalEngine", "IbisEngine", "LakehouseEngine", "DuckDBEngine", "SparkEngine"} <= names
    assert issubclass(engines_package.Engine, object) and Engine.__name__ in names


def test_no_caller_asks_which_engine_runs():
    assert engine_questions() == []


def test_the_reason_column_has_one_name():
    assert not hasattr(engines_package, "REASON_COLUMN")
    assert "REASON_COLUMN" not in (LIB / "engines" / "base.py").read_text(encoding="utf-8")
