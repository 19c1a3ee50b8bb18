"""Every parameter of `col_vals_chat_format()`, one small test (or labelled example list) each."""

from __future__ import annotations

import datetime
import json

import pandas as pd
import polars as pl
import pytest

import chatgate as pb


def chat(*turns: tuple[str, str | None]) -> str:
    """JSON text of a conversation: chat(("user", "Hi"), ("assistant", "Hello"))."""
    return json.dumps([{"role": r, "content": c} for r, c in turns])


GOOD = chat(("user", "Hi"), ("assistant", "Hello"))
SYSTEM_GOOD = chat(("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello"))
TWO_USERS = chat(("user", "Hi"), ("user", "Hello?"))
ENDS_WITH_USER = chat(("user", "Hi"), ("assistant", "Hello"), ("user", "Thanks"))
STARTS_WITH_ASSISTANT = chat(("assistant", "Hello"), ("user", "Hi"))
WITH_TOOL = chat(("user", "Weather?"), ("tool", "sunny"), ("assistant", "Sunny."))
EMPTY_REPLY = chat(("user", "Hi"), ("assistant", "  "))


def reasons_of(values: list, **kwargs) -> list:
    """The pb_reason_ of each row (None where it passes), on a one-column Polars table."""
    tbl = pl.DataFrame({"m": values}, schema={"m": pl.String})
    v = pb.Validate(tbl).col_vals_chat_format("m", **kwargs).interrogate()
    assert v.steps[0].eval_error is None, v.steps[0].eval_error
    return v.steps[0].judged.annotated["pb_reason_"].to_list()


# (label, kwargs, values, expected reasons)
PARAMETER_EXAMPLES = [
    (
        "defaults",
        {},
        [GOOD, SYSTEM_GOOD, TWO_USERS, WITH_TOOL],
        [None, None, "not_alternating", "unknown_role"],
    ),
    ("roles-adds-tool", {"roles": ["system", "user", "assistant", "tool"]}, [WITH_TOOL], [None]),
    (
        "roles-without-system",
        {"roles": ("user", "assistant")},
        [GOOD, SYSTEM_GOOD],
        [None, "unknown_role"],
    ),
    ("alternate-false", {"alternate": False}, [TWO_USERS, GOOD], [None, None]),
    (
        "first-role-user",
        {"first_role": "user"},
        [GOOD, SYSTEM_GOOD, STARTS_WITH_ASSISTANT],
        [None, None, "first_role"],
    ),
    (
        "last-role-assistant",
        {"last_role": "assistant"},
        [GOOD, ENDS_WITH_USER],
        [None, "last_role"],
    ),
    ("last-role-user", {"last_role": "user"}, [GOOD, ENDS_WITH_USER], ["last_role", None]),
    ("allow-empty-false", {}, [EMPTY_REPLY], ["empty_content"]),
    ("allow-empty-true", {"allow_empty": True}, [EMPTY_REPLY], [None]),
    ("na-pass-false", {}, [None], ["not_messages"]),
    ("na-pass-true", {"na_pass": True}, [None], [None]),
]


@pytest.mark.parametrize(
    ("kwargs", "values", "expected"),
    [pytest.param(k, v, e, id=label) for label, k, v, e in PARAMETER_EXAMPLES],
)
def test_check_parameters(kwargs, values, expected):
    assert reasons_of(values, **kwargs) == expected


SHAREGPT = json.dumps([{"from": "user", "value": "Hi"}, {"from": "assistant", "value": "Hello"}])


def test_role_key_and_content_key():
    assert reasons_of([SHAREGPT]) == ["bad_message"]
    assert reasons_of([SHAREGPT], role_key="from", content_key="value") == [None]
    no_value = json.dumps([{"from": "user", "content": "Hi"}])
    assert reasons_of([no_value], role_key="from", content_key="value") == ["empty_content"]


def test_role_key_and_content_key_on_native_lists():
    tbl = pd.DataFrame({"m": [json.loads(SHAREGPT)]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format("m", role_key="from", content_key="value")
        .interrogate()
    )
    assert v.all_passed()


# -- what the parameters show in the report ------------------------------------------------

VALUES_TEXT = [
    ("defaults", {}, "CHAT ALTERNATING"),
    ("no-alternation", {"alternate": False}, "CHAT"),
    ("roles", {"roles": ["user", "assistant"]}, "CHAT ROLES: USER, ASSISTANT ALTERNATING"),
    (
        "first-and-last",
        {"first_role": "user", "last_role": "assistant"},
        "CHAT ALTERNATING FIRST: USER LAST: ASSISTANT",
    ),
    ("allow-empty", {"allow_empty": True}, "CHAT ALTERNATING EMPTY OK"),
    ("keys", {"role_key": "from", "content_key": "value"}, "CHAT ALTERNATING KEYS: from/value"),
    ("na-pass", {"na_pass": True}, "CHAT ALTERNATING NA PASS"),
]


@pytest.mark.parametrize(
    ("kwargs", "text"), [pytest.param(k, t, id=label) for label, k, t in VALUES_TEXT]
)
def test_values_cell(kwargs, text):
    v = pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format("m", **kwargs).interrogate()
    assert v.steps[0].values_text() == text
    assert text in repr(v)


def test_assertion_names_the_roles():
    v = (
        pb.Validate(pl.DataFrame({"m": ["[]"]}))
        .col_vals_chat_format("m", roles=["user", "assistant"])
        .interrogate()
    )
    assert "ASSERTION `m is a chat of {user, assistant}`" in repr(v.get_step_report(1))


# -- pre= --------------------------------------------------------------------------------------


def test_pre_runs_on_the_table_before_the_check():
    tbl = pl.DataFrame({"keep": [True, True, False], "m": [GOOD, "[]", "[]"]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format("m", pre=lambda df: df.filter(pl.col("keep")))
        .interrogate()
    )
    assert (v.n(1, scalar=True), v.n_failed(1, scalar=True)) == (2, 1)


def test_pre_can_make_the_column():
    tbl = pd.DataFrame({"raw": [json.loads(GOOD), []]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format("chat", pre=lambda df: df.assign(chat=df["raw"]))
        .interrogate()
    )
    assert v.steps[0].reasons == {"no_messages": 1}


def test_pre_applies_to_its_own_step_only():
    tbl = pl.DataFrame({"m": [GOOD, "[]"]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format("m", pre=lambda df: df.head(1))
        .col_vals_chat_format("m")
        .interrogate()
    )
    assert v.n() == {1: 1, 2: 2}


# -- segments= ---------------------------------------------------------------------------------

SEGMENTED = pl.DataFrame({"src": ["a", "a", "b", None], "m": [GOOD, "[]", GOOD, "[]"]})

SEGMENT_EXAMPLES = [
    ("column-name", "src", [("src", "a"), ("src", "b"), ("src", None)], [2, 1, 1], [1, 0, 1]),
    ("tuple-one-value", ("src", "b"), [("src", "b")], [1], [0]),
    ("tuple-values", ("src", ["a", "zz"]), [("src", "a"), ("src", "zz")], [2, 0], [1, 0]),
    (
        "list",
        ["src", ("src", "a")],
        [("src", "a"), ("src", "b"), ("src", None), ("src", "a")],
        [2, 1, 1, 2],
        [1, 0, 1, 1],
    ),
]


@pytest.mark.parametrize(
    ("segments", "expected_segments", "units", "failed"),
    [pytest.param(s, e, u, f, id=label) for label, s, e, u, f in SEGMENT_EXAMPLES],
)
def test_segments_make_one_step_per_segment(segments, expected_segments, units, failed):
    v = pb.Validate(SEGMENTED).col_vals_chat_format("m", segments=segments).interrogate()
    assert [s.segment for s in v.steps] == expected_segments
    assert [s.i for s in v.steps] == list(range(1, len(expected_segments) + 1))
    assert list(v.n().values()) == units
    assert list(v.n_failed().values()) == failed


def test_segment_is_shown_in_the_columns_cell():
    v = pb.Validate(SEGMENTED).col_vals_chat_format("m", segments=("src", "a")).interrogate()
    assert "m [src = 'a']" in repr(v)
    assert json.loads(v.get_json_report())[0]["segments"] == ["src", "a"]


def _polars_segments(values):
    return pl.DataFrame({"m": [GOOD, "[]", "[]"], "s": values})


def _pandas_object_segments(values):
    return pd.DataFrame({"m": [GOOD, "[]", "[]"], "s": pd.Series(values, dtype=object)})


DAYS = [datetime.date(2024, 1, 2), datetime.date(2024, 1, 1), None]
SEGMENT_COLUMNS = [
    # label, table, the COLUMNS cell of the first segment (values are sorted, None last)
    ("polars-dates", _polars_segments(DAYS), "m [s = 2024-01-01]"),
    ("polars-ints", _polars_segments([2, 1, None]), "m [s = 1]"),
    ("pandas-object-dates", _pandas_object_segments(DAYS), "m [s = 2024-01-01]"),
    ("pandas-object-ints", _pandas_object_segments([2, 1, None]), "m [s = 1]"),
    ("pandas-object-mixed", _pandas_object_segments([1, "a", None]), "m [s = 1]"),
]


@pytest.mark.parametrize(
    ("tbl", "first"), [pytest.param(t, f, id=label) for label, t, f in SEGMENT_COLUMNS]
)
def test_segment_columns_of_other_kinds(tbl, first):
    v = pb.Validate(tbl).col_vals_chat_format("m", segments="s").interrogate()
    assert [s.eval_error for s in v.steps] == [None, None, None]
    assert list(v.n().values()) == [1, 1, 1]
    assert v.steps[0].columns_text() == first
    assert sum(v.n_failed().values()) == 2


def test_segments_on_pandas():
    tbl = SEGMENTED.to_pandas()
    v = pb.Validate(tbl).col_vals_chat_format("m", segments="src").interrogate()
    assert list(v.n().values()) == [2, 1, 1]
    assert type(v.get_data_extracts(1, frame=True)) is pd.DataFrame


# -- thresholds=, actions= at the step ----------------------------------------------------------


def test_step_thresholds_override_global_ones():
    tbl = pl.DataFrame({"m": [GOOD, "[]"]})
    v = (
        pb.Validate(tbl, thresholds=pb.Thresholds(warning=1))
        .col_vals_chat_format("m")
        .col_vals_chat_format("m", thresholds=pb.Thresholds(warning=2))
        .interrogate()
    )
    assert v.warning() == {1: True, 2: False}


def test_step_actions_override_global_ones(capsys):
    tbl = pl.DataFrame({"m": ["[]"]})
    (
        pb.Validate(tbl, thresholds=1, actions=pb.Actions(warning="global {step}"))
        .col_vals_chat_format("m")
        .col_vals_chat_format("m", actions=pb.Actions(warning="local {step}"))
        .interrogate()
    )
    assert capsys.readouterr().out.splitlines() == ["global 1", "local 2"]


# -- brief= --------------------------------------------------------------------------------------

AUTO = "Expect that values in `m` are well-formed chat conversations."

BRIEF_EXAMPLES = [
    ("none", None, None),
    ("text", "Chats are clean", "Chats are clean"),
    ("step", "Step {step} checks chats", "Step 1 checks chats"),
    ("auto", "{auto} (owner: data team)", AUTO + " (owner: data team)"),
    ("step-and-auto", "[{step}] {auto}", "[1] " + AUTO),
    ("column", "Chats in {col}", "Chats in m"),
    ("true", True, AUTO),
    ("false", False, None),
]


@pytest.mark.parametrize(
    ("brief", "expected"), [pytest.param(b, e, id=label) for label, b, e in BRIEF_EXAMPLES]
)
def test_brief(brief, expected):
    v = (
        pb.Validate(pl.DataFrame({"m": [GOOD]}))
        .col_vals_chat_format("m", brief=brief)
        .interrogate()
    )
    assert v.steps[0].brief_text() == expected
    assert json.loads(v.get_json_report())[0]["brief"] == expected
    if expected:
        assert f"Step 1 brief: {expected}" in repr(v)


def test_auto_brief_names_the_last_role():
    v = pb.Validate(pl.DataFrame({"m": [GOOD]})).col_vals_chat_format(
        "m", last_role="assistant", brief=True
    )
    assert v.interrogate().steps[0].brief_text().endswith("conversations ending with assistant.")


def test_global_brief_applies_unless_the_step_sets_one():
    v = (
        pb.Validate(pl.DataFrame({"m": [GOOD]}), brief="Step {step}")
        .col_vals_chat_format("m")
        .col_vals_chat_format("m", brief="mine")
        .col_vals_chat_format("m", brief=False)
        .interrogate()
    )
    assert [s.brief_text() for s in v.steps] == ["Step 1", "mine", None]


# -- active= -----------------------------------------------------------------------------------


def test_inactive_step_is_kept_but_not_evaluated():
    tbl = pl.DataFrame({"m": [GOOD, "[]"]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format("m")
        .col_vals_chat_format("m", active=False)
        .col_vals_chat_format("m", last_role="user")
        .interrogate()
    )
    assert [s.i for s in v.steps] == [1, 2, 3]
    assert v.n() == {1: 2, 2: None, 3: 2}
    assert v.n_failed() == {1: 1, 2: None, 3: 2}
    assert v.steps[1].evaluated is False and v.steps[1].eval_error is None
    assert v.get_data_extracts(i=2, frame=True) is None
    assert 2 not in v.get_data_extracts()
    assert "inactive, not evaluated" in repr(v.get_step_report(2))
    row2 = repr(v).splitlines()[3]
    assert row2.startswith("2 ") and "✓" not in row2 and "✗" not in row2


def test_inactive_failing_step_does_not_fail_all_passed():
    v = (
        pb.Validate(pl.DataFrame({"m": ["[]"]}))
        .col_vals_chat_format("m", active=False)
        .interrogate()
    )
    assert v.all_passed()
    v.assert_passing()


@pytest.mark.parametrize(
    ("rows", "active"), [pytest.param(2, True, id="true"), pytest.param(1, False, id="false")]
)
def test_active_callable_gets_the_table(rows, active):
    tbl = pl.DataFrame({"m": ["[]"] * rows})
    seen = []

    def when(data):
        seen.append(data)
        return data.height > 1

    v = pb.Validate(tbl).col_vals_chat_format("m", active=when).interrogate()
    assert len(seen) == 1 and seen[0] is tbl
    assert v.steps[0].active is active
    assert v.steps[0].evaluated is active


def test_active_callable_runs_before_pre():
    tbl = pl.DataFrame({"flag": [1], "m": [GOOD]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format(
            "m", pre=lambda df: df.drop("flag"), active=lambda df: "flag" in df.columns
        )
        .interrogate()
    )
    assert v.steps[0].evaluated


def test_active_callable_that_raises_is_an_eval_error():
    def boom(data):
        raise RuntimeError("no")

    v = (
        pb.Validate(pl.DataFrame({"m": [GOOD]}))
        .col_vals_chat_format("m", active=boom)
        .interrogate()
    )
    assert v.steps[0].eval_error == "active= raised RuntimeError: no"
    assert not v.all_passed()


# -- dimension= ----------------------------------------------------------------------------------


def test_dimension_defaults_to_validity_and_feeds_health():
    tbl = pl.DataFrame({"a": [GOOD, "[]"], "b": [GOOD, GOOD]})
    v = (
        pb.Validate(tbl)
        .col_vals_chat_format("a")
        .col_vals_chat_format("b", dimension="consistency")
        .col_vals_chat_format("a", active=False, dimension="completeness")
        .interrogate()
    )
    assert [s.dimension for s in v.steps] == ["validity", "consistency", "completeness"]
    assert v.get_health() == {"overall": 0.75, "validity": 0.5, "consistency": 1.0}
    assert [d["dimension"] for d in json.loads(v.get_json_report())] == [
        "validity",
        "consistency",
        "completeness",
    ]


# -- dedup= ------------------------------------------------------------------------------------

DEDUP_TABLES = [
    pytest.param(
        lambda: pl.DataFrame({"m": [GOOD, "[]", GOOD, TWO_USERS, "[]", None, "[]"]}),
        id="polars-text",
    ),
    pytest.param(
        lambda: pd.DataFrame({"m": [GOOD, "[]", GOOD, TWO_USERS, "[]", None, "[]"]}),
        id="pandas-text",
    ),
    pytest.param(
        lambda: pd.DataFrame({"m": [json.loads(GOOD), [], json.loads(TWO_USERS), None, []]}),
        id="pandas-lists",
    ),
]


@pytest.mark.parametrize("make", DEDUP_TABLES)
def test_dedup_on_and_off_find_the_same_rows(make):
    results = {}
    for dedup in ("on", "off", "auto"):
        v = pb.Validate(make()).col_vals_chat_format("m", dedup=dedup).interrogate()
        extract = v.get_data_extracts(1, frame=True)
        results[dedup] = (
            v.n(1, scalar=True),
            v.n_failed(1, scalar=True),
            list(v.steps[0].reasons.items()),
            v.steps[0].note(),
            list(extract["_row_num_"]),
            list(extract["pb_reason_"]),
        )
    assert results["on"] == results["off"] == results["auto"]


def test_dedup_judges_each_distinct_text_once():
    tbl = pl.DataFrame({"m": [GOOD, "[]", GOOD, "[]", GOOD]})
    on = pb.Validate(tbl).col_vals_chat_format("m", dedup="on").interrogate()
    off = pb.Validate(tbl).col_vals_chat_format("m", dedup="off").interrogate()
    assert json.loads(on.get_json_report())[0]["distinct_values"] == 2
    assert json.loads(off.get_json_report())[0]["distinct_values"] is None  # no count without dedup


# -- columns= and selectors ------------------------------------------------------------------------

WIDE = pl.DataFrame(
    {
        "id": [1, 2],
        "chat_prompt": [GOOD, "[]"],
        "chat_reply": [GOOD, GOOD],
        "notes": ["x", "y"],
        "chat_x_raw": ["[]", "[]"],
    }
)

COLUMN_EXAMPLES = [
    ("name", "chat_prompt", ["chat_prompt"]),
    ("list", ["chat_reply", "chat_prompt"], ["chat_reply", "chat_prompt"]),
    ("list-repeats-once", ["chat_reply", "chat_reply"], ["chat_reply"]),
    ("col-name", pb.col("chat_reply"), ["chat_reply"]),
    (
        "col-starts-with",
        pb.col(pb.starts_with("chat_")),
        ["chat_prompt", "chat_reply", "chat_x_raw"],
    ),
    ("col-ends-with", pb.col(pb.ends_with("_raw")), ["chat_x_raw"]),
    ("col-contains", pb.col(pb.contains("rep")), ["chat_reply"]),
    ("col-matches", pb.col(pb.matches(r"^chat_(prompt|reply)$")), ["chat_prompt", "chat_reply"]),
    (
        "col-minus",
        pb.col(pb.starts_with("chat_") - pb.ends_with("_raw")),
        ["chat_prompt", "chat_reply"],
    ),
    ("col-or", pb.col(pb.ends_with("_raw") | pb.contains("prompt")), ["chat_prompt", "chat_x_raw"]),
    ("col-and", pb.col(pb.starts_with("chat_") & pb.contains("x")), ["chat_x_raw"]),
    ("bare-selector", pb.starts_with("chat_r"), ["chat_reply"]),
    (
        "list-with-selector",
        ["chat_x_raw", pb.col(pb.starts_with("chat_"))],
        ["chat_x_raw", "chat_prompt", "chat_reply"],
    ),
]


@pytest.mark.parametrize(
    ("columns", "expected"), [pytest.param(c, e, id=label) for label, c, e in COLUMN_EXAMPLES]
)
def test_one_step_per_column(columns, expected):
    v = pb.Validate(WIDE).col_vals_chat_format(columns).interrogate()
    assert [s.column for s in v.steps] == expected
    assert [s.i for s in v.steps] == list(range(1, len(expected) + 1))


def test_steps_of_several_columns_keep_their_own_results():
    v = pb.Validate(WIDE).col_vals_chat_format(pb.col(pb.starts_with("chat_"))).interrogate()
    assert v.n_failed() == {1: 1, 2: 0, 3: 2}
    assert [s.column_number for s in v.steps] == [2, 3, 5]
    assert v.get_data_extracts(3, frame=True)["_row_num_"].to_list() == [1, 2]


def test_step_numbers_continue_across_calls():
    v = (
        pb.Validate(WIDE)
        .col_vals_chat_format(["chat_prompt", "chat_reply"])
        .col_vals_chat_format("chat_x_raw")
        .interrogate()
    )
    assert [(s.i, s.column) for s in v.steps] == [
        (1, "chat_prompt"),
        (2, "chat_reply"),
        (3, "chat_x_raw"),
    ]
