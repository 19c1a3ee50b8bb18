"""`make run`: build a small sample lakehouse, run the job on the embedded default, query the outputs.

    python -m chatgate.demo [--rows 5000] [--dir sample_lakehouse]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from .job.config import load_config
from .job.runner import run
from .job.summary import format_summary
from .sample import chat_table

CONFIG = Path(__file__).resolve().parents[2] / "conf" / "example.yaml"
QUERY = """
SELECT pb_reason_ AS reason, count(*) AS rows, min(id) AS first_id
FROM quarantine
WHERE pb_run_id_ = ?
GROUP BY pb_reason_
ORDER BY rows DESC, reason
"""


def build_lakehouse(directory: Path, rows: int) -> Path:
    """A Delta table of `rows` conversations with every kind of defect, under `directory`."""
    from deltalake import write_deltalake

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    chats = directory / "chats"
    write_deltalake(str(chats), chat_table(rows, seed=7, duplicate_fraction=0.3, defect_fraction=0.08))
    return chats


def query_quarantine(path: str, run_id: str) -> Any:
    """The quarantine table by reason, with DuckDB SQL over the Delta table.

    Through `read_delta`, not `DeltaTable(path).to_pyarrow_dataset()`: that dataset
    reads through deltalake's Python filesystem, and Arrow's threads dropping it while
    the interpreter exits abort the process ("terminate called without an active
    exception"). The connection is closed before returning.
    """
    import duckdb

    from .lake import read_delta

    con = duckdb.connect()
    try:
        con.register("quarantine", read_delta(path))
        return con.execute(QUERY, [run_id]).to_arrow_table()
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chatgate.demo")
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--dir", default="sample_lakehouse")
    args = parser.parse_args(argv)
    directory = Path(args.dir)
    chats = build_lakehouse(directory, args.rows)
    print(f"Built a sample Delta table of {args.rows:,} conversations at {chats}\n")
    config = load_config(
        CONFIG,
        {
            "source": str(chats),
            "quarantine": str(directory / "chat_quarantine"),
            "summary": str(directory / "chat_summary"),
            "valid": str(directory / "chats_valid"),
            "run_id": "demo",
        },
    )
    result = run(config)
    print(format_summary(result))
    print("\nSQL over the quarantine table (DuckDB):" + QUERY.replace("?", f"'{config.run_id}'"))
    print(query_quarantine(config.outputs.quarantine, config.run_id).to_pandas().to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
