"""A plain reference of the check, written from the documented rules alone, to test chatgate against.

It shares no code with chatgate (the standard library only, no chatgate import)
and is meant to be read rather than run fast: each rule is written out once, in
the order of the codes. Its sources are the seeds (the `col_vals_chat_format()`
reference, the conversation sample type, TRL's dataset formats and types),
DESIGN.md, the README and chatgate's docstrings and phrase tables.

- `values`: missing values, JSON text, lists, blank contents;
- `options`: the options, their defaults and the profiles (sample, openai,
  together, torchtune);
- `parts`: contents of parts, images, data URLs, the row's images;
- `tools`: tool calls, the row's declared functions, answers, turns;
- `conversation`: the rules of one conversation, in the order of the codes, each
  with the places it applies (`plain_answers`: the code and the message `locate` gives);
- `datasets`: the rows of the TRL dataset types (conversational and standard);
- `openai_preference`: OpenAI's and Together's preference rows.

    >>> plain_problem('[{"role": "user", "content": "Hi"}, {"role": "bot", "content": ""}]')
    'unknown_role'
    >>> plain_locate([{"role": "user", "content": "Hi"}, {"role": "tool", "content": "x"}], tools=True)
    ('orphan_tool', 1)

Where the documented rules allow more than one answer (JSON nested between
`SURELY_READ` and `SURELY_REFUSED` levels; the readings the docs leave open, listed
in `datasets`), the `plain_*` functions that return sets give every right answer,
and those that return one answer raise `Ambiguous`.
"""

from __future__ import annotations

from .conversation import ORDER, judge, messages_of, plain_answers
from .datasets import plain_row_answers, plain_row_problems
from .options import OPTIONS, PROFILES, TRAINER_OPTIONS, resolve
from .parts import count_images, is_image_data_url
from .values import (
    ABSENT,
    BAD,
    NOT_JSON,
    SURELY_READ,
    SURELY_REFUSED,
    Ambiguous,
    is_blank,
    is_list,
    is_missing,
    nesting_depth,
    read_json,
)

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
"""The codes of the core check and the trainers' options (issue 15), in the order they are checked
(`ORDER` has every code)."""


def plain_problems(value, **options):
    """The set of right codes for one value (None for a passing one): one, or two for deep JSON."""
    return {None if answer is None else answer[0] for answer in plain_answers(value, **options)}


def plain_problem(value, **options):
    """The code of one value, or None when it is well formed."""
    answers = plain_problems(value, **options)
    if len(answers) != 1:
        raise Ambiguous(answers)
    return next(iter(answers))


def plain_locate(value, **options):
    """(code, message index or None) of one value, or None when it is well formed."""
    answers = plain_answers(value, **options)
    if len(answers) != 1:
        raise Ambiguous(answers)
    return next(iter(answers))


__all__ = [
    "ABSENT",
    "BAD",
    "CODES",
    "NOT_JSON",
    "OPTIONS",
    "ORDER",
    "PROFILES",
    "SURELY_READ",
    "SURELY_REFUSED",
    "TRAINER_OPTIONS",
    "Ambiguous",
    "count_images",
    "is_blank",
    "is_image_data_url",
    "is_list",
    "is_missing",
    "judge",
    "messages_of",
    "nesting_depth",
    "plain_answers",
    "plain_locate",
    "plain_problem",
    "plain_problems",
    "plain_row_answers",
    "plain_row_problems",
    "read_json",
    "resolve",
]
