"""Rows of the TRL dataset types, and a conversation column with its row's tools and images.

Written from the seed on TRL's dataset formats and types (002), the README's table of
dataset types and `chatgate.rules.datasets`' docstring:

- a value is conversational when it is a list of messages (native, or JSON text of a
  list or of an object such as `{"messages": [...]}`), standard when it is other
  text; a row that mixes both is `mixed_format`; a row of missing values only (or of
  values neither text nor conversations) is read as conversational;
- standard values are non-empty strings (`not_text`, `empty_text`); conversational
  ones are lists of messages (`not_messages`); a label is true or false (`not_label`);
  a missing value is one of those unless `na_pass=True`, which skips what needs it;
- a prompt ends with a user turn (or a tool turn with tools=True), a completion
  (chosen, rejected) holds assistant (and tool) turns only, and each whole
  conversation (prompt + completion, prompt + chosen, prompt + rejected) passes the
  chat check, with the row's tools and images;
- chosen and rejected differ (`same_pair`); an implicit prompt is their shared start,
  which ends with a user turn, after which each goes on (`implicit_prompt`).

Where a problem is (`locate_row`): a problem of the row as a whole (`mixed_format`,
`same_pair`, `implicit_prompt`) in no column; a value's own code in its column at no
message; a part's problem in the column its message is in (the shared prompt of an
implicit preference placed in chosen first); the problems of the first code ordered
column by column, then by message (a value's own problems first).

Where the docs leave a row open, `plain_row_answers` gives each reading's answer: a
prompt-only row's prompt, which the datasets' docstring judges as a whole conversation
but for its last role, may also be read as a prompt only, to which the rules that count
or look for roles in a whole conversation (`min_messages=`, `require_roles=`, the sample's
turns) don't apply.

With `standard_parts=True` and `content_types="text"` (strings only), a prompt or completion
that is a list of parts may be refused (`bad_content_type`) or let through as standard_parts
allows: the two options contradict each other there.

An implicit preference whose shared start doesn't end with a user turn (or a tool turn
with tools=True) is `implicit_prompt`, as the README says ("no shared prompt ending on a
user turn, or nothing after it"); each goes on after it with the assistant's turns
(`completion_role`, as the codes' table says of chosen and rejected values).
"""

from __future__ import annotations

from collections.abc import Mapping

from .conversation import (
    COMPLETION,
    ORDER,
    PROMPT,
    RULES,
    WHOLE,
    Conversation,
    judge_all,
    messages_of,
    plain_answers,
)
from .conversation import ends_a_prompt as role_ends_a_prompt
from .options import resolve
from .parts import row_images
from .tools import declared_names
from .values import NOT_JSON, is_blank, is_list, is_missing, is_text, plain, read_json

FIELDS = {
    "language_modeling": ("messages",),
    "prompt_only": ("prompt",),
    "prompt_completion": ("prompt", "completion"),
    "preference": ("prompt", "chosen", "rejected"),
    "implicit_preference": ("chosen", "rejected"),
    "unpaired_preference": ("prompt", "completion", "label"),
}

TYPE_COLUMNS = {"text", "messages", "conversations", "prompt", "completion", "chosen", "rejected", "label"}
PREFERENCE_COLUMNS = {"input", "preferred_output", "non_preferred_output"}


def plain_dataset_type(columns):
    """The type a table's columns make, or None (none, or several). Columns outside `TYPE_COLUMNS`
    and OpenAI's preference columns are extra, as is a column `input` outside those three."""
    present = set(columns)
    if present & PREFERENCE_COLUMNS == PREFERENCE_COLUMNS:
        return "openai_preference" if not present & TYPE_COLUMNS else None
    present &= TYPE_COLUMNS | PREFERENCE_COLUMNS - {"input"}
    if present in ({"text"}, {"messages"}, {"conversations"}):
        return "language_modeling"
    for kind, fields in FIELDS.items():
        if kind != "language_modeling" and present == set(fields):
            return kind
    return None


# --- A conversation column, with the row's tools and images ---------------------------------------


def plain_chat_row(row, column="messages", tools_column=None, images_column=None, **options):
    """The right answers for a row of a conversation column: (code, column, message) triples
    or None. `bad_tools` is in the tools column; every other problem in the conversation's."""
    o = resolve(options)
    declared = declared_names(row.get(tools_column)) if tools_column and o.tools and tools_column in row else None
    images = row_images(row.get(images_column)) if images_column and images_column in row else None
    media = None
    if o.audios_column is not None or o.videos_column is not None:  # each named column, present or not
        media = tuple(None if name is None else row_images(row.get(name)) for name in (o.audios_column, o.videos_column))
    answers = set()
    for answer in plain_answers(row[column], declared, images, media, **options):
        if answer is None:
            answers.add(None)
        else:
            code, message = answer
            answers.add((code, tools_column if code == "bad_tools" else column, message))
    return answers


# --- The rows of a dataset type ---------------------------------------------------------------------


ANSWERS = ("completion", "chosen", "rejected")
"""The fields that may be one message object with single_message_answers=True (where a prompt is
given apart: not an implicit preference's)."""

PARTS_FIELDS = ("prompt", "completion")
"""The fields that may be a list of content parts, as standard text (`standard_parts=True`)."""


def is_parts(value, o):
    """A list of content parts rather than of messages: some item is a mapping with a string
    `type`, and none is a mapping with a role."""
    items = [item for item in value if isinstance(item, Mapping)] if is_list(value) else []
    return any(isinstance(i.get("type"), str) for i in items) and not any(o.role_key in i for i in items)


def classify(value, field, o):
    """("missing" | "conv" | "text" | "parts" | "broken" | "other", decoded value): JSON text of a
    list or an object is a conversation (or, in a prompt or completion with standard_parts=True,
    a list of parts); text that starts like JSON but isn't JSON is broken; other text is text."""
    if is_missing(value):
        return "missing", None
    if is_text(value):
        decoded = read_json(value)
        if isinstance(decoded, (list, dict)):
            value = decoded
        elif decoded is NOT_JSON and str(value).lstrip()[:1] in ("[", "{"):
            return "broken", value
        else:
            return "text", value
    elif not (is_list(value) or isinstance(value, Mapping)):
        return "other", value
    if o.standard_parts and field in PARTS_FIELDS and is_parts(value, o):
        return "parts", value
    return "conv", value


class Found:
    """The problems of a row, by code: each with its column (None: the row) and message."""

    def __init__(self, columns, tools_column):
        self.columns = [*columns, tools_column]
        self.tools_column = tools_column
        self.sites = {}

    def add(self, code, column=None, message=None):
        self.sites.setdefault(code, []).append((column, message))

    def add_judged(self, found, placements):
        """A judged list's first code and places; `placements` maps an index of the list to
        (column, index in that column)."""
        if found is None:
            return
        code, sites = found
        for site in sites:
            if code == "bad_tools":  # the row's tools column, not a message
                self.add(code, self.tools_column)
            else:
                self.add(code, *(placements(site) if site is not None else (placements(None)[0], None)))

    def first(self):
        """(code, column, message) of the first code, at its first place, or None."""
        if not self.sites:
            return None
        code = min(self.sites, key=ORDER.index)

        def order(site):
            column, message = site
            rank = -1 if column is None else self.columns.index(column)
            return rank, -1 if message is None else message

        return (code, *min(self.sites[code], key=order))


def _placed(column, offset=0):
    return lambda i: (column, None if i is None else i - offset)


def _split(lengths):
    """Placements for a list made of several fields' lists, in order: (field, length) pairs."""

    def place(i):
        if i is None:
            return lengths[-1][0], None
        for field, length in lengths:
            if i < length:
                return field, i
            i -= length
        raise IndexError(i)

    return place


PART_RULES = ("bad_content_type", "bad_image_url", "image_too_large", "image_role", "too_many_images")


def parts_codes(parts, role, o, reading):
    """The codes of a standard list of content parts, judged as the content of one message of
    `role` (the prompt's the user's, the completion's the assistant's). With content_types="text"
    (strings only), the "parts" reading lets standard_parts' lists of parts through."""
    codes = ["empty_text"] if is_blank(parts, o.text_key) else []
    if reading == "parts" and o.content_types == "text":
        o = resolve({**o.given, "content_types": "text_or_parts"})
    c = Conversation([{o.role_key: role, o.content_key: list(parts)}], o)
    return codes + [code for code in PART_RULES if RULES[code](c)]


def standard_row(kind, fields, values, kinds, o, found, reading):
    for field in fields:
        if field == "label":
            continue
        value = values[field]
        if kinds[field] == "missing":
            if not o.na_pass:
                found.add("not_text", field)
        elif kinds[field] == "parts":
            for code in parts_codes(value, "user" if field == "prompt" else "assistant", o, reading):
                found.add(code, field)
        elif not isinstance(value, str):
            found.add("not_text", field)
        elif value.strip() == "":
            found.add("empty_text", field)
    chosen, rejected = values.get("chosen"), values.get("rejected")
    if kind in ("preference", "implicit_preference") and isinstance(chosen, str) and isinstance(rejected, str):
        if chosen == rejected:
            found.add("same_pair")
        shared = 0
        while shared < min(len(chosen), len(rejected)) and chosen[shared] == rejected[shared]:
            shared += 1
        if kind == "implicit_preference" and (shared == 0 or shared in (len(chosen), len(rejected))):
            found.add("implicit_prompt")


def conversational_row(kind, fields, values, kinds, options, found, context, reading):
    o = resolve(options)
    messages = {}
    for field in fields:
        if field == "label":
            continue
        if kinds[field] == "missing":
            if not o.na_pass:
                found.add("not_messages", field)
            continue
        if kinds[field] in ("text", "parts"):
            continue  # a value of the other format: mixed_format, found already
        single = o.single_message_answers and field in ANSWERS and kind != "implicit_preference"
        listed = messages_of(values[field], o, single) if kinds[field] == "conv" else None
        if listed is None:
            found.add("not_messages", field)
        else:
            messages[field] = listed
    declared, images = context
    if kind == "implicit_preference":
        implicit_row(messages, o, found, context)
        return
    prompt = messages.get("prompt")
    if kind == "prompt_only":
        if prompt is not None:
            found.add_judged(judge_all(prompt, o, PROMPT, declared, images), _placed("prompt"))
        if prompt is not None and reading == "whole":  # judged whole, but for its last role
            whole = resolve({**options, "last_role": None})
            found.add_judged(judge_all(prompt, whole, WHOLE, declared, images), _placed("prompt"))
        return
    if prompt is not None:
        found.add_judged(judge_all(prompt, o, PROMPT), _placed("prompt"))
    for answer in ANSWERS:
        if answer not in messages:
            continue
        found.add_judged(judge_all(messages[answer], o, COMPLETION), _placed(answer))
        if prompt is not None:
            whole = prompt + messages[answer]
            place = _split([("prompt", len(prompt)), (answer, len(messages[answer]))])
            found.add_judged(judge_all(whole, o, WHOLE, declared, images), place)
    both = "chosen" in messages and "rejected" in messages
    if kind == "preference" and both and plain(messages["chosen"]) == plain(messages["rejected"]):
        found.add("same_pair")


def shared_prompt(chosen, rejected):
    """How many leading messages chosen and rejected share (as plain values)."""
    shared = 0
    while shared < min(len(chosen), len(rejected)) and plain(chosen[shared]) == plain(rejected[shared]):
        shared += 1
    return shared


def implicit_row(messages, o, found, context):
    declared, images = context
    for field in ("chosen", "rejected"):
        if field in messages:
            found.add_judged(judge_all(messages[field], o, WHOLE, declared, images), _placed(field))
    if "chosen" not in messages or "rejected" not in messages:
        return
    chosen, rejected = messages["chosen"], messages["rejected"]
    if plain(chosen) == plain(rejected):
        found.add("same_pair")
    shared = shared_prompt(chosen, rejected)
    if shared == 0 or shared in (len(chosen), len(rejected)) or not ends_a_prompt(chosen[shared - 1], o):
        found.add("implicit_prompt")  # README: "no shared prompt ending on a user turn, or nothing after it"
        return
    for field, continuation in (("chosen", chosen[shared:]), ("rejected", rejected[shared:])):
        judged = judge_all(continuation, o, COMPLETION)
        found.add_judged(judged, lambda i, field=field: (field, None if i is None else i + shared))


def ends_a_prompt(message, o):
    role = message.get(o.role_key) if isinstance(message, Mapping) else None
    return isinstance(role, str) and role_ends_a_prompt(o.aliases.get(role, role), o)


STANDARD_KINDS = {"text", "parts", "broken"}


def row_found(row, kind, options, reading, pinned="auto", tools_column="tools", images_column="images"):
    """The problems of a row. `pinned`: "auto" reads the row in the format of its values (both:
    `mixed_format`); "conversational" or "standard" wants every value of that format (a value of
    the other is `mixed_format` in its column; broken JSON text is `not_messages`)."""
    o = resolve(options)
    o.given = options
    fields = FIELDS[kind]
    found = Found(fields, tools_column)
    declared = declared_names(row.get(tools_column)) if o.tools and tools_column in row else None
    images = row_images(row.get(images_column)) if images_column in row else None
    values = {field: row.get(field) for field in fields}
    classified = {field: classify(values[field], field, o) for field in fields if field != "label"}
    kinds = {field: kind for field, (kind, _) in classified.items()}
    decoded = {field: value for field, (_, value) in classified.items()}
    if pinned == "auto":
        present = set(kinds.values())
        if present & STANDARD_KINDS and "conv" in present:
            found.add("mixed_format")
            pinned = None
        else:
            pinned = "standard" if present & STANDARD_KINDS else "conversational"
    if pinned == "standard":
        for field, (kind_of, _) in classified.items():
            if kind_of == "conv" and not is_text(values[field]):
                found.add("mixed_format", field)
            elif kind_of in ("conv", "broken"):
                kinds[field], decoded[field] = "text", values[field]
        standard_row(kind, fields, decoded, kinds, o, found, reading)
    elif pinned == "conversational":
        for field, kind_of in kinds.items():
            if kind_of in ("text", "parts"):
                found.add("mixed_format", field)
        conversational_row(kind, fields, decoded, kinds, options, found, (declared, images), reading)
    label = values.get("label")
    if "label" in fields and not isinstance(label, bool) and not (o.na_pass and is_missing(label)):
        found.add("not_label", "label")
    return found


def plain_row_answers(row, dataset_type=None, pinned="auto", **options):
    """The right answers for one row (column name -> value) of a dataset type (None: detected
    from the row's columns): (code, column, message) triples, or None for a passing row."""
    kind = dataset_type or plain_dataset_type(row)
    if kind == "openai_preference":
        from .openai_preference import plain_preference_answers

        return plain_preference_answers(row, **options)
    if kind == "language_modeling":
        column = next(c for c in ("messages", "conversations", "text") if c in row)
        if column == "text":
            return {standard_text_row(row["text"], resolve(options))}
        return plain_chat_row(row, column, "tools", "images", **options)
    readings = ["docs", "whole"] if kind == "prompt_only" else ["docs"]
    if resolve(options).standard_parts:
        readings.append("parts")
    return {row_found(row, kind, options, r, pinned).first() for r in readings}


def standard_text_row(value, o):
    """A language-modeling row's `text`: a non-empty string (a native conversation there is a
    value of the other format)."""
    if is_missing(value):
        return None if o.na_pass else ("not_text", "text", None)
    if is_list(value) or isinstance(value, Mapping):
        return "mixed_format", "text", None
    if not isinstance(value, str):
        return "not_text", "text", None
    return ("empty_text", "text", None) if value.strip() == "" else None


def plain_row_problems(row, dataset_type=None, pinned="auto", **options):
    """The set of right codes for one row (None for a passing one)."""
    answers = plain_row_answers(row, dataset_type, pinned, **options)
    return {None if answer is None else answer[0] for answer in answers}


__all__ = ["plain_chat_row", "plain_dataset_type", "plain_row_answers", "plain_row_problems"]
