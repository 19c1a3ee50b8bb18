"""Short command-line errors: one line naming the bad token and the nearest valid one.

argparse prints the whole usage (some thirty lines for `chatgate run`) before a
bad choice or an unknown flag; this parser prints instead

    chatgate run: error: unknown flag --last-rol; did you mean --last-role?
    (see chatgate run --help)

and exits with status 2 (EXIT_USAGE).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from .errors import did_you_mean
from .job.runner import EXIT_USAGE


class ShortErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and a pointer to --help (its subparsers too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n(see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            valid = [str(c) for c in choices]
            what = "/".join(action.option_strings) or action.dest
            hint = did_you_mean(str(value), valid, quote=True) or f"; choose from {', '.join(valid)}"
            if isinstance(action, argparse._SubParsersAction):
                raise argparse.ArgumentError(None, f"unknown command {value!r}{hint}")
            raise argparse.ArgumentError(None, f"{what}: invalid choice {value!r}{hint}")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            where = self._command_parser(parsed)
            where.error(unknown_message(extras, flags_of(where) + flags_of(self)))
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The subcommand's parser that read `parsed` (this parser when there is none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                command = getattr(parsed, action.dest or "", None)
                found = action.choices.get(command) if command is not None else None
                if isinstance(found, argparse.ArgumentParser):
                    return found
        return self


def flags_of(parser: argparse.ArgumentParser) -> list[str]:
    """Every long flag of `parser`."""
    return [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]


def unknown_message(extras: list[str], flags: list[str]) -> str:
    """What argparse left over, as one clause: the first unknown flag (or stray value) and the nearest flag."""
    for token in extras:
        if token.startswith("-") and token != "-":
            name = token.split("=", 1)[0]
            return f"unknown flag {name}{did_you_mean(name, flags)}"
    return f"unexpected argument {extras[0]!r} (a value without its flag?)"
