"""Every trainer profile gives the same verdicts on every surface: the API (`Validate`),
the job (YAML checks, DuckDB and Spark), the engines (local, DuckDB via Ibis, Spark)
and the reference check `first_problem`, row by row."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import chatgate as pb
from chatgate.engines.base import REASON_COLUMN
from chatgate.rules import first_problem, format_from
from chatgate.rules.spec import TRAINER_PROFILES
from job_helpers import job_config, read_delta

try:
    from rule_examples import A, S, U, call, msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A, S, U, call, msg

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
        return dict(zip(failing["id"].to_pylist(), failing[REASON_COLUMN].to_pylist()))

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
