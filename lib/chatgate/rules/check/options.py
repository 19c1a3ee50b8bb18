"""The check's options as users meet them, derived from `ChatFormat`'s fields.

`ChatFormat` declares each option once: its name, type, default and help (the
field's `metadata["help"]`). From it come the keyword arguments of the Python
entry points (`with_options` gives them a real signature, so `help()` and
`inspect.signature` list every option with its default), the YAML keys of the
job's `checks:`, the command line's flags and the summary's parameters.

>>> [o.name for o in chat_options()][:3]
['roles', 'alternate', 'first_role']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any, TypeVar

from ..conversation.spec import ChatFormat
from ..trainers.profiles import format_from

F = TypeVar("F", bound=Callable[..., Any])

CORE_OPTIONS = 8
"""The first fields of ChatFormat are pointblank's parameters, also taken by position."""


@dataclass(frozen=True)
class Option:
    """One option of the check."""

    name: str
    default: Any
    annotation: Any
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parameter(self, kind: inspect._ParameterKind = inspect.Parameter.KEYWORD_ONLY) -> inspect.Parameter:
        return inspect.Parameter(self.name, kind, default=self.default, annotation=self.annotation)


def chat_options() -> tuple[Option, ...]:
    """Every option, in ChatFormat's field order."""
    out = []
    for f in fields(ChatFormat):
        default = f.default if f.default is not MISSING else None
        meta = f.metadata
        out.append(Option(f.name, default, f.type, meta["help"], meta.get("metavar"), meta.get("choices")))
    return tuple(out)


def kind_of(option: Option) -> str:
    """How a flag's text is read for the option: "list", "map", "int" or "text" (as given).

    >>> [kind_of(o) for o in chat_options() if o.name in ("roles", "role_map", "min_messages")]
    ['list', 'int', 'map']
    """
    annotation = str(option.annotation)
    for prefix, kind in (("tuple", "list"), ("dict", "map"), ("int", "int")):
        if annotation.startswith(prefix):
            return kind
    return "text"


def from_text(option: Option, text: str) -> Any:
    """An option's value from its text on the command line (or a string in YAML): a list as
    `a,b`, a map as `alias=role,alias=role`, a whole number as digits.

    >>> from_text(next(o for o in chat_options() if o.name == "role_map"), "human=user, gpt=assistant")
    {'human': 'user', 'gpt': 'assistant'}
    """
    kind = kind_of(option)
    items = [item.strip() for item in text.split(",") if item.strip()]
    if kind == "list":
        return items
    if kind == "map":
        pairs = [item.partition("=") for item in items]
        bad = [item for item, (_, eq, value) in zip(items, pairs) if not eq or not value.strip()]
        if bad:
            raise ValueError(f"{option.name}= must be written alias=role,...; {bad[0]!r} isn't")
        return {key.strip(): value.strip() for key, _, value in pairs}
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{option.name}= must be a whole number, not {text!r}") from None
    return text


def option_names() -> tuple[str, ...]:
    return tuple(o.name for o in chat_options())


def split_options(arguments: dict[str, Any]) -> tuple[ChatFormat, dict[str, Any]]:
    """The ChatFormat of the option arguments among `arguments`, and the other arguments."""
    names = set(option_names())
    fmt = format_from(**{k: v for k, v in arguments.items() if k in names})
    return fmt, {k: v for k, v in arguments.items() if k not in names}


def signature_with_options(
    template: Callable[..., Any],
    *,
    core_positional: bool = False,
    after: str | None = None,
    settings: list[inspect.Parameter] | None = None,
) -> inspect.Signature:
    """`template`'s signature with `settings` and every option added (its `**kwargs`, if any, dropped).

    The options are keyword-only, at the end; with `core_positional`, the core
    options instead follow the parameter `after` and may be given by position, as
    pointblank takes them. The positional `settings` follow those, the keyword-only
    ones follow the template's own.
    """
    params = [
        p for p in inspect.signature(template).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    options = chat_options()
    core: list[inspect.Parameter] = []
    rest = [o.parameter() for o in options]
    if core_positional:
        core = [o.parameter(inspect.Parameter.POSITIONAL_OR_KEYWORD) for o in options[:CORE_OPTIONS]]
        rest = rest[CORE_OPTIONS:]
    at = [p.name for p in params].index(after) + 1 if after else len(params)
    head, tail = params[:at], [*params[at:], *(settings or [])]
    keyword = [p for p in tail if p.kind is inspect.Parameter.KEYWORD_ONLY]
    positional = [p for p in tail if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    return inspect.Signature([*head, *core, *positional, *keyword, *rest])


def with_options(function: F) -> F:
    """Give a `def f(..., **options)` a signature and docs that list every option with its default.

    `help(f)` and `inspect.signature(f)` then show the options; a misspelt one is
    a TypeError from ChatFormat, naming it.
    """
    function.__signature__ = signature_with_options(function)  # type: ignore[attr-defined]
    function.__doc__ = (function.__doc__ or "") + options_doc()
    return function


def options_doc() -> str:
    """The options as a docstring section."""
    lines = ["", "", "    Options of the check (keyword arguments; see `ChatFormat`):", ""]
    for o in chat_options():
        lines.append(f"    - `{o.name}` (default {o.default!r}): {o.help}")
    return "\n".join(lines) + "\n"
