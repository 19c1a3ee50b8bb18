"""Checks of a whole job config, after each key's own: a column named twice, thresholds out of order.

A column named twice is refused (its rows would be checked and quarantined twice);
thresholds out of order are a one-line warning on the "chatgate" logger, since the
run still means something (the later level is reached first).
"""

from __future__ import annotations

import logging

from ..errors import ConfigError
from ..thresholds import LEVELS, Thresholds

log = logging.getLogger("chatgate")


def check_whole(columns: list[str], thresholds: Thresholds) -> None:
    """Refuse a column named twice; a warning for each pair of thresholds out of order."""
    refuse_repeated_columns(columns)
    for line in threshold_order_warnings(thresholds):
        log.warning(line)


def refuse_repeated_columns(columns: list[str]) -> None:
    """A ConfigError naming the first column named twice, and where.

    >>> refuse_repeated_columns(["messages", "chosen", "messages"])
    Traceback (most recent call last):
    ...
    chatgate.errors.ConfigError: columns: 'messages' is named twice (columns[1] and columns[3]); name each chat column once, with all its rules
    """
    first: dict[str, int] = {}
    for n, column in enumerate(columns, start=1):
        if column in first:
            raise ConfigError(
                f"columns: {column!r} is named twice (columns[{first[column]}] and columns[{n}]); "
                "name each chat column once, with all its rules"
            )
        first[column] = n


def threshold_order_warnings(thresholds: Thresholds) -> list[str]:
    """One line for each level above the next one given, when both are fractions or both counts.

    >>> threshold_order_warnings(Thresholds(warning=0.2, error=0.05))
    ['thresholds out of order: warning (0.2) is above error (0.05), so a step reaches error first']
    >>> threshold_order_warnings(Thresholds(warning=0.2, error=5, critical=3))
    ['thresholds out of order: error (5) is above critical (3), so a step reaches critical first']
    """
    given = [(level, getattr(thresholds, level)) for level in LEVELS if getattr(thresholds, level) is not None]
    out = []
    for (low, low_value), (high, high_value) in zip(given, given[1:]):
        same_kind = isinstance(low_value, float) == isinstance(high_value, float)
        if same_kind and low_value > high_value:
            out.append(
                f"thresholds out of order: {low} ({low_value}) is above {high} ({high_value}), "
                f"so a step reaches {high} first"
            )
    return out
