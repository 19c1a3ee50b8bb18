"""The trainers' profiles: the defaults each `profile=` stands for, and the one place a format
is built from the options given (`format_from`), so that a profile means the same from
Python, YAML and the command line.

The profiles' rules are the options' rules (`check.judge`): a profile is only a set of
defaults, which the options given override (`sample_profile` aside: its roles are checked
by `ChatFormat` itself).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..conversation.spec import SAMPLE_ROLES, ChatFormat


def sample_profile(**overrides: Any) -> ChatFormat:
    """The conversation sample type as a format: what such a sample accepts.

    Roles system, user and assistant only, a system message at most once and only
    first, at least one user and one assistant turn, tool turns refused. The type
    lets empty turns, a transcript ending on the user and repeated user turns
    through (its audit reports them), so alternation and empty contents are not
    checked unless asked for (`alternate=True`, `allow_empty=False`).

    >>> sample_profile().profile, sample_profile().alternate, sample_profile().allow_empty
    ('sample', False, True)
    """
    base = ChatFormat(roles=SAMPLE_ROLES, alternate=False, allow_empty=True, profile="sample")
    return replace(base, **overrides) if overrides else base


TRAINER_PROFILES: dict[str, dict[str, Any]] = {
    # OpenAI's API schema for a fine-tuning line (FineTuneChatRequestInput) and its guide.
    "openai": {
        "roles": ("system", "user", "assistant"),
        "alternate": False,
        "tools": True,
        "legacy_functions": True,
        "require_roles": ("assistant",),
        "content_types": "text_or_parts",
        "weight_key": "weight",
        "allowed_keys": (
            "name", "weight", "tool_calls", "tool_call_id", "function_call", "refusal", "audio"
        ),
    },
    # Together's SDK 2.14.0 `check_file`: no turn order, empty and null contents pass,
    # tool turns and tool_calls are allowed but not checked, unknown message keys pass.
    # Its images (`_check_message_content`, constants MAX_IMAGES_PER_EXAMPLE, MAX_IMAGE_BYTES):
    # text and image_url parts only, images in user messages and prompts only, as base64
    # data URLs of JPEG, PNG or WEBP, 10 MiB and 10 images at most; an instruction row's
    # prompt and completion may be lists of parts. Its `_check_jsonl`: a line with a field
    # outside its format's ("Found extra column") fails, and so does a file of too few samples.
    "together": {
        "roles": ("system", "user", "assistant", "tool"),
        "alternate": False,
        "allow_empty": True,
        "require_roles": ("assistant",),
        "content_types": "text_or_parts",
        "weight_key": "weight",
        "part_types": ("text", "image_url"),
        "image_data_urls": True,
        "max_image_bytes": 10 * 1024 * 1024,
        "image_roles": ("user",),
        "max_images": 10,
        "standard_parts": True,
        "min_rows": 1,
        "extra_columns": False,
    },
    # torchtune 0.6.1's `validate_messages`: two messages at least, a system message only
    # first, every assistant message right after a user one, no two user messages in a row.
    "torchtune": {
        "roles": ("system", "user", "assistant"),
        "alternate": True,
        "first_role": "user",
        "allow_empty": True,
        "min_messages": 2,
        "content_types": "text_or_parts",
    },
    # mistral-finetune (commit 1943535, 2026-06-12) `finetune/data/tokenize.py`'s
    # `build_instruct_sample`, which `utils/validate_data.py` runs on each line, and the
    # mistral-common validator it calls (v1.11.7, commit bc022b9: `MistralRequestValidatorV3`,
    # `ValidationMode.finetuning`): roles system, user, assistant, tool (`Roles`); no turn
    # order beyond tool answers (`_validate_message_order` lets user follow user and assistant
    # follow assistant); the last message the assistant's; a one-message conversation refused;
    # an assistant's `weight` 0 or 1. Its own rules (tool call ids and names, content or tool
    # calls, every call answered) are `trainers.mistral`'s, on with this profile.
    # Not followed: a system message anywhere once (mistral-finetune lifts it out of the list;
    # chatgate keeps `system_position`), a `text` key standing for `content`, a weight of 1.0
    # (chatgate asks the integer), `[system, assistant]` (refused: one message once the system
    # is lifted out), the first message's tool calls left uncounted by the validator's loop.
    "mistral": {
        "roles": ("system", "user", "assistant", "tool"),
        "tools": True,
        "alternate": False,
        "allow_empty": True,
        "last_role": "assistant",
        "min_messages": 2,
        "content_types": "text_or_parts",
        "weight_key": "weight",
    },
}
"""The trainers' profiles: each a set of defaults, which the options given override."""


def format_from(**given: Any) -> ChatFormat:
    """The ChatFormat of the options given: a profile's own defaults first, the options given over them.

    Every entry point (Python, YAML, flags) builds its format here, so a profile means
    the same everywhere.

    >>> format_from(profile="sample").alternate, format_from(profile="sample", alternate=True).alternate
    (False, True)
    """
    profile = given.get("profile")
    if profile == "sample":
        return sample_profile(**{k: v for k, v in given.items() if k != "profile"})
    if isinstance(profile, str) and profile in TRAINER_PROFILES:
        return ChatFormat(**{**TRAINER_PROFILES[profile], **given})
    return ChatFormat(**given)
