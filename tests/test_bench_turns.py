"""The benchmark's paths timed in turns: the order of each round and a path that fails."""

from __future__ import annotations

import pytest
from bench.run import timed_in_turns


def _recording(calls: list[str], name: str, fail: bool = False):
    def run() -> str:
        calls.append(name)
        if fail:
            raise RuntimeError(f"{name} ran out of memory")
        return f"{name} done"

    return run


def test_every_other_round_runs_the_paths_in_reverse_order():
    calls: list[str] = []
    funcs = {name: _recording(calls, name) for name in ("a", "b", "c")}
    timed = timed_in_turns(funcs, 3)
    assert calls == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert {name: result for name, (_, result) in timed.items()} == {n: f"{n} done" for n in "abc"}
    assert all(seconds >= 0 for seconds, _ in timed.values())


def test_a_path_that_fails_is_left_out_of_later_rounds_and_of_the_result():
    calls: list[str] = []
    failures: list[str] = []
    funcs = {"a": _recording(calls, "a"), "b": _recording(calls, "b", fail=True)}
    timed = timed_in_turns(funcs, 3, on_error=lambda name, exc: failures.append(f"{name}: {exc}"))
    assert calls == ["a", "b", "a", "a"]
    assert failures == ["b: b ran out of memory"]
    assert list(timed) == ["a"]


def test_without_an_error_handler_a_failing_path_stops_the_run():
    with pytest.raises(RuntimeError, match="out of memory"):
        timed_in_turns({"a": _recording([], "a", fail=True)}, 2)
