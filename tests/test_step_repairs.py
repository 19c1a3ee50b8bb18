"""`StepRepairs` takes two shortcuts on a check that judges the conversation alone: it reads the
step's own codes instead of judging the failing values again, and judges again only the values
its repairs changed. Both must give what judging every row gives, and `--fix` must not give a step
codes that an earlier step's repairs made stale."""

from __future__ import annotations

import json
from dataclasses import replace

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.fixes import StepRepairs
from chatgate.job.fixes import BEFORE, FixPlan, fix_batch
from chatgate.rules import ChatCheck, ChatFormat, format_from, repair_names

try:
    from strategies import cases, json_text
    from test_repair_property import defective, options, with_unread_messages
except ImportError:  # tests/ imported as a package
    from tests.strategies import cases, json_text
    from tests.test_repair_property import defective, options, with_unread_messages

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def judging_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """StepRepairs without the shortcuts: every row judged again, row by row, by the step's check
    (`RowCheck.check`, the reference the batch check is held to)."""
    monkeypatch.setattr(ChatCheck, "judges_value_alone", property(lambda self: False))


def repaired_in_batches(
    check: ChatCheck, repairs: str, texts: list[str | None], codes: str | None, kind: pa.DataType = pa.string()
) -> list[list]:
    """The three columns StepRepairs gives, batch after batch (its memo carried across them)."""
    repairer = StepRepairs(check, repairs, tuple(repair_names(repairs, check.fmt)), codes)
    out: list[list] = [[], [], []]
    for start in range(0, len(texts), 5):
        column = pa.array(texts[start : start + 5], kind)
        given = {check.column: column, "r": check.check(pa.table({check.column: column}))}
        for kept, got in zip(out, repairer(given)):
            kept.extend(got.to_pylist())
    return out


def assert_shortcuts_agree(monkeypatch: pytest.MonkeyPatch, fmt: ChatFormat, texts: list[str | None]) -> None:
    """Both presets, on plain and large text, and with a size limit that makes some values too large."""
    for limit in (None, 150):
        check = ChatCheck("m", replace(fmt, max_value_bytes=limit))
        for repairs, kind in (("safe", pa.string()), ("all", pa.large_string())):
            try:
                repair_names(repairs, fmt)
            except ValueError:
                continue  # a repair of "all" that this format gives nothing to aim for
            fast = repaired_in_batches(check, repairs, texts, "r", kind)
            with monkeypatch.context() as patched:
                judging_every_row(patched)
                slow = repaired_in_batches(check, repairs, texts, "r", kind)
            assert fast == slow


@SETTINGS
@given(cases(max_size=10))
def test_the_shortcuts_give_what_judging_every_row_gives(case):
    texts = [json_text(value, raw) for value, raw in zip(case.values, case.raw)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_shortcuts_agree(monkeypatch, format_from(**case.kwargs), texts * 2)


@SETTINGS
@given(st.lists(defective(), max_size=10), options())
def test_the_shortcuts_agree_on_conversations_the_repairs_change(values, opts):
    texts = [json.dumps(value) for value in values]
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_shortcuts_agree(monkeypatch, format_from(**opts), texts * 2)


def test_only_the_values_the_repairs_changed_are_judged(monkeypatch):
    """The step's codes are read, not found again: the batch check sees the repaired value only, once."""
    import chatgate.fixes as fixes
    import chatgate.rules.repairs.repair as repair_module

    judged: list[str] = []
    real = fixes.check_array

    def recording(array, fmt):
        judged.extend(array.to_pylist())
        return real(array, fmt)

    monkeypatch.setattr(fixes, "check_array", recording)
    monkeypatch.setattr(repair_module, "check_array", recording)
    fixable = json.dumps([{"role": "human", "content": "Hi"}, {"role": "assistant", "content": "Yo"}])
    hopeless = json.dumps([{"role": "robot", "content": "Hi"}])
    check = ChatCheck("m", ChatFormat())
    got = repaired_in_batches(check, "safe", [fixable, hopeless, fixable], codes="r")
    assert got[1] == [["map_roles"], [], ["map_roles"]] and got[2] == [None, "unknown_role", None]
    assert judged == [
        json.dumps(
            [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}], separators=(",", ":")
        )
    ]


def test_a_later_step_on_a_column_an_earlier_step_repaired_judges_its_values_again():
    """Both steps fail the row with unknown_role; step 1's repairs fix it for step 2 too. Step 2's
    code in the batch was found before step 1's repairs: read as the repaired value's, it would
    keep the row failing."""
    value = json.dumps([{"role": "human", "content": "Hi"}, {"role": "gpt", "content": "Yo"}])
    first, second = ChatCheck("m", ChatFormat()), ChatCheck("m", ChatFormat(first_role="user"))
    column = pa.array([value])
    batch = pa.record_batch(
        {"m": column, "r1": first.check(pa.table({"m": column})), "r2": second.check(pa.table({"m": column}))}
    )
    assert batch.column("r1").to_pylist() == batch.column("r2").to_pylist() == ["unknown_role"]
    plan = FixPlan(
        steps=((1, first, "r1"), (2, second, "r2")), repairs=("safe",), value_types={"m": pa.string()}
    )
    added = dict(zip(plan.added().names, fix_batch(plan, batch)))
    assert added[BEFORE].to_pylist() == ["unknown_role"]
    assert [plan.repairers[n].codes for n in (1, 2)] == ["r1", None]


@SETTINGS
@given(st.lists(with_unread_messages(), max_size=12), options(), st.none() | st.integers(1, 4), st.sampled_from(["safe", "all"]))
def test_the_job_skips_only_values_its_repairs_cant_make_pass(values, opts, min_messages, repairs):
    """The job's repairs leave unread the values whose code no repair takes away (`only_to_pass`):
    its fixed rows, their repairs and its still failing rows are what repairing every value gives."""
    fmt = format_from(**opts, min_messages=min_messages)
    try:
        repair_names(repairs, fmt)
    except ValueError:
        return  # a repair of "all" that this format gives nothing to aim for
    check = ChatCheck("m", fmt)
    column = pa.array([json.dumps(value) for value in values], pa.string())
    batch = pa.record_batch({"m": column, "r": check.check(pa.table({"m": column}))})
    plan = FixPlan(steps=((1, check, "r"),), repairs=(repairs,), value_types={"m": pa.string()})
    every = FixPlan(steps=plan.steps, repairs=plan.repairs, value_types=plan.value_types)
    every.repairers[1] = replace(every.repairers[1], only_to_pass=False, memo={})
    assert plan.repairers[1].only_to_pass
    assert fix_batch(plan, batch) == fix_batch(every, batch)
