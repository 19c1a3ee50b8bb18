"""Seeded synthetic Delta tables for the benchmarks, cached under bench/.data (not committed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from chatgate import read_delta
from chatgate.sample import chat_table

DATA_DIR = Path(__file__).resolve().parent / ".data"
CHUNK = 100_000
# About 2.5 KB of JSON per row on average (2,552 bytes in a file of the 1M-row table).
MEAN_WORDS = 95


DEFECTS = 0.05
"""The share of defective rows in the benchmark's tables, but for the one with few failing rows."""


def source_table(rows: int, duplicate_fraction: float, defect_fraction: float = DEFECTS, seed: int = 1) -> str:
    """The path of a Delta table with these properties, generated once and reused."""
    name = f"chats_{rows}_d{int(duplicate_fraction * 100)}_f{int(defect_fraction * 100)}_s{seed}"
    path = DATA_DIR / name
    if (path / "_delta_log").is_dir():
        return str(path)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        chunk = chat_table(
            n,
            seed=seed * 1_000_003 + start,
            duplicate_fraction=duplicate_fraction,
            defect_fraction=defect_fraction,
            mean_words=MEAN_WORDS,
        )
        chunk = chunk.set_column(0, "id", pa.array(range(start + 1, start + n + 1), pa.int64()))
        write_deltalake(str(path), chunk, mode="append")
    return str(path)


def json_bytes(path: str) -> int:
    """Total bytes of JSON text in the messages column."""
    import pyarrow.compute as pc

    dataset = read_delta(path)
    total = 0
    for batch in dataset.to_batches(columns=["messages"]):
        total += pc.sum(pc.binary_length(batch.column(0))).as_py() or 0
    return total
