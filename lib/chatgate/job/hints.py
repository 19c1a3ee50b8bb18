"""Hints for a run whose rows mostly fail: which option would have read them as conversations.

A table of ShareGPT rows (`from`/`value`) checked as OpenAI-style messages fails
almost entirely with `bad_message`, though nothing is wrong with it. When most
rows of a chat step fail, a few of its failing values are read back and checked
again with each other known format; an option under which nearly all of them
pass is named in the printed summary.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..engines.lakehouse import LakehouseEngine
from ..rules import ChatCheck, ChatFormat, RowCheck, check_array
from .outputs import StepResult

MOST = 0.5
"""A step whose failing share is above this gets a hint, when one fits."""

SAMPLED = 20
"""Failing values read back per step to try the other formats on."""

FITS = 0.8
"""An option fits when this share of the sampled failing values pass under it."""

ALTERNATIVES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--sharegpt", {"sharegpt": True}),
    ("--tools", {"tools": True}),
    ("--harmony", {"harmony": True}),
    ("--allow-empty", {"allow_empty": True}),
    ("--no-alternate", {"alternate": False}),
)
"""Each option to try (as the command line spells it) and the change it makes to the format."""


def run_hints(engine: LakehouseEngine, annotated: Any, results: list[StepResult], checks: list[RowCheck]) -> list[str]:
    """One line per chat step whose rows mostly fail and which another option would read."""
    hints = []
    for result, check in zip(results, checks):
        judged = result.judged
        if not isinstance(check, ChatCheck) or not judged.units or judged.failed / judged.units <= MOST:
            continue
        failing = engine.where_reason(annotated, judged.reason_column, present=True)
        values = engine.preview(engine.project(failing, [check.column], {}, {}), SAMPLED).column(0)
        fitting = _fitting_option(values, check.fmt)
        if fitting is not None:
            flag, passing = fitting
            top = next(iter(judged.reasons), "")
            hints.append(
                f"hint: step {result.step} ({result.column}): {judged.failed / judged.units:.0%} of rows fail "
                f"(most with {top}), but {passing} of {len(values)} failing values read back pass with {flag}"
            )
    return hints


def _fitting_option(values: Any, fmt: ChatFormat) -> tuple[str, int] | None:
    """The first option under which nearly all `values` pass, and how many do."""
    if not len(values):
        return None
    for flag, change in ALTERNATIVES:
        if all(getattr(fmt, key) == value for key, value in change.items()):
            continue  # already so
        try:
            other = dataclasses.replace(fmt, **change)
        except (TypeError, ValueError):
            continue  # the option doesn't go with the others given
        passing = check_array(values, other).null_count
        if passing >= FITS * len(values):
            return flag, passing
    return None
