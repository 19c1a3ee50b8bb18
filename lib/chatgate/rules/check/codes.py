"""The problem codes of the checks, in the order they are checked.

The order is the contract: the reported code of a conversation (or of a row of a
dataset type) is the first one in `ALL_REASONS` that applies anywhere in it.

`REASONS` are the nine codes of the core check, in their order. The options
(tool calling, Harmony, ShareGPT, the profiles and the trainers' row rules, vision) and the dataset
types add `EXTENDED_REASONS`. `ALL_REASONS` interleaves both into one order, most
fundamental problem first; the nine core codes keep their relative order, and
none of the other codes is produced while the options are off. (`too_large` is the
code of `max_value_bytes=`, an option on by default: a value larger than it is never
read, so no other code can apply to it.)

Every list here comes from the table (`table.CODES`), where each code is written once:
the codes decided on one conversation are its rules, in the same order; the others are
decided before a conversation is read (`too_large`, from the value's size alone,
`not_messages`, the standard-format codes, `not_label`, an OpenAI preference row's
`bad_input` and `output_count`) or by comparing two values of a row (`same_pair`,
`implicit_prompt`).

"""

from __future__ import annotations

from collections.abc import Iterable

from .table import CODES

ALL_REASONS: tuple[str, ...] = tuple(entry.code for entry in CODES)

REASONS: tuple[str, ...] = tuple(entry.code for entry in CODES if entry.raised_by == "core")

EXTENDED_REASONS: tuple[str, ...] = tuple(code for code in ALL_REASONS if code not in REASONS)

PHRASES: dict[str, tuple[str, str]] = {entry.code: entry.phrase for entry in CODES}
"""What a failing row "has", as (one row, several rows), for the step notes."""

_RANK = {code: i for i, code in enumerate(ALL_REASONS)}


def table_of_codes() -> str:
    """The codes as a markdown table: code, what raises it, what it means (this module's docs).

    >>> print(table_of_codes().splitlines()[3])
    | not_messages | core | the value isn't a list of messages |
    """
    rows = [f"| {entry.code} | {entry.raised_by} | {entry.meaning} |" for entry in CODES]
    return "\n".join(["| code | raised by | meaning |", "|---|---|---|", *rows]) + "\n"


__doc__ = (__doc__ or "") + table_of_codes()


def phrase(reason: str, count: int) -> str:
    """'1 has roles that don't alternate (`not_alternating`)' and the like."""
    one, many = PHRASES.get(reason, ("fails", "fail"))
    return f"{count} {one if count == 1 else many} (`{reason}`)"


def reason_rank(reason: str) -> int:
    """The place of a code in `ALL_REASONS` (unknown codes last).

    >>> reason_rank("too_large") < reason_rank("not_messages") < reason_rank("prompt_end") < reason_rank("empty_content")
    True
    """
    return _RANK.get(reason, len(ALL_REASONS))


def first_reason(codes: Iterable[str | None]) -> str | None:
    """The first code, in `ALL_REASONS` order, of `codes` (None entries ignored).

    >>> first_reason([None, "empty_content", "not_alternating"])
    'not_alternating'
    >>> first_reason([None]) is None
    True
    """
    found = [code for code in codes if code is not None]
    return min(found, key=reason_rank) if found else None
