"""The JVM's proof (`engines/spark/shapes.py`, `jvm/ChatShape.java`) against the Python check.

`ChatShape` gives a value's roles only where they alone decide its code: whatever it reads
as roles R, the Python check must give the value the code it gives a conversation of roles R
with filled contents. The tests hold it to that on labelled and real conversations, on texts
drawn near its shape (one character off, bad UTF-8, escapes, blank contents) and on the
property strategies' values; then the Spark engine must judge alike with the proof and without.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from tests.strategies import cases, json_text

from chatgate.engines.spark import SparkEngine, shapes
from chatgate.rules import ChatFormat, check_array
from chatgate.sample import chat_table

FORMATS = [
    ChatFormat(),
    ChatFormat(first_role="user", last_role="assistant"),
    ChatFormat(alternate=False, allow_empty=True),
    ChatFormat(roles=("user", "assistant"), first_role="user"),
    ChatFormat(roles=("user", "assistant", "tool", "system"), last_role="assistant"),
]
SHAREGPT_KEYS = ChatFormat(role_key="from", content_key="value", roles=("human", "gpt"), first_role="human")
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def roles_read(spark, texts: list[bytes], fmt: ChatFormat) -> list[str | None]:
    """What `ChatShape` reads of each text, as the Spark engine asks it."""
    assert shapes._registered(spark), "the chatgate-shape jar is missing: run `make jars`"
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text binary")
    read = F.call_function(shapes.SHAPE_FUNCTION, F.col("text"), F.lit(fmt.role_key), F.lit(fmt.content_key))
    return [row.roles for row in df.select("i", read.alias("roles")).orderBy("i").collect()]


def assert_roles_decide(spark, texts: list[bytes], formats: list[ChatFormat]) -> int:
    """Each text that `ChatShape` reads gets, under each format, the code of its roles with filled
    contents; returns how many it read."""
    read_total = 0
    read_with: dict[tuple[str, str], list[str | None]] = {}
    for fmt in formats:
        keys = (fmt.role_key, fmt.content_key)
        if keys not in read_with:
            read_with[keys] = roles_read(spark, texts, fmt)
        read = read_with[keys]
        codes = check_array(pa.array(texts, pa.binary()), fmt).to_pylist()
        for text, roles, code in zip(texts, read, codes):
            if roles is None:
                continue
            read_total += 1
            filled = json.dumps([{fmt.role_key: r, fmt.content_key: "x"} for r in roles.split(",")])
            assert check_array(pa.array([filled]), fmt)[0].as_py() == code, (text, roles, fmt)
    return read_total


ROLES = ["user", "assistant", "system", "tool", "User", "", "us er", "usér", "\\u0075ser", "bot-1", "a_b"]
CONTENTS = [
    "Hi", "x", " ", "", "\t", "\u00a0", "\u3000", "\u2028", "\\u0020", "\\n", "\\\"", "é", "a\\u0000b",
    "\\ud800", "\\ud83d\\ude00", "\\uD7FF", "\\q", "\x1f", "\x7f", "\ufffd", "🙂", "\\/",
]
BAD_BYTES = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"]
SPACES = ["", " ", "\n", "\t", "\r\n", "\x0b", "\u00a0"]


@st.composite
def near_shape(draw) -> bytes:
    """The text of a conversation in `ChatShape`'s shape or one step off it."""
    messages = draw(st.lists(st.tuples(st.sampled_from(ROLES), st.sampled_from(CONTENTS)), min_size=0, max_size=6))
    gap = draw(st.sampled_from(SPACES))
    keys = draw(st.sampled_from([("role", "content"), ("content", "role"), ("role", "content", "name"),
                                 ("role", "role", "content"), ("role",), ("Role", "content")]))
    parts = []
    for role, content in messages:
        fields = []
        for key in keys:
            value = role if key.lower() == "role" else content if key == "content" else "n"
            fields.append(f'{gap}"{key}"{gap}:{gap}"{value}"')
        parts.append("{" + ",".join(fields) + gap + "}")
    text = (gap + "[" + gap + ("," + gap).join(parts) + gap + "]" + gap).encode("utf-8", "surrogatepass")
    if text and draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        change = draw(st.sampled_from(["insert", "delete", "bytes"]))
        if change == "insert":
            text = text[:at] + draw(st.sampled_from([b'"', b"\\", b",", b"]", b"}", b"x", b" ", b"\x00"])) + text[at:]
        elif change == "delete":
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + draw(st.sampled_from(BAD_BYTES)) + text[at:]
    return text


def _drawn_values(case) -> list[bytes]:
    texts = (json_text(v, raw, ensure_ascii=bool(i % 2)) for i, (v, raw) in enumerate(zip(case.values, case.raw)))
    return [t.encode("utf-8", "surrogatepass") for t in texts if t is not None]


pytestmark = pytest.mark.spark


def test_chat_shape_reads_the_plain_shape_and_nothing_else(spark):
    texts = [
        b'[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]',
        b' [ {"content":"Hi","role":"user"} ] ',
        b'[{"role": "user", "content": " "}]',
        b'[{"role": "user", "content": "\\u0041"}]',
        b'[{"role": "user", "content": "Hi", "name": "x"}]',
        b'[{"role": "user", "role": "user", "content": "Hi"}]',
        b'[{"role": "user", "content": "Hi\xff"}]',
        b'[{"role": "us\\u0065r", "content": "Hi"}]',
        b'{"messages": [{"role": "user", "content": "Hi"}]}',
        b"[]",
        b'[{"role": "user", "content": "Hi"}] x',
        b'[{"role": "user", "content": "caf\xc3\xa9 \\ud83d\\ude00"}]',
    ]
    assert roles_read(spark, texts, ChatFormat()) == [
        "user,assistant", "user", None, None, None, None, None, None, None, None, None, None,
    ]


def test_roles_decide_the_code_of_what_chat_shape_reads_in_the_samples_and_the_corpus(spark):
    texts = [t.encode() for t in chat_table(400, seed=5, defect_fraction=0.4).column("messages").to_pylist() if t]
    for record in _corpus_records():
        for value in (record.get("messages"), record.get("conversations")):
            if isinstance(value, list):
                texts.append(json.dumps(value, ensure_ascii=False).encode())
    assert assert_roles_decide(spark, texts, [*FORMATS, SHAREGPT_KEYS]) > 400


NEAR_SHAPE = st.lists(near_shape(), min_size=50, max_size=120)
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, suppress_health_check=_QUIET)


@_fuzz(8)
@given(NEAR_SHAPE)
def test_roles_decide_the_code_of_what_chat_shape_reads_near_its_shape(spark, texts):
    assert_roles_decide(spark, texts, FORMATS)


@pytest.mark.slow
@_fuzz(300)
@given(NEAR_SHAPE)
def test_roles_decide_the_code_of_what_chat_shape_reads_near_its_shape_at_length(spark, texts):
    assert_roles_decide(spark, texts, FORMATS)


@_fuzz(4)
@given(st.lists(cases(max_size=8), min_size=2, max_size=4))
def test_roles_decide_the_code_of_what_chat_shape_reads_among_drawn_values(spark, drawn):
    for case in drawn:
        fmt = ChatFormat(**case.kwargs)
        if fmt.role_key != fmt.content_key:
            assert_roles_decide(spark, _drawn_values(case), [fmt])


def test_the_passing_roles_are_the_checks_own_verdicts():
    fmt = ChatFormat(first_role="user", last_role="assistant")
    passing = shapes.passing_roles(fmt)
    assert "user,assistant" in passing and "system,user,assistant,user,assistant" in passing
    assert "user" not in passing and "assistant,user" not in passing and "user,user,assistant" not in passing
    assert all(len(p.split(",")) <= shapes.LONGEST for p in passing)
    assert shapes.passing_roles(ChatFormat(roles=tuple(f"r{i}" for i in range(shapes.MOST_ROLES + 1)))) == ()


def test_the_proof_applies_to_one_text_column_under_the_core_check_only(spark):
    df = spark.createDataFrame([(1, "[]", b"[]")], "id int, messages string, raw binary")
    from chatgate.rules import ChatCheck

    assert shapes.proof_for(df, ChatCheck("messages")) is not None
    assert shapes.proof_for(df, ChatCheck("raw")) is not None
    assert shapes.proof_for(df.selectExpr("id", "id AS messages"), ChatCheck("messages")) is None
    assert shapes.proof_for(df, ChatCheck("messages", ChatFormat(tools=True))) is None
    assert shapes.proof_for(df, ChatCheck("messages", ChatFormat(min_messages=2))) is None


def _corpus_records() -> list[dict]:
    """The records of the shared corpus's JSON and JSON Lines files."""
    records: list = []
    for path in sorted(CORPUS.glob("**/*.json*")):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            records += [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            loaded = json.loads(text)
            records += loaded if isinstance(loaded, list) else [loaded]
    assert records, f"no corpus under {CORPUS}"
    return [r for r in records if isinstance(r, dict)]


def _mixed_table() -> pa.Table:
    table = chat_table(300, seed=21, defect_fraction=0.3)
    odd = [
        '[{"role": "user", "content": " "}]', '[{"role": "user", "content": "\\u3000"}]',
        '[{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hi"}]', None, "[]",
        '[{"role": "user", "content": "Hi", "name": "n"}, {"role": "assistant", "content": "ok"}]',
    ]
    extra = pa.table({"id": pa.array(range(10_000, 10_000 + len(odd)), table.schema.field("id").type)})
    extra = extra.append_column("messages", pa.array(odd, table.schema.field("messages").type))
    for name in (n for n in table.column_names if n not in extra.column_names):
        extra = extra.append_column(name, pa.nulls(len(odd), table.schema.field(name).type))
    return pa.concat_tables([table.select(extra.column_names), extra])


@pytest.mark.parametrize(("fmt", "dedup"), [(FORMATS[0], "auto"), (FORMATS[1], "off")], ids=["auto", "off"])
def test_the_spark_engine_judges_alike_with_the_proof_and_without(spark, fmt, dedup):
    table = _mixed_table()
    df = spark.createDataFrame(table.to_pandas()).repartition(3)
    proven = SparkEngine(spark=spark, locate=True).judge(df, "messages", fmt, dedup=dedup)
    plain = SparkEngine(spark=spark, locate=True, prove=False).judge(df, "messages", fmt, dedup=dedup)
    assert proven.extra["values_proven"] > 100 and plain.extra["values_proven"] == 0
    assert (proven.units, proven.failed, proven.reasons) == (plain.units, plain.failed, plain.reasons)
    if dedup == "off":
        assert proven.extra["values_judged"] + proven.extra["values_proven"] == plain.extra["values_judged"]

    def failing(judged):
        rows = judged.annotated.filter(F.col(judged.reason_column).isNotNull()).select("id", judged.reason_column)
        return sorted(tuple(r) for r in rows.collect())

    assert failing(proven) == failing(plain)
    want = check_array(table.column("messages"), fmt).to_pylist()
    assert failing(proven) == sorted((i, c) for i, c in zip(table.column("id").to_pylist(), want) if c is not None)


def test_without_the_jar_python_judges_every_row(spark, monkeypatch):
    monkeypatch.setattr(shapes, "SHAPE_CLASS", "chatgate.jvm.NoSuchClass")
    monkeypatch.setattr(shapes, "SHAPE_FUNCTION", "chatgate_no_such_function")
    df = spark.createDataFrame(chat_table(50, seed=3, defect_fraction=0.2).to_pandas())
    judged = SparkEngine(spark=spark).judge(df, "messages", ChatFormat(), dedup="off")
    assert judged.extra["values_proven"] == 0 and judged.extra["values_judged"] == 50
    want = check_array(pa.array(df.select("messages").toPandas()["messages"].tolist()), ChatFormat()).to_pylist()
    assert judged.failed == sum(code is not None for code in want)


def test_a_table_with_the_proofs_own_column_is_refused_before_any_job(spark):
    df = spark.createDataFrame([(1, "[]")], f"{shapes.PROVEN} int, messages string")
    with pytest.raises(ValueError, match=f"reserved column '{shapes.PROVEN}'"):
        SparkEngine(spark=spark).judge(df, "messages", ChatFormat())


def test_a_table_that_passes_whole_is_counted_without_reaching_python(spark):
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    rows = [(i, json.dumps([{**chat[0], "content": f"Hi {i}"}, chat[1]])) for i in range(40)]
    df = spark.createDataFrame(rows, "id int, messages string").repartition(2)
    judged = SparkEngine(spark=spark).judge(df, "messages", ChatFormat(), dedup="off")
    assert (judged.units, judged.failed, judged.reasons) == (40, 0, {})
    assert (judged.extra["values_judged"], judged.extra["values_proven"]) == (0, 40)
    assert judged.annotated.filter(F.col(judged.reason_column).isNotNull()).count() == 0
    assert judged.annotated.count() == 40
