"""Incremental runs against full runs: `python -m bench.incremental --rows 1000000`.

A table of --rows rows is checked in full (`--since last`, no earlier run), then
--fraction of its rows are appended and `--since last` checks them alone; the two
are timed side by side on each engine, in one process (process and Spark start-up
are timed apart, not counted). Then --appends appends of that size, each checked
after it lands, against one full run of the grown table. Results go to
bench/results/incremental-<rows>.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from chatgate.job.config import build_config
from chatgate.job.runner import run
from chatgate.sample import chat_table

from .data import MEAN_WORDS, source_table
from .paths import CHECKS

RESULTS = Path(__file__).resolve().parent / "results"

TARGETS = {"duckdb": 0.10, "spark": 0.20}
"""The most an incremental run of 1% appended rows may take, as a share of the full run's time."""


def _append(source: str, rows: int, seed: int) -> None:
    chunk = chat_table(rows, seed=seed, duplicate_fraction=0.3, defect_fraction=0.05, mean_words=MEAN_WORDS)
    write_deltalake(source, chunk.set_column(0, "id", pa.array(range(rows), pa.int64())), mode="append")


def _run(engine_name: str, engine, source: str, out: Path, run_id: str, since: str | None) -> tuple[float, int]:
    raw = {
        "source": source, "engine": engine_name, "columns": ["messages"], "checks": CHECKS, "run_id": run_id,
        "outputs": {"quarantine": str(out / "q"), "summary": str(out / "s")},
    }
    config = build_config({**raw, **({"since": since} if since else {})}, {})
    start = time.perf_counter()
    result = run(config, engine)
    return time.perf_counter() - start, result.steps[0].judged.units


def measure(engine_name: str, engine, base: str, rows: int, fraction: float, appends: int, scratch: Path) -> dict:
    source = str(scratch / f"source-{engine_name}")
    shutil.copytree(base, source)
    out = scratch / f"out-{engine_name}"
    step = max(1, int(rows * fraction))
    full_s, full_rows = _run(engine_name, engine, source, out, "full-0", "last")
    _append(source, step, seed=101)
    inc_s, inc_rows = _run(engine_name, engine, source, out, "inc-1", "last")
    assert (full_rows, inc_rows) == (rows, step), (full_rows, inc_rows)
    each = []
    for n in range(appends):
        _append(source, step, seed=200 + n)
        seconds, read = _run(engine_name, engine, source, out, f"inc-{n + 2}", "last")
        assert read == step, read
        each.append(seconds)
    grown_s, grown_rows = _run(engine_name, engine, source, scratch / f"out-full-{engine_name}", "full-end", None)
    result = {
        "full_s": full_s, "incremental_s": inc_s, "ratio": inc_s / full_s, "target": TARGETS[engine_name],
        "appends": appends, "appended_rows_each": step, "appends_total_s": sum(each),
        "grown_rows": grown_rows, "grown_full_s": grown_s,
    }
    print(
        f"{engine_name}: full {full_s:.2f} s ({rows:,} rows), --since last {inc_s:.2f} s ({step:,} rows): "
        f"{inc_s / full_s:.1%} of the full run (target {TARGETS[engine_name]:.0%}); "
        f"{appends} appends checked one by one {sum(each):.2f} s, one full run of {grown_rows:,} rows {grown_s:.2f} s"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.incremental")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args(argv)
    base = source_table(args.rows, 0.3)
    scratch = Path(tempfile.mkdtemp(prefix="chatgate-bench-inc-"))
    report: dict = {"rows": args.rows, "fraction": args.fraction, "engines": {}}
    from chatgate.engines.ibis.duckdb import DuckDBEngine

    report["engines"]["duckdb"] = measure("duckdb", DuckDBEngine(), base, args.rows, args.fraction, args.appends, scratch)
    if not args.no_spark:
        from chatgate import spark_session
        from chatgate.engines.spark import SparkEngine

        start = time.perf_counter()
        spark = spark_session("chatgate-bench", master="local[2]", extra_conf={"spark.ui.enabled": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        report["spark_startup_s"] = time.perf_counter() - start
        engine = SparkEngine(spark=spark)
        report["engines"]["spark"] = measure("spark", engine, base, args.rows, args.fraction, args.appends, scratch)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"incremental-{args.rows}.json"
    out.write_text(json.dumps(report, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
