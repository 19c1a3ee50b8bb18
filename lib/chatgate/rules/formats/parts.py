"""Content parts and images: the rules of list contents beyond the core check.

A content may be a list of parts (the transformers and OpenAI formats):
`{"type": "text", "text": ...}`, `{"type": "image"}` (an image of the row's
`images` column), `{"type": "image_url", "image_url": {"url": ...}}` (an image
inline, as a data URL, or by address), and others. Both `image` and `image_url`
parts are image parts. The options of `ChatFormat` that judge them, each a rule
of `check.table.RULES`, defined here:

| option | rule | code |
|---|---|---|
| `content_types=`, `part_types=` | a content is of a kind allowed; a part is a mapping with a string `type` (one of `part_types=`; a text part's text a string) | `bad_content_type` |
| `image_data_urls=True` | an `image_url` part holds `{"url": "data:image/<jpeg, png or webp>;base64,<payload>"}`, the payload standard base64 (A-Z, a-z, 0-9, +, /, padded with = to a multiple of 4) | `bad_image_url` |
| `max_image_bytes=N` | the image a base64 data URL holds is at most N bytes (3 per 4 characters of its payload, less its padding) | `image_too_large` |
| `image_roles=[...]` | only messages of these roles hold image parts | `image_role` |
| `max_images=N` | a conversation holds at most N image parts | `too_many_images` |

Together's `check_file` (SDK 2.14.0) is their source: it refuses parts other than
text and image_url, image_url parts outside user messages, URLs that don't start
with `data:image/jpeg;base64,` (or png, webp), images over 10 MiB and more than 10
images in one example.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..base.markers import BAD, MISSING
from ..base.values import is_missing, is_sequence
from ..conversation.conversation import Conversation
from ..conversation.rule import per_message, whole_value

IMAGE_PART_TYPES: frozenset[str] = frozenset({"image", "image_url"})
"""The types of the parts that hold (or stand for) an image."""

DATA_URL_PREFIXES: tuple[str, ...] = tuple(f"data:image/{kind};base64," for kind in ("jpeg", "png", "webp"))
"""The data URLs `image_data_urls=True` accepts, as Together's SDK spells them (case and all)."""

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


# --- The rules (in the table of `check.judge`) -----------------------------------------------


@per_message(
    "content_types",
    phrase=("has a content of a kind that isn't allowed", "have a content of a kind that isn't allowed"),
    raised_by="content_types= / part_types=",
    meaning='a content that isn\'t a string (`"text"`), or neither a string nor a list of content parts '
    '(`"text_or_parts"`); a part of a type not in `part_types=`',
    reads_contents=True,
)
def bad_content_type(c: Conversation, i: int) -> bool:
    """Refuses a content of a kind `content_types=` doesn't allow: not a string ("text"), or
    neither a string nor a list of content parts ("text_or_parts"), and a part of a type
    `part_types=` doesn't list. A missing or null content is no content, `empty_content`'s
    to judge."""
    fmt = c.fmt
    return not content_kind_ok(c.contents[i], fmt.content_types, fmt.part_types, fmt.text_key)


@per_message(
    "image_data_urls",
    phrase=(
        "has an image that isn't a base64 data URL of a JPEG, PNG or WEBP",
        "have an image that isn't a base64 data URL of a JPEG, PNG or WEBP",
    ),
    raised_by="image_data_urls=True",
    meaning="an `image_url` part that doesn't hold a base64 data URL of a JPEG, PNG or WEBP image",
    reads_contents=True,
)
def bad_image_url(c: Conversation, i: int) -> bool:
    """Refuses an `image_url` part that doesn't hold a base64 data URL of a JPEG, PNG or WEBP image."""
    return not all(map(data_url_ok, _urls(c.contents[i])))


@per_message(
    "max_image_bytes",
    phrase=("has an image that's too large", "have an image that's too large"),
    raised_by="max_image_bytes=",
    meaning="a data URL of an image larger than `max_image_bytes=`",
    reads_contents=True,
)
def image_too_large(c: Conversation, i: int) -> bool:
    """Refuses a base64 data URL of an image larger than `max_image_bytes=`."""
    limit: int = c.fmt.max_image_bytes  # type: ignore[assignment]  # set: the rule's switch is on
    return any((size := data_url_bytes(url)) is not None and size > limit for url in _urls(c.contents[i]))


@per_message(
    "image_roles",
    phrase=(
        "has images in a message whose role can't hold them",
        "have images in a message whose role can't hold them",
    ),
    raised_by="image_roles=",
    meaning="image parts in a message whose role isn't in `image_roles=` (or in a standard completion)",
    reads_contents=True,
)
def image_role(c: Conversation, i: int) -> bool:
    """Refuses image parts in a message whose role isn't one of `image_roles=`."""
    allowed: tuple[str, ...] = c.fmt.image_roles  # type: ignore[assignment]  # set: the switch is on
    return c.roles[i] not in allowed and image_parts(c.contents[i]) > 0


@whole_value(
    "max_images",
    phrase=("has too many images", "have too many images"),
    raised_by="max_images=",
    meaning="more image parts than `max_images=`",
    reads_contents=True,
)
def too_many_images(c: Conversation) -> bool:
    """Refuses a conversation holding more image parts than `max_images=`."""
    most: int = c.fmt.max_images  # type: ignore[assignment]  # set: the rule's switch is on
    return sum(map(image_parts, c.contents)) > most


@whole_value(
    "images",
    "extras",
    phrase=("has image parts that don't match its images", "have image parts that don't match their images"),
    raised_by="images column",
    meaning="the image parts don't match the length of the row's `images`",
)
def image_count(c: Conversation) -> bool:
    """Refuses image parts that don't add up to the number of the row's images."""
    images = c.images
    return images is BAD or images != sum(x.images for x in c.extras)


def _media_count(c: Conversation, which: int) -> bool:
    """Do the audios (0) or videos (1) of the messages differ from the row's (when it has such a column)?"""
    media = c.media
    total = None if media is None else media[which]
    if total is None:
        return False
    return total is BAD or total != sum(x.media[which] for x in c.extras)


@whole_value(
    "audios_column",
    "extras",
    phrase=("has audio tags that don't match its audios", "have audio tags that don't match their audios"),
    raised_by="audios_column=",
    meaning="the audio parts and `audio_token=` tags don't match the length of the row's audios",
    where="None: the row's audios column and the value as a whole",
)
def audio_count(c: Conversation) -> bool:
    """Refuses audio parts and `audio_token=` tags that don't add up to the number of the row's
    audios (LLaMA-Factory's mm_plugin: "The number of audios does not match the number of <audio> tokens")."""
    return _media_count(c, 0)


@whole_value(
    "videos_column",
    "extras",
    phrase=("has video tags that don't match its videos", "have video tags that don't match their videos"),
    raised_by="videos_column=",
    meaning="the video parts and `video_token=` tags don't match the length of the row's videos",
    where="None: the row's videos column and the value as a whole",
)
def video_count(c: Conversation) -> bool:
    """Refuses video parts and `video_token=` tags that don't add up to the number of the row's
    videos (LLaMA-Factory's mm_plugin: "The number of videos does not match the number of <video> tokens")."""
    return _media_count(c, 1)


# --- One content ----------------------------------------------------------------------------


def content_kind_ok(content: Any, kinds: str, part_types: tuple[str, ...] | None, text_key: str = "text") -> bool:
    """Is a content of a kind allowed (`bad_content_type`)? `kinds` is `content_types=`."""
    if content is MISSING or isinstance(content, str) or is_missing(content):
        return True
    if not is_sequence(content):
        return kinds == "any"
    if kinds == "text":
        return False
    return all(part_ok(part, part_types, text_key) for part in content)


def part_ok(part: Any, part_types: tuple[str, ...] | None, text_key: str = "text") -> bool:
    """A mapping with a string `type`; with `part_types`, one of them, and a text part's text a string."""
    if not isinstance(part, Mapping):
        return False
    kind = part.get("type")
    if not isinstance(kind, str):
        return False
    if part_types is None:
        return True
    return kind in part_types and (kind != "text" or isinstance(part.get(text_key), str))


def image_parts(content: Any) -> int:
    """How many image parts (`image`, `image_url`) a content holds.

    >>> image_parts([{"type": "text", "text": "Two:"}, {"type": "image"}, {"type": "image_url"}])
    2
    """
    if isinstance(content, str) or not is_sequence(content):
        return 0
    return sum(1 for part in content if isinstance(part, Mapping) and _is_image_type(part.get("type")))


def _is_image_type(kind: Any) -> bool:
    return isinstance(kind, str) and kind in IMAGE_PART_TYPES


def _urls(content: Any) -> list[Any]:
    """The `url` of each `image_url` part of a content (MISSING where the part holds no mapping)."""
    if isinstance(content, str) or not is_sequence(content):
        return []
    found = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "image_url":
            holder = part.get("image_url")
            found.append(holder.get("url", MISSING) if isinstance(holder, Mapping) else MISSING)
    return found


def data_url_ok(url: Any) -> bool:
    """Is `url` a base64 data URL of a JPEG, PNG or WEBP image, with a well-formed payload?

    >>> data_url_ok("data:image/png;base64,iVBORw0KGgo="), data_url_ok("https://x/y.png")
    (True, False)
    """
    if not isinstance(url, str) or not url.startswith(DATA_URL_PREFIXES):
        return False
    payload = url[url.index(",") + 1 :]
    return bool(payload) and len(payload) % 4 == 0 and _BASE64.fullmatch(payload) is not None


def data_url_bytes(url: Any) -> int | None:
    """The size of the image a base64 data URL holds (None: not such a URL), from its length alone.

    >>> data_url_bytes("data:image/png;base64,AAAA"), data_url_bytes("data:image/png;base64,AA=="), data_url_bytes("x")
    (3, 1, None)
    """
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, comma, payload = url.partition(",")
    if not comma or not head.endswith(";base64"):
        return None
    padding = 2 if payload.endswith("==") else 1 if payload.endswith("=") else 0
    return len(payload) * 3 // 4 - padding
