"""The job as a stream (`--stream`): the source read as a Delta stream, each micro-batch checked and
written as a run of its own.

A micro-batch is a run with the id `<stream id>-<batch id>`: its quarantine, valid and
fixed rows replace that run's rows, and its summary rows come last, as in any run. The
stream id is the config's run id, else one derived from the checkpoint's location, so a
stream restarted from its checkpoint gives a replayed batch the id it had: its rows are
replaced, never added twice, and a batch whose summary was written counts as complete.
Two streams with different ids (or checkpoints) write their own rows to the same outputs.

The outputs' columns are checked once, before the stream starts; each micro-batch's
thresholds give its exit status, and the stream's is the worst of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from ..engines.lakehouse import LakehouseEngine
from .config import JobConfig
from .outputs import ReadScope
from .runner import EXIT_OK, RunResult, check_rows, lakehouse_for, prepared_checks
from .stream_config import AVAILABLE_NOW
from .writes import Lakehouse

log = logging.getLogger("chatgate.job")

STREAM_SCOPE = "stream"
"""The summary's `scope` of a micro-batch: the rows the commits it read added."""


@dataclass
class StreamResult:
    """The micro-batches a stream checked, in the order they ran."""

    config: JobConfig
    batches: list[RunResult] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        return max((batch.exit_status for batch in self.batches), default=EXIT_OK)


def run_stream(config: JobConfig, engine: LakehouseEngine | None = None) -> StreamResult:
    """Check the source's micro-batches as `config.stream` says; returns once the stream stops
    (with the available-now trigger: once every commit there when it started is checked)."""
    if config.stream is None:
        raise ValueError("run_stream needs a config with stream settings")
    lake = lakehouse_for(config, engine)
    return lake.explaining(lambda: _run_stream(config, lake))


def _run_stream(config: JobConfig, lake: Lakehouse) -> StreamResult:
    assert config.stream is not None  # checked by run_stream
    stream = lake.store.open_stream(config.source)
    source_columns = lake.engine.columns(stream)
    checks = prepared_checks(config, lake, source_columns)
    result = StreamResult(config)

    def on_batch(rows: Any, batch_id: int) -> None:
        batch = replace(config, run_id=f"{config.run_id}-{batch_id}")
        started_at = datetime.now(timezone.utc)
        with lake.engine.reused(rows) as kept:
            checked = check_rows(
                batch, lake, checks, (kept, source_columns), None, ReadScope(scope=STREAM_SCOPE), started_at,
                hints=False,
            )
        result.batches.append(checked)
        units = checked.steps[0].judged.units if checked.steps else 0
        log.info("batch %d (run %s): %d rows checked, %d quarantined", batch_id, batch.run_id, units, checked.quarantined)

    trigger = None if config.stream.trigger == AVAILABLE_NOW else config.stream.trigger
    lake.engine.run_stream(stream, on_batch, config.stream.location(), trigger)
    return result
