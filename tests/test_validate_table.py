"""The table checks (min_rows=, extra_columns=) through the API: a step of one unit after the rows' steps."""

from __future__ import annotations

import ibis
import pandas as pd
import polars as pl
import pytest

import chatgate as pb

GOOD = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'
KINDS = {
    "polars": pl.DataFrame,
    "pandas": pd.DataFrame,
    "ibis": ibis.memtable,
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_extra_columns_and_min_rows_make_a_failed_table_step(kind):
    table = KINDS[kind]({"id": [1, 2], "messages": [GOOD, "[]"]})
    v = pb.Validate(table, thresholds=(0.01, 0.5)).col_vals_chat_format("messages", min_rows=3, extra_columns=False)
    v.interrogate()
    assert [s.column for s in v.steps] == ["messages", "(table)"]
    assert v.n(2, scalar=True) == 1 and v.n_failed(2, scalar=True) == 1
    assert v.steps[1].reasons == {"too_few_rows": 1, "extra_columns": 1}
    assert v.error(2, scalar=True)
    assert v.get_data_extracts(2) == {2: None}
    header = v.get_step_report(2).header()
    assert header == (
        "Report for Validation Step 2 ✗ ASSERTION `the table has at least 3 rows and has only the format's "
        "columns (messages)`: the table has 2 rows; at least 3 needed; columns outside the format: id"
    )
    with pytest.raises(AssertionError, match=r"Step 2 \(table\) the table fails: the table has 2 rows"):
        v.assert_passing()
    with pytest.raises(ValueError, match="step 2 checks the table as a whole: it has no rows to repair"):
        v.get_fixed_data(2, "safe")
    # The rows that pass are the rows' steps' business only.
    passing = pb.Validate(table).col_vals_chat_format("messages", min_rows=3).interrogate().get_sundered_data()
    assert (passing.count().execute() if kind == "ibis" else len(passing)) == 1


def test_a_profile_sets_the_table_checks_and_an_option_overrides_it():
    table = pl.DataFrame({"id": [1], "messages": [GOOD]})
    v = pb.Validate(table).col_vals_chat_format("messages", profile="together").interrogate()
    assert v.steps[-1].reasons == {"extra_columns": 1}
    v = pb.Validate(table).col_vals_chat_format("messages", profile="together", extra_columns=True).interrogate()
    assert [s.column for s in v.steps] == ["messages", "(table)"] and v.all_passed()
    v = pb.Validate(table).col_vals_chat_format("messages").interrogate()
    assert [s.column for s in v.steps] == ["messages"]


def test_the_table_step_is_in_the_reports():
    table = pl.DataFrame({"messages": [GOOD]})
    v = pb.Validate(table).col_vals_chat_format("messages", min_rows=2).interrogate()
    assert "(table)" in repr(v) and "TABLE" in repr(v)
    assert "(table)" in v.get_tabular_report().as_raw_html()
    assert '"column": "(table)"' in v.get_json_report()
