"""chatgate: find malformed chat conversations in lakehouse tables and set them aside."""

from ._version import __version__ as __version__
from .errors import ChatgateError, ConfigError, OutputError, SourceError
from .functions import check_batch, first_problem
from .gating import annotate, split
from .lake import read_delta, spark_session
from .report import StepReport
from .rules import REASONS, ChatFormat, repair
from .selectors import col, contains, ends_with, everything, matches, starts_with
from .thresholds import Actions, Thresholds
from .validate import Validate

__all__ = [
    "REASONS",
    "Actions",
    "ChatFormat",
    "ChatgateError",
    "ConfigError",
    "OutputError",
    "SourceError",
    "StepReport",
    "Thresholds",
    "Validate",
    "annotate",
    "check_batch",
    "col",
    "contains",
    "ends_with",
    "everything",
    "first_problem",
    "matches",
    "read_delta",
    "repair",
    "spark_session",
    "split",
    "starts_with",
]
