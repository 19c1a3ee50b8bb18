"""Properties: the batch checker, the reference check and the plain reference agree.

The plain reference (tests/plain_reference.py) is written from the documented rules alone and
shares no code with chatgate, so it can catch a rule that is wrong everywhere. For
every drawn batch and set of core parameters, `first_problem` and `check_batch`
give its codes. Then, path by path, `check_batch` on the JSON text (string,
large_string, binary, dictionary-encoded, chunked) and on the native Arrow values
(where Arrow can hold them) gives `[first_problem(v) for v in values]`.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import ChatFormat, check_array, check_batch, check_values, first_problem

try:
    from plain_reference import plain_problems
    from strategies import cases, chat_formats, json_text, polars_conversations
except ImportError:  # tests/ imported as a package
    from tests.plain_reference import plain_problems
    from tests.strategies import cases, chat_formats, json_text, polars_conversations

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

ARROW_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    OverflowError,
    TypeError,
    ValueError,
)


def _native(values):
    """An Arrow array of Python values, or None when Arrow can't hold them in one array."""
    try:
        return pa.array(values)
    except ARROW_ERRORS:
        return None


def disagreements(values, codes, kwargs) -> list:
    """The values whose code isn't one the plain reference allows, with both answers."""
    return [
        (value, code, answers)
        for value, code in zip(values, codes)
        if code not in (answers := plain_problems(value, **kwargs))
    ]


@SETTINGS
@given(cases())
def test_first_problem_agrees_with_the_plain_reference(case):
    kwargs = case.kwargs
    texts = [json_text(v, raw) for v, raw in zip(case.values, case.raw)]
    assert disagreements(texts, [first_problem(t, **kwargs) for t in texts], kwargs) == []
    objects = [v for v, raw in zip(case.values, case.raw) if not raw]
    assert disagreements(objects, [first_problem(v, **kwargs) for v in objects], kwargs) == []


@SETTINGS
@given(cases())
def test_check_batch_agrees_with_the_plain_reference(case):
    kwargs = case.kwargs
    texts = [json_text(v, raw) for v, raw in zip(case.values, case.raw)]
    for type in (pa.string(), pa.large_string()):
        codes = check_batch(pa.array(texts, type), **kwargs).to_pylist()
        assert disagreements(texts, codes, kwargs) == []
    binary = [None if t is None else t.encode() for t in texts]
    codes = check_batch(pa.array(binary, pa.binary()), **kwargs).to_pylist()
    assert disagreements(binary, codes, kwargs) == []
    objects = [v for v, raw in zip(case.values, case.raw) if not raw]
    array = _native(objects)
    if array is not None:
        held = array.to_pylist()  # as Arrow holds them: missing struct fields are null
        assert disagreements(held, check_batch(array, **kwargs).to_pylist(), kwargs) == []


@SETTINGS
@given(cases())
def test_json_text_batch_agrees_with_reference(case):
    kwargs = case.kwargs
    texts = [json_text(v, raw) for v, raw in zip(case.values, case.raw)]
    expected = [first_problem(t, **kwargs) for t in texts]

    for value, raw, code in zip(case.values, case.raw, expected):
        if not raw:  # the object and its JSON text are the same conversation
            assert first_problem(value, **kwargs) == code

    for type in (pa.string(), pa.large_string()):
        assert check_batch(pa.array(texts, type), **kwargs).to_pylist() == expected
    binary = [None if t is None else t.encode() for t in texts]
    assert check_batch(pa.array(binary, pa.binary()), **kwargs).to_pylist() == expected
    assert (
        check_batch(pc.dictionary_encode(pa.array(texts, pa.string())), **kwargs).to_pylist()
        == expected
    )
    half = len(texts) // 2
    chunked = pa.chunked_array(
        [pa.array(texts[:half], pa.string()), pa.array(texts[half:], pa.string())]
    )
    assert check_batch(chunked, **kwargs).to_pylist() == expected
    ascii_texts = [json_text(v, raw, ensure_ascii=True) for v, raw in zip(case.values, case.raw)]
    assert check_batch(pa.array(ascii_texts, pa.string()), **kwargs).to_pylist() == expected


@SETTINGS
@given(cases())
def test_native_batch_agrees_with_reference(case):
    kwargs = case.kwargs
    fmt = ChatFormat(**kwargs)
    objects = [v for v, raw in zip(case.values, case.raw) if not raw]
    expected = [first_problem(json_text(v, False), **kwargs) for v in objects]

    assert check_values(objects, fmt).to_pylist() == expected
    array = _native(objects)
    if array is not None:
        assert check_batch(array, **kwargs).to_pylist() == expected
        pandas_values = pa.table({"c": array}).to_pandas()["c"].tolist()
        assert [first_problem(v, **kwargs) for v in pandas_values] == expected
    for value, code in zip(objects, expected):
        single = _native([value])
        if single is not None:
            assert check_array(single, fmt).to_pylist() == [code]


@SETTINGS
@given(
    chat_formats().flatmap(
        lambda kw: st.tuples(
            st.just(kw),
            polars_conversations(kw["role_key"], kw["content_key"], list(kw["roles"])),
        )
    )
)
def test_polars_list_of_struct_agrees_with_the_plain_reference(drawn):
    """Polars fills the keys a message lacks with nulls: they read as missing keys."""
    pl = pytest.importorskip("polars")
    kwargs, value = drawn
    array = pl.Series([value, None]).to_arrow()
    codes = check_batch(array, **kwargs).to_pylist()
    assert [{code} for code in codes] == [plain_problems(value, **kwargs), plain_problems(None, **kwargs)]
