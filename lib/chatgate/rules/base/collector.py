"""Python's cycle collector, paused while conversations are repaired in bulk.

Decoding and repairing make many short-lived lists and dicts and no reference cycles:
reference counts free them, and each collection they set off walks the objects the
process tracks (all of them, in a full one) for nothing. The pause is counted: threads
that repair batches at once (DuckDB calls a Python function from several) share it,
and the collector is back on when the last of them is done, if it was on before the first.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pause:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.was_enabled = False


_PAUSE = _Pause()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off for the block (and for every other thread's paused block)."""
    with _PAUSE.lock:
        if _PAUSE.holders == 0:
            _PAUSE.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSE.holders += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.holders -= 1
            if _PAUSE.holders == 0 and _PAUSE.was_enabled:
                gc.enable()
