"""Pure rules: what a well-formed conversation (and dataset row) is. No engine imports here."""

from .batch import check_array, check_batch, check_values
from .checks import ChatCheck, LabelCheck, RowCheck, first_codes, label_problem
from .codes import ALL_REASONS, EXTENDED_REASONS, REASONS, first_reason, phrase, reason_rank
from .datasets import (
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
from .judge import format_codes
from .locate import Problem, locate, locate_array, location_of, problems, problems_array, problems_of
from .locate_rows import locate_row, message_indices, row_problems, row_problems_array
from .locate_sites import RowProblem
from .reference import first_problem, problem_of
from .repair import REPAIR_PRESETS, REPAIRS, Repaired, repair, repair_array, repair_names, repair_value
from .spec import DEFAULT_ROLES, SHAREGPT_ROLES, ChatFormat, format_from, sample_profile

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
    "format_from",
    "sample_profile",
    "value_format",
]
