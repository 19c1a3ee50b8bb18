"""A validation step: what it checks, and what it found once interrogated."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .engines.base import Dedup, Judged
from .rules import DEFAULT_ROLES, ChatCheck, ChatFormat, RowCheck, phrase
from .rules.datasets.table_checks import TableCheck
from .step_params import Turns
from .thresholds import Actions, Thresholds

ASSERTION_TYPE = "col_vals_chat_format"
DATASET_ASSERTION_TYPE = "col_vals_dataset_type"
TABLE_ASSERTION_TYPE = "tbl_chat_format"
SHORT_TYPES = {ASSERTION_TYPE: "chat_format", DATASET_ASSERTION_TYPE: "dataset_type", TABLE_ASSERTION_TYPE: "table"}
TABLE_COLUMN = "(table)"
"""The COLUMNS of a table step, and the summary's `column` of the job's: the table as a whole."""
DEFAULT_DIMENSION = "validity"


@dataclass
class Step:
    """One step: one row check (a chat column, or a dataset type's columns) on one segment.

    `column` is what the report shows in COLUMNS; `check` is what the engine runs
    (built from `column` and `fmt` when not given).
    """

    i: int
    column: str
    fmt: ChatFormat
    thresholds: Thresholds
    actions: Actions | None = None
    brief: str | bool | None = None
    pre: Callable[[Any], Any] | None = None
    segment: tuple[str, Any] | None = None
    active: bool = True
    dimension: str = DEFAULT_DIMENSION
    dedup: Dedup = "auto"
    turns: Turns = "first"
    check: RowCheck | None = None
    table_check: TableCheck | None = None
    """Set on a table step: the table as a whole, one unit (see rules/table.py)."""
    assertion_type: str = ASSERTION_TYPE
    # Filled in by interrogate():
    judged: Judged | None = field(default=None, repr=False)
    eval_error: str | None = None
    levels: list[str] = field(default_factory=list)
    extract: Any = field(default=None, repr=False)
    failing_rows: Any = field(default=None, repr=False)
    """The failing rows as the engine extracts them, made once (`extract` and the fixed data start from them)."""
    column_number: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.check is None:
            self.check = ChatCheck(self.column, self.fmt)

    @property
    def row_check(self) -> RowCheck:
        """`check`, which `__post_init__` always sets."""
        assert self.check is not None
        return self.check

    @property
    def short_type(self) -> str:
        return SHORT_TYPES[self.assertion_type]

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
        f_failed = self.f_failed
        if f_failed is None:
            return None
        assert self.judged is not None  # f_failed is None without it
        return 1.0 - f_failed if self.judged.units else 1.0

    @property
    def reasons(self) -> dict[str, int]:
        return dict(self.judged.reasons) if self.judged else {}

    def assertion(self) -> str:
        """'messages is a chat of {system, user, assistant}', or what the check says of itself."""
        if self.table_check is not None:
            return self.table_check.describe()
        return self.row_check.describe()

    def values_text(self) -> str:
        """The VALUES cell, such as 'CHAT ALTERNATING LAST: ASSISTANT'."""
        fmt = self.fmt
        if self.table_check is not None:
            return "TABLE"
        if not isinstance(self.check, ChatCheck):
            kind = getattr(self.check, "dataset_type", "rows").upper().replace("_", " ")
            return f"{kind} ({getattr(self.check, 'format', 'auto').upper()})"
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
        parts += [flag for flag, on in (("TOOLS", fmt.tools), ("SHAREGPT", fmt.sharegpt), ("HARMONY", fmt.harmony)) if on]
        if fmt.profile:
            parts.append(f"PROFILE: {fmt.profile.upper()}")
        return " ".join(parts)

    def columns_text(self) -> str:
        if self.segment is None:
            return self.column
        name, value = self.segment
        shown = repr(value) if isinstance(value, str) else str(value)
        return f"{self.column} [{name} = {shown}]"

    def auto_brief(self) -> str:
        if not isinstance(self.check, ChatCheck) or self.table_check is not None:
            return f"Expect that {self.row_check.describe()}."
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
            return f"Step {self.i} ({self.short_type}) couldn't be evaluated: {self.eval_error}"
        if not self.judged or not self.judged.failed:
            return None
        if self.table_check is not None:
            problems = self.judged.extra.get("problems", {})
            return f"Step {self.i} ({self.short_type}) the table fails: " + "; ".join(problems.values()) + "."
        what = ("conversation", "conversations")
        if not isinstance(self.check, ChatCheck):
            kind = getattr(self.check, "dataset_type", "").replace("_", " ")
            what = (f"{kind} row".strip(), f"{kind} rows".strip())
        return f"Step {self.i} ({self.short_type}) " + failure_sentence(
            self.judged.failed, self.judged.reasons, what
        )


def failure_sentence(
    failed: int, reasons: dict[str, int], what: tuple[str, str] = ("conversation", "conversations")
) -> str:
    """'2 rows aren't well-formed conversations: 1 has ... and 1 has .... The problem ...'"""
    head = f"1 row isn't a well-formed {what[0]}" if failed == 1 else f"{failed} rows aren't well-formed {what[1]}"
    parts = [phrase(reason, count) for reason, count in reasons.items()]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    where = "The problem with the row" if failed == 1 else "The problem with each row"
    return f"{head}: {listed}. {where} is in the `pb_reason_` column."


def table_step(template: Step, *, i: int, check: TableCheck) -> Step:
    """The table step of a directive: its settings, the table as one unit."""
    return Step(
        i=i,
        column=TABLE_COLUMN,
        fmt=template.fmt,
        thresholds=template.thresholds,
        actions=template.actions,
        brief=template.brief,
        pre=template.pre,
        active=template.active,
        dimension=template.dimension,
        check=template.check,
        table_check=check,
        assertion_type=TABLE_ASSERTION_TYPE,
    )
