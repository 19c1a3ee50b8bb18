"""The rules of a dataset row read in the standard format: strings, and lists of content parts.

A standard value is a non-empty string (`not_text`, `empty_text`). With
`standard_parts=True`, a prompt or completion may also be a list of content parts
(Together's multimodal instruction format, `{"prompt": [{"type": "text", ...},
{"type": "image_url", ...}], "completion": "..."}`): it is judged by the rules of
content parts (`parts`) as the content of one message, the prompt's a user message
and the completion's an assistant one (as Together's `check_file` reads them), and
it is `empty_text` when it holds no image and no text. Then the rules of the pair:
chosen and rejected differ (`same_pair`) and, for an implicit prompt, share a
prefix and both go on after it (`implicit_prompt`).

`DatasetCheck` and `locate_rows` both read a row's problems here, each with the
field it is in (None: the row as a whole).
"""

from __future__ import annotations

import os
from typing import Any

from ..base.values import blank_checker
from ..check.codes import first_reason
from ..check.judge import active_rules
from ..conversation.conversation import Conversation
from ..conversation.spec import ChatFormat
from ..formats.parts import part_ok
from .value_formats import CONV, MISSING_VALUE, PARTS, TEXT

PART_FIELDS: dict[str, str] = {"prompt": "user", "completion": "assistant"}
"""The fields that may be lists of content parts (`standard_parts=True`), and the role each is judged as."""

IMAGE_CODES: tuple[str, ...] = ("bad_image_url", "image_too_large", "image_role", "too_many_images")
"""The rules of image parts that also judge a standard list of parts."""


def parts_codes(fmt: ChatFormat) -> set[str]:
    """The codes a standard list of content parts can get under `fmt`."""
    return {"bad_content_type"} | {rule.code for rule in active_rules(fmt) if rule.code in IMAGE_CODES}


def parts_problem(parts: Any, role: str, fmt: ChatFormat) -> str | None:
    """The first problem of a list of content parts read as a standard value of `role`: as the
    content of one message, so the kinds of parts are judged only under `content_types=` or
    `part_types=` (`bad_content_type`), as in a conversation.

    >>> parts_problem([{"type": "text", "text": " "}], "user", ChatFormat())
    'empty_text'
    >>> parts_problem([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}], "user", ChatFormat(image_data_urls=True))
    'bad_image_url'
    """
    blank = blank_checker(fmt.text_key)
    codes: list[str | None] = ["empty_text" if blank(parts) else None]
    judges_kinds = fmt.content_types != "any" or fmt.part_types is not None  # `bad_content_type`'s switch
    if judges_kinds and not all(part_ok(part, fmt.part_types, fmt.text_key) for part in parts):
        codes.append("bad_content_type")
    conversation = Conversation([role], [parts], fmt, blank)
    codes.extend(rule.code for rule in active_rules(fmt) if rule.code in IMAGE_CODES and rule.applies(conversation))
    return first_reason(codes)


def standard_problems(
    kinds: dict[str, tuple[str, Any]], fmt: ChatFormat, implicit: bool = False
) -> list[tuple[str, str | None]]:
    """Every problem of a standard row, as (code, field or None for the row as a whole).

    `kinds` maps each field to `formats.classify`'s (kind, value); `implicit` says the
    row is an implicit preference (`implicit_prompt` is checked).
    """
    found: list[tuple[str, str | None]] = []
    texts: dict[str, str] = {}
    for name, (kind, value) in kinds.items():
        code = _value_problem(name, kind, value, fmt)
        if code is not None:
            found.append((code, name))
        elif kind == TEXT:
            texts[name] = value
    if "chosen" in texts and "rejected" in texts:
        chosen, rejected = texts["chosen"], texts["rejected"]
        if chosen == rejected:
            found.append(("same_pair", None))
        elif implicit:
            prefix = os.path.commonprefix([chosen, rejected])
            if not prefix or prefix in (chosen, rejected):
                found.append(("implicit_prompt", None))
    return found


def _value_problem(name: str, kind: str, value: Any, fmt: ChatFormat) -> str | None:
    if kind == MISSING_VALUE:
        return None if fmt.na_pass else "not_text"
    if kind == CONV:
        return "mixed_format"
    if kind == PARTS:
        return parts_problem(value, PART_FIELDS[name], fmt)
    if kind != TEXT:
        return "not_text"
    return "empty_text" if not value or value.isspace() else None
