"""`chatgate report` and `Validate.get_tabular_report()`: made from real job outputs, read as a person would.

The lake: a small Delta table of chats, checked by the embedded job as `run-1`;
then rows are appended (new problems) and `run-2` checks the new version. Every
figure the tests expect comes from the reference check `first_problem` over the
rows each run read.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import chatgate as pb
from chatgate import first_problem
from chatgate.cli import main
from chatgate.errors import ChatgateError
from chatgate.job.runner import run
from chatgate.runreport import ReportError, load_report, render_page, report_dict
from job_helpers import job_config, read_delta

CHECKS = {"last_role": "assistant"}
LEVELS = {"warning": 1, "error": 0.5, "critical": 0.95}
PAYLOAD = "<script>alert(1)</script>"


def _chat(*turns: tuple[str, str]) -> str:
    return json.dumps([{"role": role, "content": content} for role, content in turns])


FIRST_ROWS = [
    (1, _chat(("user", "Hi"), ("assistant", "Hello! How can I help?"))),
    (2, _chat(("user", "Hi"), ("user", "Anyone there?"), ("assistant", "Yes."))),
    (3, _chat(("user", "What is 2 + 2?"), ("bot", "4"))),
    (4, _chat(("user", PAYLOAD), ("user", "again " + "x" * 500), ("assistant", "No."))),
    (5, "not json"),
]
LATER_ROWS = [
    (6, "[]"),
    (7, _chat(("user", "Are you there?"))),
]


def _table(rows: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "messages": [r[1] for r in rows]})


def _expected(rows: list[tuple[int, str]]) -> Counter[str]:
    return Counter(code for _, value in rows if (code := first_problem(value, **CHECKS)) is not None)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """Two runs of the embedded job: run-1 on version 0, run-2 on version 1 (two more failing rows)."""
    root = tmp_path_factory.mktemp("lake")
    source = str(root / "chats")
    write_deltalake(source, _table(FIRST_ROWS))
    run(job_config(root, source, "duckdb", CHECKS, run_id="run-1", **LEVELS))
    write_deltalake(source, _table(LATER_ROWS), mode="append")
    run(job_config(root, source, "duckdb", CHECKS, run_id="run-2", **LEVELS))
    return root


def _paths(lake: Path) -> tuple[str, str]:
    return str(lake / "summary"), str(lake / "quarantine")


class _Text(HTMLParser):
    """The page's text as a browser shows it (entities decoded), tags and styles left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("style", "script")

    def handle_endtag(self, tag):
        self._skip -= tag in ("style", "script")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def _text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return " ".join(" ".join(parser.parts).split())


# -- the HTML page ---------------------------------------------------------------


def test_page_shows_the_latest_run_its_steps_reasons_and_examples(lake):
    report = load_report(*_paths(lake))
    page = render_page(report)
    text = _text(page)
    expected = _expected(FIRST_ROWS + LATER_ROWS)
    failed = sum(expected.values())
    assert report.steps[0].reasons == dict(expected)
    assert "Run run-2" in text
    assert "messages is a chat of {system, user, assistant}" in text
    assert "last_role: assistant" in text
    assert f"7 {7 - failed} {(7 - failed) / 7:.2f} {failed} {failed / 7:.2f}" in text  # units, pass, fail
    top = list(report.steps[0].reasons.items())
    reasons_cell = " ".join(f"{reason} {count}" for reason, count in top[:4])
    assert f"{reasons_cell} +{len(top) - 4} more" in text
    for reason, count in expected.items():
        assert f"(`{reason}`)" in text  # the step's note
        assert f"Step 1 · messages · {reason} · {count} row" in text  # the examples' group
    assert f"Step 1 (messages): {failed} rows aren't well-formed conversations" in text
    assert "LEVELS REACHED warning, error" in text
    assert 'title="warning level reached"' in page and 'title="error level reached"' in page
    assert 'title="critical level reached"' not in page
    # Examples: the checked value and the row's other columns, as the quarantine holds them.
    assert '[{"role": "user", "content": "What is 2 + 2?"}, {"role": "bot", "content": "4"}]' in text
    assert "not json id : 5" in text  # the value, then the other columns (`id`: 5)
    assert "MESSAGE" in text  # the quarantine says at which message each problem is (pb_message_)


def test_every_value_from_the_data_is_escaped(lake):
    page = render_page(load_report(*_paths(lake)))
    assert "<script" not in page  # the page has no script of its own, and the payload is text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert PAYLOAD in _text(page)


def test_page_opens_offline(lake):
    page = render_page(load_report(*_paths(lake)))
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page  # the browser fetches nothing, whatever the page holds
    for fetched in ("<link", "<img", "<iframe", "@import", 'src="http', "url(http"):
        assert fetched not in page
    assert page.count("<svg") == 1 and "<?xml" not in page


def test_chart_shows_failed_rows_per_reason_over_the_runs(lake):
    report = load_report(*_paths(lake))
    assert [(p.run_id, p.reasons) for p in report.history] == [
        ("run-1", dict(_expected(FIRST_ROWS))),
        ("run-2", dict(_expected(FIRST_ROWS + LATER_ROWS))),
    ]
    svg = render_page(report).split('<section id="history">')[1]
    assert "the 2 runs up to this one" in svg
    for label in ("run-1", "run-2", *_expected(FIRST_ROWS + LATER_ROWS)):  # the runs' ticks, the legend
        assert f">{label}</text>" in svg
    texts = {label: style for style, label in re.findall(r'<text style="([^"]*)"[^>]*>([^<]*)</text>', svg)}
    assert "font-weight: 700" in texts["run-2"] and "font-weight" not in texts["run-1"]  # this run in bold
    assert [p.run_id for p in load_report(*_paths(lake), runs=1).history] == ["run-2"]


def test_run_id_selects_a_run_and_its_history_ends_there(lake):
    report = load_report(*_paths(lake), run_id="run-1")
    assert report.run.run_id == "run-1" and report.run.source_version == 0
    assert [p.run_id for p in report.history] == ["run-1"]
    assert {e.reason: e.count for e in report.examples} == dict(_expected(FIRST_ROWS))
    text = _text(render_page(report))
    assert "Run run-1" in text and "run-2" not in text
    assert "no_messages" not in text  # run-2's new problem


def test_examples_are_few_and_cut(lake):
    report = load_report(*_paths(lake), examples=1, chars=40)
    for group in report.examples:
        assert len(group.examples) == 1
        (value,) = group.examples[0].values.values()
        # About 40 characters of messages; a window adds the notes of what it left out.
        assert len(re.sub(r"… messages? [^…]* characters …", "", value)) <= 40 + 6
    long = next(e for e in report.examples if e.reason == "not_alternating")
    assert all(ex.values["messages"].endswith("…]") for ex in long.examples)
    none = load_report(*_paths(lake), examples=0)
    assert all(not e.examples for e in none.examples)
    assert "Quarantined examples" not in render_page(none)


def test_message_index_is_shown_when_the_quarantine_has_it(lake, tmp_path):
    quarantine = read_delta(lake / "quarantine")
    at = quarantine.column_names.index("pb_message_")
    indexed = quarantine.set_column(at, "pb_message_", pa.array(range(quarantine.num_rows), pa.int32()))
    write_deltalake(str(tmp_path / "q"), indexed)
    report = load_report(str(lake / "summary"), str(tmp_path / "q"), run_id="run-1")
    assert report.has_message_index
    run_rows = indexed.filter(pa.compute.equal(indexed["pb_run_id_"], "run-1")).to_pylist()
    index = {row["id"]: row["pb_message_"] for row in run_rows}
    shown = [ex for group in report.examples for ex in group.examples]
    assert shown and all(ex.message == index[int(ex.others["id"])] for ex in shown)
    page = render_page(report)
    assert "MESSAGE" in _text(page) and "the message at fault (MESSAGE, counted from 0)" in _text(page)


# -- the JSON form ----------------------------------------------------------------


def test_json_holds_the_same_data_in_a_stable_layout(lake):
    data = json.loads(json.dumps(report_dict(load_report(*_paths(lake)))))
    assert set(data) == {
        "report",
        "version",
        "summary_table",
        "quarantine_table",
        "run",
        "steps",
        "history",
        "examples",
        "has_message_index",
        "examples_per_reason",
        "example_chars",
    }
    assert (data["report"], data["version"]) == ("chatgate.run_report", 1)
    assert set(data["run"]) == {
        "run_id",
        "started_at",
        "finished_at",
        "seconds",
        "engine",
        "source",
        "source_version",
        "levels",
    }
    assert data["run"]["run_id"] == "run-2" and data["run"]["engine"] == "duckdb"
    assert data["run"]["source_version"] == 1 and data["run"]["levels"] == ["warning", "error"]
    assert data["run"]["started_at"].endswith("+00:00")
    (step,) = data["steps"]
    assert set(step) == {
        "step",
        "column",
        "assertion",
        "units",
        "passed",
        "failed",
        "f_failed",
        "distinct_values",
        "deduplicated",
        "reasons",
        "levels",
        "parameters",
        "tokens",
        "most_rows_fail",
    }
    assert step["most_rows_fail"] is False  # the step reached its levels
    assert step["tokens"] is None  # counted with token_stats=True only (test_token_stats)
    expected = _expected(FIRST_ROWS + LATER_ROWS)
    assert (step["units"], step["failed"], step["passed"]) == (
        7,
        sum(expected.values()),
        7 - sum(expected.values()),
    )
    assert step["reasons"] == dict(expected) and step["parameters"]["last_role"] == "assistant"
    assert [h["run_id"] for h in data["history"]] == ["run-1", "run-2"]
    assert all(set(h) == {"run_id", "started_at", "failed", "reasons"} for h in data["history"])
    assert {(e["step"], e["reason"]): e["count"] for e in data["examples"]} == {
        (1, r): n for r, n in expected.items()
    }
    for group in data["examples"]:
        assert set(group) == {"step", "column", "reason", "count", "rows"}
        assert 1 <= len(group["rows"]) <= data["examples_per_reason"] == 3
        for row in group["rows"]:
            assert set(row) == {"values", "others", "message"}
            assert row["message"] is None or isinstance(row["message"], int)
            assert set(row["values"]) == {"messages"} and set(row["others"]) == {"id"}
    assert data["has_message_index"] is True and data["example_chars"] == 300
    assert any(row["message"] is not None for group in data["examples"] for row in group["rows"])


# -- the command line ---------------------------------------------------------------


def test_cli_writes_the_page_and_says_where(lake, tmp_path, capsys):
    summary, quarantine = _paths(lake)
    out = tmp_path / "report.html"
    assert main(["report", "--summary", summary, "--quarantine", quarantine, "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"chatgate: the report of run run-2 is in {out}\n"
    assert "Run run-2" in _text(out.read_text(encoding="utf-8"))


def test_cli_json_goes_to_stdout_or_out(lake, tmp_path, capsys):
    summary, quarantine = _paths(lake)
    assert (
        main(["report", "--summary", summary, "--quarantine", quarantine, "--run-id", "run-1", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["run"]["run_id"] == "run-1"
    out = tmp_path / "report.json"
    assert (
        main(["report", "--summary", summary, "--quarantine", quarantine, "--json", "--out", str(out)]) == 0
    )
    assert json.loads(out.read_text(encoding="utf-8"))["run"]["run_id"] == "run-2"


def test_installed_command_makes_the_report(lake, tmp_path):
    summary, quarantine = _paths(lake)
    script = Path(sys.executable).parent / "chatgate"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "chatgate"]
    done = subprocess.run(
        [*command, "report", "--summary", summary, "--quarantine", quarantine, "--json", "--examples", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["examples_per_reason"] == 1


def _error(capsys, *flags: str) -> tuple[int, str]:
    status = main(["report", *flags])
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return status, err.strip()


def test_errors_are_one_line_and_name_the_table(lake, tmp_path, capsys):
    summary, quarantine = _paths(lake)
    missing = str(tmp_path / "nowhere")
    assert _error(capsys, "--summary", missing, "--quarantine", quarantine, "--json") == (
        1,
        f"chatgate: error: there is no summary table at {missing!r}: the path doesn't exist",
    )
    (tmp_path / "plain").mkdir()
    plain = str(tmp_path / "plain")
    assert _error(capsys, "--summary", summary, "--quarantine", plain, "--json") == (
        1,
        f"chatgate: error: the quarantine table at {plain!r} isn't a Delta table",
    )
    assert _error(
        capsys, "--summary", summary, "--quarantine", quarantine, "--run-id", "run-9", "--json"
    ) == (
        1,
        f"chatgate: error: run 'run-9' isn't in the summary table at {summary!r}; its last runs: run-2, run-1",
    )


def test_a_table_that_isnt_a_chatgate_output_is_named_with_its_missing_columns(lake, capsys):
    summary, quarantine = _paths(lake)
    status, err = _error(capsys, "--summary", quarantine, "--quarantine", quarantine, "--json")
    assert status == 1
    assert err.startswith(
        f"chatgate: error: the table at {quarantine!r} isn't a chatgate summary: it lacks the columns run_id, "
    )
    assert "started_at" in err and "levels" in err and "pb_reason_" not in err
    status, err = _error(capsys, "--summary", summary, "--quarantine", summary, "--json")
    assert (status, err) == (
        1,
        f"chatgate: error: the table at {summary!r} isn't a chatgate quarantine: it lacks the columns "
        "pb_reason_, pb_step_, pb_column_, pb_run_id_",
    )


def test_an_empty_summary_says_so(tmp_path):
    from chatgate.job.outputs import SUMMARY_SCHEMA

    write_deltalake(str(tmp_path / "s"), SUMMARY_SCHEMA.empty_table())
    with pytest.raises(ReportError, match=r"^the summary table at '.*' holds no run yet$"):
        load_report(str(tmp_path / "s"), str(tmp_path / "q"))


def test_html_needs_out_and_a_bad_count_is_a_usage_error(lake, tmp_path, capsys):
    summary, quarantine = _paths(lake)
    assert _error(capsys, "--summary", summary, "--quarantine", quarantine) == (
        2,
        "chatgate: error: the HTML page needs --out FILE (or pass --json for standard output)",
    )
    nowhere = str(tmp_path / "no" / "report.html")
    assert _error(capsys, "--summary", summary, "--quarantine", quarantine, "--out", nowhere) == (
        1,
        f"chatgate: error: can't write the report to {nowhere!r}: No such file or directory",
    )
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--summary", summary, "--quarantine", quarantine, "--json", "--runs", "0"])
    assert exit_.value.code == 2
    assert "argument --runs: expected a whole number, 1 or more, not '0'" in capsys.readouterr().err


def test_help_lists_every_flag_an_example_and_the_exit_statuses(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--help"])
    assert exit_.value.code == 0
    help_ = capsys.readouterr().out
    text = " ".join(help_.split())
    for flag in (
        "--summary PATH",
        "--quarantine PATH",
        "--run-id ID",
        "--out FILE",
        "--json",
        "--runs N",
        "--examples N",
        "--chars N",
        "--debug",
    ):
        assert flag in text
    assert "(default: the latest run of the summary table)" in text
    assert "The HTML page needs nothing else to open (no network)" in text
    assert (
        "chatgate report --summary lake/chat_summary --quarantine lake/chat_quarantine --out report.html"
        in help_
    )
    assert "exit status:\n  0  the report was written\n  1  no report:" in help_
    assert "\n  2  a bad flag\n" in help_
    with pytest.raises(SystemExit):
        main(["--help"])
    top = " ".join(capsys.readouterr().out.split())
    assert "{run,report,clean}" in top
    assert "clean delete one run's rows from the output tables" in top
    assert "report make the HTML (or JSON) report of a run from its summary and quarantine tables" in top


# -- both engines' outputs ------------------------------------------------------------


def test_report_reads_either_engines_outputs(tmp_path, engine, backend):
    source = str(tmp_path / "chats")
    write_deltalake(source, _table(FIRST_ROWS))
    for run_id in ("a", "b"):
        run(job_config(tmp_path, source, engine, CHECKS, run_id=run_id), backend)
    report = load_report(str(tmp_path / "summary"), str(tmp_path / "quarantine"), run_id="a")
    assert report.run.engine == engine and [p.run_id for p in report.history] == ["a"]
    assert {e.reason: (e.count, len(e.examples)) for e in report.examples} == {
        reason: (count, min(count, 3)) for reason, count in _expected(FIRST_ROWS).items()
    }
    assert "&lt;script&gt;" in render_page(report)


# -- Validate.get_tabular_report() ----------------------------------------------------


def test_tabular_report_shows_the_steps_and_levels_in_pointblank_look():
    chats = pa.table({"messages": [value for _, value in FIRST_ROWS]})
    import polars as pl

    validation = (
        pb.Validate(pl.from_arrow(chats), tbl_name="chats", thresholds=pb.Thresholds(warning=1, error=0.9))
        .col_vals_chat_format("messages", last_role="assistant", brief=True)
        .col_vals_chat_format("messages", thresholds=(10, 20))
        .interrogate()
    )
    table = validation.get_tabular_report()
    from great_tables import GT

    assert isinstance(table, GT)
    page = table.as_raw_html()
    assert "col_vals_chat_format()" in table._repr_html_()  # what a notebook shows
    text = _text(page)
    assert "chatgate validation" in text and "TABLE chats" in text and "W 1" in text and "E 0.9" in text
    for label in ("STEP", "COLUMNS", "VALUES", "EVAL", "UNITS", "PASS", "FAIL", "W", "E", "C"):
        assert f">{label}</th>" in page
    assert text.count("col_vals_chat_format()") == 2
    assert "CHAT ALTERNATING LAST: ASSISTANT" in text
    assert (
        "Expect that values in `messages` are well-formed chat conversations ending with assistant." in text
    )
    failed = sum(_expected(FIRST_ROWS).values())
    assert f"5 {5 - failed} {(5 - failed) / 5:.2f} {failed} {failed / 5:.2f}" in text
    # Step 1 reached its warning level, not its error level, and has no critical one; step 2 reached none.
    assert (
        page.count('title="warning level reached"') == 1
        and page.count('title="warning level not reached"') == 1
    )
    assert page.count('title="error level not reached"') == 2 and "error level reached" not in page
    assert page.count('title="critical level') == 0
    assert f"Step 1 (chat_format) {failed} rows aren't well-formed conversations" in text
    assert "<script" not in page and "&lt;script&gt;" not in page  # values aren't shown, only counts
    assert "chatgate validation" not in _text(validation.get_tabular_report(title=":none:").as_raw_html())
    assert "My checks" in _text(validation.get_tabular_report(title="My checks").as_raw_html())


def test_tabular_report_needs_an_interrogation():
    validation = pb.Validate(pa.table({"messages": ["[]"]}).to_pandas()).col_vals_chat_format("messages")
    with pytest.raises(ChatgateError, match=r"call \.interrogate\(\) first"):
        validation.get_tabular_report()


def test_examples_read_the_same_through_deltalakes_own_reader(lake):
    """Tables with column mapping or deletion vectors are streamed by deltalake: the run's rows are filtered here."""
    from deltalake import DeltaTable

    from chatgate.runreport.examples import find_examples
    from chatgate.stores.deltalake_tables import DeltaScan, delta_source

    report = load_report(*_paths(lake))
    path = str(lake / "quarantine")

    def shown(source):
        found, _ = find_examples(source, "run-2", report.steps, per_reason=3, chars=300, table=path)
        return {(e.reason, e.count): sorted(ex.others["id"] for ex in e.examples) for e in found}

    assert shown(DeltaScan(DeltaTable(path))) == shown(delta_source(path)) == shown_ids(report)


def shown_ids(report):
    return {(e.reason, e.count): sorted(ex.others["id"] for ex in e.examples) for e in report.examples}
