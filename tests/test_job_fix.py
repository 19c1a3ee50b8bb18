"""--fix end to end on each engine: the fixed, quarantine and valid tables, row by row.

Every expectation comes from `chatgate.repair` and the reference check on each source
row, so the engines and the pure repairs can't drift apart.
"""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate import first_problem, repair
from chatgate.errors import ConfigError
from chatgate.job.runner import run
from chatgate.job.summary import format_summary
from chatgate.sample import chat_table
from job_helpers import SPARK_SLOW, job_config, read_delta

CHECKS = {"first_role": "user", "last_role": "assistant"}


def _j(*messages) -> str:
    return json.dumps([{"role": r, "content": c} for r, c in messages])


# Rows the repairs fix, rows they can't, rows that pass.
EXTRA = [
    _j(("human", "Hi"), ("gpt", "Hello")),  # map_roles
    _j(("user", "a"), ("user", "b"), ("assistant", "c")),  # merge_repeats
    _j(("user", "a"), ("assistant", ""), ("assistant", "c")),  # drop_empty
    _j(("user", "a"), ("assistant", "b"), ("user", "dangling")),  # drop_trailing
    _j(("robot", "a"), ("assistant", "b")),  # no repair helps
    "not json",
]


@pytest.fixture
def source(tmp_path):
    table = chat_table(300, seed=5, duplicate_fraction=0.3, defect_fraction=0.3)
    ids = table["id"].to_pylist()
    extra = {"id": [max(ids) + 1 + i for i in range(len(EXTRA))], "source": ["extra"] * len(EXTRA), "messages": EXTRA}
    table = pa.concat_tables([table, pa.table(extra, schema=table.schema)])
    path = str(tmp_path / "chats")
    write_deltalake(path, table)
    return path, table


def _run(tmp_path, path, engine, backend, fix="all", **overrides):
    config = job_config(
        tmp_path, path, engine, CHECKS, fix=fix, fixed=str(tmp_path / "fixed"), run_id="fix-1", **overrides
    )
    return config, run(config, backend)


def _expected(rows: dict[int, str | None]) -> tuple[dict[int, tuple], dict[int, str], set[int]]:
    """What the pure repairs and the reference check say of each source row: the fixed rows
    (repaired value, repairs applied, code before), the quarantined (code) and the valid ids."""
    want_fixed, want_quarantined, want_valid = {}, {}, set()
    for row_id, value in rows.items():
        code = first_problem(value, **CHECKS)
        if code is None:
            want_valid.add(row_id)
            continue
        fixed, applied, after = repair(value, "all", **CHECKS)
        if after is None:
            want_fixed[row_id] = (fixed, applied, code)
        else:
            want_quarantined[row_id] = code
    return want_fixed, want_quarantined, want_valid


def test_fixed_rows_are_the_repaired_failures_and_rows_are_conserved(tmp_path, source, engine, backend):
    path, table = source
    config, result = _run(tmp_path, path, engine, backend)
    # Spark repairs the failing rows in its check pass; DuckDB's one stream, afterwards.
    assert (result.steps[0].judged.failing_computed is not None) == (engine == "spark")
    rows = dict(zip(table["id"].to_pylist(), table["messages"].to_pylist()))
    want_fixed, want_quarantined, want_valid = _expected(rows)

    fixed = read_delta(config.outputs.fixed)
    assert fixed.column_names == ["id", "source", "messages", "pb_reason_before_", "pb_fixes_", "pb_run_id_"]
    got = {r["id"]: (r["messages"], r["pb_fixes_"], r["pb_reason_before_"]) for r in fixed.to_pylist()}
    assert got == want_fixed
    assert len(want_fixed) >= 4 and set(fixed["pb_run_id_"].to_pylist()) == {"fix-1"}

    quarantine = read_delta(config.outputs.quarantine)
    assert {r["id"]: (r["messages"], r["pb_reason_"]) for r in quarantine.to_pylist()} == {
        i: (rows[i], code) for i, code in want_quarantined.items()
    }
    valid = read_delta(config.outputs.valid)
    assert set(valid["id"].to_pylist()) == want_valid
    # Nothing lost, nothing twice: valid + fixed + quarantined = source.
    assert len(want_valid) + len(want_fixed) + len(want_quarantined) == table.num_rows
    assert (result.valid, result.fixed, result.quarantined) == (len(want_valid), len(want_fixed), len(want_quarantined))

    summary = read_delta(config.outputs.summary).to_pylist()[0]
    applied = Counter(name for _, names, _ in want_fixed.values() for name in set(names))
    assert summary["fixed"] == len(want_fixed)
    assert dict(summary["fixes"]) == dict(applied)
    assert f"fixed:      {config.outputs.fixed} ({len(want_fixed)} rows of this run, " in format_summary(result)


def test_valid_can_include_the_fixed_rows(tmp_path, source, engine, backend):
    path, _ = source
    config, result = _run(tmp_path, path, engine, backend, valid_includes_fixed=True)
    fixed = {r["id"]: r["messages"] for r in read_delta(config.outputs.fixed).to_pylist()}
    valid = read_delta(config.outputs.valid)
    assert valid.column_names == ["id", "source", "messages", "pb_run_id_"]
    in_valid = {r["id"]: r["messages"] for r in valid.to_pylist()}
    assert {i: in_valid[i] for i in fixed} == fixed  # the repaired values
    assert all(first_problem(v, **CHECKS) is None for v in in_valid.values())
    assert result.valid == valid.num_rows == len(in_valid)
    assert "valid:      " in format_summary(result) and "the fixed ones included" in format_summary(result)


def test_the_embedded_workers_repair_the_failing_rows_they_keep(tmp_path, source, monkeypatch):
    """Read in parts, each worker repairs the failing rows it keeps as it checks them: the
    outputs are those of the pure repairs, nulls and unreadable values included."""
    from chatgate.engines.ibis import stream

    _, table = source
    table = pa.concat_tables([table, pa.table({"id": [10_000, 10_001], "source": ["null"] * 2, "messages": [None] * 2},
                                              schema=table.schema)])
    path = str(tmp_path / "in_files")
    for part in range(3):
        write_deltalake(path, table.slice(part * 110, 110), mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    config, result = _run(tmp_path, path, "duckdb", None, threads=2, dedup="off")
    assert result.steps[0].judged.failing_computed is not None  # repaired by the workers

    rows = dict(zip(table["id"].to_pylist(), table["messages"].to_pylist()))
    want_fixed, want_quarantined, _ = _expected(rows)
    fixed = read_delta(config.outputs.fixed)
    assert {r["id"]: (r["messages"], r["pb_fixes_"], r["pb_reason_before_"]) for r in fixed.to_pylist()} == want_fixed
    quarantine = read_delta(config.outputs.quarantine)
    assert {r["id"]: r["pb_reason_"] for r in quarantine.to_pylist()} == want_quarantined
    assert want_quarantined[10_000] == "not_messages" and len(want_fixed) >= 4
    assert result.fixed == len(want_fixed) and result.quarantined == len(want_quarantined)


def test_the_repairs_of_several_steps_run_after_the_check(tmp_path, source, monkeypatch):
    """Each row is fixed when the repairs of every step it failed make it pass: the repairs of
    two chat columns run on the failing rows of both, once both are checked."""
    from chatgate.engines.ibis import stream

    _, table = source
    table = table.append_column("other", table["messages"])
    path = str(tmp_path / "in_files")
    for part in range(3):
        write_deltalake(path, table.slice(part * 110, 110), mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    config, result = _run(tmp_path, path, "duckdb", None, threads=2, dedup="off", columns=["messages", "other"])
    assert [s.judged.failing_computed for s in result.steps] == [None, None]
    want_fixed, want_quarantined, _ = _expected(dict(zip(table["id"].to_pylist(), table["messages"].to_pylist())))
    fixed = read_delta(config.outputs.fixed)
    assert {r["id"]: (r["messages"], r["other"]) for r in fixed.to_pylist()} == {
        i: (value, value) for i, (value, _, _) in want_fixed.items()
    }
    assert set(read_delta(config.outputs.quarantine)["id"].to_pylist()) == set(want_quarantined)

@pytest.mark.parametrize("engine", SPARK_SLOW)  # reruns on Spark: tests/test_job.py
def test_a_rerun_replaces_its_fixed_rows(tmp_path, source, engine, backend):
    path, _ = source
    config, first = _run(tmp_path, path, engine, backend, fix="safe")
    _, again = _run(tmp_path, path, engine, backend, fix="safe")
    fixed = read_delta(config.outputs.fixed)
    assert fixed.num_rows == first.fixed == again.fixed > 0
    assert len(set(fixed["id"].to_pylist())) == fixed.num_rows


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"fix": "safe"}, "outputs.fixed: name where to write the rows the repairs fixed (--fixed PATH)"),
        ({"fix": "safe,bogus", "fixed": "f"}, "fix: unknown repair 'bogus'"),
        ({"fixed": "f"}, "fix: name the repairs that make the fixed table"),
        ({"fix": "safe", "fixed": "f", "valid_includes_fixed": True, "valid": None}, "needs both --fix and --valid"),
    ],
)
def test_fix_mistakes_are_one_line(tmp_path, overrides, message):
    from chatgate.job.config import build_config

    raw = {"source": "s", "columns": ["messages"], "outputs": {"quarantine": "q", "summary": "s2"}}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_config(raw, overrides)


def test_each_distinct_failing_value_is_repaired_once(tmp_path, monkeypatch):
    """5,000 copies of one fixable value reach the repairs in several batches: repaired once."""
    import chatgate.fixes as fixes

    repaired: list[int] = []
    real = fixes.repairs_and_codes

    def counting(values, *args, **kwargs):
        repaired.append(len(values))
        return real(values, *args, **kwargs)

    monkeypatch.setattr(fixes, "repairs_and_codes", counting)
    value = _j(("human", "Hi"), ("gpt", "Hello"))
    path = str(tmp_path / "copies")
    write_deltalake(path, pa.table({"id": list(range(5000)), "messages": [value] * 5000}))
    config, result = _run(tmp_path, path, "duckdb", None, fix="safe")
    assert result.fixed == 5000 and sum(repaired) == 1


def test_a_repair_a_step_cant_aim_is_a_config_error(tmp_path, source):
    path, _ = source
    config = job_config(tmp_path, path, "duckdb", {}, fix="drop_trailing", fixed=str(tmp_path / "fixed"))
    with pytest.raises(ConfigError, match=r"fix: step 1 \(messages\): repair 'drop_trailing' needs last_role="):
        run(config, None)


NATIVE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


def test_native_chats_are_repaired_where_they_are_checked(tmp_path, engine, backend, monkeypatch):
    """A list-of-structs column: Spark repairs its failing rows as it checks them, DuckDB (which
    joins native values back by value, in one stream) afterwards; the fixed rows hold the pure
    repairs' values, of the column's own type."""
    from chatgate.engines.ibis import stream

    fixable = [json.loads(value) for value in EXTRA[:5]]
    good = [[{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}] for i in range(6)]
    values = (fixable + good) * 3
    table = pa.table({"id": list(range(len(values))), "messages": pa.array(values, NATIVE)})
    path = str(tmp_path / "native")
    for part in range(3):
        write_deltalake(path, table.slice(part * 11, 11), mode="append")
    monkeypatch.setattr(stream, "PARALLEL_MIN_ROWS", 0)
    threads = {"threads": 2} if engine == "duckdb" else {}
    config, result = _run(tmp_path, path, engine, backend, dedup="off", **threads)
    assert (result.steps[0].judged.failing_computed is not None) == (engine == "spark")

    want_fixed, want_quarantined, _ = _expected(dict(enumerate(values)))
    fixed = read_delta(config.outputs.fixed)
    assert {r["id"]: (r["messages"], r["pb_fixes_"], r["pb_reason_before_"]) for r in fixed.to_pylist()} == want_fixed
    assert fixed.schema.field("messages").type == NATIVE
    assert set(read_delta(config.outputs.quarantine)["id"].to_pylist()) == set(want_quarantined)
    assert len(want_fixed) == 12 and len(want_quarantined) == 3


@pytest.mark.spark
def test_spark_repairs_in_its_check_pass_with_large_arrow_types(tmp_path, source, spark):
    """Spark sends large strings to Python when told to: the repaired values go back as it reads them."""
    from chatgate.engines.spark import SparkEngine

    path, table = source
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        config, result = _run(tmp_path, path, "spark", SparkEngine(spark=spark), fix="safe")
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    assert result.steps[0].judged.failing_computed is not None
    fixed = {r["id"]: r["messages"] for r in read_delta(config.outputs.fixed).to_pylist()}
    want = {
        i: repair(value, "safe", **CHECKS)[0] for i, value in zip(table["id"].to_pylist(), table["messages"].to_pylist())
        if first_problem(value, **CHECKS) is not None and repair(value, "safe", **CHECKS)[2] is None
    }
    assert fixed == want and len(want) >= 3
