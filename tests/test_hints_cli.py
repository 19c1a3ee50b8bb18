"""The hints and warnings as a user reads them: `chatgate run` in a fresh process, on the embedded engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

CHATGATE = str(Path(sys.executable).with_name("chatgate"))
CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def _run(tmp_path: Path, table: pa.Table, *flags: str) -> list[str]:
    write_deltalake(str(tmp_path / "chats"), table)
    done = subprocess.run(
        [
            CHATGATE, "run", "--engine", "duckdb", "--source", str(tmp_path / "chats"), "--column", "messages",
            "--quarantine", str(tmp_path / "q"), "--summary", str(tmp_path / "s"), "--run-id", "r1", "--quiet", *flags,
        ],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_llamafactory_v1_rows_print_the_text_key_hint(tmp_path):
    rows = (CORPUS / "llamafactory/v1_sft_demo.jsonl").read_text(encoding="utf-8").splitlines()
    lines = _run(tmp_path, pa.table({"messages": rows}))
    assert lines[-1] == (
        "hint: step 1 (messages): 100% of rows fail (most with empty_content), "
        "but 20 of 20 failing values read back pass with --text-key value"
    )
    assert not any("--allow-empty" in line for line in lines)


def test_openai_rows_with_sharegpt_print_the_warning(tmp_path):
    rows = (CORPUS / "xtuner/openai_sft.jsonl").read_text(encoding="utf-8").splitlines()
    assert _run(tmp_path, pa.table({"messages": rows}), "--sharegpt")[-1] == (
        "warning: step 1 (messages): every row fails, and --sharegpt doesn't fit the data: "
        "20 of 20 failing values read back pass without --sharegpt"
    )


def test_an_empty_table_prints_one_warning(tmp_path):
    lines = _run(tmp_path, pa.table({"messages": pa.array([], pa.string())}))
    assert lines[-1] == "warning: no rows were read from the source table; nothing was checked"
    assert sum(line.startswith("warning:") for line in lines) == 1
