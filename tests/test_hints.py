"""A run whose rows mostly fail because they are in another known format says which option reads them."""

from __future__ import annotations

import json

import pyarrow as pa
from deltalake import write_deltalake

from chatgate.job.runner import run
from chatgate.job.summary import format_summary
from job_helpers import job_config

SHAREGPT = json.dumps([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}])
TOOLS = json.dumps([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
])
GOOD = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])


def _summary(tmp_path, engine, backend, values) -> str:
    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": values}))
    return format_summary(run(job_config(tmp_path, source, engine, {}), backend))


def test_sharegpt_rows_get_a_hint_naming_the_flag(tmp_path, engine, backend):
    text = _summary(tmp_path, engine, backend, [SHAREGPT] * 9 + [GOOD])
    assert text.splitlines()[-1] == (
        "hint: step 1 (messages): 90% of rows fail (most with bad_message), "
        "but 9 of 9 failing values read back pass with --sharegpt"
    )


def test_tool_calling_rows_get_the_tools_hint(tmp_path, engine, backend):
    text = _summary(tmp_path, engine, backend, [TOOLS] * 3)
    assert "pass with --tools" in text.splitlines()[-1]


def test_no_hint_when_few_rows_fail_or_nothing_fits(tmp_path, engine, backend):
    assert "hint:" not in _summary(tmp_path / "few", engine, backend, [SHAREGPT] + [GOOD] * 3)
    assert "hint:" not in _summary(tmp_path / "broken", engine, backend, ["[]", "not json", "[1]"])
