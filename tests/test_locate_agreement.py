"""`locate` and `problems` agree with the checks on their own labelled examples and on real files.

Each labelled example of the rules' tests (the reference check's, the options',
the profiles', tool calling's, the dataset types') and each row of the corpus
(tests/data/corpus) under several options: the first problem of each value or
row is the check's code, on the per-row path and on the batch path, in JSON text
and native Arrow forms, and each problem listed is a breach of its rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from chatgate.rules import DATASET_TYPES, ChatCheck, dataset_checks, first_reason, format_from, reason_rank
from chatgate.rules.datasets.locate_rows import locate_row, row_problems, row_problems_array
from chatgate.rules.formats.messages import image_total
from chatgate.rules.formats.tools import declared_names
from chatgate.rules.location.locate import locate, problems

try:
    import test_rules_datasets as datasets_tests
    import test_rules_images as images_tests
    import test_rules_tools as tools_tests
    import test_rules_trainers as trainers_tests
    from test_locate_property import assert_sound_and_complete
    from test_locate_rows import tables
    from test_rules_reference import ALL as REFERENCE_EXAMPLES
except ImportError:  # tests/ imported as a package
    import tests.test_rules_datasets as datasets_tests
    import tests.test_rules_images as images_tests
    import tests.test_rules_tools as tools_tests
    import tests.test_rules_trainers as trainers_tests
    from tests.test_locate_property import assert_sound_and_complete
    from tests.test_locate_rows import tables
    from tests.test_rules_reference import ALL as REFERENCE_EXAMPLES

LM, PO, PC, PREF, IMPL, UNP = DATASET_TYPES[:6]  # TRL's; openai_preference has its own tests
CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


@pytest.mark.parametrize("value, kwargs, expected", REFERENCE_EXAMPLES)
def test_agrees_with_the_reference_examples(value, kwargs, expected):
    found = problems(value, **kwargs)
    assert first_reason(p.code for p in found) == expected
    first = next((p.message for p in found if p.code == expected), None)
    assert locate(value, **kwargs) == first
    assert_sound_and_complete(value, format_from(**kwargs))


# --- Agreement with the row checks ----------------------------------------------------------


def assert_rows_agree(rows, kind=None, **options):
    """Over a table of rows: each check's problems of each row begin with its code (the first
    in `ALL_REASONS` order), on the per-row path and the batch path, in JSON and native forms.
    Returns how many rows fail."""
    columns = list(dict.fromkeys(name for row in rows for name in row))
    rows = [{name: row.get(name) for name in columns} for row in rows]
    checks = dataset_checks(kind, columns, **options)
    failing = 0
    for check in checks:
        for row in rows:
            code = check.check_row(row)
            found = row_problems(check, row)
            assert first_reason(p.code for p in found) == code, row
            assert found == sorted(found, key=lambda p: _order(check, p))
            first = locate_row(check, row)
            assert (first is None) == (code is None) and (first is None or first.code == code)
            assert_chat_sound(check, row)
            failing += code is not None
        forms = [pa.table({name: [json_form(row[name]) for row in rows] for name in columns})]
        try:
            forms.append(pa.Table.from_pylist(rows))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        for table in forms:
            codes = check.check(table).to_pylist()
            listed = row_problems_array(check, table).to_pylist()
            assert [first_reason(p["code"] for p in problems) for problems in listed] == codes
    return failing


def assert_chat_sound(check, row):
    """A conversation column's problems are breaches of their rules (see `assert_sound_and_complete`)."""
    if isinstance(check, ChatCheck):
        declared = declared_names(row.get(check.tools_column)) if check.tools_column else None
        images = image_total(row.get(check.images_column)) if check.images_column else None
        assert_sound_and_complete(row.get(check.column), check.fmt, declared=declared, images=images)


def _order(check, problem):
    place = {column: i for i, column in enumerate(check.columns)}
    column = -1 if problem.column is None else place[problem.column]
    return (column, -1 if problem.message is None else problem.message, reason_rank(problem.code))


def json_form(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


EXAMPLES = (
    trainers_tests.OPTION_EXAMPLES
    + trainers_tests.PROFILE_EXAMPLES
    + images_tests.OPTION_EXAMPLES
    + images_tests.STANDARD_EXAMPLES
    + images_tests.PREFERENCE_EXAMPLES
    + images_tests.PROFILE_EXAMPLES
    + tools_tests.PASSING
    + tools_tests.BAD_TOOL_CALL
    + tools_tests.ORPHAN_TOOL
    + tools_tests.UNKNOWN_TOOL
    + tools_tests.BAD_TOOLS
    + tools_tests.ROLES_AND_CONTENT
    + tools_tests.DATASETS
    + tools_tests.SHAREGPT
    + datasets_tests.LANGUAGE_MODELING
    + datasets_tests.PROMPT_ONLY
    + datasets_tests.PROMPT_COMPLETION
    + datasets_tests.PREFERENCE
    + datasets_tests.IMPLICIT_PREFERENCE
    + datasets_tests.UNPAIRED_PREFERENCE
    + datasets_tests.HARMONY_EXAMPLES
    + datasets_tests.SHAREGPT_EXAMPLES
    + datasets_tests.VISION_EXAMPLES
    + datasets_tests.PROFILE_EXAMPLES
)


@pytest.mark.parametrize("row, kind, options, expected, forms", EXAMPLES)
def test_agrees_with_the_rules_examples(row, kind, options, expected, forms):
    checks = dataset_checks(kind, list(row), **options)
    found = [p for check in checks for p in row_problems(check, row)]
    assert first_reason(p.code for p in found) == expected
    for check in checks:
        assert_chat_sound(check, row)
    for table in tables(row, forms):
        for check in checks:
            codes = check.check(table).to_pylist()
            listed = row_problems_array(check, table).to_pylist()
            assert [first_reason(p["code"] for p in problems) for problems in listed] == codes


def load(name):
    path = CORPUS / name
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    value = json.loads(path.read_text("utf-8"))
    return value if isinstance(value, list) else [value]


SHAREGPT_ENDS = {"sharegpt": True, "first_role": "user", "last_role": "assistant"}
STRICT_SAMPLE = {"profile": "sample", "alternate": True, "allow_empty": False}

CORPUS_RUNS = [
    ("axolotl/conversation.json", None, {}),
    ("axolotl/conversation.missingturns.json", None, SHAREGPT_ENDS),
    ("axolotl/ds_schema_unification_messages_w_tools.jsonl", None, {}),
    ("axolotl/ds_schema_unification_messages_w_tools.jsonl", None, {"profile": "openai", "allowed_keys": []}),
    ("fastchat/dummy_conversation.json", None, {}),
    ("fastchat/dummy_conversation.json", None, {"sharegpt": True, "last_role": "user"}),
    ("fastchat/dummy_conversation.json", None, {**STRICT_SAMPLE, "sharegpt": True, "min_messages": 3}),
    (
        "llamafactory/dpo_en_demo.json",
        PREF,
        {"columns": {"prompt": "conversations"}, "sharegpt": True, "first_role": "assistant"},
    ),
    ("llamafactory/glaive_toolcall_en_demo.json", None, {"sharegpt": True}),
    (
        "llamafactory/glaive_toolcall_en_demo.json",
        None,
        {"sharegpt": True, "tools": True, "first_role": "assistant"},
    ),
    ("llamafactory/kto_en_demo.json", LM, {"profile": "torchtune", "last_role": "user"}),
    ("llamafactory/mllm_demo.json", None, {}),
    ("llamafactory/reason_tool_use_demo_50.jsonl", None, {"part_types": ["text"], "text_key": "value"}),
    (
        "llamafactory/dpo_en_demo.json",
        PREF,
        {"columns": {"prompt": "conversations"}, "role_key": "from", "content_key": "value",
         "role_map": {"human": "user", "gpt": "assistant"}, "single_message_answers": True, "first_role": "assistant"},
    ),
    ("llamafactory/reason_tool_use_demo_50.jsonl", None, {}),
    ("llamafactory/reason_tool_use_demo_50.jsonl", None, {"tools": True}),
    ("llamafactory/v1_sft_demo.jsonl", None, {"profile": "openai"}),
    ("llamafactory/v1_sft_demo.jsonl", None, {"profile": "together", "content_types": "text"}),
    ("xtuner/qwen35_tokenize_data.jsonl", None, {}),
    ("xtuner/qwen35_tokenize_data.jsonl", None, {"tools": True}),
    ("xtuner/qwen35_tokenize_data.jsonl", None, {"profile": "sample"}),
    ("xtuner/qwen35_tokenize_data.jsonl", None, {"harmony": True, "thinking_key": "reasoning_content"}),
]


@pytest.mark.parametrize(
    "name, kind, options", CORPUS_RUNS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CORPUS_RUNS)]
)
def test_agrees_on_the_corpus(name, kind, options):
    # Each run is chosen so that some rows fail: those are the rows located.
    assert assert_rows_agree(load(name), kind, **options) > 0


@pytest.mark.parametrize("profile", ["openai", "together", "torchtune"])
def test_agrees_on_bare_lists_under_the_profiles(profile):
    rows = [{"messages": line} for line in load("xtuner/openai_sft.jsonl")]
    assert assert_rows_agree(rows, None, profile=profile, last_role="user") > 0
