"""`repair_array`: every Arrow form the batch checker reads comes back of its own type, with the
values, repairs and codes that `repair` gives each value on its own."""

from __future__ import annotations

import importlib
import json

import pyarrow as pa
import pytest

from chatgate.rules import ChatFormat, repair, repair_array, repaired_values

try:
    from rule_examples import msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import msg

repair_module = importlib.import_module("chatgate.rules.repairs.repair")


FIXABLE = [msg("human", "a"), msg("user", "b"), msg("gpt", "c")]
PASSING = [msg("user", "a"), msg("assistant", "b")]
UNFIXABLE = [msg("user", "a"), msg("narrator", "b")]
VALUES = [FIXABLE, PASSING, None, UNFIXABLE, FIXABLE]
OPTIONS = {"last_role": "assistant"}
FMT = ChatFormat(**OPTIONS)

TEXTS = [None if v is None else json.dumps(v) for v in VALUES]
EXPECTED_APPLIED = [["map_roles", "merge_repeats"], [], [], [], ["map_roles", "merge_repeats"]]
EXPECTED_AFTER = [None, None, "not_messages", "unknown_role", None]


def _json_extension(texts):
    return pa.ExtensionArray.from_storage(pa.json_(), pa.array(texts, pa.string()))


TEXT_ARRAYS = {
    "string": lambda: pa.array(TEXTS, pa.string()),
    "large_string": lambda: pa.array(TEXTS, pa.large_string()),
    "string_view": lambda: pa.array(TEXTS, pa.string_view()),
    "binary": lambda: pa.array([None if t is None else t.encode() for t in TEXTS], pa.binary()),
    "large_binary": lambda: pa.array([None if t is None else t.encode() for t in TEXTS], pa.large_binary()),
    "binary_view": lambda: pa.array([None if t is None else t.encode() for t in TEXTS], pa.binary_view()),
    "dictionary": lambda: pa.array(TEXTS, pa.dictionary(pa.int8(), pa.string())),
    "json_extension": lambda: _json_extension(TEXTS),
}


@pytest.mark.parametrize("kind", list(TEXT_ARRAYS))
def test_text_arrays_keep_their_type(kind):
    array = TEXT_ARRAYS[kind]()
    fixed, applied, after = repair_array(array, "safe", FMT)
    assert fixed.type == array.type
    assert applied.type == pa.list_(pa.string()) and after.type == pa.string()
    values = array.to_pylist()
    assert fixed.to_pylist() == [repair(v, "safe", **OPTIONS).value for v in values]
    assert applied.to_pylist() == EXPECTED_APPLIED
    assert after.to_pylist() == EXPECTED_AFTER
    unchanged = [i for i, names in enumerate(EXPECTED_APPLIED) if not names]
    assert [fixed[i].as_py() for i in unchanged] == [values[i] for i in unchanged]


def test_native_list_of_structs():
    array = pa.array(VALUES)
    fixed, applied, after = repair_array(array, "safe", FMT)
    assert fixed.type == array.type
    merged = {"role": "user", "content": "a\n\nb"}
    assert fixed.to_pylist() == [
        [merged, msg("assistant", "c")],
        PASSING,
        None,
        UNFIXABLE,
        [merged, msg("assistant", "c")],
    ]
    assert applied.to_pylist() == EXPECTED_APPLIED and after.to_pylist() == EXPECTED_AFTER


def test_native_wrapper_structs_and_map_messages():
    wrapped = pa.array([{"id": i, "messages": v} for i, v in enumerate([FIXABLE, PASSING])])
    fixed, _, after = repair_array(wrapped, "safe", FMT)
    assert fixed.type == wrapped.type and after.to_pylist() == [None, None]
    assert fixed.to_pylist()[0] == {
        "id": 0,
        "messages": [{"role": "user", "content": "a\n\nb"}, msg("assistant", "c")],
    }
    maps = pa.array([FIXABLE, PASSING], pa.list_(pa.map_(pa.string(), pa.string())))
    fixed, applied, _ = repair_array(maps, "safe", FMT)
    assert fixed.type == maps.type and applied.to_pylist() == EXPECTED_APPLIED[:2]
    assert dict(fixed.to_pylist()[0][0]) == {"role": "user", "content": "a\n\nb"}


def test_chunked_array_is_combined():
    chunked = pa.chunked_array([pa.array(TEXTS[:2]), pa.array(TEXTS[2:])])
    fixed, applied, after = repair_array(chunked, "safe", FMT)
    assert isinstance(fixed, pa.Array) and fixed.type == pa.string()
    assert applied.to_pylist() == EXPECTED_APPLIED and after.to_pylist() == EXPECTED_AFTER
    empty = repair_array(pa.chunked_array([], pa.string()), "safe", FMT)
    assert [len(a) for a in empty] == [0, 0, 0]


def test_passing_array_comes_back_as_itself():
    array = pa.array([json.dumps(PASSING)] * 3)
    fixed, applied, after = repair_array(array, "all", FMT)
    assert fixed is array
    assert applied.to_pylist() == [[], [], []] and after.null_count == 3


def test_each_distinct_text_is_repaired_once(monkeypatch):
    calls = []
    real = repair_module._repair_distinct

    def counting(values, *args, **kwargs):
        calls.extend(values)
        return real(values, *args, **kwargs)

    monkeypatch.setattr(repair_module, "_repair_distinct", counting)
    repair_array(pa.array(TEXTS * 3), "safe", FMT)
    assert sorted(calls, key=str) == sorted({TEXTS[0], None, TEXTS[3]}, key=str)


def test_values_are_repaired_a_bounded_number_at_a_time(monkeypatch):
    sizes = []
    real = repair_module._repair_distinct

    def counting(values, *args, **kwargs):
        sizes.append(len(values))
        return real(values, *args, **kwargs)

    monkeypatch.setattr(repair_module, "_repair_distinct", counting)
    monkeypatch.setattr(repair_module, "ROUND_VALUES", 2)
    texts = [json.dumps([msg("human", f"hi {i}"), msg("gpt", "yo")]) for i in range(5)]
    fixed, applied, after = repair_array(pa.array(texts), "safe", FMT)
    assert sizes == [2, 2, 1]
    assert applied.to_pylist() == [["map_roles"]] * 5 and after.null_count == 5
    assert [json.loads(v)[0]["content"] for v in fixed.to_pylist()] == [f"hi {i}" for i in range(5)]


@pytest.mark.parametrize("kind", list(TEXT_ARRAYS))
def test_repaired_values_are_repair_arrays_own(kind):
    array = TEXT_ARRAYS[kind]()
    fixed, applied, _ = repair_array(array, "safe", FMT)
    done = repaired_values(array, repair_module.repair_names("safe", FMT), FMT)
    assert [d.applied if d else [] for d in done] == applied.to_pylist() == EXPECTED_APPLIED
    changed = [json.loads(d.value) for d in done if d and d.applied]
    assert changed == [json.loads(fixed[i].as_py()) for i, a in enumerate(EXPECTED_APPLIED) if a]
    assert [d is None for d in done] == [False, True, False, False, False]  # a missing value fails


def test_a_value_too_large_to_read_is_left_unread_by_both(monkeypatch):
    huge = json.dumps([msg("human", "x" * 2000)])
    fmt = ChatFormat(**OPTIONS, max_value_bytes=1000)
    array = pa.array([huge, TEXTS[0]])
    read = []
    real = repair_module.python_values

    def recording(values):
        read.extend(values.to_pylist())
        return real(values)

    monkeypatch.setattr(repair_module, "python_values", recording)
    fixed, applied, after = repair_array(array, "safe", fmt)
    done = repaired_values(array, ["map_roles", "merge_repeats"], fmt)
    assert read == [TEXTS[0], TEXTS[0]]
    assert fixed[0].as_py() == huge and applied.to_pylist()[0] == [] and after.to_pylist()[0] == "too_large"
    assert done[0] is None and done[1] is not None and done[1].applied == EXPECTED_APPLIED[0]


def test_names_are_checked_before_any_value():
    with pytest.raises(ValueError, match="needs first_role="):
        repair_array(pa.array(TEXTS), "drop_leading", FMT)



def test_the_cycle_collector_is_paused_during_the_repairs_and_left_as_it_was(monkeypatch):
    import gc

    seen = []
    real = repair_module._repair_distinct

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(repair_module, "_repair_distinct", recording)
    assert gc.isenabled()
    repair_array(pa.array(TEXTS), "safe", FMT)
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()
    try:
        repair_array(pa.array(TEXTS), "safe", FMT)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()

    def failing(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(repair_module, "_repair_distinct", failing)
    with pytest.raises(RuntimeError):
        repair_array(pa.array(TEXTS), "safe", FMT)
    assert gc.isenabled()


def test_the_pause_lasts_until_the_last_thread_is_done():
    import gc
    import threading

    from chatgate.rules.base.collector import collector_paused

    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    during: list[bool] = []

    def first():
        with collector_paused():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with collector_paused():
            second_in.set()
            first_out.wait(5)
            during.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert during == [False] and gc.isenabled()
