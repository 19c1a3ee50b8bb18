"""Failure levels (warning, error, critical) and the actions taken when they are reached."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

LEVELS: tuple[str, ...] = ("warning", "error", "critical")


@dataclass(frozen=True)
class Thresholds:
    """Failure levels: a count of failing units (1 or more) or a fraction of them (below 1).

    `True` means 1: a single failing unit reaches the level.

    >>> Thresholds(warning=1, error=0.1).reached(failed=3, units=100)
    ['warning']
    """

    warning: int | float | None = None
    error: int | float | None = None
    critical: int | float | None = None

    def __post_init__(self) -> None:
        for level in LEVELS:
            object.__setattr__(self, level, _level_value(level, getattr(self, level)))

    def reached(self, *, failed: int, units: int) -> list[str]:
        """The levels that `failed` of `units` meets or exceeds."""
        fraction = failed / units if units else 0.0
        out = []
        for level in LEVELS:
            limit = getattr(self, level)
            if limit is None:
                continue
            hit = fraction >= limit if isinstance(limit, float) else failed >= limit
            if hit:
                out.append(level)
        return out

    def is_empty(self) -> bool:
        return all(getattr(self, level) is None for level in LEVELS)

    def as_dict(self) -> dict[str, int | float | None]:
        return {level: getattr(self, level) for level in LEVELS}


def _level_value(level: str, value: Any) -> int | float | None:
    if value is None or value is False:
        return None
    if value is True:
        return 1
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"{level}= as a count must be 1 or more, not {value}")
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
        if math.isnan(value):
            raise ValueError(f"{level}= must be a fraction above 0 or a count of 1 or more, not nan")
        if value >= 1:
            if value.is_integer():
                return int(value)
            raise ValueError(f"{level}= as a fraction must be below 1, not {value}")
        if value <= 0:
            raise ValueError(f"{level}= must be a fraction above 0 or a count of 1 or more, not {value}")
        return value
    raise TypeError(f"{level}= must be a count, a fraction or None, not {value!r}")


def normalize_thresholds(value: Any) -> Thresholds:
    """Thresholds from what the API accepts: a number (warning), a tuple, a dict, or Thresholds."""
    if value is None:
        return Thresholds()
    if isinstance(value, Thresholds):
        return value
    if isinstance(value, (bool, numbers.Real)):
        return Thresholds(warning=cast(Any, value))  # a Real: __post_init__ makes it an int or a float
    if isinstance(value, tuple):
        if len(value) > 3:
            raise ValueError(f"thresholds= as a tuple holds at most 3 levels, not {len(value)}")
        return Thresholds(**dict(zip(LEVELS, value)))
    if isinstance(value, Mapping):
        unknown = set(value) - set(LEVELS)
        if unknown:
            raise ValueError(f"thresholds= has unknown levels {sorted(unknown)}; use {list(LEVELS)}")
        return Thresholds(**value)
    raise TypeError(f"thresholds= must be a number, tuple, dict or Thresholds, not {type(value).__name__}")


Action = str | Callable[..., Any]


@dataclass(frozen=True)
class Actions:
    """What to do when a step reaches a level: callables, or template strings to print.

    Templates can use {step} (or {i}), {level}, {LEVEL}, {column} (or {col}), {type},
    {TYPE}, {failed}, {units}, {time} and {auto} (what happened, in a sentence); other
    braces are printed as they are.
    `highest_only=True` (the default) takes only the action of the highest level reached
    that has one (its own or the default).
    """

    warning: Action | list[Action] | None = None
    error: Action | list[Action] | None = None
    critical: Action | list[Action] | None = None
    default: Action | list[Action] | None = None
    highest_only: bool = True

    def __post_init__(self) -> None:
        for name in (*LEVELS, "default"):
            for action in _as_list(getattr(self, name)):
                if not (isinstance(action, str) or callable(action)):
                    raise TypeError(f"an action for {name}= must be a string or a callable, not {action!r}")

    def for_level(self, level: str) -> list[Action]:
        return _as_list(getattr(self, level)) or _as_list(self.default)

    def is_empty(self) -> bool:
        return all(not _as_list(getattr(self, name)) for name in (*LEVELS, "default"))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def run_actions(actions: Actions, levels: list[str], context: dict[str, Any]) -> None:
    """Take the actions for `levels` reached: print templates, call callables.

    With `highest_only`, only the highest level reached that has an action (its own,
    or the default) acts: a warning action still runs when a step reaches critical
    and no critical action is set.
    """
    with_actions = [level for level in levels if actions.for_level(level)]
    chosen = with_actions[-1:] if actions.highest_only else with_actions
    for level in chosen:
        filled = {
            **context,
            "i": context.get("step"),
            "col": context.get("column"),
            "level": level,
            "LEVEL": level.upper(),
            "TYPE": str(context.get("type", "")).upper(),
        }
        filled.setdefault(
            "auto",
            f"Step {context.get('step')} ({context.get('type')}) on column {context.get('column')!r} "
            f"reached the {level} level: {context.get('failed')} of {context.get('units')} units failed.",
        )
        for action in actions.for_level(level):
            if isinstance(action, str):
                print(fill_template(action, filled))
            else:
                action(**_accepted(action, filled))


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def fill_template(template: str, context: dict[str, Any]) -> str:
    """Replace the `{name}`s of `template` that `context` knows; leave any other braces alone.

    >>> fill_template('{LEVEL} in step {step}: {"not": "a placeholder"}', {"LEVEL": "ERROR", "step": 2})
    'ERROR in step 2: {"not": "a placeholder"}'
    """
    return _PLACEHOLDER.sub(
        lambda m: str(context[m.group(1)]) if m.group(1) in context else m.group(0), template
    )


def _accepted(func: Callable[..., Any], context: dict[str, Any]) -> dict[str, Any]:
    """Callables may take no argument, or any of the context names as keywords."""
    import inspect

    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(context)
    return {name: context[name] for name in params if name in context}
