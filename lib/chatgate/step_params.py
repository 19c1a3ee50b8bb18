"""The parameters of `Validate`'s step methods: the checks of brief= and segments=, and
the signature template of `col_vals_chat_format` (its step parameters, to which every
ChatFormat option is added).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .engines.base import Dedup
from .rules.options import signature_with_options
from .thresholds import Actions

if TYPE_CHECKING:
    from .validate import Validate


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


def _chat_format_step(
    self: Validate,
    columns: Any,
    pre: Callable[[Any], Any] | None = None,
    segments: Any = None,
    thresholds: Any = None,
    actions: Actions | None = None,
    brief: str | bool | None = None,
    active: bool | Callable[[Any], Any] = True,
    dimension: str | None = None,
    *,
    dedup: Dedup = "auto",
    tools_column: str | None = None,
    images_column: str | None = None,
) -> Validate:
    """The step parameters of `col_vals_chat_format`; the check's options are added from ChatFormat."""
    raise NotImplementedError  # pragma: no cover - a signature only


CHAT_FORMAT_STEP = signature_with_options(_chat_format_step, core_positional=True, after="columns")
