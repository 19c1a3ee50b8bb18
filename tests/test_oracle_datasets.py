"""Properties: the rows of the dataset types agree with the plain reference.

The plain reference (tests/plain_reference/datasets.py and openai_preference.py) reads
a row of each TRL dataset type, and OpenAI's preference rows, from the documented
rules alone. On drawn rows (conversational, standard, mixed, with values broken now
and then, with `tools` and `images` columns), the row check of
`chatgate.rules.dataset_checks` gives the reference's code for each row of a table
of JSON text, and `chatgate.rules.locate_row` the reference's column and message.
Where the docs leave a row open, the reference gives each reading's answer (see its
module docstring).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import DATASET_TYPES, dataset_checks, detect_dataset_type, first_row_problem, locate_row

try:
    import strategies as drawn
    from plain_reference import plain_row_answers
    from plain_reference.datasets import TYPE_COLUMNS, plain_dataset_type
except ImportError:  # tests/ imported as a package
    import tests.strategies as drawn
    from tests.plain_reference import plain_row_answers
    from tests.plain_reference.datasets import TYPE_COLUMNS, plain_dataset_type

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TRL_TYPES = sorted(drawn.DATASET_FIELDS)


def row_options(tools: bool):
    optional = {
        "standard_parts": st.booleans(),
        "image_roles": st.just(["user"]),
        "max_images": st.integers(0, 2),
        "image_data_urls": st.booleans(),
        "alternate": st.booleans(),
        "first_role": st.sampled_from(["user", "assistant"]),
        "last_role": st.sampled_from(["user", "assistant"]),
        "na_pass": st.booleans(),
        "min_messages": st.integers(1, 4),
        "require_roles": st.just(["assistant"]),
        "image_token": st.just("<image>"),
    }
    return st.fixed_dictionaries({"tools": st.just(tools)}, optional=optional)


def json_cell(value):
    """A value as a lakehouse JSON-text column holds it (lists and objects as JSON text)."""
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def json_column(cells):
    """A column of the cells, or of their JSON text where Arrow can't hold them in one type."""
    try:
        return pa.array(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([c if c is None or isinstance(c, str) else json.dumps(c) for c in cells], pa.string())


def json_table(rows):
    names = sorted({name for row in rows for name in row})
    return pa.table({name: json_column([json_cell(row.get(name)) for row in rows]) for name in names})


def assert_rows_agree(kind, rows, options, pinned="auto"):
    table = json_table(rows)
    (check,) = dataset_checks(kind, table.column_names, format=pinned, **options)
    codes = check.check(table).to_pylist()
    for row, code in zip(table.to_pylist(), codes):
        answers = plain_row_answers(row, kind, pinned, **options)
        assert code in {a and a[0] for a in answers}, (row, code, answers)
        where = locate_row(check, row)
        assert (where and (where.code, where.column, where.message)) in answers, (row, where, answers)


@st.composite
def trl_cases(draw):
    kind = draw(st.sampled_from(["language_modeling", *TRL_TYPES]))
    if kind == "language_modeling":
        rows = draw(st.lists(st.fixed_dictionaries({"text": drawn.STANDARD_VALUES | drawn.ODD_VALUES}), min_size=1))
        return kind, rows, draw(row_options(False))
    tools = draw(st.booleans())
    options = draw(row_options(tools))
    columns = draw(st.sampled_from([(), ("tools",), ("images",), ("tools", "images")]))
    rows = draw(st.lists(drawn.dataset_rows(kind, tools), min_size=1, max_size=5))
    for row in rows:  # one table: the same columns in every row
        for name in ("tools", "images"):
            if name in columns:
                row.setdefault(name, None)
            else:
                row.pop(name, None)
    return kind, rows, options


@SETTINGS
@given(trl_cases(), st.sampled_from(["auto", "auto", "conversational", "standard"]))
def test_the_trl_dataset_types_agree_with_the_plain_reference(case, pinned):
    kind, rows, options = case
    if kind == "language_modeling":
        pinned = "auto"
    assert_rows_agree(kind, rows, options, pinned)


@SETTINGS
@given(trl_cases())
def test_the_per_row_reference_agrees_on_native_values(case):
    """`first_row_problem` on the drawn Python values (native lists, dicts) gives the reference's code."""
    kind, rows, options = case
    for row in rows:
        code = first_row_problem(row, kind, **options)
        assert code in {a and a[0] for a in plain_row_answers(row, kind, **options)}, (row, code)


def as_sharegpt(value):
    """A value with ShareGPT's keys and tags (from/value, human/gpt/observation)."""
    text = json.dumps(value)
    for old, new in (("role", "from"), ("content", "value"), ("user", "human"), ("assistant", "gpt"), ("tool", "observation")):
        text = text.replace(f'"{old}"', f'"{new}"')
    return json.loads(text)


def single_answers(row):
    """The row with each one-message answer as the message object itself."""
    out = dict(row)
    for field in ("completion", "chosen", "rejected"):
        if isinstance(out.get(field), list) and len(out[field]) == 1:
            out[field] = out[field][0]
    return out


@SETTINGS
@given(trl_cases(), st.sampled_from(["sharegpt", "single", "both"]))
def test_sharegpt_rows_and_single_message_answers_agree_with_the_plain_reference(case, variant):
    kind, rows, options = case
    if kind == "language_modeling":
        return
    if variant in ("sharegpt", "both"):
        rows, options = [as_sharegpt(row) for row in rows], {**options, "sharegpt": True}
    if variant in ("single", "both"):
        rows, options = [single_answers(row) for row in rows], {**options, "single_message_answers": True}
    assert_rows_agree(kind, rows, options)


PART_OPTIONS = {
    "content_types": st.sampled_from(["text_or_parts", "text"]),
    "part_types": st.sampled_from([["text", "image_url"], ["text", "image_url", "image"]]),
    "image_data_urls": st.just(True),
    "max_image_bytes": st.integers(1, 9),
    "image_roles": st.sampled_from([["user"], ["assistant"]]),
    "max_images": st.integers(0, 2),
}


@st.composite
def parts_cases(draw):
    """Standard rows whose prompt or completion is a list of content parts (standard_parts=True),
    under one or two of the image rules, or the together profile."""
    kind = draw(st.sampled_from(["prompt_only", "prompt_completion", "unpaired_preference"]))
    if draw(st.integers(0, 3)) == 0:
        options = {"profile": "together"}
    else:
        rules = draw(st.lists(st.sampled_from(sorted(PART_OPTIONS)), min_size=1, max_size=2, unique=True))
        options = {"standard_parts": True, **{rule: draw(PART_OPTIONS[rule]) for rule in rules}}
    value = st.one_of(drawn.image_contents(), drawn.image_contents(), drawn.STANDARD_VALUES)
    row = {"prompt": value, "completion": value, "label": st.just(True)}
    fields = drawn.DATASET_FIELDS[kind]
    rows = draw(st.lists(st.fixed_dictionaries({f: row[f] for f in fields}), min_size=1, max_size=4))
    return kind, rows, options


@SETTINGS
@given(parts_cases())
def test_standard_rows_of_content_parts_agree_with_the_plain_reference(case):
    kind, rows, options = case
    assert_rows_agree(kind, rows, options)


@st.composite
def preference_cases(draw):
    options = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "tools": st.booleans(),
                "profile": st.sampled_from(["openai", "together"]),
                "alternate": st.booleans(),
                "na_pass": st.booleans(),
                "single_message_answers": st.booleans(),
            },
        )
    )
    tools = options.get("tools", options.get("profile") == "openai")
    return options, draw(st.lists(drawn.openai_preference_rows(tools), min_size=1, max_size=5))


@SETTINGS
@given(preference_cases())
def test_openai_preference_rows_agree_with_the_plain_reference(case):
    options, rows = case
    assert_rows_agree("openai_preference", rows, options)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([*sorted(TYPE_COLUMNS), "id", "input", "preferred_output", "non_preferred_output"]), unique=True, max_size=5))
def test_the_dataset_type_detected_from_the_columns_is_the_plain_references(columns):
    try:
        detected = detect_dataset_type(columns)
    except ValueError:
        detected = None
    assert detected == plain_dataset_type(columns)


def test_the_drawn_rows_reach_the_codes_of_the_dataset_types():
    seen: set = set()

    @settings(max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(trl_cases(), trl_cases(), preference_cases()))
    def collect(case):
        if len(case) == 3:
            kind, rows, options = case
        else:
            (options, rows), kind = case, "openai_preference"
        for row in rows:
            seen.update(a and a[0] for a in plain_row_answers(row, kind, **options))

    collect()
    wanted = {"mixed_format", "not_text", "not_label", "bad_input", "output_count", "empty_text"}
    wanted |= {"prompt_end", "completion_role", "same_pair", "implicit_prompt", "not_messages", None}
    assert wanted - seen == set()
    assert DATASET_TYPES[:6] == tuple(
        ["language_modeling", "prompt_only", "prompt_completion", "preference", "implicit_preference", "unpaired_preference"]
    )


# --- Where chatgate and the documented rules disagree ---------------------------------------------

U = {"role": "user", "content": "Sky?"}
A = {"role": "assistant", "content": "Blue."}
PROMPT_ENDS_ON_ASSISTANT = {"chosen": [U, A, U, A], "rejected": [U, A, {"role": "user", "content": "Sun?"}, A]}
PROMPT_ENDS_ON_SYSTEM = {"chosen": [{"role": "system", "content": "Hi"}, A], "rejected": [{"role": "system", "content": "Hi"}, U, A]}


def plain_decoded(value):
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def test_a_standard_list_of_parts_is_judged_by_the_options_of_parts():
    """Under content_types='any' any content passes, a standard list of parts too (once a strict
    xfail: chatgate said bad_content_type)."""
    row = {"prompt": [{"type": "text", "text": "What is it?"}, "look"], "completion": "A cat."}
    assert plain_row_answers(row, "prompt_completion", standard_parts=True) == {None}
    assert first_row_problem(row, "prompt_completion", standard_parts=True) is None


@pytest.mark.parametrize("row", [PROMPT_ENDS_ON_ASSISTANT, PROMPT_ENDS_ON_SYSTEM])
def test_an_implicit_prompt_not_ending_with_a_user_turn_is_implicit_prompt(row):
    """The docs name it implicit_prompt (once a strict xfail: chatgate said prompt_end)."""
    assert plain_row_answers(row, "implicit_preference") == {("implicit_prompt", None, None)}
    assert first_row_problem(row, "implicit_preference") == "implicit_prompt"


def test_a_prompt_only_row_has_two_readings_of_the_whole_conversation_rules():
    """The datasets' docstring judges a prompt-only row's prompt as a whole conversation but for its
    last role; chatgate reads it as a prompt, without `min_messages=` and `require_roles=`."""
    row = {"prompt": [U]}
    for options in ({"min_messages": 2}, {"require_roles": ["assistant"]}, {"profile": "torchtune"}):
        answers = plain_row_answers(row, "prompt_only", **options)
        assert None in answers and len(answers) == 2
        assert first_row_problem(row, "prompt_only", **options) is None
