"""Pure rules: what a well-formed conversation is. No engine imports here."""

from .batch import check_array, check_batch, check_values
from .codes import REASONS, phrase
from .reference import first_problem, problem_of
from .spec import DEFAULT_ROLES, ChatFormat

__all__ = [
    "DEFAULT_ROLES",
    "REASONS",
    "ChatFormat",
    "check_array",
    "check_batch",
    "check_values",
    "first_problem",
    "phrase",
    "problem_of",
]
