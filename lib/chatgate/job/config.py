"""The job's configuration: loaded from YAML and flags, and checked, in this one place.

A YAML file gives the defaults; flags override it. Every key is checked here, so
a typo fails at start-up with the key's name, not an hour into the run.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from ..engines.base import DEDUP_MODES, Dedup
from ..errors import ConfigError, did_you_mean
from ..rules import (
    DATASET_TYPES,
    FORMATS,
    ChatCheck,
    ChatFormat,
    RowCheck,
    dataset_checks,
    format_from,
    repair_names,
)
from ..rules.check.options import chat_options, from_text, kind_of
from ..step_params import TURNS, Turns
from ..thresholds import Thresholds
from .config_warnings import check_whole
from .embedded import EmbeddedConfig
from .locations import check_locations
from .registry import DEFAULT_BACKEND, backend
from .since import SINCE_LAST
from .stream_config import AVAILABLE_NOW, StreamConfig

_CHECK_KEYS = tuple(f.name for f in fields(ChatFormat))
RUN_ID_MAX_LENGTH = 250


@dataclass(frozen=True)
class StepConfig:
    """One step: a chat column and how its conversations must look."""

    column: str
    fmt: ChatFormat = field(default_factory=ChatFormat)
    tools_column: str | None = None
    images_column: str | None = None

    def check(self) -> RowCheck:
        return ChatCheck(self.column, self.fmt, self.tools_column, self.images_column)


@dataclass(frozen=True)
class DatasetConfig:
    """Steps of a TRL dataset type, built once the source's columns are known."""

    type: str | None = None  # None: detect it from the columns
    format: str = "auto"
    columns: tuple[tuple[str, str], ...] = ()
    fmt: ChatFormat = field(default_factory=ChatFormat)
    tools_column: str | None = "tools"
    images_column: str | None = "images"

    def checks(self, source_columns: list[str]) -> list[RowCheck]:
        try:
            return dataset_checks(
                self.type,
                source_columns,
                chat=self.fmt,
                format=self.format,
                columns=dict(self.columns),
                tools_column=self.tools_column,
                images_column=self.images_column,
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"dataset: {exc}") from None


@dataclass(frozen=True)
class OutputConfig:
    """Where the job writes: Delta paths (or catalog table names on Spark)."""

    quarantine: str
    summary: str
    valid: str | None = None
    fixed: str | None = None


@dataclass(frozen=True)
class JobConfig:
    source: str
    steps: tuple[StepConfig, ...]
    outputs: OutputConfig
    dataset: DatasetConfig | None = None
    engine: str = DEFAULT_BACKEND
    run_id: str = ""
    thresholds: Thresholds = field(default_factory=Thresholds)
    dedup: Dedup = "auto"
    source_version: int | None = None
    since: str | int | None = None
    """`last`, or a Delta version: check only the rows the commits after it inserted (see job/since.py)."""
    embedded: EmbeddedConfig = field(default_factory=EmbeddedConfig)
    turns: Turns = "first"
    """first: a failing row's code; all: also every problem of its value, in the quarantine's pb_reasons_."""
    fix: tuple[str, ...] = ()
    """The repairs and presets of --fix, as given (empty: no repairs); they apply in their own order."""
    valid_includes_fixed: bool = False
    stream: StreamConfig | None = None
    """Read the source as a Delta stream and check each micro-batch (Spark's Structured Streaming)."""

    def __post_init__(self) -> None:
        chosen = backend(self.engine)
        self._check_choices()
        if not self.run_id:
            object.__setattr__(self, "run_id", self.stream.stream_id() if self.stream else new_run_id())
        check_run_id(self.run_id)
        if chosen.engine != "duckdb" and self.embedded.settings():
            given = ", ".join(self.embedded.settings())
            raise ConfigError(f"embedded: {given} set the embedded engine's DuckDB, not {self.engine}'s memory")
        self._check_versions()
        self._check_fix()
        if self.stream is not None:
            self._check_stream(chosen.streams)
        checkpoint = [("checkpoint", self.stream.location())] if self.stream else []
        check_locations([*self.tables(), *checkpoint], catalog_names=chosen.catalog)

    def _check_choices(self) -> None:
        if self.dedup not in DEDUP_MODES:
            raise ConfigError(f"dedup: {self.dedup!r} isn't one of {list(DEDUP_MODES)}")
        if self.turns not in TURNS:
            raise ConfigError(f"turns: {self.turns!r} isn't one of {list(TURNS)}")
        if not self.steps and self.dataset is None:
            raise ConfigError(
                "columns: name at least one chat column to check (--column NAME), or a dataset type"
            )

    def _check_versions(self) -> None:
        if self.source_version is not None and not _is_version(self.source_version):
            raise ConfigError(f"source_version: {self.source_version!r} isn't a Delta version (0, 1, 2, ...)")
        if self.since is not None and self.since != SINCE_LAST and not _is_version(self.since):
            raise ConfigError(f"since: {self.since!r} is neither 'last' nor a Delta version (0, 1, 2, ...)")

    def _check_fix(self) -> None:
        if self.fix and not self.outputs.fixed:
            raise ConfigError("outputs.fixed: name where to write the rows the repairs fixed (--fixed PATH)")
        if self.outputs.fixed and not self.fix:
            raise ConfigError("fix: name the repairs that make the fixed table (--fix safe, or a list of repairs)")
        if self.valid_includes_fixed and not (self.fix and self.outputs.valid):
            raise ConfigError("valid_includes_fixed: needs both --fix and --valid")

    def _check_stream(self, streams: bool) -> None:
        if not streams:
            raise ConfigError(f"stream: the {self.engine} engine reads no stream; use --engine spark (Structured Streaming)")
        if self.since is not None or self.source_version is not None:
            which = "since" if self.since is not None else "source_version"
            raise ConfigError(f"{which}: a stream reads what is new by its checkpoint; leave {which} out with --stream")

    def tables(self) -> list[tuple[str, str]]:
        """The source, then each output: `(role, target)`."""
        outputs = [(role, target) for role, target in vars(self.outputs).items() if target is not None]
        return [("source", self.source), *outputs]


def _is_version(value: object) -> bool:
    """A Delta version: a whole number, 0 or more (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_run_id(run_id: str) -> None:
    """Any id an orchestrator makes is fine (Airflow's `scheduled__2026-12-02T00:00:00+00:00`);
    it is stored as given and never pasted into SQL text. Control characters would hide in logs."""
    if len(run_id) > RUN_ID_MAX_LENGTH:
        raise ConfigError(f"run_id: {run_id[:40]!r}... is {len(run_id)} characters; the most is {RUN_ID_MAX_LENGTH}")
    bad = next((ch for ch in run_id if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None or run_id != run_id.strip():
        raise ConfigError(f"run_id: {run_id!r} has a control character or surrounding white space")


def new_run_id() -> str:
    """A sortable, unique run id: 20261202T163000Z-1a2b3c."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)


TOP_KEYS = {
    "source", "source_version", "since", "engine", "columns", "dataset", "checks", "outputs", "thresholds", "run_id", "dedup",
    "embedded", "fix", "valid_includes_fixed", "turns", "stream", "checkpoint", "trigger",
}
_OUTPUT_KEYS = ("quarantine", "summary", "valid", "fixed")
_EMBEDDED_KEYS = ("memory_limit", "threads", "temp_directory")
_COLUMN_KEYS = ("tools_column", "images_column")
_DATASET_KEYS = {"type", "format", "columns", "tools_column", "images_column"}


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> JobConfig:
    """The job config from a YAML file (optional) with flag `overrides` on top."""
    raw = _read_yaml(Path(path)) if path is not None else {}
    config = build_config(raw, overrides or {})
    check_whole([step.column for step in config.steps], config.thresholds)
    return config


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} doesn't exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} isn't UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise ConfigError(f"config file {str(path)!r} isn't valid YAML: {problem}") from None
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} can't be read: {exc.strerror or exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys, not {type(raw).__name__}")
    return raw


_UNSET: Any = object()


def _given(overrides: dict[str, Any], raw: dict[str, Any], key: str, default: Any = None, *, flag: str = "") -> Any:
    """The flag's value when it was given, else the YAML key's when the key is there, else `default`.

    "Given" means set, never truthy: `run_id: 0`, `threads: 0` or `valid: ""` are values,
    which the key's own check then takes or refuses by name.
    """
    value = overrides.get(flag or key)
    if value is not None:
        return value
    return raw.get(key, default)


def refuse_unknown_keys(given: Iterable[str], known: Iterable[str], where: str, *, kind: str = "key") -> None:
    """A key of `given` outside `known` is a typo that would be ignored: ConfigError naming the first,
    with the nearest known key, or all of them when none is near.

    >>> refuse_unknown_keys({"quarantin": "q"}, ["quarantine", "summary"], "outputs")
    Traceback (most recent call last):
    chatgate.errors.ConfigError: outputs: unknown key 'quarantin'; did you mean 'quarantine'?
    """
    known = list(known)
    unknown = sorted(set(given) - set(known))
    if unknown:
        hint = did_you_mean(unknown[0], known, quote=True) or f"; known keys: {', '.join(known)}"
        raise ConfigError(f"{where}: unknown {kind} {unknown[0]!r}{hint}")


def build_config(raw: dict[str, Any], overrides: dict[str, Any]) -> JobConfig:
    """Merge the YAML mapping and the flags, then check every key."""
    refuse_unknown_keys(raw, sorted(TOP_KEYS), "config")
    checks = _merged(_mapping(raw.get("checks"), "checks"), overrides, _CHECK_KEYS)
    refuse_unknown_keys(checks, _CHECK_KEYS, "checks", kind="check key")  # not blamed on a column
    outputs = _merged(_mapping(raw.get("outputs"), "outputs"), overrides, _OUTPUT_KEYS)
    thresholds = _merged(_mapping(raw.get("thresholds"), "thresholds"), overrides, ("warning", "error", "critical"))
    columns = _given(overrides, raw, "columns")
    dataset = _merged(_mapping(raw.get("dataset"), "dataset"), overrides, ("type", "format"), prefix="dataset_")
    column_extras = {k: overrides[k] for k in _COLUMN_KEYS if overrides.get(k) is not None}
    source = _given(overrides, raw, "source")
    if source is None:
        raise ConfigError("source: name the table to check (--source PATH or a catalog table)")
    run_id = _given(overrides, raw, "run_id", _UNSET)
    return JobConfig(
        source=_named_text("source", source),
        steps=_steps(columns, checks, column_extras) if columns is not None or not dataset else (),
        outputs=_outputs(outputs),
        dataset=_dataset(dataset, checks) if dataset else None,
        engine=_given(overrides, raw, "engine", DEFAULT_BACKEND),
        run_id="" if run_id is _UNSET or run_id is None else _named_text("run_id", run_id),
        source_version=_source_version(_given(overrides, raw, "source_version")),
        since=_since(_given(overrides, raw, "since")),
        thresholds=_thresholds(thresholds),
        dedup=_dedup(_given(overrides, raw, "dedup", "auto")),
        embedded=_embedded(raw, overrides),
        turns=_given(overrides, raw, "turns", "first"),
        fix=_fix(_given(overrides, raw, "fix")),
        valid_includes_fixed=_flag("valid_includes_fixed", _given(overrides, raw, "valid_includes_fixed", False)),
        stream=_stream(raw, overrides),
    )


def _merged(
    section: dict[str, Any], overrides: dict[str, Any], keys: tuple[str, ...], *, prefix: str = ""
) -> dict[str, Any]:
    """A config section with the flags of its `keys` (named `prefix` + key) that were given on top."""
    merged = dict(section)
    merged.update({key: overrides[prefix + key] for key in keys if overrides.get(prefix + key) is not None})
    return merged


def _named_text(key: str, value: Any) -> str:
    """`_text`, and not empty: an empty name or id would be taken for no name at all."""
    text = _text(key, value)
    if not text.strip():
        raise ConfigError(f"{key}: {value!r} is empty; give a value, or leave the key out")
    return text


def _fix(value: Any) -> tuple[str, ...]:
    """The repairs named by `fix:` (a preset, a name, a list) or --fix (comma-separated), in the order they apply."""
    if value is None or value == "" or value is False:
        return ()
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise ConfigError(f"fix: must be a repair, a preset (safe, all) or a list of them, not {value!r}")
    try:
        repair_names(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"fix: {exc}") from None
    # As given: a preset takes only the repairs a step's options allow (drop_leading needs first_role).
    return tuple(value)


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: must be true or false, not {value!r}")
    return value


def _embedded(raw: dict[str, Any], overrides: dict[str, Any]) -> EmbeddedConfig:
    settings = dict(_mapping(raw.get("embedded"), "embedded"))
    refuse_unknown_keys(settings, _EMBEDDED_KEYS, "embedded")
    settings.update({k: overrides[k] for k in _EMBEDDED_KEYS if overrides.get(k) is not None})
    return EmbeddedConfig(**settings)


def _text(key: str, value: Any) -> str:
    """A name or id given in YAML or flags: text, or a number YAML read from digits."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{key}: must be text, not {value!r}")
    return str(value)


def _source_version(value: Any) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"\d+", text):
        raise ConfigError(f"source_version: {value!r} isn't a Delta version (0, 1, 2, ...)")
    return int(text)


def _stream(raw: dict[str, Any], overrides: dict[str, Any]) -> StreamConfig | None:
    streaming = _flag("stream", _given(overrides, raw, "stream", False))
    checkpoint, trigger = _given(overrides, raw, "checkpoint"), _given(overrides, raw, "trigger")
    if not streaming:
        given = "checkpoint" if checkpoint is not None else "trigger" if trigger is not None else None
        if given is not None:
            raise ConfigError(f"{given}: is for a stream; add --stream (stream: true), or leave {given} out")
        return None
    if checkpoint is None:
        raise ConfigError("checkpoint: name where the stream keeps its progress (--checkpoint PATH)")
    return StreamConfig(_named_text("checkpoint", checkpoint), AVAILABLE_NOW if trigger is None else str(trigger))


def _since(value: Any) -> str | int | None:
    if value is None or value == SINCE_LAST:
        return value
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"\d+", text):
        raise ConfigError(f"since: {value!r} is neither 'last' nor a Delta version (0, 1, 2, ...)")
    return int(text)


def _dedup(value: Any) -> Dedup:
    # YAML reads a bare `on`/`off` as true/false; they mean what they say.
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "auto"
    return value  # checked with the other keys, in JobConfig


def _mapping(value: Any, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: must be a mapping of keys, not {value!r}")
    return value


def _dataset(raw: dict[str, Any], checks: dict[str, Any]) -> DatasetConfig:
    refuse_unknown_keys(raw, sorted(_DATASET_KEYS), "dataset")
    kind = raw.get("type")
    if kind not in (None, "auto", *DATASET_TYPES):
        raise ConfigError(f"dataset.type: {kind!r} isn't one of {['auto', *DATASET_TYPES]}")
    if raw.get("format", "auto") not in FORMATS:
        raise ConfigError(f"dataset.format: {raw['format']!r} isn't one of {list(FORMATS)}")
    mapping = _mapping(raw.get("columns"), "dataset.columns")
    return DatasetConfig(
        type=None if kind in (None, "auto") else kind,
        format=raw.get("format", "auto"),
        columns=tuple((str(k), str(v)) for k, v in mapping.items()),
        fmt=_fmt(checks, "dataset"),
        tools_column=raw.get("tools_column", "tools"),
        images_column=raw.get("images_column", "images"),
    )


def _steps(columns: Any, checks: dict[str, Any], extras: dict[str, Any]) -> tuple[StepConfig, ...]:
    if columns is None:
        raise ConfigError("columns: name at least one chat column to check (--column NAME)")
    if isinstance(columns, str):
        columns = [columns]
    if not isinstance(columns, list):
        raise ConfigError(f"columns: must be a list of column names or mappings, not {columns!r}")
    steps = []
    for n, item in enumerate(columns, start=1):
        if isinstance(item, str):
            name, own = item, {}
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            own = {k: v for k, v in item.items() if k != "name"}
            name = item["name"]
        else:
            raise ConfigError(f"columns[{n}]: must be a column name or a mapping with 'name', not {item!r}")
        own = {**extras, **own}
        where = f"columns[{n}] ({name})"
        if not name.strip():
            raise ConfigError(f"columns[{n}]: {name!r} is empty; name a chat column")
        placed = {k: own.pop(k) for k in _COLUMN_KEYS if k in own}
        fmt = _fmt({**checks, **own}, where)
        try:
            ChatCheck(name, fmt, **placed)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc}") from None
        steps.append(StepConfig(column=name, fmt=fmt, **placed))
    return tuple(steps)


def _fmt(params: dict[str, Any], where: str) -> ChatFormat:
    refuse_unknown_keys(params, _CHECK_KEYS, where, kind="check key")
    given = {k: v for k, v in params.items() if v is not None}
    try:
        # A flag's text (or a YAML string) given to a list, map or number option is read as it.
        for option in chat_options():
            if isinstance(given.get(option.name), str) and kind_of(option) != "text":
                given[option.name] = from_text(option, given[option.name])
        return format_from(**given)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _outputs(outputs: dict[str, Any]) -> OutputConfig:
    refuse_unknown_keys(outputs, _OUTPUT_KEYS, "outputs")
    for key in ("quarantine", "summary"):
        if outputs.get(key) is None:
            raise ConfigError(f"outputs.{key}: name where to write the {key} table (--{key} PATH)")
    return OutputConfig(**{k: _named_text(f"outputs.{k}", v) for k, v in outputs.items() if v is not None})


def _thresholds(values: dict[str, Any]) -> Thresholds:
    unknown = set(values) - {"warning", "error", "critical"}
    if unknown:
        raise ConfigError(f"thresholds: unknown level {sorted(unknown)[0]!r}; use warning, error, critical")
    try:
        return Thresholds(**{k: parse_level(k, v) for k, v in values.items()})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"thresholds: {exc}") from None


def parse_level(level: str, value: Any) -> int | float | None:
    """'0.05' is a fraction of the rows, '10' a count of rows."""
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        return int(text) if re.fullmatch(r"\d+", text) else float(text)
    except ValueError:
        raise ConfigError(f"thresholds.{level}: {value!r} is neither a count nor a fraction") from None
