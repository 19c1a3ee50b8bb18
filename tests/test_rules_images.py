"""Content parts and images, Together's multimodal formats, and preference data read loosely.

Labelled examples, passing and failing, for each option of the image rules
(`image_data_urls`, `max_image_bytes`, `image_roles`, `max_images`, `part_types`), for
lists of parts as standard prompts and completions (`standard_parts`), for role aliases
and single-message answers in preference data (`role_map`, `single_message_answers`),
and for the together profile's image rules (the README's "Profiles" table). Each runs in
JSON text and native Arrow forms through the per-row reference and the batch path
(`assert_example`). Together's own multimodal cases are in tests/data/trainers/.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow as pa
import pytest

from chatgate.rules import (
    DATASET_TYPES,
    ChatFormat,
    check_batch,
    dataset_checks,
    first_problem,
    first_row_problem,
    format_codes,
    phrase,
)
from chatgate.rules.conversation.spec import ROLE_ALIASES
from chatgate.rules.formats.parts import data_url_bytes, data_url_ok

try:
    from rule_examples import A2, A, S, U, assert_example, examples, msg
except ImportError:  # tests/ imported as a package
    from tests.rule_examples import A2, A, S, U, assert_example, examples, msg

LM, PO, PC, PREF, IMPL, UNP = DATASET_TYPES[:6]  # TRL's; openai_preference has its own tests
DATA = Path(__file__).parent / "data" / "trainers"

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n tiny").decode()
JPEG = "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8\xff\xe0 tiny jpeg").decode()
WEBP = "data:image/webp;base64," + base64.b64encode(b"RIFF\x00\x00\x00\x00WEBP").decode()


def chat(*messages):
    return {"messages": list(messages)}


def text(value="What is in this image?"):
    return {"type": "text", "text": value}


def image(url=PNG):
    return {"type": "image_url", "image_url": {"url": url}}


def user(*parts):
    return msg("user", list(parts))


def answer(value="A cat."):
    """An assistant message whose content is parts, so that every content of a chat is a list."""
    return msg("assistant", [text(value)])


URLS = {"image_data_urls": True}
ROLES = {"image_roles": ["user"]}
TYPES = {"part_types": ["text", "image_url"]}
TOGETHER = {"profile": "together"}

OPTION_EXAMPLES = examples(
    # image_data_urls
    ("url-png", chat(user(text(), image(PNG)), answer()), LM, URLS, None),
    ("url-jpeg", chat(user(image(JPEG)), answer()), LM, URLS, None),
    ("url-webp", chat(user(image(WEBP)), answer()), LM, URLS, None),
    ("url-http", chat(user(image("https://x/y.png")), answer()), LM, URLS, "bad_image_url"),
    ("url-unchecked-by-default", chat(user(image("https://x/y.png")), answer()), LM, {}, None),
    ("url-jpg-is-not-jpeg", chat(user(image(JPEG.replace("jpeg", "jpg"))), answer()), LM, URLS, "bad_image_url"),
    ("url-gif", chat(user(image("data:image/gif;base64,R0lGODlh")), answer()), LM, URLS, "bad_image_url"),
    ("url-upper-case-type", chat(user(image(PNG.replace("png", "PNG"))), answer()), LM, URLS, "bad_image_url"),
    ("url-not-base64", chat(user(image("data:image/png,raw")), answer()), LM, URLS, "bad_image_url"),
    ("url-empty-payload", chat(user(image("data:image/png;base64,")), answer()), LM, URLS, "bad_image_url"),
    ("url-truncated-payload", chat(user(image(PNG[:-3])), answer()), LM, URLS, "bad_image_url"),
    ("url-bad-character", chat(user(image(PNG[:-4] + "AA-A")), answer()), LM, URLS, "bad_image_url"),
    ("url-padding-inside", chat(user(image("data:image/png;base64,AA==AAAA")), answer()), LM, URLS, "bad_image_url"),
    ("url-placeholder", chat(user(image("data:image/jpeg;base64,...")), answer()), LM, URLS, "bad_image_url"),
    ("url-image_url-is-a-string", chat(user({"type": "image_url", "image_url": PNG}), answer()), LM, URLS, "bad_image_url"),
    ("url-image_url-missing", chat(user({"type": "image_url"}), answer()), LM, URLS, "bad_image_url", "json"),
    ("url-null-url", chat(user({"type": "image_url", "image_url": {"url": None}}), answer()), LM, URLS, "bad_image_url"),
    ("url-image-part-has-no-url", chat(user({"type": "image"}), answer()), LM, URLS, None),
    ("url-string-content", chat(U, A), LM, URLS, None),
    ("url-before-weight", chat(user(image("x")), msg("assistant", [text()], weight=2)), LM, {**URLS, "weight_key": "weight"}, "bad_image_url"),
    ("url-after-content-type", chat(user(image("x")), msg("assistant", 5)), LM, {**URLS, "content_types": "text_or_parts"}, "bad_content_type", "json"),
    # max_image_bytes (3 bytes per 4 characters of payload, less its padding)
    ("bytes-three-of-three", chat(user(image("data:image/png;base64,AAAA")), answer()), LM, {"max_image_bytes": 3}, None),
    ("bytes-six-of-five", chat(user(image("data:image/png;base64,AAAAAAAA")), answer()), LM, {"max_image_bytes": 5}, "image_too_large"),
    ("bytes-padding-counts-less", chat(user(image("data:image/png;base64,AAAAAA==")), answer()), LM, {"max_image_bytes": 4}, None),
    ("bytes-any-data-url", chat(user(image("data:image/gif;base64,AAAAAAAA")), answer()), LM, {"max_image_bytes": 5}, "image_too_large"),
    ("bytes-address-not-measured", chat(user(image("https://x/" + "y" * 99)), answer()), LM, {"max_image_bytes": 1}, None),
    ("bytes-after-bad-url", chat(user(image("data:image/gif;base64,AAAAAAAA")), answer()), LM, {**URLS, "max_image_bytes": 5}, "bad_image_url"),
    # image_roles
    ("roles-user-image", chat(user(text(), image()), answer()), LM, ROLES, None),
    ("roles-assistant-image", chat(user(text()), msg("assistant", [image()])), LM, ROLES, "image_role"),
    ("roles-system-image", chat(msg("system", [image()]), user(text()), answer()), LM, ROLES, "image_role"),
    ("roles-image-part-counts", chat(user(text()), msg("assistant", [{"type": "image"}])), LM, ROLES, "image_role"),
    ("roles-text-parts-anywhere", chat(msg("system", [text("Be brief.")]), user(text()), answer()), LM, ROLES, None),
    ("roles-unchecked-by-default", chat(user(text()), msg("assistant", [image()])), LM, {}, None),
    ("roles-after-unknown-role", chat(msg("bot", [image()]), answer()), LM, ROLES, "unknown_role"),
    ("roles-before-alternation", chat(user(text()), msg("assistant", [image()]), answer()), LM, ROLES, "image_role"),
    ("roles-alias-mapped-first", chat(msg("human", [image()]), answer()), LM, {**ROLES, "role_map": {"human": "user"}}, None),
    ("roles-none-allowed", chat(user(image()), answer()), LM, {"image_roles": []}, "image_role"),
    # max_images
    ("images-two-of-two", chat(user(image(), image()), answer()), LM, {"max_images": 2}, None),
    ("images-three-across-messages", chat(user(image(), image()), answer(), user({"type": "image"}), answer()), LM, {"max_images": 2}, "too_many_images"),
    ("images-none-allowed", chat(user(image()), answer()), LM, {"max_images": 0}, "too_many_images"),
    ("images-after-empty-content", chat(user(image(), image()), msg("assistant", "")), LM, {"max_images": 1}, "empty_content", "json"),
    ("images-after-image-role", chat(user(image()), msg("assistant", [image()])), LM, {"max_images": 1, **ROLES}, "image_role"),
    # part_types
    ("types-text-and-image_url", chat(user(text(), image()), answer()), LM, TYPES, None),
    ("types-image-part", chat(user(text(), {"type": "image"}), answer()), LM, TYPES, "bad_content_type"),
    ("types-audio-part", chat(user({"type": "input_audio", "text": "x"}), answer()), LM, TYPES, "bad_content_type"),
    ("types-text-part-null-text", chat(user(text(None)), answer()), LM, TYPES, "bad_content_type"),
    ("types-text-part-without-text", chat(user({"type": "text"}), answer()), LM, TYPES, "bad_content_type", "json"),
    ("types-text-part-number", chat(user(text(5)), answer()), LM, TYPES, "bad_content_type", "json"),
    ("types-text-part-empty-text", chat(user(text("")), answer()), LM, {**TYPES, "allow_empty": True}, None),
    ("types-string-contents-pass", chat(U, A), LM, TYPES, None),
    ("types-any-content-otherwise", chat(msg("user", 5), A), LM, TYPES, None, "json"),
    ("types-text-key", chat(user({"type": "text", "value": "Hi"}), msg("assistant", [{"type": "text", "value": "Yo"}])), LM, {**TYPES, "text_key": "value"}, None),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", OPTION_EXAMPLES)
def test_option_example(row, kind, options, expected, forms):
    assert assert_example(row, kind, options, expected, forms)


# --- Lists of parts as standard prompts and completions (Together's instruction format) -------

PARTS = {"standard_parts": True}
PROMPT = [text("What's the difference between these two images?"), image(), image(JPEG)]

STANDARD_EXAMPLES = examples(
    ("parts-prompt-string-completion", {"prompt": PROMPT, "completion": "A cat and a dog."}, PC, PARTS, None),
    ("parts-prompt-and-completion", {"prompt": PROMPT, "completion": [text("A cat and a dog.")]}, PC, PARTS, None),
    ("parts-need-the-option", {"prompt": PROMPT, "completion": "A cat and a dog."}, PC, {}, "mixed_format"),
    ("parts-string-prompt", {"prompt": "The sky is", "completion": " blue."}, PC, PARTS, None),
    ("parts-prompt-only", {"prompt": PROMPT}, PO, PARTS, None),
    ("parts-unpaired", {"prompt": PROMPT, "completion": "Cats.", "label": True}, UNP, PARTS, None),
    ("parts-preference-prompt", {"prompt": PROMPT, "chosen": "Cats.", "rejected": "Dogs."}, PREF, PARTS, None),
    ("parts-preference-same-pair", {"prompt": PROMPT, "chosen": "Cats.", "rejected": "Cats."}, PREF, PARTS, "same_pair"),
    ("parts-not-in-chosen", {"prompt": "Sky?", "chosen": [text("Blue.")], "rejected": "Green."}, PREF, PARTS, "mixed_format"),
    ("parts-with-conversation", {"prompt": PROMPT, "completion": [A]}, PC, PARTS, "mixed_format"),
    # As a message's content: its parts' kinds are judged under content_types= or part_types= only.
    ("parts-not-a-mapping-any", {"prompt": [text("Hi"), 5], "completion": "Yo"}, PC, PARTS, None, "json"),
    ("parts-type-not-a-string-any", {"prompt": [text("Hi"), {"type": 5}], "completion": "Yo"}, PC, PARTS, None, "json"),
    ("parts-not-a-mapping", {"prompt": [text("Hi"), 5], "completion": "Yo"}, PC,
     {**PARTS, "content_types": "text_or_parts"}, "bad_content_type", "json"),
    ("parts-type-not-a-string", {"prompt": [text("Hi"), {"type": 5}], "completion": "Yo"}, PC,
     {**PARTS, "content_types": "text_or_parts"}, "bad_content_type", "json"),
    ("parts-blank", {"prompt": [text(" ")], "completion": "Yo"}, PC, PARTS, "empty_text"),
    ("parts-empty-list-is-messages", {"prompt": [], "completion": "Yo"}, PC, PARTS, "mixed_format", "json"),
    ("parts-messages-stay-messages", {"prompt": [U], "completion": [A]}, PC, PARTS, None),
    ("parts-pinned-standard", {"prompt": PROMPT, "completion": "Cats."}, PC, {**PARTS, "format": "standard"}, None),
    ("parts-pinned-conversational", {"prompt": PROMPT, "completion": [A]}, PC, {**PARTS, "format": "conversational"}, "mixed_format"),
    ("parts-image-options-apply", {"prompt": [image("https://x")], "completion": "Yo"}, PC, {**PARTS, **URLS}, "bad_image_url"),
    ("parts-completion-is-the-assistant", {"prompt": "Draw", "completion": [image()]}, PC, {**PARTS, **ROLES}, "image_role"),
    ("parts-max-images", {"prompt": PROMPT, "completion": "Yo"}, PC, {**PARTS, "max_images": 1}, "too_many_images"),
    ("parts-text-key", {"prompt": [{"type": "text", "value": "Hi"}], "completion": "Yo"}, PC, {**PARTS, "text_key": "value"}, None),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", STANDARD_EXAMPLES)
def test_standard_parts_example(row, kind, options, expected, forms):
    assert assert_example(row, kind, options, expected, forms)


# --- Preference data: role aliases and single-message answers ---------------------------------

ALIASES = {"role_map": ROLE_ALIASES}
SINGLE = {"single_message_answers": True}
SKY = [msg("user", "What color is the sky?")]

PREFERENCE_EXAMPLES = examples(
    # role aliases of an otherwise standard message list (role_map=)
    ("alias-human-gpt-bot", {"prompt": [msg("human", "Sky?")], "chosen": [msg("gpt", "Blue.")], "rejected": [msg("bot", "Green.")]}, PREF, ALIASES, None),
    ("alias-model", {"prompt": [msg("human", "Sky?")], "chosen": [msg("model", "Blue.")], "rejected": [msg("model", "Green.")]}, PREF, ALIASES, None),
    ("alias-needs-the-map", {"prompt": [msg("human", "Sky?")], "chosen": [msg("gpt", "Blue.")], "rejected": [msg("gpt", "Green.")]}, PREF, {}, "unknown_role"),
    ("alias-implicit", {"chosen": [msg("human", "Sky?"), msg("gpt", "Blue.")], "rejected": [msg("human", "Sky?"), msg("bot", "Green.")]}, IMPL, ALIASES, None),
    ("alias-completion-role", {"prompt": SKY, "chosen": [msg("human", "Blue.")], "rejected": [A2]}, PREF, ALIASES, "completion_role"),
    ("alias-unpaired", {"prompt": [msg("human", "Sky?")], "completion": [msg("model", "Blue.")], "label": False}, UNP, ALIASES, None),
    # single-message answers
    ("single-chosen-rejected", {"prompt": SKY, "chosen": A, "rejected": A2}, PREF, SINGLE, None),
    ("single-needs-the-option", {"prompt": SKY, "chosen": A, "rejected": A2}, PREF, {}, "not_messages"),
    ("single-and-list", {"prompt": SKY, "chosen": A, "rejected": [A2]}, PREF, SINGLE, None, "json"),
    ("single-same-pair", {"prompt": SKY, "chosen": A, "rejected": A}, PREF, SINGLE, "same_pair"),
    ("single-user-answer", {"prompt": SKY, "chosen": msg("user", "Blue."), "rejected": A2}, PREF, SINGLE, "completion_role"),
    ("single-empty-answer", {"prompt": SKY, "chosen": msg("assistant", ""), "rejected": A2}, PREF, SINGLE, "empty_content"),
    ("single-completion", {"prompt": SKY, "completion": A}, PC, SINGLE, None),
    ("single-unpaired", {"prompt": SKY, "completion": A, "label": True}, UNP, SINGLE, None),
    ("single-not-a-prompt", {"prompt": U, "completion": [A]}, PC, SINGLE, "not_messages"),
    ("single-not-implicit", {"chosen": A, "rejected": A2}, IMPL, SINGLE, "not_messages"),
    ("single-without-role", {"prompt": SKY, "chosen": {"content": "Blue."}, "rejected": A2}, PREF, SINGLE, "not_messages"),
    ("single-wrapper-still-read", {"prompt": SKY, "chosen": {"messages": [A]}, "rejected": A2}, PREF, SINGLE, None, "json"),
    ("single-with-aliases", {"prompt": [msg("human", "Sky?")], "chosen": msg("gpt", "Blue."), "rejected": msg("bot", "Green.")}, PREF, {**SINGLE, **ALIASES}, None),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", PREFERENCE_EXAMPLES)
def test_preference_example(row, kind, options, expected, forms):
    assert assert_example(row, kind, options, expected, forms)


# --- The together profile's image rules (the README's table) -----------------------------------

TEN = [image()] * 10

PROFILE_EXAMPLES = examples(
    # Together's documentation's conversational VLM example, with a real (tiny) image
    ("together-vlm-chat", chat(msg("system", [text("You are a helpful assistant with vision capabilities.")]), user(text("How many oranges are in the bowl?"), image(JPEG)), answer("There are at least 7 oranges in this bowl.")), LM, TOGETHER, None),
    ("together-vlm-instruction", {"prompt": [text("How many oranges are in the bowl?"), image(JPEG)], "completion": [text("There are at least 7 oranges.")]}, PC, TOGETHER, None),
    ("together-instruction-string-completion", {"prompt": [text("How many?"), image(WEBP)], "completion": "Seven."}, PC, TOGETHER, None),
    ("together-http-image", chat(user(text(), image("https://x/y.png")), answer()), LM, TOGETHER, "bad_image_url"),
    ("together-jpg-type", chat(user(image(JPEG.replace("jpeg", "jpg"))), answer()), LM, TOGETHER, "bad_image_url"),
    ("together-image-in-assistant", chat(user(text()), msg("assistant", [image()])), LM, TOGETHER, "image_role"),
    ("together-image-in-system", chat(msg("system", [image()]), user(text()), answer()), LM, TOGETHER, "image_role"),
    ("together-ten-images", chat(user(*TEN), answer()), LM, TOGETHER, None),
    ("together-eleven-images", chat(user(*TEN), answer(), user(image()), answer()), LM, TOGETHER, "too_many_images"),
    ("together-image-part", chat(user({"type": "image"}), answer()), LM, TOGETHER, "bad_content_type"),
    ("together-null-text", chat(user(text(None), image()), answer()), LM, TOGETHER, "bad_content_type"),
    ("together-instruction-http-image", {"prompt": [image("https://x/y.png")], "completion": "Yo"}, PC, TOGETHER, "bad_image_url"),
    ("together-instruction-image-in-completion", {"prompt": "Draw a cat", "completion": [image()]}, PC, TOGETHER, "image_role"),
    ("together-instruction-audio-part", {"prompt": [{"type": "input_audio", "text": "x"}], "completion": "Yo"}, PC, TOGETHER, "bad_content_type"),
    ("together-instruction-eleven-images", {"prompt": [*TEN, image()], "completion": "Yo"}, PC, TOGETHER, "too_many_images"),
    ("together-instruction-empty", {"prompt": [text("")], "completion": "Yo"}, PC, TOGETHER, "empty_text"),
)


@pytest.mark.parametrize("row, kind, options, expected, forms", PROFILE_EXAMPLES)
def test_together_example(row, kind, options, expected, forms):
    assert assert_example(row, kind, options, expected, forms)


def test_together_image_size_limit_is_ten_mebibytes():
    """Together's MAX_IMAGE_BYTES, from the length of the base64 payload (no decoding)."""
    largest = "data:image/png;base64," + "A" * (10 * 2**20 // 3 * 4)  # 10,485,759 bytes
    over = largest + "AAAA"  # 10,485,762 bytes
    assert data_url_bytes(largest) <= 10 * 2**20 < data_url_bytes(over)
    rows = [json.dumps([user(image(url)), answer()]) for url in (largest, over)]
    assert [first_problem(row, profile="together") for row in rows] == [None, "image_too_large"]
    assert check_batch(pa.array(rows), profile="together").to_pylist() == [None, "image_too_large"]


def test_together_own_multimodal_cases():
    """Rows 1 and 2 pass Together's check_file with `...` as their base64 payload, a placeholder
    that chatgate refuses; with a real payload they pass. Row 3 both refuse."""
    lines = (DATA / "together_multimodal_cases.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [first_row_problem(row, profile="together") for row in rows] == ["bad_image_url"] * 3
    fixed = [json.loads(line.replace("data:image/jpeg;base64,...", JPEG)) for line in lines]
    assert [first_row_problem(row, profile="together") for row in fixed] == [None, None, "bad_image_url"]
    (check,) = dataset_checks(None, ["messages"], profile="together")
    table = pa.table({"messages": [json.dumps(row["messages"]) for row in fixed[1:]]})
    assert check.check(table).to_pylist() == [None, "bad_image_url"]


def test_data_urls():
    assert data_url_ok(PNG) and data_url_ok(JPEG) and data_url_ok(WEBP)
    for bad in (None, 5, "", PNG.replace("base64", "base32"), " " + PNG, PNG + "\n", PNG[:-1]):
        assert not data_url_ok(bad), bad
    assert data_url_bytes("data:image/png;name=a.png;base64,AAAAAA==") == 4
    assert data_url_bytes("data:text/plain,AAAA") is None


@pytest.mark.parametrize(
    "code, one",
    [
        ("bad_image_url", "has an image that isn't a base64 data URL of a JPEG, PNG or WEBP"),
        ("image_too_large", "has an image that's too large"),
        ("image_role", "has images in a message whose role can't hold them"),
        ("too_many_images", "has too many images"),
    ],
)
def test_a_new_code_has_its_note(code, one):
    assert phrase(code, 1) == f"1 {one} (`{code}`)"


def test_the_codes_a_format_can_give():
    fmt = ChatFormat(image_data_urls=True, max_image_bytes=9, image_roles=["user"], max_images=2, part_types=["text"])
    assert format_codes(fmt) == (
        "too_large", "not_messages", "no_messages", "bad_message", "bad_content_type", "bad_image_url", "image_too_large",
        "unknown_role", "image_role", "system_position", "not_alternating", "empty_content", "too_many_images",
    )
    (check,) = dataset_checks("prompt_completion", ["prompt", "completion"], chat=fmt)
    assert "image_role" in check.codes and "empty_text" in check.codes
    (parts,) = dataset_checks("prompt_only", ["prompt"], standard_parts=True, max_images=1)
    assert {"bad_content_type", "too_many_images", "empty_text"} <= set(parts.codes)
    assert "bad_image_url" not in parts.codes


def test_the_options_are_checked():
    for bad, error in (
        ({"image_data_urls": "yes"}, TypeError),
        ({"max_image_bytes": 0}, ValueError),
        ({"max_image_bytes": True}, ValueError),
        ({"max_images": -1}, ValueError),
        ({"max_images": 1.5}, ValueError),
        ({"image_roles": "user"}, TypeError),
        ({"part_types": [1]}, TypeError),
        ({"standard_parts": 1}, TypeError),
        ({"single_message_answers": None}, TypeError),
    ):
        with pytest.raises(error):
            ChatFormat(**bad)
    fmt = ChatFormat(image_roles=["user"], part_types=("text",))
    assert fmt.image_roles == ("user",) and fmt.as_dict()["image_roles"] == ["user"]
    assert fmt.as_dict()["part_types"] == ["text"]
    assert hash(fmt) == hash(ChatFormat(image_roles=("user",), part_types=["text"]))


def test_reading_options_keep_the_fast_path():
    """standard_parts and single_message_answers change how a row is read, not a conversation."""
    assert ChatFormat(standard_parts=True, single_message_answers=True).is_core
    assert format_codes(ChatFormat(standard_parts=True)) == format_codes(ChatFormat())


def test_the_together_profile_sets_the_image_rules():
    from chatgate.rules import format_from

    fmt = format_from(profile="together")
    assert (fmt.image_data_urls, fmt.max_image_bytes, fmt.image_roles, fmt.max_images) == (True, 10 * 2**20, ("user",), 10)
    assert fmt.part_types == ("text", "image_url") and fmt.standard_parts
    assert not format_from(profile="openai").image_data_urls  # OpenAI takes image addresses too
    assert format_from(profile="together", max_images=None).max_images is None
    assert first_problem([user(*TEN, image()), answer()], profile="together", max_images=None) is None
    assert first_problem([msg("user", [S]), A], profile="together") == "bad_content_type"


def test_single_message_answers_read_llamafactory_preferences_as_sharegpt_does():
    """LLaMA-Factory's dpo_en_demo.json (chosen and rejected are single ShareGPT messages): read
    with role/content keys, a role map and single-message answers, each row gets the code it
    gets with sharegpt=True."""
    rows = json.loads((Path(__file__).parent / "data" / "corpus" / "llamafactory" / "dpo_en_demo.json").read_text())
    columns = {"prompt": "conversations"}
    loose = {"role_key": "from", "content_key": "value", "role_map": {"human": "user", "gpt": "assistant"}}
    for extra, code in (({}, None), ({"first_role": "assistant"}, "first_role"), ({"last_role": "user"}, "last_role")):
        sharegpt = [first_row_problem(row, PREF, columns=columns, sharegpt=True, **extra) for row in rows]
        mapped = [first_row_problem(row, PREF, columns=columns, single_message_answers=True, **loose, **extra) for row in rows]
        assert mapped == sharegpt == [code] * len(rows)
    assert first_row_problem(rows[0], PREF, columns=columns, **loose) == "not_messages"
