"""A Griffe extension for the API reference: a docstring's doctest examples shown as code.

chatgate's docstrings hold doctests (`>>>` lines, run by `make test`) in their prose, where
Markdown would read each `>>>` line as a nested quote. Each run of doctest lines, with the
output lines that follow it, is put in a fenced `pycon` block instead.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not inside:
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
