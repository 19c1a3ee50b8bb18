"""The public functions and step methods have signatures that tools read (issue 29, item 4).

They are written out by `python -m chatgate._gen_signatures` from the spec (ChatFormat's
fields, StepSettings, the implementations' own parameters). Here: the generated modules
are what the spec gives now; each public callable's signature is the spec's; `help()`
shows it; an option left out still takes a profile's default; a misspelt option is a
runtime error naming it (through `**dict`) and a type error for mypy.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import pydoc
import re
import subprocess
import sys
import typing
from pathlib import Path

import pyarrow as pa
import pytest

import chatgate
from chatgate import _gen_signatures as gen
from chatgate.options_given import UNSET
from chatgate.rules import ChatFormat, format_from

ROOT = Path(__file__).resolve().parent.parent
TYPING = ROOT / "tests" / "typing"
OPTIONS = [f.name for f in dataclasses.fields(ChatFormat)]


def _public(written: gen.Written):
    if written in gen.STEP_METHODS:
        return getattr(chatgate.Validate, written.name)
    return getattr(chatgate, written.name)


ALL = [*gen.STEP_METHODS, *gen.FUNCTIONS, *gen.GATE_FUNCTIONS]
IDS = [w.name for w in ALL]


@pytest.mark.parametrize("module", sorted(gen.GENERATED))
def test_the_generated_modules_are_what_the_spec_gives(module):
    written = (ROOT / "lib" / "chatgate" / module).read_text(encoding="utf-8")
    assert written == gen.GENERATED[module](), (
        f"lib/chatgate/{module} has drifted from the spec: run `.venv/bin/python -m chatgate._gen_signatures`"
    )


def test_the_check_mode_says_nothing_drifted():
    assert gen.main(["--check"]) == 0


def test_an_option_added_to_the_spec_is_drift(monkeypatch, capsys):
    """A new ChatFormat field changes every generated module: the test above would fail."""

    @dataclasses.dataclass(frozen=True)
    class Extended(ChatFormat):
        brand_new: bool = dataclasses.field(default=False, metadata={"help": "a new option"})

    before = {name: text() for name, text in gen.GENERATED.items()}
    monkeypatch.setattr(gen, "ChatFormat", Extended)
    monkeypatch.setattr(gen, "OPTION_NAMES", (*gen.OPTION_NAMES, "brand_new"))
    for name, text in gen.GENERATED.items():
        after = text()
        assert after != before[name]
        assert "brand_new: bool = False," in after and "- `brand_new` (default False): a new option" in after
    assert gen.main(["--check"]) == 1
    assert "has drifted from the spec" in capsys.readouterr().err


@pytest.mark.parametrize("written", ALL, ids=IDS)
def test_each_signature_is_the_specs(written):
    """Names, kinds, annotations and defaults, as the generator derives them from the spec."""
    parameters = list(inspect.signature(_public(written)).parameters.values())
    if written in gen.STEP_METHODS:
        assert parameters.pop(0).name == "self"
    expected = written.params()
    assert [p.name for p in parameters] == [p.name for p in expected]
    for got, want in zip(parameters, expected):
        assert (got.kind is got.KEYWORD_ONLY) == want.keyword, got.name
        assert got.annotation == want.annotation, got.name
        default = got.empty if want.default is None else ast.literal_eval(want.default)
        assert got.default == default and got.default is not UNSET, got.name


@pytest.mark.parametrize("written", ALL, ids=IDS)
def test_each_signature_holds_every_option_with_its_default_and_the_implementations_own(written):
    """The same, read straight from the spec: ChatFormat's fields and the implementation's signature."""
    parameters = inspect.signature(_public(written)).parameters
    defaults = ChatFormat()
    for name in OPTIONS:
        assert parameters[name].default == getattr(defaults, name)
    own = [
        p
        for p in inspect.signature(written.implementation).parameters.values()
        if p.name not in ("self", "arguments", *OPTIONS) and p.kind is not p.VAR_KEYWORD
    ]
    for p in own:
        assert (parameters[p.name].kind, parameters[p.name].default) == (p.kind, p.default)
    others = set(parameters) - set(OPTIONS) - {p.name for p in own} - {"self"}
    expected_others = {f.name for f in dataclasses.fields(chatgate.step_params.StepSettings)} if written.settings else set()
    assert others == expected_others
    assert all(p.kind is not p.VAR_KEYWORD and p.kind is not p.VAR_POSITIONAL for p in parameters.values())


@pytest.mark.parametrize("written", ALL, ids=IDS)
def test_every_annotation_resolves(written):
    """Each name in the written-out annotations is imported where it is used."""
    hints = typing.get_type_hints(_public(written), localns={"SelfT": typing.Any})
    assert set(OPTIONS) <= set(hints)


def test_help_shows_the_real_parameters():
    text = pydoc.render_doc(chatgate.Validate.col_vals_chat_format, renderer=pydoc.plaintext)
    assert "*args" not in text and "**kwargs" not in text
    assert "last_role: 'str | None' = None" in text
    assert "roles: 'Sequence[str]' = ('system', 'user', 'assistant')" in text
    assert "dedup: 'Dedup' = 'auto'" in text
    assert "- `last_role` (default None): the role of the last message" in text
    for function in (chatgate.first_problem, chatgate.check_batch, chatgate.annotate, chatgate.split):
        text = pydoc.render_doc(function, renderer=pydoc.plaintext)
        assert "**options" not in text and "profile: \"Literal['sample', 'openai'" in text


def test_an_option_left_out_takes_the_profiles_default():
    """Only the options given reach `format_from`: the profile's defaults fill in the others."""
    frame = pa.table({"messages": ["[]"]}).to_pandas()
    for profile in ("sample", "openai", "together", "torchtune"):
        for given in ({}, {"alternate": True}, {"allow_empty": False, "last_role": "assistant"}):
            fmt = format_from(profile=profile, **given)
            plan = chatgate.Validate(frame).col_vals_chat_format("messages", profile=profile, **given)
            assert plan._plan[0].fmt == fmt
            plan = chatgate.Validate(frame).col_vals_dataset_type("language_modeling", profile=profile, **given)
            assert plan._plan[0].fmt == fmt
    sample_passes = '[{"role": "user", "content": "Hi"}, {"role": "user", "content": "?"}, {"role": "assistant", "content": "A"}]'
    assert chatgate.first_problem(sample_passes, profile="sample") is None
    assert chatgate.first_problem(sample_passes, profile="sample", alternate=True) == "not_alternating"
    assert chatgate.check_batch(pa.array([sample_passes]), profile="sample", alternate=True).to_pylist() == ["not_alternating"]


def test_the_core_options_and_pointblanks_settings_still_go_by_position():
    frame = pa.table({"m": ["[]"]}).to_pandas()
    plan = chatgate.Validate(frame).col_vals_chat_format(
        "m", ["user", "assistant"], False, "user", "assistant", True, "r", "c", True, None, None, 0.5
    )
    fmt = plan._plan[0].fmt
    assert (fmt.roles, fmt.alternate, fmt.first_role, fmt.last_role) == (("user", "assistant"), False, "user", "assistant")
    assert (fmt.allow_empty, fmt.role_key, fmt.content_key, fmt.na_pass) == (True, "r", "c", True)
    assert plan._plan[0].settings.own_thresholds is not None


@pytest.mark.parametrize(
    "call",
    [
        lambda options: chatgate.Validate(pa.table({"m": ["[]"]}).to_pandas()).col_vals_chat_format("m", **options),
        lambda options: chatgate.Validate(pa.table({"m": ["[]"]}).to_pandas()).col_vals_dataset_type(**options),
        lambda options: chatgate.first_problem("[]", **options),
        lambda options: chatgate.check_batch(pa.array(["[]"]), **options),
        lambda options: chatgate.annotate(pa.table({"m": ["[]"]}), "m", **options),
        lambda options: chatgate.split(pa.table({"m": ["[]"]}), "m", **options),
    ],
    ids=["col_vals_chat_format", "col_vals_dataset_type", "first_problem", "check_batch", "annotate", "split"],
)
def test_a_misspelt_option_through_a_dict_is_a_one_line_error_naming_it(call):
    with pytest.raises(TypeError, match="unexpected keyword argument 'last_rol'") as raised:
        call({"last_rol": "assistant"})
    assert "\n" not in str(raised.value)


def test_mypy_reads_a_misspelt_option_as_a_type_error():
    """mypy (strict, the project's settings) names each misspelt option, and finds the calls spelt right clean."""
    pytest.importorskip("mypy", reason="mypy comes with `make lint`")
    files = [TYPING / "misspelt_option.py", TYPING / "spelt_right.py"]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-error-summary", *map(str, files)],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT / "lib")},  # this checkout's chatgate, wherever it is installed from
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in done.stdout.splitlines() if ": error: " in line]
    marked = {
        number: match.group(1)
        for number, line in enumerate(files[0].read_text(encoding="utf-8").splitlines(), 1)
        if (match := re.search(r"# misspelt: (\w+)$", line))
    }
    assert len(marked) >= 4
    for number, name in marked.items():
        found = [e for e in errors if e.startswith(f"tests/typing/misspelt_option.py:{number}: error: ")]
        assert found and f'Unexpected keyword argument "{name}"' in found[0], (number, done.stdout, done.stderr)
    assert len(errors) == len(marked), done.stdout
    assert not [e for e in errors if "spelt_right.py" in e], done.stdout
