"""The check's options as documented: their defaults, the profiles, and what each one switches on.

Written from the README ("Options of the chat check", "Profiles: will the trainer
accept this table?" and its table of rules per trainer) and `ChatFormat`'s
docstring. A profile is a set of defaults: an option given explicitly overrides it.
"""

from __future__ import annotations

from types import SimpleNamespace

CORE_OPTIONS = {
    "roles": ("system", "user", "assistant"),
    "alternate": True,
    "first_role": None,
    "last_role": None,
    "allow_empty": False,
    "role_key": "role",
    "content_key": "content",
    "na_pass": False,
}

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
"""The trainers' options of issue 15, with their defaults (which turn their rules off)."""

FORMAT_OPTIONS = {
    "max_value_bytes": 16 * 1024 * 1024,
    "tools": False,
    "harmony": False,
    "thinking_key": None,
    "sharegpt": False,
    "text_key": "text",
    "image_token": None,
    "audio_token": None,
    "video_token": None,
    "audios_column": None,
    "videos_column": None,
    "standard_parts": False,
    "single_message_answers": False,
    "min_rows": None,
    "extra_columns": True,
    "placeholder_contents": False,
    "max_tokens": None,
    "tokenizer": None,
    "profile": None,
}
"""Tool calling, Harmony, ShareGPT, images, the dataset rows' reading, the table checks, profiles."""

OPTIONS = {**CORE_OPTIONS, **TRAINER_OPTIONS, **FORMAT_OPTIONS}

SHAREGPT_TAGS = {
    "human": "user",
    "gpt": "assistant",
    "system": "system",
    "function_call": "assistant",
    "observation": "tool",
}
"""README: "roles mapped before every rule: human→user, gpt→assistant, system→system,
function_call→assistant (its value read as the call), observation→tool"."""

ROLE_ALIASES = {"human": "user", "bot": "assistant", "gpt": "assistant", "model": "assistant"}

MIB = 1024 * 1024

PROFILES = {
    # The conversation sample type (seed 001): roles system/user/assistant only, empty turns,
    # a transcript ending on the user and repeated user turns let through.
    "sample": {"roles": ("system", "user", "assistant"), "alternate": False, "allow_empty": True},
    # The README's table of rules per trainer, column by column.
    "openai": {
        "roles": ("system", "user", "assistant", "tool", "function"),
        "alternate": False,
        "require_roles": ("assistant",),
        "content_types": "text_or_parts",
        "weight_key": "weight",
        "allowed_keys": (
            "name", "weight", "tool_calls", "tool_call_id", "function_call", "refusal", "audio"
        ),
        "tools": True,
        "legacy_functions": True,
    },
    "together": {
        "roles": ("system", "user", "assistant", "tool"),
        "alternate": False,
        "allow_empty": True,
        "require_roles": ("assistant",),
        "content_types": "text_or_parts",
        "weight_key": "weight",
        "part_types": ("text", "image_url"),
        "image_data_urls": True,
        "max_image_bytes": 10 * MIB,
        "image_roles": ("user",),
        "max_images": 10,
        "standard_parts": True,
        "min_rows": 1,
        "extra_columns": False,
    },
    "torchtune": {
        "roles": ("system", "user", "assistant"),
        "min_messages": 2,
        "first_role": "user",
        "content_types": "text_or_parts",
        "allow_empty": True,
    },
    # mistral-finetune (commit 1943535) and mistral-common v1.11.7's fine-tuning validator: the
    # roles of `Roles`, tool calls, no order but tool answers, the assistant last, one message
    # refused, an assistant weight 0 or 1; its own rules are `peers`' (o.mistral).
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


def resolve(options):
    """The options in force: the defaults, the profile's over them, the given ones over those;
    then what the switches add (roles, keys, the thinking key, the role tags read)."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise TypeError(f"the plain reference doesn't know {sorted(unknown)}")
    profile = options.get("profile")
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"no profile {profile!r}")
    o = SimpleNamespace(**{**OPTIONS, **PROFILES.get(profile, {}), **options})
    roles = list(o.roles)
    for switch, role in (("tools", "tool"), ("harmony", "developer"), ("legacy_functions", "function")):
        if getattr(o, switch) and role not in roles:
            roles.append(role)
    o.roles = roles
    if o.sharegpt:  # ShareGPT's keys, unless other keys are given
        o.role_key = "from" if o.role_key == "role" else o.role_key
        o.content_key = "value" if o.content_key == "content" else o.content_key
    o.aliases = {**(SHAREGPT_TAGS if o.sharegpt else {}), **(o.role_map or {})}
    o.thinking = o.thinking_key if o.thinking_key is not None else ("thinking" if o.harmony else None)
    o.sample = profile == "sample"
    o.mistral = profile == "mistral"
    o.tool_turns = ("tool", "function")
    return o
