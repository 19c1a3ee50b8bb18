"""Hints and warnings for a run: which option would read a step's failing rows, and an empty source.

A table of ShareGPT rows (`from`/`value`) checked as OpenAI-style messages fails almost
entirely with `bad_message`, though nothing is wrong with it; LLaMA-Factory's v1 rows, whose
text parts hold `value` instead of `text`, fail with `empty_content`. When most rows of a
step fail, a few of its failing rows are read back, with every column the step reads (the
chat column and its tools, images, audios and videos columns, or a dataset type's columns), and judged again
by the step's own check (`RowCheck.check`, the function every engine judges with) under
each option of `hints_options`: the key options with the keys and placeholders found in
those values, each format flag, and going without each flag given.

An option is named only when nearly all the values read back pass under it, and:

- an option that reads the values (a key option, a format flag, going without a flag given)
  wins over one that only stops checking the rule they fail (`--allow-empty` for
  `empty_content`, `--no-alternate` for `not_alternating`); such an option is named only
  when none reads them, and the hint says that it stops checking that rule;
- of those, the one under which the most values pass, then the fewest options (one, or two
  together: `--sharegpt --tools`, `--role-key speaker --content-key text`);
- a step that fails every row because of a flag given gets a warning that the flag doesn't
  fit the data.

A run that read no rows gets one warning. Every line is one of the strings `run_hints`
returns, printed after the summary; warnings start with `warning:`, hints with `hint:`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from ..engines.lakehouse import LakehouseEngine
from ..rules import ChatFormat, RowCheck
from ..rules.check.checks import column_values
from .hints_options import TOKEN_OPTIONS, Change, changed, flag_changes, key_changes, media_column, spelt
from .outputs import StepResult

MOST = 0.5
"""A step whose failing share is above this gets a hint, when one fits."""

SAMPLED = 20
"""Failing rows read back per step to try the options on."""

FITS = 0.8
"""An option fits when this share of the sampled failing values pass under it."""

NO_ROWS = "warning: no rows were read from the source table; nothing was checked"
"""Once per run, when every step judged no row: an empty table (or, with --since, no new rows)."""


@dataclass(frozen=True)
class Fit:
    """The options tried together, how many sampled failing values pass under them, and the
    codes of those values that they stop checking (none: they read the values)."""

    changes: tuple[Change, ...]
    passing: int
    relaxed: tuple[str, ...]
    drops: bool
    """Does the check under these options stop checking any rule (whether or not these values break it)?"""


def run_hints(engine: LakehouseEngine, annotated: Any, results: list[StepResult], checks: list[RowCheck]) -> list[str]:
    """The run's warnings, then one line per step whose rows mostly fail and which an option
    would read (see the module's docstring)."""
    lines = [NO_ROWS] if results and all(r.judged.units == 0 for r in results) else []
    for result, check in zip(results, checks):
        judged = result.judged
        if _format_of(check) is None or not judged.units or judged.failed / judged.units <= MOST:
            continue
        line = step_hint(engine, annotated, result, check)
        if line is not None:
            lines.append(line)
    return lines


def step_hint(engine: LakehouseEngine, annotated: Any, result: StepResult, check: RowCheck) -> str | None:
    """The hint (or warning) line of one step, or None when no option fits."""
    failing = engine.where_reason(annotated, result.judged.reason_column, present=True)
    sample = engine.preview(engine.project(failing, list(check.columns), {}, {}), SAMPLED)
    found = best_fit(check, sample)
    if found is None:
        return None
    fit, sampled = found
    return hint_line(result, _format_of(check) or ChatFormat(), fit, sampled)


def best_fit(check: RowCheck, rows: pa.Table) -> tuple[Fit, int] | None:
    """The options under which most of the failing `rows` (the check's columns) pass, and how
    many rows failed; None when none fits."""
    fmt = _format_of(check)
    failing, reasons = _failing(check, rows)
    n = failing.num_rows
    if fmt is None or not n:
        return None
    tried = list(_tried(check, fmt, failing, reasons, _singles(check, fmt, failing)))
    best = _best(tried, n, relaxed=False)
    if best is None or best.passing < n:
        tried += _tried(check, fmt, failing, reasons, _pairs(tried))
        best = _best(tried, n, relaxed=False)
    best = best or _best(tried, n, relaxed=True)
    return None if best is None else (best, n)


def _failing(check: RowCheck, rows: pa.Table) -> tuple[pa.Table, frozenset[str]]:
    """The rows the check fails (all of them, unless the engine judged otherwise), and their codes."""
    codes = check.check(rows)
    failing = pa.array([i for i, code in enumerate(codes.to_pylist()) if code is not None], pa.int64())
    return rows.take(failing), frozenset(codes.take(failing).to_pylist())


def _singles(check: RowCheck, fmt: ChatFormat, rows: pa.Table) -> list[tuple[Change, ...]]:
    """Each option alone: the format flags, and the key options with the values `rows` suggest."""
    limits = check.value_limits  # a value larger than `max_value_bytes=` isn't read here either
    values = [v for name in _value_columns(check) for v in column_values(rows, name, limits.get(name))]
    return [(change,) for change in [*flag_changes(fmt), *key_changes(fmt, values, _counted(check, fmt))]]


def _counted(check: RowCheck, fmt: ChatFormat) -> list[str]:
    """The placeholder options whose medium the step counts (`image_token` with an images column)."""
    return [option for option in TOKEN_OPTIONS if _media_column(check, fmt, option) is not None]


def _media_column(check: RowCheck, fmt: ChatFormat, option: str) -> str | None:
    """The step's column of the items `option` counts (the check's or its format's), if any."""
    name = media_column(option)
    column = getattr(fmt, name, None) or getattr(check, name, None)
    return column if isinstance(column, str) else None


def _pairs(tried: list[Fit]) -> list[tuple[Change, ...]]:
    """Two options together, of those alone that stop checking no rule: `--sharegpt --tools`."""
    readers = [f.changes[0] for f in tried if not f.drops]
    return [pair for pair in itertools.combinations(readers, 2) if _go_together(*pair)]


def _best(fits: list[Fit], sampled: int, *, relaxed: bool) -> Fit | None:
    """Of the fits that read the values (or, `relaxed`, that stop checking their rule) and under
    which nearly all `sampled` values pass, the one under which the most pass, then the fewest options."""
    need = max(1.0, FITS * sampled)
    fitting = [f for f in fits if bool(f.relaxed) == relaxed and f.passing >= need]
    return min(fitting, key=lambda f: (-f.passing, len(f.changes)), default=None)


def _go_together(a: Change, b: Change) -> bool:
    """Two options of different names, and not one key for both role and content."""
    if a.name == b.name:
        return False
    return not ({a.name, b.name} == {"role_key", "content_key"} and a.value == b.value)


def _tried(
    check: RowCheck,
    fmt: ChatFormat,
    rows: pa.Table,
    reasons: frozenset[str],
    candidates: Sequence[tuple[Change, ...]],
) -> Iterator[Fit]:
    """Each candidate's fit; those that don't make a valid check are left out."""
    for changes in candidates:
        try:
            other = _with_format(check, changed(fmt, changes))
        except (TypeError, ValueError):
            continue  # the options don't go with the others given
        passing = other.check(rows).null_count
        dropped = [code for code in check.codes if code not in other.codes]
        yield Fit(changes, passing, tuple(code for code in dropped if code in reasons), bool(dropped))


def _format_of(check: RowCheck) -> ChatFormat | None:
    """The format of a check that has one (a chat column, a dataset type's columns)."""
    fmt = getattr(check, "fmt", None)
    return fmt if isinstance(fmt, ChatFormat) else None


def _with_format(check: Any, fmt: ChatFormat) -> RowCheck:
    other: RowCheck = replace(check, fmt=fmt)
    return other


def _value_columns(check: RowCheck) -> list[str]:
    """The check's columns that hold conversations (not its tools, images, audios and videos columns)."""
    fmt = _format_of(check) or ChatFormat()
    others = {getattr(check, "tools_column", None), *(_media_column(check, fmt, o) for o in TOKEN_OPTIONS)}
    return [c for c in check.columns if c not in others]


# -- the words ---------------------------------------------------------------------------


def hint_line(result: StepResult, fmt: ChatFormat, fit: Fit, sampled: int) -> str:
    """One line: the step, how many of its rows fail and why, and how many read back pass how."""
    judged = result.judged
    head = f"step {result.step} ({result.column})"
    counted = f"{fit.passing} of {sampled} failing values read back pass"
    given = [c.given(fmt) for c in fit.changes if c.undoes]
    if given and not fit.relaxed and judged.failed == judged.units:
        verb = "doesn't" if len(given) == 1 else "don't"
        return f"warning: {head}: every row fails, and {' '.join(given)} {verb} fit the data: {counted} {_how(fit)}"
    top = next(iter(judged.reasons), "")
    share = f"{judged.failed / judged.units:.0%} of rows fail (most with {top})"
    if fit.relaxed:
        verb = "isn't" if len(fit.relaxed) == 1 else "aren't"
        flags = " ".join(c.flag for c in fit.changes)
        return f"hint: {head}: {share}, but {counted} only if {_listed(fit.relaxed)} {verb} checked ({flags})"
    return f"hint: {head}: {share}, but {counted} {_how(fit)}"


def _how(fit: Fit) -> str:
    """`with --sharegpt --tools`, `without --sharegpt`, `without --sharegpt and with --tools`."""
    without = [spelt(c.option, not c.value) for c in fit.changes if c.undoes and isinstance(c.value, bool)]
    with_ = [c.flag for c in fit.changes if not (c.undoes and isinstance(c.value, bool))]
    parts = [f"without {' '.join(without)}" if without else "", f"with {' '.join(with_)}" if with_ else ""]
    return " and ".join(part for part in parts if part)


def _listed(codes: tuple[str, ...]) -> str:
    return codes[0] if len(codes) == 1 else f"{', '.join(codes[:-1])} and {codes[-1]}"
