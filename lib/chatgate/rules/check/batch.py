"""The Arrow batch checker: an array of conversations in, an array of problem codes out.

This is the hot path of every engine. JSON text is decoded by msgspec straight
into small typed structs (a role and a content per message; other keys are
skipped without being decoded), never into dicts or pandas objects, in up to
three steps, each taken only when the one before refuses the value:

1. the strict decoder (the core check only) accepts just the common case: every
   role one of `roles=`, every content a string;
2. the typed decoder (the core check only) takes any role string and string,
   null, missing or list contents;
3. whatever that refuses (a message without a string role, an object without
   "messages", bad JSON, ...) takes the reference path, which ends in `judge`.

After the first two, the format's rules of the table (`judge.active_rules`) are
tried in two groups (`_StrictPath`): those that read the roles only, whose verdict on
each sequence of roles is remembered, so that a conversation costs its decoding
plus a dictionary lookup, then, when none applies, those that read the contents
(`empty_content`, which comes after all the others in the table).

What the typed decoder accepts the reference must accept too: keys it
skips are checked for syntax only, so bad UTF-8 is caught here (in binary values,
and in string arrays too: an engine may hand over strings it never validated), and
the reference decoder takes huge numbers and deep nesting that msgspec alone would
refuse (`values.parse_json`).

Before all that, a value larger than `max_value_bytes=` gets `too_large` unread: its
size comes from the Arrow offsets (JSON text) or from the array's buffers (native
values), see `sizes`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import warnings
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Protocol

import msgspec
import numpy as np
import pyarrow as pa

from ..base.sizes import TOO_LARGE, array_bytes
from ..base.values import is_blank
from ..conversation.conversation import Conversation
from ..conversation.rule import Rule
from ..conversation.spec import ChatFormat
from ..trainers import tokens
from ..trainers.profiles import format_from
from .judge import active_rules, first_code, judge
from .options import with_options
from .reference import problem_of

_TEXT_TYPES = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
)
_JSON_EXTENSION = getattr(pa, "JsonType", ())

if TYPE_CHECKING:

    class _Message(Protocol):
        """A message struct of the typed or strict decoder (made at run time by `msgspec.defstruct`)."""

        role: str
        content: Any

    class _Messages(Protocol):
        """The `{"messages": [...]}` struct of the typed or strict decoder."""

        messages: list[_Message]

    _Decoded = list[_Message] | _Messages
    _Decode = Callable[[memoryview], _Decoded]


@with_options
def check_batch(array: pa.Array | pa.ChunkedArray, **options: Any) -> pa.StringArray:
    """The first problem code of each conversation in `array`, null where it passes.

    `array` holds JSON text (string, large_string, binary) or native values
    (list<struct>, struct with "messages", ...). It never raises on a value.
    The keyword arguments are the options of the check, listed below; with only
    the core ones in use, JSON text takes the fast typed decoder.

    >>> import pyarrow as pa
    >>> check_batch(pa.array(['[{"role": "user", "content": "Hi"}]', "[]", None])).to_pylist()
    [None, 'no_messages', 'not_messages']
    """
    return check_array(array, format_from(**options))


def check_array(array: pa.Array | pa.ChunkedArray, fmt: ChatFormat) -> pa.StringArray:
    """`check_batch` with its parameters already checked."""
    if isinstance(array, pa.ChunkedArray):
        chunks = [check_array(chunk, fmt) for chunk in array.chunks]
        return pa.concat_arrays(chunks) if chunks else pa.array([], pa.string())
    if pa.types.is_dictionary(array.type):
        # Each distinct value is judged once, then spread to its rows.
        codes = check_array(array.dictionary, fmt)
        return _spread(codes, array.indices, fmt)
    if isinstance(array.type, _JSON_EXTENSION):
        array = array.storage  # arrow.json: JSON text in a string array
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        array = array.cast(pa.large_binary())
    if any(is_type(array.type) for is_type in _TEXT_TYPES):
        return pa.array(_check_counted_json(array, fmt), pa.string())
    limit = fmt.max_value_bytes
    over = array_bytes(array) > limit if limit is not None else None
    if over is None or not over.any():
        return pa.array([problem_of(value, fmt, sized=True) for value in python_values(array)], pa.string())
    found: list[str | None] = [TOO_LARGE] * len(array)
    kept = np.flatnonzero(~over)
    for row, value in zip(kept.tolist(), python_values(array.take(pa.array(kept, pa.int64())))):
        found[row] = problem_of(value, fmt, sized=True)
    return pa.array(found, pa.string())


def python_values(array: pa.Array) -> list[Any]:
    """The Python values of an array as the rules read them.

    A map is a dict; a key written twice in one map keeps its last value, as a JSON
    object's does when the same text is decoded (Arrow and Spark let a map repeat a
    key, Parquet writers too). A string that isn't valid UTF-8 (an engine may hand one
    over unchecked) is its bytes, and a native value holding one is `b"\\xff"`: text
    that isn't UTF-8, which is never a conversation (`not_messages`, like its JSON text).
    """
    try:
        return _to_pylist(array)
    except UnicodeDecodeError:
        return [_one_value(array.slice(i, 1)) for i in range(len(array))]


def _to_pylist(array: pa.Array) -> list[Any]:
    if not _has_map(array.type):
        return array.to_pylist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pyarrow's note of each repeated key
        return array.to_pylist(maps_as_pydicts="lossy")


def _one_value(one: pa.Array) -> Any:
    try:
        return _to_pylist(one)[0]
    except UnicodeDecodeError:
        if pa.types.is_string(one.type) or pa.types.is_large_string(one.type):
            return one.view(pa.large_binary() if pa.types.is_large_string(one.type) else pa.binary())[0].as_py()
        return b"\xff"


def check_values(values: Iterable[Any], fmt: ChatFormat) -> pa.StringArray:
    """The codes of Python values that Arrow can't hold in one array (mixed kinds)."""
    return pa.array([problem_of(value, fmt) for value in values], pa.string())


def _spread(codes: pa.StringArray, indices: pa.Array, fmt: ChatFormat) -> pa.StringArray:
    spread = codes.take(indices)
    if indices.null_count and not fmt.na_pass:
        spread = (
            spread.fill_null("not_messages")
            if codes.null_count == 0
            else _fill_nulls_at(spread, indices.is_null())
        )
    return spread


def _fill_nulls_at(codes: pa.StringArray, where: pa.BooleanArray) -> pa.StringArray:
    import pyarrow.compute as pc

    return pc.if_else(where, pa.scalar("not_messages"), codes)


def _has_map(dtype: pa.DataType) -> bool:
    if pa.types.is_map(dtype):
        return True
    if pa.types.is_struct(dtype):
        return any(_has_map(dtype.field(i).type) for i in range(dtype.num_fields))
    if hasattr(dtype, "value_type") and not pa.types.is_dictionary(dtype):
        return _has_map(dtype.value_type)
    return False


def _check_counted_json(array: pa.Array, fmt: ChatFormat) -> list[str | None]:
    """`_check_json`, where the rows whose bytes prove they can't be `too_long` (`tokens.short_rows`)
    are judged without `max_tokens=`: its verdicts are the same there, and the fast paths apply."""
    short = tokens.short_rows(array, fmt)
    if short is None or not short.any():
        return _check_json(array, fmt)
    uncounted = _uncounted(fmt)
    if short.all():
        return _check_json(array, uncounted)
    found: list[str | None] = [None] * len(array)
    for rows, rows_fmt in ((np.flatnonzero(short), uncounted), (np.flatnonzero(~short), fmt)):
        codes = _check_json(array.take(pa.array(rows, pa.int64())), rows_fmt)
        for row, code in zip(rows.tolist(), codes):
            found[row] = code
    return found


@lru_cache(maxsize=32)
def _uncounted(fmt: ChatFormat) -> ChatFormat:
    """`fmt` without its token options: what a conversation that can't be too long is judged by."""
    return dataclasses.replace(fmt, max_tokens=None, tokenizer=None, token_stats=False, epochs=None)


def _check_json(array: pa.Array, fmt: ChatFormat) -> list[str | None]:
    """Codes of a string or binary array, read from its buffers without copies."""
    if len(array) == 0:
        return []
    offsets, data, valid, too_large = _buffers(array, fmt.max_value_bytes)
    # The options beyond the core check read more of each message: they take the reference path.
    decode = typed_decoder(fmt.role_key, fmt.content_key) if fmt.is_core else None
    strict = _StrictPath.of(fmt) if decode is not None else None
    utf8 = _utf8_checker(array)

    def otherwise(text: memoryview) -> str | None:
        return _check_text(text, fmt, decode, strict)

    if strict is not None and valid is None and too_large is None and utf8 is _always:
        # The engines' common case (nulls were set aside, nothing too large, all UTF-8).
        return strict.codes(offsets, data, otherwise)
    one = otherwise if strict is None else functools.partial(strict.code, otherwise=otherwise)
    return _one_by_one(offsets, data, valid, too_large, utf8, one, None if fmt.na_pass else "not_messages")


def _one_by_one(
    offsets: list[int],
    data: memoryview,
    valid: list[bool] | None,
    too_large: list[bool] | None,
    utf8: Callable[[memoryview], bool],
    one: Callable[[memoryview], str | None],
    missing: str | None,
) -> list[str | None]:
    """The codes of `_check_json` where nulls, values too large or text that isn't UTF-8 may be."""
    codes: list[str | None] = [None] * (len(offsets) - 1)
    for i in range(len(codes)):
        if valid is not None and not valid[i]:
            codes[i] = missing
        elif too_large is not None and too_large[i]:
            codes[i] = TOO_LARGE  # never read
        else:
            text = data[offsets[i] : offsets[i + 1]]
            codes[i] = one(text) if utf8(text) else "not_messages"
    return codes


def _buffers(
    array: pa.Array, limit: int | None
) -> tuple[list[int], memoryview, list[bool] | None, list[bool] | None]:
    """A string or binary array's value offsets and data, which values are valid (None: all),
    and which are larger than `limit` bytes (None: none)."""
    n = len(array)
    _, offsets_buf, data_buf = array.buffers()
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    bounds = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)[array.offset : array.offset + n + 1]
    large = np.diff(bounds) > limit if limit is not None else None
    too_large = large.tolist() if large is not None and large.any() else None
    data = memoryview(data_buf) if data_buf is not None else memoryview(b"")
    valid = array.is_valid().to_numpy(zero_copy_only=False).tolist() if array.null_count else None
    return bounds.tolist(), data, valid, too_large


def _utf8_checker(array: pa.Array) -> Callable[[memoryview], bool]:
    """Values are checked one by one only when the array isn't all valid UTF-8.

    The typed decoder skips unknown keys without validating them, so bad UTF-8 must
    be caught here for both paths to agree. Arrow strings should be valid UTF-8, but
    engines hand over what their files hold (Spark never checks; DuckDB's Arrow scan
    neither): they are checked too, in one pass over the buffer (measured: 12 ms of
    the 350 ms the check takes on 100,000 rows of 2.5 KB of JSON).
    """
    try:
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            array.validate(full=True)
        else:
            array.cast(pa.large_string())
        return _always
    except pa.ArrowInvalid:
        return _is_utf8


def _always(text: memoryview) -> bool:
    return True


def _is_utf8(text: memoryview) -> bool:
    try:
        str(text, "utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _check_text(
    text: memoryview, fmt: ChatFormat, decode: _Decode | None, strict: _StrictPath | None
) -> str | None:
    """Steps 2 and 3 of the module docstring."""
    if decode is None:
        return problem_of(text, fmt)
    try:
        decoded = decode(text)
    except Exception:  # noqa: BLE001 - the typed shape didn't fit: take the reference path
        return problem_of(text, fmt)
    # The decoder returns a list of messages or the struct that holds one.
    messages = decoded if isinstance(decoded, list) else decoded.messages
    contents = [m.content for m in messages]
    if strict is None:
        return judge([m.role for m in messages], contents, fmt, is_blank)
    return strict.judge_read(tuple(m.role for m in messages), contents)


@lru_cache(maxsize=32)
def typed_decoder(role_key: str, content_key: str) -> _Decode | None:
    """A decoder of `[{role, content}, ...]` or `{"messages": [...]}` into structs, or None (the
    role and content keys are one). It is the batch checker's own parse of the core check (other keys
    skipped), public so that the benchmark can time it as the floor of a check."""
    if role_key == content_key:
        return None
    # A type made at run time: to mypy, a value (`_Message` describes its instances).
    message: Any = msgspec.defstruct(
        "Message",
        # A missing content and a null one are both blank: one default serves both.
        # Other kinds of content (numbers, objects) take the reference path.
        [("role", str), ("content", str | None | list, None)],
        rename={"role": role_key, "content": content_key},
    )
    wrapper = msgspec.defstruct("Conversation", [("messages", list[message])])
    return msgspec.json.Decoder(list[message] | wrapper).decode


class _Unknown(Enum):
    UNKNOWN = 0


_UNKNOWN: Final = _Unknown.UNKNOWN
"""A sequence of roles not judged yet."""

_ROLE, _CONTENT = attrgetter("role"), attrgetter("content")


class _StrictPath:
    """The strict decoder of step 1, and the rules in two groups (see the module docstring)."""

    MAX_VERDICTS = 10_000
    """Sequences of roles remembered; past that, new sequences are judged each time."""

    def __init__(self, fmt: ChatFormat) -> None:
        message: Any = msgspec.defstruct(  # a type made at run time, as in `typed_decoder`
            "StrictMessage",
            # An empty content is left to the next steps: here, a content is blank only when all space.
            [("role", Literal[fmt.roles]), ("content", Annotated[str, msgspec.Meta(min_length=1)])],
            rename={"role": fmt.role_key, "content": fmt.content_key},
            gc=False,
        )
        wrapper = msgspec.defstruct("StrictConversation", [("messages", list[message])])
        self.decode: _Decode = msgspec.json.Decoder(list[message] | wrapper).decode
        self.fmt = fmt
        rules = active_rules(fmt)
        self.role_rules = tuple(rule for rule in rules if not rule.reads_contents)
        self.content_rules = rules[len(self.role_rules) :]
        self.verdicts: dict[tuple[str, ...], str | None] = {}

    @staticmethod
    @lru_cache(maxsize=32)
    def of(fmt: ChatFormat) -> _StrictPath | None:
        """The strict path of a core `fmt`, or None when its keys can't make one, or
        when a rule that reads the contents comes before one that doesn't (a verdict
        on the roles alone would then not be the first code)."""
        if fmt.role_key == fmt.content_key or not _contents_last(active_rules(fmt)):
            return None
        return _StrictPath(fmt)

    def verdict(self, roles: tuple[str, ...]) -> str | None:
        """The code of the first rule that reads the roles only and applies.

        It is remembered for sequences of allowed roles only: those are short strings,
        while the sequences of other roles are as many and as long as the data makes them.
        """
        code = self.verdicts.get(roles, _UNKNOWN)
        if code is _UNKNOWN:
            code = first_code(self.role_rules, Conversation(roles, (), self.fmt, is_blank))
            if len(self.verdicts) < self.MAX_VERDICTS and self.fmt.role_set.issuperset(roles):
                self.verdicts[roles] = code
        return code

    def code(self, text: memoryview, otherwise: Callable[[memoryview], str | None]) -> str | None:
        """The code of one text: `judge` of what the strict decoder accepts, `otherwise(text)` else."""
        try:
            decoded = self.decode(text)
        except Exception:  # noqa: BLE001 - not the common case: the next steps decide
            return otherwise(text)
        return self.judge(decoded)

    def judge(self, decoded: _Decoded) -> str | None:
        """The code of one conversation the strict decoder accepted (string contents)."""
        messages = decoded if isinstance(decoded, list) else decoded.messages
        roles = tuple(map(_ROLE, messages))
        code = self.verdict(roles)
        if code is None and self.content_rules:
            contents = list(map(_CONTENT, messages))
            # `is_blank` of the strings this decoder accepts, without a call per content.
            if "" in contents or any(map(str.isspace, contents)):
                return self.judge_read(roles, contents)
        return code

    def codes(self, offsets: list[int], data: memoryview, otherwise: Callable[[memoryview], str | None]) -> list[str | None]:
        """The code of each text `data[offsets[i]:offsets[i + 1]]`: `judge` of what the strict decoder
        accepts, `otherwise(text)` for the rest. One loop with everything it calls bound locally:
        the per-conversation cost is the decoding, a tuple of roles and a dictionary lookup."""
        decode, verdicts, verdict, judge_read = self.decode, self.verdicts, self.verdict, self.judge_read
        content_rules, isspace, unknown = bool(self.content_rules), str.isspace, _UNKNOWN
        codes: list[str | None] = []
        append = codes.append
        for start, end in itertools.pairwise(offsets):
            text = data[start:end]
            try:
                decoded = decode(text)
            except Exception:  # noqa: BLE001 - not the common case: the next steps decide
                append(otherwise(text))
                continue
            messages = decoded if type(decoded) is list else decoded.messages  # type: ignore[union-attr]
            roles = tuple(map(_ROLE, messages))
            code = verdicts.get(roles, unknown)
            if code is unknown:
                code = verdict(roles)
            if code is None and content_rules and any(map(isspace, map(_CONTENT, messages))):
                code = judge_read(roles, list(map(_CONTENT, messages)))
            append(code)
        return codes

    def judge_read(self, roles: tuple[str, ...], contents: list[Any]) -> str | None:
        """The code of a conversation read as role strings and contents of any kind."""
        code = self.verdict(roles)
        if code is None and self.content_rules:
            return first_code(self.content_rules, Conversation(roles, contents, self.fmt, is_blank))
        return code


def _contents_last(rules: Sequence[Rule]) -> bool:
    """Do the rules that read the contents all come after those that don't?"""
    reads = [rule.reads_contents for rule in rules]
    return reads == sorted(reads)
