"""`chatgate.split` on a Spark DataFrame against the batch job's check pass: `python -m bench.split --rows 1000000`.

Both judge every row of the same Delta table on local[2], once the JVM is warm (its
start-up is timed apart): the job's check pass (`judge_check`, dedup "auto", which
ends with the failing rows kept and the reasons counted), and `annotate` read once to
count the rows per code, which is what a pipeline's single write of a split reads.
Each is run --repeat times after one warm-up; the medians are compared. `split` read
by two writes (passing and failing, each to Spark's noop sink) is timed too: it runs
the check twice, once per write. Results go to bench/results/split-<rows>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from .data import source_table
from .paths import CHECKS

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 1.10
"""The most `split` may take, as a multiple of the job's check pass."""


def _median(run: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    run()  # warm-up: the plan's classes, the workers' imports
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.split")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    path = source_table(args.rows, 0.3)

    from pyspark.sql import functions as F

    from chatgate import annotate, spark_session, split
    from chatgate.engines.spark import SparkEngine
    from chatgate.rules import ChatCheck, format_from

    start = time.perf_counter()
    spark = spark_session("chatgate-bench-split", master="local[2]", extra_conf={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.perf_counter() - start
    table = spark.read.format("delta").load(path)
    check = ChatCheck("messages", format_from(**CHECKS))
    engine = SparkEngine(spark=spark)

    def job_pass() -> int:
        judged = engine.judge_check(table, check, dedup="auto")
        return judged.failed

    def annotate_once() -> int:
        counts = annotate(table, "messages", **CHECKS).groupBy("pb_reason_").count().collect()
        return sum(row["count"] for row in counts if row["pb_reason_"] is not None)

    def split_twice() -> int:
        passing, failing = split(table, "messages", **CHECKS)
        passing.write.format("noop").mode("overwrite").save()
        failing.write.format("noop").mode("overwrite").save()
        return 0

    failed_job, failed_annotate = job_pass(), annotate_once()
    assert failed_job == failed_annotate, (failed_job, failed_annotate)
    job_s, job_times = _median(job_pass, args.repeat)
    gate_s, gate_times = _median(annotate_once, args.repeat)
    both_s, both_times = _median(split_twice, args.repeat)
    ratio = gate_s / job_s
    report = {
        "rows": args.rows, "failing": failed_job, "spark_startup_s": startup,
        "job_check_pass_s": job_s, "job_times": job_times,
        "split_one_read_s": gate_s, "split_times": gate_times, "ratio": ratio, "target": TARGET,
        "split_two_writes_s": both_s, "split_two_writes_times": both_times,
        "rows_per_code": {r["pb_reason_"]: r["count"] for r in annotate(table, "messages", **CHECKS)
                          .groupBy("pb_reason_").count().filter(F.col("pb_reason_").isNotNull()).collect()},
    }
    print(
        f"spark local[2], {args.rows:,} rows: job's check pass {job_s:.2f} s, split read once {gate_s:.2f} s "
        f"({ratio:.0%} of it; target at most {TARGET:.0%}), split to two writes {both_s:.2f} s"
    )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"split-{args.rows}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
