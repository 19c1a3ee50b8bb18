"""The check's options as the written-out signatures take them: those a caller gave, and no others.

The public functions (`functions`) and the step methods (`step_methods`) write every option
of `ChatFormat` out, with its type and default, so that mypy, pyright, IDEs and `help()` read
them (`python -m chatgate._gen_signatures` writes them from the spec). A profile's defaults,
though, apply to the options a caller leaves out, and only to those (`format_from`): so at run
time an option left out must stay apart from one given at its default.

`@options_as_given` keeps the signature as written (`inspect.signature` and `help()` show it)
and gives each option the runtime default `UNSET`; `given_options` then gathers the options
given, from the function's `locals()`.

>>> @options_as_given
... def f(value: str, *, last_role: str | None = None, alternate: bool = True) -> dict[str, object]:
...     return given_options(locals())
>>> f("x", alternate=True)
{'alternate': True}
>>> import inspect
>>> str(inspect.signature(f))
"(value: 'str', *, last_role: 'str | None' = None, alternate: 'bool' = True) -> 'dict[str, object]'"
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from .rules import ChatFormat, format_from

F = TypeVar("F", bound=Callable[..., Any])

OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ChatFormat))
"""Every option of the check, in ChatFormat's field order."""


class _Unset:
    """The runtime default of an option a caller leaves out."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def options_as_given(function: F) -> F:
    """`function` with its signature as written, and `UNSET` as the runtime default of each option."""
    signature = inspect.signature(function)
    function.__signature__ = signature  # type: ignore[attr-defined]
    names = set(OPTION_NAMES)
    with_defaults = [
        p
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and p.default is not p.empty
    ]
    if function.__defaults__:
        function.__defaults__ = tuple(UNSET if p.name in names else p.default for p in with_defaults)
    if function.__kwdefaults__:
        function.__kwdefaults__ = {
            name: UNSET if name in names else default for name, default in function.__kwdefaults__.items()
        }
    return function


def given_options(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The options among a function's `arguments` (its `locals()`) that the caller gave."""
    return {name: arguments[name] for name in OPTION_NAMES if arguments.get(name, UNSET) is not UNSET}


def options_format(arguments: Mapping[str, Any]) -> ChatFormat:
    """The ChatFormat of the options given among `arguments` (a profile's defaults for the others)."""
    return format_from(**given_options(arguments))
