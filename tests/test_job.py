"""The job end to end on each engine: outputs read back and checked row by row.

One test body pins every engine: the same source, the same expectations, built
from the reference check `first_problem`.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate import first_problem
from chatgate.errors import ConfigError, SourceError
from chatgate.job.config import build_config
from chatgate.job.registry import store_for
from chatgate.job.runner import EXIT_CRITICAL, EXIT_ERROR, EXIT_OK, run
from chatgate.rules import ChatCheck, locate, row_problems
from chatgate.sample import chat_table
from job_helpers import engine_cases, job_config, read_delta

CHECKS = {"first_role": "user", "last_role": "assistant"}


@pytest.fixture
def source(tmp_path):
    table = chat_table(400, seed=3, duplicate_fraction=0.3, defect_fraction=0.2)
    path = str(tmp_path / "chats")
    write_deltalake(path, table)
    return path, table


def _config(tmp_path, source, engine, **overrides):
    return job_config(tmp_path, source, engine, CHECKS, **overrides)


def _read(path) -> pa.Table:
    return read_delta(path)


def _expected(table: pa.Table) -> dict[int, str]:
    return {
        row_id: code
        for row_id, value in zip(table["id"].to_pylist(), table["messages"].to_pylist())
        if (code := first_problem(value, **CHECKS)) is not None
    }


def test_outputs_hold_every_failing_row_with_its_reason(tmp_path, source, engine, backend):
    path, table = source
    result = run(_config(tmp_path, path, engine), backend)
    expected = _expected(table)

    quarantine = _read(result.config.outputs.quarantine)
    got = dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist()))
    assert got == expected
    assert quarantine.num_rows == len(expected)
    assert quarantine.column_names == [
        "id", "source", "messages", "pb_reason_", "pb_message_", "pb_reasons_", "pb_step_", "pb_column_",
        "pb_run_id_", "pb_checked_at_",
    ]
    assert set(quarantine["pb_run_id_"].to_pylist()) == {"run-1"}
    assert set(quarantine["pb_column_"].to_pylist()) == {"messages"}
    assert set(expected.values()) >= {"not_messages", "no_messages", "bad_message", "unknown_role",
                                       "system_position", "first_role", "not_alternating", "last_role",
                                       "empty_content"}

    valid = _read(result.config.outputs.valid)
    assert valid.column_names == ["id", "source", "messages", "pb_run_id_"]
    assert set(valid["pb_run_id_"].to_pylist()) == {"run-1"}
    assert sorted(valid["id"].to_pylist()) == sorted(set(table["id"].to_pylist()) - set(expected))
    # Conservation: valid rows plus distinct failing source rows are the source rows.
    assert valid.num_rows + len(set(got)) == table.num_rows

    summary = _read(result.config.outputs.summary).to_pylist()
    assert len(summary) == 1
    row = summary[0]
    assert (row["run_id"], row["step"], row["column"], row["engine"]) == ("run-1", 1, "messages", engine)
    assert (row["units"], row["failed"], row["passed"]) == (400, len(expected), 400 - len(expected))
    reasons = dict(row["reasons"])
    assert reasons == {code: list(expected.values()).count(code) for code in set(expected.values())}
    assert row["source_version"] == 0
    assert row["deduplicated"] is (row["distinct_values"] is not None)
    assert json.loads(row["parameters"])["last_role"] == "assistant"
    assert row["started_at"] <= row["finished_at"]
    assert result.quarantined == len(expected) and result.valid == valid.num_rows


def test_rerun_with_same_run_id_replaces_its_rows(tmp_path, source, engine, backend):
    path, _ = source
    config = _config(tmp_path, path, engine)
    run(config, backend)
    first = _read(config.outputs.quarantine).drop(["pb_checked_at_"]).sort_by("id")
    run(config, backend)
    second = _read(config.outputs.quarantine).drop(["pb_checked_at_"]).sort_by("id")
    assert second.equals(first)
    assert _read(config.outputs.summary).num_rows == 1
    # Another run id adds its own rows beside the first run's.
    run(_config(tmp_path, path, engine, run_id="run-2"), backend)
    assert _read(config.outputs.quarantine).num_rows == 2 * first.num_rows
    assert sorted(_read(config.outputs.summary)["run_id"].to_pylist()) == ["run-1", "run-2"]


# The status follows from the summary's counts, whatever the engine: one case on Spark in `make test`.
@pytest.mark.parametrize(
    ("engine", "levels", "status"),
    engine_cases(
        [({"error": 0.1}, EXIT_ERROR), ({}, EXIT_OK), ({"warning": 1}, EXIT_OK), ({"error": 5, "critical": 10}, EXIT_CRITICAL)],
        spark_fast=1,
    ),
)
def test_exit_status_follows_the_levels_reached(tmp_path, source, engine, backend, levels, status):
    path, _ = source
    result = run(_config(tmp_path, path, engine, **levels), backend)
    assert result.exit_status == status
    summary = _read(result.config.outputs.summary).to_pylist()[0]
    assert summary["levels"] == [level for level in ("warning", "error", "critical") if level in levels]


def test_a_failed_run_leaves_none_of_its_rows(tmp_path, source, engine, backend, monkeypatch):
    path, _ = source
    config = _config(tmp_path, path, engine)
    run(config, backend)
    before = _read(config.outputs.quarantine).num_rows

    def broken_summary(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store_for(backend), "write_arrow", broken_summary)
    with pytest.raises(OSError, match="disk full"):
        run(_config(tmp_path, path, engine, run_id="run-2"), backend)
    quarantine = _read(config.outputs.quarantine)
    assert set(quarantine["pb_run_id_"].to_pylist()) == {"run-1"}
    assert quarantine.num_rows == before
    assert set(_read(config.outputs.summary)["run_id"].to_pylist()) == {"run-1"}


def test_a_failed_first_run_leaves_empty_outputs(tmp_path, source, engine, backend, monkeypatch):
    path, _ = source
    config = _config(tmp_path, path, engine)
    monkeypatch.setattr(store_for(backend), "write_arrow", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        run(config, backend)
    assert _read(config.outputs.quarantine).num_rows == 0
    assert _read(config.outputs.valid).num_rows == 0


def test_source_with_a_reserved_column_is_refused(tmp_path, engine, backend):
    path = str(tmp_path / "chats")
    write_deltalake(path, pa.table({"messages": ["[]"], "pb_reason_": ["x"]}))
    with pytest.raises(SourceError, match="pb_reason_"):
        run(_config(tmp_path, path, engine), backend)


@pytest.mark.parametrize("name", ["PB_REASON_", "Pb_Run_Id_", "__PB_REASON_1"])
def test_reserved_names_are_compared_ignoring_case(tmp_path, engine, backend, name):
    path = str(tmp_path / "chats")
    write_deltalake(path, pa.table({"messages": ["[]"], name: ["x"]}))
    with pytest.raises(SourceError, match=f"'{name}'.*ignoring case"):
        run(_config(tmp_path, path, engine), backend)


def test_missing_column_is_a_config_error_naming_it(tmp_path, source, engine, backend):
    path, _ = source
    with pytest.raises(ConfigError, match="'chat'"):
        run(_config(tmp_path, path, engine, columns=["chat"]), backend)


def test_missing_source_is_named(tmp_path, engine, backend):
    with pytest.raises(SourceError, match="nowhere"):
        run(_config(tmp_path, str(tmp_path / "nowhere"), engine), backend)


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["on", "off"])
def test_every_engine_writes_the_same_summary(tmp_path, source, spark, dedup):
    from chatgate.engines.ibis.duckdb import DuckDBEngine
    from chatgate.engines.spark import SparkEngine

    path, table = source
    summaries = {}
    for engine, backend in (("duckdb", DuckDBEngine()), ("spark", SparkEngine(spark=spark))):
        config = build_config(
            {
                "source": path,
                "engine": engine,
                "columns": ["messages", "source"],
                "checks": CHECKS,
                "dedup": dedup,
                "outputs": {k: str(tmp_path / engine / k) for k in ("quarantine", "summary")},
                "run_id": "same",
            },
            {},
        )
        run(config, backend)
        rows = _read(config.outputs.summary).sort_by("step").to_pylist()
        summaries[engine] = [
            {k: v for k, v in row.items() if k not in ("started_at", "finished_at", "engine")} for row in rows
        ]
    assert summaries["duckdb"] == summaries["spark"]
    distinct = summaries["duckdb"][0]["distinct_values"]
    if dedup == "on":
        assert distinct == len({v for v in table["messages"].to_pylist() if v is not None})
    else:
        assert distinct is None


@pytest.mark.spark
def test_spark_outputs_read_the_source_once_more(tmp_path, source, spark):
    """Once the check has run, the outputs read the source once: its files can go after the first write."""
    import shutil

    from chatgate.engines.spark import SparkEngine

    path, table = source

    engine = SparkEngine(spark=spark)
    store = store_for(engine)
    replace_run = store.replace_run

    def source_gone_after_first_write(rows, target, run_id_column, run_id):
        written = replace_run(rows, target, run_id_column, run_id)
        shutil.rmtree(path, ignore_errors=True)
        return written

    store.replace_run = source_gone_after_first_write
    config = _config(tmp_path, path, "spark")
    result = run(config, engine)
    expected = _expected(table)
    quarantine = _read(config.outputs.quarantine)
    assert dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist())) == expected
    valid = _read(config.outputs.valid)
    assert sorted(valid["id"].to_pylist()) == sorted(set(table["id"].to_pylist()) - set(expected))
    assert result.valid == valid.num_rows > 0


DRIVER_ROWS = 100
"""The most rows one Spark action may bring to the driver in a run: counts and a preview, never a row per failure."""


def _rows_in(result) -> int:
    """The rows an action returned: a list of them, an Arrow table, a pandas frame; else one (head())."""
    if isinstance(result, pa.Table):
        return result.num_rows
    return len(result) if isinstance(result, list) or hasattr(result, "shape") else 1


@pytest.fixture
def driver_rows(spark, monkeypatch) -> list[int]:
    """The rows each DataFrame or RDD action brings to the driver while the test lasts."""
    from pyspark import RDD

    received: list[int] = []

    def counted(method):
        def action(self, *args, **kwargs):
            out = method(self, *args, **kwargs)
            received.append(_rows_in(out))
            return out

        return action

    frame = type(spark.range(1))
    for name in ("collect", "take", "tail", "head", "toArrow", "toPandas"):
        monkeypatch.setattr(frame, name, counted(getattr(frame, name)))
    streamed = "the job streamed rows to the driver (toLocalIterator)"
    monkeypatch.setattr(frame, "toLocalIterator", lambda self, *args, **kwargs: pytest.fail(streamed))
    monkeypatch.setattr(RDD, "collect", counted(RDD.collect))
    return received


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["on", "auto"])
def test_the_spark_job_brings_no_failing_row_to_the_driver(tmp_path, spark, driver_rows, dedup):
    """On a large table the failures would overflow the driver (spark.driver.maxResultSize):
    tests/test_spark_submit.py runs 150,000 of them with the slow tests."""
    from chatgate.engines.spark import SparkEngine

    failing = 20 * DRIVER_ROWS
    path = str(tmp_path / "chats")
    questions = [json.dumps([{"role": "user", "content": f"q{i}"}]) for i in range(failing)]  # no reply: last_role
    write_deltalake(path, pa.table({"id": range(failing), "messages": questions}))
    result = run(_config(tmp_path, path, "spark", dedup=dedup), SparkEngine(spark=spark))
    assert result.quarantined == failing
    assert driver_rows and max(driver_rows) <= DRIVER_ROWS


def test_quarantine_says_at_which_message_each_problem_is(tmp_path, source, engine, backend):
    path, table = source
    result = run(_config(tmp_path, path, engine), backend)
    rows = _read(result.config.outputs.quarantine).to_pylist()
    assert rows
    for row in rows:
        assert row["pb_message_"] == locate(row["messages"], row["pb_reason_"], **CHECKS), row
    # Problems of a message and of the whole value are both there.
    assert {row["pb_message_"] is None for row in rows} == {True, False}


def test_outputs_an_older_chatgate_wrote_gain_the_new_columns(tmp_path, source, engine, backend):
    """Tables written before pb_message_ and the summary's fixed counts existed keep their rows and gain them."""
    path, table = source
    config = _config(tmp_path, path, engine, run_id="new")
    run(_config(tmp_path, path, "duckdb", run_id="old"), None)
    for name, dropped in ((config.outputs.quarantine, "pb_message_"), (config.outputs.summary, "fixed")):
        old = _read(name)
        old = old.drop([c for c in old.column_names if c in (dropped, "fixes")])
        write_deltalake(name, old, mode="overwrite", schema_mode="overwrite")
    run(config, backend)
    quarantine = _read(config.outputs.quarantine)
    runs = quarantine["pb_run_id_"].to_pylist()
    messages = quarantine["pb_message_"].to_pylist()
    assert {m for m, r in zip(messages, runs) if r == "old"} == {None}
    assert any(m is not None for m, r in zip(messages, runs) if r == "new")
    assert runs.count("old") == runs.count("new") == len(_expected(table))
    summary = _read(config.outputs.summary)
    assert sorted(summary["run_id"].to_pylist()) == ["new", "old"] and "fixes" in summary.column_names


def test_turns_all_lists_every_problem_of_each_quarantined_row(tmp_path, source, engine, backend):
    path, _ = source
    config = _config(tmp_path, path, engine, turns="all")
    run(config, backend)
    check = ChatCheck("messages", config.steps[0].fmt)
    rows = _read(config.outputs.quarantine).to_pylist()
    for row in rows:
        want = [p._asdict() for p in row_problems(check, {"messages": row["messages"]})]
        assert row["pb_reasons_"] == want, row
        assert row["pb_reason_"] in {p["code"] for p in want}
    assert any(len(row["pb_reasons_"]) > 1 for row in rows)
    first = _read(run(_config(tmp_path, path, engine, run_id="first"), backend).config.outputs.quarantine)
    assert {r["pb_reasons_"] is None for r in first.to_pylist() if r["pb_run_id_"] == "first"} == {True}
