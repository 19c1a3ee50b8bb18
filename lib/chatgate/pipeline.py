"""One way to run a step, for the API (`Validate.interrogate()`) and the job alike.

A step is a row check on a table: its columns are checked against the table once
(preflight), then the table's engine judges it and the thresholds say which
levels it reached. The API records a problem as the step's evaluation error; the
job stops on it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .engines.base import Dedup, Engine, FailingColumns, Judged
from .errors import ConfigError, SourceError, did_you_mean
from .names import REASON, reserved_clash
from .rules import ChatCheck, RowCheck
from .rules.check.token_stats import PARTIAL, TokenStats, token_partial
from .rules.datasets.dataset_types import CHAT_FIELDS
from .rules.datasets.table_checks import TableCheck
from .thresholds import Thresholds


@dataclass
class Outcome:
    """What judging one step found: the engine's counts and the levels they reached."""

    judged: Judged
    levels: list[str]


def preflight(
    check: RowCheck,
    columns: list[str],
    reserved: Iterable[str],
    *,
    prefix: str | None = None,
    table: str = "the table",
) -> None:
    """Raise, naming the column, when `table` lacks a column of `check` or has one chatgate adds."""
    clash = reserved_clash(columns, reserved, prefix)
    if clash is not None:
        raise SourceError(
            f"{table} already has a column {clash!r}, a name chatgate adds to its results (compared ignoring case): "
            "rename or drop it first"
        )
    for column in check.columns:
        if column not in columns:
            hint = did_you_mean(column, columns, quote=True)
            raise ConfigError(f"column {column!r} isn't in {table}; its columns are {columns}{hint}")
    refuse_uncounted_token_stats(check)


def unread_type(check: RowCheck, types: pa.Schema) -> str | None:
    """Why every row of a chat column fails, known from its type alone (`types`: the table's, no row
    read); None when the check reads it: text (JSON), a list of messages, a struct holding one,
    a map. An integer, a date, a list of text or a struct of other fields is never a conversation."""
    if not isinstance(check, ChatCheck) or check.column not in types.names:
        return None
    dtype = types.field(check.column).type
    if _read_natively(dtype, sharegpt=check.fmt.sharegpt):
        return None
    fails = "every row but the nulls will fail" if check.fmt.na_pass else "every row will fail"
    return f"column {check.column!r} is {_type_name(dtype)}, not JSON text or a list of messages; {fails}"


_TEXT = ("is_string", "is_large_string", "is_binary", "is_large_binary", "is_string_view", "is_binary_view")
_LISTS = ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view")


def _is(dtype: pa.DataType, kinds: tuple[str, ...]) -> bool:
    return any(getattr(pa.types, kind, lambda _: False)(dtype) for kind in kinds)


def _read_natively(dtype: pa.DataType, *, sharegpt: bool) -> bool:
    if isinstance(dtype, pa.ExtensionType):
        dtype = dtype.storage_type
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if _is(dtype, _TEXT) or pa.types.is_null(dtype) or pa.types.is_map(dtype):
        return True  # JSON text; no value at all (na_pass decides); a map may hold "messages"
    if _is(dtype, _LISTS):
        item = dtype.value_type
        return pa.types.is_struct(item) or pa.types.is_map(item) or pa.types.is_null(item)
    if pa.types.is_struct(dtype):
        # {"messages": [...]}; with sharegpt, one message stands for a list of one
        return sharegpt or any(dtype.field(i).name in CHAT_FIELDS for i in range(dtype.num_fields))
    return False


def _type_name(dtype: pa.DataType) -> str:
    if _is(dtype, _LISTS):
        return f"a list of {_type_name(dtype.value_type)}"
    if pa.types.is_struct(dtype):
        names = [dtype.field(i).name for i in range(dtype.num_fields)]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        return f"a struct ({shown})"
    return str(dtype)


def judge_step(
    engine: Engine,
    table: Any,
    check: RowCheck,
    *,
    dedup: Dedup,
    thresholds: Thresholds,
    reason_column: str = REASON,
    failing_columns: FailingColumns | None = None,
) -> Outcome:
    """Judge `check` on `table` with its engine, and the threshold levels the failures reach;
    `failing_columns`, what the engine may compute of the failing rows as it checks them."""
    judged = engine.judge_check(
        table, check, dedup=dedup, reason_column=reason_column, failing_columns=failing_columns
    )
    stats = step_token_stats(engine, table, check)
    if stats is not None:
        judged.extra[TOKEN_STATS] = stats
    return Outcome(judged, thresholds.reached(failed=judged.failed, units=judged.units))


TOKEN_STATS = "token_stats"
"""The key of a step's `TokenStats` in `Judged.extra` (with `token_stats=True`)."""


def step_token_stats(engine: Engine, table: Any, check: RowCheck) -> TokenStats | None:
    """The token statistics of a chat column's step with `token_stats=True` (None otherwise),
    counted by its engine where the rows are (see `check.token_stats`)."""
    if not isinstance(check, ChatCheck) or not check.fmt.token_stats:
        return None
    partial = functools.partial(token_partial, column=check.column, fmt=check.fmt)
    summed = engine.sum_batches(table, [check.column], partial, PARTIAL)
    return TokenStats.of(summed, check.fmt)


def refuse_uncounted_token_stats(check: RowCheck) -> None:
    """ConfigError when a step asks for token statistics its check can't give (a dataset type's)."""
    fmt = getattr(check, "fmt", None)
    if fmt is not None and fmt.token_stats and not isinstance(check, ChatCheck):
        raise ConfigError(
            f"token_stats= counts a chat column's conversations; the step {check.describe()!r} "
            "checks a dataset type's columns: check its chat column with --column to count its tokens"
        )


def judge_table(check: TableCheck, rows: int, columns: list[str]) -> Judged:
    """The table as one unit: it fails when any of its checks does (`extra["problems"]` says how)."""
    problems = check.problems(rows, columns)
    return Judged(
        units=1,
        failed=1 if problems else 0,
        reasons=dict.fromkeys(problems, 1),
        distinct_values=None,
        annotated=None,
        extra={"problems": problems},
    )
