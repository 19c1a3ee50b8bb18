"""The table: every problem code in its order, and the switches its rules name.

The order is the contract (see `codes`): a conversation's (or a row's) code is the first one
of `CODES` that applies anywhere in it. Most entries are rules of a conversation (`Rule`s,
each written once in the module of its room); the others (`Code`s) are decided before a
conversation is read or beside it, by comparing the values of a row: a value's size
(`too_large`), a value that holds no messages (`not_messages`), the standard format and the
dataset types' codes. `RULES` are the rules, in this order: the judge tries them so.

A rule's `when` names the switches it needs (`SWITCHES`): a rule is tried only when they are
all on (`switches`), so a format's active rules are chosen once (`judge.active_rules`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..conversation import core
from ..conversation.conversation import COMPLETION, PROMPT, WHOLE
from ..conversation.rule import Code, Rule
from ..conversation.spec import ChatFormat
from ..formats import harmony, parts, tools
from ..trainers import mistral, tokens
from ..trainers import rules as trainers

# --- The codes decided outside the rules of a conversation ------------------------------------

too_large = Code(
    "too_large",
    ("is too large to read", "are too large to read"),
    "max_value_bytes=",
    "the value is larger than `max_value_bytes=` (its JSON text's bytes; see `sizes`): it isn't read",
)
not_messages = Code(
    "not_messages",
    ("isn't a list of messages", "aren't lists of messages"),
    "core",
    "the value isn't a list of messages",
)
mixed_format = Code(
    "mixed_format",
    ("mixes conversational and standard values", "mix conversational and standard values"),
    "dataset types",
    "a row mixes conversational and standard values, or a value isn't of the format the check expects",
)
not_text = Code(
    "not_text",
    ("has a field that isn't text", "have a field that isn't text"),
    "dataset types",
    "a standard-format field isn't a string (or is missing)",
)
not_label = Code(
    "not_label",
    ("has a label that isn't true or false", "have a label that isn't true or false"),
    "unpaired preference",
    "`label` isn't true or false",
)
bad_input = Code(
    "bad_input",
    ("has an input that isn't an object holding messages", "have an input that isn't an object holding messages"),
    "openai_preference",
    "`input` isn't an object holding `messages`, or its `parallel_tool_calls` isn't true or false",
)
output_count = Code(
    "output_count",
    ("has an output that isn't exactly one message", "have an output that isn't exactly one message"),
    "openai_preference",
    "`preferred_output` or `non_preferred_output` isn't a list of exactly one message",
)
empty_text = Code(
    "empty_text",
    ("has an empty text field", "have an empty text field"),
    "dataset types",
    "a standard-format string is empty or only whitespace",
)
same_pair = Code(
    "same_pair",
    ("has identical chosen and rejected", "have identical chosen and rejected"),
    "preference types",
    "chosen and rejected are identical",
)
implicit_prompt = Code(
    "implicit_prompt",
    ("has chosen and rejected that don't share a prompt", "have chosen and rejected that don't share a prompt"),
    "implicit preference",
    "chosen and rejected share no prompt, or one doesn't continue after it",
)

VALUE_CODES: tuple[Code, ...] = (too_large, not_messages)
"""The codes decided on a value before it is read as a conversation; the other `Code`s are a dataset row's."""

# --- The table --------------------------------------------------------------------------------

CODES: tuple[Code | Rule, ...] = (
    too_large,
    not_messages,
    mixed_format,
    not_text,
    not_label,
    bad_input,
    output_count,
    core.no_messages,
    trainers.too_few_messages,
    empty_text,
    core.bad_message,
    trainers.unknown_key,
    parts.bad_content_type,
    parts.bad_image_url,
    parts.image_too_large,
    trainers.bad_weight,
    tools.bad_tool_call,
    trainers.bad_function_call,
    mistral.mistral_tool_call,
    harmony.bad_thinking,
    tools.bad_tools,
    trainers.tool_turn,
    core.unknown_role,
    parts.image_role,
    core.system_position,
    harmony.developer_position,
    trainers.missing_turn,
    trainers.missing_role,
    core.first_role,
    core.prompt_end,
    core.completion_role,
    tools.orphan_tool,
    mistral.unanswered_call,
    core.not_alternating,
    core.last_role,
    tools.unknown_tool,
    mistral.content_or_calls,
    core.empty_content,
    trainers.placeholder_content,
    parts.too_many_images,
    parts.image_count,
    parts.audio_count,
    parts.video_count,
    tokens.too_long,
    same_pair,
    implicit_prompt,
)
"""Every code, in the order of `codes.ALL_REASONS`."""

RULES: tuple[Rule, ...] = tuple(entry for entry in CODES if isinstance(entry, Rule))
"""Every rule of a conversation, in `codes.ALL_REASONS` order."""

# --- The switches -----------------------------------------------------------------------------

OPTION_SWITCHES: dict[str, Callable[[ChatFormat], bool]] = {
    "min_messages": lambda fmt: fmt.min_messages is not None,
    "allowed_keys": lambda fmt: fmt.allowed_keys is not None,
    "content_types": lambda fmt: fmt.content_types != "any" or fmt.part_types is not None,
    "image_data_urls": lambda fmt: fmt.image_data_urls,
    "max_image_bytes": lambda fmt: fmt.max_image_bytes is not None,
    "image_roles": lambda fmt: fmt.image_roles is not None,
    "max_images": lambda fmt: fmt.max_images is not None,
    "weight_key": lambda fmt: fmt.weight_key is not None,
    "legacy_functions": lambda fmt: fmt.legacy_functions,
    "require_roles": lambda fmt: bool(fmt.require_roles),
    "tools": lambda fmt: fmt.tools,
    "thinking": lambda fmt: fmt.thinking is not None,
    "profile": lambda fmt: fmt.profile == "sample",
    "mistral": lambda fmt: fmt.profile == "mistral",
    "placeholder_contents": lambda fmt: fmt.placeholder_contents,
    "audios_column": lambda fmt: fmt.audios_column is not None,
    "videos_column": lambda fmt: fmt.videos_column is not None,
    "max_tokens": lambda fmt: fmt.max_tokens is not None,
    "harmony": lambda fmt: fmt.harmony,
    "system_role": lambda fmt: fmt.has_system,
    "first_role": lambda fmt: fmt.first_role is not None,
    "last_role": lambda fmt: fmt.last_role is not None,
    "alternate": lambda fmt: fmt.alternate,
    "no_empty": lambda fmt: not fmt.allow_empty,
}
"""The switches of the format's options: each is on when its test of the format is true."""

INPUT_SWITCHES: tuple[str, ...] = ("extras", "declared", "images", "whole", "prompt", "completion", "not_completion")
"""The switches of what the judge is given: extras, the row's declared functions and images, the part of a row."""

SWITCHES: tuple[str, ...] = (*OPTION_SWITCHES, *INPUT_SWITCHES)
"""What a rule's `when` can name: options of the format, inputs given to `judge`, parts."""


def switches(
    fmt: ChatFormat,
    part: str = WHOLE,
    *,
    extras: bool = False,
    declared: bool = False,
    images: bool = False,
) -> frozenset[str]:
    """The switches that are on for `fmt`, a `part`, and the inputs given (extras, the
    row's declared functions, the row's images)."""
    given = {
        "extras": extras,
        "declared": declared,
        "images": images,
        "whole": part == WHOLE,
        "prompt": part == PROMPT,
        "completion": part == COMPLETION,
        "not_completion": part != COMPLETION,
    }
    on = [name for name, test in OPTION_SWITCHES.items() if test(fmt)]
    return frozenset([*on, *(name for name in INPUT_SWITCHES if given[name])])
