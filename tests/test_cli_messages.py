"""The command line's own messages, read as a user reads them: a fresh process, its stderr whole.

Issue 26, item 8: argparse errors in one or two lines with "did you mean", a grouped
`--help`, and one-line warnings for thresholds out of order and a column named twice.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def chatgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chatgate", *args], capture_output=True, text=True, timeout=120)


# -- (a) bad flags and choices: two lines, the bad token and the nearest valid one ------


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["run", "--last-rol", "assistant"], "chatgate run: error: unknown flag --last-rol; did you mean --last-role?"),
        (["run", "--last-rol=assistant"], "chatgate run: error: unknown flag --last-rol; did you mean --last-role?"),
        (["run", "--engine", "sparks"], "chatgate run: error: --engine: invalid choice 'sparks'; did you mean 'spark'?"),
        (["run", "--profile", "opnai"], "chatgate run: error: --profile: invalid choice 'opnai'; did you mean 'openai'?"),
        (["run", "--turns", "every"], "chatgate run: error: --turns: invalid choice 'every'; choose from first, all"),
        (["runn"], "chatgate: error: unknown command 'runn'; did you mean 'run'?"),
        (["clean", "--run-id", "r1", "--quarantin", "q"], "chatgate clean: error: unknown flag --quarantin; did you mean --quarantine?"),
    ],
)
def test_a_bad_flag_or_choice_is_two_lines_naming_it_and_the_nearest(args, first_line):
    done = chatgate(*args)
    assert done.returncode == 2
    prog = first_line.split(": error:")[0]
    assert done.stderr.splitlines() == [first_line, f"(see {prog} --help)"]
    assert done.stdout == ""


def test_a_stray_value_is_named():
    done = chatgate("run", "--source", "chats.jsonl", "messages")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "chatgate run: error: unexpected argument 'messages' (a value without its flag?)",
        "(see chatgate run --help)",
    ]


# -- (b) `chatgate run --help` in sections --------------------------------------------


def _sections(help_text: str) -> dict[str, list[str]]:
    """Each section's title and the flags it lists (the first flag of each entry)."""
    sections: dict[str, list[str]] = {}
    title = ""
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            title = line[:-1]
            sections[title] = []
        elif title and line.startswith("  -"):
            sections[title].append(line.split()[0].rstrip(","))
    return sections


def test_run_help_is_in_sections():
    done = chatgate("run", "--help")
    assert done.returncode == 0, done.stderr
    sections = _sections(done.stdout)
    assert list(sections)[:8] == [
        "options",
        "source and columns",
        "conversation rules",
        "trainer profiles",
        "repairs",
        "outputs",
        "engine",
        "thresholds",
    ]
    assert sections["options"] == ["-h", "--config", "--quiet", "--debug"]
    assert sections["source and columns"][:7] == [
        "--source", "--source-version", "--since", "--stream", "--checkpoint", "--trigger", "--column",
    ]
    assert {"--min-rows", "--extra-columns", "--dataset-type", "--tools-column"} <= set(sections["source and columns"])
    assert {"--roles", "--first-role", "--last-role", "--role-map", "--tools"} <= set(sections["conversation rules"])
    assert sections["trainer profiles"] == ["--profile"]
    assert sections["repairs"] == ["--fix", "--fixed", "--valid-includes-fixed"]
    assert sections["outputs"] == ["--quarantine", "--summary", "--valid", "--run-id", "--turns"]
    assert sections["engine"] == ["--engine", "--dedup", "--memory-limit", "--threads", "--temp-dir"]
    assert sections["thresholds"] == ["--warning", "--error", "--critical"]


def test_every_check_option_has_one_flag_in_one_section():
    from chatgate.rules.check.options import chat_options

    sections = _sections(chatgate("run", "--help").stdout)
    listed = [flag for flags in sections.values() for flag in flags]
    assert len(listed) == len(set(listed))
    assert {option.flag for option in chat_options()} <= set(listed)


# -- (c) one-line warnings: thresholds out of order; a column named twice is refused ---


@pytest.fixture(scope="module")
def chats(tmp_path_factory):
    from deltalake import write_deltalake

    from chatgate.sample import chat_table

    lake = tmp_path_factory.mktemp("lake")
    write_deltalake(str(lake / "chats"), chat_table(20, seed=5, defect_fraction=0.2))
    return lake


def _run(lake, *extra: str) -> subprocess.CompletedProcess[str]:
    return chatgate(
        "run", "--source", str(lake / "chats"), "--column", "messages",
        "--quarantine", str(lake / "q"), "--summary", str(lake / "s"), "--quiet", *extra,
    )


@pytest.mark.parametrize(
    ("levels", "warnings"),
    [
        (
            ["--warning", "0.2", "--error", "0.05"],
            ["chatgate: thresholds out of order: warning (0.2) is above error (0.05), so a step reaches error first"],
        ),
        (
            ["--error", "10", "--critical", "3"],
            ["chatgate: thresholds out of order: error (10) is above critical (3), so a step reaches critical first"],
        ),
        (
            ["--warning", "0.5", "--critical", "0.1"],
            ["chatgate: thresholds out of order: warning (0.5) is above critical (0.1), "
             "so a step reaches critical first"],
        ),
        (["--warning", "0.01", "--error", "0.05", "--critical", "0.5"], []),
        (["--warning", "0.5", "--error", "3"], []),  # a fraction and a count: no order to check
    ],
)
def test_thresholds_out_of_order_are_a_one_line_warning(chats, levels, warnings):
    done = _run(chats, *levels)
    assert done.returncode in (0, 3, 4), done.stderr
    assert done.stderr.splitlines() == warnings
    assert "status:" in done.stdout


def test_thresholds_out_of_order_in_a_config_file_warn_too(chats):
    config = chats / "job.yaml"
    config.write_text("thresholds:\n  warning: 5\n  error: 2\n", encoding="utf-8")
    done = _run(chats, "--config", str(config))
    assert done.stderr.splitlines() == [
        "chatgate: thresholds out of order: warning (5) is above error (2), so a step reaches error first"
    ]


def test_a_column_named_twice_is_refused_in_one_line(chats):
    done = _run(chats, "--column", "messages")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "chatgate: config error: columns: 'messages' is named twice (columns[1] and columns[2]); "
        "name each chat column once, with all its rules"
    ]
    assert done.stdout == ""


def test_one_key_for_role_and_content_is_refused_in_one_line(chats):
    done = _run(chats, "--role-key", "text", "--content-key", "text")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "chatgate: config error: columns[1] (messages): role_key= and content_key= are both 'text': "
        "a message's role and content need keys of their own"
    ]
