"""Every option of the check, declared once in ChatFormat, reaches every entry point.

Adding an option to ChatFormat without a value here fails the first test: each
new option is then tried from Python, YAML, the command line and Airflow.
"""

from __future__ import annotations

import argparse
import inspect
import json
from pathlib import Path

import pyarrow as pa
import pytest

import chatgate as pb
from chatgate.airflow import run_chatgate
from chatgate.cli import add_run_arguments, build_parser, check_overrides
from chatgate.job.config import build_config
from chatgate.rules.check.options import chat_options

TOKENIZER = str(Path(__file__).parent / "data" / "tokens" / "tokenizer.json")
"""A small word-level tokenizer.json (tokens.test_tokens builds its own too): `tokenizer=` needs a file."""

# A value other than the default for each option, valid on its own; and as the command line spells it.
VALUES = {
    "roles": (("user", "assistant"), ["--roles", "user,assistant"]),
    "alternate": (False, ["--no-alternate"]),
    "first_role": ("user", ["--first-role", "user"]),
    "last_role": ("assistant", ["--last-role", "assistant"]),
    "allow_empty": (True, ["--allow-empty"]),
    "role_key": ("speaker", ["--role-key", "speaker"]),
    "content_key": ("text", ["--content-key", "text"]),
    "na_pass": (True, ["--na-pass"]),
    "max_value_bytes": (1024, ["--max-value-bytes", "1024"]),
    "tools": (True, ["--tools"]),
    "harmony": (True, ["--harmony"]),
    "thinking_key": ("reasoning", ["--thinking-key", "reasoning"]),
    "sharegpt": (True, ["--sharegpt"]),
    "text_key": ("value", ["--text-key", "value"]),
    "image_token": ("<image>", ["--image-token", "<image>"]),
    "min_messages": (2, ["--min-messages", "2"]),
    "require_roles": (("assistant",), ["--require-roles", "assistant"]),
    "content_types": ("text", ["--content-types", "text"]),
    "weight_key": ("weight", ["--weight-key", "weight"]),
    "allowed_keys": (("name", "weight"), ["--allowed-keys", "name,weight"]),
    "role_map": ({"human": "user", "gpt": "assistant"}, ["--role-map", "human=user,gpt=assistant"]),
    "legacy_functions": (True, ["--legacy-functions"]),
    "image_data_urls": (True, ["--image-data-urls"]),
    "max_image_bytes": (1024, ["--max-image-bytes", "1024"]),
    "image_roles": (("user",), ["--image-roles", "user"]),
    "max_images": (10, ["--max-images", "10"]),
    "part_types": (("text", "image_url"), ["--part-types", "text,image_url"]),
    "standard_parts": (True, ["--standard-parts"]),
    "single_message_answers": (True, ["--single-message-answers"]),
    "min_rows": (2, ["--min-rows", "2"]),
    "extra_columns": (False, ["--no-extra-columns"]),
    "audio_token": ("<audio>", ["--audio-token", "<audio>"]),
    "video_token": ("<video>", ["--video-token", "<video>"]),
    "audios_column": ("audios", ["--audios-column", "audios"]),
    "videos_column": ("videos", ["--videos-column", "videos"]),
    "placeholder_contents": (True, ["--placeholder-contents"]),
    "max_tokens": (100, ["--max-tokens", "100"]),
    "tokenizer": (TOKENIZER, ["--tokenizer", TOKENIZER]),
    "token_stats": (True, ["--token-stats"]),
    "epochs": (2, ["--epochs", "2"]),
    "profile": ("sample", ["--profile", "sample"]),
}
# Options that need others: each is tried with its partners' values from VALUES.
PARTNERS = {
    "max_tokens": ("tokenizer",),
    "tokenizer": ("max_tokens",),
    "token_stats": ("tokenizer",),
    "epochs": ("token_stats", "tokenizer"),
}


def _partners(name):
    """The partners' values of option `name`, and their flags."""
    names = PARTNERS.get(name, ())
    return {p: VALUES[p][0] for p in names}, [flag for p in names for flag in VALUES[p][1]]

NAMES = [o.name for o in chat_options()]
BASE = {"source": "lake/chats", "columns": ["messages"], "outputs": {"quarantine": "q", "summary": "s"}}


def test_every_option_has_a_value_to_try_and_help_text():
    assert sorted(VALUES) == sorted(NAMES)
    for option in chat_options():
        assert option.help and not option.help.endswith(".")


@pytest.mark.parametrize("name", NAMES)
def test_an_option_reaches_the_python_functions(name):
    value, _ = VALUES[name]
    partner, _ = _partners(name)
    for function in (pb.first_problem, pb.check_batch, pb.Validate.col_vals_chat_format, pb.Validate.col_vals_dataset_type):
        parameter = inspect.signature(function).parameters[name]
        assert parameter.default == getattr(pb.ChatFormat(), name)
        assert f"`{name}`" in (function.__doc__ or "")
    pb.first_problem("[]", **{name: value}, **partner)
    pb.check_batch(pa.array(["[]"]), **{name: value}, **partner)
    validation = pb.Validate(pa.table({"messages": ["[]"]}).to_pandas()).col_vals_chat_format(
        "messages", **{name: value}, **partner
    )
    assert getattr(validation._plan[0].fmt, name) == value


@pytest.mark.parametrize("name", NAMES)
def test_an_option_reaches_the_job_from_yaml_flags_and_airflow(name):
    value, flags = VALUES[name]
    partner, partner_flags = _partners(name)
    from_yaml = build_config({**BASE, "checks": {name: list(value) if isinstance(value, tuple) else value, **partner}}, {})
    assert getattr(from_yaml.steps[0].fmt, name) == value
    args = build_parser().parse_args(
        ["run", "--source", "x", "--column", "m", "--quarantine", "q", "--summary", "s", *flags, *partner_flags]
    )
    overrides = {k: v for k, v in vars(args).items() if k not in ("config", "command", "quiet", "debug")}
    from_flags = build_config({}, overrides)
    assert getattr(from_flags.steps[0].fmt, name) == value
    check_overrides({name: value, **partner})
    assert from_flags.steps[0].check().as_dict()[name] == (list(value) if isinstance(value, tuple) else value)


def test_every_flag_has_help_text():
    parser = add_run_arguments(argparse.ArgumentParser())
    for action in parser._actions:
        assert action.help, f"{action.option_strings} has no help text"


def test_a_misspelt_option_is_named():
    with pytest.raises(TypeError, match="last_rol"):
        pb.first_problem("[]", last_rol="assistant")
    with pytest.raises(TypeError, match="last_rol"):
        pb.Validate(pa.table({"m": ["[]"]}).to_pandas()).col_vals_chat_format("m", last_rol="assistant")


def test_run_chatgate_lists_its_options():
    with pytest.raises(pb.ConfigError, match="unknown option 'allow_emtpy'; did you mean 'allow_empty'"):
        run_chatgate(allow_emtpy=True)


@pytest.mark.parametrize("name", ["pre", "segments", "thresholds", "actions", "brief", "active", "dimension", "dedup"])
def test_a_step_setting_reaches_both_step_methods(name):
    from chatgate.step_params import STEP_SETTINGS, StepSettings

    assert name in STEP_SETTINGS
    for method in (pb.Validate.col_vals_chat_format, pb.Validate.col_vals_dataset_type):
        assert inspect.signature(method).parameters[name].default == getattr(StepSettings(), name)
    bad = {"pre": 1, "segments": 1, "thresholds": -2, "actions": 1, "brief": 1, "active": 1, "dimension": 1, "dedup": "x"}
    table = pa.table({"messages": ["[]"]}).to_pandas()
    for add in (
        lambda v: v.col_vals_chat_format("messages", **{name: bad[name]}),
        lambda v: v.col_vals_dataset_type("language_modeling", **{name: bad[name]}),
    ):
        with pytest.raises((TypeError, ValueError), match="warning=" if name == "thresholds" else f"{name}="):
            add(pb.Validate(table))


def test_pointblank_step_settings_follow_the_core_options_by_position():
    parameters = list(inspect.signature(pb.Validate.col_vals_chat_format).parameters)
    assert parameters[:3] == ["self", "columns", "roles"]
    assert parameters[10:17] == ["pre", "segments", "thresholds", "actions", "brief", "active", "dimension"]


SAMPLE_LETS_THROUGH = [
    json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]),
    json.dumps([{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hello?"}, {"role": "assistant", "content": "Yes"}]),
    json.dumps([{"role": "user", "content": ""}, {"role": "assistant", "content": "Hello"}]),
]


def test_a_profile_means_the_same_in_python_yaml_and_flags(tmp_path):
    """The sample profile lets these through everywhere; an option given explicitly overrides it everywhere."""
    from deltalake import write_deltalake

    from chatgate.job.runner import run
    from job_helpers import read_delta

    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": SAMPLE_LETS_THROUGH}))
    for given, expected in (({}, 0), ({"alternate": True}, 1)):
        options = {"profile": "sample", **given}
        assert sum(pb.first_problem(v, **options) is not None for v in SAMPLE_LETS_THROUGH) == expected
        assert pb.check_batch(pa.array(SAMPLE_LETS_THROUGH), **options).null_count == 3 - expected
        frame = pa.table({"messages": SAMPLE_LETS_THROUGH}).to_pandas()
        validation = pb.Validate(frame).col_vals_chat_format("messages", **options).interrogate()
        assert validation.n_failed(i=1, scalar=True) == expected
        flags = {"source": source, "columns": ["messages"], **options}
        outputs = {n: str(tmp_path / f"{n}-{len(given)}") for n in ("quarantine", "summary")}
        run(build_config({"outputs": outputs, "run_id": "r"}, flags))
        assert read_delta(outputs["summary"])["failed"].to_pylist() == [expected]
