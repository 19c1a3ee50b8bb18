"""The README and the docs run as written: every sh, SQL and Python block, from the repo root, in order.

Each page is README.md or a page of docs/ (the documentation site `make docs` builds). Each
code block runs as a reader would run it, top to bottom after `make setup`, from the repo
root and with nothing activated, each page on its own (a page doesn't lean on another's
outputs: one that needs `make run`'s sample lakehouse runs `make run` first):

- ```sh blocks with bash (`set -euo pipefail`: every command must succeed) in a clean
  environment: no virtual environment on PATH, no Spark or PySpark variables, no outer
  make's flags;
- ```python and ```py blocks in one Python namespace, in order, as one interpreter
  session would (a block may use what an earlier one made);
- ```sql blocks on the engine their first line names (`-- DuckDB SQL`, `-- Spark SQL`,
  `-- DuckDB or Spark SQL`: then on both): DuckDB on the connection `con` the README's
  Python opened, Spark in the shared test session, where the page's Python registered
  the views. A query must return rows.

"The repo root" is a temporary directory per page that mirrors it: a symlink to each entry of the
repository that git doesn't ignore, plus `.venv` and `.cache` (what `make setup` and `make
jars` build). What the blocks write (`sample_lakehouse/`, `lake/`, ...) lands there, never
in the repository.

Before a block, the blocks above it on its page run (each once per module), but a block that
doesn't need Spark never waits for one that does. A block that can't run here (it needs a
server or a cluster, or would run this test) says so right above it on its page, as
`<!-- not run: why -->`: its test is skipped with that reason, and no other block is.
Plain blocks (```, ```text) are output or diagrams; one that follows a line saying
"prints" is what the block before it prints, and is compared with it.

The tests below also pin what other pages of the project rely on: the README's two set-up
commands and quick start, the tests the promises name, the exit statuses of `chatgate run`,
and the performance page's table (generated from its results file).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
"""Every page whose blocks run: the README, then the docs' pages."""

RUNNERS = {"sh": "sh", "sql": "sql", "python": "python", "py": "python"}
"""Each language a block may be written in that the test runs, and how it runs it."""

PLAIN = ("", "text")
"""Blocks that aren't code: a program's output, a diagram."""

SQL_ENGINES = {
    "-- DuckDB or Spark SQL": ("duckdb", "spark"),
    "-- DuckDB SQL": ("duckdb",),
    "-- Spark SQL": ("spark",),
}
"""A SQL block's first line, and the engines it runs on."""

BUILT = (".venv", ".cache")
"""Ignored by git, made by `make setup` and `make jars`: the mirror of the repo root has them."""

FENCE = re.compile(r"^```([^`\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:(.*?)-->")
NEEDS_SPARK = re.compile(
    r"--engine spark|spark-submit|SPARK_REMOTE|pyspark|get_spark|SparkEngine|SparkSession"
)
SPARK_START = re.compile(r"^[^#\n]*(--engine spark|spark-submit)", re.M)
"""A command line that starts a JVM of its own (a comment mentioning one doesn't)."""
COMMAND_LINE = re.compile(
    r"^(\$ |make |\.venv/|python3? |import \w|from [\w.]+ import |SELECT |spark-submit )", re.M
)
DURATION = re.compile(r"^(chatgate run .* · )\d+(\.\d+)? s$", re.M)
SH_TIMEOUT = 1800  # seconds: the Spark job blocks start a JVM each, on a busy machine


@dataclass(frozen=True)
class Block:
    page: str  # its path from the repo root
    number: int  # among the page's fenced blocks, from 1
    line: int  # of the opening fence
    language: str  # as written after the fence
    code: str
    before: str  # the last non-blank line above the fence
    after: str  # the text between this block and the next one

    @property
    def kind(self) -> str | None:
        return RUNNERS.get(self.language)

    @property
    def not_run(self) -> str | None:
        """The reason given in a `<!-- not run: ... -->` line right above the block (maybe blank)."""
        match = NOT_RUN.fullmatch(self.before.strip())
        return match.group(1).strip() if match else None

    @property
    def engines(self) -> tuple[str, ...]:
        """What the block runs on: the engines of a SQL block, else its kind."""
        if self.kind == "sql":
            first = self.code.split("\n", 1)[0].strip()
            return SQL_ENGINES.get(first, ())
        return (self.kind,) if self.kind else ()

    def needs_spark(self, engine: str) -> bool:
        return engine == "spark" if self.kind == "sql" else bool(NEEDS_SPARK.search(self.code))

    @property
    def slow(self) -> bool:
        """Starts Spark more than once (a minute's JVMs): `make test` runs the blocks starting it once."""
        return len(SPARK_START.findall(self.code)) > 1

    def shown(self) -> str | None:
        """The output shown for this block: a plain block right after it, below a line saying "prints"."""
        between = self.after.strip()
        blocks = BLOCKS[self.page]
        following = blocks[self.number] if self.number < len(blocks) else None
        if (
            following
            and following.language in PLAIN
            and "\n" not in between
            and re.search(r"\bprints\b", between)
        ):
            return following.code
        return None

    def __str__(self) -> str:
        return f"{self.page} line {self.line} (```{self.language})"


def parse(text: str, page: str = "README.md") -> list[Block]:
    matches = list(FENCE.finditer(text))
    blocks = []
    for n, match in enumerate(matches):
        above = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
        end = matches[n + 1].start() if n + 1 < len(matches) else len(text)
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(
            Block(page, n + 1, line, match.group(1).strip(), match.group(2), above, text[match.end() : end])
        )
    return blocks


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


BLOCKS = {_name(page): parse(page.read_text(), _name(page)) for page in PAGES}
"""Each page's fenced blocks, in order."""
ALL_BLOCKS = [block for blocks in BLOCKS.values() for block in blocks]
RUNS = {
    page: [(block, engine) for block in blocks for engine in block.engines] for page, blocks in BLOCKS.items()
}
"""Every run of a block, page by page in page order: a block on each of its engines."""


def _param(block: Block, engine: str) -> object:
    name = f"{block.page}:line{block.line}-{block.language}" + (f"-{engine}" if block.kind == "sql" else "")
    marks = [pytest.mark.spark] if block.needs_spark(engine) else []
    marks += [pytest.mark.slow] if block.slow else []
    return pytest.param(block, engine, id=name, marks=marks)


# -- the mirror of the repo root, and a reader going through a page ---------------------


def _ignored(names: list[str]) -> set[str]:
    """The entries of the repo root git ignores (outputs of earlier runs, caches, the venv)."""
    done = subprocess.run(
        ["git", "check-ignore", "--stdin"], cwd=ROOT, input="\n".join(names), capture_output=True, text=True
    )
    assert done.returncode in (0, 1), f"git check-ignore failed: {done.stderr}"  # 1: nothing ignored
    return {line.rstrip("/") for line in done.stdout.splitlines()}


def clean_env() -> dict[str, str]:
    """The environment of a fresh shell: nothing activated, no Spark settings, no outer make's flags."""
    venv_bins = {os.path.realpath(Path(sys.prefix) / "bin"), os.path.realpath(ROOT / ".venv" / "bin")}
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYSPARK", "_PYSPARK", "SPARK_", "MAKE", "MFLAGS", "PYTEST_"))
        and key not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "CHATGATE_JARS_DIR")
    }
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) not in venv_bins]
    env["PATH"] = os.pathsep.join(path)
    return env


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class Reader:
    """One reader going through one page in its mirror of the repo root, each run of a block once."""

    def __init__(self, root: Path, page: str, session: dict[str, object]) -> None:
        self.root = root
        self.page = page
        self.namespace: dict[str, object] = {"__name__": "__docs__"}
        self.outcomes: dict[tuple[int, str], tuple[bool, str]] = {}
        self.spark: object = None
        self.session = session  # shared by the pages: Spark's session, and its views before theirs

    def run(self, block: Block, engine: str, request: pytest.FixtureRequest) -> str:
        """Run the blocks above `block` (those it may need), then `block`; what it printed."""
        spark = block.needs_spark(engine)
        for earlier, earlier_engine in RUNS[self.page]:
            if (earlier, earlier_engine) == (block, engine):
                break
            if earlier.not_run is not None or (earlier.needs_spark(earlier_engine) and not spark):
                continue
            ok, text = self._once(earlier, earlier_engine, request)
            if not ok:
                pytest.fail(f"{earlier}, above this block, failed:\n{text}")
        ok, text = self._once(block, engine, request)
        if not ok:
            pytest.fail(f"{block} failed:\n{text}")
        return text

    def _once(self, block: Block, engine: str, request: pytest.FixtureRequest) -> tuple[bool, str]:
        key = (block.number, engine)
        if key not in self.outcomes:
            if block.needs_spark(engine) and self.spark is None:
                self.spark = request.getfixturevalue("spark")
                if "views_before" not in self.session:
                    self.session["spark"] = self.spark
                    self.session["views_before"] = _views(self.spark)
            try:
                self.outcomes[key] = (True, self._execute(block, engine))
            except Exception as exc:  # noqa: BLE001 - reported by the test of this block and of those after it
                self.outcomes[key] = (False, f"{type(exc).__name__}: {exc}")
        return self.outcomes[key]

    def _execute(self, block: Block, engine: str) -> str:
        if block.kind == "sh":
            return self._sh(block)
        if block.kind == "python":
            out = io.StringIO()
            with _cwd(self.root), contextlib.redirect_stdout(out):
                exec(compile(block.code, str(block), "exec"), self.namespace)
            return out.getvalue()
        return self._sql(block, engine)

    def _sh(self, block: Block) -> str:
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + block.code],
            cwd=self.root,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=SH_TIMEOUT,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"exit status {done.returncode}\n--- stdout (end)\n{done.stdout[-3000:]}\n"
                f"--- stderr (end)\n{done.stderr[-3000:]}"
            )
        return done.stdout

    def _sql(self, block: Block, engine: str) -> str:
        if engine == "duckdb":
            import duckdb

            con = self.namespace.get("con")
            assert isinstance(con, duckdb.DuckDBPyConnection), (
                "no DuckDB connection `con` from the page's Python"
            )
            with _cwd(self.root):
                rows = (
                    con.sql(block.code).to_arrow_table().num_rows
                )  # shown by DuckDB, as `con.sql(query)` is
        else:
            rows = len(self.spark.sql(block.code).collect())  # type: ignore[attr-defined]
        assert rows, "the query returned no rows: does it read the outputs the page's blocks made?"
        return ""

    def close(self) -> None:
        import duckdb

        for value in self.namespace.values():
            if isinstance(value, duckdb.DuckDBPyConnection):
                value.close()


def _views(spark: object) -> set[str]:
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def reader_of(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Reader]]:
    """A page's reader, made when its first block runs, in a mirror of the repo root of its own."""
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in ROOT.iterdir() if p.name != ".git")
    ignored = _ignored(entries)
    session: dict[str, object] = {}
    found: dict[str, Reader] = {}

    def reader(page: str) -> Reader:
        if page not in found:
            root = tmp_path_factory.mktemp(re.sub(r"\W+", "-", page))
            for entry in ROOT.iterdir():
                if entry.name != ".git" and (entry.name not in ignored or entry.name in BUILT):
                    (root / entry.name).symlink_to(entry)
            found[page] = Reader(root, page, session)
        return found[page]

    yield reader
    for reading in found.values():
        reading.close()
    if "spark" in session:
        spark = session["spark"]
        for view in _views(spark) - session["views_before"]:  # type: ignore[operator]
            spark.catalog.dropTempView(view)  # type: ignore[attr-defined]


def normalized(output: str) -> str:
    """Output as compared: trailing blanks dropped, a run's duration (the one figure a run can't repeat) as a pattern."""
    text = "\n".join(line.rstrip() for line in output.strip().splitlines())
    return DURATION.sub(r"\1(seconds) s", text)


# -- the blocks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "engine"), [_param(block, engine) for runs in RUNS.values() for block, engine in runs]
)
def test_block_runs_as_written(reader_of, request, block, engine):
    if block.not_run is not None:
        pytest.skip(f"{block}: not run: {block.not_run}")
    printed = reader_of(block.page).run(block, engine, request)
    shown = block.shown()
    if shown is not None:
        assert normalized(printed) == normalized(shown), f"{block} doesn't print what the page shows"


def test_make_test_runs_a_block_starting_spark_and_leaves_out_few():
    starting = [b for b in ALL_BLOCKS if b.kind == "sh" and b.not_run is None and SPARK_START.search(b.code)]
    assert [b for b in starting if not b.slow], "no block starting Spark runs in make test"
    assert len([b for b in starting if b.slow]) <= 2, "most blocks starting Spark run in make test"
    comment = parse("```sh\nchatgate run --engine spark   # or make spark-submit\n```\n")[0]
    assert not comment.slow


def test_every_block_is_run_or_says_why_not():
    assert sum(len(runs) for runs in RUNS.values()) >= 40
    for block in ALL_BLOCKS:
        assert block.kind or block.language in PLAIN, (
            f"{block}: the test doesn't know how to run ```{block.language} (sh, sql, python or py; "
            "plain or text for output)"
        )
        if block.not_run is not None:
            assert block.kind, f"{block}: a `not run` comment above a block that isn't code"
            assert len(block.not_run) >= 10, f"{block}: say why it isn't run"
        if block.kind == "sql":
            assert block.engines, (
                f"{block}: a SQL block's first line names its engine: one of {list(SQL_ENGINES)}"
            )
    for page in PAGES:
        blocks = BLOCKS[_name(page)]
        assert page.read_text().count("<!-- not run") == sum(b.not_run is not None for b in blocks), (
            f"{_name(page)}: a `not run` comment that isn't right above a block"
        )
    not_run = [b for b in ALL_BLOCKS if b.not_run is not None]
    assert len(not_run) <= len([b for b in ALL_BLOCKS if b.kind]) // 4, "most blocks must run"


def test_plain_blocks_hold_output_not_commands():
    for block in ALL_BLOCKS:
        if block.language in PLAIN:
            command = COMMAND_LINE.search(block.code)
            assert command is None, (
                f"{block} holds a command ({command.group(0)!r}...): tag it sh, sql or python"
            )


def test_the_pages_show_what_their_examples_print():
    showing = [block for block in ALL_BLOCKS if block.kind and block.shown() is not None]
    # The quick start's command and its look at the outputs, and the API's first example at least.
    assert len(showing) >= 3 and "sh" in [b.kind for b in showing]
    for block in showing:
        assert block.not_run is None, f"{block} shows an output no test compares"


def test_readme_is_short_and_gives_the_two_commands_and_a_quick_start_from_jsonl():
    text = README.read_text()
    assert len(text.splitlines()) <= 220, "the README stays short: the rest belongs in docs/"
    assert "make run" in text and "make test" in text
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "examples/chats.jsonl" in quick_start and (ROOT / "examples" / "chats.jsonl").is_file()
    assert ".venv/bin/chatgate run --source examples/chats.jsonl --column messages" in quick_start
    assert ".venv/bin/chatgate report --summary s --quarantine q" in quick_start


def test_readme_keeps_the_sql_other_tests_read():
    """tests/test_run_protocol.py runs the README's complete-runs query; tests/test_spark_submit.py its Spark SQL."""
    text = README.read_text()
    blocks = re.findall(r"```sql\n(.*?)```", text, flags=re.S)
    assert sum("IN (SELECT run_id FROM summary)" in block for block in blocks) == 1
    spark = re.findall(r"```sql\n-- (?:DuckDB or )?Spark SQL\n(.*?)```", text, flags=re.S)
    assert len(spark) >= 3 and any("'demo'" in query and "pb_reason_" in query for query in spark)


def test_every_link_between_pages_leads_to_a_page():
    """The README's links into docs/, and the docs' links to each other, name files that exist."""
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+:", target):
                assert (page.parent / target).exists(), f"{_name(page)} links to {target}, which isn't there"


def test_every_page_of_the_docs_is_in_the_sites_navigation():
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M))
    assert listed == {page.relative_to(DOCS).as_posix() for page in DOCS.rglob("*.md")}


def test_every_method_the_api_page_lists_is_in_the_reference():
    """The Python API page says each method it lists after `interrogate()` is in the reference."""
    listed = (DOCS / "api.md").read_text().split("After `interrogate()`:", 1)[1].split("Each is in the", 1)[0]
    names = {n for n in re.findall(r"`(\w+)(?:\(|`)", listed) if not n.endswith("_")}  # not the columns
    validate = (DOCS / "reference.md").read_text().split("::: chatgate.Validate", 1)[1].split(":::", 1)[0]
    members = set(re.findall(r"^\s+- (\w+)$", validate, flags=re.M))
    assert len(names) >= 15
    assert names - members == set(), "listed on docs/api.md but not in docs/reference.md's members"


def test_every_test_the_promises_name_exists():
    section = (DOCS / "promises.md").read_text().split("# What we promise", 1)[1]
    named = 0
    for row in section.splitlines():
        current = None
        for path, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", row):
            current = path or current
            assert current, f"a test named before its file in: {row}"
            text = (ROOT / current).read_text()
            if name:
                assert re.search(rf"^def {name}\(", text, flags=re.M), f"{current}::{name} isn't there"
            named += 1
    assert named >= 10


# -- the command line's own documentation ----------------------------------------------


def _commands() -> dict[str, argparse.ArgumentParser]:
    from chatgate.cli import build_parser

    parser = build_parser()
    found = {"chatgate": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update({f"chatgate {name}": sub for name, sub in action.choices.items()})
    return found


def test_every_flag_of_every_command_has_help():
    commands = _commands()
    assert {"chatgate run", "chatgate report"} <= set(commands)
    missing = []
    for name, parser in commands.items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{name} {a.dest}" for a in action._choices_actions if not (a.help or "").strip()]
            elif not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"no help text: {missing}"


def _examples(epilog: str) -> list[list[str]]:
    """The commands under the `example:` or `examples:` heading of a help's epilog."""
    section = re.search(r"^examples?:\n(.*?)(?:\n\n|\Z)", epilog, flags=re.S | re.M)
    assert section, "no example"
    return [shlex.split(command) for command in section.group(1).replace("\\\n", " ").splitlines()]


@pytest.mark.parametrize("command", ["run", "report", "clean"])
def test_each_commands_help_gives_examples_that_parse_and_its_exit_statuses(command):
    parser = _commands()[f"chatgate {command}"]
    epilog = parser.epilog or ""
    examples = _examples(epilog)
    assert examples
    for example in examples:
        assert example[:2] == ["chatgate", command]
        parser.parse_args(example[2:])  # a flag that doesn't exist exits here
    statuses = re.search(r"^exit status:\n(.*)", epilog, flags=re.S | re.M)
    assert statuses, "no exit statuses"
    listed = re.findall(r"^  (\d)  \S", statuses.group(1), flags=re.M)
    assert listed[0] == "0" and len(listed) >= 2
    if command == "run":  # the docs' table of the job's exit statuses, status for status
        table = (DOCS / "job" / "index.md").read_text().split("## Exit status", 1)[1].split("\n\n", 3)[2]
        assert listed == re.findall(r"^\| (\d) \|", table, flags=re.M)


# -- the performance page ----------------------------------------------------------------


def test_the_performance_page_holds_the_table_its_results_file_gives():
    import json

    from bench.perf_table import DEFAULT_RESULTS, section

    page = (DOCS / "performance" / "index.md").read_text()
    results = json.loads(DEFAULT_RESULTS.read_text())
    assert section(results) in page, "run `make docs` (python -m bench.perf_table --write docs/performance/index.md)"
    assert page.count("| Spark job, `--dedup auto` (the default) |") == 1, "one table of the jobs' times"


def test_a_results_file_the_benchmark_writes_is_a_table_as_it_is():
    """`cp bench/results/results-1000000.json docs/performance/results.json` then `make docs`: each
    cell dated, the run's commit, command and machine said, with nothing added by hand."""
    from bench.perf_table import readme_section, section
    from bench.run import about_the_run

    about = about_the_run(["--rows", "1000", "--skip", "native SQL"], 1000, [0.0, 0.3], 3, spark=False)
    runs = {"embedded job dedup=auto": {"seconds": 2.0}, "duckdb native SQL": {"seconds": 5.0}}
    results = {"rows": 1000, **about, "scenarios": [{"duplicates": d, "runs": runs} for d in (0.0, 0.3)]}
    text = section(results)
    date = about["date"]
    assert "| embedded job (DuckDB), `--dedup auto` | 2.0 s | 2.0 s |\n" in text  # one run: its date below
    assert f"- {date}: commit " in text and "`python -m bench.run --rows 1000 --skip 'native SQL'`" in text
    assert "medians of 3 runs of 1,000 rows" in text
    assert re.search(r"Machine: \d+ cores \(.+\), \d+ GiB, \w+, load average \d+\.\d when the run started\.", text)
    assert "0% and 30% duplicate values" in text
    assert f"\nMeasured {date} on {about['machine']}.\n" in readme_section(results)
    runs["duckdb native SQL"] = {"seconds": 5.0, "measured": "2026-12-01"}  # kept from an earlier run
    dated = section(results)
    assert f"| embedded job (DuckDB), `--dedup auto` | 2.0 s | 2.0 s | {date} |" in dated
    assert "| native DuckDB SQL computing the same codes | 5.0 s | 5.0 s | 2026-12-01 |" in dated
    readme = readme_section(results)  # each row dated: no single date above it
    assert "| native DuckDB SQL computing the same codes | 5.0 s | 5.0 s | 2026-12-01 |" in readme
    assert f"\nMeasured on {about['machine']}.\n" in readme
    for run in runs.values():  # every row kept from one earlier day: that day, not the file's
        run["measured"] = "2026-12-01"
    assert f"\nMeasured 2026-12-01 on {about['machine']}.\n" in readme_section(results)
    runs["duckdb native SQL"]["measured"] = "2026-11-30"
    runs["embedded job dedup=auto"] = {"seconds": 2.0, "measured": "2026-11-30"}
    both = [{**s, "runs": {**runs, "embedded job dedup=auto": {"seconds": 2.0, "measured": d}}}
            for s, d in zip(results["scenarios"], ("2026-11-30", "2026-12-01"))]
    mixed = readme_section({**results, "scenarios": both})  # a row measured on two days
    assert "| 2026-11-30, 2026-12-01 |" in mixed and f"\nMeasured on {about['machine']}.\n" in mixed


def test_the_readme_holds_the_table_its_results_file_gives():
    import json

    from bench.perf_table import DEFAULT_RESULTS, readme_section

    readme = (ROOT / "README.md").read_text()
    results = json.loads(DEFAULT_RESULTS.read_text())
    assert readme_section(results) in readme, "run `make docs` (python -m bench.perf_table --write docs/performance/index.md)"
    for scenario in results["scenarios"]:
        assert f"{scenario['duplicates']:.0%} dup" in readme  # a column per duplicate rate


def test_the_performance_page_holds_the_token_table_its_results_file_gives():
    import json

    from bench.perf_table import TOKEN_RESULTS, token_section

    page = (DOCS / "performance" / "index.md").read_text()
    results = json.loads(TOKEN_RESULTS.read_text())
    assert token_section(results) in page, "run `make docs` (python -m bench.perf_table --write docs/performance/index.md)"
    for engine in results["engines"].values():
        assert f"| {engine['max_tokens_ratio']:.2f}x |" in page
