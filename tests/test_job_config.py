"""The job config: YAML and flags merged, every key checked with a message that names it."""

from __future__ import annotations

import pytest

from chatgate.errors import ConfigError
from chatgate.job.config import build_config, load_config
from chatgate.thresholds import Thresholds

BASE = {
    "source": "lake/chats",
    "columns": ["messages"],
    "outputs": {"quarantine": "lake/q", "summary": "lake/s"},
}


def test_minimal_config_gets_defaults_and_a_run_id():
    config = build_config(BASE, {})
    assert config.engine == "duckdb"
    assert config.dedup == "auto"
    assert [s.column for s in config.steps] == ["messages"]
    assert config.steps[0].fmt.roles == ("system", "user", "assistant")
    assert config.outputs.valid is None
    assert len(config.run_id) > 10


def test_flags_override_yaml():
    raw = {**BASE, "checks": {"last_role": "assistant"}, "thresholds": {"error": 0.5}}
    config = build_config(
        raw,
        {"columns": ["prompt", "chosen"], "roles": "user,assistant", "error": "3", "warning": "0.01",
         "run_id": "nightly-1", "valid": "lake/v", "alternate": False},
    )
    assert [s.column for s in config.steps] == ["prompt", "chosen"]
    assert config.steps[0].fmt.roles == ("user", "assistant")
    assert config.steps[0].fmt.last_role == "assistant"
    assert config.steps[0].fmt.alternate is False
    assert config.thresholds == Thresholds(warning=0.01, error=3)
    assert config.run_id == "nightly-1"
    assert config.outputs.valid == "lake/v"


def test_per_column_checks_override_defaults():
    raw = {**BASE, "checks": {"last_role": "assistant"}, "columns": ["messages", {"name": "prompt", "last_role": "user"}]}
    steps = build_config(raw, {}).steps
    assert steps[0].fmt.last_role == "assistant"
    assert steps[1].fmt.last_role == "user"


@pytest.mark.parametrize(
    "raw, overrides, message",
    [
        ({**BASE, "colums": ["x"]}, {}, "config: unknown key 'colums'; did you mean 'columns'?"),
        ({**BASE, "checks": {"last_rol": "user"}}, {}, "checks: unknown check key 'last_rol'; did you mean 'last_role'?"),
        ({**BASE, "checks": {"last_role": "bot"}}, {}, "last_role='bot' isn't one of roles="),
        ({**BASE, "checks": {"roles": []}}, {}, "roles= is empty"),
        ({**BASE, "outputs": {"quarantine": "lake/q"}}, {}, "outputs.summary"),
        ({**BASE, "outputs": {**BASE["outputs"], "vaild": "x"}}, {}, "outputs: unknown key 'vaild'; did you mean 'valid'?"),
        ({**BASE, "thresholds": {"warn": 1}}, {}, "unknown level 'warn'"),
        (BASE, {"error": "lots"}, "thresholds.error: 'lots'"),
        (BASE, {"error": "1.5"}, "fraction must be below 1"),
        (BASE, {"engine": "flink"}, "engine: 'flink'"),
        (BASE, {"dedup": "maybe"}, "dedup: 'maybe'"),
        (BASE, {"run_id": "bad\tid"}, "run_id: 'bad\\tid' has a control character"),
        (BASE, {"source_version": "3a"}, "source_version: '3a' isn't a Delta version"),
        ({**BASE, "outputs": {**BASE["outputs"], "valid": ["x"]}}, {}, "outputs.valid: must be text"),
        ({k: v for k, v in BASE.items() if k != "source"}, {}, "source"),
        ({k: v for k, v in BASE.items() if k != "columns"}, {}, "columns"),
        ({**BASE, "columns": [{"last_role": "user"}]}, {}, "columns[1]"),
        (BASE, {"quarantine": "lake/chats"}, "is the source table itself"),
        (BASE, {"summary": "lake/q"}, "its own table"),
    ],
)
def test_bad_config_names_the_key(raw, overrides, message):
    with pytest.raises(ConfigError, match=None) as info:
        build_config(raw, overrides)
    assert message in str(info.value)


def test_load_config_reads_yaml(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("source: a/b\ncolumns: [messages]\noutputs: {quarantine: a/q, summary: a/s}\ndedup: off\n")
    # YAML reads a bare `off` as False; it still means off.
    assert load_config(path).dedup == "off"
    path.write_text(path.read_text().replace("dedup: off", "dedup: 'on'"))
    assert load_config(path).dedup == "on"


@pytest.mark.parametrize("text, message", [("- a\n- b\n", "mapping"), ("a: [\n", "valid YAML")])
def test_load_config_refuses_bad_files(tmp_path, text, message):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_example_config_in_conf_loads():
    from pathlib import Path

    config = load_config(Path(__file__).resolve().parents[1] / "conf" / "example.yaml")
    assert config.steps[0].fmt.last_role == "assistant"
    assert config.outputs.valid


def test_extended_checks_and_extra_columns_from_flags():
    config = build_config(BASE, {"tools": True, "tools_column": "tools", "sharegpt": True})
    step = config.steps[0]
    assert step.fmt.tools and step.fmt.sharegpt
    assert step.check().columns == ("messages", "tools")


def test_tools_column_without_tools_is_refused():
    with pytest.raises(ConfigError, match=r"columns\[1\] \(messages\): tools_column= needs tools=True"):
        build_config(BASE, {"tools_column": "tools"})


def test_sample_profile_takes_its_own_defaults():
    fmt = build_config(BASE, {"profile": "sample"}).steps[0].fmt
    assert (fmt.profile, fmt.alternate, fmt.allow_empty) == ("sample", False, True)
    fmt = build_config({**BASE, "checks": {"profile": "sample", "alternate": True}}, {}).steps[0].fmt
    assert fmt.alternate is True


def test_dataset_type_config_builds_its_checks_from_the_source_columns():
    raw = {k: v for k, v in BASE.items() if k != "columns"}
    config = build_config({**raw, "dataset": {"type": "auto", "columns": {"prompt": "question"}}}, {})
    assert config.steps == ()
    checks = config.dataset.checks(["id", "question", "chosen", "rejected"])
    assert [c.columns for c in checks] == [("question", "chosen", "rejected")]


@pytest.mark.parametrize(
    "dataset, message",
    [
        ({"type": "preferences"}, "dataset.type: 'preferences'"),
        ({"format": "chatty"}, "dataset.format: 'chatty'"),
        ({"typ": "preference"}, "dataset: unknown key 'typ'; did you mean 'type'?"),
        ({"zzz": 1}, "dataset: unknown key 'zzz'; known keys: "),
    ],
)
def test_bad_dataset_config_names_the_key(dataset, message):
    with pytest.raises(ConfigError) as info:
        build_config({**BASE, "dataset": dataset}, {})
    assert message in str(info.value)


def test_undetectable_dataset_type_is_a_config_error():
    config = build_config({**BASE, "dataset": {"type": "auto"}}, {})
    with pytest.raises(ConfigError, match="dataset: can't tell the dataset type"):
        config.dataset.checks(["id", "body"])


def test_embedded_settings_reach_the_jobs_duckdb(tmp_path):
    from chatgate.job.runner import engine_for_job

    config = build_config(
        {**BASE, "embedded": {"memory_limit": "256MB", "temp_directory": str(tmp_path / "spill")}}, {"threads": 1}
    )
    con = engine_for_job(config).con
    got = con.raw_sql(
        "SELECT current_setting('memory_limit'), current_setting('threads'), current_setting('temp_directory')"
    ).fetchall()
    assert got == [("244.1 MiB", 1, str(tmp_path / "spill"))]


@pytest.mark.parametrize(
    "raw, overrides, message",
    [
        ({**BASE, "embedded": {"memory_limit": "lots"}}, {}, "memory_limit: 'lots' isn't a size such as 512MB or 2GB"),
        (BASE, {"threads": 0}, "threads: 0 isn't a number of threads"),
        ({**BASE, "embedded": {"memory": "1GB"}}, {}, "embedded: unknown key 'memory'; did you mean 'memory_limit'?"),
        (BASE, {"engine": "spark", "memory_limit": "1GB"}, "embedded: memory_limit set the embedded engine's DuckDB"),
    ],
)
def test_bad_embedded_settings_are_named(raw, overrides, message):
    with pytest.raises(ConfigError) as info:
        build_config(raw, overrides)
    assert message in str(info.value)


def test_the_example_config_documents_every_key():
    """Each key the config takes is written in conf/example.yaml (set, or commented out with its meaning)."""
    import re
    from pathlib import Path

    from chatgate.job import config as cfg
    from chatgate.rules.datasets.build import DATASET_TYPES

    text = (Path(__file__).resolve().parents[1] / "conf" / "example.yaml").read_text()
    written = set(re.findall(r"^\s*#?\s*-?\s*(?:name: \w+\s*)?([a-z_]+):", text, re.MULTILINE))
    keys = (
        set(cfg.TOP_KEYS) | set(cfg._CHECK_KEYS) | set(cfg._EMBEDDED_KEYS) | set(cfg._COLUMN_KEYS)
        | set(cfg._DATASET_KEYS) | {"quarantine", "summary", "valid", "warning", "error", "critical", "name"}
    )
    assert sorted(keys - written) == []
    assert all(kind in text for kind in DATASET_TYPES)


# -- every key merged on "is set", never on truthiness ------------------------------------------

FALSY = [0, False, ""]


def _every_key() -> list[tuple[str, ...]]:
    """Each key a config can hold, as its path: top keys, then each section's own keys."""
    from dataclasses import fields as dataclass_fields

    from chatgate.job import config as job_config
    from chatgate.rules import ChatFormat

    sections = {
        "outputs": job_config._OUTPUT_KEYS,
        "embedded": job_config._EMBEDDED_KEYS,
        "thresholds": ("warning", "error", "critical"),
        "dataset": tuple(sorted(job_config._DATASET_KEYS)),
        "checks": tuple(f.name for f in dataclass_fields(ChatFormat)),
    }
    plain = [(key,) for key in sorted(job_config.TOP_KEYS) if key not in sections]
    return plain + [(section, key) for section, keys in sections.items() for key in keys]


def _with(path: tuple[str, ...], value) -> dict:
    raw = {**BASE, "outputs": dict(BASE["outputs"])}
    if len(path) == 1:
        raw[path[0]] = value
    else:
        raw[path[0]] = {**raw.get(path[0], {}), path[1]: value}
    return raw


def _held(config, path: tuple[str, ...]):
    """What the config made of the key at `path`."""
    section, key = (path[0], path[-1])
    if len(path) == 1:
        return {
            "columns": [s.column for s in config.steps],
            "dataset": config.dataset,
        }.get(key, getattr(config, key, None))
    if section == "checks":
        return getattr(config.steps[0].fmt, key)
    if section == "dataset":
        return getattr(config.dataset, key, None)
    return getattr(getattr(config, section), key)


@pytest.mark.parametrize("path", _every_key(), ids="/".join)
@pytest.mark.parametrize("value", FALSY, ids=repr)
def test_a_falsy_value_is_taken_or_refused_by_name_never_dropped(path, value):
    """`run_id: 0` stays "0"; `threads: 0` is refused naming threads; nothing falls back to a default unsaid."""
    key = path[-1]
    try:
        config = build_config(_with(path, value), {})
    except ConfigError as exc:
        # Refused: the message names the key (or, for a name, the thing it names).
        assert key in str(exc) or path[0] in str(exc), (path, value, str(exc))
        return
    held = _held(config, path)
    expected = {
        ("run_id",): str(value),
        ("source",): str(value),
        ("source_version",): value,
        ("dedup",): "off" if value is False else value,
        ("fix",): (),
        ("valid_includes_fixed",): value,
        ("stream",): None,  # stream: false is no stream
    }
    if path in expected:
        assert held == expected[path], (path, value, held)
    elif path[0] == "thresholds":
        assert held == value
    elif path[0] == "outputs":
        assert held == str(value)  # a table named "0"
    elif path[0] == "checks":
        assert held in (value, (), None) or held == type(held)(value), (path, value, held)
    else:
        assert held == value, (path, value, held)


@pytest.mark.parametrize(
    "flag, value, check",
    [
        ("run_id", "0", lambda c: c.run_id == "0"),
        ("source_version", 0, lambda c: c.source_version == 0),
        ("valid_includes_fixed", False, lambda c: c.valid_includes_fixed is False),
    ],
)
def test_a_falsy_flag_overrides_the_yaml(flag, value, check):
    raw = {**BASE, "run_id": "yaml-id", "source_version": 3, "thresholds": {"warning": 0.5}, "valid_includes_fixed": True}
    raw = {**raw, "fix": "safe", "outputs": {**BASE["outputs"], "fixed": "lake/f", "valid": "lake/v"}}
    assert check(build_config(raw, {flag: value}))
