"""A Structured Streaming run's settings: where the stream keeps its progress, and when it reads."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from ..errors import ConfigError

AVAILABLE_NOW = "available-now"
_INTERVAL = re.compile(r"\d+(\.\d+)?\s*(milliseconds?|ms|seconds?|s|minutes?|min|hours?|h)", re.IGNORECASE)


@dataclass(frozen=True)
class StreamConfig:
    """A Structured Streaming run: where the stream keeps its progress, and when it reads."""

    checkpoint: str
    trigger: str = AVAILABLE_NOW
    """available-now: everything new, in micro-batches, then stop; or an interval ("30 seconds")."""

    def __post_init__(self) -> None:
        if not str(self.checkpoint).strip():
            raise ConfigError("checkpoint: name where the stream keeps its progress (--checkpoint PATH)")
        if self.trigger != AVAILABLE_NOW and not _INTERVAL.fullmatch(str(self.trigger).strip()):
            raise ConfigError(
                f"trigger: {self.trigger!r} is neither {AVAILABLE_NOW!r} nor an interval such as '30 seconds'"
            )

    def location(self) -> str:
        """The checkpoint as a path or URL (never a catalog name)."""
        text = str(self.checkpoint)
        return text if "://" in text or text.startswith("file:") else os.path.abspath(text)

    def stream_id(self) -> str:
        """The stream's id when none is given: the same for every restart from this checkpoint."""
        return "stream-" + hashlib.sha256(self.location().encode("utf-8")).hexdigest()[:12]
