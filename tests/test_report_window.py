"""Examples show a window around the message at fault: the conversation's start, what was left out, the fault.

Conversations of 60 messages whose 40th (index 40) is empty: a value cut from its start
would show only the first few messages, never the fault.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.job.runner import run
from chatgate.runreport import load_report, render_page, report_dict
from chatgate.runreport.window import message_window
from job_helpers import job_config

FAULT = 40
EMPTY = '{"role": "assistant", "content": ""}'  # message 40: even places are the assistant's


def conversation(fault: int = FAULT, size: int = 60, seed: int = 0) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": f"You are assistant number {seed}, careful and brief."}]
    for k in range(1, size):
        role = "user" if k % 2 else "assistant"
        messages.append({"role": role, "content": f"{role} turn {k}: " + "words " * 12})
    messages[fault] = {"role": messages[fault]["role"], "content": ""}
    return messages


def test_the_window_shows_the_start_the_left_out_length_and_the_fault():
    chat = conversation()
    window = message_window(chat, FAULT, 300)
    assert window.startswith('[{"role": "system", "content": "You are assistant')
    left_out = ", ".join(json.dumps(m) for m in chat[1 : FAULT - 1])
    assert f"… messages 1–{FAULT - 2}, {len(left_out):,} characters …" in window
    assert '{"role": "user", "content": "user turn 39: words' in window  # the message before the fault
    assert window.endswith(f'{EMPTY}, … messages {FAULT + 1}–59, {len(", ".join(json.dumps(m) for m in chat[FAULT + 1 :])):,} characters …]')
    assert len(window) < 300 + 2 * len("… messages 41–59, 1,234 characters …, ")  # short: about 300 characters
    assert len(json.dumps(chat)) > 7000


def test_the_same_window_from_json_text_a_list_or_an_array():
    chat = conversation()
    assert message_window(json.dumps(chat), FAULT, 300) == message_window(chat, FAULT, 300)
    assert message_window(tuple(chat), FAULT, 300) == message_window(chat, FAULT, 300)


def test_short_values_and_values_without_a_fault_are_shown_as_before():
    short = [{"role": "user", "content": "Hi"}]
    assert message_window(short, 0, 300) == '[{"role": "user", "content": "Hi"}]'
    assert message_window("not json " * 50, 3, 40) == ("not json " * 50)[:39] + "…"
    assert message_window(conversation(), None, 40) == json.dumps(conversation())[:39] + "…"
    last = message_window(conversation(fault=59), 59, 300)
    assert last.endswith('{"role": "user", "content": ""}]')  # the fault is the last message: nothing after it


def test_a_fault_in_the_first_message_gets_the_larger_part():
    chat = conversation(fault=1)
    chat[0] = {"role": "system", "content": "x" * 500}
    window = message_window(chat, 0, 200)
    assert window.startswith('[{"role": "system", "content": "' + "x" * 60)
    assert window.endswith("characters …]")


class _Cells(HTMLParser):
    """The text of each <td> of the examples table."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self._in = 0

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._in += 1
            self.cells.append("")

    def handle_endtag(self, tag):
        if tag == "td":
            self._in -= 1

    def handle_data(self, data):
        if self._in:
            self.cells[-1] += data


def _example_cells(page: str) -> list[str]:
    section = page.split('<section id="examples">')[1]
    parser = _Cells()
    parser.feed(section)
    return parser.cells


@pytest.fixture(scope="module")
def long_lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("long")
    source = str(root / "chats")
    values = [json.dumps(conversation(seed=k)) for k in range(3)] + [json.dumps(conversation(size=4, fault=3))]
    write_deltalake(source, pa.table({"id": [1, 2, 3, 4], "messages": values}))
    run(job_config(root, source, "duckdb", {}, run_id="long-1"))
    return root


def test_run_report_examples_show_the_window_around_message_40(long_lake):
    report = load_report(str(long_lake / "summary"), str(long_lake / "quarantine"))
    assert report.has_message_index
    examples = [ex for group in report.examples for ex in group.examples]
    long = [ex for ex in examples if ex.message == FAULT]
    assert long, [ex.message for ex in examples]
    for example in long:
        value = example.values["messages"]
        assert value.startswith('[{"role": "system", "content": "You are assistant number')
        assert "… messages 1–38, " in value and f"{EMPTY}, … messages 41–59, " in value
    cells = _example_cells(render_page(report))
    windows = [c for c in cells if "… messages 1–38, " in c]
    assert windows and all(EMPTY in c and c.startswith('[{"role": "system"') for c in windows)
    assert str(FAULT) in cells  # the MESSAGE column
    # The JSON form holds the same window.
    rows = [row for e in report_dict(report)["examples"] for row in e["rows"] if row["message"] == FAULT]
    assert rows and all(EMPTY in row["values"]["messages"] for row in rows)
