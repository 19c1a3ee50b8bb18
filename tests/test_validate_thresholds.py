"""Counts per step, threshold levels and the actions they fire."""

from __future__ import annotations

import json

import polars as pl
import pytest

import chatgate as pb

GOOD = json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
BAD = "[]"


def table(failed: int, units: int) -> pl.DataFrame:
    """`units` rows of which the first `failed` have no messages."""
    return pl.DataFrame({"m": [BAD] * failed + [GOOD] * (units - failed)})


def levels(thresholds, failed: int, units: int = 4) -> list[str]:
    v = (
        pb.Validate(table(failed, units))
        .col_vals_chat_format("m", thresholds=thresholds)
        .interrogate()
    )
    return [name for name in ("warning", "error", "critical") if getattr(v, name)(i=1, scalar=True)]


# -- n, n_passed, n_failed, f_passed, f_failed ------------------------------------------------------


@pytest.fixture
def two_steps():
    tbl = pl.DataFrame({"a": [BAD, GOOD, GOOD, GOOD], "b": [BAD, BAD, BAD, GOOD]})
    return pb.Validate(tbl).col_vals_chat_format(["a", "b"]).interrogate()


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("n", {1: 4, 2: 4}),
        ("n_passed", {1: 3, 2: 1}),
        ("n_failed", {1: 1, 2: 3}),
        ("f_passed", {1: 0.75, 2: 0.25}),
        ("f_failed", {1: 0.25, 2: 0.75}),
    ],
)
def test_counts_per_step(two_steps, method, expected):
    get = getattr(two_steps, method)
    assert get() == expected
    assert get(i=2) == {2: expected[2]}
    assert get(i=[2, 1]) == {2: expected[2], 1: expected[1]}
    assert get(i=1, scalar=True) == expected[1]


def test_scalar_needs_one_step(two_steps):
    with pytest.raises(ValueError, match="i="):
        two_steps.n(scalar=True)
    with pytest.raises(ValueError, match="i="):
        two_steps.warning(scalar=True)


def test_scalar_without_i_on_a_single_step():
    v = pb.Validate(table(1, 4)).col_vals_chat_format("m").interrogate()
    assert v.n_failed(scalar=True) == 1


def test_unknown_step_number(two_steps):
    with pytest.raises(IndexError, match="no step 3"):
        two_steps.n(i=3)
    with pytest.raises(IndexError, match="no step 0"):
        two_steps.get_step_report(0)


@pytest.mark.parametrize(("failed", "expected"), [(0, True), (1, False)])
def test_all_passed(failed, expected):
    v = pb.Validate(table(failed, 3)).col_vals_chat_format("m").interrogate()
    assert v.all_passed() is expected


def test_assert_passing_raises_with_the_note(two_steps):
    with pytest.raises(AssertionError) as info:
        two_steps.assert_passing()
    message = str(info.value)
    assert message.startswith("The following steps failed:")
    assert (
        "- Step 1 (chat_format) 1 row isn't a well-formed conversation: 1 has no messages (`no_messages`). "
        "The problem with the row is in the `pb_reason_` column." in message
    )
    assert (
        "- Step 2 (chat_format) 3 rows aren't well-formed conversations: 3 have no messages"
        in message
    )


def test_assert_passing_is_silent_when_every_step_passes():
    assert pb.Validate(table(0, 3)).col_vals_chat_format("m").interrogate().assert_passing() is None


# -- threshold levels ------------------------------------------------------------------------------

WEC = pb.Thresholds(warning=1, error=0.5, critical=3)

LEVEL_EXAMPLES = [
    # label, thresholds, failed of 4, levels reached
    ("wec-none-failed", WEC, 0, []),
    ("wec-1-failed", WEC, 1, ["warning"]),
    ("wec-2-failed", WEC, 2, ["warning", "error"]),
    ("wec-3-failed", WEC, 3, ["warning", "error", "critical"]),
    ("tuple", (1, 0.5, 3), 2, ["warning", "error"]),
    ("tuple-short", (2,), 2, ["warning"]),
    ("dict", {"error": 2}, 2, ["error"]),
    ("dict-critical-fraction", {"critical": 0.75}, 2, []),
    ("number-count", 3, 2, []),
    ("number-count-met", 2, 2, ["warning"]),
    ("number-fraction-met", 0.5, 2, ["warning"]),
    ("number-fraction-not-met", 0.51, 2, []),
    ("float-count", 2.0, 2, ["warning"]),
    ("true", True, 1, ["warning"]),
    ("true-none-failed", True, 0, []),
    ("thresholds-true", pb.Thresholds(critical=True), 1, ["critical"]),
    ("false", False, 4, []),
    ("none", None, 4, []),
    ("empty", pb.Thresholds(), 4, []),
]


@pytest.mark.parametrize(
    ("thresholds", "failed", "expected"),
    [pytest.param(t, f, e, id=label) for label, t, f, e in LEVEL_EXAMPLES],
)
def test_levels_reached(thresholds, failed, expected):
    assert levels(thresholds, failed) == expected


def test_level_methods():
    tbl = pl.DataFrame({"a": [BAD, GOOD, GOOD, GOOD], "b": [BAD, BAD, BAD, GOOD]})
    v = pb.Validate(tbl, thresholds=WEC).col_vals_chat_format(["a", "b"]).interrogate()
    assert v.warning() == {1: True, 2: True}
    assert v.error() == {1: False, 2: True}
    assert v.critical() == {1: False, 2: True}
    assert v.error(i=1, scalar=True) is False
    assert v.critical(i=[2]) == {2: True}


def test_level_cells_in_the_report():
    v = pb.Validate(table(2, 4), thresholds=(1, 0.5)).col_vals_chat_format("m").interrogate()
    row = repr(v).splitlines()[2]
    assert row.split()[-4:] == ["●", "●", "—", "✓"]
    v = pb.Validate(table(1, 4), thresholds=(1, 0.5)).col_vals_chat_format("m").interrogate()
    assert repr(v).splitlines()[2].split()[-4:] == ["●", "○", "—", "✓"]


def test_thresholds_in_the_json_report():
    v = pb.Validate(table(2, 4), thresholds=WEC).col_vals_chat_format("m").interrogate()
    step = json.loads(v.get_json_report())[0]
    assert step["thresholds"] == {"warning": 1, "error": 0.5, "critical": 3}
    assert (step["warning"], step["error"], step["critical"]) == (True, True, False)


def test_numpy_numbers_are_thresholds():
    np = pytest.importorskip("numpy")
    assert pb.Thresholds(warning=np.int64(2), error=np.float64(0.5)).as_dict() == {
        "warning": 2,
        "error": 0.5,
        "critical": None,
    }


BAD_THRESHOLDS = [
    # label, thresholds=, exception, words the message has
    ("negative-count", pb.Thresholds, {"warning": -1}, ValueError, "warning="),
    ("zero", pb.Thresholds, {"error": 0}, ValueError, "error="),
    ("zero-float", pb.Thresholds, {"error": 0.0}, ValueError, "error="),
    ("fraction-above-1", pb.Thresholds, {"critical": 1.5}, ValueError, "critical="),
    ("nan", pb.Thresholds, {"error": float("nan")}, ValueError, "error="),
    ("text", pb.Thresholds, {"warning": "1"}, TypeError, "warning="),
    ("list", pb.Thresholds, {"critical": [1]}, TypeError, "critical="),
]


@pytest.mark.parametrize(
    ("make", "kwargs", "exc", "words"),
    [pytest.param(m, k, e, w, id=label) for label, m, k, e, w in BAD_THRESHOLDS],
)
def test_bad_threshold_values_name_the_level(make, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        make(**kwargs)


BAD_SHORTHANDS = [
    ("negative-number", -2, ValueError, "warning="),
    ("tuple-of-4", (1, 2, 3, 4), ValueError, "at most 3"),
    ("tuple-bad-error", (1, -0.5), ValueError, "error="),
    ("tuple-bad-critical", (1, 2, "x"), TypeError, "critical="),
    ("dict-unknown-level", {"warn": 1}, ValueError, "unknown levels"),
    ("dict-bad-value", {"error": 2.5}, ValueError, "error="),
    ("text", "high", TypeError, "thresholds="),
    ("list", [1, 2], TypeError, "thresholds="),
]


@pytest.mark.parametrize(
    ("thresholds", "exc", "words"),
    [pytest.param(t, e, w, id=label) for label, t, e, w in BAD_SHORTHANDS],
)
def test_bad_thresholds_raise_at_the_call(thresholds, exc, words):
    v = pb.Validate(table(1, 2))
    with pytest.raises(exc, match=words):
        v.col_vals_chat_format("m", thresholds=thresholds)
    with pytest.raises(exc, match=words):
        pb.Validate(table(1, 2), thresholds=thresholds)
    assert v._plan == []


# -- actions ---------------------------------------------------------------------------------------


def run(actions, failed=3, units=4, thresholds=WEC, capsys=None):
    pb.Validate(table(failed, units)).col_vals_chat_format(
        "m", thresholds=thresholds, actions=actions
    ).interrogate()
    return capsys.readouterr().out.splitlines() if capsys else None


def test_template_placeholders(capsys):
    template = "{LEVEL}/{level} step {step} ({i}) column {column} ({col}) {type} {TYPE}: {failed} of {units}"
    assert run(pb.Actions(warning=template), failed=1, capsys=capsys) == [
        "WARNING/warning step 1 (1) column m (m) col_vals_chat_format COL_VALS_CHAT_FORMAT: 1 of 4"
    ]


def test_template_auto_and_time(capsys):
    out = run(pb.Actions(error="{auto} at {time}"), failed=2, capsys=capsys)
    assert len(out) == 1
    assert out[0].startswith(
        "Step 1 (col_vals_chat_format) on column 'm' reached the error level: 2 of 4 units failed. at 20"
    )


def test_template_leaves_other_braces_alone(capsys):
    out = run(pb.Actions(warning='{"alert": true, "step": {step}} {nope}'), failed=1, capsys=capsys)
    assert out == ['{"alert": true, "step": 1} {nope}']


def test_callables_are_called_with_what_they_ask_for():
    calls = []
    actions = pb.Actions(
        critical=[
            lambda: calls.append("no args"),
            lambda step, level, failed: calls.append((step, level, failed)),
            lambda **context: calls.append(sorted(context)),
        ]
    )
    run(actions, failed=3)
    assert calls[0] == "no args"
    assert calls[1] == (1, "critical", 3)
    assert {"step", "level", "LEVEL", "column", "type", "failed", "units", "time", "auto"} <= set(
        calls[2]
    )


def test_highest_only_takes_the_highest_level(capsys):
    actions = pb.Actions(warning="W{step}", error="E{step}", critical="C{step}")
    assert run(actions, failed=3, capsys=capsys) == ["C1"]
    assert run(actions, failed=2, capsys=capsys) == ["E1"]
    assert run(actions, failed=1, capsys=capsys) == ["W1"]
    assert run(actions, failed=0, capsys=capsys) == []


def test_highest_only_false_takes_every_level(capsys):
    actions = pb.Actions(warning="W", error="E", critical="C", highest_only=False)
    assert run(actions, failed=3, capsys=capsys) == ["W", "E", "C"]
    assert run(actions, failed=2, capsys=capsys) == ["W", "E"]


def test_highest_only_falls_back_to_a_lower_level_with_an_action(capsys):
    """pointblank: with only a warning action, reaching critical still runs it."""
    assert run(pb.Actions(warning="{LEVEL} {step}"), failed=3, capsys=capsys) == ["WARNING 1"]


def test_default_action(capsys):
    assert run(pb.Actions(default="{LEVEL}"), failed=3, capsys=capsys) == ["CRITICAL"]
    assert run(pb.Actions(default="{LEVEL}", highest_only=False), failed=3, capsys=capsys) == [
        "WARNING",
        "ERROR",
        "CRITICAL",
    ]
    assert run(
        pb.Actions(default="d:{level}", error="own", highest_only=False), failed=3, capsys=capsys
    ) == [
        "d:warning",
        "own",
        "d:critical",
    ]


def test_a_list_of_actions_runs_in_order(capsys):
    calls = []
    out = run(
        pb.Actions(warning=["first", lambda: calls.append("second"), "third"]),
        failed=1,
        capsys=capsys,
    )
    assert out == ["first", "third"]
    assert calls == ["second"]


def test_actions_need_thresholds(capsys):
    assert run(pb.Actions(default="x"), failed=4, thresholds=None, capsys=capsys) == []


def test_global_actions_and_thresholds(capsys):
    tbl = pl.DataFrame({"a": [BAD, GOOD], "b": [GOOD, GOOD]})
    (
        pb.Validate(tbl, thresholds=1, actions=pb.Actions(warning="{column} warned"))
        .col_vals_chat_format(["a", "b"])
        .interrogate()
    )
    assert capsys.readouterr().out.splitlines() == ["a warned"]


def test_inactive_steps_take_no_action(capsys):
    pb.Validate(table(4, 4), thresholds=1, actions=pb.Actions(warning="x")).col_vals_chat_format(
        "m", active=False
    ).interrogate()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"warning": 3}, id="number"),
        pytest.param({"default": ["ok", None]}, id="none-in-list"),
    ],
)
def test_actions_must_be_strings_or_callables(kwargs):
    with pytest.raises(TypeError, match="string or a callable"):
        pb.Actions(**kwargs)


def test_actions_argument_must_be_actions():
    with pytest.raises(TypeError, match="Actions"):
        pb.Validate(table(1, 2), actions="print me")
    with pytest.raises(TypeError, match="Actions"):
        pb.Validate(table(1, 2)).col_vals_chat_format("m", actions=lambda: None)
