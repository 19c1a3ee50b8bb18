"""--fix end to end on each engine: the fixed, quarantine and valid tables, row by row.

Every expectation comes from `chatgate.repair` and the reference check on each source
row, so the engines and the pure repairs can't drift apart.
"""

from __future__ import annotations

import json
from collections import Counter

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
    import pyarrow as pa

    table = pa.concat_tables([table, pa.table(extra, schema=table.schema)])
    path = str(tmp_path / "chats")
    write_deltalake(path, table)
    return path, table


def _run(tmp_path, path, engine, backend, fix="all", **overrides):
    config = job_config(
        tmp_path, path, engine, CHECKS, fix=fix, fixed=str(tmp_path / "fixed"), run_id="fix-1", **overrides
    )
    return config, run(config, backend)


def test_fixed_rows_are_the_repaired_failures_and_rows_are_conserved(tmp_path, source, engine, backend):
    path, table = source
    config, result = _run(tmp_path, path, engine, backend)
    rows = dict(zip(table["id"].to_pylist(), table["messages"].to_pylist()))
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
    import pyarrow as pa

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
