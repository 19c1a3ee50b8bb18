"""Token statistics of a step (`token_stats=True`): how many tokens its conversations hold, and
what a trainer would bill for them.

Every row whose value holds a list of messages is counted, passing or failing (a `too_long` row
is what the histogram's tail shows): the table as it is, before the gate sets rows aside (on a
`--since` run, the rows it read). A row counts its tokens as `max_tokens=` counts them
(`trainers.tokens`, never cut short by the limit) and its assistant tokens, the tokens of the
assistant messages' contents (what a trainer trains on; OpenAI's cookbook
`num_assistant_tokens_from_messages`). A null, or a value that holds no messages, isn't counted.

The engines run `token_partial` on each batch where the rows are and sum its rows by token count
(`Engine.sum_batches`); `TokenStats.of` reads the summed table. Every figure comes from that exact
histogram, so it is the same on every engine: percentiles by nearest rank (the smallest count at
least that share of the rows reach), the median is the 50th.

Billing follows OpenAI's cookbook (openai/openai-cookbook,
`examples/Chat_finetuning_data_prep.ipynb`): each conversation is billed its tokens, at most
`max_tokens=` when set (the trainer truncates the rest), times the epochs; without `epochs=`, the
epochs OpenAI picks by default for the number of conversations (`default_epochs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..base.tokens import TIKTOKEN, load_tokenizer
from ..base.values import NOT_JSON, decode, is_missing
from ..conversation.spec import ChatFormat
from ..formats.messages import messages_in
from ..trainers.tokens import conversation_texts, value_texts
from .batch import python_values

TOKENS = "tokens"
ROWS = "rows"
ASSISTANT = "assistant_tokens"
PARTIAL = pa.schema([(TOKENS, pa.int64()), (ROWS, pa.int64()), (ASSISTANT, pa.int64())])
"""What `token_partial` gives per batch: rows and their assistant tokens summed per token count."""

TARGET_EPOCHS = 3
MIN_TARGET_EXAMPLES = 100
MAX_TARGET_EXAMPLES = 25_000
MIN_DEFAULT_EPOCHS = 1
MAX_DEFAULT_EPOCHS = 25
"""The cookbook's constants of OpenAI's default epochs."""

PERCENTILES = (50, 95)
HISTOGRAM_BINS = 40
"""The bins of the histogram a summary row and the run report hold."""


def default_epochs(conversations: int) -> int:
    """The epochs OpenAI trains for by default on this many conversations (the cookbook's rule).

    >>> default_epochs(10), default_epochs(1_000), default_epochs(20_000)
    (10, 3, 1)
    """
    if conversations <= 0:
        return TARGET_EPOCHS
    if conversations * TARGET_EPOCHS < MIN_TARGET_EXAMPLES:
        return min(MAX_DEFAULT_EPOCHS, MIN_TARGET_EXAMPLES // conversations)
    if conversations * TARGET_EPOCHS > MAX_TARGET_EXAMPLES:
        return max(MIN_DEFAULT_EPOCHS, MAX_TARGET_EXAMPLES // conversations)
    return TARGET_EPOCHS


def value_texts_of(value: Any, fmt: ChatFormat, cookbook: bool) -> tuple[int, list[str], list[str]] | None:
    """A value's fixed tokens, the texts its tokens count, and its assistant messages' content texts
    (see the module docstring); None when it holds no messages."""
    if is_missing(value):
        return None
    value = decode(value)
    if value is NOT_JSON:
        return None
    messages = messages_in(value, fmt)
    if messages is None:
        return None
    fixed, texts = conversation_texts(messages, cookbook, fmt.content_key, fmt.text_key)
    aliases = fmt.role_aliases or {}
    assistant: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get(fmt.role_key)
        if isinstance(role, str) and aliases.get(role, role) == "assistant":
            assistant += value_texts(message.get(fmt.content_key), fmt.text_key)
    return fixed, texts, assistant


def token_partial(columns: Mapping[str, Any], column: str, fmt: ChatFormat) -> pa.Table:
    """The rows of a batch (column name -> Arrow array, or Python values) and their assistant
    tokens, summed per token count (`PARTIAL`).

    Each distinct value of the batch is read once, and each distinct text counted once, the
    batch's texts in one call of the tokenizer (`Tokenizer.count_many`).
    """
    assert fmt.tokenizer is not None  # the options refuse token_stats= without it
    tokenizer = load_tokenizer(fmt.tokenizer)
    cookbook = tokenizer.kind == TIKTOKEN
    values = _python_values(columns[column])
    seen: dict[Any, tuple[int, list[str], list[str]] | None] = {}
    read = []
    for value in values:
        try:
            found = seen[value] if value in seen else seen.setdefault(value, value_texts_of(value, fmt, cookbook))
        except TypeError:  # a native value (a list, a dict): not hashable, read each time
            found = value_texts_of(value, fmt, cookbook)
        if found is not None:
            read.append(found)
    texts = list(dict.fromkeys(t for _, all_texts, _ in read for t in all_texts))
    counts = dict(zip(texts, tokenizer.count_many(texts)))
    rows: dict[int, list[int]] = {}
    for fixed, all_texts, assistant in read:
        tally = rows.setdefault(fixed + sum(counts[t] for t in all_texts), [0, 0])
        tally[0] += 1
        tally[1] += sum(counts[t] if t in counts else tokenizer.count(t) for t in assistant)
    return pa.table(
        [
            pa.array(list(rows), pa.int64()),
            pa.array([t[0] for t in rows.values()], pa.int64()),
            pa.array([t[1] for t in rows.values()], pa.int64()),
        ],
        schema=PARTIAL,
    )


@dataclass(frozen=True)
class TokenStats:
    """A step's token statistics (see the module docstring)."""

    conversations: int
    total: int
    min: int | None
    median: int | None
    p95: int | None
    max: int | None
    assistant: int
    epochs: int
    billed: int
    limit: int | None
    over_limit: int | None
    histogram: tuple[tuple[int, int], ...]
    """(tokens, conversations) for each count found, ascending."""

    @classmethod
    def of(cls, merged: pa.Table, fmt: ChatFormat) -> TokenStats:
        """The statistics of the partials summed per token count (`PARTIAL`) and the step's options."""
        merged = merged.sort_by(TOKENS)
        tokens = merged.column(TOKENS).to_pylist()
        rows = merged.column(ROWS).to_pylist()
        conversations = sum(rows)
        limit = fmt.max_tokens
        epochs = fmt.epochs if fmt.epochs is not None else default_epochs(conversations)
        capped = sum(min(t, limit) * n for t, n in zip(tokens, rows)) if limit is not None else None
        total = sum(t * n for t, n in zip(tokens, rows))
        median, p95 = (_nearest_rank(tokens, rows, p) for p in PERCENTILES)
        return cls(
            conversations=conversations,
            total=total,
            min=tokens[0] if tokens else None,
            median=median,
            p95=p95,
            max=tokens[-1] if tokens else None,
            assistant=int(pc.sum(merged.column(ASSISTANT)).as_py() or 0),
            epochs=epochs,
            billed=epochs * (total if capped is None else capped),
            limit=limit,
            over_limit=None if limit is None else sum(n for t, n in zip(tokens, rows) if t > limit),
            histogram=tuple(zip(tokens, rows)),
        )

    def as_dict(self) -> dict[str, Any]:
        """The figures a summary row holds (the histogram apart)."""
        return {name: getattr(self, name) for name in SUMMARY_FIELDS}

    def lines(self) -> list[str]:
        """The statistics in two lines, as the job's summary and `Validate`'s notes print them."""
        if not self.conversations:
            return ["tokens: no conversation to count"]
        over = "" if self.limit is None else f"; {self.over_limit or 0:,} over max_tokens={self.limit:,}"
        cap = "" if self.limit is None else f", each at most {self.limit:,}"
        return [
            f"tokens: {self.total:,} in {_count(self.conversations, 'conversation')} (min {self.min:,}, "
            f"median {self.median:,}, p95 {self.p95:,}, max {self.max:,}); assistant {self.assistant:,}{over}",
            f"tokens billed: {self.billed:,} ({_count(self.epochs, 'epoch')}{cap})",
        ]

    def bins(self, count: int = HISTOGRAM_BINS) -> list[tuple[int, int, int]]:
        """The histogram in at most `count` bins of equal width from 0 tokens:
        (first count, last count, conversations), each bin's counts inclusive.

        >>> TokenStats.of(pa.table({"tokens": [1, 5, 9], "rows": [2, 1, 1], "assistant_tokens": [0, 0, 0]}),
        ...               ChatFormat()).bins(3)
        [(0, 3, 2), (4, 7, 1), (8, 11, 1)]
        """
        if self.max is None:
            return []
        width = -(-(self.max + 1) // count)
        found = [0] * (self.max // width + 1)
        for tokens, rows in self.histogram:
            found[tokens // width] += rows
        return [(i * width, (i + 1) * width - 1, rows) for i, rows in enumerate(found)]


SUMMARY_FIELDS = (
    "conversations", "total", "min", "median", "p95", "max", "assistant", "epochs", "billed", "limit", "over_limit"
)
"""The figures of `TokenStats` a summary row holds, as `tokens_<name>` columns."""


def _python_values(array: Any) -> list[Any]:
    """The values of a column as the rules read them: an Arrow array's (chunks, extension types),
    or Python values as they are."""
    if isinstance(array, list):
        return array
    if isinstance(array, pa.ChunkedArray):
        return [v for chunk in array.chunks for v in _python_values(chunk)]
    return python_values(array.storage if isinstance(array.type, pa.ExtensionType) else array)


def _nearest_rank(tokens: list[int], rows: list[int], percent: int) -> int | None:
    """The smallest count that at least `percent`% of the rows reach or stay under."""
    total = sum(rows)
    if not total:
        return None
    needed = -(-percent * total // 100)  # ceil: the nearest-rank definition
    seen = 0
    for count, n in zip(tokens, rows):
        seen += n
        if seen >= needed:
            return count
    return tokens[-1]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
