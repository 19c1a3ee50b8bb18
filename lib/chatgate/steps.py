"""A validation step: what it checks, and what it found once interrogated."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .engines.base import Judged
from .rules import DEFAULT_ROLES, ChatFormat, phrase
from .thresholds import Actions, Thresholds

ASSERTION_TYPE = "col_vals_chat_format"
SHORT_TYPE = "chat_format"
DEFAULT_DIMENSION = "validity"


@dataclass
class Step:
    """One step: one column (and segment) checked with one ChatFormat."""

    i: int
    column: str
    fmt: ChatFormat
    thresholds: Thresholds
    actions: Actions | None = None
    brief: str | None = None
    pre: Callable | None = None
    segment: tuple[str, Any] | None = None
    active: bool = True
    dimension: str = DEFAULT_DIMENSION
    dedup: str = "auto"
    # Filled in by interrogate():
    judged: Judged | None = field(default=None, repr=False)
    eval_error: str | None = None
    levels: list[str] = field(default_factory=list)
    extract: Any = field(default=None, repr=False)
    column_number: int | None = None
    seconds: float | None = None

    @property
    def evaluated(self) -> bool:
        return self.judged is not None

    @property
    def units(self) -> int | None:
        return self.judged.units if self.judged else None

    @property
    def failed(self) -> int | None:
        return self.judged.failed if self.judged else None

    @property
    def passed(self) -> int | None:
        return self.judged.passed if self.judged else None

    @property
    def f_failed(self) -> float | None:
        if not self.judged:
            return None
        return self.judged.failed / self.judged.units if self.judged.units else 0.0

    @property
    def f_passed(self) -> float | None:
        return None if self.f_failed is None else (1.0 - self.f_failed if self.judged.units else 1.0)

    @property
    def reasons(self) -> dict[str, int]:
        return dict(self.judged.reasons) if self.judged else {}

    def assertion(self) -> str:
        """'messages is a chat of {system, user, assistant}'"""
        return f"{self.column} is a chat of {{{', '.join(self.fmt.roles)}}}"

    def values_text(self) -> str:
        """The VALUES cell, such as 'CHAT ALTERNATING LAST: ASSISTANT'."""
        fmt = self.fmt
        parts = ["CHAT"]
        if fmt.roles != DEFAULT_ROLES:
            parts.append("ROLES: " + ", ".join(r.upper() for r in fmt.roles))
        if fmt.alternate:
            parts.append("ALTERNATING")
        if fmt.first_role:
            parts.append(f"FIRST: {fmt.first_role.upper()}")
        if fmt.last_role:
            parts.append(f"LAST: {fmt.last_role.upper()}")
        if fmt.allow_empty:
            parts.append("EMPTY OK")
        if fmt.role_key != "role" or fmt.content_key != "content":
            parts.append(f"KEYS: {fmt.role_key}/{fmt.content_key}")
        if fmt.na_pass:
            parts.append("NA PASS")
        return " ".join(parts)

    def columns_text(self) -> str:
        if self.segment is None:
            return self.column
        name, value = self.segment
        shown = repr(value) if isinstance(value, str) else str(value)
        return f"{self.column} [{name} = {shown}]"

    def auto_brief(self) -> str:
        brief = f"Expect that values in `{self.column}` are well-formed chat conversations"
        if self.fmt.last_role:
            brief += f" ending with {self.fmt.last_role}"
        return brief + "."

    def brief_text(self) -> str | None:
        if self.brief is None or self.brief is False:
            return None
        if self.brief is True:
            return self.auto_brief()
        return self.brief.replace("{step}", str(self.i)).replace("{auto}", self.auto_brief()).replace(
            "{col}", self.column
        ).replace("{column}", self.column)

    def note(self) -> str | None:
        """The seed's note: how many rows fail, and with which problems."""
        if self.eval_error:
            return f"Step {self.i} ({SHORT_TYPE}) couldn't be evaluated: {self.eval_error}"
        if not self.judged or not self.judged.failed:
            return None
        return f"Step {self.i} ({SHORT_TYPE}) " + failure_sentence(self.judged.failed, self.judged.reasons)


def failure_sentence(failed: int, reasons: dict[str, int]) -> str:
    """'2 rows aren't well-formed conversations: 1 has ... and 1 has .... The problem ...'"""
    head = (
        "1 row isn't a well-formed conversation"
        if failed == 1
        else f"{failed} rows aren't well-formed conversations"
    )
    parts = [phrase(reason, count) for reason, count in reasons.items()]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    where = "The problem with the row" if failed == 1 else "The problem with each row"
    return f"{head}: {listed}. {where} is in the `pb_reason_` column."
