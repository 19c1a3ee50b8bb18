"""A stream of Arrow batches read ahead on a thread, so that the engine reads while Python checks.

DuckDB's Arrow reader runs the query as batches are asked for, and lets go of the GIL while it
does: read on a thread of its own, the next batches are made while the caller hands the last
ones to the check and counts their codes, instead of one after the other.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from types import TracebackType

import pyarrow as pa

AHEAD = 2
"""Batches read ahead of the caller: enough to keep the check fed, few enough for memory."""

_DONE = object()


class Prefetched:
    """The batches of `reader`, read on a thread `ahead` batches ahead; a failure of the read is
    raised where the batch would have been. Leaving the block early (or on an error) stops the
    thread before the reader is closed, so the reader is never closed under a read."""

    def __init__(self, reader: pa.RecordBatchReader, ahead: int = AHEAD) -> None:
        self._reader = reader
        self._queue: queue.Queue[object] = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="chatgate-prefetch", daemon=True)

    def __enter__(self) -> Prefetched:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, pa.RecordBatch)
            yield item

    def close(self) -> None:
        """Stop reading ahead and wait for the thread: it ends after the read in progress."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)  # makes room for a put the thread waits on
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)

    def _read(self) -> None:
        try:
            for batch in self._reader:
                if not self._put(batch):
                    return
        except BaseException as error:  # noqa: BLE001 - raised in the caller's thread instead
            self._put(error)
            return
        self._put(_DONE)

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False
