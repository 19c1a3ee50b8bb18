"""No import circles in lib/chatgate: every import counts, at the top of a module, inside a
function (a deferred import) or under `if TYPE_CHECKING:`, relative imports resolved.

An import names the module it imports: `from .a import b` is an arrow to `a.b` when that is
a module, else to `a`; `import a.b` is an arrow to `a.b`. (A package's `__init__` running
first is Python's doing, not an arrow of the importing module.)
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parent.parent / "lib"
PACKAGE = "chatgate"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package)."""
    found = {}
    for path in sorted((LIB / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(LIB).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _arrows(name: str, path: Path, is_package: bool, modules: set[str]) -> dict[str, int]:
    """The package's modules that module `name` imports, each with the line of its first import."""
    here = name if is_package else name.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                for alias in node.names
            ]
        for target in targets:
            if target in modules and target != name:
                out.setdefault(target, node.lineno)
    return out


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: line}, over every module of lib/chatgate."""
    modules = _modules()
    names = set(modules)
    return {name: _arrows(name, path, is_package, names) for name, (path, is_package) in modules.items()}


def _strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's components of more than one module (an arrow to itself is dropped above)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _a_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """One shortest circle through the first module of a component, as a path back to it."""
    inside = set(component)
    start = component[0]
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v]):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if w not in came:
                came[w] = v
                queue.append(w)
    raise AssertionError(f"no circle in {component}")  # pragma: no cover - a component has one


def describe_cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each circle of `graph` as 'a (line n) -> b (line m) -> a'."""
    out = []
    for component in _strongly_connected(graph):
        cycle = _a_cycle(graph, component)
        steps = [f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
        out.append(" -> ".join([*steps, cycle[-1]]) + f"   [modules in the knot: {', '.join(component)}]")
    return out


def test_the_walk_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "chatgate.rules.check.judge" in graph["chatgate.rules.check.reference"]  # top level, relative
    assert "chatgate.runreport.tabular" in graph["chatgate.validate"]  # inside a function
    assert "chatgate.engines.base" in graph["chatgate.report"]  # under TYPE_CHECKING
    assert "chatgate.engines.spark" in graph["chatgate.engines"]  # a submodule by from-import


def test_the_search_names_a_circle() -> None:
    graph = {"a": {"b": 3}, "b": {"c": 5}, "c": {"a": 7, "d": 1}, "d": {}}
    assert describe_cycles(graph) == [
        "a (line 3) -> b (line 5) -> c (line 7) -> a   [modules in the knot: a, b, c]"
    ]


def test_no_import_cycles() -> None:
    cycles = describe_cycles(import_graph())
    if cycles:
        pytest.fail("import circles in lib/chatgate:\n" + "\n".join(cycles))
