"""`chatgate report`: the report of one run, as an HTML page or as JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import one_line
from ..job.runner import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .load import DEFAULT_CHARS, DEFAULT_EXAMPLES, DEFAULT_RUNS

REPORT_HELP = "make the HTML (or JSON) report of a run from its summary and quarantine tables"

REPORT_DESCRIPTION = """\
Make the report of one run of the job: its steps with units, failed rows, levels
reached and reasons; a chart of failed rows per reason over the runs before it; and a
few quarantined rows for each reason. The HTML page needs nothing else to open (no
network); --json writes the same data for machines. The tables are read with
deltalake, whichever engine wrote them."""

REPORT_EPILOG = f"""\
examples:
  chatgate report --summary lake/chat_summary --quarantine lake/chat_quarantine --out report.html
  chatgate report --summary lake/chat_summary --quarantine lake/chat_quarantine --run-id nightly-42 --json

exit status:
  {EXIT_OK}  the report was written
  {EXIT_FAILURE}  no report: a missing table, a table that isn't a chatgate summary or quarantine,
     an unknown run id, or an output file that can't be written
  {EXIT_USAGE}  a bad flag
"""


def add_report_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument(
        "--summary", required=True, metavar="PATH", help="the job's summary table (a Delta table path)"
    )
    p.add_argument(
        "--quarantine", required=True, metavar="PATH", help="the job's quarantine table (a Delta table path)"
    )
    p.add_argument(
        "--run-id",
        dest="run_id",
        metavar="ID",
        help="the run to report on (default: the latest run of the summary table)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the report; the HTML page needs it, JSON goes to standard output without it",
    )
    p.add_argument("--json", action="store_true", help="write the report as JSON instead of the HTML page")
    p.add_argument(
        "--runs",
        type=_count(1),
        default=DEFAULT_RUNS,
        metavar="N",
        help=f"runs in the history chart: the chosen run and those before it (default: {DEFAULT_RUNS})",
    )
    p.add_argument(
        "--examples",
        type=_count(0),
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"quarantined rows shown for each step and reason (default: {DEFAULT_EXAMPLES}; 0 for none)",
    )
    p.add_argument(
        "--chars",
        type=_count(20),
        default=DEFAULT_CHARS,
        metavar="N",
        help=(
            f"characters shown of each value, about (default: {DEFAULT_CHARS}); a longer conversation "
            "shows its start and the message at fault, with the length left out between them"
        ),
    )
    p.add_argument("--debug", action="store_true", help="on failure, print the whole traceback")
    return p


def _count(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `least`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"expected a whole number, {least} or more, not {text!r}")
        return value

    return parse


def report_from_args(args: argparse.Namespace) -> int:
    """Make the report the flags ask for; one line on standard error when it can't be made."""
    if not args.json and not args.out:
        print(
            "chatgate: error: the HTML page needs --out FILE (or pass --json for standard output)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        text, run_id = _render(args)
    except Exception as exc:  # noqa: BLE001 - one line for users; --debug shows the traceback
        if args.debug:
            raise
        print(f"chatgate: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    if not args.out:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(
            f"chatgate: error: can't write the report to {args.out!r}: {exc.strerror or exc}", file=sys.stderr
        )
        return EXIT_FAILURE
    print(f"chatgate: the report of run {run_id} is in {args.out}")
    return EXIT_OK


def _render(args: argparse.Namespace) -> tuple[str, str]:
    from . import load_report, render_page, report_json

    report = load_report(
        args.summary, args.quarantine, args.run_id, runs=args.runs, examples=args.examples, chars=args.chars
    )
    return (report_json(report) if args.json else render_page(report)), report.run.run_id


__all__ = ["REPORT_DESCRIPTION", "REPORT_EPILOG", "REPORT_HELP", "add_report_arguments", "report_from_args"]
