"""The problem codes of the checks, in the order they are checked.

The order is the contract: the reported code of a conversation (or of a row of a
dataset type) is the first one in `ALL_REASONS` that applies anywhere in it.

`REASONS` are the nine codes of the core check, in their order. The options
(tool calling, Harmony, ShareGPT, the profiles and the trainers' row rules, vision) and the dataset
types add `EXTENDED_REASONS`. `ALL_REASONS` interleaves both into one order, most
fundamental problem first; the nine core codes keep their relative order, and
none of the other codes is produced while the options are off. (`too_large` is the
code of `max_value_bytes=`, an option on by default: a value larger than it is never
read, so no other code can apply to it.)

The codes decided on one conversation are the rules of `judge.RULES`, in the same
order; the others are decided before a conversation is read (`too_large`, from the
value's size alone, `not_messages`, the
standard-format codes, `not_label`, an OpenAI preference row's `bad_input` and
`output_count`) or by comparing two values of a row
(`same_pair`, `implicit_prompt`).

| code | raised by | meaning |
|---|---|---|
| too_large | max_value_bytes= | the value is larger than `max_value_bytes=` (its JSON text's bytes; see `sizes`): it isn't read |
| not_messages | core | the value isn't a list of messages |
| mixed_format | dataset types | a row mixes conversational and standard values, or a value isn't of the format the check expects |
| not_text | dataset types | a standard-format field isn't a string (or is missing) |
| not_label | unpaired preference | `label` isn't true or false |
| bad_input | openai_preference | `input` isn't an object holding `messages`, or its `parallel_tool_calls` isn't true or false |
| output_count | openai_preference | `preferred_output` or `non_preferred_output` isn't a list of exactly one message |
| no_messages | core | the list is empty |
| too_few_messages | min_messages= | fewer messages than `min_messages=` |
| empty_text | dataset types | a standard-format string is empty or only whitespace |
| bad_message | core | a message isn't a mapping with a string role |
| unknown_key | allowed_keys= | a message holds a key outside `allowed_keys=` (and the role and content keys) |
| bad_content_type | content_types= / part_types= | a content that isn't a string (`"text"`), or neither a string nor a list of content parts (`"text_or_parts"`); a part of a type not in `part_types=` |
| bad_image_url | image_data_urls=True | an `image_url` part that doesn't hold a base64 data URL of a JPEG, PNG or WEBP image |
| image_too_large | max_image_bytes= | a data URL of an image larger than `max_image_bytes=` |
| bad_weight | weight_key= | a message's weight isn't the integer 0 or 1 |
| bad_tool_call | tools=True | `tool_calls` isn't a list of `{"type": "function", "function": {"name", "arguments"}}` on an assistant message |
| bad_function_call | legacy_functions=True | a `function_call` isn't a mapping with a name, or is on a message that isn't the assistant's |
| bad_thinking | harmony=True / thinking_key= | a thinking value on a message that isn't the assistant's, or one that isn't a string |
| bad_tools | tools column | the row's `tools` isn't a list of function schemas |
| tool_turn | profile="sample" | a tool or function turn, or an assistant message with tool calls |
| unknown_role | core | a role not in `roles=` |
| image_role | image_roles= | image parts in a message whose role isn't in `image_roles=` (or in a standard completion) |
| system_position | core | a system message that isn't first |
| developer_position | harmony=True | a developer message that isn't at the start (after an optional system message), or a second one |
| missing_turn | profile="sample" | no user turn or no assistant turn |
| missing_role | require_roles= | a role of `require_roles=` never appears |
| first_role | core | the first turn has the wrong role |
| prompt_end | dataset types | a conversational prompt doesn't end with a user turn (or a tool turn when tools=True) |
| completion_role | dataset types | a completion, chosen or rejected value holds a turn that isn't the assistant's (or a tool's when tools=True); an OpenAI preference output's message isn't the assistant's |
| orphan_tool | tools=True | a tool message that answers no earlier tool call |
| not_alternating | core | two consecutive turns share a role |
| last_role | core | the last message has the wrong role |
| unknown_tool | tools column | a called function isn't declared in the row's `tools` |
| empty_content | core | a message has no content |
| too_many_images | max_images= | more image parts than `max_images=` |
| image_count | images column | the image parts don't match the length of the row's `images` |
| same_pair | preference types | chosen and rejected are identical |
| implicit_prompt | implicit preference | chosen and rejected share no prompt, or one doesn't continue after it |
"""

from __future__ import annotations

from collections.abc import Iterable

REASONS: tuple[str, ...] = (
    "not_messages",
    "no_messages",
    "bad_message",
    "unknown_role",
    "system_position",
    "first_role",
    "not_alternating",
    "last_role",
    "empty_content",
)

EXTENDED_REASONS: tuple[str, ...] = (
    "too_large",
    "mixed_format",
    "not_text",
    "not_label",
    "bad_input",
    "output_count",
    "too_few_messages",
    "empty_text",
    "unknown_key",
    "bad_content_type",
    "bad_image_url",
    "image_too_large",
    "bad_weight",
    "bad_tool_call",
    "bad_function_call",
    "bad_thinking",
    "bad_tools",
    "tool_turn",
    "image_role",
    "developer_position",
    "missing_turn",
    "missing_role",
    "prompt_end",
    "completion_role",
    "orphan_tool",
    "unknown_tool",
    "too_many_images",
    "image_count",
    "same_pair",
    "implicit_prompt",
)

ALL_REASONS: tuple[str, ...] = (
    "too_large",
    "not_messages",
    "mixed_format",
    "not_text",
    "not_label",
    "bad_input",
    "output_count",
    "no_messages",
    "too_few_messages",
    "empty_text",
    "bad_message",
    "unknown_key",
    "bad_content_type",
    "bad_image_url",
    "image_too_large",
    "bad_weight",
    "bad_tool_call",
    "bad_function_call",
    "bad_thinking",
    "bad_tools",
    "tool_turn",
    "unknown_role",
    "image_role",
    "system_position",
    "developer_position",
    "missing_turn",
    "missing_role",
    "first_role",
    "prompt_end",
    "completion_role",
    "orphan_tool",
    "not_alternating",
    "last_role",
    "unknown_tool",
    "empty_content",
    "too_many_images",
    "image_count",
    "same_pair",
    "implicit_prompt",
)

_RANK = {code: i for i, code in enumerate(ALL_REASONS)}

# What a failing row "has", as (one row, several rows), for the step notes.
PHRASES: dict[str, tuple[str, str]] = {
    "too_large": ("is too large to read", "are too large to read"),
    "not_messages": ("isn't a list of messages", "aren't lists of messages"),
    "no_messages": ("has no messages", "have no messages"),
    "bad_message": (
        "has a message without a role that's a string",
        "have a message without a role that's a string",
    ),
    "unknown_role": ("has a role that isn't allowed", "have a role that isn't allowed"),
    "system_position": (
        "has a system message that isn't first",
        "have a system message that isn't first",
    ),
    "first_role": ("starts with the wrong role", "start with the wrong role"),
    "not_alternating": ("has roles that don't alternate", "have roles that don't alternate"),
    "last_role": ("ends with the wrong role", "end with the wrong role"),
    "empty_content": (
        "has a message with no content",
        "have a message with no content",
    ),
    "mixed_format": (
        "mixes conversational and standard values",
        "mix conversational and standard values",
    ),
    "not_text": ("has a field that isn't text", "have a field that isn't text"),
    "not_label": ("has a label that isn't true or false", "have a label that isn't true or false"),
    "empty_text": ("has an empty text field", "have an empty text field"),
    "bad_input": (
        "has an input that isn't an object holding messages",
        "have an input that isn't an object holding messages",
    ),
    "output_count": (
        "has an output that isn't exactly one message",
        "have an output that isn't exactly one message",
    ),
    "bad_tool_call": ("has a malformed tool call", "have a malformed tool call"),
    "too_few_messages": ("has too few messages", "have too few messages"),
    "unknown_key": ("has a message key that isn't allowed", "have a message key that isn't allowed"),
    "bad_content_type": (
        "has a content of a kind that isn't allowed",
        "have a content of a kind that isn't allowed",
    ),
    "bad_image_url": (
        "has an image that isn't a base64 data URL of a JPEG, PNG or WEBP",
        "have an image that isn't a base64 data URL of a JPEG, PNG or WEBP",
    ),
    "image_too_large": ("has an image that's too large", "have an image that's too large"),
    "image_role": (
        "has images in a message whose role can't hold them",
        "have images in a message whose role can't hold them",
    ),
    "too_many_images": ("has too many images", "have too many images"),
    "bad_weight": ("has a weight that isn't 0 or 1", "have a weight that isn't 0 or 1"),
    "bad_function_call": ("has a malformed function call", "have a malformed function call"),
    "missing_role": ("lacks a required role", "lack a required role"),
    "bad_thinking": (
        "has thinking that isn't the assistant's text",
        "have thinking that isn't the assistant's text",
    ),
    "bad_tools": (
        "has a tools list that isn't a list of function schemas",
        "have a tools list that isn't a list of function schemas",
    ),
    "tool_turn": ("has a tool turn", "have a tool turn"),
    "developer_position": (
        "has a developer message that isn't at the start",
        "have a developer message that isn't at the start",
    ),
    "missing_turn": (
        "lacks a user turn or an assistant turn",
        "lack a user turn or an assistant turn",
    ),
    "prompt_end": (
        "has a prompt that doesn't end with a user turn",
        "have a prompt that doesn't end with a user turn",
    ),
    "completion_role": (
        "has a completion with a turn that isn't the assistant's",
        "have a completion with a turn that isn't the assistant's",
    ),
    "orphan_tool": (
        "has a tool message that answers no tool call",
        "have a tool message that answers no tool call",
    ),
    "unknown_tool": (
        "calls a function its tools don't declare",
        "call a function their tools don't declare",
    ),
    "image_count": (
        "has image parts that don't match its images",
        "have image parts that don't match their images",
    ),
    "same_pair": (
        "has identical chosen and rejected",
        "have identical chosen and rejected",
    ),
    "implicit_prompt": (
        "has chosen and rejected that don't share a prompt",
        "have chosen and rejected that don't share a prompt",
    ),
}


def phrase(reason: str, count: int) -> str:
    """'1 has roles that don't alternate (`not_alternating`)' and the like."""
    one, many = PHRASES.get(reason, ("fails", "fail"))
    return f"{count} {one if count == 1 else many} (`{reason}`)"


def reason_rank(reason: str) -> int:
    """The place of a code in `ALL_REASONS` (unknown codes last).

    >>> reason_rank("too_large") < reason_rank("not_messages") < reason_rank("prompt_end") < reason_rank("empty_content")
    True
    """
    return _RANK.get(reason, len(ALL_REASONS))


def first_reason(codes: Iterable[str | None]) -> str | None:
    """The first code, in `ALL_REASONS` order, of `codes` (None entries ignored).

    >>> first_reason([None, "empty_content", "not_alternating"])
    'not_alternating'
    >>> first_reason([None]) is None
    True
    """
    found = [code for code in codes if code is not None]
    return min(found, key=reason_rank) if found else None
