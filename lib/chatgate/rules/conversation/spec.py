"""The parameters of the chat-format check, checked once, before any data is read."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from ..base.tokens import load_tokenizer
from .arguments import alias_map, name_tuple, role_tuple, whole_number

DEFAULT_ROLES: tuple[str, ...] = ("system", "user", "assistant")

TOOL_ROLE = "tool"
"""The role of a message that answers a tool call (tools=True adds it to `roles`)."""

DEVELOPER_ROLE = "developer"
"""Harmony's instruction role (harmony=True adds it to `roles`)."""

HARMONY_THINKING_KEY = "thinking"
"""The key of an assistant message's reasoning in Harmony (its `analysis` channel)."""

SHAREGPT_ROLES: dict[str, str] = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "function_call": "assistant",
    "observation": "tool",
    "tool": "tool",
}
"""ShareGPT's `from` tags and the role each one is read as (sharegpt=True).

`function_call` is an assistant turn whose `value` holds the call as JSON text
(`{"name": ..., "arguments": ...}`, or a list of them); with tools=True it is read
as an assistant message with those `tool_calls` and no content. `observation` is
the tool's answer. A tag not listed here is kept as it is (and is then checked
against `roles=` like any role).
"""

SAMPLE_ROLES: tuple[str, ...] = ("system", "user", "assistant")
"""The only roles of the sample profile."""

TOOL_ROLES: frozenset[str] = frozenset(
    {"tool", "function", "ipython", "observation", "function_call"}
)
"""Roles (and ShareGPT tags) of tool and function turns, refused by the sample profile."""

PROFILES: tuple[str, ...] = ("sample", "openai", "together", "torchtune", "mistral")

PLACEHOLDERS: frozenset[str] = frozenset({"nan", "null", "none", "undefined"})
"""The serialised missing values `placeholder_contents=True` refuses as a message's whole text,
compared after stripping surrounding whitespace and ignoring case (`NaN`, `null`, `None`,
`undefined`, and `NULL`, `nan`...): pandas writes `NaN` and `None`, JSON `null`, JavaScript
`undefined`, and the data-cleaning code that looks for them lowercases first."""

MEDIA_OPTIONS: tuple[str, ...] = ("audio_token", "video_token", "audios_column", "videos_column")
"""The options of audio and video, strings or None."""

MAX_VALUE_BYTES = 16 * 2**20
"""The default `max_value_bytes=`: 16 MiB. A value is judged whole in memory, and parsing
JSON costs several times its size in Python objects; 16 MiB is about 4 million tokens of
text, far past any trainer's context, and holds a base64 image as large as Together's
limit (10 MiB). Raise it for conversations with several large inline images."""

CONTENT_TYPES: tuple[str, ...] = ("any", "text", "text_or_parts")
"""What `content_types=` accepts: any content (the core check), strings only, or
strings and lists of content parts."""

FUNCTION_ROLE = "function"
"""The role of a message that answers a legacy `function_call` (legacy_functions=True adds it)."""

ROLE_ALIASES: dict[str, str] = {"human": "user", "bot": "assistant", "gpt": "assistant", "model": "assistant"}
"""Common role aliases of otherwise standard message lists, for `role_map=` (Gemini's `model`,
ShareGPT's `human`/`gpt` under role/content keys, chat logs' `bot`)."""


def _option(default: Any, help: str, metavar: str | None = None, choices: tuple[str, ...] | None = None) -> Any:
    """A field of ChatFormat: an option of the check, with what users read of it."""
    return field(default=default, metadata={"help": help, "metavar": metavar, "choices": choices})


@dataclass(frozen=True)
class ChatFormat:
    """What a well-formed conversation is (the keyword arguments of the check).

    The first eight fields are the core check. The others switch on more rules
    (tool calling, Harmony, ShareGPT, vision, a profile); at their defaults the
    check is exactly the core one.

    - `tools`: tool calling. The `tool` role is added to `roles`; an assistant
      message's `tool_calls` must be a list of `{"type": "function", "function":
      {"name": str, "arguments": object or JSON text of an object}}` (a missing
      `type` is taken as "function"); an assistant message with tool calls may
      have empty or null content; a tool message answers a call of the assistant
      message before it (several tool messages in a row answer parallel calls; a
      `tool_call_id` or `name` on it must match one of those calls); tool turns
      don't break alternation (`assistant, tool, assistant` is one assistant turn).
    - `harmony`: the `developer` role is added to `roles`; a developer message may
      only come at the start (after an optional system message), once; the
      `thinking` key (see `thinking_key`) is checked.
    - `thinking_key`: a key holding the assistant's reasoning (`"thinking"` for
      Harmony, `"reasoning_content"` for Qwen-style data). When set (or with
      harmony=True), a non-null value under it must be a string on an assistant
      message.
    - `sharegpt`: messages are read with `from`/`value` keys (unless other keys
      are given) and their tags mapped by `SHAREGPT_ROLES` before any rule; a
      single message object stands for a one-message list (LLaMA-Factory's
      chosen/rejected); `{"conversations": [...]}` is read like `{"messages": [...]}`.
    - `text_key`: the key of a text part's text in list contents (`"text"` in the
      transformers format, `"value"` in LLaMA-Factory's v1 format).
    - `image_token`: a placeholder such as `"<image>"` counted as one image in text
      contents, when the row's images are counted (LLaMA-Factory's format).
    - `audio_token`, `video_token`, `audios_column`, `videos_column`: audio and video as images
      are (LLaMA-Factory's `audios` and `videos` columns and `<audio>`/`<video>` tags): the
      tags in text contents and the `{"type": "audio"}` / `{"type": "video"}` parts are
      counted against the length of the row's column (`audio_count`, `video_count`), when
      the column is named (as `images_column` is for images: in a chat column's check and in a
      dataset type's conversational rows, on the row's whole conversation; standard text isn't
      counted).
    - `image_data_urls`, `max_image_bytes`, `image_roles`, `max_images`, `part_types`:
      the rules of image parts (`parts`): an `image_url` part holds a base64 data URL
      of a JPEG, PNG or WEBP image, of at most so many bytes; only the roles listed
      have image parts; a conversation has at most so many; a part is of a type listed.
    - `standard_parts`: a prompt or completion of a dataset row may be a list of content
      parts, read as standard text with images (Together's multimodal instruction format).
    - `single_message_answers`: a completion, chosen or rejected value may be one message
      object instead of a list (axolotl's chat_template DPO strategy).
    - `max_value_bytes`: a value larger than this (the bytes of its JSON text; a native
      value's size is measured as `sizes` says) gets `too_large` without being read, on
      every engine. None (from Python only: a job's YAML null and an absent flag mean
      the default) reads every value whole. Checked before any other rule: it is the
      first code.
    - `placeholder_contents`: a message whose whole text is a serialised missing value
      (`PLACEHOLDERS`: NaN, null, None or undefined, in any case, spaces around) gets
      `placeholder_content`: a conversion bug (a null written as text), not a turn.
    - `max_tokens`, `tokenizer`: a conversation of more than `max_tokens` tokens gets `too_long`,
      counted with `tokenizer` (a tiktoken encoding's name, or a path to a Hugging Face
      `tokenizer.json`) as `trainers.tokens` says: the OpenAI cookbook's count for tiktoken
      encodings, the contents' tokens for a tokenizer.json. A conversation whose bytes can't
      exceed the limit is never encoded. The tokenizer is loaded when the options are checked
      (`base.tokens` says how it is cached, and shipped to Spark executors).
    - `profile`: `"sample"` adds the rules of a conversation sample type: roles system,
      user and assistant only; at least one user and one assistant turn; tool and
      function turns refused (`tool_turn`). See `sample_profile()`. `"mistral"` adds the rules
      of Mistral's fine-tuning (`trainers.mistral`) to its defaults.

    >>> ChatFormat(last_role="assistant").roles
    ('system', 'user', 'assistant')
    >>> ChatFormat(tools=True).roles
    ('system', 'user', 'assistant', 'tool')
    >>> ChatFormat(sharegpt=True).role_key
    'from'
    """

    roles: tuple[str, ...] = _option(DEFAULT_ROLES, "the roles allowed", "ROLE")
    alternate: bool = _option(True, "turns after a leading system message alternate roles")
    first_role: str | None = _option(None, "the role of the first turn after a leading system message", "ROLE")
    last_role: str | None = _option(None, "the role of the last message, e.g. assistant", "ROLE")
    allow_empty: bool = _option(False, "let messages with empty or blank content pass")
    role_key: str = _option("role", "the key of a message's role", "KEY")
    content_key: str = _option("content", "the key of a message's content", "KEY")
    na_pass: bool = _option(False, "let missing values (null) pass")
    max_value_bytes: int | None = _option(
        MAX_VALUE_BYTES,
        "the largest value read, in bytes of JSON text (16 MiB: far past any trainer's context); "
        "a larger one gets too_large, unread; at least 1 (from Python, None: no limit)",
        "N",
    )
    tools: bool = _option(False, "tool calling: the tool role, tool_calls on assistant messages, answered calls")
    harmony: bool = _option(False, "Harmony: the developer role and the assistant's thinking key")
    thinking_key: str | None = _option(None, "a key holding the assistant's reasoning, checked as text", "KEY")
    sharegpt: bool = _option(False, "ShareGPT messages: from/value keys, human/gpt tags mapped to roles")
    text_key: str = _option("text", "the key of a text part's text in list contents", "KEY")
    image_token: str | None = _option(None, "a placeholder counted as one image in text, e.g. <image>", "TOKEN")
    audio_token: str | None = _option(None, "a placeholder counted as one audio in text, e.g. <audio>", "TOKEN")
    video_token: str | None = _option(None, "a placeholder counted as one video in text, e.g. <video>", "TOKEN")
    audios_column: str | None = _option(
        None, "the row's audios: as many as the audio parts and audio_token tags (audio_count)", "COLUMN"
    )
    videos_column: str | None = _option(
        None, "the row's videos: as many as the video parts and video_token tags (video_count)", "COLUMN"
    )
    min_messages: int | None = _option(None, "the fewest messages a conversation may have", "N")
    require_roles: tuple[str, ...] = _option((), "roles that must each appear at least once", "ROLE")
    content_types: str = _option(
        "any", "the contents allowed: any, text (strings only) or text_or_parts", "KIND", choices=CONTENT_TYPES
    )
    weight_key: str | None = _option(None, "a message key whose value, when given, must be the integer 0 or 1", "KEY")
    allowed_keys: tuple[str, ...] | None = _option(
        None, "the only message keys allowed besides the role and content keys", "KEY"
    )
    role_map: dict[str, str] | None = _option(None, "role aliases renamed before every rule, e.g. human=user", "ALIAS=ROLE")
    legacy_functions: bool = _option(False, "the function role, and function_call on assistant messages")
    image_data_urls: bool = _option(False, "an image_url part holds a base64 data URL of a JPEG, PNG or WEBP image")
    max_image_bytes: int | None = _option(None, "the largest image a data URL may hold, in bytes", "N")
    image_roles: tuple[str, ...] | None = _option(None, "the only roles whose messages may hold image parts", "ROLE")
    max_images: int | None = _option(None, "the most image parts a conversation may hold", "N")
    part_types: tuple[str, ...] | None = _option(
        None, "the only types of content parts allowed, e.g. text,image_url (a text part's text is a string)", "TYPE"
    )
    standard_parts: bool = _option(False, "a prompt or completion may be a list of content parts, as standard text")
    single_message_answers: bool = _option(
        False, "a completion, chosen or rejected value may be one message object instead of a list"
    )
    min_rows: int | None = _option(None, "the fewest rows the table may have (a table check, its own step)", "N")
    extra_columns: bool = _option(
        True, "columns outside the format may be in the table (off: a table check, reported as its own step)"
    )
    placeholder_contents: bool = _option(
        False,
        "refuse a message whose whole text is a serialised missing value: NaN, null, None or undefined "
        "(any case, spaces around): placeholder_content",
    )
    max_tokens: int | None = _option(
        None,
        "the most tokens a conversation may have, counted with tokenizer= (a larger one gets too_long)",
        "N",
    )
    tokenizer: str | None = _option(
        None,
        "what counts max_tokens= and token_stats=: a tiktoken encoding (cl100k_base, o200k_base), "
        "or a path to a tokenizer.json or to a Mistral tekken.json",
        "NAME",
    )
    token_stats: bool = _option(
        False,
        "report the step's tokens, counted with tokenizer=: total, min, median, p95 and max per conversation, "
        "assistant tokens, and the tokens a trainer bills (a summary of the step, no row's verdict changes)",
    )
    epochs: int | None = _option(
        None, "with token_stats=: the epochs billed (default: as OpenAI picks them for the number of conversations)", "N"
    )
    profile: str | None = _option(
        None, "a trainer's rules as defaults: sample, openai, together, torchtune, mistral", "NAME", choices=PROFILES
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", role_tuple(self.roles))
        self._check_types()
        self._check_row_options()
        self._check_profile()
        if self.sharegpt:
            if self.role_key == "role":
                object.__setattr__(self, "role_key", "from")
            if self.content_key == "content":
                object.__setattr__(self, "content_key", "value")
        if self.role_key == self.content_key:
            raise ValueError(
                f"role_key= and content_key= are both {self.role_key!r}: a message's role and content need keys of their own"
            )
        added = ((TOOL_ROLE,) if self.tools else ()) + ((DEVELOPER_ROLE,) if self.harmony else ())
        added += (FUNCTION_ROLE,) if self.legacy_functions else ()
        extra = tuple(role for role in added if role not in self.roles)
        if extra:
            object.__setattr__(self, "roles", self.roles + extra)
        self._check_end_roles()
        missing = [role for role in self.require_roles if role not in self.roles]
        if missing:
            raise ValueError(f"require_roles= has {missing}, not among roles= {list(self.roles)}")

    def _check_types(self) -> None:
        for key in ("role_key", "content_key", "text_key"):
            if not isinstance(getattr(self, key), str):
                raise TypeError(f"{key}= must be a string, not {type(getattr(self, key)).__name__}")
        for key in (
            "alternate", "allow_empty", "na_pass", "tools", "harmony", "sharegpt", "legacy_functions",
            "image_data_urls", "standard_parts", "single_message_answers", "extra_columns",
            "placeholder_contents", "token_stats",
        ):
            if not isinstance(getattr(self, key), bool):
                raise TypeError(f"{key}= must be True or False, not {getattr(self, key)!r}")
        for key in ("thinking_key", "image_token", "weight_key", *MEDIA_OPTIONS):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{key}= must be a string or None, not {value!r}")
            if value == "":
                raise ValueError(f"{key}= is empty: give a key or None")

    def _check_row_options(self) -> None:
        """The options of the trainers' row rules: normalised (lists to tuples, a dict to a
        `RoleMap`) and checked."""
        whole_number("min_messages", self.min_messages, 1)
        whole_number("max_value_bytes", self.max_value_bytes, 1)
        whole_number("min_rows", self.min_rows, 1)
        whole_number("max_image_bytes", self.max_image_bytes, 1)
        self._check_tokens()
        whole_number("max_images", self.max_images, 0)
        object.__setattr__(self, "require_roles", name_tuple("require_roles", self.require_roles, empty=True))
        if self.allowed_keys is not None:
            object.__setattr__(self, "allowed_keys", name_tuple("allowed_keys", self.allowed_keys, empty=True))
        for key in ("image_roles", "part_types"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, name_tuple(key, getattr(self, key), empty=True))
        if self.content_types not in CONTENT_TYPES:
            raise ValueError(f"content_types={self.content_types!r} isn't one of {list(CONTENT_TYPES)}")
        if self.role_map is not None:
            object.__setattr__(self, "role_map", alias_map(self.role_map))

    def _check_tokens(self) -> None:
        """`max_tokens=` and `tokenizer=` come together; the tokenizer is loaded here, once per
        process (`base.tokens`), so a missing library or file stops the check before any row."""
        whole_number("max_tokens", self.max_tokens, 1)
        whole_number("epochs", self.epochs, 1)
        if self.tokenizer is not None and (not isinstance(self.tokenizer, str) or not self.tokenizer):
            raise TypeError(
                "tokenizer= must be a tiktoken encoding's name or the path of a tokenizer.json "
                f"or a Mistral tokenizer file, not {self.tokenizer!r}"
            )
        counting = self.max_tokens is not None or self.token_stats
        if self.tokenizer is None and counting:
            given = "max_tokens" if self.max_tokens is not None else "token_stats"
            raise ValueError(f"{given}= needs tokenizer= too (the tokens are counted with tokenizer=)")
        if self.tokenizer is not None and not counting:
            raise ValueError("tokenizer= needs max_tokens= or token_stats=True (it counts nothing alone)")
        if self.epochs is not None and not self.token_stats:
            raise ValueError("epochs= needs token_stats=True (it sets the epochs billed)")
        if self.tokenizer is not None:
            load_tokenizer(self.tokenizer)

    def _check_end_roles(self) -> None:
        for key in ("first_role", "last_role"):
            role = getattr(self, key)
            if role is None:
                continue
            if not isinstance(role, str):
                raise TypeError(f"{key}= must be a role name (a string) or None, not {role!r}")
            if role not in self.roles:
                raise ValueError(f"{key}={role!r} isn't one of roles= {list(self.roles)}")

    def _check_profile(self) -> None:
        if self.profile is None:
            return
        if not isinstance(self.profile, str):
            raise TypeError(f"profile= must be a profile name or None, not {self.profile!r}")
        if self.profile not in PROFILES:
            raise ValueError(f"profile={self.profile!r} isn't one of {list(PROFILES)}")
        if self.profile != "sample":
            return  # the trainers' profiles are defaults only: any option may override them
        others = [role for role in self.roles if role not in SAMPLE_ROLES]
        if others:
            raise ValueError(
                f"profile='sample' allows the roles {list(SAMPLE_ROLES)} only; roles= has {others}"
            )
        for key in ("tools", "harmony"):
            if getattr(self, key):
                raise ValueError(f"profile='sample' refuses tool turns and extra roles: {key}=True")

    @cached_property
    def has_system(self) -> bool:
        return "system" in self.roles

    @cached_property
    def role_set(self) -> frozenset[str]:
        """The allowed roles as a set: the judge asks it once per conversation."""
        return frozenset(self.roles)

    @property
    def is_core(self) -> bool:
        """True when only the core check's fields are in use (the fast path applies)."""
        return not (
            self.tools
            or self.harmony
            or self.sharegpt
            or self.profile in ("sample", "mistral")
            or self.placeholder_contents
            or self.counts_media
            or self.max_tokens is not None
            or self.thinking_key is not None
            or self.text_key != "text"
            or self.has_row_options
        )

    @property
    def counts_media(self) -> bool:
        """True when the audios or videos of a row are counted (`audios_column=`, `videos_column=`)."""
        return self.audios_column is not None or self.videos_column is not None

    @property
    def has_row_options(self) -> bool:
        """True when an option of the trainers' row rules is in use (they read more of each message)."""
        return (
            self.min_messages is not None
            or bool(self.require_roles)
            or self.content_types != "any"
            or self.weight_key is not None
            or self.allowed_keys is not None
            or bool(self.role_map)
            or self.legacy_functions
            or self.has_part_options
        )

    @property
    def has_part_options(self) -> bool:
        """True when an option of the content parts' rules (`parts`) is in use. (`standard_parts` and
        `single_message_answers` change how a dataset row is read, not how a conversation is judged.)"""
        return (
            self.image_data_urls
            or self.max_image_bytes is not None
            or self.image_roles is not None
            or self.max_images is not None
            or self.part_types is not None
        )

    @cached_property
    def role_aliases(self) -> dict[str, str] | None:
        """The map of role tags read before every rule: ShareGPT's (sharegpt=True) and `role_map=` over it."""
        if not self.sharegpt:
            return self.role_map or None
        return {**SHAREGPT_ROLES, **(self.role_map or {})}

    @cached_property
    def allowed_key_set(self) -> frozenset[str] | None:
        """`allowed_keys=` with the role and content keys, which are always allowed."""
        if self.allowed_keys is None:
            return None
        return frozenset((*self.allowed_keys, self.role_key, self.content_key))

    @property
    def thinking(self) -> str | None:
        """The key whose values are checked as the assistant's reasoning, if any."""
        if self.thinking_key is not None:
            return self.thinking_key
        return HARMONY_THINKING_KEY if self.harmony else None

    def as_dict(self) -> dict[str, Any]:
        """The parameters as plain JSON-ready values."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["roles"] = list(self.roles)
        out["require_roles"] = list(self.require_roles)
        for key in ("allowed_keys", "image_roles", "part_types"):
            if getattr(self, key) is not None:
                out[key] = list(getattr(self, key))
        if self.role_map is not None:
            out["role_map"] = dict(self.role_map)
        return out

