"""A step without thresholds that fails most of its rows is flagged, not green, in every report.

The HTML is read as a browser's DOM would be (html.parser): the flag is an element of
class `chatgate-flag` whose text says "most rows fail", drawn in the flag's color; the
step's status strip has that color too, never pointblank's green or a level's color.
"""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import write_deltalake

import chatgate as pb
from chatgate.report import MOST_ROWS_FAIL, most_rows_fail
from chatgate.runreport import load_report, render_page
from chatgate.runreport.look import FLAG_COLOR
from chatgate.runreport.tabular import SEVERITY_COLORS

GOOD = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'
BAD = "[]"


class Dom(HTMLParser):
    """Elements as (tag, attributes, text inside), nested text included; style and script skipped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, dict[str, str], list[str]]] = []
        self.elements: list[tuple[str, dict[str, str], str]] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "meta", "col", "img", "input", "link"):
            return
        self.open.append((tag, {k: v or "" for k, v in attrs}, []))

    def handle_endtag(self, tag):
        while self.open:
            name, attrs, parts = self.open.pop()
            text = "".join(parts)
            if name not in ("style", "script"):
                self.elements.append((name, attrs, text))
                if self.open:
                    self.open[-1][2].append(text)
            if name == tag:
                return

    def handle_data(self, data):
        if self.open:
            self.open[-1][2].append(data)


def dom(page: str) -> Dom:
    parser = Dom()
    parser.feed(page)
    parser.close()
    return parser


def flags(page: str) -> list[tuple[str, dict[str, str], str]]:
    return [e for e in dom(page).elements if "chatgate-flag" in e[1].get("class", "").split()]


def status_fills(page: str) -> list[str]:
    """The background colors of the status strip cells (great_tables' `gt_row` cells of the first column)."""
    fills = []
    for tag, attrs, _ in dom(page).elements:
        style = attrs.get("style", "").replace(" ", "").lower()
        if tag == "td" and attrs.get("headers", "").endswith("-status") and "background-color:" in style:
            fills.append(style.split("background-color:")[1].split(";")[0])
    return fills


def _validate(values: list[str], **thresholds: float) -> pb.Validate:
    return pb.Validate(pl.DataFrame({"m": values}), thresholds=thresholds or None).col_vals_chat_format("m").interrogate()


def test_more_than_half_is_defined_once():
    assert MOST_ROWS_FAIL == 0.5
    assert most_rows_fail(51, 100) and not most_rows_fail(50, 100) and not most_rows_fail(0, 0)


def test_a_step_failing_every_row_without_thresholds_is_flagged_not_green():
    page = _validate([BAD] * 4).get_tabular_report().as_raw_html()
    found = flags(page)
    assert found, "no flag in the tabular report"
    texts = " ".join(text for _, _, text in found)
    assert "most rows fail (100%)" in texts and "MOST ROWS FAIL" in texts and "⚑" in texts
    assert all(FLAG_COLOR.lower() in attrs.get("style", "").lower() for _, attrs, _ in found)
    fills = status_fills(page)
    assert FLAG_COLOR.lower() in fills
    assert not any(fill.startswith(SEVERITY_COLORS["green"].lower()) for fill in fills)
    assert FLAG_COLOR not in (SEVERITY_COLORS["warning"], SEVERITY_COLORS["error"], SEVERITY_COLORS["critical"])
    # The EVAL cell shows the flag, not pointblank's ✓.
    eval_cells = [text for tag, attrs, text in dom(page).elements if tag == "td" and text.strip() in ("⚑", "✓")]
    assert eval_cells == ["⚑"]


def test_half_or_less_failing_keeps_pointblanks_pale_green():
    page = _validate([BAD, BAD, GOOD, GOOD]).get_tabular_report().as_raw_html()
    assert not flags(page)
    assert any(fill.startswith(SEVERITY_COLORS["green"].lower()) for fill in status_fills(page))


def test_a_step_with_thresholds_shows_its_levels_not_the_flag():
    v = _validate([BAD] * 4, warning=0.1, error=0.2, critical=0.3)
    page = v.get_tabular_report().as_raw_html()
    assert not flags(page)
    assert SEVERITY_COLORS["critical"].lower() in status_fills(page)
    assert "most rows fail" not in repr(v)


def test_text_and_notebook_reports_say_so_too():
    v = _validate([BAD, BAD, BAD, GOOD])
    assert "Step 1: ⚑ most rows fail (75%) and the step has no thresholds, so no level marks it." in repr(v)
    assert "most rows fail (75%)" in v._repr_html_()


# -- the run report ------------------------------------------------------------------------


def _chat(*turns: tuple[str, str]) -> str:
    return json.dumps([{"role": role, "content": content} for role, content in turns])


def _command() -> list[str]:
    script = Path(sys.executable).parent / "chatgate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "chatgate"]


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """`chatgate run` with no thresholds on a table where 3 rows of 4 fail: its outputs' paths."""
    root = tmp_path_factory.mktemp("flag")
    source = str(root / "chats")
    values = [_chat(("user", "Hi"), ("assistant", "Hello")), "[]", _chat(("user", "a"), ("user", "b")), "nope"]
    write_deltalake(source, pa.table({"id": [1, 2, 3, 4], "messages": values}))
    outputs = {name: str(root / name) for name in ("quarantine", "summary", "valid")}
    done = subprocess.run(
        [*_command(), "run", "--source", source, "--column", "messages", "--engine", "duckdb", "--run-id", "r1",
         "--quarantine", outputs["quarantine"], "--summary", outputs["summary"], "--valid", outputs["valid"]],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert Path(outputs["summary"]).exists(), done.stderr
    return root, outputs


def test_run_report_flags_a_step_without_levels_that_fails_most_rows(failing_run):
    _, outputs = failing_run
    page = render_page(load_report(outputs["summary"], outputs["quarantine"]))
    texts = " ".join(text for _, _, text in flags(page))
    assert "most rows fail (75%)" in texts and "MOST ROWS FAIL" in texts
    assert FLAG_COLOR.lower() in status_fills(page)
    assert "LEVELS REACHED none" in " ".join(" ".join(text.split()) for _, _, text in dom(page).elements)


def test_run_report_json_says_which_steps_are_flagged(failing_run):
    _, outputs = failing_run
    done = subprocess.run(
        [*_command(), "report", "--summary", outputs["summary"], "--quarantine", outputs["quarantine"], "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (step,) = json.loads(done.stdout)["steps"]
    assert step["most_rows_fail"] is True and step["levels"] == [] and (step["failed"], step["units"]) == (3, 4)


def test_cli_report_of_a_cli_run_shows_the_flag(failing_run, tmp_path):
    _, outputs = failing_run
    out = tmp_path / "report.html"
    done = subprocess.run(
        [*_command(), "report", "--summary", outputs["summary"], "--quarantine", outputs["quarantine"], "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"chatgate: the report of run r1 is in {out}"
    page = out.read_text(encoding="utf-8")
    assert any("most rows fail (75%)" in text for _, _, text in flags(page))
    assert "Step 1 (messages): ⚑ most rows fail (75%) and the step reached no level." in " ".join(
        " ".join(text.split()) for _, _, text in dom(page).elements
    )
