"""The command line: `chatgate run ...` (and `spark-submit jobs/validate_chat.py ...`, same flags)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import progress
from ._version import __version__
from .cli_errors import ShortErrorParser
from .engines.base import DEDUP_MODES
from .errors import ConfigError, did_you_mean, one_line
from .job.config import load_config
from .job.embedded import DEFAULT_MEMORY_LIMIT
from .job.registry import BACKENDS, engine_help
from .job.runner import EXIT_CRITICAL, EXIT_ERROR, EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .rules import FORMATS
from .rules.check.options import chat_options, kind_of
from .runreport.command import (
    REPORT_DESCRIPTION,
    REPORT_EPILOG,
    REPORT_HELP,
    add_report_arguments,
    report_from_args,
)
from .step_params import TURNS

NOT_OVERRIDES = ("config", "command", "quiet", "debug")

def build_parser(prog: str = "chatgate") -> argparse.ArgumentParser:
    parser = ShortErrorParser(
        prog=prog,
        description="Find malformed chat conversations in a table and set them aside.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"chatgate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_arguments(
        commands.add_parser(
            "run",
            help="check a table and write quarantine, summary, valid",
            description="Check the chat columns of a table and write the quarantine, summary and valid tables.",
            epilog=RUN_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
    )
    add_report_arguments(
        commands.add_parser(
            "report",
            help=REPORT_HELP,
            description=REPORT_DESCRIPTION,
            epilog=REPORT_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
    )
    add_clean_arguments(
        commands.add_parser(
            "clean",
            help="delete one run's rows from the output tables (after a run that couldn't take them back)",
            description=CLEAN_DESCRIPTION,
            epilog=CLEAN_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
    )
    return parser


RUN_EPILOG = f"""\
example:
  chatgate run --source lake/chats --column messages --last-role assistant \\
      --quarantine lake/chat_quarantine --summary lake/chat_summary --error 0.05

exit status:
  {EXIT_OK}  no step reached its error level
  {EXIT_FAILURE}  the run failed (an unreadable source, a write error); it took its rows back
  {EXIT_USAGE}  a bad flag, config key or column name
  {EXIT_ERROR}  a step reached its error level (--error)
  {EXIT_CRITICAL}  a step reached its critical level (--critical)
"""


RUN_GROUPS = ("source and columns", "conversation rules", "trainer profiles", "repairs", "outputs", "engine", "thresholds")
"""The sections of `chatgate run --help`, in order (the job's own flags stay under "options")."""

CHECK_GROUPS = {"profile": "trainer profiles", "min_rows": "source and columns", "extra_columns": "source and columns"}
"""The section of a check option's flag when not "conversation rules" (ChatFormat gives no category)."""


def add_run_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The job's flags, in the sections of RUN_GROUPS: each overrides the same key of --config."""
    p.add_argument("--config", metavar="FILE", help="YAML job config (see conf/example.yaml)")
    p.add_argument("--quiet", action="store_true", help="print only the summary (no progress, no step lines)")
    p.add_argument("--debug", action="store_true", help="on failure, print the whole traceback")
    groups = {title: p.add_argument_group(title) for title in RUN_GROUPS}
    src, out, eng = groups["source and columns"], groups["outputs"], groups["engine"]
    src.add_argument("--source", help="Delta table path (or Parquet), or a catalog table on Spark")
    src.add_argument("--source-version", dest="source_version", type=int, metavar="N",
                     help="read this Delta version of the source (default: the latest, pinned for the whole run)")
    src.add_argument("--since", metavar="last|N",
                     help="check only the rows inserted since the last complete run of this check (last), "
                     "or after Delta version N; a full run, saying why, where that can't be done")
    src.add_argument("--stream", action="store_true", default=None,
                     help="Spark: read the source as a Delta stream and check each micro-batch (needs --checkpoint)")
    src.add_argument("--checkpoint", metavar="PATH", help="with --stream: where the stream keeps its progress")
    src.add_argument("--trigger", metavar="WHEN",
                     help="with --stream: available-now (the default: everything new, then stop) or an interval, "
                     "such as '30 seconds'")
    src.add_argument("--column", dest="columns", action="append", metavar="NAME",
                     help="chat column; repeat for more")
    src.add_argument("--tools-column", dest="tools_column", help="the row's declared tools (with --tools)")
    src.add_argument("--images-column", dest="images_column", help="the row's images: one image part each")
    src.add_argument("--dataset-type", dest="dataset_type",
                     help="check a dataset type: auto (detect), language_modeling, prompt_only, "
                     "prompt_completion, preference, implicit_preference, unpaired_preference (TRL's), "
                     "openai_preference (OpenAI's and Together's input/preferred_output/non_preferred_output)")
    src.add_argument("--dataset-format", dest="dataset_format", choices=FORMATS,
                     help="conversational (message lists), standard (plain text), or auto (detect)")
    add_check_flags(p, groups)
    groups["repairs"].add_argument("--fix", metavar="REPAIRS",
                                   help="repair failing rows: safe, all, or repairs comma-separated (decode_text, "
                                   "map_roles, drop_empty, hoist_system, merge_repeats, drop_leading, "
                                   "drop_trailing); needs --fixed")
    groups["repairs"].add_argument("--fixed", help="where the rows the repairs made pass go (Delta, with --fix)")
    groups["repairs"].add_argument("--valid-includes-fixed", dest="valid_includes_fixed", action="store_true",
                                   default=None,
                                   help="with --fix and --valid: the valid table also holds the fixed rows, repaired")
    out.add_argument("--quarantine", help="where failing rows go (Delta)")
    out.add_argument("--summary", help="where the per-step summary goes (Delta)")
    out.add_argument("--valid", help="where passing rows go (Delta, optional)")
    out.add_argument("--run-id", dest="run_id", help="id of this run; a rerun with it replaces its rows")
    out.add_argument("--turns", choices=TURNS,
                     help="first (default): a failing row's first problem; all: also every problem of it, "
                     "in the quarantine's pb_reasons_")
    eng.add_argument("--engine", choices=list(BACKENDS), help=engine_help())
    eng.add_argument("--dedup", choices=DEDUP_MODES, help="check distinct values only: auto (default), on, off")
    eng.add_argument("--memory-limit", dest="memory_limit", metavar="SIZE",
                     help=f"embedded engine: DuckDB's memory before it spills to disk, e.g. 2GB "
                          f"(default: {DEFAULT_MEMORY_LIMIT})")
    eng.add_argument("--threads", type=int, metavar="N",
                     help="embedded engine: DuckDB's threads and the check's worker processes (default: every core)")
    eng.add_argument("--temp-dir", dest="temp_directory", metavar="PATH",
                     help="embedded engine: where DuckDB spills and the workers keep failing rows (default: "
                     "chatgate-duckdb in the system's temp directory)")
    levels = groups["thresholds"]
    levels.add_argument("--warning", help="warning level: a fraction below 1 or a count of 1 or more")
    levels.add_argument("--error", help="error level (exit status 3 when reached)")
    levels.add_argument("--critical", help="critical level (exit status 4 when reached)")
    return p


CLEAN_DESCRIPTION = """\
Delete the rows of one run id from the output tables: what a failed run does itself,
for the case where it could not (its error names the tables and gives this command).
The summary's rows go first, so the run stops counting as complete before its other
rows go. Other runs' rows are never touched, and a table that doesn't exist is skipped."""

CLEAN_EPILOG = f"""\
example:
  chatgate clean --run-id nightly-42 --quarantine lake/chat_quarantine --summary lake/chat_summary

exit status:
  {EXIT_OK}  the run's rows are gone from every table named (or there was no such table)
  {EXIT_FAILURE}  a table couldn't be changed (the message names it)
  {EXIT_USAGE}  a bad flag: no table named, no run id, or two names for one table
"""


def add_clean_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--run-id", dest="run_id", required=True, help="the run whose rows to delete")
    p.add_argument("--config", metavar="FILE", help="take the output tables (and engine) from this job config")
    p.add_argument("--engine", choices=list(BACKENDS), help=engine_help())
    for name in ("quarantine", "summary", "valid", "fixed"):
        p.add_argument(f"--{name}", help=f"the {name} table")
    p.add_argument("--debug", action="store_true", help="on failure, print the whole traceback")
    return p


def clean_from_args(args: argparse.Namespace) -> int:
    """Delete one run's rows from the tables the flags (or the config) name; one line per table."""
    from .job.clean import load_clean_config
    from .job.embedded import EmbeddedConfig
    from .job.registry import make_engine, store_for
    from .job.writes import clean_run

    def clean() -> int:
        config = load_clean_config(args.config, vars(args))
        done = clean_run(store_for(make_engine(config.engine, EmbeddedConfig()), config.engine), config.tables, config.run_id)
        for target in done:
            print(f"deleted the rows of run {config.run_id!r} from {target}")
        if not done:
            print(f"no table to clean: none of {sorted(config.tables.values())} exists")
        return EXIT_OK

    return answered(clean, debug=args.debug)


def answered(action: Callable[[], int], *, debug: bool) -> int:
    """`action()`'s exit status; a failure is one line on standard error (the traceback with --debug)."""
    try:
        return action()
    except ConfigError as exc:
        print(f"chatgate: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - one line for users; --debug shows the traceback
        if debug:
            raise
        print(f"chatgate: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE


def add_check_flags(
    p: argparse.ArgumentParser, groups: Mapping[str, argparse._ArgumentGroup] | None = None
) -> None:
    """One flag per option of the check, derived from ChatFormat: `--name VALUE`, or `--name/--no-name`;
    with `groups`, in its section (CHECK_GROUPS, else "conversation rules")."""
    for option in chat_options():
        where: argparse._ActionsContainer = p
        if groups is not None:
            where = groups[CHECK_GROUPS.get(option.name, "conversation rules")]
        if isinstance(option.default, bool):
            where.add_argument(option.flag, dest=option.name, action=argparse.BooleanOptionalAction, default=None,
                               help=f"{option.help} (default: {'yes' if option.default else 'no'})")
        elif kind_of(option) in ("list", "map"):
            default = ",".join(option.default) if option.default else "none"
            where.add_argument(option.flag, dest=option.name, metavar=f"{option.metavar},...",
                               help=f"{option.help}, comma-separated (default: {default})")
        else:
            default = "" if option.default is None else f" (default: {option.default})"
            where.add_argument(option.flag, dest=option.name, choices=option.choices,
                               metavar=None if option.choices else option.metavar, help=option.help + default)


def override_keys() -> frozenset[str]:
    """The keys that may override a config: the run flags' names, with underscores."""
    parser = add_run_arguments(argparse.ArgumentParser(add_help=False))
    return frozenset(a.dest for a in parser._actions if a.dest not in NOT_OVERRIDES)


def check_overrides(overrides: dict[str, Any]) -> None:
    """An unknown key is a typo that would otherwise be ignored: name it, and the nearest known one."""
    known = override_keys()
    for key in overrides:
        if key not in known:
            hint = did_you_mean(key, sorted(known), quote=True) or f"; known: {sorted(known)}"
            raise ConfigError(f"unknown option {key!r}{hint}")


def run_from_args(args: argparse.Namespace) -> int:
    """Run the job from parsed flags; print the summary; return the exit status."""
    from .job.runner import run
    from .job.summary import format_summary

    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="chatgate: %(message)s")
    if args.debug:  # what was kept off the console (deltalake's panics) is logged at DEBUG
        logging.getLogger("chatgate").setLevel(logging.DEBUG)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    overrides = {k: v for k, v in vars(args).items() if k not in NOT_OVERRIDES}

    def job() -> int:
        config = load_config(args.config, overrides)
        if config.stream is not None:
            from .job.stream import run_stream
            from .job.summary import format_stream_summary

            streamed = run_stream(config)
            print(format_stream_summary(streamed.batches, streamed.exit_status))
            return streamed.exit_status
        result = run(config)
        print(format_summary(result))
        return result.exit_status

    with progress.silenced(args.quiet):  # progress goes to stderr: a bar on a terminal, else a line every few seconds
        return answered(job, debug=args.debug)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    # Orchestrators stop a task with SIGTERM: unwinding lets a run delete the rows it wrote.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "report":
        return report_from_args(args)
    if args.command == "clean":
        return clean_from_args(args)
    return run_from_args(args)


if __name__ == "__main__":
    sys.exit(main())
