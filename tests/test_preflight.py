"""Everything about the outputs that needs no data is checked before the check pass reads a row,
and a run whose memory settings can't fit the process's limits is refused at start."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

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
