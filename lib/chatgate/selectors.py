"""Column selectors: one validation step per column they resolve to.

>>> col(starts_with("chat_")).resolve(["id", "chat_a", "chat_b"])
['chat_a', 'chat_b']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Selector:
    """Picks column names; combine with `|` (either), `&` (both) and `-` (the first without the second)."""

    test: Callable[[str], bool]
    text: str

    def resolve(self, columns: list[str]) -> list[str]:
        return [c for c in columns if self.test(c)]

    def __or__(self, other: Selector) -> Selector:
        return Selector(lambda c: self.test(c) or other.test(c), f"{self.text} | {other.text}")

    def __and__(self, other: Selector) -> Selector:
        return Selector(lambda c: self.test(c) and other.test(c), f"{self.text} & {other.text}")

    def __sub__(self, other: Selector) -> Selector:
        return Selector(lambda c: self.test(c) and not other.test(c), f"{self.text} - {other.text}")


def starts_with(prefix: str) -> Selector:
    return Selector(lambda c: c.startswith(prefix), f"starts_with({prefix!r})")


def ends_with(suffix: str) -> Selector:
    return Selector(lambda c: c.endswith(suffix), f"ends_with({suffix!r})")


def contains(text: str) -> Selector:
    return Selector(lambda c: text in c, f"contains({text!r})")


def matches(pattern: str) -> Selector:
    regex = re.compile(pattern)
    return Selector(lambda c: regex.search(c) is not None, f"matches({pattern!r})")


def everything() -> Selector:
    return Selector(lambda c: True, "everything()")


@dataclass(frozen=True)
class Column:
    """A column, or columns picked by a selector, as `columns=` takes it."""

    target: str | Selector

    def resolve(self, columns: list[str]) -> list[str]:
        if isinstance(self.target, Selector):
            return self.target.resolve(columns)
        return [self.target]


def col(target: str | Selector) -> Column:
    """A column by name, or the columns a selector picks."""
    if not isinstance(target, (str, Selector)):
        raise TypeError(f"col() takes a column name or a selector, not {type(target).__name__}")
    return Column(target)


def resolve_columns(columns: object, available: list[str]) -> list[str]:
    """The column names that `columns=` names, in order, without repeats."""
    if isinstance(columns, (str, Selector, Column)):
        columns = [columns]
    if not isinstance(columns, (list, tuple)):
        raise TypeError(f"columns= must be a column name, a list of them, or col(...), not {columns!r}")
    out: list[str] = []
    for item in columns:
        if isinstance(item, (Selector, Column)):
            names = item.resolve(available)
        elif isinstance(item, str):
            names = [item]
        else:
            raise TypeError(f"columns= holds {item!r}, which is neither a column name nor a selector")
        out.extend(n for n in names if n not in out)
    return out
