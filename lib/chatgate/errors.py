"""One exception root, with a subclass per kind of problem a user can fix."""

from __future__ import annotations

import difflib
import errno
from collections.abc import Iterable, Iterator


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


def no_space_left(error: BaseException) -> bool:
    """Did `error`, or an error it chains to, come from a full disk (or a full disk quota)?"""
    for link in error_chain(error):
        if isinstance(link, OSError) and link.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        try:
            text = str(link)
        except Exception:  # noqa: BLE001
            continue
        if any(phrase in text for phrase in _NO_SPACE):
            return True
    return False


_NO_SPACE = ("No space left on device", "os error 28)", "Disk quota exceeded", "os error 122)")


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, then each error it was raised from or while handling, each once."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending and len(seen) < 50:
        link = pending.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        pending.extend(e for e in (link.__cause__, link.__context__) if e is not None)


def nearest(token: str, valid: Iterable[str]) -> str | None:
    """The valid word closest to `token` (difflib), or None when none is close.

    >>> nearest("--last-rol", ["--last-role", "--first-role"])
    '--last-role'
    """
    options = list(valid)
    bare = {v.lstrip("-"): v for v in options}
    close = difflib.get_close_matches(token.lstrip("-"), list(bare), n=1, cutoff=0.6)
    return bare[close[0]] if close else None


def did_you_mean(token: str, valid: Iterable[str], *, quote: bool = False) -> str:
    """'; did you mean X?' when a valid word is close, else ''."""
    near = nearest(token, valid)
    if near is None:
        return ""
    return f"; did you mean {near!r}?" if quote else f"; did you mean {near}?"
