"""The embedded engine reads its stream ahead on a thread (engines/ibis/prefetch.py): every batch
in order, a failure of the read raised to the caller, and an early stop that ends the thread."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from chatgate.engines.ibis.prefetch import Prefetched


def _reader(n: int, fail_at: int | None = None, delay: float = 0.0) -> pa.RecordBatchReader:
    schema = pa.schema([("i", pa.int64())])

    def batches():
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"the source broke at batch {i}")
            time.sleep(delay)
            yield pa.record_batch([pa.array([i], pa.int64())], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def _threads() -> int:
    return sum(t.name == "chatgate-prefetch" for t in threading.enumerate())


def test_every_batch_comes_in_order():
    with Prefetched(_reader(50)) as batches:
        assert [b.column(0)[0].as_py() for b in batches] == list(range(50))
    assert _threads() == 0


def test_a_failed_read_is_raised_to_the_caller():
    seen = []
    with pytest.raises(ValueError, match="the source broke at batch 3"), Prefetched(_reader(10, fail_at=3)) as batches:
        seen.extend(b.column(0)[0].as_py() for b in batches)
    assert seen == [0, 1, 2] and _threads() == 0


def test_stopping_early_ends_the_thread():
    with Prefetched(_reader(1000, delay=0.001), ahead=2) as batches:
        for batch in batches:
            if batch.column(0)[0].as_py() == 5:
                break
    assert _threads() == 0


def test_the_next_batch_is_read_while_the_caller_holds_one():
    schema = pa.schema([("i", pa.int64())])
    second_read = threading.Event()

    def batches():
        yield pa.record_batch([pa.array([0], pa.int64())], schema=schema)
        second_read.set()
        yield pa.record_batch([pa.array([1], pa.int64())], schema=schema)

    with Prefetched(pa.RecordBatchReader.from_batches(schema, batches())) as read:
        it = iter(read)
        next(it)
        assert second_read.wait(timeout=10)  # read ahead, the caller still on the first batch
        assert next(it).column(0)[0].as_py() == 1


@pytest.mark.parametrize("workers, ahead", [(1, False), (2, True)])
def test_one_worker_reads_in_turn_more_read_ahead(monkeypatch, workers, ahead):
    """`--threads 1` takes one core: the stream isn't read ahead on a thread of its own then."""
    import ibis

    from chatgate.engines.ibis import prefetch, stream
    from chatgate.engines.ibis.duckdb import DuckDBEngine
    from chatgate.rules import ChatFormat

    used = []
    monkeypatch.setattr(stream, "Prefetched", lambda reader: used.append(1) or prefetch.Prefetched(reader))
    table = ibis.memtable({"chat": ['[{"role": "user", "content": "Hi"}]', "[]"] * 30})
    engine = DuckDBEngine(chunk_size=4, workers=workers, progress=False)
    assert engine.judge(table, "chat", ChatFormat(), dedup="off").failed == 30
    assert bool(used) is ahead
