"""The Airflow callable: returns a summary for XCom, fails the task at the error level."""

from __future__ import annotations

import json

import pytest
from deltalake import write_deltalake

from chatgate.airflow import ChatgateLevelReached, run_chatgate
from chatgate.sample import chat_table


@pytest.fixture
def flags(tmp_path):
    write_deltalake(str(tmp_path / "chats"), chat_table(200, seed=9, defect_fraction=0.2))
    return {
        "source": str(tmp_path / "chats"),
        "columns": ["messages"],
        "quarantine": str(tmp_path / "q"),
        "summary": str(tmp_path / "s"),
        "run_id": "scheduled__2026-12-02T00:00:00",
    }


def test_returns_a_json_ready_summary(flags):
    out = run_chatgate(**flags, last_role="assistant")
    json.dumps(out)
    assert out["run_id"] == "scheduled__2026-12-02T00:00:00"
    assert out["exit_status"] == 0
    assert out["steps"][0]["units"] == 200
    assert out["quarantined"] == out["steps"][0]["failed"] > 0


def test_fails_the_task_when_the_error_level_is_reached(flags):
    with pytest.raises(ChatgateLevelReached, match="status: 3"):
        run_chatgate(**flags, error=0.01)
    assert run_chatgate(**flags, error=0.01, fail_on_error=False)["exit_status"] == 3
