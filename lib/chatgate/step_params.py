"""The parameters of `Validate`'s step methods, declared once.

`StepSettings` holds what every step method takes besides what it checks (pointblank's
step parameters: pre=, segments=, thresholds=, ...), and checks them. The signatures
of `col_vals_chat_format` and `col_vals_dataset_type` (in `validate`) are built from a
template of their own parameters, these settings (`settings_parameters`) and every
ChatFormat option, so `help()` and IDEs list each with its default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from .engines.base import Dedup, check_dedup
from .thresholds import Actions, Thresholds, normalize_thresholds


def check_brief(brief: Any) -> Any:
    """`brief`, if it is a string, True, False or None; TypeError otherwise."""
    if brief is not None and not isinstance(brief, (str, bool)):
        raise TypeError(f"brief= must be a string, True, False or None, not {brief!r}")
    return brief


def check_segments(spec: Any) -> list[Any]:
    """The items of segments=, each a column name or a (column, values) tuple; TypeError otherwise."""
    if spec is None:
        return []
    items = spec if isinstance(spec, list) else [spec]
    for item in items:
        ok = isinstance(item, str) or (
            isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
        )
        if not ok:
            raise TypeError(
                f"segments= takes a column name, a (column, values) tuple, or a list of them, not {item!r}"
            )
    return items


Turns = Literal["first", "all"]
TURNS: tuple[Turns, ...] = get_args(Turns)
"""turns=: a failing row's first problem only (its code), or every problem besides (`pb_reasons_`)."""


def check_turns(turns: object) -> Turns:
    """`turns` when it is one of TURNS; ValueError naming them otherwise."""
    if turns not in TURNS:
        raise ValueError(f"turns= must be one of {list(TURNS)}, not {turns!r}")
    return turns


@dataclass(frozen=True)
class StepSettings:
    """What a step method takes besides what it checks; each is checked when the step is added."""

    pre: Callable[[Any], Any] | None = None
    segments: Any = None
    thresholds: Any = None
    actions: Actions | None = None
    brief: str | bool | None = None
    active: bool | Callable[[Any], Any] = True
    dimension: str | None = None
    dedup: Dedup = "auto"
    turns: Turns = "first"
    """"all": the step's extracts list every problem of each failing row (verdicts and counts don't change)."""

    def __post_init__(self) -> None:
        if self.pre is not None and not callable(self.pre):
            raise TypeError(f"pre= must be a callable that takes and returns a table, not {self.pre!r}")
        check_segments(self.segments)
        if self.thresholds is not None:
            object.__setattr__(self, "thresholds", normalize_thresholds(self.thresholds))
        if self.actions is not None and not isinstance(self.actions, Actions):
            raise TypeError(f"actions= must be an Actions object, not {type(self.actions).__name__}")
        check_brief(self.brief)
        if not (isinstance(self.active, bool) or callable(self.active)):
            raise TypeError(f"active= must be True, False or a callable, not {self.active!r}")
        if self.dimension is not None and not isinstance(self.dimension, str):
            raise TypeError(f"dimension= must be a string or None, not {self.dimension!r}")
        check_dedup(self.dedup)
        check_turns(self.turns)

    @property
    def own_thresholds(self) -> Thresholds | None:
        """The step's own thresholds (None: the plan's)."""
        thresholds: Thresholds | None = self.thresholds  # normalized when set
        return thresholds

    @classmethod
    def pick(cls, arguments: dict[str, Any]) -> StepSettings:
        """The settings among a step method's bound `arguments`."""
        return cls(**{name: arguments[name] for name in STEP_SETTINGS})


STEP_SETTINGS = tuple(f.name for f in fields(StepSettings))

POSITIONAL_SETTINGS = STEP_SETTINGS[: STEP_SETTINGS.index("dedup")]
"""The settings pointblank also takes by position, after a step's own parameters."""


def settings_parameters(*, positional: bool) -> list[inspect.Parameter]:
    """The settings as parameters: pointblank's may be given by position when `positional`."""
    defaults = StepSettings()
    annotations = {f.name: f.type for f in fields(StepSettings)}
    return [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if positional and name in POSITIONAL_SETTINGS
            else inspect.Parameter.KEYWORD_ONLY,
            default=getattr(defaults, name),
            annotation=annotations[name],
        )
        for name in STEP_SETTINGS
    ]
