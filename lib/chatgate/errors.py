"""One exception root, with a subclass per kind of problem a user can fix."""

from __future__ import annotations


class ChatgateError(Exception):
    """Anything chatgate refuses, with a message that names what to fix."""


class ConfigError(ChatgateError, ValueError):
    """A job config or flag is wrong: the message names the key."""


class SourceError(ChatgateError):
    """The source table can't be read, or lacks a column the job needs."""


class OutputError(ChatgateError):
    """An output table can't be written, or clashes with the source."""


def one_line(error: BaseException, *, debug_hint: bool = True) -> str:
    """What a user reads of a failure: ours as written, anyone else's with its type, on one line."""
    text = " ".join(str(error).split()) or "(no message)"
    if isinstance(error, ChatgateError):
        return text
    return f"{type(error).__name__}: {text}" + (" (rerun with --debug for details)" if debug_hint else "")
