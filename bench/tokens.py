"""Token limits and statistics, timed: `python -m bench.tokens --rows 1000000`.

On the benchmark's table (30% duplicates), each engine's job runs three ways, one after
the other in one process: without token options, with `max_tokens=` (few conversations near
the limit: the byte bound spares almost every row), and with `token_stats=True` on fewer rows
(every conversation is encoded: its rate is the tokenizer's). The tokenizer is a byte-level BPE
`tokenizer.json` of `VOCAB` tokens trained here on the table's own words (no network: a real
model's file is as fast to within its vocabulary's size). Results go to
bench/results/tokens-<rows>.json; copied to docs/performance/tokens.json, `make docs` writes its
table into the performance page.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from chatgate.sample import chat_table

from . import paths
from .data import DATA_DIR, MEAN_WORDS, source_table

RESULTS = Path(__file__).resolve().parent / "results"
VOCAB = 16_000
MAX_TOKENS = 8_192
"""The limit of the max_tokens runs: the table's largest conversation holds about 6,000 bytes."""
STATS_ROWS = 100_000
TARGET = 1.3
"""The most a job with max_tokens= may take, as a multiple of the same job without it."""


def bench_tokenizer() -> str:
    """A byte-level BPE tokenizer.json trained once on the benchmark's text, cached beside its tables."""
    path = DATA_DIR / f"bench-bpe-{VOCAB}.tokenizer.json"
    if path.is_file():
        return str(path)
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    texts = chat_table(20_000, seed=7, duplicate_fraction=0.0, defect_fraction=0.0, mean_words=MEAN_WORDS)
    tok.train_from_iterator(texts.column("messages").to_pylist(), trainer)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return str(path)


def _timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def run_engine(name: str, rows: int, tokenizer: str, scratch: Path, backend=None) -> dict:
    source, small = source_table(rows, 0.3), source_table(min(rows, STATS_ROWS), 0.3)
    limit = {"max_tokens": MAX_TOKENS, "tokenizer": tokenizer}
    paths.job(name, source_table(20_000, 0.3), scratch, backend=backend, checks=limit)  # warm-up
    plain = _timed(lambda: paths.job(name, source, scratch, backend=backend))
    limited = _timed(lambda: paths.job(name, source, scratch, backend=backend, checks=limit))
    done: list = []
    stats_s = _timed(lambda: paths.job(name, small, scratch, backend=backend, result=done,
                                       checks={"token_stats": True, "tokenizer": tokenizer}))
    stats = done[0].steps[0].judged.extra["token_stats"]
    cores = os.cpu_count() or 1
    out = {
        "rows": rows,
        "job_s": plain,
        "job_max_tokens_s": limited,
        "max_tokens_ratio": limited / plain,
        "token_stats_rows": min(rows, STATS_ROWS),
        "token_stats_s": stats_s,
        "token_stats_rows_per_s_per_core": stats.conversations / stats_s / cores,
        "token_stats_tokens_per_s_per_core": stats.total / stats_s / cores,
        "tokens": stats.total,
    }
    mark = "met " if out["max_tokens_ratio"] <= TARGET else "MISS"
    print(f"  {name}: job {rows / plain:,.0f} rows/s; with max_tokens={MAX_TOKENS:,} {rows / limited:,.0f} rows/s "
          f"[{mark}] {out['max_tokens_ratio']:.2f}x (goal <= {TARGET}x)")
    print(f"  {name}: token_stats on {out['token_stats_rows']:,} rows: "
          f"{out['token_stats_rows_per_s_per_core']:,.0f} rows/s and "
          f"{out['token_stats_tokens_per_s_per_core']:,.0f} tokens/s per core ({cores} cores)")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tokens")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args(argv)
    tokenizer = bench_tokenizer()
    scratch = Path(tempfile.mkdtemp(prefix="chatgate-bench-tokens-"))
    report = {"rows": args.rows, "max_tokens": MAX_TOKENS, "vocab": VOCAB, "date": time.strftime("%Y-%m-%d"),
              "machine": f"{os.cpu_count()} cores", "engines": {}}
    print(f"== {args.rows:,} rows, 30% duplicates, max_tokens={MAX_TOKENS:,}, a {VOCAB:,}-token BPE")
    report["engines"]["duckdb"] = run_engine("duckdb", args.rows, tokenizer, scratch)
    if not args.no_spark:
        from chatgate import spark_session
        from chatgate.engines.spark import SparkEngine

        spark = spark_session("chatgate-bench-tokens", master="local[2]",
                              extra_conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                          "spark.sql.shuffle.partitions": "8"})
        spark.sparkContext.setLogLevel("ERROR")
        report["engines"]["spark"] = run_engine("spark", args.rows, tokenizer, scratch, SparkEngine(spark=spark))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"tokens-{args.rows}.json"
    out.write_text(json.dumps(report, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
