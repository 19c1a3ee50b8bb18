"""A plain reference of the check, written from the documented rules alone, to test chatgate against.

It shares no code with chatgate (the standard library's `json` only) and is meant
to be read rather than run fast: each rule is written out once, in the order of
the codes. It knows the nine core codes and the core options (roles, alternate,
first_role, last_role, allow_empty, role_key, content_key, na_pass), and the
trainers' options of issue 15 (min_messages, require_roles, content_types,
weight_key, allowed_keys, role_map, legacy_functions, and the rules of content
parts and images: part_types, image_data_urls, max_image_bytes, image_roles,
max_images), on JSON text (str or UTF-8 bytes) and on native values (lists,
tuples, NumPy arrays, mappings). Tool calling, Harmony, ShareGPT and the profiles
are not in it.

    >>> plain_problem('[{"role": "user", "content": "Hi"}, {"role": "bot", "content": ""}]')
    'unknown_role'

One thing the rules leave to the implementation: JSON nested very deeply. Valid
JSON up to `SURELY_READ` levels deep is read; deeper than `SURELY_REFUSED` levels
it is `not_messages`; in between, either answer is right (`plain_problems` gives
both, `plain_problem` raises).
"""

from __future__ import annotations

import json
import numbers
import re
import sys
from collections.abc import Mapping
from contextlib import contextmanager
from types import SimpleNamespace

CODES = (
    "not_messages",
    "no_messages",
    "too_few_messages",
    "bad_message",
    "unknown_key",
    "bad_content_type",
    "bad_image_url",
    "image_too_large",
    "bad_weight",
    "bad_function_call",
    "unknown_role",
    "image_role",
    "system_position",
    "missing_role",
    "first_role",
    "not_alternating",
    "last_role",
    "empty_content",
    "too_many_images",
)
"""The codes this reference knows, in the order they are checked."""

TRAINER_OPTIONS = {
    "min_messages": None,
    "require_roles": (),
    "content_types": "any",
    "weight_key": None,
    "allowed_keys": None,
    "role_map": None,
    "legacy_functions": False,
    "part_types": None,
    "image_data_urls": False,
    "max_image_bytes": None,
    "image_roles": None,
    "max_images": None,
}
"""The options beyond the core ones, with their defaults (which turn their rules off)."""

SURELY_READ = 1000
SURELY_REFUSED = 1500


class Ambiguous(Exception):
    """The value is JSON nested so deeply that refusing it and reading it are both right."""


def plain_problem(value, **options):
    """The code of one value under the core options, or None when it is well formed."""
    answers = plain_problems(value, **options)
    if len(answers) != 1:
        raise Ambiguous(answers)
    return next(iter(answers))


def plain_problems(
    value,
    *,
    roles=("system", "user", "assistant"),
    alternate=True,
    first_role=None,
    last_role=None,
    allow_empty=False,
    role_key="role",
    content_key="content",
    na_pass=False,
    **trainer_options,
):
    """The set of right answers for one value: one code (or None), or two for deep JSON."""
    unknown = set(trainer_options) - set(TRAINER_OPTIONS)
    if unknown:
        raise TypeError(f"the plain reference doesn't know {sorted(unknown)}")
    if is_missing(value):
        return {None if na_pass else "not_messages"}
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        depth = nesting_depth(value)
        if depth > SURELY_REFUSED:
            return {"not_messages"}
        value = read_json(value)
        if value is NOT_JSON:
            return {"not_messages"}
        answers = set()
        if depth > SURELY_READ:
            answers.add("not_messages")
    else:
        answers = set()
    options = {
        "roles": list(roles),
        "alternate": alternate,
        "first_role": first_role,
        "last_role": last_role,
        "allow_empty": allow_empty,
        "role_key": role_key,
        "content_key": content_key,
        **TRAINER_OPTIONS,
        **trainer_options,
    }
    if options["legacy_functions"] and "function" not in options["roles"]:
        options["roles"].append("function")
    answers.add(problem_of_value(value, **options))
    return answers


# --- Missing values ------------------------------------------------------------------------


def is_missing(value):
    """None, NaN (any kind of number), pandas' NA and NaT."""
    if value is None:
        return True
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    if not isinstance(value, numbers.Number):
        return False
    try:
        return bool(value != value)  # noqa: PLR0124 - true of NaN only
    except ArithmeticError:  # a signalling Decimal NaN refuses to be compared
        return True


# --- JSON text -------------------------------------------------------------------------------

NOT_JSON = object()
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def nesting_depth(text):
    """How deeply the brackets of a JSON text nest (strings skipped)."""
    if not isinstance(text, str):
        text = bytes(text).decode("utf-8", "replace")
    depth = deepest = 0
    for char in _STRING.sub("", text):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def _read_int(digits):
    """An integer as an int (weights must be ints), or as a float when it is too long for
    Python to read as one (it is a number all the same)."""
    return int(digits) if len(digits.lstrip("-")) < 4000 else float(digits)


@contextmanager
def _deep_recursion():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + 4 * SURELY_REFUSED)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def read_json(text):
    """The value of a JSON text, or NOT_JSON: bytes must be UTF-8 (no byte order mark),
    NaN and Infinity are not JSON, and neither is a string holding half a surrogate pair."""
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            return NOT_JSON
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the text itself
        return NOT_JSON
    try:
        with _deep_recursion():
            value = json.loads(text, parse_int=_read_int, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return NOT_JSON
    return NOT_JSON if _has_lone_surrogate(value) else value


def _has_lone_surrogate(value):
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= char <= "\udfff" for char in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


# --- The rules -------------------------------------------------------------------------------


def is_list(value):
    """A list of messages may be a list, a tuple or a NumPy array (not a zero-dimensional one)."""
    if isinstance(value, (list, tuple)):
        return True
    return type(value).__name__ == "ndarray" and value.ndim >= 1


def is_blank(content):
    """No content: missing, a blank string (`str.strip()`), or parts none of which is an
    image or a text part with text."""
    if isinstance(content, str):
        return content.strip() == ""
    if is_missing(content):
        return True
    if is_list(content):
        return all(is_blank_text_part(part) for part in content)
    return False


def is_blank_text_part(part):
    if not isinstance(part, Mapping):
        return False
    kind = part.get("type")
    if not isinstance(kind, str) or kind != "text":
        return False
    if "text" not in part:
        return True
    text = part["text"]
    if isinstance(text, str):
        return text.strip() == ""
    return is_missing(text)


def problem_of_value(value, **options):
    """The first code that applies to a decoded value, in the order of `CODES`."""
    o = SimpleNamespace(**options)
    if isinstance(value, Mapping):
        value = value.get("messages")
    if not is_list(value):
        return "not_messages"
    messages = list(value)

    if len(messages) == 0:
        return "no_messages"

    if o.min_messages is not None and len(messages) < o.min_messages:
        return "too_few_messages"

    for message in messages:
        if not isinstance(message, Mapping):
            return "bad_message"
        if o.role_key not in message or not isinstance(message[o.role_key], str):
            return "bad_message"
    # Aliases are renamed before any rule reads a role.
    aliases = o.role_map or {}
    message_roles = [aliases.get(message[o.role_key], message[o.role_key]) for message in messages]
    contents = [message.get(o.content_key, ABSENT) for message in messages]

    code = (
        message_rule(messages, message_roles, contents, o)
        or role_rule(message_roles, contents, o)
        or order_rule(message_roles, o)
    )
    if code:
        return code

    if not o.allow_empty:
        for message, content in zip(messages, contents):
            if o.legacy_functions and function_call_of(message) == "named":
                continue  # the call is the message's content
            if content is ABSENT or is_blank(content):
                return "empty_content"

    if o.max_images is not None and sum(count_images(content) for content in contents) > o.max_images:
        return "too_many_images"

    return None


# --- The trainers' rules ------------------------------------------------------------------------

ABSENT = object()
"""A key a message doesn't hold."""


def given(message, key):
    """A message's value under `key`, or ABSENT: a key whose value is null counts as absent."""
    if key not in message or is_missing(message[key]):
        return ABSENT
    return message[key]


def message_rule(messages, message_roles, contents, o):
    """The codes read from each message alone, before its role is judged: keys, kinds of
    content, images' data URLs and sizes, weights, function calls."""
    if o.allowed_keys is not None:
        allowed = set(o.allowed_keys) | {o.role_key, o.content_key}
        for message in messages:
            if any(key not in allowed for key in message if given(message, key) is not ABSENT):
                return "unknown_key"
    checks_kinds = o.content_types != "any" or o.part_types is not None
    if checks_kinds and not all(content_allowed(content, o) for content in contents):
        return "bad_content_type"
    if o.image_data_urls:
        for content in contents:
            if not all(is_image_data_url(url) for url in image_urls(content)):
                return "bad_image_url"
    if o.max_image_bytes is not None:
        for content in contents:
            for url in image_urls(content):
                size = data_url_size(url)
                if size is not None and size > o.max_image_bytes:
                    return "image_too_large"
    if o.weight_key is not None:
        for message in messages:
            weight = given(message, o.weight_key)
            is_integer = isinstance(weight, numbers.Integral) and not isinstance(weight, bool)
            if weight is not ABSENT and not (is_integer and weight in (0, 1)):
                return "bad_weight"
    if o.legacy_functions:
        for message, role in zip(messages, message_roles):
            call = function_call_of(message)
            if call == "malformed" or (call == "named" and role != "assistant"):
                return "bad_function_call"
    return None


def role_rule(message_roles, contents, o):
    """The codes of each message's role: allowed, allowed to hold images."""
    for role in message_roles:
        if role not in o.roles:
            return "unknown_role"
    if o.image_roles is not None:
        for role, content in zip(message_roles, contents):
            if role not in o.image_roles and count_images(content) > 0:
                return "image_role"
    return None


def order_rule(message_roles, o):
    """The codes of the order of the roles."""
    if "system" in o.roles:
        for index, role in enumerate(message_roles):
            if role == "system" and index != 0:
                return "system_position"

    for role in o.require_roles:
        if role not in message_roles:
            return "missing_role"

    # The turns are the messages after a leading system message.
    turns = message_roles[1:] if message_roles[0] == "system" else message_roles

    if o.first_role is not None and (len(turns) == 0 or turns[0] != o.first_role):
        return "first_role"

    if o.alternate:
        for previous, role in zip(turns, turns[1:]):
            if previous == role:
                return "not_alternating"

    if o.last_role is not None and message_roles[-1] != o.last_role:
        return "last_role"
    return None


def function_call_of(message):
    """A message's legacy `function_call`: "none" (absent or null), "named" (a mapping with a
    non-empty string name) or "malformed"."""
    call = given(message, "function_call")
    if call is ABSENT:
        return "none"
    if isinstance(call, Mapping) and isinstance(call.get("name"), str) and call["name"] != "":
        return "named"
    return "malformed"


def content_allowed(content, o):
    """Is a content of a kind the options allow? No content at all is empty_content's business."""
    if content is ABSENT or is_missing(content) or isinstance(content, str):
        return True
    if is_list(content):
        if o.content_types == "text":
            return False
        return all(part_allowed(part, o.part_types) for part in content)
    return o.content_types == "any"


def part_allowed(part, part_types):
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        return False
    if part_types is None:
        return True
    if part["type"] not in part_types:
        return False
    return part["type"] != "text" or isinstance(part.get("text"), str)


def image_parts_of(content):
    if isinstance(content, str) or not is_list(content):
        return []
    return [part for part in content if isinstance(part, Mapping) and part.get("type") in ("image", "image_url")]


def count_images(content):
    return len(image_parts_of(content))


def image_urls(content):
    """The URL of each image_url part (None where its `image_url` isn't a mapping with a `url`)."""
    urls = []
    for part in image_parts_of(content):
        if part["type"] == "image_url":
            holder = part.get("image_url")
            urls.append(holder.get("url") if isinstance(holder, Mapping) else None)
    return urls


BASE64_ALPHABET = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def is_image_data_url(url):
    """`data:image/jpeg;base64,` (or png, webp) and a payload of standard base64: its alphabet,
    at most two `=` at its end, a length that is a multiple of 4, at least 4."""
    if not isinstance(url, str):
        return False
    for kind in ("jpeg", "png", "webp"):
        prefix = f"data:image/{kind};base64,"
        if url.startswith(prefix):
            payload = url[len(prefix):]
            body = payload[: len(payload) - padding_of(payload)]
            return len(payload) >= 4 and len(payload) % 4 == 0 and set(body) <= BASE64_ALPHABET
    return False


def padding_of(payload):
    """How many `=` end a base64 payload (counted up to two)."""
    if payload.endswith("=="):
        return 2
    if payload.endswith("="):
        return 1
    return 0


def data_url_size(url):
    """The bytes a base64 data URL holds (3 per 4 characters of its payload, less one per
    padding `=`), or None when `url` isn't one (`data:...;base64,` before the first comma)."""
    if not isinstance(url, str) or not url.startswith("data:") or "," not in url:
        return None
    head, payload = url.split(",", 1)
    if not head.endswith(";base64"):
        return None
    return (3 * len(payload)) // 4 - padding_of(payload)
