"""The check on every core: worker processes fed Arrow batches, codes given back in order.

The Python check holds the GIL, so one process checks on one core. `CheckPool`
starts worker processes (`python -m chatgate.engines.workers`), hands each
batch to the next worker in turn as an Arrow IPC stream on its stdin, and reads
the codes back from its stdout; `CheckPool.codes` yields them in the order of
the batches, so verdicts, counts and reason orders are those of one process.

Workers are fresh interpreters, never forks: the parent runs DuckDB's threads
(or Spark's), which a fork would copy in whatever state they are. They import
only the rules, get the check pickled once, and hold one batch at a time; at
most `IN_FLIGHT` batches per worker wait in the pipes, so memory stays bounded.
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

import pyarrow as pa

from ..errors import ChatgateError
from ..rules import RowCheck

T = TypeVar("T")

IN_FLIGHT = 2
"""Batches handed to each worker before the pool waits for the oldest one's codes."""

CODES = pa.schema([("code", pa.string())])
_END = object()
_HEADER = struct.Struct(">Q")


class CheckPool:
    """`workers` processes that judge batches with `check`; use it as a context manager."""

    def __init__(self, check: RowCheck, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be 1 or more, not {workers}")
        self._check = pickle.dumps(check)
        self._workers = [_Worker(self._check) for _ in range(workers)]

    def codes(self, items: Iterable[tuple[T, pa.RecordBatch]]) -> Iterator[tuple[T, pa.Array]]:
        """For each (payload, batch), in order: the payload and the codes of the batch."""
        pending: deque[tuple[T, _Worker]] = deque()
        for n, (payload, batch) in enumerate(items):
            worker = self._workers[n % len(self._workers)]
            worker.send(batch)
            pending.append((payload, worker))
            if len(pending) >= IN_FLIGHT * len(self._workers):
                payload, worker = pending.popleft()
                yield payload, worker.receive()
        while pending:
            payload, worker = pending.popleft()
            yield payload, worker.receive()

    def close(self) -> None:
        for worker in self._workers:
            worker.close()

    def __enter__(self) -> CheckPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class _Worker:
    """One worker process, its input stream, and a thread draining its codes into a queue."""

    def __init__(self, check: bytes) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chatgate.engines.workers"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        self.stdin.write(_HEADER.pack(len(check)) + check)
        self.writer: pa.ipc.RecordBatchStreamWriter | None = None
        self.results: queue.Queue[Any] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._drain, args=(self.process.stdout,), daemon=True).start()
        assert self.process.stderr is not None
        threading.Thread(target=self._keep_errors, args=(self.process.stderr,), daemon=True).start()

    def send(self, batch: pa.RecordBatch) -> None:
        try:
            if self.writer is None:
                self.writer = pa.ipc.new_stream(self.stdin, batch.schema)
            self.writer.write_batch(batch)
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failure() from None

    def receive(self) -> pa.Array:
        item = self.results.get()
        if item is _END or isinstance(item, BaseException):
            raise self._failure()
        return item

    def close(self) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
            self.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _failure(self) -> ChatgateError:
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        last = next((line for line in reversed(self.errors) if line.strip()), "no message")
        return ChatgateError(f"a check worker process stopped (exit status {self.process.returncode}): {last.strip()}")

    def _drain(self, stdout: IO[bytes]) -> None:
        try:
            for batch in pa.ipc.open_stream(stdout):
                self.results.put(batch.column(0))
            self.results.put(_END)
        except Exception as error:  # noqa: BLE001 - the worker died: receive() reports it
            self.results.put(error)

    def _keep_errors(self, stderr: IO[bytes]) -> None:
        for line in stderr:
            self.errors.append(line.decode("utf-8", "replace"))


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """A worker's loop: read the check, then judge each batch of stdin and write its codes to stdout."""
    (size,) = _HEADER.unpack(stdin.read(_HEADER.size))
    check: RowCheck = pickle.loads(stdin.read(size))
    try:
        batches = pa.ipc.open_stream(stdin)
    except pa.ArrowInvalid:  # closed before any batch: nothing to judge
        return
    with pa.ipc.new_stream(stdout, CODES) as writer:
        for batch in batches:
            codes = check.check(batch)
            if isinstance(codes, pa.ChunkedArray):
                codes = codes.combine_chunks()
            writer.write_batch(pa.record_batch([codes.cast(pa.string())], schema=CODES))
            stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
