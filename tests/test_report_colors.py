"""The history chart gives every reason code a color of its own, the same in every report."""

from __future__ import annotations

import itertools
import math
import re
from datetime import datetime, timezone

from chatgate.rules import ALL_REASONS
from chatgate.runreport.chart import PALETTE, history_svg, reason_color
from chatgate.runreport.model import HistoryPoint


def _lab(color: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a '#rrggbb' color: distances there follow what eyes tell apart."""

    def linear(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(color[k : k + 2], 16)) for k in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_every_declared_code_has_a_color_no_other_code_has():
    colors = [reason_color(code) for code in ALL_REASONS]
    assert len(PALETTE) > len(ALL_REASONS)  # room for every code, and spares for unknown ones
    assert len(set(colors)) == len(ALL_REASONS)
    assert reason_color("first_role") != reason_color("no_messages")  # both were tab20's red


def test_the_colors_are_far_apart():
    # A CIELAB distance over 15 is plain to see side by side (2.3 is the least noticeable).
    closest = min(math.dist(_lab(x), _lab(y)) for x, y in itertools.combinations(PALETTE, 2))
    assert closest > 15
    # No grey: a grey bar reads as "nothing", and grey is the warning level's color in the tables.
    assert all(math.hypot(*_lab(color)[1:]) > 25 for color in PALETTE)


def test_a_codes_color_follows_its_place_in_the_declared_codes():
    assert [reason_color(code) for code in ALL_REASONS] == list(PALETTE[: len(ALL_REASONS)])
    # A code of another version takes a spare color, the same each time.
    assert reason_color("from_the_future") == reason_color("from_the_future")
    assert reason_color("from_the_future") in PALETTE[len(ALL_REASONS) :]


def _svg(reasons: list[str]) -> str:
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    history = [HistoryPoint("run-1", at, 10 * len(reasons), {r: 10 for r in reasons})]
    return history_svg(history, "run-1")


def test_the_chart_draws_each_reason_in_its_color_whatever_else_it_shows():
    alone = _svg(["first_role"])
    with_others = _svg(["no_messages", "first_role", "empty_content"])
    fills = set(re.findall(r"fill:\s*(#[0-9a-f]{6})", with_others))
    for code in ("no_messages", "first_role", "empty_content"):
        assert reason_color(code) in fills
    assert reason_color("first_role") in re.findall(r"fill:\s*(#[0-9a-f]{6})", alone)
