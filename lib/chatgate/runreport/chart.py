"""The history chart: failed rows per reason over the last runs, as inline SVG.

matplotlib draws it: its SVG output is a plain vector image that sits inside the
page with no script, font or file to fetch, so the report opens offline and in
mail clients that block scripts (an Altair/Vega chart would need Vega's JavaScript
embedded, about 1 MB, or a renderer binary to turn it into SVG). Text stays text
(`svg.fonttype: none`), so the page's search finds run ids and reasons in it;
matplotlib escapes it as XML.
"""

from __future__ import annotations

import io
import re
import zlib

from ..rules import ALL_REASONS, reason_rank
from .model import HistoryPoint, StepTokens
from .window import clip

RUN_LABEL_CHARS = 18

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#0000ff", "#ff00ff", "#0066ff", "#336633", "#996600", "#00cc99", "#ff0099",
    "#9933cc", "#ff9999", "#990066", "#99ccff", "#00cc00", "#990033", "#ffcc66", "#99cc99",
    "#ff0066", "#cc9966", "#6699ff", "#ff0000", "#ffcc00", "#993300", "#ff66ff", "#99cc66",
    "#666600", "#ff6699", "#9933ff", "#cc99cc", "#006600", "#ff9966", "#cc9900", "#99cc00",
    "#993399", "#ff6666", "#ff00cc", "#cc0066", "#3333cc", "#339966", "#cc0099", "#669900",
    "#cc99ff", "#cccc66", "#0066cc", "#00cc66", "#ff6633", "#00ccff", "#666699", "#cc00cc",
    "#66cc33", "#9966ff", "#996699", "#cc6633", "#663399", "#999933", "#cc6666", "#996633",
)  # fmt: skip
"""64 colors, none grey, each far from the others: matplotlib's tab10 without its grey, then web
colors picked one by one as far as possible (in CIELAB) from those taken and from greys, white
and black. One per reason code, with spares for codes to come."""


def reason_color(reason: str) -> str:
    """The color of a reason code: the palette's color at the code's place in `ALL_REASONS`, so
    no two codes share one and a code keeps its color from run to run. A code this version
    doesn't declare (a table written by another version) takes one of the palette's spare colors,
    chosen by the code's checksum.

    >>> reason_color("too_large"), reason_color("no_messages") != reason_color("first_role")
    ('#1f77b4', True)
    """
    rank = reason_rank(reason)
    if rank < len(ALL_REASONS):
        return PALETTE[rank % len(PALETTE)]  # the palette has room for every code (a test says so)
    spare = PALETTE[len(ALL_REASONS) :] or PALETTE
    return spare[zlib.crc32(reason.encode()) % len(spare)]


def history_svg(history: list[HistoryPoint], chosen: str) -> str:
    """A stacked bar per run (oldest first), one color per reason, the chosen run's label in bold."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    reasons = sorted({r for point in history for r in point.reasons}, key=reason_rank)
    fig = Figure(figsize=(min(14.0, 4.5 + 0.5 * len(history)), 3.4), layout="constrained")
    ax = fig.subplots()
    positions = list(range(len(history)))
    bottoms = [0] * len(history)
    # Colors follow the reasons' global order: a reason keeps its color from report to report.
    for reason in reasons:
        heights = [point.reasons.get(reason, 0) for point in history]
        ax.bar(
            positions,
            heights,
            bottom=bottoms,
            width=0.7,
            label=reason,
            color=reason_color(reason),
        )
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    labels = [clip(point.run_id, RUN_LABEL_CHARS) for point in history]
    ax.set_xticks(
        positions,
        labels=labels,
        rotation=30 if len(history) > 4 else 0,
        ha="right" if len(history) > 4 else "center",
    )
    for tick, point in zip(ax.get_xticklabels(), history):
        if point.run_id == chosen:
            tick.set_fontweight("bold")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("failed rows (all steps)")
    ax.spines[["top", "right"]].set_visible(False)
    if reasons:
        handles, names = ax.get_legend_handles_labels()  # listed top to bottom, as the bars stack
        ax.legend(
            handles[::-1],
            names[::-1],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize=8,
        )
    else:
        ax.set_ylim(0, 1)
        ax.text(
            0.5, 0.5, "no failed rows in these runs", transform=ax.transAxes, ha="center", color="#666666"
        )
    out = io.StringIO()
    # A fixed hash salt and no date: the same history draws the same SVG.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "chatgate"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
    return _inline(out.getvalue())


def tokens_svg(tokens: StepTokens) -> str:
    """The conversations per token count, in the summary's bins, with `max_tokens=` drawn as a
    red line (the bars past it are the conversations the trainer would truncate)."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(8.0, 2.8), layout="constrained")
    ax = fig.subplots()
    limit = tokens.figures.get("limit")
    for low, high, count in tokens.bins:
        over = limit is not None and low > limit
        ax.bar(low, count, width=high - low + 1, align="edge", color="#d62728" if over else "#1f77b4", alpha=0.85)
    if limit is not None:
        ax.axvline(limit + 0.5, color="#d62728", linewidth=1.5)
        ax.annotate(f"max_tokens={limit:,}", (limit + 0.5, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(4, -12), textcoords="offset points", color="#d62728", fontsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("tokens per conversation")
    ax.set_ylabel("conversations")
    ax.spines[["top", "right"]].set_visible(False)
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "chatgate"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
    return _inline(out.getvalue())


def _inline(svg: str) -> str:
    """The <svg> element alone, scaling to its box: no XML declaration or doctype (it goes inside HTML), no metadata."""
    element = re.sub(r"\s*<metadata>.*?</metadata>", "", svg[svg.index("<svg") :], count=1, flags=re.S)
    return element.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)
