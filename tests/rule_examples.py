"""Helpers of the labelled-example tests of the dataset types, tool calling and the options.

An example is `(label, row, dataset_type, options, expected code[, forms])`: a row
(column name -> value), the dataset type it is checked as (None: detected from its
columns), the keyword arguments of `dataset_checks`, the code it must get, and the
forms it is run in ("both" by default, or "json"/"native" when the form changes
what the value is). `assert_example` runs it through every path:

- the per-row reference, `first_row_problem`, on the Python values;
- the batch path, `RowCheck.check`, on a two-row Arrow table of JSON text (each
  list or object as JSON text, scalars as they are);
- the batch path on a two-row Arrow table of native values (list<struct>, ...),
  when Arrow can hold them;
- the per-row reference again on the values read back from each table,

and checks that every code is one the checks declare in `codes`.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from chatgate.rules import dataset_checks, first_codes, first_row_problem
from chatgate.rules.check.checks import column_values

ARROW_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    OverflowError,
    TypeError,
    ValueError,
)


def msg(role, content="x", **extra):
    """A message dict; `content=...` (Ellipsis) leaves the content key out."""
    out = {"role": role}
    if content is not ...:
        out["content"] = content
    out.update(extra)
    return out


def call(name, arguments=None, **extra):
    """A tool call in the transformers format."""
    return {"type": "function", "function": {"name": name, "arguments": arguments or {}}, **extra}


def schema(name):
    """A tool's JSON schema in the transformers format."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Does {name}.",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    }


U = msg("user", "What color is the sky?")
A = msg("assistant", "It is blue.")
A2 = msg("assistant", "It is green.")
S = msg("system", "Respond in a friendly manner.")


def examples(*rows):
    """Labelled rows as pytest params, the label as the test id."""
    params = []
    for label, row, kind, options, code, *rest in rows:
        forms = rest[0] if rest else "both"
        params.append(pytest.param(row, kind, options, code, forms, id=label))
    return params


def json_form(value):
    """A value as a lakehouse JSON-text column holds it (lists and objects as JSON text)."""
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def json_table(row, copies=2) -> pa.Table:
    return pa.table({name: [json_form(value)] * copies for name, value in row.items()})


def native_table(row, copies=2) -> pa.Table | None:
    """The row as native Arrow values, or None when Arrow can't hold them."""
    try:
        return pa.table({name: pa.array([value] * copies) for name, value in row.items()})
    except ARROW_ERRORS:
        return None


def batch_codes(table: pa.Table | pa.RecordBatch, kind, options) -> list:
    checks = dataset_checks(kind, table.column_names, **options)
    arrays = [check.check(table) for check in checks]
    for check, array in zip(checks, arrays):
        assert array.type == pa.string()
        assert len(array) == table.num_rows
        assert set(array.to_pylist()) - {None} <= set(check.codes), (check, array)
    return first_codes(arrays).to_pylist()


def reference_codes(table: pa.Table, kind, options) -> list:
    values = {name: column_values(table, name) for name in table.column_names}
    rows = [{name: values[name][i] for name in values} for i in range(table.num_rows)]
    return [first_row_problem(row, kind, **options) for row in rows]


def assert_example(row, kind, options, expected, forms="both"):
    """The example gets `expected` on every path; returns the forms that ran."""
    ran = []
    assert first_row_problem(row, kind, **options) == expected, "reference"
    tables = []
    if forms in ("both", "json"):
        tables.append(("json", json_table(row)))
    if forms in ("both", "native"):
        table = native_table(row)
        if table is not None:
            tables.append(("native", table))
        elif forms == "native":
            raise AssertionError("the example is native-only but Arrow can't hold it")
    for name, table in tables:
        assert batch_codes(table, kind, options) == [expected, expected], name
        assert batch_codes(table.to_batches()[0], kind, options) == [expected, expected], name
        assert reference_codes(table, kind, options) == [expected, expected], name
        ran.append(name)
    return ran


def failing_on_engine(engine: str, source: pa.Table, fmt, request) -> pa.Table:
    """The failing rows (with `pb_reason_`) of the messages column of `source` judged by `engine`:
    local (Polars), duckdb (Ibis) or spark (the shared session; its failing rows' id and reason only,
    so native values stay in Spark)."""
    if engine == "local":
        import polars as pl

        from chatgate.engines.local import LocalEngine

        eng = LocalEngine()
        return eng.failing_rows(eng.judge(pl.from_arrow(source), "messages", fmt)).to_arrow()
    if engine == "duckdb":
        import ibis

        from chatgate.engines.ibis import IbisEngine

        eng = IbisEngine()
        return eng.failing_rows(eng.judge(ibis.memtable(source), "messages", fmt)).to_pyarrow()
    from chatgate.engines.spark import SparkEngine
    from chatgate.names import REASON

    eng = SparkEngine()
    frame = request.getfixturevalue("spark").createDataFrame(source)
    failing = eng.failing_rows(eng.judge(frame, "messages", fmt)).select("id", REASON)
    return pa.Table.from_pandas(failing.toPandas(), preserve_index=False)
