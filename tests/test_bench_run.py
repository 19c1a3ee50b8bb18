"""The benchmark's command: its paths timed in turns (the order of each round, a path that fails), its flags
and the heading of its targets."""

from __future__ import annotations

import pytest
from bench.run import main, round_order, targets_heading, timed_in_turns


def _recording(calls: list[str], name: str, fail: bool = False):
    def run() -> str:
        calls.append(name)
        if fail:
            raise RuntimeError(f"{name} ran out of memory")
        return f"{name} done"

    return run


def test_each_round_starts_further_along_and_every_other_round_runs_backwards():
    calls: list[str] = []
    funcs = {name: _recording(calls, name) for name in ("a", "b", "c")}
    timed = timed_in_turns(funcs, 3)
    assert calls == ["a", "b", "c", "a", "c", "b", "c", "a", "b"]
    assert {name: result for name, (_, result, _) in timed.items()} == {n: f"{n} done" for n in "abc"}
    assert all(len(every) == 3 and seconds in every for seconds, _, every in timed.values())


@pytest.mark.parametrize(("paths", "rounds"), [(5, 3), (6, 3), (3, 3), (7, 5), (4, 2)])
def test_no_path_is_first_or_last_in_every_round_nor_follows_the_same_path(paths, rounds):
    orders = [round_order(paths, turn, rounds) for turn in range(rounds)]
    assert all(sorted(order) == list(range(paths)) for order in orders)
    assert not set.intersection(*({order[0], order[-1]} for order in orders))
    for path in range(paths):
        before = {order[order.index(path) - 1] if order.index(path) else None for order in orders}
        assert len(before) > 1, f"path {path} follows {before} in every round"


def test_two_paths_take_turns_leading():
    assert [round_order(2, turn, 3) for turn in range(3)] == [[0, 1], [1, 0], [0, 1]]


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


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rows", "abc"], "argument --rows: 'abc' isn't a whole number of at least 1"),
        (["--repeats", "0"], "argument --repeats: '0' isn't a whole number of at least 1"),
        (["--dups", "0,x"], "argument --dups: '0,x' isn't comma-separated numbers, such as 0,0.3,0.9"),
        (["--dups", "0,1.5"], "argument --dups: 1.5 isn't a share of duplicates from 0 to 1"),
    ],
)
def test_a_wrong_flag_is_one_line_naming_it(capsys, flags, message):
    with pytest.raises(SystemExit) as exited:
        main(flags)
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"python -m bench.run: error: {message}"


HINT = "weigh start-up and fixed costs differently, so read a MISS here as a hint)"


@pytest.mark.parametrize(
    ("rows", "cores", "heading"),
    [
        (1_000_000, 2, "Targets"),
        (100_000, 2, f"Targets (set for 1,000,000 rows on 2 cores; 100,000 rows on 2 cores {HINT}"),
        (1_000_000, 16, f"Targets (set for 1,000,000 rows on 2 cores; 1,000,000 rows on 16 cores {HINT}"),
    ],
)
def test_the_targets_say_when_the_run_is_not_the_size_they_were_set_for(rows, cores, heading):
    assert targets_heading(rows, cores) == heading


def test_spark_warms_up_on_the_first_table_measured_not_only_a_small_one(monkeypatch, tmp_path):
    import bench.run as bench_run

    runs: list[tuple[str, str]] = []
    monkeypatch.setattr(bench_run, "source_table", lambda rows, dup: f"table of {rows}")
    monkeypatch.setattr(bench_run.paths, "job", lambda engine, table, scratch, **kw: runs.append((engine, table)))
    bench_run.warm_up(object(), tmp_path, "the first table")
    assert runs == [("duckdb", "table of 20000"), ("spark", "table of 20000")] + [("spark", "the first table")] * bench_run.SPARK_WARM_UP_RUNS
    runs.clear()
    bench_run.warm_up(None, tmp_path, "the first table")
    assert runs == [("duckdb", "table of 20000")]
