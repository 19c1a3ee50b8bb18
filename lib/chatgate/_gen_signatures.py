"""Write out the signatures of the public functions and the step methods, from the spec.

    .venv/bin/python -m chatgate._gen_signatures          # rewrite the generated modules
    .venv/bin/python -m chatgate._gen_signatures --check  # exit 1 when they differ from the spec

(`make signatures` runs the first.) The spec stays the one declaration:

- each option of the check is a field of `ChatFormat` (name, type, default, help);
- the step methods' settings are the fields of `StepSettings` (`POSITIONAL_SETTINGS` may
  also be given by position, as pointblank takes them);
- each step method's own parameters are those of its implementation in `Validate`
  (`_add_chat_format`, ...), each public function's those of the function it calls
  (`rules.first_problem`, `gate.annotate`, ...) besides its options.

From them come `step_methods.py` (`StepMethods`, which `Validate` inherits), `functions.py`
(the package's `first_problem` and `check_batch`) and `gating.py` (its `annotate` and
`split`): every parameter written out with its type and default, so that mypy, pyright,
IDEs and `help()` read them, and a misspelt option is a type error. A parameter's type is
its field's, widened to what the option takes (any sequence of names for a tuple, any
mapping for a dict), or a `Literal` of its choices. tests/test_signatures.py regenerates
in memory and fails on any drift.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import MISSING, Field, dataclass, fields
from pathlib import Path
from typing import Any

from . import gate, rules
from .rules import ChatFormat
from .rules.check.options import CORE_OPTIONS
from .step_params import POSITIONAL_SETTINGS, StepSettings
from .validate import Validate

HERE = Path(__file__).resolve().parent
COMMAND = "python -m chatgate._gen_signatures"

IMPORTS: dict[str, tuple[int, str, str | None]] = {
    # name in an annotation or a body -> (section, module, None for `import module as name`)
    "Any": (1, "typing", "Any"),
    "Literal": (1, "typing", "Literal"),
    "TypeVar": (1, "typing", "TypeVar"),
    "Callable": (1, "collections.abc", "Callable"),
    "Iterable": (1, "collections.abc", "Iterable"),
    "Mapping": (1, "collections.abc", "Mapping"),
    "Sequence": (1, "collections.abc", "Sequence"),
    "pa": (2, "pyarrow", None),
    "gate": (3, ".", "gate"),
    "rules": (3, ".", "rules"),
    "Actions": (3, ".thresholds", "Actions"),
    "Columns": (3, ".gate", "Columns"),
    "Dedup": (3, ".engines.base", "Dedup"),
    "Turns": (3, ".step_params", "Turns"),
    "given_options": (3, ".options_given", "given_options"),
    "options_as_given": (3, ".options_given", "options_as_given"),
}
BUILTINS = {"None", "bool", "bytes", "dict", "float", "int", "list", "object", "str", "tuple", "type"}
OPTION_NAMES = tuple(f.name for f in fields(ChatFormat))


@dataclass(frozen=True)
class Param:
    """One parameter as written: `name: annotation = default`."""

    name: str
    annotation: str | None
    default: str | None
    """The default's source text; None: the parameter is required."""
    keyword: bool
    """Keyword-only (after the `*`)."""

    def text(self) -> str:
        out = self.name + (f": {self.annotation}" if self.annotation else "")
        return out + (f" = {self.default}" if self.default is not None else "")


@dataclass(frozen=True)
class Written:
    """A function or step method to write out: its own parameters, the options, the settings."""

    name: str
    implementation: Callable[..., Any]
    call: str
    """What the written-out body calls: `self._add_chat_format`, `rules.first_problem`, ..."""
    positional_options: int = 0
    settings: bool = False
    positional_settings: bool = False

    def params(self) -> list[Param]:
        own = own_params(self.implementation)
        options = option_params(self.positional_options)
        settings = setting_params(self.positional_settings) if self.settings else []
        everything = own + options + settings
        positional = [p for p in everything if not p.keyword]
        keyword = [p for p in own + settings + options if p.keyword]
        return positional + keyword


STEP_METHODS = (
    Written(
        "col_vals_chat_format",
        Validate._add_chat_format,
        "self._add_chat_format",
        positional_options=CORE_OPTIONS,
        settings=True,
        positional_settings=True,
    ),
    Written("col_vals_dataset_type", Validate._add_dataset_type, "self._add_dataset_type", settings=True),
)
FUNCTIONS = (
    Written("first_problem", rules.first_problem, "rules.first_problem"),
    Written("check_batch", rules.check_batch, "rules.check_batch"),
)
GATE_FUNCTIONS = (
    Written("annotate", gate.annotate, "gate.annotate"),
    Written("split", gate.split, "gate.split"),
)


# -- the spec as parameters ------------------------------------------------------------


def default_text(value: Any) -> str:
    """A default's source text, which must read back as the same value."""
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ValueError(f"the default {value!r} can't be written out as a literal")
    return text


def annotation_text(annotation: Any) -> str | None:
    if annotation is inspect.Parameter.empty:
        return None
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def option_type(f: Field[Any]) -> str:
    """The type of an option's parameter: its field's, widened to what the option takes."""
    declared = annotation_text(f.type) or "Any"
    choices = f.metadata.get("choices")
    if choices:
        literal = "Literal[" + ", ".join(repr(c) for c in choices) + "]"
        return literal + (" | None" if "None" in declared.split(" | ") else "")
    return declared.replace("tuple[str, ...]", "Sequence[str]").replace("dict[str, str]", "Mapping[str, str]")


def option_params(positional: int) -> list[Param]:
    """Every option of the check; the first `positional` may also be given by position."""
    out = []
    for i, f in enumerate(fields(ChatFormat)):
        if f.default is MISSING:
            raise ValueError(f"the option {f.name!r} has no default")
        out.append(Param(f.name, option_type(f), default_text(f.default), keyword=i >= positional))
    return out


def setting_params(positional: bool) -> list[Param]:
    """The step settings; pointblank's may also be given by position when `positional`."""
    return [
        Param(f.name, annotation_text(f.type), default_text(f.default), keyword=not (positional and f.name in POSITIONAL_SETTINGS))
        for f in fields(StepSettings)
    ]


def own_params(function: Callable[..., Any], *, skip: Iterable[str] = ("self", "arguments")) -> list[Param]:
    """An implementation's own parameters: neither options, nor `self`, nor `arguments`."""
    out = []
    for p in inspect.signature(function).parameters.values():
        if p.name in skip or p.name in OPTION_NAMES or p.kind is p.VAR_KEYWORD:
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL):
            raise ValueError(f"{function.__qualname__}: {p} can't be written out")
        default = None if p.default is p.empty else default_text(p.default)
        out.append(Param(p.name, annotation_text(p.annotation), default, keyword=p.kind is p.KEYWORD_ONLY))
    return out


def all_params(function: Callable[..., Any]) -> list[Param]:
    """Every parameter of a method but `self` (an implementation's declaration, for `StepMethods`)."""
    return own_params(function, skip=("self",))


def return_text(function: Callable[..., Any]) -> str:
    """The return annotation as written in `function`'s source (`with_options` drops it from the signature)."""
    return annotation_text(getattr(function, "__annotations__", {}).get("return", "Any")) or "Any"


# -- the text -----------------------------------------------------------------------


def signature_lines(params: list[Param], indent: str) -> list[str]:
    lines, star = [], False
    for p in params:
        if p.keyword and not star:
            lines.append(f"{indent}*,")
            star = True
        lines.append(f"{indent}{p.text()},")
    return lines


def docstring(function: Callable[..., Any], indent: str, *, with_options: bool = True) -> list[str]:
    """The implementation's docstring (its options' section dropped), and every option with its help."""
    doc = inspect.cleandoc(function.__doc__ or "")
    if not doc or '"""' in doc:
        raise ValueError(f"{function.__qualname__} needs a docstring without triple double quotes")
    lines = doc.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.startswith("Options of the check")), len(lines))
    lines = lines[:cut]
    while lines and not lines[-1].strip():
        lines.pop()
    if with_options:
        lines += ["", "Options of the check (the fields of `ChatFormat`; a profile's defaults apply to those left out):", ""]
        lines += [f"- `{f.name}` (default {f.default!r}): {f.metadata['help']}" for f in fields(ChatFormat)]
    text = [(indent + line).rstrip() for line in lines]
    text[0] = indent + '"""' + lines[0]
    text.append(indent + '"""')
    return [line.replace("\\", "\\\\") for line in text]


def call_lines(written: Written, tail: str, indent: str, prefix: str = "") -> list[str]:
    """`written.call(...)`: the own parameters passed on, then `tail`."""
    args = [p.name if not p.keyword else f"{p.name}={p.name}" for p in own_params(written.implementation)]
    return [f"{indent}{prefix}{written.call}(", *(f"{indent}    {a}," for a in [*args, tail]), f"{indent})"]


def method_text(written: Written) -> list[str]:
    return [
        "    @options_as_given",
        f"    def {written.name}(",
        "        self: SelfT,",
        *signature_lines(written.params(), "        "),
        "    ) -> SelfT:",
        *docstring(written.implementation, "        "),
        *call_lines(written, "arguments=locals()", "        "),
        "        return self",
    ]


def abstract_text(written: Written) -> list[str]:
    """The declaration in `StepMethods` of what `Validate` implements."""
    return [
        f"    def {written.call.removeprefix('self.')}(",
        "        self,",
        *signature_lines(all_params(written.implementation), "        "),
        f"    ) -> {return_text(written.implementation)}:",
        f'        """What `{written.name}` calls: `Validate` implements it."""',
        "        raise NotImplementedError",
    ]


def function_text(written: Written) -> list[str]:
    return [
        "@options_as_given",
        f"def {written.name}(",
        *signature_lines(written.params(), "    "),
        f") -> {return_text(written.implementation)}:",
        *docstring(written.implementation, "    "),
        *call_lines(written, "**given_options(locals())", "    ", prefix="return "),
    ]


def annotation_names(texts: Iterable[str | None]) -> set[str]:
    """The names the annotations `texts` use (`pa` for `pa.Array`; a Literal's strings aren't names)."""
    out: set[str] = set()
    for text in texts:
        if text:
            out |= {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
    return out - BUILTINS


def used_names(written: Iterable[Written], *, declarations: bool) -> set[str]:
    """What the written-out `written` name: their annotations (their implementations' with `declarations`)."""
    texts: list[str | None] = []
    for w in written:
        params = w.params() + (all_params(w.implementation) if declarations else [])
        texts += [p.annotation for p in params] + [return_text(w.implementation)]
    return annotation_names(texts)


def import_lines(names: Iterable[str]) -> list[str]:
    """The imports of `names`, in ruff's (isort's) order."""
    unknown = sorted(set(names) - set(IMPORTS))
    if unknown:
        raise ValueError(f"add {unknown} to IMPORTS in {__name__}: where each comes from")
    sections: dict[int, dict[str, list[str]]] = {}
    for name in sorted(names):
        section, module, _ = IMPORTS[name]
        sections.setdefault(section, {}).setdefault(module, []).append(name)
    out = ["from __future__ import annotations"]
    for section in sorted(sections):
        modules = sections[section]
        plain = [f"import {m} as {names[0]}" for m, names in sorted(modules.items()) if IMPORTS[names[0]][2] is None]
        froms = [
            f"from {m} import {', '.join(sorted(names, key=_member_order))}"
            for m, names in sorted(modules.items(), key=lambda item: _module_order(item[0]))
            if IMPORTS[names[0]][2] is not None
        ]
        out += ["", *plain, *froms]
    return out


def _member_order(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def _module_order(module: str) -> tuple[int, str]:
    return (0 if module == "." else 1, module)


HEADER = """GENERATED by `{command}`: don't edit; edit the spec and regenerate
(tests/test_signatures.py fails when this module drifts from it).

The spec: the options of the check (`ChatFormat`'s fields: name, type, default, help),{settings}
and {own}.
"""


def module_doc(summary: str, *, settings: str, own: str) -> list[str]:
    return ['"""' + summary, "", *HEADER.format(command=COMMAND, settings=settings, own=own).splitlines(), '"""', ""]


def step_methods_text() -> str:
    """The text of `step_methods.py`."""
    names = used_names(STEP_METHODS, declarations=True) | {"TypeVar", "options_as_given"}
    body = [
        *module_doc(
            "The step methods of `Validate`, every parameter written out.",
            settings="\nthe step settings (`StepSettings`),",
            own="each method's own parameters: those of its implementation in `Validate`, which it calls",
        ),
        *import_lines(names),
        "",
        'SelfT = TypeVar("SelfT", bound="StepMethods")',
        "",
        "",
        "class StepMethods:",
        '    """The step methods of a validation plan (`Validate` implements what they call)."""',
    ]
    for written in STEP_METHODS:
        body += ["", *abstract_text(written)]
    for written in STEP_METHODS:
        body += ["", *method_text(written)]
    return "\n".join(body) + "\n"


def functions_text(summary: str, functions: tuple[Written, ...]) -> str:
    """The text of a module of public functions."""
    names = used_names(functions, declarations=False) | {"given_options", "options_as_given"}
    names |= {w.call.partition(".")[0] for w in functions}
    called = ", ".join(f"`{w.call}`" for w in functions)
    body = [
        *module_doc(summary, settings="", own=f"each function's own parameters: those of the function it calls ({called})"),
        *import_lines(names),
        "",
        "__all__ = [" + ", ".join(f'"{w.name}"' for w in sorted(functions, key=lambda w: w.name)) + "]",
    ]
    for written in functions:
        body += ["", "", *function_text(written)]
    return "\n".join(body) + "\n"


GENERATED: dict[str, Callable[[], str]] = {
    "step_methods.py": step_methods_text,
    "functions.py": lambda: functions_text("The package's functions of the check, every option written out.", FUNCTIONS),
    "gating.py": lambda: functions_text("`annotate` and `split` (see `gate`), every option written out.", GATE_FUNCTIONS),
}


def drifted() -> list[str]:
    """The generated modules whose text isn't what the spec gives now."""
    return [name for name, text in GENERATED.items() if _read(HERE / name) != text()]


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing: exit 1 when a module has drifted")
    args = parser.parse_args(argv)
    stale = drifted()
    if args.check:
        for name in stale:
            print(f"lib/chatgate/{name} has drifted from the spec: run `{COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        (HERE / name).write_text(GENERATED[name](), encoding="utf-8")
        print(f"wrote lib/chatgate/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
