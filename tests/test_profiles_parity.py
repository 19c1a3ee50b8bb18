"""Every trainer profile gives the same verdicts on every surface: the API (`Validate`),
the job (YAML checks, DuckDB and Spark), the engines (local, DuckDB via Ibis, Spark)
and the reference check `first_problem`, row by row: on a chat column (JSON text, and
native Arrow lists of structs for the image rules) and on dataset rows (Together's
multimodal instruction format, preference data with aliases and single-message answers, OpenAI's
and Together's preference rows in JSON text and native structs)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import chatgate as pb
from chatgate.names import REASON
from chatgate.rules import first_problem, format_from
from chatgate.rules.trainers.profiles import TRAINER_PROFILES
from job_helpers import job_config, read_delta

try:
    from rule_examples import A2, A, S, U, call, msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A2, A, S, U, call, msg

TEXT = {"type": "text", "text": "What is in this image?"}
PNG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}

CONVERSATIONS = [
    [S, U, A],
    [U],
    [U, U, A],
    [S, A],
    [S, U],
    [msg("user", "Hi", foo=1), A],
    [U, msg("assistant", "x", weight=2)],
    [U, msg("assistant", "x", weight=1)],
    [msg("user", 123), A],
    [msg("user", ""), A],
    [U, msg("assistant", None, tool_calls=[call("f", id="c1")]), msg("tool", "ok", tool_call_id="c1"), A],
    [U, msg("assistant", None, function_call={"name": "f", "arguments": "{}"}), msg("function", "ok", name="f"), A],
    [msg("developer", "Be brief."), U, A],
    [U, S, A],
    [U, A, A],
    [],
    # content parts and images (Together's rules)
    [msg("user", [TEXT, PNG]), msg("assistant", [{"type": "text", "text": "A cat."}])],
    [msg("user", [TEXT, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]), A],
    [U, msg("assistant", [PNG])],
    [msg("user", [PNG] * 11), A],
    [msg("user", [TEXT, {"type": "image"}]), A],
]
PROFILES = sorted(TRAINER_PROFILES)


def _source() -> pa.Table:
    values = [json.dumps(c) for c in CONVERSATIONS] + [None]
    return pa.table({"id": pa.array(range(1, len(values) + 1), pa.int64()), "messages": values})


def _expected(profile: str) -> dict[int, str]:
    source = _source()
    codes = {i: first_problem(v, profile=profile) for i, v in zip(source["id"].to_pylist(), source["messages"].to_pylist())}
    return {i: code for i, code in codes.items() if code is not None}


def test_the_profiles_disagree_somewhere():
    """The table tells the profiles apart (else the parity below would prove little)."""
    verdicts = [_expected(p) for p in PROFILES]
    assert all(a != b for i, a in enumerate(verdicts) for b in verdicts[i + 1 :])


def _api(profile, tmp_path, request):
    frame = _source().to_pandas()
    validation = pb.Validate(frame).col_vals_chat_format("messages", profile=profile).interrogate()
    extract = validation.get_data_extracts(1, frame=True)
    return dict(zip(extract["id"].tolist(), extract["pb_reason_"].tolist()))


def _job(engine):
    def run_job(profile, tmp_path, request):
        from chatgate.job.runner import run

        source = str(tmp_path / "chats")
        write_deltalake(source, _source())
        # The YAML keys of the job's checks, as a config file spells them.
        run(job_config(tmp_path, source, engine, {"profile": profile}))
        quarantine = read_delta(tmp_path / "quarantine")
        return dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist()))

    return run_job


def _engine(name):
    def judge(profile, tmp_path, request):
        fmt = format_from(profile=profile)
        if name == "local":
            import polars as pl

            from chatgate.engines.local import LocalEngine

            eng, table = LocalEngine(), pl.from_arrow(_source())
            failing = eng.failing_rows(eng.judge(table, "messages", fmt)).to_arrow()
        elif name == "duckdb":
            import ibis

            from chatgate.engines.ibis import IbisEngine

            eng, table = IbisEngine(), ibis.memtable(_source())
            failing = eng.failing_rows(eng.judge(table, "messages", fmt)).to_pyarrow()
        else:
            from chatgate.engines.spark import SparkEngine

            eng, table = SparkEngine(), request.getfixturevalue("spark").createDataFrame(_source())
            failing = pa.Table.from_pandas(eng.failing_rows(eng.judge(table, "messages", fmt)).toPandas())
        return dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist()))

    return judge


SURFACES = [
    pytest.param(_api, id="api"),
    pytest.param(_job("duckdb"), id="job-duckdb"),
    pytest.param(_job("spark"), id="job-spark", marks=pytest.mark.spark),
    pytest.param(_engine("local"), id="engine-local"),
    pytest.param(_engine("duckdb"), id="engine-duckdb"),
    pytest.param(_engine("spark"), id="engine-spark", marks=pytest.mark.spark),
]


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("profile", PROFILES)
def test_every_surface_gives_the_reference_verdicts(surface, profile, tmp_path, request):
    assert surface(profile, tmp_path, request) == _expected(profile)


# --- Dataset rows and native values ----------------------------------------------------------

ROWS = [
    # Together's multimodal instruction format: a prompt of parts, a string or parts completion
    {"prompt": [TEXT, PNG], "completion": "A cat."},
    {"prompt": [TEXT, PNG], "completion": [{"type": "text", "text": "A cat."}]},
    {"prompt": [TEXT, {"type": "image_url", "image_url": {"url": "https://x"}}], "completion": "A cat."},
    {"prompt": "Draw a cat.", "completion": [PNG]},
    {"prompt": [PNG] * 11, "completion": "Cats."},
    {"prompt": [{"type": "input_audio", "text": "x"}], "completion": "Yo"},
    {"prompt": [{"type": "text", "text": " "}], "completion": "Yo"},
    {"prompt": "The sky is", "completion": " blue."},
    {"prompt": [U], "completion": [A]},
    {"prompt": [TEXT, PNG], "completion": [A]},
]
ROW_OPTIONS = {"profile": "together"}

PREFERENCES = [
    {"prompt": [msg("human", "Sky?")], "chosen": msg("gpt", "Blue."), "rejected": msg("bot", "Green.")},
    {"prompt": [msg("human", "Sky?")], "chosen": [msg("model", "Blue.")], "rejected": [msg("model", "Green.")]},
    {"prompt": [U], "chosen": A, "rejected": A},
    {"prompt": [U], "chosen": msg("human", "Blue."), "rejected": A2},
    {"prompt": [msg("robot", "Sky?")], "chosen": A, "rejected": A2},
    {"prompt": [U], "chosen": {"content": "Blue."}, "rejected": A2},
]
PREFERENCE_OPTIONS = {"role_map": {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"},
                      "single_message_answers": True}



def _op(messages=(U,), preferred=(A,), non_preferred=(A2,), **input_keys):
    """An OpenAI (and Together) preference row."""
    return {"input": {"messages": list(messages), **input_keys}, "preferred_output": list(preferred),
            "non_preferred_output": list(non_preferred)}


TOOL_CALL = msg("assistant", None, tool_calls=[call("f", id="c1")])
OPENAI_PREFERENCES = [
    _op(),
    _op([S, U, A, U], non_preferred=(A,)),
    _op([U, A]),
    _op(preferred=(A, A2)),
    {**_op(), "input": [U]},
    _op(non_preferred=(U,)),
    _op([msg("user", "Hi", weight=2)]),
    _op(preferred=(msg("assistant", 123),)),
    _op(preferred=(msg("assistant", [PNG]),)),
    _op([U, U]),
    _op(preferred=(TOOL_CALL,), tools=[{"type": "function", "function": {"name": "g"}}]),
]

DATASETS = {
    "together-instruction": ("prompt_completion", ROWS, ROW_OPTIONS),
    "preference-loose": ("preference", PREFERENCES, PREFERENCE_OPTIONS),
    "openai-preference-openai": ("openai_preference", OPENAI_PREFERENCES, {"profile": "openai"}),
    "openai-preference-together": ("openai_preference", OPENAI_PREFERENCES, {"profile": "together"}),
}


def _dataset_source(rows) -> pa.Table:
    columns = {name: [json.dumps(row[name]) if not isinstance(row[name], str) else row[name] for row in rows]
               for name in rows[0]}
    return pa.table({"id": pa.array(range(1, len(rows) + 1), pa.int64()), **columns})


def _dataset_expected(kind, rows, options) -> dict[int, str]:
    from chatgate.rules import first_row_problem

    codes = {i + 1: first_row_problem(row, kind, **options) for i, row in enumerate(rows)}
    return {i: code for i, code in codes.items() if code is not None}


def _dataset_on(surface, kind, source, options, tmp_path, request) -> dict[int, str]:
    if surface == "api":
        validation = pb.Validate(source.to_pandas()).col_vals_dataset_type(kind, **options).interrogate()
        extract = validation.get_data_extracts(1, frame=True)
        return dict(zip(extract["id"].tolist(), extract["pb_reason_"].tolist()))
    if surface.startswith("job-"):
        from chatgate.job.config import build_config
        from chatgate.job.runner import run

        path = str(tmp_path / "rows")
        write_deltalake(path, source)
        raw = {
            "source": path,
            "engine": surface[4:],
            "dataset": {"type": kind},
            "checks": options,
            "outputs": {name: str(tmp_path / name) for name in ("quarantine", "summary", "valid")},
            "run_id": "run-1",
        }
        run(build_config(raw, {}))
        quarantine = read_delta(tmp_path / "quarantine")
        return dict(zip(quarantine["id"].to_pylist(), quarantine["pb_reason_"].to_pylist()))
    from chatgate.rules import dataset_checks

    (check,) = dataset_checks(kind, source.column_names, **options)
    return _judged_on(surface[7:], check, source, request)


def _judged_on(engine, check, source, request) -> dict[int, str]:
    if engine == "local":
        import polars as pl

        from chatgate.engines.local import LocalEngine

        eng, table = LocalEngine(), pl.from_arrow(source)
        failing = eng.failing_rows(eng.judge_check(table, check)).to_arrow()
    elif engine == "duckdb":
        import ibis

        from chatgate.engines.ibis import IbisEngine

        eng, table = IbisEngine(), ibis.memtable(source)
        failing = eng.failing_rows(eng.judge_check(table, check)).to_pyarrow()
    else:
        from chatgate.engines.spark import SparkEngine

        eng, table = SparkEngine(), request.getfixturevalue("spark").createDataFrame(source)
        rows = eng.failing_rows(eng.judge_check(table, check)).select("id", REASON)
        failing = pa.Table.from_pandas(rows.toPandas())  # (nested columns left out: pandas holds them as objects)
    return dict(zip(failing["id"].to_pylist(), failing[REASON].to_pylist()))


DATASET_SURFACES = [
    pytest.param("api", id="api"),
    pytest.param("job-duckdb", id="job-duckdb"),
    pytest.param("job-spark", id="job-spark", marks=pytest.mark.spark),
    pytest.param("engine-local", id="engine-local"),
    pytest.param("engine-duckdb", id="engine-duckdb"),
    pytest.param("engine-spark", id="engine-spark", marks=pytest.mark.spark),
]


@pytest.mark.parametrize("surface", DATASET_SURFACES)
@pytest.mark.parametrize("name", list(DATASETS))
def test_every_surface_gives_the_reference_verdicts_on_dataset_rows(surface, name, tmp_path, request):
    kind, rows, options = DATASETS[name]
    expected = _dataset_expected(kind, rows, options)
    assert len(set(expected.values())) >= 4 and len(expected) < len(rows)
    assert _dataset_on(surface, kind, _dataset_source(rows), options, tmp_path, request) == expected


NATIVE = [
    [msg("user", [TEXT, PNG]), msg("assistant", [TEXT])],
    [msg("user", [TEXT, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]), msg("assistant", [TEXT])],
    [msg("user", [TEXT]), msg("assistant", [PNG])],
    [msg("user", [PNG] * 11), msg("assistant", [TEXT])],
    [msg("user", [TEXT, {"type": "image"}]), msg("assistant", [TEXT])],
    [msg("user", [{"type": "text", "text": None}]), msg("assistant", [TEXT])],
    [msg("system", [TEXT])],
]


@pytest.mark.parametrize("engine", ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_the_image_rules_on_native_values_on_every_engine(engine, request):
    """A list<struct<role, content: list<struct<type, text, image_url>>>> column, as Arrow holds it."""
    from chatgate.rules import ChatCheck

    source = pa.table({"id": pa.array(range(1, len(NATIVE) + 1), pa.int64()), "messages": pa.array(NATIVE)})
    expected = {i + 1: code for i, value in enumerate(source["messages"].to_pylist())
                if (code := first_problem(value, profile="together")) is not None}
    assert len(set(expected.values())) >= 5
    check = ChatCheck("messages", format_from(profile="together"))
    assert _judged_on(engine, check, source, request) == expected


NATIVE_PREFERENCES = [
    _op(),
    _op([U, A]),
    _op(preferred=(A, A2)),
    _op(non_preferred=(U,)),
    _op([msg("user", "")]),
    _op(preferred=(msg("assistant", None),)),
    _op([S, U], non_preferred=(A,)),
]


@pytest.mark.parametrize("profile", ["openai", "together"])
@pytest.mark.parametrize("engine", ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_openai_preference_rows_on_native_values_on_every_engine(engine, profile, request):
    """A struct `input` and list<struct> outputs, as Arrow holds them."""
    from chatgate.rules import dataset_checks, first_row_problem

    rows = [{"id": i + 1, **row} for i, row in enumerate(NATIVE_PREFERENCES)]
    source = pa.Table.from_pylist(rows)
    assert pa.types.is_struct(source.schema.field("input").type)
    expected = {r["id"]: code for r in rows
                if (code := first_row_problem({k: v for k, v in r.items() if k != "id"}, "openai_preference",
                                              profile=profile)) is not None}
    assert len(set(expected.values())) >= 3
    (check,) = dataset_checks("openai_preference", source.column_names, profile=profile)
    assert _judged_on(engine, check, source, request) == expected
