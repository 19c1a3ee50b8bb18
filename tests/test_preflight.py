"""Everything about the outputs, the source's columns and the engine's settings that needs no data is checked
before the check pass reads a row (a chat column of a type no check reads is warned of, from the schema),
and a run whose memory settings can't fit the process's limits is refused at start."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.engines.ibis.connection import check_spill_folder, missing_folders
from chatgate.errors import ConfigError, OutputError
from chatgate.job import runner
from chatgate.job.limits import ADDRESS_SPACE_BASE, ADDRESS_SPACE_PER_THREAD, check_memory_limits, size_bytes
from chatgate.job.outputs import output_columns
from chatgate.job.runner import run
from chatgate.sample import chat_table
from job_helpers import job_config, read_delta

CHATGATE = str(Path(sys.executable).with_name("chatgate"))
CHECKS = {"last_role": "assistant"}


@pytest.fixture
def source(tmp_path) -> str:
    path = str(tmp_path / "chats")
    write_deltalake(path, chat_table(60, seed=2, defect_fraction=0.3))
    return path


@pytest.fixture
def no_check_pass(monkeypatch):
    """The check pass must not start: the test fails if a step is judged."""

    def judged(*args, **kwargs):
        raise AssertionError("the check pass started before the outputs were checked")

    monkeypatch.setattr(runner, "judge_step", judged)


def test_an_output_path_that_is_a_file_is_refused_before_the_check_pass(tmp_path, engine, backend, source, no_check_pass):
    (tmp_path / "valid").write_text("not a table")
    with pytest.raises(OutputError, match="it is a file"):
        run(job_config(tmp_path, source, engine, CHECKS), backend)


def test_an_output_table_of_another_shape_is_refused_before_the_check_pass(tmp_path, engine, backend, source, no_check_pass):
    write_deltalake(str(tmp_path / "quarantine"), pa.table({"other": [1]}))
    with pytest.raises(OutputError, match="the quarantine table .* lacks"):
        run(job_config(tmp_path, source, engine, CHECKS), backend)


def test_an_output_whose_column_changed_type_is_refused_before_the_check_pass(tmp_path, engine, backend, source, monkeypatch):
    run(job_config(tmp_path, source, engine, CHECKS), backend)
    retyped = str(tmp_path / "retyped")
    table = chat_table(20, seed=3, defect_fraction=0.5)
    write_deltalake(retyped, table.set_column(table.schema.get_field_index("id"), "id", table["id"].cast(pa.string())))

    def judged(*args, **kwargs):
        raise AssertionError("the check pass started before the outputs were checked")

    monkeypatch.setattr(runner, "judge_step", judged)
    with pytest.raises(OutputError, match=r"the quarantine table .* has 'id' as int64, but this run writes it as string"):
        run(job_config(tmp_path, retyped, engine, CHECKS, run_id="run-2"), backend)


def test_a_narrower_number_is_written_where_the_store_widens_it(tmp_path, engine, backend, source):
    """deltalake casts an int into a long column; Delta's schema merge on Spark refuses to, so that
    run is refused before it reads a row rather than failing at the write."""
    run(job_config(tmp_path, source, engine, CHECKS), backend)
    narrower = str(tmp_path / "narrower")
    table = chat_table(20, seed=3, defect_fraction=0.5)
    write_deltalake(narrower, table.set_column(table.schema.get_field_index("id"), "id", table["id"].cast(pa.int32())))
    config = job_config(tmp_path, narrower, engine, CHECKS, run_id="run-2")
    if engine == "spark":
        with pytest.raises(OutputError, match=r"has 'id' as int64, but this run writes it as int32"):
            run(config, backend)
        return
    run(config, backend)
    assert set(read_delta(tmp_path / "summary")["run_id"].to_pylist()) == {"run-1", "run-2"}


def test_a_folder_this_user_cant_write_in_is_refused_before_the_check_pass(tmp_path, source, no_check_pass, monkeypatch):
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path and real_access(path, mode))
    with pytest.raises(OutputError, match="may not write in"):
        run(job_config(tmp_path, source, "duckdb", CHECKS))


def test_the_columns_checked_before_the_run_are_the_columns_it_writes(tmp_path, engine, backend, source):
    run(job_config(tmp_path, source, engine, CHECKS, fix="safe", fixed=str(tmp_path / "fixed")), backend)
    source_columns = read_delta(source).column_names
    for output in ("quarantine", "fixed", "valid"):
        assert read_delta(tmp_path / output).column_names == output_columns(output, source_columns)


# -- memory limits -------------------------------------------------------------------------------


def _limited(address_space: int, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run(
        [CHATGATE, "run", *args, "--quiet"], capture_output=True, text=True, timeout=300, cwd=cwd, preexec_fn=limit
    )


def test_a_run_under_an_address_space_limit_too_small_for_its_settings_is_refused_and_fits_once_lowered(tmp_path, source):
    flags = ["--source", "chats", "--column", "messages", "--quarantine", "q", "--summary", "s", "--threads", "2"]
    small = ADDRESS_SPACE_BASE + size_bytes("128MB") + 2 * ADDRESS_SPACE_PER_THREAD + 2**26
    refused = _limited(small, *flags, cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "(ulimit -v)" in line and "--memory-limit 1GB and --threads 2" in line
    assert "lower --memory-limit or --threads" in line
    assert not (tmp_path / "q").exists()

    fits = _limited(small, *flags, "--memory-limit", "128MB", cwd=tmp_path)
    assert fits.returncode == 0, fits.stderr
    assert read_delta(tmp_path / "q").num_rows > 0


def test_a_container_memory_limit_below_the_settings_is_refused(tmp_path):
    (tmp_path / "memory.max").write_text(f"{2**30}\n")
    with pytest.raises(ConfigError, match=r"container's memory limit is 1.0 GiB.*--memory-limit 2GB and --threads 2"):
        check_memory_limits("2GB", 2, cgroup_root=tmp_path)
    check_memory_limits("256MB", 1, cgroup_root=tmp_path)
    (tmp_path / "memory.max").write_text("max\n")
    check_memory_limits("64GB", 64, cgroup_root=tmp_path)


@pytest.mark.parametrize("text, expected", [("512MB", 512 * 10**6), ("1.5GiB", int(1.5 * 2**30)), ("2 gb", 2 * 10**9)])
def test_sizes_read_as_duckdb_reads_them(text, expected):
    assert size_bytes(text) == expected


# -- the source's columns and the engine's settings, before the check pass (issue 26, item 3) ----


@pytest.mark.parametrize(
    ("overrides", "refusal"),
    [
        ({"columns": ["nope"]}, r"column 'nope' isn't in the source"),
        ({"tools": True, "tools_column": "nope"}, r"column 'nope' isn't in the source"),
        ({"images_column": "nope"}, r"column 'nope' isn't in the source"),
        ({"dataset_type": "preference"}, r"a preference .* table needs the columns"),
    ],
)
def test_a_column_the_source_lacks_is_refused_before_the_check_pass(tmp_path, engine, backend, source, no_check_pass, overrides, refusal):
    with pytest.raises(ConfigError, match=refusal):
        run(job_config(tmp_path, source, engine, CHECKS, **overrides), backend)


@pytest.mark.parametrize(
    ("outputs", "refusal"),
    [
        ({"valid": "quarantine"}, "are one table"),
        ({"quarantine": "chats/quarantine"}, "lies inside the folder of the source"),
        ({"valid": "quarantine/valid"}, "lies inside the folder of the quarantine"),
        ({"summary": "chats"}, "is the source table itself"),
    ],
)
def test_outputs_that_clash_are_refused_before_the_check_pass(tmp_path, source, no_check_pass, outputs, refusal):
    overrides = {name: str(tmp_path / target) for name, target in outputs.items()}
    with pytest.raises(ConfigError, match=refusal):
        run(job_config(tmp_path, source, "duckdb", CHECKS, **overrides))


@pytest.mark.parametrize("spill", ["a_file", "a_file/spill", "/proc/chatgate-spill"])
def test_a_spill_folder_duckdb_couldnt_write_in_is_refused_before_the_check_pass(tmp_path, source, no_check_pass, spill):
    # DuckDB makes its spill folder when it first spills, deep in a run: it failed there.
    (tmp_path / "a_file").write_text("not a folder")
    where = spill if spill.startswith("/") else str(tmp_path / spill)
    with pytest.raises(ConfigError, match=r"temp_directory: DuckDB's spill folder .* (a file|may not write in)"):
        run(job_config(tmp_path, source, "duckdb", CHECKS, temp_directory=where))
    assert not (tmp_path / "quarantine").exists()


def test_a_spill_folder_under_a_file_names_the_file_it_would_be_made_in(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    with pytest.raises(ConfigError, match=re.escape(f"would be made in {str(tmp_path / 'a_file')!r}, which is a file")):
        check_spill_folder(str(tmp_path / "a_file" / "spill" / "here"))


def test_missing_folders_are_the_ones_yet_to_be_made_outermost_first(tmp_path, monkeypatch):
    assert missing_folders(str(tmp_path)) == []
    deep = tmp_path / "a" / "b"
    assert missing_folders(str(deep)) == [str(tmp_path / "a"), str(deep)]
    monkeypatch.chdir(tmp_path)
    assert missing_folders("c") == [str(tmp_path / "c")]


def test_a_spill_folder_yet_to_be_made_is_accepted_and_not_made(tmp_path, source):
    spill = tmp_path / "spill" / "here"
    run(job_config(tmp_path, source, "duckdb", CHECKS, temp_directory=str(spill)))
    assert not (tmp_path / "spill").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".chatgate-probe-")]


def test_a_run_refused_before_the_check_prints_no_step_line(tmp_path, source):
    (tmp_path / "a_file").write_text("not a folder")
    done = subprocess.run(
        [CHATGATE, "run", "--source", source, "--column", "messages", "--quarantine", "q", "--summary", "s",
         "--temp-dir", str(tmp_path / "a_file")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("chatgate: config error: temp_directory: DuckDB's spill folder")
    assert "step 1" not in done.stderr and not (tmp_path / "q").exists()


# -- a chat column of a type no check reads: one warning, from the schema ------------------------


MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


@pytest.fixture
def typed_source(tmp_path) -> str:
    path = str(tmp_path / "typed")
    chats = chat_table(20, seed=3, defect_fraction=0.3)
    native = [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]] * 20
    table = chats.append_column("n", pa.array(range(20), pa.int64()))
    table = table.append_column("st", pa.array([{"a": i} for i in range(20)]))
    table = table.append_column("texts", pa.array([["a", "b"]] * 20, pa.list_(pa.string())))
    table = table.append_column("native", pa.array(native, MESSAGES))
    table = table.append_column("wrapped", pa.array([{"messages": m} for m in native], pa.struct([("messages", MESSAGES)])))
    write_deltalake(path, table)
    return path


def _run_column(tmp_path: Path, source: str, column: str, *flags: str) -> subprocess.CompletedProcess:
    out = tmp_path / f"out_{column}"
    return subprocess.run(
        [CHATGATE, "run", "--source", source, "--column", column, "--quarantine", str(out / "q"),
         "--summary", str(out / "s"), *flags],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("column", "warning"),
    [
        ("n", "warning: step 1: column 'n' is int64, not JSON text or a list of messages; every row will fail"),
        ("st", "warning: step 1: column 'st' is a struct (a), not JSON text or a list of messages; every row will fail"),
        ("texts", "warning: step 1: column 'texts' is a list of string, not JSON text or a list of messages; every row will fail"),
    ],
)
def test_a_chat_column_no_check_reads_is_warned_of_in_one_line_before_the_check(tmp_path, typed_source, column, warning):
    done = _run_column(tmp_path, typed_source, column)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"chatgate: {warning}"
    assert lines[1] == f"chatgate: step 1: checking {column}"
    assert "1.0000" in done.stdout  # and every row did fail


@pytest.mark.parametrize("column", ["messages", "native", "wrapped"])
def test_text_and_native_messages_get_no_warning(tmp_path, typed_source, column):
    done = _run_column(tmp_path, typed_source, column)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr


def test_the_warning_says_nulls_pass_with_na_pass(tmp_path, typed_source):
    done = _run_column(tmp_path, typed_source, "n", "--na-pass", "--quiet")
    assert done.stderr.splitlines() == [
        "chatgate: warning: step 1: column 'n' is int64, not JSON text or a list of messages; every row but the nulls will fail"
    ]


def test_the_type_warning_comes_from_either_engine(tmp_path, engine, backend, typed_source, caplog):
    caplog.set_level("WARNING", logger="chatgate.job")
    run(job_config(tmp_path, typed_source, engine, CHECKS, columns=["native", "n"]), backend)
    warned = [r.getMessage() for r in caplog.records if "not JSON text" in r.getMessage()]
    assert warned == ["warning: step 2: column 'n' is int64, not JSON text or a list of messages; every row will fail"]
