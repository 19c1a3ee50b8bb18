"""The calls of tests/typing/misspelt_option.py spelt right, and the other written-out
signatures used as documented: mypy (strict) finds nothing here (tests/test_signatures.py)."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

import chatgate

table = pl.DataFrame({"c": ["[]"]})
plan: chatgate.Validate = chatgate.Validate(table).col_vals_chat_format(columns="c", last_role="assistant")
plan = plan.col_vals_chat_format("c", ["user", "assistant"], True, "user", "assistant", pre=None, thresholds=0.1)
plan = plan.col_vals_dataset_type("preference", columns={"chosen": "c"}, profile="openai", dedup="off", turns="all")
code: str | None = chatgate.first_problem('[{"role": "user", "content": "Hi"}]', roles=("user",), role_map={"human": "user"})
codes: pa.StringArray = chatgate.check_batch(pa.array(["[]"]), tools=True, content_types="text", max_value_bytes=None)
annotated = chatgate.annotate(table, "c", turns="all", sharegpt=True)
passing, failing = chatgate.split(table, ["c"], last_role="assistant")
