"""The check on every core: worker processes fed Arrow batches, codes given back in order.

The Python check holds the GIL, so one process checks on one core. `CheckPool`
starts worker processes (`python -m chatgate.engines.workers`) and hands each
batch to the next worker in turn: the batch is written once, as an Arrow IPC
file, to shared memory (/dev/shm where there is one), and its path goes down the
worker's stdin; the worker maps it without a copy, checks it, deletes it, and
writes the codes back on its stdout. (Sending the batches themselves through the
pipes cost more CPU than the check.) `CheckPool.codes` yields the codes in the
order of the batches, so verdicts, counts and reason orders are those of one
process.

Workers are fresh interpreters, never forks: the parent runs DuckDB's threads
(or Spark's), which a fork would copy in whatever state they are. They import
chatgate without any engine's library (no DuckDB, Ibis or Spark), get the check
pickled once, and hold one batch at a time; at most `IN_FLIGHT` batches per
worker wait in shared memory, so memory stays bounded.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol, TypeVar

import pyarrow as pa

from ..errors import ChatgateError
from ..rules import RowCheck

T = TypeVar("T")
log = logging.getLogger("chatgate")

IN_FLIGHT = 2
"""Batches handed to each worker before the pool waits for the oldest one's codes."""

BATCH_BYTES_ROOM = 256 * 2**20
"""Room asked of /dev/shm per batch in flight (a batch of 10,000 rows of long chats is tens of MB)."""

CODES = pa.schema([("code", pa.string())])
_END = object()
_HEADER = struct.Struct(">Q")
_PEAK_KEY = b"chatgate_peak_memory"


def peak_memory(pid: int) -> int | None:
    """A process's peak resident memory since it started (Linux's VmHWM), in bytes; None elsewhere.

    Not `getrusage`: a child's figure starts at its forking parent's resident memory
    (the pages the fork copied count until `exec`, and Linux carries them across it).
    """
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


class CheckPool:
    """`workers` processes that judge batches with `check`; use it as a context manager."""

    def __init__(self, check: RowCheck, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be 1 or more, not {workers}")
        self._check = pickle.dumps(check)
        folder = _shared_memory(IN_FLIGHT * workers * BATCH_BYTES_ROOM)
        self._folder = tempfile.TemporaryDirectory(prefix="chatgate-batches-", dir=folder)
        self._workers = [_Worker(self._check, Path(self._folder.name)) for _ in range(workers)]

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
        peaks = [peak for worker in self._workers if (peak := worker.peak_memory()) is not None]
        for worker in self._workers:
            worker.close()
        self._folder.cleanup()
        if peaks:
            log.info("check workers' peak memory: %d MiB", max(peaks) // 2**20)

    def __enter__(self) -> CheckPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class _Worker:
    """One worker process, its input stream, and a thread draining its codes into a queue."""

    def __init__(self, check: bytes, folder: Path | None, arrived: queue.Queue[Any] | None = None) -> None:
        """`check` is the pickled job; a worker of `run_tasks` puts what it sends back on `arrived`
        (its batches with their metadata, then itself), one of `CheckPool` on a queue of its own and
        is sent its batches through files in `folder`."""
        self.folder = folder
        self.sent = 0
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
        self.results: queue.Queue[Any] = queue.Queue()
        self.errors: list[str] = []
        self.stdin.flush()
        if arrived is not None:
            self.stdin.close()
            threading.Thread(target=self._drain_task, args=(self.process.stdout, arrived), daemon=True).start()
        else:
            threading.Thread(target=self._drain, args=(self.process.stdout,), daemon=True).start()
        assert self.process.stderr is not None
        self._stderr = threading.Thread(target=self._keep_errors, args=(self.process.stderr,), daemon=True)
        self._stderr.start()

    def send(self, batch: pa.RecordBatch) -> None:
        assert self.folder is not None, "a task's worker is sent nothing"
        path = self.folder / f"{self.process.pid}-{self.sent}.arrow"
        self.sent += 1
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
        try:
            self.stdin.write(str(path).encode("utf-8") + b"\n")
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failure() from None

    def receive(self) -> pa.Array:
        item = self.results.get()
        if item is _END or isinstance(item, BaseException):
            raise self._failure()
        return item

    def peak_memory(self) -> int | None:
        """The worker's peak resident memory since it started (Linux), in bytes."""
        return peak_memory(self.process.pid)

    def close(self) -> None:
        try:
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
        self._stderr.join(timeout=5)  # its last lines, the traceback, may still be on their way
        last = next((line for line in reversed(self.errors) if line.strip()), "no message")
        return ChatgateError(f"a check worker process stopped (exit status {self.process.returncode}): {last.strip()}")

    def _drain(self, stdout: IO[bytes]) -> None:
        try:
            for batch in pa.ipc.open_stream(stdout):
                self.results.put(batch.column(0))
            self.results.put(_END)
        except Exception as error:  # noqa: BLE001 - the worker died: receive() reports it
            self.results.put(error)

    def _drain_task(self, stdout: IO[bytes], arrived: queue.Queue[Any]) -> None:
        try:
            reader = pa.ipc.open_stream(stdout)
            while True:
                try:
                    batch, metadata = reader.read_next_batch_with_custom_metadata()
                except StopIteration:
                    break
                arrived.put((batch, dict(metadata or {})))
        except Exception as error:  # noqa: BLE001 - the worker died: run_tasks reports it
            arrived.put((self, error))
            return
        arrived.put(self)

    def _keep_errors(self, stderr: IO[bytes]) -> None:
        for line in stderr:
            self.errors.append(line.decode("utf-8", "replace"))


class Task(Protocol):
    """Work a worker does on its own (see `run_tasks`): it emits batches of `schema`, each with metadata."""

    @property
    def schema(self) -> pa.Schema: ...

    def __call__(self, emit: Callable[[pa.RecordBatch, dict[bytes, bytes]], None]) -> None: ...


def run_tasks(tasks: Sequence[Task]) -> Iterator[tuple[pa.RecordBatch, dict[bytes, bytes]]]:
    """Run each task in a worker process of its own, all at once; yield their batches and
    metadata as they come (in no set order). A worker that fails raises `ChatgateError` here
    with its last line of error; leaving early stops the others."""
    try:
        jobs = [pickle.dumps(task) for task in tasks]
    except Exception as error:  # noqa: BLE001 - a task that can't be sent: the caller's fallback
        raise ChatgateError(f"a task can't be sent to a worker process: {error}") from error
    arrived: queue.Queue[Any] = queue.Queue()
    workers: list[_Worker] = []
    peaks: list[int] = []
    try:
        for job in jobs:
            try:
                workers.append(_Worker(job, None, arrived))
            except OSError as error:
                raise ChatgateError(f"a worker process couldn't start: {error}") from error
        running = len(workers)
        while running:
            item = arrived.get()
            if isinstance(item, _Worker):  # one worker's stream ended
                if item.process.wait() != 0:
                    raise item._failure()
                running -= 1
            elif isinstance(item[1], BaseException):
                raise item[0]._failure()
            elif _PEAK_KEY in item[1]:
                peaks.append(int(item[1][_PEAK_KEY]))
            else:
                yield item
        if peaks:
            log.info("check workers' peak memory: %d MiB", max(peaks) // 2**20)
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.kill()
            worker.close()


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """A worker's loop: read its job; for a check, judge each batch whose path comes on stdin
    and write its codes to stdout; for a `Task`, run it, writing what it emits to stdout."""
    (size,) = _HEADER.unpack(stdin.read(_HEADER.size))
    job = pickle.loads(stdin.read(size))
    if not isinstance(job, RowCheck):
        with pa.ipc.new_stream(stdout, job.schema) as writer:
            job(lambda batch, metadata: _write(writer, batch, metadata, stdout))
            # Last, the worker's peak memory: once it has ended, the parent can't read it.
            peak = str(peak_memory(os.getpid()) or 0).encode()
            _write(writer, pa.RecordBatch.from_pylist([], schema=job.schema), {_PEAK_KEY: peak}, stdout)
        return
    check: RowCheck = job
    with pa.ipc.new_stream(stdout, CODES) as writer:
        for line in stdin:
            path = line.decode("utf-8").rstrip("\n")
            with pa.memory_map(path) as source:
                batch = pa.ipc.open_file(source).get_batch(0)
                codes = check.check(batch)
                if isinstance(codes, pa.ChunkedArray):
                    codes = codes.combine_chunks()
                codes = codes.cast(pa.string())
                del batch
            os.unlink(path)
            writer.write_batch(pa.record_batch([codes], schema=CODES))
            stdout.flush()


def _write(writer: Any, batch: pa.RecordBatch, metadata: dict[bytes, bytes], stdout: IO[bytes]) -> None:
    writer.write_batch(batch, custom_metadata=metadata)
    stdout.flush()


def _shared_memory(needed: int) -> str | None:
    """Where batches are written for the workers: /dev/shm when it has room for them, else
    the system's temp directory (containers often give /dev/shm 64 MB only)."""
    try:
        if os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free >= needed:
            return "/dev/shm"
    except OSError:
        pass
    return None


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
