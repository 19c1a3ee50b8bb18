"""The README's Python examples run as written, and its printed report is what the code prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_readme_python_example_runs(n):
    # Blocks may build on the one before (the extract reads `validation`), as a reader would run them.
    namespace: dict = {}
    for block in BLOCKS[: n + 1]:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, f"README.md block {n + 1}", "exec"), namespace)


def test_readme_shows_what_the_first_example_prints():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(BLOCKS[0], "README.md block 1", "exec"), {})
    printed = out.getvalue().strip()
    shown = re.search(r"prints\n\n```\n(.*?)```", README.read_text(), flags=re.S).group(1).strip()
    assert printed == shown


def test_readme_gives_the_two_commands_first():
    text = README.read_text()
    assert text.index("make run") < text.index("## The Python API")
    assert text.index("make test") < text.index("## The Python API")


def test_every_test_the_promises_name_exists():
    section = README.read_text().split("## What we promise", 1)[1].split("\n## ", 1)[0]
    named = 0
    for row in section.splitlines():
        current = None
        for path, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", row):
            current = path or current
            assert current, f"a test named before its file in: {row}"
            text = (README.parent / current).read_text()
            if name:
                assert re.search(rf"^def {name}\(", text, flags=re.M), f"{current}::{name} isn't there"
            named += 1
    assert named >= 10
