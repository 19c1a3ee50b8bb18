"""Contents that are lists of parts, and images: the kinds of content allowed, data URLs, counts.

Written from the README's option tables (`content_types=`, `part_types=`,
`image_data_urls=`, `max_image_bytes=`, `image_roles=`, `max_images=`,
`images_column=`, `image_token=`) and the seed on vision datasets: a content may be
a list of parts, `{"type": "text", "text": ...}`, `{"type": "image"}` (an image of
the row's `images` column) or `{"type": "image_url", "image_url": {"url": ...}}`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .values import ABSENT, BAD, decoded, is_list, is_missing


def content_allowed(content, o):
    """Is a content of a kind the options allow? No content at all is empty_content's business."""
    if content is ABSENT or is_missing(content) or isinstance(content, str):
        return True
    if is_list(content):
        if o.content_types == "text":
            return False
        return all(part_allowed(part, o.part_types, o.text_key) for part in content)
    return o.content_types == "any"


def checks_kinds(o):
    return o.content_types != "any" or o.part_types is not None


def part_allowed(part, part_types, text_key="text"):
    """A part is a mapping with a string `type`; with `part_types`, one listed, and a text
    part's text (under `text_key`) a string."""
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        return False
    if part_types is None:
        return True
    if part["type"] not in part_types:
        return False
    return part["type"] != "text" or isinstance(part.get(text_key), str)


def image_parts_of(content):
    """The image parts of a content: `image` and `image_url` parts alike."""
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


# --- The row's images column ----------------------------------------------------------------


def row_images(value):
    """How many images a row's `images` value holds: a list (or its JSON text), null for none;
    anything else is BAD (it can't match any count)."""
    if is_missing(value):
        return 0
    value = decoded(value)
    return len(value) if is_list(value) else BAD


def images_referenced(content, o):
    """The images of the row a content refers to: its `{"type": "image"}` parts, and each
    `image_token` in its text (a string content, or the text of its text parts)."""
    if isinstance(content, str):
        return content.count(o.image_token) if o.image_token else 0
    if not is_list(content):
        return 0
    count = 0
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "image":
            count += 1
        elif part.get("type") == "text" and o.image_token and isinstance(part.get(o.text_key), str):
            count += part[o.text_key].count(o.image_token)
    return count
