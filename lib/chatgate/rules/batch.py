"""The Arrow batch checker: an array of conversations in, an array of problem codes out.

This is the hot path of every engine. JSON text is decoded by msgspec straight
into small typed structs (a role and a content per message; other keys are
skipped without being decoded), never into dicts or pandas objects, in up to
three steps, each taken only when the one before refuses the value:

1. the strict decoder (the core check only) accepts just the common case: every
   role one of `roles=`, every content a string. Then the code depends on the
   sequence of roles alone (and on blank contents): the judge's verdict on each
   sequence of roles is remembered, so a conversation costs its decoding plus a
   dictionary lookup;
2. the typed decoder takes any role string and string, null, missing or list
   contents, and hands them to `judge`;
3. whatever that refuses (a message without a string role, an object without
   "messages", bad JSON, ...) takes the reference path, which ends in `judge` too.
 What the typed decoder accepts the reference must accept too: keys it
skips are checked for syntax only, so bad UTF-8 is caught here, and the reference
decoder takes huge numbers and deep nesting that msgspec alone would refuse
(`values.parse_json`).
"""

from __future__ import annotations

from functools import lru_cache
from operator import attrgetter
from typing import Literal

import msgspec
import numpy as np
import pyarrow as pa

from .judge import judge
from .reference import problem_of
from .spec import DEFAULT_ROLES, ChatFormat, format_of
from .values import is_blank

_TEXT_TYPES = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
)
_JSON_EXTENSION = getattr(pa, "JsonType", ())


def check_batch(
    array: pa.Array | pa.ChunkedArray,
    *,
    roles=DEFAULT_ROLES,
    alternate: bool = True,
    first_role: str | None = None,
    last_role: str | None = None,
    allow_empty: bool = False,
    role_key: str = "role",
    content_key: str = "content",
    na_pass: bool = False,
    tools: bool = False,
    harmony: bool = False,
    thinking_key: str | None = None,
    sharegpt: bool = False,
    text_key: str = "text",
    image_token: str | None = None,
    profile: str | None = None,
) -> pa.StringArray:
    """The first problem code of each conversation in `array`, null where it passes.

    `array` holds JSON text (string, large_string, binary) or native values
    (list<struct>, struct with "messages", ...). It never raises on a value.
    The keyword arguments are the fields of `ChatFormat`; with only the core ones
    in use, JSON text takes the fast typed decoder, else the reference path.

    >>> import pyarrow as pa
    >>> check_batch(pa.array(['[{"role": "user", "content": "Hi"}]', "[]", None])).to_pylist()
    [None, 'no_messages', 'not_messages']
    """
    fmt = format_of(locals())
    return check_array(array, fmt)


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
        return pa.array(_check_json(array, fmt), pa.string())
    values = array.to_pylist(maps_as_pydicts="lossy") if _has_map(array.type) else array.to_pylist()
    return pa.array([problem_of(value, fmt) for value in values], pa.string())


def check_values(values, fmt: ChatFormat) -> pa.StringArray:
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


def _check_json(array: pa.Array, fmt: ChatFormat) -> list[str | None]:
    """Codes of a string or binary array, read from its buffers without copies."""
    n = len(array)
    if n == 0:
        return []
    _, offsets_buf, data_buf = array.buffers()
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)
    offsets = offsets[array.offset : array.offset + n + 1].tolist()
    data = memoryview(data_buf) if data_buf is not None else memoryview(b"")
    valid = array.is_valid().to_numpy(zero_copy_only=False).tolist() if array.null_count else None
    missing = None if fmt.na_pass else "not_messages"
    # The options of issue #6 read more of each message: they take the reference path.
    decode = _typed_decoder(fmt.role_key, fmt.content_key) if fmt.is_core else None
    strict = _StrictPath.of(fmt) if decode is not None else None
    utf8 = _utf8_checker(array)
    codes: list[str | None] = [None] * n
    for i in range(n):
        if valid is not None and not valid[i]:
            codes[i] = missing
            continue
        text = data[offsets[i] : offsets[i + 1]]
        if not utf8(text):
            codes[i] = "not_messages"
            continue
        if strict is None:
            codes[i] = _check_text(text, fmt, decode)
            continue
        try:
            messages = strict.decode(text)
        except Exception:  # noqa: BLE001 - not the common case: the next steps decide
            codes[i] = _check_text(text, fmt, decode)
            continue
        codes[i] = strict.judge(messages)
    return codes


def _utf8_checker(array: pa.Array):
    """Arrow strings are valid UTF-8; binary values are checked one by one only if some aren't.

    The typed decoder skips unknown keys without validating them, so bad UTF-8 must
    be caught here for both paths to agree.
    """
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return _always
    try:
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


def _check_text(text: memoryview, fmt: ChatFormat, decode) -> str | None:
    if decode is None:
        return problem_of(text, fmt)
    try:
        decoded = decode(text)
    except Exception:  # noqa: BLE001 - the typed shape didn't fit: take the reference path
        return problem_of(text, fmt)
    messages = decoded.messages if isinstance(decoded, msgspec.Struct) else decoded
    roles = [m.role for m in messages]
    contents = [m.content for m in messages]
    return judge(roles, contents, fmt, is_blank)


@lru_cache(maxsize=32)
def _typed_decoder(role_key: str, content_key: str):
    """A decoder of `[{role, content}, ...]` or `{"messages": [...]}` into structs, or None."""
    if role_key == content_key:
        return None
    message = msgspec.defstruct(
        "Message",
        # A missing content and a null one are both blank: one default serves both.
        # Other kinds of content (numbers, objects) take the reference path.
        [("role", str), ("content", str | None | list, None)],
        rename={"role": role_key, "content": content_key},
    )
    wrapper = msgspec.defstruct("Conversation", [("messages", list[message])])
    return msgspec.json.Decoder(list[message] | wrapper).decode


_UNKNOWN = object()
"""A sequence of roles not judged yet."""

_ROLE, _CONTENT = attrgetter("role"), attrgetter("content")


class _StrictPath:
    """Step 1 of the module docstring: the strict decoder and the verdicts on role sequences."""

    MAX_VERDICTS = 10_000
    """Sequences of roles remembered; past that, new sequences are judged each time."""

    def __init__(self, fmt: ChatFormat) -> None:
        message = msgspec.defstruct(
            "StrictMessage",
            [("role", Literal[fmt.roles]), ("content", str)],
            rename={"role": fmt.role_key, "content": fmt.content_key},
        )
        wrapper = msgspec.defstruct("StrictConversation", [("messages", list[message])])
        self.decode = msgspec.json.Decoder(list[message] | wrapper).decode
        self.fmt = fmt
        self.verdicts: dict[tuple[str, ...], str | None] = {}

    @staticmethod
    @lru_cache(maxsize=32)
    def of(fmt: ChatFormat) -> _StrictPath | None:
        """The strict path of a core `fmt`, or None when its keys can't make one."""
        if fmt.role_key == fmt.content_key:
            return None
        return _StrictPath(fmt)

    def judge(self, decoded) -> str | None:
        """The code of one conversation the strict decoder accepted."""
        messages = decoded if isinstance(decoded, list) else decoded.messages
        roles = tuple(map(_ROLE, messages))
        code = self.verdicts.get(roles, _UNKNOWN)
        if code is _UNKNOWN:
            # Non-blank stand-ins: the verdict on the roles alone.
            code = judge(roles, ("x",) * len(roles), self.fmt, is_blank)
            if len(self.verdicts) < self.MAX_VERDICTS:
                self.verdicts[roles] = code
        if code is None and not self.fmt.allow_empty:
            contents = list(map(_CONTENT, messages))
            if "" in contents or any(map(str.isspace, contents)):
                return judge(roles, contents, self.fmt, is_blank)
        return code
