"""The table checks (min_rows, extra_columns) in the job: one step of one unit, never rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.job.runner import EXIT_ERROR, EXIT_OK, run
from chatgate.job.summary import format_summary
from job_helpers import job_config, read_delta

GOOD = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'


def _source(tmp_path, columns: dict) -> str:
    path = str(tmp_path / "chats")
    write_deltalake(path, pa.table(columns))
    return path


def test_extra_columns_fail_the_table_step_not_the_rows(tmp_path, engine, backend):
    path = _source(tmp_path, {"id": [1, 2], "messages": [GOOD, "[]"]})
    config = job_config(tmp_path, path, engine, {"profile": "together"}, error="0.5")
    result = run(config, backend)
    table_step = result.steps[-1]
    assert (table_step.step, table_step.column) == (2, "(table)")
    assert (table_step.judged.units, table_step.judged.failed, table_step.judged.reasons) == (1, 1, {"extra_columns": 1})
    assert result.exit_status == EXIT_ERROR
    summary = read_delta(config.outputs.summary).sort_by("step").to_pylist()
    assert [(r["step"], r["column"], r["units"], r["failed"]) for r in summary] == [
        (1, "messages", 2, 1),
        (2, "(table)", 1, 1),
    ]
    assert dict(summary[1]["reasons"]) == {"extra_columns": 1}
    assert "error" in summary[1]["levels"]
    # The quarantine holds the failing row of step 1 only: the table step has no rows.
    assert read_delta(config.outputs.quarantine)["pb_step_"].to_pylist() == [1]
    assert "step 2: columns outside the format: id" in format_summary(result)


def test_min_rows_and_only_the_format_columns(tmp_path, engine, backend):
    path = _source(tmp_path, {"messages": [GOOD]})
    config = job_config(tmp_path, path, engine, {"min_rows": 2, "extra_columns": False}, error="0.5")
    result = run(config, backend)
    assert result.steps[-1].judged.reasons == {"too_few_rows": 1}
    assert "step 2: the table has 1 row; at least 2 needed" in format_summary(result)
    ok = job_config(tmp_path / "ok", path, engine, {"min_rows": 1, "extra_columns": False}, error="0.5")
    result = run(ok, backend)
    assert (result.steps[-1].judged.failed, result.exit_status) == (0, EXIT_OK)


def test_no_table_step_unless_asked(tmp_path, engine, backend):
    path = _source(tmp_path, {"id": [1], "messages": [GOOD]})
    result = run(job_config(tmp_path, path, engine, {}), backend)
    assert [s.column for s in result.steps] == ["messages"]


@pytest.mark.parametrize("bad", [0, -1, "two", True])
def test_min_rows_mistakes_are_one_line(tmp_path, bad):
    from chatgate.errors import ConfigError

    with pytest.raises(ConfigError, match="min_rows= must be a whole number"):
        job_config(tmp_path, "s", "duckdb", {"min_rows": bad})
