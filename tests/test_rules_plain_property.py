"""Properties: the trainers' options agree with the plain reference on drawn conversations.

The plain reference (tests/plain_reference.py) is written from the documented rules
alone. For every drawn set of options of issue 15 (min_messages, require_roles,
content_types, weight_key, allowed_keys, role_map, legacy_functions and the rules of
content parts and images), on top of the core ones, and every drawn batch of
conversations made to break them (weights, extra keys, function calls, aliases,
parts and images of every kind), `first_problem` and `check_batch` (JSON text as
string and binary, and native Arrow values where Arrow can hold them) give the
plain reference's code.
"""

from __future__ import annotations

import base64
import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.rules import check_batch, first_problem

try:
    from plain_reference import plain_problems
except ImportError:  # tests/ imported as a package
    from tests.plain_reference import plain_problems

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ROLES = ["system", "user", "assistant", "tool"]
ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant", "User": "user"}
ROLE_TAGS = [*ROLES, *ALIASES, "function", "developer", ""]
KEYS = ["name", "weight", "loss", "function_call", "foo"]


def data_url(kind: str, size: int) -> str:
    return f"data:image/{kind};base64," + base64.b64encode(b"\x89" * size).decode()


URLS = st.one_of(
    st.builds(data_url, st.sampled_from(["png", "jpeg", "webp", "gif", "jpg", "PNG"]), st.integers(0, 12)),
    st.sampled_from([
        "https://x/y.png",
        "data:image/png;base64,AAA",
        "data:image/png;base64,AA==AAAA",
        "data:image/png;base64,AA-A",
        "data:image/png;name=a;base64,AAAAAAAA",
        "data:image/png,AAAA",
        "data:image/jpeg;base64,...",
        "",
    ]),
    st.none(),
    st.integers(0, 2),
)
TEXTS = st.one_of(st.sampled_from(["Hi", "Sure.", "", " ", "\n"]), st.none(), st.integers(0, 2))

GOOD_PARTS = st.one_of(
    st.just({"type": "text", "text": "What is it?"}),
    st.builds(lambda kind, size: {"type": "image_url", "image_url": {"url": data_url(kind, size)}},
              st.sampled_from(["png", "jpeg", "webp"]), st.integers(1, 12)),
    st.just({"type": "image"}),
)
PARTS = st.one_of(
    GOOD_PARTS,
    GOOD_PARTS,
    GOOD_PARTS,
    st.fixed_dictionaries({"type": st.just("text")}, optional={"text": TEXTS}),
    st.fixed_dictionaries({"type": st.just("image_url")}, optional={"image_url": st.one_of(
        st.fixed_dictionaries({}, optional={"url": URLS}), URLS)}),
    st.just({"type": "image"}),
    st.fixed_dictionaries({"type": st.sampled_from(["input_audio", "video", "", 3, None])}),
    st.sampled_from(["look", 5, None, {"text": "no type"}]),
)
CONTENTS = st.one_of(
    st.lists(PARTS, max_size=4),
    st.lists(PARTS, max_size=4),
    st.sampled_from(["Hi", "Sure.", "ok"]),
    st.sampled_from(["", "  ", None]),
    st.lists(PARTS, max_size=4),
    st.integers(-1, 2),
    st.booleans(),
    st.just({"text": "Hi"}),
)
EXTRAS = {
    "weight": st.sampled_from([0, 1, 2, -1, True, False, 1.0, "1", None]),
    "loss": st.sampled_from([0, 1, 5, None]),
    "name": st.sampled_from(["ann", None]),
    "function_call": st.one_of(
        st.fixed_dictionaries({"name": st.sampled_from(["get_weather", "", 3])}, optional={"arguments": st.just("{}")}),
        st.sampled_from(["f()", None, 1, {"arguments": "{}"}]),
    ),
    "foo": st.sampled_from([1, None, "x"]),
}


@st.composite
def messages(draw, role_key: str, content_key: str, roles: list[str]) -> object:
    """A message, most often of an allowed role with a plain content; else broken in one way or more."""
    if draw(st.integers(0, 79)) == 0:
        return draw(st.sampled_from(["Hi", 3, None, [1]]))
    message: dict = {}
    kind = draw(st.integers(0, 39))
    if kind:
        tags = st.sampled_from(roles) if kind > 6 else st.sampled_from(ROLE_TAGS)
        message[role_key] = draw(st.sampled_from([None, 3]) if kind == 1 else tags)
    if draw(st.integers(0, 19)):
        message[content_key] = draw(st.sampled_from(["Hi", "Sure.", "ok"]) if draw(st.booleans()) else CONTENTS)
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True)):
        message.setdefault(key, draw(EXTRAS[key]))
    return message


@st.composite
def trainer_formats(draw) -> dict:
    """Valid keyword arguments: the core options and the trainers' options, often at their defaults."""
    roles = draw(st.lists(st.sampled_from(ROLES), min_size=1, max_size=4, unique=True))
    maybe = st.booleans()
    rarely = st.integers(0, 2).map(lambda n: n == 0)  # a trainer's option is on in a third of the cases

    def some(strategy):
        return draw(strategy) if draw(rarely) else None

    options = {
        "roles": roles,
        "alternate": draw(maybe),
        "first_role": draw(st.none() | st.sampled_from(roles)),
        "last_role": draw(st.none() | st.sampled_from(roles)),
        "allow_empty": draw(maybe),
        "role_key": draw(st.sampled_from(["role", "role", "from"])),
        "content_key": draw(st.sampled_from(["content", "content", "value"])),
        "na_pass": draw(maybe),
        "min_messages": some(st.integers(1, 4)),
        "require_roles": some(st.lists(st.sampled_from(roles), max_size=2, unique=True)) or (),
        "content_types": draw(st.sampled_from(["any", "any", "text", "text_or_parts"])),
        "weight_key": some(st.sampled_from(["weight", "loss"])),
        "allowed_keys": some(st.lists(st.sampled_from(KEYS), max_size=3, unique=True)),
        "role_map": some(st.dictionaries(st.sampled_from(sorted(ALIASES)), st.sampled_from(ROLES), max_size=3)),
        "legacy_functions": draw(rarely),
        "part_types": some(st.lists(st.sampled_from(["text", "image_url", "image"]), max_size=3, unique=True)),
        "image_data_urls": draw(rarely),
        "max_image_bytes": some(st.integers(1, 12)),
        "image_roles": some(st.lists(st.sampled_from(roles), max_size=2, unique=True)),
        "max_images": some(st.integers(0, 2)),
    }
    return options


@st.composite
def cases(draw) -> tuple[dict, list]:
    options = draw(trainer_formats())
    one = messages(options["role_key"], options["content_key"], options["roles"])
    conversation = st.lists(one, min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=5)
    value = st.one_of(conversation, conversation, st.builds(lambda m: {"messages": m}, conversation))
    value = st.one_of(value, value, value, st.none())
    return options, draw(st.lists(value, max_size=8))


IMAGE_URLS = st.one_of(
    st.builds(data_url, st.sampled_from(["png", "jpeg", "webp"]), st.integers(1, 9)),
    st.builds(data_url, st.sampled_from(["png", "jpeg", "webp"]), st.integers(1, 9)),
    URLS,
)
IMAGE_PARTS = st.one_of(
    st.just({"type": "text", "text": "What is it?"}),
    st.builds(lambda url: {"type": "image_url", "image_url": {"url": url}}, IMAGE_URLS),
    st.builds(lambda url: {"type": "image_url", "image_url": {"url": url}}, IMAGE_URLS),
    st.just({"type": "image"}),
    st.just({"type": "image"}),
)
IMAGE_PARTS = st.one_of(*[IMAGE_PARTS] * 15, PARTS)


@st.composite
def image_cases(draw) -> tuple[dict, list]:
    """Conversations of allowed roles holding parts and images, under the image rules' options
    (with the core rules mostly off, so that the image rules decide)."""
    roles = ["system", "user", "assistant"]
    half = st.booleans()
    options = {
        "roles": roles,
        "alternate": False,
        "allow_empty": draw(st.sampled_from([True, True, False])),
        "content_types": draw(st.sampled_from(["any", "text_or_parts"])),
        "part_types": draw(st.sampled_from([None, None, None, ["text", "image_url"], ["text", "image_url", "image"]])),
        "image_data_urls": draw(half),
        "max_image_bytes": draw(st.none() | st.integers(1, 9)),
        "image_roles": draw(st.none() | st.lists(st.sampled_from(roles), max_size=2, unique=True)),
        "max_images": draw(st.none() | st.integers(0, 4)),
        "role_map": draw(st.sampled_from([None, *[{"human": "user", "model": "assistant"}] * 3])),
    }
    message = st.fixed_dictionaries({
        "role": st.sampled_from([*roles, "user", "user", "assistant", "assistant", "human", "model"]),
        "content": st.one_of(st.lists(IMAGE_PARTS, min_size=1, max_size=4), st.just("Hi")),
    })
    return options, draw(st.lists(st.lists(message, min_size=1, max_size=4), max_size=6))


def disagreements(values, codes, options) -> list:
    return [
        (value, code, answers)
        for value, code in zip(values, codes)
        if code not in (answers := plain_problems(value, **options))
    ]


@SETTINGS
@given(cases())
def test_first_problem_agrees_with_the_plain_reference(case):
    options, values = case
    assert disagreements(values, [first_problem(v, **options) for v in values], options) == []
    texts = [None if v is None else json.dumps(v) for v in values]
    assert disagreements(texts, [first_problem(t, **options) for t in texts], options) == []


@SETTINGS
@given(cases())
def test_check_batch_agrees_with_the_plain_reference(case):
    options, values = case
    texts = [None if v is None else json.dumps(v) for v in values]
    for type in (pa.string(), pa.large_binary()):
        codes = check_batch(pa.array(texts, type), **options).to_pylist()
        assert disagreements(texts, codes, options) == []
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return
    held = array.to_pylist()  # as Arrow holds them: missing struct fields are null
    assert disagreements(held, check_batch(array, **options).to_pylist(), options) == []


@SETTINGS
@given(image_cases())
def test_the_image_rules_agree_with_the_plain_reference(case):
    options, values = case
    assert disagreements(values, [first_problem(v, **options) for v in values], options) == []
    texts = [json.dumps(v) for v in values]
    codes = check_batch(pa.array(texts), **options).to_pylist()
    assert disagreements(texts, codes, options) == []
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return
    assert disagreements(array.to_pylist(), check_batch(array, **options).to_pylist(), options) == []


def test_the_drawn_cases_reach_every_code_of_the_plain_reference():
    """The strategies break every rule the plain reference knows (so the properties test them)."""
    try:
        from plain_reference import CODES
    except ImportError:  # tests/ imported as a package
        from tests.plain_reference import CODES
    seen: set = set()

    @settings(max_examples=1000, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def collect(case):
        options, values = case
        seen.update(first_problem(v, **options) for v in values)

    collect()
    assert set(CODES) - seen == set()
