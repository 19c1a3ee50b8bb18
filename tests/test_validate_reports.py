"""Notes, reports, extracts, sundered data, and the errors of the Validate API."""

from __future__ import annotations

import datetime
import json

import ibis
import pandas as pd
import polars as pl
import pytest

import chatgate as pb


def chat(*turns: tuple[str, str]) -> str:
    return json.dumps([{"role": r, "content": c} for r, c in turns])


GOOD = chat(("user", "Hi"), ("assistant", "Hello"))
BAD = "[]"

# One value per problem code, under first_role="user", last_role="assistant".
CODE_FORMAT = {"first_role": "user", "last_role": "assistant"}
CODE_EXAMPLES = {
    "not_messages": '"[{\\"role\\": \\"user\\"}]"',
    "no_messages": "[]",
    "bad_message": '[{"content": "no role"}]',
    "unknown_role": chat(("user", "Hi"), ("bot", "Hello")),
    "system_position": chat(("user", "Hi"), ("system", "Be brief"), ("assistant", "Hello")),
    "first_role": chat(("assistant", "Hello")),
    "not_alternating": chat(("user", "Hi"), ("user", "Hello?"), ("assistant", "Hello")),
    "last_role": chat(("user", "Hi")),
    "empty_content": chat(("user", "Hi"), ("assistant", " \n")),
}


# What the note says of one failing row and of several, for each code, written out.
CODE_PHRASES = {
    "not_messages": ("isn't a list of messages", "aren't lists of messages"),
    "no_messages": ("has no messages", "have no messages"),
    "bad_message": (
        "has a message without a role that's a string",
        "have a message without a role that's a string",
    ),
    "unknown_role": ("has a role that isn't allowed", "have a role that isn't allowed"),
    "system_position": (
        "has a system message that isn't first",
        "have a system message that isn't first",
    ),
    "first_role": ("starts with the wrong role", "start with the wrong role"),
    "not_alternating": ("has roles that don't alternate", "have roles that don't alternate"),
    "last_role": ("ends with the wrong role", "end with the wrong role"),
    "empty_content": ("has a message with no content", "have a message with no content"),
}


def test_there_is_an_example_of_every_code():
    assert tuple(CODE_EXAMPLES) == pb.REASONS
    assert tuple(CODE_PHRASES) == pb.REASONS
    codes = [pb.first_problem(value, **CODE_FORMAT) for value in CODE_EXAMPLES.values()]
    assert codes == list(pb.REASONS)


def note_of(values: list, frame=pl.DataFrame, **kwargs) -> str | None:
    v = pb.Validate(frame({"m": values})).col_vals_chat_format("m", **kwargs).interrogate()
    return v.steps[0].note()


# -- notes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", pb.REASONS)
def test_note_for_one_row_of_each_code(code):
    one, _ = CODE_PHRASES[code]
    assert note_of([GOOD, CODE_EXAMPLES[code]], **CODE_FORMAT) == (
        f"Step 1 (chat_format) 1 row isn't a well-formed conversation: 1 {one} (`{code}`). "
        "The problem with the row is in the `pb_reason_` column."
    )


@pytest.mark.parametrize("code", pb.REASONS)
def test_note_for_several_rows_of_each_code(code):
    _, many = CODE_PHRASES[code]
    assert note_of([CODE_EXAMPLES[code], GOOD, CODE_EXAMPLES[code]], **CODE_FORMAT) == (
        f"Step 1 (chat_format) 2 rows aren't well-formed conversations: 2 {many} (`{code}`). "
        "The problem with each row is in the `pb_reason_` column."
    )


@pytest.mark.parametrize("code", pb.REASONS)
def test_each_code_is_reported_in_the_extract(code):
    tbl = pl.DataFrame({"m": [GOOD, CODE_EXAMPLES[code]]})
    v = pb.Validate(tbl).col_vals_chat_format("m", **CODE_FORMAT).interrogate()
    assert v.get_data_extracts(1, frame=True)["pb_reason_"].to_list() == [code]
    assert f"1 {CODE_PHRASES[code][0]} (`{code}`)" in repr(v)


def test_note_for_no_failure_is_none():
    assert note_of([GOOD]) is None
    assert "Notes" not in repr(
        pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format("m").interrogate()
    )


ORDER_EXAMPLES = [
    # label, rows (as codes, None = passing), the note's list of reasons
    (
        "by-count",
        ["unknown_role", "no_messages", None, "no_messages"],
        "3 rows aren't well-formed conversations: 2 have no messages (`no_messages`) "
        "and 1 has a role that isn't allowed (`unknown_role`)",
    ),
    (
        "ties-by-first-failing-row",
        ["not_alternating", "no_messages", "unknown_role", "no_messages"],
        "4 rows aren't well-formed conversations: 2 have no messages (`no_messages`), "
        "1 has roles that don't alternate (`not_alternating`) "
        "and 1 has a role that isn't allowed (`unknown_role`)",
    ),
    (
        "ties-by-first-failing-row-other-way",
        ["unknown_role", "no_messages", "not_alternating", "no_messages"],
        "4 rows aren't well-formed conversations: 2 have no messages (`no_messages`), "
        "1 has a role that isn't allowed (`unknown_role`) "
        "and 1 has roles that don't alternate (`not_alternating`)",
    ),
    (
        "ties-only",
        [None, "empty_content", "bad_message"],
        "2 rows aren't well-formed conversations: 1 has a message with no content (`empty_content`) "
        "and 1 has a message without a role that's a string (`bad_message`)",
    ),
]


@pytest.mark.parametrize("frame", [pl.DataFrame, pd.DataFrame], ids=["polars", "pandas"])
@pytest.mark.parametrize("dedup", ["on", "off"])
@pytest.mark.parametrize(
    ("rows", "reasons"), [pytest.param(r, o, id=label) for label, r, o in ORDER_EXAMPLES]
)
def test_note_orders_reasons_by_count_then_first_row(frame, dedup, rows, reasons):
    values = [GOOD if code is None else CODE_EXAMPLES[code] for code in rows]
    note = note_of(values, frame=frame, dedup=dedup, **CODE_FORMAT)
    assert note == (
        f"Step 1 (chat_format) {reasons}. The problem with each row is in the `pb_reason_` column."
    )


def test_note_with_three_reasons_reads_as_a_sentence():
    note = note_of(
        [CODE_EXAMPLES["no_messages"], CODE_EXAMPLES["last_role"], CODE_EXAMPLES["bad_message"]],
        **CODE_FORMAT,
    )
    assert (
        ": 1 has no messages (`no_messages`), 1 ends with the wrong role (`last_role`) and 1 has a message"
        in note
    )


# -- the validation table ----------------------------------------------------------------------------


def test_report_title_names_the_table_and_label():
    v = pb.Validate(
        pl.DataFrame({"m": [GOOD]}), tbl_name="sft_chats", label="nightly"
    ).col_vals_chat_format("m")
    assert (
        repr(v.interrogate()).splitlines()[0] == "chatgate validation · local · sft_chats · nightly"
    )


def test_html_escapes_markup_but_keeps_quotes():
    tbl = pl.DataFrame({"m": ['[{"role": "<b>", "content": "x"}]']})
    v = pb.Validate(tbl, label="<i>").col_vals_chat_format("m").interrogate()
    html = v._repr_html_()
    assert "&lt;i&gt;" in html and "<i>" not in html
    assert "row isn't a well-formed conversation" in html
    step_html = v.get_step_report(1)._repr_html_()
    assert "&lt;b&gt;" in step_html and '"role"' in step_html


def test_health_line():
    v = (
        pb.Validate(pl.DataFrame({"m": [GOOD, BAD, GOOD, GOOD]}))
        .col_vals_chat_format("m")
        .interrogate()
    )
    assert repr(v).splitlines()[-1] == "Health: 0.75 overall"
    assert v.get_health() == {"overall": 0.75, "validity": 0.75}


def test_interrogate_twice_gives_the_same_steps():
    v = pb.Validate(pl.DataFrame({"m": [GOOD, BAD]})).col_vals_chat_format("m")
    first = repr(v.interrogate()).splitlines()[:3]
    assert repr(v.interrogate()).splitlines()[:3] == first
    assert len(v.steps) == 1


# -- step reports and extracts --------------------------------------------------------------------


def test_step_report_shows_up_to_its_limit():
    tbl = pl.DataFrame({"m": [BAD] * 150 + [GOOD]})
    v = pb.Validate(tbl).col_vals_chat_format("m").interrogate()
    report = v.get_step_report(1)
    lines = repr(report).splitlines()
    assert "150 / 151 TEST UNIT FAILURES IN COLUMN 1 EXTRACT OF FIRST 100 OF 150 ROWS" in lines[0]
    assert len(lines) == 2 + 100
    assert report.data.height == 150
    small = v.get_step_report(1, limit=5)
    assert "EXTRACT OF FIRST 5 OF 150 ROWS" in repr(small)
    assert len(repr(small).splitlines()) == 2 + 5
    with pytest.raises(ValueError, match="limit="):
        v.get_step_report(1, limit=0)


def test_step_report_of_a_passing_step():
    v = pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format("m").interrogate()
    report = v.get_step_report(1)
    assert report.header().startswith("Report for Validation Step 1 ✓ ASSERTION")
    assert "0 / 1 TEST UNIT FAILURES IN COLUMN 1 EXTRACT OF ALL 0 ROWS" in report.header()
    assert report.data.height == 0


def test_data_extracts_of_every_step():
    tbl = pl.DataFrame({"a": [GOOD, BAD], "b": [BAD, BAD]})
    v = pb.Validate(tbl).col_vals_chat_format(["a", "b"]).interrogate()
    extracts = v.get_data_extracts()
    assert list(extracts) == [1, 2]
    assert extracts[1]["_row_num_"].to_list() == [2]
    assert extracts[2]["_row_num_"].to_list() == [1, 2]
    assert list(v.get_data_extracts(i=2)) == [2]
    with pytest.raises(ValueError, match="frame=True"):
        v.get_data_extracts(frame=True)


# -- sundered data ---------------------------------------------------------------------------------

SUNDER = {
    "id": [1, 2, 3, 4, 5],
    "a": [GOOD, BAD, GOOD, GOOD, BAD],
    "b": [GOOD, GOOD, BAD, GOOD, BAD],
}


@pytest.mark.parametrize("frame", [pl.DataFrame, pd.DataFrame], ids=["polars", "pandas"])
@pytest.mark.parametrize(("kind", "ids"), [("pass", [1, 4]), ("fail", [2, 3, 5])])
def test_sundered_data(frame, kind, ids):
    v = pb.Validate(frame(SUNDER)).col_vals_chat_format(["a", "b"]).interrogate()
    out = v.get_sundered_data(type=kind)
    assert type(out) is frame
    assert list(out.columns) == ["id", "a", "b"]
    assert list(out["id"]) == ids


def test_sundered_data_leaves_out_steps_with_pre_segments_or_inactive():
    v = (
        pb.Validate(pl.DataFrame({**SUNDER, "g": ["x"] * 5}))
        .col_vals_chat_format("a")
        .col_vals_chat_format("b", pre=lambda df: df)
        .col_vals_chat_format("b", segments="g")
        .col_vals_chat_format("b", active=False)
        .interrogate()
    )
    assert v.get_sundered_data("pass")["id"].to_list() == [1, 3, 4]
    assert v.get_sundered_data("fail")["id"].to_list() == [2, 5]


def test_sundered_data_bad_type():
    v = pb.Validate(pl.DataFrame(SUNDER)).col_vals_chat_format("a").interrogate()
    with pytest.raises(ValueError, match="'pass' or 'fail'"):
        v.get_sundered_data(type="passed")


def test_sundered_data_needs_a_step_on_the_table():
    v = pb.Validate(pl.DataFrame(SUNDER)).col_vals_chat_format("a", pre=lambda df: df).interrogate()
    with pytest.raises(pb.ChatgateError, match="no step can split"):
        v.get_sundered_data()


# -- the JSON report -------------------------------------------------------------------------------


def test_json_report():
    tbl = pl.DataFrame(
        {"a": [GOOD, BAD, chat(("user", "a"), ("user", "b"))], "b": [GOOD, GOOD, GOOD]}
    )
    v = (
        pb.Validate(tbl, thresholds=1)
        .col_vals_chat_format(["a", "b"], last_role="assistant")
        .interrogate()
    )
    report = json.loads(v.get_json_report())
    assert [s["i"] for s in report] == [1, 2]
    first = report[0]
    assert first["assertion_type"] == "col_vals_chat_format"
    assert first["column"] == "a"
    assert (first["n"], first["n_passed"], first["n_failed"]) == (3, 1, 2)
    assert first["f_failed"] == pytest.approx(2 / 3)
    assert first["reasons"] == {"no_messages": 1, "not_alternating": 1}
    assert first["values"]["last_role"] == "assistant"
    assert first["values"]["roles"] == ["system", "user", "assistant"]
    assert first["warning"] is True and first["all_passed"] is False
    assert first["notes"].startswith("Step 1 (chat_format) 2 rows aren't well-formed conversations")
    assert (
        report[1]["all_passed"] is True
        and report[1]["reasons"] == {}
        and report[1]["notes"] is None
    )


def test_json_report_with_segment_values_json_cant_hold():
    tbl = pl.DataFrame(
        {"m": [GOOD, BAD], "day": [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]}
    )
    report = json.loads(
        pb.Validate(tbl).col_vals_chat_format("m", segments="day").interrogate().get_json_report()
    )
    assert [s["segments"] for s in report] == [["day", "2024-01-01"], ["day", "2024-01-02"]]


# -- argument errors raise at the call, before interrogation --------------------------------------------

ARGUMENT_ERRORS = [
    # label, kwargs, exception, words of the message
    ("roles-a-string", {"roles": "user"}, TypeError, "roles="),
    ("roles-none", {"roles": None}, TypeError, "roles="),
    ("roles-not-strings", {"roles": ["user", 1]}, TypeError, "roles="),
    ("roles-empty", {"roles": []}, ValueError, "roles="),
    ("role-key-not-a-string", {"role_key": 1}, TypeError, "role_key="),
    ("content-key-not-a-string", {"content_key": None}, TypeError, "content_key="),
    ("first-role-not-in-roles", {"first_role": "bot"}, ValueError, "first_role="),
    ("last-role-not-in-roles", {"last_role": "tool"}, ValueError, "last_role="),
    (
        "first-role-dropped-role",
        {"roles": ["user", "assistant"], "first_role": "system"},
        ValueError,
        "first_role=",
    ),
    ("alternate-not-bool", {"alternate": "yes"}, TypeError, "alternate="),
    ("pre-not-callable", {"pre": "df.head()"}, TypeError, "pre="),
    ("active-not-bool", {"active": "yes"}, TypeError, "active="),
    ("segments-number", {"segments": 5}, TypeError, "segments="),
    ("segments-short-tuple", {"segments": ("g",)}, TypeError, "segments="),
    ("segments-list-with-number", {"segments": ["g", 3]}, TypeError, "segments="),
    ("brief-number", {"brief": 3}, TypeError, "brief="),
    ("dimension-number", {"dimension": 3}, TypeError, "dimension="),
    ("dedup-unknown", {"dedup": "maybe"}, ValueError, "dedup="),
    ("columns-number", {"columns": 5}, TypeError, "columns="),
    ("columns-empty", {"columns": []}, ValueError, "columns="),
    ("columns-holds-number", {"columns": ["m", 1]}, TypeError, "columns="),
]


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [pytest.param(k, e, w, id=label) for label, k, e, w in ARGUMENT_ERRORS],
)
def test_argument_errors_raise_at_the_call(kwargs, exc, words):
    v = pb.Validate(pl.DataFrame({"m": [GOOD], "g": ["x"]}))
    kwargs = {"columns": "m", **kwargs}
    with pytest.raises(exc, match=words):
        v.col_vals_chat_format(**kwargs)
    assert v._plan == [] and v.time_start is None


def test_col_takes_a_name_or_selector():
    with pytest.raises(TypeError, match="col()"):
        pb.col(3)


# -- what can't be evaluated is reported, not raised ------------------------------------------------

EVAL_ERRORS = [
    # label, table, call kwargs, words of the eval error
    (
        "missing-column",
        pl.DataFrame({"m": [GOOD]}),
        {"columns": "nope"},
        "column 'nope' isn't in the table",
    ),
    (
        "missing-column-pandas",
        pd.DataFrame({"m": [GOOD]}),
        {"columns": "nope"},
        "column 'nope' isn't in the table",
    ),
    (
        "pre-raises",
        pl.DataFrame({"m": [GOOD]}),
        {"columns": "m", "pre": lambda df: df.select("zzz")},
        "ColumnNotFoundError",
    ),
    (
        "pre-returns-no-table",
        pl.DataFrame({"m": [GOOD]}),
        {"columns": "m", "pre": lambda df: None},
        "AttributeError",
    ),
    (
        "pre-drops-the-column",
        pd.DataFrame({"m": [GOOD]}),
        {"columns": "m", "pre": lambda df: df.drop(columns="m")},
        "column 'm' isn't in the table",
    ),
    (
        "segment-column-missing",
        pl.DataFrame({"m": [GOOD]}),
        {"columns": "m", "segments": "g"},
        "segment column 'g'",
    ),
    (
        "segment-tuple-column-missing",
        pl.DataFrame({"m": [GOOD]}),
        {"columns": "m", "segments": ("g", "x")},
        "segment column 'g'",
    ),
    (
        "selector-matches-nothing",
        pl.DataFrame({"m": [GOOD]}),
        {"columns": pb.col(pb.starts_with("chat_"))},
        "columns= starts_with('chat_') matches no column",
    ),
    (
        "reserved-reason-column",
        pl.DataFrame({"m": [GOOD], "pb_reason_": ["x"]}),
        {"columns": "m"},
        "already has a column 'pb_reason_'",
    ),
    (
        "reserved-row-number-column",
        pd.DataFrame({"m": [GOOD], "_row_num_": [7]}),
        {"columns": "m"},
        "already has a column '_row_num_'",
    ),
]


@pytest.mark.parametrize(
    ("tbl", "kwargs", "words"),
    [pytest.param(t, k, w, id=label) for label, t, k, w in EVAL_ERRORS],
)
def test_eval_errors_are_reported(tbl, kwargs, words):
    v = pb.Validate(tbl).col_vals_chat_format(**kwargs).interrogate()
    step = v.steps[0]
    assert words in step.eval_error
    assert not step.evaluated
    assert v.n() == {1: None}
    assert v.all_passed() is False
    assert v.get_data_extracts(1, frame=True) is None
    text = repr(v)
    assert " ✗ " in text.splitlines()[2]
    assert f"Step 1 (chat_format) couldn't be evaluated: {step.eval_error}" in text
    assert "couldn&#x27;t" not in v._repr_html_() and "couldn't be evaluated" in v._repr_html_()
    assert repr(v.get_step_report(1)) == f"Report for Validation Step 1 ✗ {step.eval_error}"
    assert json.loads(v.get_json_report())[0]["eval_error"] == step.eval_error
    with pytest.raises(AssertionError, match="couldn't be evaluated"):
        v.assert_passing()


def test_other_steps_run_after_an_eval_error():
    v = (
        pb.Validate(pl.DataFrame({"m": [GOOD, BAD]}))
        .col_vals_chat_format(["nope", "m"])
        .interrogate()
    )
    assert v.n() == {1: None, 2: 2}
    assert v.steps[1].reasons == {"no_messages": 1}


def test_reserved_column_is_left_as_it_is():
    tbl = pl.DataFrame({"m": [BAD], "pb_reason_": ["mine"]})
    pb.Validate(tbl).col_vals_chat_format("m").interrogate()
    assert tbl["pb_reason_"].to_list() == ["mine"]


# -- reports before interrogate() -----------------------------------------------------------------------

BEFORE = [
    ("n", lambda v: v.n()),
    ("n_failed", lambda v: v.n_failed(i=1, scalar=True)),
    ("f_passed", lambda v: v.f_passed()),
    ("warning", lambda v: v.warning()),
    ("all_passed", lambda v: v.all_passed()),
    ("assert_passing", lambda v: v.assert_passing()),
    ("get_step_report", lambda v: v.get_step_report(1)),
    ("get_data_extracts", lambda v: v.get_data_extracts()),
    ("get_sundered_data", lambda v: v.get_sundered_data()),
    ("get_json_report", lambda v: v.get_json_report()),
    ("get_health", lambda v: v.get_health()),
]


@pytest.mark.parametrize("call", [pytest.param(c, id=label) for label, c in BEFORE])
def test_reports_before_interrogate_raise_a_clear_error(call):
    v = pb.Validate(pl.DataFrame({"m": [BAD]})).col_vals_chat_format("m")
    with pytest.raises(pb.ChatgateError, match=r"call \.interrogate\(\) first"):
        call(v)


def test_repr_before_interrogate_says_what_to_do():
    v = pb.Validate(pl.DataFrame({"m": [BAD]})).col_vals_chat_format("m").col_vals_chat_format("m")
    assert "2 planned step call(s); call .interrogate() to run them." in repr(v)
    assert "call .interrogate() to run them." in v._repr_html_()


@pytest.mark.parametrize(
    "frame",
    [pl.DataFrame, lambda data: pl.DataFrame(data).to_pandas(), lambda data: ibis.memtable(data)],
    ids=["polars", "pandas", "ibis"],
)
def test_step_report_says_at_which_message_each_problem_is(frame):
    values = [
        GOOD,
        '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "assistant", "content": "c"}]',
        "[]",
        '[{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]',
    ]
    v = pb.Validate(frame({"m": values})).col_vals_chat_format("m").interrogate()
    names, rows = v.get_step_report(1).rows()
    assert names[names.index("pb_reason_") + 1] == "pb_message_"
    found = {(row[names.index("pb_reason_")], row[names.index("pb_message_")]) for row in rows}
    assert found == {("not_alternating", "2"), ("no_messages", ""), ("unknown_role", "1")}
