"""Pure rules: what a well-formed conversation (and dataset row) is. No engine imports here.

The rules live in rooms, one sub-package each, in layers: a room imports only from the
rooms of lower layers (and from its own), never from a higher one
(`tests/test_rules_layers.py` walks every import, those inside functions too).

| layer | room | what it holds |
|---|---|---|
| 0 | `base/` | values as they come: markers, JSON decoding, missing and blank values, sizes; the cycle collector paused for bulk repairs |
| 1 | `conversation/` | `ChatFormat` (every option) and `Conversation` (what a rule reads) |
| 2 | `formats/` | tool calls, content parts and images, reading messages (ShareGPT, Harmony) |
| 2 | `trainers/` | the trainers' profiles and `format_from`, their options' rules, Mistral's rules |
| 3 | `check/` | the ordered table of rules and the judge, the codes, the one-value and batch checks, row checks |
| 4 | `location/` | where a conversation's problems are |
| 5 | `datasets/` | TRL dataset types, standard values, OpenAI preference rows, table checks, rows' problems |
| 5 | `repairs/` | the repairs and their application |

This module is the public face: import from `chatgate.rules`, not from a room.
"""

from .check.batch import check_array, check_batch, check_values
from .check.checks import ChatCheck, LabelCheck, RowCheck, first_codes, label_problem
from .check.codes import ALL_REASONS, EXTENDED_REASONS, REASONS, first_reason, phrase, reason_rank
from .check.judge import format_codes
from .check.reference import first_problem, problem_of
from .conversation.spec import DEFAULT_ROLES, SHAREGPT_ROLES, ChatFormat
from .datasets.build import (
    DATASET_TYPES,
    FORMATS,
    DatasetCheck,
    dataset_checks,
    detect_dataset_type,
    first_row_problem,
    format_counts,
    majority_format,
    value_format,
)
from .datasets.locate_rows import locate_row, message_indices, row_problems, row_problems_array
from .location.locate import Problem, locate, locate_array, location_of, problems, problems_array, problems_of
from .location.sites import RowProblem
from .repairs.repair import (
    REPAIR_PRESETS,
    REPAIRS,
    Repaired,
    repair,
    repair_array,
    repair_names,
    repair_value,
    repaired_values,
    repairs_and_codes,
)
from .trainers.profiles import format_from, sample_profile

__all__ = [
    "ALL_REASONS",
    "DATASET_TYPES",
    "DEFAULT_ROLES",
    "EXTENDED_REASONS",
    "FORMATS",
    "REASONS",
    "REPAIRS",
    "REPAIR_PRESETS",
    "SHAREGPT_ROLES",
    "ChatCheck",
    "ChatFormat",
    "DatasetCheck",
    "LabelCheck",
    "Problem",
    "Repaired",
    "RowCheck",
    "RowProblem",
    "check_array",
    "check_batch",
    "check_values",
    "dataset_checks",
    "detect_dataset_type",
    "first_codes",
    "first_problem",
    "first_reason",
    "first_row_problem",
    "format_codes",
    "format_counts",
    "label_problem",
    "locate",
    "locate_array",
    "locate_row",
    "message_indices",
    "location_of",
    "majority_format",
    "phrase",
    "problem_of",
    "problems",
    "problems_array",
    "problems_of",
    "reason_rank",
    "row_problems",
    "row_problems_array",
    "repair",
    "repair_array",
    "repair_names",
    "repair_value",
    "repaired_values",
    "repairs_and_codes",
    "format_from",
    "sample_profile",
    "value_format",
]
