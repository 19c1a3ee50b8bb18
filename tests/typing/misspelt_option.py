"""A misspelt option is a type error (tests/test_signatures.py runs mypy on this file).

mypy reports the misspelt name on each line marked `# misspelt: NAME`: the step methods'
and the functions' parameters are written out. tests/typing/spelt_right.py is clean.
"""

from __future__ import annotations

import polars as pl

import chatgate

table = pl.DataFrame({"c": ["[]"]})
chatgate.Validate(table).col_vals_chat_format(columns="c", last_rol="assistant")  # misspelt: last_rol
chatgate.Validate(table).col_vals_dataset_type("conversational", sharegtp=True)  # misspelt: sharegtp
chatgate.first_problem("[]", allow_emtpy=True)  # misspelt: allow_emtpy
chatgate.annotate(table, "c", last_rol="assistant")  # misspelt: last_rol
