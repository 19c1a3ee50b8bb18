"""The seed's example of `col_vals_chat_format()`, on Polars and pandas, with every kind of chat column.

The README's first example is the contract: 4 conversations, 2 fail, the note
names both problems, the step report holds rows 2 and 4 with `pb_reason_` last.
"""

from __future__ import annotations

import json

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import chatgate as pb

SEED_MESSAGES = [
    (
        '[{"role": "user", "content": "Hi!"}, '
        '{"role": "assistant", "content": "Hello! How can I help?"}]'
    ),
    '[{"role": "user", "content": "Hi!"}, {"role": "user", "content": "Hello?"}]',
    (
        '[{"role": "system", "content": "Be brief."}, '
        '{"role": "user", "content": "Capital of France?"}, '
        '{"role": "assistant", "content": "Paris."}]'
    ),
    '[{"role": "user", "content": "What is 2 + 2?"}, {"role": "bot", "content": "4"}]',
]
SEED_NOTE = (
    "2 rows aren't well-formed conversations: 1 has roles that don't alternate "
    "(`not_alternating`) and 1 has a role that isn't allowed (`unknown_role`). "
    "The problem with each row is in the `pb_reason_` column."
)


def seed_polars() -> pl.DataFrame:
    return pl.DataFrame({"id": [1, 2, 3, 4], "messages": SEED_MESSAGES})


def seed_pandas_text() -> pd.DataFrame:
    return pd.DataFrame({"id": [1, 2, 3, 4], "messages": SEED_MESSAGES})


def seed_pandas_lists() -> pd.DataFrame:
    """An object column of Python lists of dicts."""
    return pd.DataFrame({"id": [1, 2, 3, 4], "messages": [json.loads(m) for m in SEED_MESSAGES]})


def seed_pandas_numpy() -> pd.DataFrame:
    """What Arrow gives pandas for a list<struct> column: NumPy object arrays of dicts."""
    table = pa.table({"id": [1, 2, 3, 4], "messages": [json.loads(m) for m in SEED_MESSAGES]})
    return table.to_pandas()


def seed_polars_structs() -> pl.DataFrame:
    """A Polars column of lists of structs."""
    return pl.DataFrame({"id": [1, 2, 3, 4], "messages": [json.loads(m) for m in SEED_MESSAGES]})


SEED_TABLES = [
    pytest.param(seed_polars, pl.DataFrame, id="polars-json-text"),
    pytest.param(seed_polars_structs, pl.DataFrame, id="polars-list-of-struct"),
    pytest.param(seed_pandas_text, pd.DataFrame, id="pandas-json-text"),
    pytest.param(seed_pandas_lists, pd.DataFrame, id="pandas-lists-of-dicts"),
    pytest.param(seed_pandas_numpy, pd.DataFrame, id="pandas-numpy-object-arrays"),
]


def seed_validation(tbl):
    return (
        pb.Validate(data=tbl)
        .col_vals_chat_format(columns="messages", last_role="assistant")
        .interrogate()
    )


def _column(frame, name: str) -> list:
    return frame[name].to_list() if isinstance(frame, pl.DataFrame) else frame[name].tolist()


# -- the seed example, verbatim ----------------------------------------------------------


def test_seed_example_polars():
    import polars as pl

    import chatgate as pb

    tbl = pl.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "messages": [
                (
                    '[{"role": "user", "content": "Hi!"}, '
                    '{"role": "assistant", "content": "Hello! How can I help?"}]'
                ),
                '[{"role": "user", "content": "Hi!"}, {"role": "user", "content": "Hello?"}]',
                (
                    '[{"role": "system", "content": "Be brief."}, '
                    '{"role": "user", "content": "Capital of France?"}, '
                    '{"role": "assistant", "content": "Paris."}]'
                ),
                '[{"role": "user", "content": "What is 2 + 2?"}, {"role": "bot", "content": "4"}]',
            ],
        }
    )

    validation = (
        pb.Validate(data=tbl)
        .col_vals_chat_format(columns="messages", last_role="assistant")
        .interrogate()
    )

    assert validation.n(i=1, scalar=True) == 4
    assert validation.n_passed(i=1, scalar=True) == 2
    assert validation.n_failed(i=1, scalar=True) == 2
    assert validation.f_failed(i=1, scalar=True) == 0.5

    report = validation.get_step_report(i=1)
    assert report.data.columns == ["_row_num_", "id", "messages", "pb_reason_"]
    assert report.data["_row_num_"].to_list() == [2, 4]
    assert report.data["id"].to_list() == [2, 4]
    assert report.data["pb_reason_"].to_list() == ["not_alternating", "unknown_role"]


def test_seed_repr_shows_the_values_cell_and_the_note():
    text = repr(seed_validation(seed_polars()))
    row = next(line for line in text.splitlines() if line.startswith("1 "))
    assert "col_vals_chat_format()" in row
    assert "messages" in row
    assert "CHAT ALTERNATING LAST: ASSISTANT" in row
    assert "2 0.50" in row
    assert f"Step 1 (chat_format) {SEED_NOTE}" in text


def test_seed_html_holds_the_note_verbatim():
    html = seed_validation(seed_polars())._repr_html_()
    assert SEED_NOTE in html
    assert "CHAT ALTERNATING LAST: ASSISTANT" in html


def test_seed_step_report_text():
    text = repr(seed_validation(seed_polars()).get_step_report(i=1))
    header, columns, *rows = text.splitlines()
    assert header.startswith("Report for Validation Step 1 ✗")
    assert "ASSERTION `messages is a chat of {system, user, assistant}`" in header
    assert "2 / 4 TEST UNIT FAILURES IN COLUMN 2" in header
    assert "EXTRACT OF ALL 2 ROWS" in header
    # pb_message_: where each row's problem is (the second message in both).
    assert columns.split() == ["_row_num_", "id", "messages", "pb_reason_", "pb_message_"]
    assert [r.split()[0] for r in rows] == ["2", "4"]
    assert rows[0].split()[-2:] == ["not_alternating", "1"]
    assert rows[1].split()[-2:] == ["unknown_role", "1"]


def test_seed_step_report_html_marks_the_reasons():
    html = seed_validation(seed_polars()).get_step_report(i=1)._repr_html_()
    assert "messages is a chat of {system, user, assistant}" in html
    assert 'headers="chatgate_step_1-pb_reason_"' in html
    assert ">not_alternating</td>" in html
    assert ">unknown_role</td>" in html
    assert "#B22222" in html  # the reasons in red, as pointblank marks failures


# -- the same on every kind of table and column ----------------------------------------------


@pytest.mark.parametrize(("make", "kind"), SEED_TABLES)
def test_seed_counts_on_every_kind_of_column(make, kind):
    validation = seed_validation(make())
    assert validation.n() == {1: 4}
    assert validation.n_passed() == {1: 2}
    assert validation.n_failed() == {1: 2}
    assert validation.steps[0].reasons == {"not_alternating": 1, "unknown_role": 1}
    assert f"Step 1 (chat_format) {SEED_NOTE}" in repr(validation)


@pytest.mark.parametrize(("make", "kind"), SEED_TABLES)
def test_seed_extract_is_the_inputs_own_kind(make, kind):
    extract = seed_validation(make()).get_data_extracts(i=1, frame=True)
    assert type(extract) is kind
    assert list(extract.columns) == ["_row_num_", "id", "messages", "pb_reason_"]
    assert _column(extract, "_row_num_") == [2, 4]
    assert _column(extract, "id") == [2, 4]
    assert _column(extract, "pb_reason_") == ["not_alternating", "unknown_role"]


@pytest.mark.parametrize(("make", "kind"), SEED_TABLES)
def test_seed_step_report_on_every_kind_of_column(make, kind):
    report = seed_validation(make()).get_step_report(i=1)
    assert type(report.data) is kind
    text = repr(report)
    assert "2 / 4 TEST UNIT FAILURES IN COLUMN 2" in text
    assert text.splitlines()[-1].split()[-2:] == ["unknown_role", "1"]


def test_pandas_numpy_cells_read_like_lists_in_the_step_report():
    text = repr(seed_validation(seed_pandas_numpy()).get_step_report(i=1))
    assert "[{'role': 'user', 'content': 'Hi!'}, {'role': 'user'" in text


@pytest.mark.parametrize("make", [seed_polars, seed_pandas_text, seed_pandas_lists])
def test_validation_leaves_the_input_untouched(make):
    tbl = make()
    before = list(tbl.columns)
    seed_validation(tbl).get_step_report(i=1)
    assert list(tbl.columns) == before


def test_polars_list_of_struct_with_null_fields():
    tbl = pl.DataFrame(
        {
            "messages": [
                [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
                [{"role": "user", "content": None}],
                [{"role": None, "content": "x"}],
                None,
                [],
            ]
        }
    )
    assert tbl.schema["messages"] == pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    extract = (
        pb.Validate(tbl)
        .col_vals_chat_format("messages")
        .interrogate()
        .get_data_extracts(1, frame=True)
    )
    assert extract["_row_num_"].to_list() == [2, 3, 4, 5]
    assert extract["pb_reason_"].to_list() == [
        "empty_content",
        "bad_message",
        "not_messages",
        "no_messages",
    ]
    assert extract.schema["messages"] == tbl.schema["messages"]


def test_polars_struct_with_a_messages_field():
    tbl = pl.DataFrame(
        {
            "chat": [
                {"messages": [{"role": "user", "content": "Hi"}], "source": "a"},
                {"messages": [], "source": "b"},
            ]
        }
    )
    v = pb.Validate(tbl).col_vals_chat_format("chat").interrogate()
    assert v.steps[0].reasons == {"no_messages": 1}


MISSING_VALUES = [
    pytest.param(
        lambda: pl.DataFrame({"m": ['[{"role": "user", "content": "a"}]', None]}), id="polars-null"
    ),
    pytest.param(
        lambda: pd.DataFrame({"m": ['[{"role": "user", "content": "a"}]', None]}), id="pandas-none"
    ),
    pytest.param(
        lambda: pd.DataFrame({"m": ['[{"role": "user", "content": "a"}]', float("nan")]}),
        id="pandas-nan",
    ),
    pytest.param(
        lambda: pd.DataFrame(
            {"m": pd.Series(['[{"role": "user", "content": "a"}]', pd.NA], dtype="string")}
        ),
        id="pandas-NA",
    ),
    pytest.param(
        lambda: pd.DataFrame({"m": [[{"role": "user", "content": "a"}], None]}),
        id="pandas-lists-none",
    ),
    pytest.param(
        lambda: pa.table({"m": [[{"role": "user", "content": "a"}], None]}).to_pandas(),
        id="pandas-numpy-none",
    ),
]


@pytest.mark.parametrize("make", MISSING_VALUES)
def test_missing_values_fail_unless_na_pass(make):
    failing = pb.Validate(make()).col_vals_chat_format("m").interrogate()
    assert failing.steps[0].reasons == {"not_messages": 1}
    passing = pb.Validate(make()).col_vals_chat_format("m", na_pass=True).interrogate()
    assert passing.n_failed(1, scalar=True) == 0


def test_pandas_column_mixing_json_text_and_lists():
    good = [{"role": "user", "content": "a"}]
    tbl = pd.DataFrame({"m": ['[{"role": "user", "content": "a"}]', good, [good[0], good[0]], 7]})
    extract = (
        pb.Validate(tbl).col_vals_chat_format("m").interrogate().get_data_extracts(1, frame=True)
    )
    assert extract["_row_num_"].tolist() == [3, 4]
    assert extract["pb_reason_"].tolist() == ["not_alternating", "not_messages"]


def test_pandas_extract_numbers_rows_by_position_not_index():
    tbl = pd.DataFrame(
        {"m": ["[]", '[{"role": "user", "content": "a"}]', "[]"]}, index=[10, 20, 30]
    )
    extract = (
        pb.Validate(tbl).col_vals_chat_format("m").interrogate().get_data_extracts(1, frame=True)
    )
    assert extract["_row_num_"].tolist() == [1, 3]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda s: pd.DataFrame({"m": pd.Series(s, dtype="category")}), id="pandas-category"
        ),
        pytest.param(
            lambda s: pl.DataFrame({"m": pl.Series(s, dtype=pl.Categorical)}),
            id="polars-categorical",
        ),
        pytest.param(
            lambda s: pl.DataFrame({"m": pl.Series([x.encode() for x in s], dtype=pl.Binary)}),
            id="polars-binary",
        ),
    ],
)
def test_other_text_columns(make):
    tbl = make(["[]", "[]", '[{"role": "user", "content": "a"}]'])
    assert pb.Validate(tbl).col_vals_chat_format("m").interrogate().steps[0].reasons == {
        "no_messages": 2
    }


@pytest.mark.parametrize(
    "tbl",
    [
        pytest.param(pl.DataFrame({"m": pl.Series([], dtype=pl.String)}), id="polars"),
        pytest.param(pd.DataFrame({"m": pd.Series([], dtype=object)}), id="pandas"),
    ],
)
def test_an_empty_table_has_no_units_and_passes(tbl):
    v = pb.Validate(tbl).col_vals_chat_format("m").interrogate()
    assert (v.n(1, scalar=True), v.n_failed(1, scalar=True), v.f_passed(1, scalar=True)) == (
        0,
        0,
        1.0,
    )
    assert v.all_passed()


def test_unsupported_data_raises_typeerror():
    with pytest.raises(TypeError, match="Polars or pandas"):
        pb.Validate([{"messages": "[]"}])
    with pytest.raises(TypeError, match="LazyFrame"):
        pb.Validate(seed_polars().lazy())


# -- the local engine judges pandas objects as the reference does ----------------------------------------

OK_MESSAGE = {"role": "user", "content": "ok"}

ODD_NATIVE_VALUES = [
    ("big-int-content", [{"role": "user", "content": 2**70}]),
    ("empty-dict-content", [{"role": "user", "content": {}}]),
    ("bytes-content", [{"role": "user", "content": b"\xff"}]),
    ("tuple-of-messages", (OK_MESSAGE,)),
    ("numpy-array-of-messages", pa.array([OK_MESSAGE]).to_numpy(zero_copy_only=False)),
    ("set", {"user"}),
    ("empty-set", set()),
    ("int", 3),
    ("messages-mapping", {"messages": [OK_MESSAGE], "id": 1}),
    ("role-int-keys", [{1: "user"}]),
    ("numpy-str", __import__("numpy").str_('[{"role": "user", "content": "x"}]')),
]


@pytest.mark.parametrize("other", [None, [OK_MESSAGE]], ids=["alone", "with-a-list"])
@pytest.mark.parametrize("value", [pytest.param(v, id=label) for label, v in ODD_NATIVE_VALUES])
def test_pandas_objects_get_the_reference_code(value, other):
    tbl = pd.DataFrame({"m": pd.Series([value, other], dtype=object)})
    v = pb.Validate(tbl).col_vals_chat_format("m").interrogate()
    assert v.steps[0].eval_error is None
    extract = v.get_data_extracts(1, frame=True)
    got = dict(zip(extract["_row_num_"], extract["pb_reason_"])).get(1)
    assert got == pb.first_problem(value)


@pytest.mark.xfail(
    strict=True, reason="Arrow turns a nested set into a list; only top-level kinds are checked"
)
def test_pandas_set_inside_a_message_is_a_known_gap():
    value = [{"role": "user", "content": set()}]
    tbl = pd.DataFrame({"m": pd.Series([value], dtype=object)})
    v = pb.Validate(tbl).col_vals_chat_format("m").interrogate()
    assert v.steps[0].reasons == {}  # the reference: a set isn't content, so it isn't empty content


def test_pandas_arrow_backed_list_column():
    tbl = pa.table({"m": [[OK_MESSAGE], [], None]}).to_pandas(types_mapper=pd.ArrowDtype)
    extract = (
        pb.Validate(tbl).col_vals_chat_format("m").interrogate().get_data_extracts(1, frame=True)
    )
    assert extract["_row_num_"].tolist() == [2, 3]
    assert extract["pb_reason_"].tolist() == ["no_messages", "not_messages"]
