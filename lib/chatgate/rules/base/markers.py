"""The markers the rules read in place of a value: a message without a usable role, a missing key.

They live apart from `judge` so that the modules the rule table imports (`values`,
`parts`) can read them without importing the table.
"""

from __future__ import annotations

BAD = object()
"""The role of a message that isn't a mapping with a string role (and a malformed value)."""

MISSING = object()
"""The content of a message that has no content key."""

TOO_LARGE_VALUE = object()
"""In place of a value larger than `max_value_bytes=` (measured on its Arrow array), never read."""
