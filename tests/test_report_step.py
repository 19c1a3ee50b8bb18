"""`Validate.get_step_report()` is a great_tables table in pointblank's look, and still reads as before.

The report's `gt` is a `GT`; `as_raw_html()`, the notebook's HTML and every other GT method
work on the report. Its `data`, `header()`, `rows()` and text repr are as they were.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import polars as pl
import pytest
from great_tables import GT

import chatgate as pb
from chatgate.runreport.look import FLAG_COLOR

GOOD = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'
TWO_USERS = '[{"role": "user", "content": "a"}, {"role": "user", "content": "<b>b</b>"}]'


class Cells(HTMLParser):
    """Each <td>'s text and style, each column label's text, the title and subtitle's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[tuple[str, str, str]] = []  # (headers, style, text)
        self.labels: list[str] = []
        self.heading = ""
        self._where: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        if tag == "td" and "gt_heading" in attrs.get("class", ""):
            self._where = "heading"
        elif tag == "td":
            self.cells.append((attrs.get("headers", ""), attrs.get("style", ""), ""))
            self._where = "cell"
        elif tag == "th" and "gt_col_heading" in attrs.get("class", ""):
            self.labels.append("")
            self._where = "label"

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._where = None

    def handle_data(self, data):
        if self._where == "cell":
            headers, style, text = self.cells[-1]
            self.cells[-1] = (headers, style, text + data)
        elif self._where == "label":
            self.labels[-1] += data
        elif self._where == "heading":
            self.heading += data + " "


def parse(html: str) -> Cells:
    parser = Cells()
    parser.feed(html)
    return parser


@pytest.fixture
def v() -> pb.Validate:
    tbl = pl.DataFrame({"id": [1, 2, 3], "m": [GOOD, TWO_USERS, "[]"]})
    return pb.Validate(tbl, thresholds=(0.1, 0.2, 0.9)).col_vals_chat_format("m").interrogate()


def test_the_step_report_is_a_great_tables_table(v):
    report = v.get_step_report(1)
    assert isinstance(report.gt, GT)
    html = report.as_raw_html()
    assert html.startswith("<div") and 'id="chatgate_step_1"' in html
    assert report._repr_html_().count("gt_table") >= 1
    # Any other GT method works on the report: it's the report's table.
    assert isinstance(report.tab_source_note("from the nightly run"), GT)
    assert "from the nightly run" in report.tab_source_note("from the nightly run").as_raw_html()


def test_it_looks_like_pointblanks_step_report(v):
    page = parse(v.get_step_report(1).as_raw_html())
    heading = " ".join(page.heading.split()).replace(" :", ":")
    assert heading.startswith("Report for Validation Step 1")
    assert "✗ ASSERTION m is a chat of {system, user, assistant}" in heading
    assert "2 / 3 TEST UNIT FAILURES IN COLUMN 2" in heading
    assert "EXTRACT OF ALL 2 ROWS WITH TEST UNIT FAILURES IN RED:" in heading
    assert "most rows fail" not in heading  # the step has thresholds
    # Column labels: each name over its type.
    assert page.labels == ["_row_num_int64", "idint64", "mlarge_string", "pb_reason_large_string", "pb_message_int32"]
    # The checked column and the reason in red; the other columns not.
    by_column: dict[str, list[tuple[str, str]]] = {}
    for headers, style, text in page.cells:
        by_column.setdefault(headers.rsplit("-", 1)[-1], []).append((style, text))
    for red in ("m", "pb_reason_", "pb_message_"):
        assert all("#B22222" in style for style, _ in by_column[red])
    assert not any("#B22222" in style for style, _ in by_column["id"])
    assert [text for _, text in by_column["pb_reason_"]] == ["not_alternating", "no_messages"]
    assert [text for _, text in by_column["m"]] == [TWO_USERS, "[]"]  # escaped markup reads as it was


def test_values_are_escaped_but_quotes_kept(v):
    html = v.get_step_report(1).as_raw_html()
    assert "&lt;b&gt;b&lt;/b&gt;" in html and "<b>b</b>" not in html
    assert '"role"' in html


def test_data_header_rows_and_text_are_as_before(v):
    report = v.get_step_report(1, limit=1)
    assert report.data["pb_reason_"].to_list() == ["not_alternating", "no_messages"]
    assert report.header().endswith("EXTRACT OF FIRST 1 OF 2 ROWS (WITH TEST UNIT FAILURES IN RED):")
    names, rows = report.rows()
    assert names == ["_row_num_", "id", "m", "pb_reason_", "pb_message_"] and rows == [["2", "2", TWO_USERS, "not_alternating", "1"]]
    assert repr(report).splitlines()[0] == report.header()
    assert "EXTRACT OF FIRST <strong>1</strong> OF <strong>2</strong> ROWS" in report.as_raw_html()


def test_a_passing_step_an_inactive_step_a_table_step_and_an_eval_error_still_render():
    passing = pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format("m").interrogate()
    assert "0 / 1 TEST UNIT FAILURES" in " ".join(parse(passing.get_step_report(1).as_raw_html()).heading.split())
    inactive = pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format("m", active=False).interrogate()
    assert "inactive, not evaluated" in inactive.get_step_report(1).as_raw_html()
    table = pb.Validate(pl.DataFrame({"messages": [GOOD], "id": [1]})).col_vals_chat_format(
        "messages", min_rows=3, extra_columns=False
    ).interrogate()
    heading = " ".join(parse(table.get_step_report(2).as_raw_html()).heading.split())
    assert "ASSERTION the table has at least 3 rows" in heading and "columns outside the format: id" in heading
    broken = pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format(columns="nope").interrogate()
    assert "column 'nope' isn't in the table" in broken.steps[0].eval_error
    assert "✗ column 'nope' isn't in the table" in broken.get_step_report(1).as_raw_html()
    misspelt = pb.Validate(pl.DataFrame({"messages": [GOOD]})).col_vals_chat_format(columns="mesages").interrogate()
    assert misspelt.steps[0].eval_error.endswith("; did you mean 'messages'?")


def test_a_step_without_thresholds_failing_most_rows_is_flagged_in_its_report():
    v = pb.Validate(pl.DataFrame({"m": ["[]", "[]", "[]", GOOD]})).col_vals_chat_format("m").interrogate()
    html = v.get_step_report(1).as_raw_html()
    assert 'class="chatgate-flag"' in html and FLAG_COLOR in html
    assert "⚑ most rows fail (75%) and the step has no thresholds, so no level marks it." in html


FAULT = 40
EMPTY = '{"role": "assistant", "content": ""}'


def test_step_report_shows_the_window_around_message_40():
    from test_report_window import conversation

    values = [json.dumps(conversation(seed=k)) for k in range(2)]
    v = pb.Validate(pl.DataFrame({"messages": values})).col_vals_chat_format("messages").interrogate()
    report = v.get_step_report(1)
    names, rows = report.rows()
    assert [row[names.index("pb_message_")] for row in rows] == [str(FAULT), str(FAULT)]
    html = report.as_raw_html()
    windows = [text for _, _, text in parse(html).cells if "… messages 1–38, " in text]
    assert len(windows) == 2 and all(EMPTY in c for c in windows)
    assert all(len(c) < 450 for c in windows)
