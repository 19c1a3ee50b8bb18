"""A few quarantined rows per step and reason, read from the quarantine table in batches.

A quarantine can hold millions of rows: the scan keeps only the run's rows (pushed
down into a local table's Parquet files), takes the first few of each step and
reason, and stops as soon as every reason the summary lists has its examples.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..names import COLUMN, JOB_RESERVED, MESSAGE, REASON, RUN_ID, STEP
from .model import Example, ReasonExamples, StepSummary
from .tables import require_columns
from .window import as_text, clip, message_window

QUARANTINE_COLUMNS = (REASON, STEP, COLUMN, RUN_ID)
RESERVED = frozenset(JOB_RESERVED)
OTHER_COLUMNS = 3
"""Source columns shown beside the checked one(s), to find the row again (an id, a source, ...)."""

OTHER_CHARS = 80
BATCH_ROWS = 4096


def find_examples(
    source: Any, run_id: str, steps: list[StepSummary], *, per_reason: int, chars: int, table: str
) -> tuple[list[ReasonExamples], bool]:
    """Up to `per_reason` rows of each step and reason of the run, and whether rows carry a message index."""
    names: list[str] = list(source.schema.names)
    require_columns(names, QUARANTINE_COLUMNS, table, "quarantine")
    has_message = MESSAGE in names
    shown = {step.step: _shown_columns(step.column, names) for step in steps}
    found: dict[tuple[int, str], list[Example]] = {(s.step, r): [] for s in steps for r in s.reasons}
    if per_reason and found:
        wanted = sorted({c for checked, others in shown.values() for c in checked + others})
        columns = [*wanted, STEP, REASON] + ([MESSAGE] if has_message else [])
        for batch in _run_batches(source, run_id, columns):
            _collect(batch, found, shown, per_reason, chars, has_message)
            if all(len(rows) >= per_reason for rows in found.values()):
                break
    out = [
        ReasonExamples(s.step, s.column, reason, count, found[(s.step, reason)])
        for s in steps
        for reason, count in s.reasons.items()
    ]
    return out, has_message


def _shown_columns(label: str, names: list[str]) -> tuple[list[str], list[str]]:
    """The columns a step checked (its label joins a dataset type's with ', '), and a few others."""
    checked = [label] if label in names else [c for c in label.split(", ") if c in names]
    others = [c for c in names if c not in RESERVED and c not in checked][:OTHER_COLUMNS]
    return checked, others


def _run_batches(source: Any, run_id: str, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The run's rows of `columns`, batch by batch."""
    import pyarrow.dataset as ds

    if isinstance(source, ds.Dataset):
        wanted = ds.field(RUN_ID) == run_id
        yield from source.to_batches(columns=columns, filter=wanted, batch_size=BATCH_ROWS)
        return
    # deltalake's own reader (column mapping, deletion vectors, remote): filter each batch here.
    for batch in pa.RecordBatchReader.from_stream(source):
        mine = batch.filter(pc.equal(batch.column(RUN_ID), pa.scalar(run_id, pa.string())))
        if mine.num_rows:
            yield mine.select(columns)


def _collect(
    batch: pa.RecordBatch,
    found: dict[tuple[int, str], list[Example]],
    shown: dict[int, tuple[list[str], list[str]]],
    per_reason: int,
    chars: int,
    has_message: bool,
) -> None:
    """Add the rows of `batch` whose step and reason still lack examples."""
    keys = zip(batch.column(STEP).to_pylist(), batch.column(REASON).to_pylist())
    still = {key: per_reason - len(rows) for key, rows in found.items()}
    take: list[tuple[int, tuple[int, str]]] = []
    for index, key in enumerate(keys):
        if still.get(key, 0) > 0:
            still[key] -= 1
            take.append((index, key))
    if not take:
        return
    picked = batch.take(pa.array([index for index, _ in take], pa.int64())).to_pylist()
    for row, (_, (step, reason)) in zip(picked, take):
        checked, others = shown[step]
        message = row.get(MESSAGE) if has_message else None
        at = None if message is None else int(message)
        found[(step, reason)].append(
            Example(
                # A long conversation shows its start and the message at fault, not only its start.
                values={c: message_window(row[c], at, chars) for c in checked},
                others={c: clip(as_text(row[c]), OTHER_CHARS) for c in others},
                message=at,
            )
        )


__all__ = ["as_text", "clip", "find_examples"]
