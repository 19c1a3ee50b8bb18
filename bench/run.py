"""`make bench`: the chatgate jobs side by side with the baselines, on seeded synthetic Delta tables.

    python -m bench.run --rows 1000000 [--dups 0,0.3,0.9] [--repeats 3] [--no-spark]

Prints rows/s, MB/s of JSON and ratios, checks the targets, and writes
bench/results/results-<rows>.json and a PNG chart beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chatgate import read_delta

from . import paths
from .data import DEFECTS, json_bytes, source_table

RESULTS = Path(__file__).resolve().parent / "results"
SPARK_MASTER = "local[2]"


def about_the_run(argv: list[str], rows: int, dups: list[float], repeats: int, *, spark: bool) -> dict:
    """What the results' table says of a run: its date, commit, command, machine and data."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " with changes not committed"
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    command = shlex.join(["python", "-m", "bench.run", *argv])
    shares = ", ".join(f"{d:.0%}" for d in dups[:-1]) + (" and " if len(dups) > 1 else "") + f"{dups[-1]:.0%}"
    return {
        "date": date,
        "machine": machine() + (f"; Spark {SPARK_MASTER}" if spark else ""),
        "data": (
            f"seeded synthetic Delta tables: about 2.5 KB of JSON a row, {DEFECTS:.0%} defective rows, "
            f"{shares} duplicate values"
        ),
        "measurements": {date: f"commit {commit}: `{command}`, medians of {repeats} runs of {rows:,} rows"},
    }


def machine() -> str:
    """Cores, CPU model, memory and the load when the run started: how busy the machine was matters."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()[0]
    return (
        f"{os.cpu_count()} cores ({model or platform.machine()}), {memory:.0f} GiB, {platform.system()}, "
        f"load average {load:.1f} when the run started"
    )


def timed(func, repeats: int):
    """Median seconds of `repeats` runs, and the last result."""
    median, result, _ = timed_in_turns({func: func}, repeats)[func]
    return median, result


def round_order(paths: int, turn: int, rounds: int) -> list[int]:
    """The order (indices) the paths run in, in round `turn` of `rounds`: each round starts a
    `paths / rounds` share further along, and every other round runs backwards (two paths
    take turns leading).

    A path can slow the one after it (on Spark, the one after the pandas UDF took 0.3 to 0.4 s
    more), and the first path of a round follows other work: in one order, the first path would
    pay for the last one in every round but the first; reversing alone keeps one path at the
    rounds' edges, first or last in every round (run twice in a row, or first after other work).
    """
    step = -(-paths // rounds)
    order = [(turn * step + i) % paths for i in range(paths)]
    return order[::-1] if turn % 2 and paths > 2 else order


def timed_in_turns(funcs: dict, repeats: int, on_error=None) -> dict:
    """Each of `funcs` timed in turns: median seconds, last result and every run's seconds, by
    name. Each round runs every function once, in `round_order`. A function that raises is left
    out of the next rounds and of the result, after `on_error(name, exc)`."""
    seconds: dict = {name: [] for name in funcs}
    results: dict = {}
    items = list(funcs.items())
    for turn in range(repeats):
        for name, func in (items[i] for i in round_order(len(items), turn, repeats)):
            if name not in seconds:
                continue
            start = time.perf_counter()
            try:
                results[name] = func()
            except Exception as exc:  # noqa: BLE001 - a baseline that can't finish is a result too
                if on_error is None:
                    raise
                on_error(name, exc)
                del seconds[name]
                results.pop(name, None)
                continue
            seconds[name].append(time.perf_counter() - start)
    return {name: (statistics.median(times), results[name], times) for name, times in seconds.items()}


def embedded_peak_memory(source: str, dedup: str = "auto") -> dict:
    """Peak RSS (bytes) of a fresh process running the embedded job on `source` (default settings),
    and of its largest check worker process (as the pool logs it: the kernel's VmHWM)."""
    code = (
        "import logging, os, tempfile; from pathlib import Path; from bench import paths; "
        "from chatgate.engines.workers import peak_memory; "
        "logging.basicConfig(level=logging.INFO, format='%(message)s'); "
        f"paths.job('duckdb', {source!r}, Path(tempfile.mkdtemp()), dedup={dedup!r}); "
        "print(peak_memory(os.getpid()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    workers = [int(line.split()[-2]) * 2**20 for line in done.stderr.splitlines() if "check workers' peak" in line]
    return {"job_bytes": int(done.stdout.split()[-1]), "largest_worker_bytes": max(workers, default=0)}


def check_batch_in_a_fresh_process(source: str) -> dict:
    """`check_batch_alone` in a process of its own, as a check worker is: in this one, the
    collector's passes over everything the benchmark holds would be timed with the parse."""
    code = f"import json; from bench.run import check_batch_alone; print(json.dumps(check_batch_alone({source!r})))"
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    return json.loads(done.stdout.splitlines()[-1])


def check_batch_alone(source: str, rows: int = 200_000) -> dict:
    """check_array on one core against the parse-only time of msgspec, the JSON library it uses.

    Two parse-only baselines: `msgspec.json.decode` into Python objects (the
    library's plain parse) and the checker's own typed decoder (roles and
    contents only, other keys skipped), the stricter floor.
    """
    import msgspec
    import pyarrow as pa

    from chatgate.rules import check_array
    from chatgate.rules.check.batch import typed_decoder

    table = read_delta(source).head(rows, columns=["messages"])
    column = table.column("messages").combine_chunks()
    # Warmed once, as a check worker is after its first batches (the roles' verdicts, allocations).
    check_array(column, paths.FMT)
    check, _ = timed(lambda: check_array(column, paths.FMT), 3)
    values = [v.encode() for v in column.to_pylist()]

    def parse_only(decode):
        def parse():
            for v in values:
                try:
                    decode(v)
                except Exception:  # noqa: BLE001 - garbage rows fail to decode, as in the checker
                    pass

        parse()
        return timed(parse, 3)[0]

    plain = parse_only(msgspec.json.decode)
    typed = parse_only(typed_decoder("role", "content"))
    n = len(column)
    return {
        "rows": n,
        "check_rows_per_s": n / check,
        "parse_rows_per_s": n / plain,
        "typed_decode_rows_per_s": n / typed,
        "ratio_to_parse": check / plain,
        "ratio_to_typed_decode": check / typed,
        "mb": pa.compute.sum(pa.compute.binary_length(column)).as_py() / 1e6,
    }



def _positive(text: str) -> int:
    """argparse's type of a count: a whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} isn't a whole number of at least 1")
    return int(text)


def _shares(text: str) -> list[float]:
    """argparse's type of --dups: comma-separated shares of duplicate values, each from 0 to 1."""
    try:
        shares = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} isn't comma-separated numbers, such as 0,0.3,0.9") from None
    wrong = [share for share in shares if not 0 <= share <= 1]
    if wrong:
        raise argparse.ArgumentTypeError(f"{wrong[0]:g} isn't a share of duplicates from 0 to 1")
    return shares


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run")
    parser.add_argument("--rows", type=_positive, default=1_000_000)
    parser.add_argument("--dups", type=_shares, default="0,0.3,0.9", help="duplicate shares, comma-separated, each from 0 to 1")
    parser.add_argument("--repeats", type=_positive, default=3)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-embedded", action="store_true", help="measure the Spark paths only")
    parser.add_argument("--skip", default="", help="paths not to measure: comma-separated parts of their names")
    args = parser.parse_args(argv)
    dups = args.dups
    about = about_the_run(sys.argv[1:] if argv is None else list(argv), args.rows, dups, args.repeats, spark=not args.no_spark)
    RESULTS.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="chatgate-bench-"))
    spark, startup = None, None
    if not args.no_spark:
        start = time.perf_counter()
        from chatgate import spark_session

        spark = spark_session(
            "chatgate-bench",
            master=SPARK_MASTER,
            extra_conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "8",
                        # Room for the driver path's collect at 1M rows (about 1.8 GB); it fails beyond.
                        "spark.driver.memory": "8g", "spark.driver.maxResultSize": "4g"},
        )
        spark.sparkContext.setLogLevel("ERROR")
        startup = time.perf_counter() - start
        print(f"Spark start-up: {startup:.1f} s (not counted below)")
    warm_up(spark, scratch, source_table(args.rows, dups[0]))
    report = {"rows": args.rows, **about, "repeats": args.repeats, "spark_startup_s": startup, "scenarios": []}
    out = RESULTS / f"results-{args.rows}.json"
    for dup in dups:
        skip = [part for part in args.skip.split(",") if part] + (["embedded", "duckdb"] if args.no_embedded else [])
        report["scenarios"].append(run_scenario(args.rows, dup, args.repeats, spark, scratch, skip))
        out.write_text(json.dumps(report, indent=2))  # what is measured survives a later failure
    report["check_batch"] = check_batch_in_a_fresh_process(source_table(args.rows, 0.3))
    report["targets"] = targets(report)
    out.write_text(json.dumps(report, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)
    print_report(report)
    print_scale()
    chart(report, RESULTS / f"results-{args.rows}.png")
    print(f"\nwrote {out} and its chart")
    return 0


SPARK_WARM_UP_RUNS = 3
"""Untimed Spark jobs on the first table measured: on 1M rows the first took 1.75x, the second
1.24x and the third 1.13x the later runs' time (JIT, caches), which a small table doesn't warm."""


def warm_up(spark, scratch: Path, first: str) -> None:
    """Untimed runs of each job, so the first timed paths pay no first-run costs: on a small
    table, then (Spark) `SPARK_WARM_UP_RUNS` on `first`, the first table the run measures."""
    small = source_table(20_000, 0.3)
    paths.job("duckdb", small, scratch)
    if spark is not None:
        from chatgate.engines.spark import SparkEngine

        backend = SparkEngine(spark=spark, locate=True)
        for table in (small, *[first] * SPARK_WARM_UP_RUNS):
            paths.job("spark", table, scratch, backend=backend)


def print_scale() -> None:
    """The jobs' rows/s and the embedded peak memory at every size measured so far (30% duplicates)."""
    print("\nScale (30% duplicates, dedup=auto; every results-*.json under bench/results)")
    print(f"  {'rows':>10s} {'embedded rows/s':>16s} {'spark rows/s':>13s} {'embedded peak':>14s}")
    reports = [json.loads(path.read_text()) for path in RESULTS.glob("results-*.json")]
    peaks = {}
    for report in sorted(reports, key=lambda r: r["rows"]):
        for s in report["scenarios"]:
            if s["duplicates"] != 0.3:
                continue
            embedded, spark = _rate(s, "embedded job dedup=auto"), _rate(s, "spark job dedup=auto")
            peak = s.get("embedded_peak_bytes", 0)  # none measured in a run of the Spark paths alone
            print(f"  {report['rows']:>10,d} {embedded or 0:>16,.0f} {spark or 0:>13,.0f} {peak / 2**20:>10,.0f} MiB")
            if peak:
                peaks[report["rows"]] = peak
    sizes = sorted(n for n in peaks if n >= 1_000_000)
    if len(sizes) > 1:
        growth = peaks[sizes[-1]] / peaks[sizes[0]]
        mark = "met " if growth <= 1.25 else "MISS"
        print(f"  [{mark}] embedded peak at {sizes[-1]:,} rows / at {sizes[0]:,} rows: {growth:.2f}x (goal <= 1.25x)")


def run_scenario(rows: int, dup: float, repeats: int, spark, scratch: Path, skip: list[str] = ()) -> dict:
    source = source_table(rows, dup)
    mb = json_bytes(source) / 1e6
    print(f"\n== {rows:,} rows, {dup:.0%} duplicates, {mb:,.0f} MB of JSON")
    runs: dict[str, dict] = {}

    def record(name, seconds, result, every):
        failed = result[0] if isinstance(result, tuple) else result
        runs[name] = {"seconds": seconds, "rows_per_s": rows / seconds, "mb_per_s": mb / seconds, "failed": failed,
                      "every_seconds": [round(s, 3) for s in every]}
        if isinstance(result, tuple):
            runs[name]["driver_bytes"] = result[1]
        spread = f"  (runs: {', '.join(f'{s:.2f}' for s in every)} s)" if len(every) > 1 else ""
        print(f"  {name:28s} {seconds:7.2f} s  {rows / seconds:>10,.0f} rows/s{spread}", flush=True)

    def failure(name, exc):
        runs[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
        print(f"  {name:28s} failed: {runs[name]['error']}")

    def measure(name, func):
        measure_in_turns({name: func})

    def measure_in_turns(paths_timed):
        """Paths compared with each other, timed in turns (a round of each, `repeats` times): run
        one after another, each path's repeats would meet the machine in a different state."""
        timed_paths = {n: f for n, f in paths_timed.items() if not any(part in n for part in skip)}
        for name, (seconds, result, every) in timed_in_turns(timed_paths, repeats, on_error=failure).items():
            record(name, seconds, result, every)

    # A floor is timed in its best conditions, its runs back to back; the paths compared with
    # each other in turns. (Timed in turns with the jobs, a ceiling came out up to 50% slower.)
    measure("duckdb ceiling (read+hash)", lambda: paths.duckdb_ceiling(source, scratch))
    measure_in_turns({
        **{f"embedded job dedup={m}": functools.partial(paths.job, "duckdb", source, scratch, dedup=m)
           for m in ("auto", "on", "off")},
        # --threads 1: DuckDB on one thread and the check in the job's process (no workers).
        "embedded job one core": functools.partial(paths.job, "duckdb", source, scratch, threads=1),
        "embedded job --fix safe": functools.partial(paths.job, "duckdb", source, scratch, fix="safe"),
    })
    if dup == FEW_FAILING_AT:
        few = source_table(rows, dup, defect_fraction=0.01)
        measure_in_turns({
            "embedded job, 1% failing": functools.partial(paths.job, "duckdb", few, scratch),
            "embedded job --fix safe, 1% failing": functools.partial(paths.job, "duckdb", few, scratch, fix="safe"),
        })
    measure("duckdb native SQL", lambda: paths.duckdb_native_sql(source, scratch))
    if spark is not None:
        from chatgate.engines.spark import SparkEngine

        backend = SparkEngine(spark=spark, locate=True)  # as the job makes it (job.registry)
        spark_job = functools.partial(paths.job, "spark", backend=backend)
        # Without chatgate's jar (`engines/spark/shapes.py`): every row is handed to Python.
        unproven = SparkEngine(spark=spark, locate=True, prove=False)
        measure("spark ceiling (scan+hash)", lambda: paths.spark_ceiling(spark, source, scratch))
        measure("spark mapInArrow hand-off", lambda: paths.spark_mapinarrow_handoff(spark, source, scratch))
        measure_in_turns({
            **{f"spark job dedup={m}": functools.partial(spark_job, source, scratch, dedup=m) for m in ("auto", "on", "off")},
            "spark job --fix safe": functools.partial(spark_job, source, scratch, fix="safe"),
            "spark job, every row to Python": functools.partial(paths.job, "spark", source, scratch, backend=unproven),
            "spark pandas UDF per row": lambda: paths.spark_pandas_udf_per_row(spark, source, scratch),
        })
        if dup == FEW_FAILING_AT:
            measure_in_turns({
                "spark job, 1% failing": functools.partial(spark_job, few, scratch),
                "spark job --fix safe, 1% failing": functools.partial(spark_job, few, scratch, fix="safe"),
            })
        measure("spark native SQL", lambda: paths.spark_native_sql(spark, source, scratch))
        # Last: on a large table it may exhaust the driver's memory.
        measure("spark driver path", lambda: paths.spark_driver_path(spark, source, scratch))
    jobs = "embedded" if "embedded job dedup=auto" in runs else "spark"
    expected = {False: runs.get(f"{jobs} job dedup=auto", {}).get("failed"),
                True: runs.get(f"{jobs} job, 1% failing", {}).get("failed")}
    disagree = [
        n for n, r in runs.items()
        if "ceiling" not in n and "hand-off" not in n and "failed" in r and r["failed"] != expected["1% failing" in n]
    ]
    if disagree:
        print(f"  !! paths disagree on the failing rows: {disagree} vs {expected}")
    scenario = {"duplicates": dup, "mb": mb, "runs": runs, "disagree": disagree}
    if not any(part in "embedded job" for part in skip):
        peaks = {mode: embedded_peak_memory(source, mode) for mode in ("on", "off")}
        scenario.update(embedded_peaks=peaks, embedded_peak_bytes=max(p["job_bytes"] for p in peaks.values()))
    print_scenario(scenario)
    return scenario


FEW_FAILING_AT = 0.3
"""The share of duplicates of the scenario that also measures repairs on a table with 1% failing rows."""


def _rate(scenario, name):
    run = scenario["runs"].get(name)
    return run.get("rows_per_s") if run else None


BASELINES = {
    "spark job dedup=auto": ("spark native SQL", "spark driver path", "spark pandas UDF per row"),
    "embedded job dedup=auto": ("duckdb native SQL",),
}
CEILINGS = {"spark": "spark ceiling (scan+hash)", "duckdb": "duckdb ceiling (read+hash)"}


def _ceiling_of(name: str) -> str:
    return CEILINGS["spark" if name.startswith("spark") else "duckdb"]


def targets(report: dict) -> list[dict]:
    """The issue's targets, each with the measured value and whether it was met (None: not measured)."""
    out = []

    def add(name, value, goal, test):
        out.append({"target": name, "value": value, "goal": goal, "met": None if value is None else test(value)})

    def ratio(a, b):
        return a / b if a and b else None

    for s in report["scenarios"]:
        d = f"{s['duplicates']:.0%} dup"
        for prefix in ("embedded job", "spark job"):
            auto = _rate(s, f"{prefix} dedup=auto")
            best = max(_rate(s, f"{prefix} dedup={m}") or 0 for m in ("on", "off"))
            slower = ratio(best, auto)
            add(f"{prefix} auto vs best of on/off ({d})", None if slower is None else slower - 1, "<= 10% slower",
                lambda v: v <= 0.10)
            fixing = ratio(auto, _rate(s, f"{prefix} --fix safe"))
            # The tables have 5% failing rows (bench.data): the repairs may cost 25% there, 10% at 1%.
            add(f"{prefix} --fix safe vs without ({d}, 5% failing)", None if fixing is None else fixing - 1,
                "<= 25% slower", lambda v: v <= 0.25)
            if s["duplicates"] == FEW_FAILING_AT:
                few = ratio(_rate(s, f"{prefix}, 1% failing"), _rate(s, f"{prefix} --fix safe, 1% failing"))
                add(f"{prefix} --fix safe vs without ({d}, 1% failing)", None if few is None else few - 1,
                    "<= 10% slower", lambda v: v <= 0.10)
        job = _rate(s, "spark job dedup=auto")
        if job or "spark native SQL" in s["runs"]:
            add(f"spark job / native Spark SQL ({d})", ratio(job, _rate(s, "spark native SQL")), ">= 4x",
                lambda v: v >= 4)
            if s["duplicates"] == 0.3:
                add(f"spark ceiling / spark job ({d})", ratio(_rate(s, CEILINGS["spark"]), job), "<= 3x",
                    lambda v: v <= 3)
            add(f"spark job / driver path ({d})", ratio(job, _rate(s, "spark driver path")), ">= 5x",
                lambda v: v >= 5)
            add(f"spark job / per-row pandas UDF ({d})", ratio(job, _rate(s, "spark pandas UDF per row")),
                ">= 1.3x", lambda v: v >= 1.3)
            add(f"spark mapInArrow hand-off / spark job ({d})", ratio(_rate(s, "spark mapInArrow hand-off"), job),
                "<= 2x", lambda v: v <= 2)
        emb = _rate(s, "embedded job dedup=auto")
        add(f"embedded job --threads 2 / --threads 1 ({d})", ratio(emb, _rate(s, "embedded job one core")),
            ">= 1.7x", lambda v: v >= 1.7)
        add(f"embedded job / native DuckDB SQL ({d})", ratio(emb, _rate(s, "duckdb native SQL")), ">= 2.5x",
            lambda v: v >= 2.5)
        add(f"duckdb ceiling / embedded job ({d})", ratio(_rate(s, CEILINGS["duckdb"]), emb), "<= 2.5x",
            lambda v: v <= 2.5)
        for mode, peak in s.get("embedded_peaks", {}).items():
            add(f"embedded job peak memory, dedup={mode} ({d}), GiB", peak["job_bytes"] / 2**30, "< 1.5",
                lambda v: v < 1.5)
    cb = report.get("check_batch")
    if cb:
        add("check_batch rows/s on one core", cb["check_rows_per_s"], ">= 200,000", lambda v: v >= 200_000)
        add("check_batch / msgspec parse-only time", cb["ratio_to_parse"], "<= 1.4x", lambda v: v <= 1.4)
    return out


def print_scenario(scenario: dict) -> None:
    """Each path's rate, MB/s and share of its engine's ceiling; the jobs' ratios to each baseline."""
    runs = scenario["runs"]
    print(f"\n  {'path':30s} {'rows/s':>10s} {'MB/s':>7s} {'of ceiling':>10s}")
    for name, run in runs.items():
        if "error" in run:
            print(f"  {name:30s} {'failed':>10s}")
            continue
        ceiling = _rate(scenario, _ceiling_of(name))
        share = f"{run['rows_per_s'] / ceiling:.0%}" if ceiling else "-"
        print(f"  {name:30s} {run['rows_per_s']:>10,.0f} {run['mb_per_s']:>7,.1f} {share:>10s}")
    for job, baselines in BASELINES.items():
        rate = _rate(scenario, job)
        for baseline in baselines:
            other = _rate(scenario, baseline)
            if rate and other:
                print(f"  {job} is {rate / other:.2f}x {baseline}")
    for mode, peak in scenario.get("embedded_peaks", {}).items():
        print(
            f"  embedded job peak memory, dedup={mode}: {peak['job_bytes'] / 2**20:,.0f} MiB "
            f"(largest check worker {peak['largest_worker_bytes'] / 2**20:,.0f} MiB)"
        )
    one, every = _rate(scenario, "embedded job one core"), _rate(scenario, "embedded job dedup=auto")
    if one and every:
        print(f"  embedded job on every core is {every / one:.2f}x one core")


TARGETS_SET_FOR = (1_000_000, 2)
"""The rows and cores the targets were set for (see docs/performance)."""


def targets_heading(rows: int, cores: int | None) -> str:
    """The targets' heading; on another size or machine it says that a MISS is only a hint there."""
    if (rows, cores) == TARGETS_SET_FOR:
        return "Targets"
    set_rows, set_cores = TARGETS_SET_FOR
    return (
        f"Targets (set for {set_rows:,} rows on {set_cores} cores; {rows:,} rows on {cores} cores weigh "
        "start-up and fixed costs differently, so read a MISS here as a hint)"
    )


def print_report(report: dict) -> None:
    cb = report.get("check_batch")
    if cb:
        print(
            f"\ncheck_batch alone: {cb['check_rows_per_s']:,.0f} rows/s on one core; "
            f"{cb['ratio_to_parse']:.2f}x msgspec's parse-only time, "
            f"{cb['ratio_to_typed_decode']:.2f}x its own typed decode's"
        )
    print(f"\n{targets_heading(report['rows'], os.cpu_count())}")
    for t in report["targets"]:
        mark = {True: "met ", False: "MISS", None: "n/a "}[t["met"]]
        value = "not measured" if t["value"] is None else f"{t['value']:,.2f}"
        print(f"  [{mark}] {t['target']:48s} {value:>12s}  (goal {t['goal']})")


def chart(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({n for s in report["scenarios"] for n in s["runs"]})
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(names) * len(report["scenarios"]) + 1.5))
    labels, values = [], []
    for s in report["scenarios"]:
        for n in names:
            if "rows_per_s" in s["runs"].get(n, {}):
                labels.append(f"{n} · {s['duplicates']:.0%} dup")
                values.append(s["runs"][n]["rows_per_s"])
    ax.barh(labels, values)
    ax.invert_yaxis()
    ax.set_xlabel("rows/s (median)")
    ax.set_title(f"chatgate benchmark, {report['rows']:,} rows")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    os.environ.setdefault("CHATGATE_PROGRESS", "0")
    sys.exit(main())
