"""Progress of a long pass: a tqdm bar on a terminal, a plain line every few seconds otherwise.

One reporter, `Progress`, serves every engine and the job alike: the embedded engine
counts the rows it streams to the check (`update`), the Spark engine polls the tasks
of its jobs from the driver (`poll`, see engines/spark/progress.py), and a pass that
counts nothing (a write) shows how long it has run. It writes to stderr only:

- a tqdm bar when stderr is a terminal that says its width (`CHATGATE_PROGRESS=1`: always);
- otherwise a line on the `chatgate.progress` logger at INFO every `interval()` seconds,
  e.g. ``step 1 (messages): 120,000 of 500,000 rows checked, 41,000/s, about 9 s left``
  (`CHATGATE_PROGRESS=lines`: even on a terminal). The CLI shows INFO lines unless
  `--quiet`; the API shows them where its caller's logging does;
- nothing with `CHATGATE_PROGRESS=0`, within `silenced()` (the CLI's `--quiet`), or with
  an engine's `progress=False`.

The line's interval is `CHATGATE_PROGRESS_INTERVAL` seconds (default `INTERVAL`). A
reporter is a context manager: leaving it, by an error too, stops its thread and
clears its bar before anything else is printed.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Literal

ENV = "CHATGATE_PROGRESS"
INTERVAL_ENV = "CHATGATE_PROGRESS_INTERVAL"
INTERVAL = 5.0
"""Seconds between two progress lines when stderr isn't a terminal."""
BAR_REFRESH = 0.5
"""Seconds between two refreshes of a bar that is polled or counts nothing."""
BAR_DELAY = 1.0
"""A bar without a total (a write) is drawn once its pass has run this long."""

Mode = Literal["bar", "lines", "off"]
Poll = Callable[[], tuple[int, int | None]]
"""What a polled pass has done, and its total when known."""

log = logging.getLogger("chatgate.progress")

_silenced = False
_label: contextvars.ContextVar[str | None] = contextvars.ContextVar("chatgate_progress_label", default=None)


def silence(quiet: bool = True) -> None:
    """No progress at all in this process; `silence(False)` undoes it."""
    global _silenced
    _silenced = quiet


@contextlib.contextmanager
def silenced(quiet: bool = True) -> Iterator[None]:
    """No progress within the block when `quiet` (the CLI's `--quiet`); as before after it."""
    before = _silenced
    silence(quiet or before)
    try:
        yield
    finally:
        silence(before)


def mode(setting: bool | None = None) -> Mode:
    """How progress is shown: `setting` is an engine's `progress=` (None: decide from the environment)."""
    if setting is False or _silenced:
        return "off"
    if setting is True:
        return "bar"
    env = os.environ.get(ENV, "").strip().lower()
    if env in ("0", "off", "no", "false"):
        return "off"
    if env in ("1", "bar", "on", "yes", "true"):
        return "bar"
    if env in ("lines", "log"):
        return "lines"
    return "bar" if _is_tty() and _columns() > 0 else "lines"


def interval() -> float:
    """Seconds between two progress lines (`CHATGATE_PROGRESS_INTERVAL`, else `INTERVAL`)."""
    try:
        seconds = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return INTERVAL
    return seconds if seconds > 0 else INTERVAL


@contextlib.contextmanager
def labelled(label: str) -> Iterator[None]:
    """Within the block, the passes that report progress are named `label` (the job's "step 1 (messages)")."""
    token = _label.set(label)
    try:
        yield
    finally:
        _label.reset(token)


def label_or(default: str) -> str:
    """The label set by `labelled`, else `default`."""
    return _label.get() or default


class Progress:
    """The progress of one pass, shown as `mode()` says (see the module notes).

    `total` is what the pass will do when known (then the time left is shown); `unit`
    and `verb` name it ("rows", "checked"). Count with `update(n)`, or give `poll`, a
    function asked from the reporter's thread what is done and the total. With
    `counting=False`, the reporter shows how long the pass has run, nothing more.
    `show` overrides `mode()`.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "rows",
        verb: str = "checked",
        poll: Poll | None = None,
        counting: bool = True,
        show: Mode | None = None,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.verb = verb
        self.poll = poll
        self.mode: Mode = mode() if show is None else show
        self.done = 0
        self.counted = counting or poll is not None
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._first: tuple[float, int] | None = None
        self._redirect: contextlib.ExitStack | None = None

    # -- counting ------------------------------------------------------------------------

    def update(self, n: int) -> None:
        """`n` more done."""
        with self._lock:
            self.done += int(n)
            if self._first is None and self.done > 0:
                self._first = (time.monotonic(), self.done)
            if self._bar is not None:
                self._bar.update(int(n))

    def line(self) -> str:
        """What a progress line says now."""
        with self._lock:
            done, total, counted = self.done, self.total, self.counted
        now = time.monotonic()
        if not counted or (self.poll is not None and not total):  # a poll before its first task knows nothing
            return f"{self.label}: {duration(now - self.started)} so far"
        of = f" of {total:,}" if total else ""
        text = f"{self.label}: {done:,}{of} {self.unit} {self.verb}"
        rate = self._rate(now, done)
        if rate is None:
            return text
        text += f", {_rate(rate)}/s"
        if total and done < total:
            text += f", about {duration((total - done) / rate)} left"
        return text

    def _rate(self, now: float, done: int) -> float | None:
        """Units per second since the first were done (a pass's start-up isn't its pace); None before."""
        if done <= 0:
            return None
        if self._first is None:
            self._first = (now, done)
        since, before = self._first
        if now - since >= 1.0 and done > before:
            return (done - before) / (now - since)
        elapsed = now - self.started
        return done / elapsed if elapsed > 0 else None

    # -- showing -------------------------------------------------------------------------

    def __enter__(self) -> Progress:
        self.started = time.monotonic()
        if self.mode == "bar":
            self._open_bar()
        if self.mode == "lines" or (self.mode == "bar" and (self.poll is not None or not self.counted)):
            self._thread = threading.Thread(target=self._tick, name="chatgate-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the thread and clear the bar (leaving the reporter does)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        with self._lock:
            bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()
        if self._redirect is not None:
            self._redirect.close()
            self._redirect = None

    def _open_bar(self) -> None:
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm

        plain = not self.counted
        self._bar = tqdm(
            total=self.total,
            desc=self.label,
            unit=self.unit if self.unit != "rows" else "row",
            unit_scale=self.unit == "rows",
            leave=False,
            miniters=0,  # every update may draw (at most every tqdm's mininterval): the ticker's too
            file=sys.stderr,
            bar_format="{desc}: {elapsed}" if plain else None,
            delay=0 if self.total else BAR_DELAY,
        )
        # A log line while the bar is drawn goes above it, not into it.
        self._redirect = contextlib.ExitStack()
        self._redirect.enter_context(logging_redirect_tqdm([logging.getLogger(), logging.getLogger("chatgate")]))

    def _tick(self) -> None:
        wait = interval() if self.mode == "lines" else BAR_REFRESH
        while not self._stop.wait(wait):
            try:
                self._polled()
            except Exception:  # noqa: BLE001 - progress never fails the pass
                log.debug("could not poll the progress of %s", self.label, exc_info=True)
                continue
            if self._stop.is_set():
                return
            if self.mode == "lines":
                log.info("%s", self.line())
            elif self.poll is None:
                self._refresh()

    def _polled(self) -> None:
        if self.poll is None:
            return
        done, total = self.poll()
        with self._lock:
            step, self.done, self.total = done - self.done, done, total
            if self._bar is not None:
                self._bar.total = total
                self._bar.update(max(0, step))

    def _refresh(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.update(0)  # drawn (once its delay is past) and counted as drawn, so closing clears it


def duration(seconds: float) -> str:
    """A duration as people say it: "9 s", "2 min 5 s", "1 h 3 min"."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def _rate(per_second: float) -> str:
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:,.1f}"


def _columns() -> int:
    """The width of the terminal stderr is on; 0 where it says none (tqdm then draws nothing at all)."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def _is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
