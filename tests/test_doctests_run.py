"""The library's docstring examples run with the suite: pytest collects lib/ with --doctest-modules."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pytest_runs_the_doctests_of_lib():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[tool.pytest.ini_options]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^testpaths = \[.*"lib".*\]$', section, re.M)
    assert re.search(r"^addopts = .*--doctest-modules", section, re.M)


def test_the_examples_are_found():
    """Every module with examples is collected (an import error would hide them)."""
    finder = doctest.DocTestFinder()
    modules = 0
    for path in sorted((ROOT / "lib" / "chatgate").rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        name = ".".join(path.relative_to(ROOT / "lib").with_suffix("").parts).removesuffix(".__init__")
        tests = finder.find(importlib.import_module(name))
        assert any(t.examples for t in tests), name
        modules += 1
    assert modules >= 20
