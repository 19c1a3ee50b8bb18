"""What every report table shares: the monospace fonts, the flag's color, a great_tables table of strings.

A leaf module (it imports nothing of chatgate's), so the step report (`chatgate.report`)
can draw with it without an import circle through the step tables.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from great_tables import GT

MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace"
"""System fonts only: pointblank's IBM Plex comes from Google Fonts, and the page must open offline."""

FLAG_COLOR = "#8E44AD"
"""A step that fails most of its rows with no level to mark it (see `report.MOST_ROWS_FAIL`):
purple, apart from pointblank's grey, yellow and red levels and its green."""


def make_gt(data: pa.Table, table_id: str, **options: Any) -> GT:
    """A great_tables table of `data` (string columns), with the element id `table_id`."""
    from great_tables import GT

    # great_tables draws PyArrow tables (the one frame library every install of chatgate has)
    # and warns that its support is new; the tables here hold plain string columns only.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PyArrow Table support is currently experimental")
        return GT(data, id=table_id, **options)
