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
