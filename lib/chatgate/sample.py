"""Seeded synthetic chat tables: for the demo, the tests and the benchmarks.

Every defect the check knows is made by a small mutation of a good conversation,
so a table holds each problem code in known proportions.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa

SYSTEM_PROMPTS = (
    "You are a helpful assistant.",
    "You are a concise assistant. Answer in one paragraph.",
    "You are a senior data engineer who explains things plainly.",
)
TOPICS = ("Delta Lake", "Spark joins", "DuckDB", "tokenizers", "chat templates", "Parquet", "Airflow", "Arrow")
WORDS = (
    "table partition column schema version commit shuffle broadcast join batch stream "
    "token prompt reply model train data row file query plan cache"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def good_conversation(rng: random.Random, *, mean_words: int = 40) -> list[dict[str, Any]]:
    """A well-formed conversation: an optional system message, then user/assistant turns."""
    messages = []
    if rng.random() < 0.6:
        messages.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    for _ in range(rng.randint(1, 4)):
        topic = rng.choice(TOPICS)
        messages.append({"role": "user", "content": f"How do I use {topic}? " + _text(rng, mean_words // 4)})
        messages.append({"role": "assistant", "content": _text(rng, rng.randint(mean_words // 2, mean_words * 2))})
    return messages


def _first_turn(messages: list[dict[str, Any]]) -> int:
    return 1 if messages[0]["role"] == "system" else 0


# Each defect turns a good conversation into JSON text with one known problem.
DEFECTS: dict[str, Callable[[random.Random, list[dict[str, Any]]], str]] = {
    "not_messages": lambda rng, m: rng.choice(['{"text": "hello"}', "not json", '"[]"', "42", "null"]),
    "no_messages": lambda rng, m: rng.choice(["[]", '{"messages": []}']),
    "bad_message": lambda rng, m: json.dumps(m[:-1] + [{"content": m[-1]["content"]}]),
    "unknown_role": lambda rng, m: json.dumps(m[:-1] + [{**m[-1], "role": rng.choice(["bot", "gpt", "Assistant"])}]),
    "system_position": lambda rng, m: json.dumps(m + [{"role": "system", "content": "Be brief."}]),
    "first_role": lambda rng, m: json.dumps(
        m[: _first_turn(m)] + [{"role": "assistant", "content": "Hi! Ask me anything."}] + m[_first_turn(m) :]
    ),
    "not_alternating": lambda rng, m: json.dumps(
        m[: _first_turn(m) + 1] + [{"role": "user", "content": "Hello?"}] + m[_first_turn(m) + 1 :]
    ),
    "last_role": lambda rng, m: json.dumps(m + [{"role": "user", "content": "Thanks!"}]),
    "empty_content": lambda rng, m: json.dumps(m[:-1] + [{**m[-1], "content": rng.choice(["", "  \n", None])}]),
}


def chat_table(
    rows: int,
    *,
    seed: int = 0,
    duplicate_fraction: float = 0.3,
    defect_fraction: float = 0.05,
    mean_words: int = 40,
) -> pa.Table:
    """A table of `rows` conversations as JSON text: id, source, messages.

    `duplicate_fraction` of the rows repeat an earlier row's value; `defect_fraction`
    carry one defect each, cycling through every problem code. The defects are
    meant for a check with `first_role="user", last_role="assistant"`.
    """
    rng = random.Random(seed)
    kinds = list(DEFECTS)
    values: list[str] = []
    for i in range(rows):
        if values and rng.random() < duplicate_fraction:
            values.append(values[rng.randrange(len(values))])
            continue
        messages = good_conversation(rng, mean_words=mean_words)
        if rng.random() < defect_fraction:
            values.append(DEFECTS[kinds[i % len(kinds)]](rng, messages))
        else:
            values.append(json.dumps(messages))
    return pa.table(
        {
            "id": pa.array(range(1, rows + 1), pa.int64()),
            "source": pa.array([f"shard-{i % 4}" for i in range(rows)]),
            "messages": pa.array(values, pa.string()),
        }
    )
