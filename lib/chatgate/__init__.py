"""chatgate: find malformed chat conversations in lakehouse tables and set them aside."""

from .rules import REASONS, ChatFormat, check_batch, first_problem

__all__ = ["REASONS", "ChatFormat", "check_batch", "first_problem"]
__version__ = "0.1.0"
