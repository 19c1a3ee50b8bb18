"""Token statistics (`token_stats=True`, issue 27 item 2): per step, the conversations' tokens
(total, min/median/p95/max), their assistant tokens and what a trainer bills; the same on every
engine, in the job's summary table and printed summary, the run report and `Validate`'s notes.

Every figure is checked against a count made here with the tokenizer's own encode and the
OpenAI cookbook's rules (`num_tokens_from_messages`, `num_assistant_tokens_from_messages`, the
default epochs and the billed tokens of examples/Chat_finetuning_data_prep.ipynb), written out below.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from chatgate.job.config import build_config
from chatgate.job.outputs import SUMMARY_SCHEMA, TOKEN_COLUMNS
from chatgate.job.runner import run
from chatgate.job.summary import format_summary
from chatgate.pipeline import TOKEN_STATS, step_token_stats
from chatgate.rules import ChatCheck, format_from
from chatgate.rules.check.token_stats import TokenStats, default_epochs

try:
    from job_helpers import job_config, read_delta
    from test_tokens import _BPE, ENCODING, cookbook_count
except ImportError:  # tests/ imported as a package
    from tests.job_helpers import job_config, read_delta
    from tests.test_tokens import _BPE, ENCODING, cookbook_count

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")


def chat(user: str, *answers: str) -> list[dict[str, str]]:
    out = [{"role": "user", "content": user}]
    for answer in answers:
        out += [{"role": "assistant", "content": answer}, {"role": "user", "content": "and then?"}]
    return out[:-1] if answers else out


CHATS = [
    chat("Hello world", "the thing"),
    chat("Hello world", "the thing"),  # a repeat: counted per row
    chat("What is the world?", "It is the thing in the world: ça va, 世界 🙂", "hello hello hello"),
    chat("hi"),
    [{"role": "system", "content": "Be brief."}, *chat("Hello", "Hi there, the world is wide and " * 6)],
    [{"role": "user", "content": [{"type": "text", "text": "Hello world"}]}, {"role": "assistant", "content": "ok"}],
]
NOT_COUNTED = [None, "not json", "{}", json.dumps({"role": "user"})]


def _cookbook_assistant(messages, encode) -> int:
    """The cookbook's `num_assistant_tokens_from_messages` (a string content; a list as its texts)."""
    total = 0
    for message in messages:
        if message["role"] == "assistant":
            total += len(encode(message["content"]))
    return total


def _nearest_rank(values: list[int], percent: int) -> int:
    ordered = sorted(values)
    return ordered[math.ceil(percent / 100 * len(ordered)) - 1]


def _expected(chats, limit=None, epochs=None) -> dict:
    encoding = tiktoken.get_encoding(ENCODING)
    counted = [c for c in chats if isinstance(c, list)]
    texts = [[{**m, "content": m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]} for m in c] for c in counted]
    totals = [cookbook_count(c, encoding) for c in texts]
    n_epochs = epochs if epochs is not None else default_epochs(len(totals))
    return {
        "conversations": len(totals),
        "total": sum(totals),
        "min": min(totals),
        "median": _nearest_rank(totals, 50),
        "p95": _nearest_rank(totals, 95),
        "max": max(totals),
        "assistant": sum(_cookbook_assistant(c, encoding.encode) for c in texts),
        "epochs": n_epochs,
        "billed": n_epochs * sum(min(t, limit) if limit else t for t in totals),
        "limit": limit,
        "over_limit": sum(t > limit for t in totals) if limit else None,
    }


def _values(chats, form="json"):
    if form == "json":
        return pa.array([c if c is None or isinstance(c, str) else json.dumps(c) for c in chats], pa.string())
    return pa.array(chats)


def _stats(values, **options) -> TokenStats:
    import polars as pl

    from chatgate.engines.local import LocalEngine

    fmt = format_from(token_stats=True, **options)
    stats = step_token_stats(LocalEngine(), pl.from_arrow(pa.table({"messages": values})), ChatCheck("messages", fmt))
    assert stats is not None
    return stats


# --- The figures, against the cookbook --------------------------------------------------------------


@pytest.mark.parametrize("limit", [None, 30])
def test_the_figures_are_the_cookbooks(limit):
    options = {"tokenizer": ENCODING} | ({"max_tokens": limit} if limit else {})
    stats = _stats(_values(CHATS + NOT_COUNTED), **options)
    assert stats.as_dict() == _expected(CHATS, limit)


def test_epochs_given_are_billed():
    stats = _stats(_values(CHATS), tokenizer=ENCODING, epochs=2)
    assert (stats.epochs, stats.billed) == (2, 2 * stats.total)


@pytest.mark.parametrize(
    ("conversations", "epochs"),
    # The cookbook: 3 epochs, more (up to 25) when fewer than 100 examples would be seen,
    # fewer (at least 1) when more than 25,000 would.
    [(1, 25), (3, 25), (10, 10), (33, 3), (34, 3), (8_333, 3), (8_334, 2), (12_500, 2), (12_501, 1), (10**6, 1)],
)
def test_default_epochs_follow_the_cookbook(conversations, epochs):
    assert default_epochs(conversations) == epochs


def test_percentiles_are_nearest_rank():
    table = pa.table({"tokens": [10, 20, 30, 40], "rows": [1, 1, 1, 97], "assistant_tokens": [0, 0, 0, 0]})
    stats = TokenStats.of(table, format_from(token_stats=True, tokenizer=ENCODING))
    assert (stats.min, stats.median, stats.p95, stats.max) == (10, 40, 40, 40)
    table = pa.table({"tokens": [10, 20], "rows": [50, 50], "assistant_tokens": [0, 0]})
    assert TokenStats.of(table, format_from(token_stats=True, tokenizer=ENCODING)).median == 10


def test_no_conversation_counts_nothing():
    stats = _stats(_values(NOT_COUNTED), tokenizer=ENCODING)
    assert (stats.conversations, stats.total, stats.min, stats.median, stats.max, stats.bins()) == (0, 0, None, None, None, [])
    assert stats.lines() == ["tokens: no conversation to count"]


def test_the_bins_hold_every_conversation():
    stats = _stats(_values(CHATS), tokenizer=ENCODING, max_tokens=30)
    bins = stats.bins()
    assert sum(n for _, _, n in bins) == stats.conversations
    assert bins[0][0] == 0 and bins[-1][0] <= stats.max <= bins[-1][1]
    assert all(b[1] + 1 == nxt[0] for b, nxt in zip(bins, bins[1:]))


def test_a_tokenizer_json_counts_the_contents():
    from tokenizers import Tokenizer

    encode = Tokenizer.from_file(_BPE).encode
    stats = _stats(_values(CHATS[:3]), tokenizer=_BPE)
    texts = [m["content"] for c in CHATS[:3] for m in c]
    assert stats.total == sum(len(encode(t, add_special_tokens=False)) for t in texts)
    assistant = [m["content"] for c in CHATS[:3] for m in c if m["role"] == "assistant"]
    assert stats.assistant == sum(len(encode(t, add_special_tokens=False)) for t in assistant)


def test_sharegpt_roles_are_read_for_the_assistant_tokens():
    rows = [json.dumps([{"from": "human", "value": "Hello world"}, {"from": "gpt", "value": "the thing"}])]
    stats = _stats(pa.array(rows), tokenizer=_BPE, sharegpt=True)
    from tokenizers import Tokenizer

    encode = Tokenizer.from_file(_BPE).encode
    assert stats.assistant == len(encode("the thing", add_special_tokens=False)) > 0


# --- The options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"token_stats": True}, "token_stats= needs tokenizer= too"),
        ({"tokenizer": ENCODING}, "tokenizer= needs max_tokens= or token_stats=True"),
        ({"epochs": 2, "tokenizer": ENCODING, "max_tokens": 5}, "epochs= needs token_stats=True"),
        ({"epochs": 0, "token_stats": True, "tokenizer": ENCODING}, "epochs= must be a whole number of at least 1"),
        ({"token_stats": "yes", "tokenizer": ENCODING}, "token_stats= must be True or False"),
    ],
)
def test_the_options_are_checked(options, message):
    with pytest.raises((TypeError, ValueError), match=message):
        format_from(**options)


def test_token_stats_change_no_verdict():
    values = _values(CHATS + NOT_COUNTED)
    plain = ChatCheck("messages", format_from(max_tokens=30, tokenizer=ENCODING))
    counted = ChatCheck("messages", format_from(max_tokens=30, tokenizer=ENCODING, token_stats=True))
    table = pa.table({"messages": values})
    assert plain.check(table).to_pylist() == counted.check(table).to_pylist()


def test_a_dataset_type_step_is_refused_in_one_line(tmp_path):
    from chatgate.errors import ConfigError

    source = str(tmp_path / "pairs")
    write_deltalake(source, pa.table({"prompt": ["Hi"], "completion": ["Hello"]}))
    raw = {
        "source": source,
        "dataset": {"type": "prompt_completion"},
        "checks": {"token_stats": True, "tokenizer": _BPE},
        "outputs": {name: str(tmp_path / name) for name in ("quarantine", "summary")},
    }
    config = build_config(raw, {})
    with pytest.raises(ConfigError, match="token_stats= counts a chat column's conversations"):
        run(config)


# --- Every engine -----------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["json", "native"])
@pytest.mark.parametrize("engine", ["local", "duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_every_engine_gives_the_same_statistics(engine, form, request):
    chats = [c for c in CHATS if all(isinstance(m["content"], str) for m in c)] + [None]  # one Arrow type
    values = _values(chats, form)
    fmt = format_from(token_stats=True, tokenizer=_BPE, max_tokens=12)
    check = ChatCheck("messages", fmt)
    table = pa.table({"messages": values})
    if engine == "local":
        import polars as pl

        from chatgate.engines.local import LocalEngine

        found = step_token_stats(LocalEngine(), pl.from_arrow(table), check)
    elif engine == "duckdb":
        import ibis

        from chatgate.engines.ibis import IbisEngine

        found = step_token_stats(IbisEngine(chunk_size=2), ibis.memtable(table), check)
    else:
        from chatgate.engines.spark import SparkEngine

        frame = request.getfixturevalue("spark").createDataFrame(table.to_pandas() if form == "json" else table)
        found = step_token_stats(SparkEngine(), frame.repartition(3), check)
    assert found == _stats(_values(chats), tokenizer=_BPE, max_tokens=12)


# --- The job, the run report and Validate ----------------------------------------------------------------


def _job(tmp_path, engine, backend, **overrides):
    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": _values(CHATS + NOT_COUNTED)}))
    config = job_config(tmp_path, source, engine, {}, token_stats=True, tokenizer=_BPE, max_tokens=12, **overrides)
    return run(config, backend)


def test_the_job_writes_and_prints_the_statistics(tmp_path, engine, backend):
    result = _job(tmp_path, engine, backend)
    stats = result.steps[0].judged.extra[TOKEN_STATS]
    assert stats == _stats(_values(CHATS + NOT_COUNTED), tokenizer=_BPE, max_tokens=12)
    row = read_delta(tmp_path / "summary").to_pylist()[0]
    assert {name: row[f"tokens_{name}"] for name in stats.as_dict()} == stats.as_dict()
    assert [tuple(b.values()) for b in row["tokens_histogram"]] == stats.bins()
    text = format_summary(result)
    assert f"step 1: tokens: {stats.total:,} in {stats.conversations} conversations (min {stats.min}" in text
    assert f"; {stats.over_limit} over max_tokens=12" in text
    assert f"step 1: tokens billed: {stats.billed:,} ({stats.epochs} epochs, each at most 12)" in text


def test_without_token_stats_the_columns_are_null(tmp_path):
    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": _values(CHATS)}))
    run(job_config(tmp_path, source, "duckdb", {}))
    row = read_delta(tmp_path / "summary").to_pylist()[0]
    assert all(row[name] is None for name in TOKEN_COLUMNS)
    assert set(TOKEN_COLUMNS) < set(SUMMARY_SCHEMA.names)


def test_the_run_report_draws_the_histogram_with_the_limit(tmp_path):
    from chatgate.runreport import load_report, render_page, report_dict

    _job(tmp_path, "duckdb", None)
    report = load_report(str(tmp_path / "summary"), str(tmp_path / "quarantine"))
    page = render_page(report)
    assert 'id="tokens-step-1"' in page and "max_tokens=12" in page
    assert page.count("<svg") == 2  # the history and the histogram
    step = report_dict(report)["steps"][0]
    assert step["tokens"]["figures"]["limit"] == 12 and sum(b[2] for b in step["tokens"]["bins"]) == len(CHATS)


def test_a_summary_written_before_token_statistics_still_reports(tmp_path):
    from chatgate.runreport import load_report

    _job(tmp_path, "duckdb", None)
    old = read_delta(tmp_path / "summary").drop_columns(list(TOKEN_COLUMNS))
    write_deltalake(str(tmp_path / "old_summary"), old)
    report = load_report(str(tmp_path / "old_summary"), str(tmp_path / "quarantine"))
    assert report.steps[0].tokens is None


def test_validate_notes_the_statistics():
    import polars as pl

    import chatgate as cg

    table = pl.from_arrow(pa.table({"messages": _values(CHATS)}))
    v = cg.Validate(table).col_vals_chat_format("messages", token_stats=True, tokenizer=_BPE).interrogate()
    stats = v.steps[0].judged.extra[TOKEN_STATS]
    text = str(v)
    assert f"Step 1 tokens: {stats.total:,} in {len(CHATS)} conversations" in text
    assert f"Step 1 tokens billed: {stats.billed:,} ({stats.epochs} epochs)" in text


def test_the_cli_takes_the_flags(tmp_path):
    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": _values(CHATS)}))
    out = subprocess.run(
        [sys.executable, "-m", "chatgate", "run", "--source", source, "--column", "messages", "--quiet",
         "--quarantine", str(tmp_path / "q"), "--summary", str(tmp_path / "s"),
         "--token-stats", "--tokenizer", _BPE, "--epochs", "2"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "step 1: tokens billed:" in out.stdout and "(2 epochs)" in out.stdout


def test_the_airflow_task_returns_the_statistics(tmp_path):
    from chatgate.airflow import run_chatgate

    source = str(tmp_path / "chats")
    write_deltalake(source, pa.table({"messages": _values(CHATS)}))
    out = run_chatgate(
        source=source, columns=["messages"], quarantine=str(tmp_path / "q"), summary=str(tmp_path / "s"),
        token_stats=True, tokenizer=_BPE, epochs=4,
    )
    json.dumps(out)
    tokens = out["steps"][0]["tokens"]
    assert tokens == _stats(_values(CHATS), tokenizer=_BPE, epochs=4).as_dict() and tokens["epochs"] == 4
    assert run_chatgate(source=source, columns=["messages"], quarantine=str(tmp_path / "q"),
                        summary=str(tmp_path / "s"))["steps"][0]["tokens"] is None


def test_a_column_arrow_cannot_hold_is_counted_on_the_local_engine():
    import pandas as pd

    from chatgate.engines.local import LocalEngine

    mixed = [CHATS[0], CHATS[5]]  # a string content in one row, a list of parts in the other
    fmt = format_from(token_stats=True, tokenizer=ENCODING)
    found = step_token_stats(LocalEngine(), pd.DataFrame({"messages": mixed}), ChatCheck("messages", fmt))
    assert found is not None and found.as_dict() == _expected(mixed) | {"epochs": found.epochs, "billed": found.billed}


def test_padding_in_a_tokenizer_json_counts_nothing(tmp_path):
    from tokenizers import Tokenizer

    padded = Tokenizer.from_file(_BPE)
    padded.enable_padding(length=64)
    padded.enable_truncation(max_length=4)
    path = str(tmp_path / "padded.tokenizer.json")
    padded.save(path)
    own = Tokenizer.from_file(_BPE)
    texts = ["hi", "Hello world, the cat sat on the mat."]
    expected = [len(own.encode(t, add_special_tokens=False)) for t in texts]
    from chatgate.rules.base.tokens import load_tokenizer

    tok = load_tokenizer(path)
    assert tok.count_many(texts) == [tok.count(t) for t in texts] == expected
