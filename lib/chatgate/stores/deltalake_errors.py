"""deltalake's failures on one line: a corrupt or broken Delta log named with its file, and Rust's
panics kept off the console."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .base import is_local_path

log = logging.getLogger("chatgate")


def _one_line(error: BaseException) -> str:
    return delta_error_text(error)


class DeltaLogError(ValueError):
    """deltalake can't open the Delta table at `path`; `problem` says why, on one line.

    A corrupt log (a commit file that isn't JSON, a commit file missing between two
    others) is named with the file and what to do; any other error is deltalake's own
    message without the Rust backtrace that `RUST_BACKTRACE` adds to it.
    """

    def __init__(self, path: str, error: BaseException) -> None:
        self.path = path
        self.problem = delta_log_problem(path, error) or delta_error_text(error)
        super().__init__(f"can't open the Delta table at {path!r}: {self.problem}")


_FRAME = re.compile(r"^\s*(\d+: |stack backtrace:|Stack backtrace:)")
"""The first line of a Rust backtrace, which deltalake's messages carry when RUST_BACKTRACE is set."""

_COMMIT_FILE = re.compile(r'filename: "(\d{20})\.json"')


def delta_error_text(error: BaseException) -> str:
    """deltalake's error as one line: its message up to the Rust backtrace, if any, whitespace folded."""
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - an error whose message can't be read
        text = ""
    kept = []
    for line in text.splitlines():
        if _FRAME.match(line):
            break
        kept.append(line)
    return " ".join(" ".join(kept).split()) or type(error).__name__


def delta_log_problem(path: str, error: BaseException) -> str | None:
    """What is wrong with the Delta log at `path`, when `error` (deltalake's) says it is corrupt; else None."""
    text = delta_error_text(error)
    if "Expected contiguous commit files, but found gap" in text:
        versions = [int(found) for found in _COMMIT_FILE.findall(text)]
        if len(versions) >= 2:
            return missing_commits(versions[0], versions[1])
        return missing_commits(None, None)
    if "json error" in text.lower():
        cause = text.split("Json error:", 1)[-1].strip() if "Json error:" in text else text
        return corrupt_commit(_unparsable_commit(path), cause)
    return None


def missing_commits(before: int | None, after: int | None) -> str:
    """The one-line problem of a Delta log with a gap between the commits `before` and `after`."""
    if before is None or after is None or after - before < 2:
        gap = "a commit file is missing from it"
    else:
        missing = [f"{version:020d}.json" for version in range(before + 1, after)]
        names = missing[0] if len(missing) == 1 else f"{missing[0]} to {missing[-1]}"
        gap = f"{names} {'is' if len(missing) == 1 else 'are'} missing between versions {before} and {after}"
    return (
        f"its Delta log (_delta_log) has a gap: {gap}, so Delta can't rebuild the table; "
        "restore the missing commit file from a backup (or your object store's versioning), then rerun"
    )


def corrupt_commit(file: str | None, cause: str) -> str:
    """The one-line problem of a Delta log with a commit file that can't be parsed (`file`, if known)."""
    which = f"the commit file {file}" if file else "a commit file"
    cause = cause if len(cause) <= 160 else cause[:157] + "..."
    return (
        f"its Delta log (_delta_log) is corrupt: {which} isn't valid JSON ({cause}), cut short or overwritten; "
        "restore it from a backup (or your object store's versioning), then rerun"
    )


def _unparsable_commit(path: str) -> str | None:
    """The name of the newest commit file of a local Delta log (among its last `_COMMITS_SEARCHED`)
    that isn't JSON lines, if any."""
    if not is_local_path(path):
        return None
    log_dir = Path(_strip_file_scheme(path)) / "_delta_log"
    try:
        commits = sorted(log_dir.glob("*.json"), reverse=True)[:_COMMITS_SEARCHED]
        for commit in commits:
            with commit.open("rb") as handle:
                for line in handle:
                    if line.strip():
                        json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return f"_delta_log/{commit.name}"
    except OSError:
        return None
    return None


_COMMITS_SEARCHED = 1000
"""How many of the newest commit files a corrupt log's message looks through for the bad one
(readers replay the commits after the last checkpoint, usually far fewer)."""


_PANIC = re.compile(r"^thread '.*' (\(\d+\) )?panicked at ")
_PANIC_FRAME = re.compile(r"^\s+(\d+: |at )")
_QUIET_LOCK = threading.Lock()
_quiet_depth = 0


@contextmanager
def rust_panics_logged() -> Iterator[None]:
    """Within the block, Rust panics that deltalake's threads print to stderr are logged (at DEBUG) instead.

    A panic in one of deltalake's worker threads (object_store's "Already shut down" after a
    failed write, on a full disk) is printed to the process's stderr by Rust's panic hook,
    which Python can't replace; deltalake then raises its error as usual. Here stderr (file
    descriptor 2) is a pipe for the block's length, and a thread copies what comes through
    it back to stderr as it comes, but for a panic's lines (its message, and its backtrace
    when RUST_BACKTRACE is set). Nested and concurrent blocks share one pipe.
    """
    global _quiet_depth
    with _QUIET_LOCK:
        _quiet_depth += 1
        first = _quiet_depth == 1
        redirect = _PanicFilter.start() if first else None
        if first:
            _PanicFilter.active = redirect
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                active, _PanicFilter.active = _PanicFilter.active, None
                if active is not None:
                    active.stop()


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # stderr closed: nothing to show it on


class _PanicFilter:
    """fd 2 through a pipe, copied back to the saved stderr but for Rust panics (see `rust_panics_logged`)."""

    active: _PanicFilter | None = None

    def __init__(self, saved: int, reader: int) -> None:
        self.saved = saved
        self.reader = reader
        self.state = "normal"  # normal, message (the line after "panicked at"), after, frames
        self.swallowed: list[str] = []
        self.blank = b""
        self.thread = threading.Thread(target=self._copy, name="chatgate-stderr", daemon=True)

    @classmethod
    def start(cls) -> _PanicFilter | None:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):
            return None  # no stderr to filter
        reader, writer = os.pipe()
        os.dup2(writer, 2)
        os.close(writer)
        running = cls(saved, reader)
        running.thread.start()
        return running

    def stop(self) -> None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os.dup2(self.saved, 2)  # closes the pipe's last writer: the copying thread reads to its end
        self.thread.join(timeout=5)
        if not self.thread.is_alive():  # else a child process holds the pipe: the thread keeps the descriptor
            os.close(self.saved)
        if self.swallowed:
            log.debug("deltalake's Rust code panicked (kept off stderr):\n%s", "\n".join(self.swallowed))

    def _copy(self) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self.reader, 65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._line(line + b"\n")
                could_be_panic = pending.startswith(b"thread '") or b"thread '".startswith(pending)
                if pending and self.state == "normal" and not could_be_panic:
                    # A progress bar's line in the making: shown now.
                    _write_all(self.saved, self.blank + pending)
                    self.blank = pending = b""
            if pending:
                self._line(pending)
            _write_all(self.saved, self.blank)
        finally:
            os.close(self.reader)

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if self.state == "normal" and not line.strip():
            self.blank += raw  # Rust's panic hook starts with an empty line: held until the next line
            return
        if _PANIC.match(line):
            self.blank = b""
            self.state = "message"
        elif self.state == "message":
            self.state = "after"
        elif self.state == "after" and line.startswith("stack backtrace:"):
            self.state = "frames"
        elif self.state in ("after", "frames") and line.startswith("note: "):
            self.state = "normal"
        elif self.state == "frames" and _PANIC_FRAME.match(line):
            pass
        else:
            self.state = "normal"
            _write_all(self.saved, self.blank + raw)
            self.blank = b""
            return
        self.swallowed.append(line)


def _strip_file_scheme(path: str) -> str:
    return path.removeprefix("file://")
