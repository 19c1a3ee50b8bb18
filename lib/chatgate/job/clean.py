"""What `chatgate clean` removes: one run's rows, from the output tables its flags or a job config name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .config import (
    _OUTPUT_KEYS,
    _given,
    _mapping,
    _merged,
    _named_text,
    _read_yaml,
    check_run_id,
    refuse_unknown_keys,
)
from .locations import check_locations
from .registry import DEFAULT_BACKEND, backend


@dataclass(frozen=True)
class CleanConfig:
    """What `chatgate clean` removes: the rows of one run id from the output tables named."""

    run_id: str
    tables: dict[str, str]
    """Output role (quarantine, summary, valid, fixed) -> target."""
    engine: str = DEFAULT_BACKEND


def load_clean_config(path: str | Path | None, overrides: dict[str, Any]) -> CleanConfig:
    """The run id and output tables of `chatgate clean`: the flags, on top of a job config's outputs."""
    raw = _read_yaml(Path(path)) if path is not None else {}
    outputs = _merged(_mapping(raw.get("outputs"), "outputs"), overrides, _OUTPUT_KEYS)
    refuse_unknown_keys(outputs, _OUTPUT_KEYS, "outputs")
    tables = {k: _named_text(f"outputs.{k}", v) for k, v in outputs.items() if v is not None}
    if not tables:
        raise ConfigError("name the tables to clean (--quarantine, --summary, --valid, --fixed, or --config FILE)")
    run_id = overrides.get("run_id")
    if run_id is None:
        raise ConfigError("run_id: name the run whose rows to delete (--run-id ID)")
    run_id = _named_text("run_id", run_id)
    check_run_id(run_id)
    engine = _given(overrides, raw, "engine", DEFAULT_BACKEND)
    check_locations(list(tables.items()), catalog_names=backend(engine).catalog)
    return CleanConfig(run_id=run_id, tables=tables, engine=engine)
