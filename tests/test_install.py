"""chatgate installs from its own distribution and runs outside the repository.

What `make dist` builds, built the same way (`python -m build`: the sdist, then the wheel
from the sdist, so the sdist holds what a build needs), and installed as the install page
says, with the `duckdb` extra, into a fresh virtual environment in a temporary directory.
There, with nothing of the repository on the path, `chatgate run` checks a JSONL file and
`chatgate report` makes the run's page. The packages come from PyPI through pip's cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "chats.jsonl"
TIMEOUT = 900  # seconds: pip's cache may be cold


def _env() -> dict[str, str]:
    """A shell's environment with nothing activated and nothing of the repository importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST_", "PIP_NO_CACHE"))}
    bins = {os.path.realpath(Path(sys.prefix) / "bin"), os.path.realpath(ROOT / ".venv" / "bin")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if os.path.realpath(p) not in bins)
    return env


def _run(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT
    )


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built once per session into a temporary folder."""
    out = tmp_path_factory.mktemp("dist")
    done = _run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the repository, with the wheel and its duckdb extra."""
    venv = tmp_path_factory.mktemp("env") / "venv"
    done = _run(sys.executable, "-m", "venv", venv, cwd=venv.parent)
    assert done.returncode == 0, done.stderr
    [wheel] = dist.glob("chatgate-*.whl")
    done = _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile", f"{wheel}[duckdb]", cwd=venv.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return venv


def test_the_wheel_holds_the_package_typed_and_no_tests(dist):
    [wheel] = dist.glob("chatgate-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "chatgate/py.typed" in names and "chatgate/__init__.py" in names
    assert "chatgate/rules/__init__.py" in names and "chatgate/job/runner.py" in names
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n or "conftest" in n]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: duckdb" in text and "Provides-Extra: spark" in text
    assert "Find malformed chat conversations" in text  # the README, as the long description
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "chatgate = chatgate.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_sdist_holds_what_a_build_needs(dist):
    [sdist] = dist.glob("chatgate-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "lib/chatgate/__init__.py", "lib/chatgate/py.typed"} <= names
    assert "lib/chatgate/_version.py" in names  # the version is read from it at build time


def test_the_installed_command_checks_a_jsonl_file_and_reports_outside_the_repo(installed, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "chats.jsonl").write_bytes(EXAMPLE.read_bytes())
    python, chatgate = installed / "bin" / "python", installed / "bin" / "chatgate"

    where = _run(python, "-c", "import chatgate; print(chatgate.__file__)", cwd=work)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed), "chatgate imported from outside the venv"

    done = _run(chatgate, "run", "--source", "chats.jsonl", "--column", "messages",
                "--quarantine", "q", "--summary", "s", cwd=work)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    read = (
        # chatgate's read_delta: deltalake's own to_pyarrow_table can abort the process at its exit.
        "import json, sys; from chatgate import read_delta; "
        "q = read_delta(sys.argv[1]).to_table().sort_by('id').to_pylist(); "
        "s = read_delta(sys.argv[2]).to_table().to_pylist(); "
        "print(json.dumps({'q': [[str(r['id']), r['pb_reason_'], r.get('pb_line_')] for r in q], "
        "'s': [[r['units'], r['failed']] for r in s]}))"
    )
    tables = _run(python, "-c", read, "q", "s", cwd=work)
    assert tables.returncode == 0, tables.stderr
    found = json.loads(tables.stdout)
    # examples/chats.jsonl: 7 conversations, the one of id n on line n; without --last-role, 3 fail.
    assert found["q"] == [["3", "not_alternating", 3], ["5", "empty_content", 5], ["6", "unknown_role", 6]]
    assert found["s"] == [[7, 3]]

    done = _run(chatgate, "report", "--summary", "s", "--quarantine", "q", "--out", "report.html", cwd=work)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    page = (work / "report.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html") or "<html" in page[:2000].lower()
    assert "not_alternating" in page and "unknown_role" in page
