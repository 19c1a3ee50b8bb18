"""`chatgate.rules` is in rooms, one sub-package each, in layers (see its docstring): a room
imports only from its own room and from rooms of lower layers, every import counted (at the
top of a module, inside a function, under `if TYPE_CHECKING:`), and nothing of chatgate
outside the rules."""

from __future__ import annotations

import chatgate.rules

try:
    from test_import_cycles import import_graph
except ImportError:  # tests/ imported as a package
    from tests.test_import_cycles import import_graph

LAYERS = {
    "base": 0,
    "conversation": 1,
    "formats": 2,
    "trainers": 2,
    "check": 3,
    "location": 4,
    "datasets": 5,
    "repairs": 5,
}
"""Each room and its layer, as the package's docstring lists them."""

PACKAGE = "chatgate.rules"


def _room(module: str) -> str | None:
    """The room of a module of the rules (None: the package's face, `chatgate.rules` itself)."""
    rest = module.removeprefix(PACKAGE + ".")
    return None if module == PACKAGE else rest.split(".")[0]


def _rules_graph() -> dict[str, dict[str, int]]:
    return {name: arrows for name, arrows in import_graph().items() if name.startswith(PACKAGE)}


def test_every_module_is_in_a_room():
    for name in _rules_graph():
        assert name == PACKAGE or _room(name) in LAYERS, name


def test_the_docstring_lists_every_room_in_its_layer():
    doc = chatgate.rules.__doc__ or ""
    for room, layer in LAYERS.items():
        assert f"| {layer} | `{room}/` |" in doc, room


def test_a_room_imports_only_from_its_own_and_lower_layers():
    wrong = []
    for name, arrows in _rules_graph().items():
        room = _room(name)
        if room is None:
            continue
        for target, line in arrows.items():
            other = _room(target) if target.startswith(PACKAGE) else "outside"
            if other == room:
                continue
            if other not in LAYERS or other is None or LAYERS[other] >= LAYERS[room]:
                wrong.append(f"{name} (line {line}) imports {target}")
    assert not wrong, "\n".join(wrong)
