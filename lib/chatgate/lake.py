"""Public homes for what the README and the benchmark use beside the checks: reading a Delta
table from Python (`read_delta`) and a local Spark session with Delta (`spark_session`).

Both import their libraries when called: `import chatgate` imports neither deltalake's
reader nor pyspark.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def read_delta(
    path: str | os.PathLike[str],
    version: int | None = None,
    *,
    storage_options: dict[str, str] | None = None,
) -> Any:
    """The Delta table at `path` (at `version`, else the latest) as an Arrow source that DuckDB,
    PyArrow or Polars can scan: `read_delta(path).to_table()` reads it whole,
    `duckdb.register("quarantine", read_delta(path))` queries it. It reads column mapping and
    deletion vectors right (chatgate's outputs included) and leaves no thread to crash the
    process at exit. Raises `ValueError` when `path` isn't a Delta table deltalake can read.

    >>> import pyarrow as pa, tempfile
    >>> from deltalake import write_deltalake
    >>> path = tempfile.mkdtemp()
    >>> write_deltalake(path, pa.table({"id": [1, 2]}))
    >>> write_deltalake(path, pa.table({"id": [3]}), mode="append")
    >>> read_delta(path).to_table().sort_by("id").column("id").to_pylist()
    [1, 2, 3]
    >>> read_delta(path, version=0).to_table().num_rows
    2
    """
    from .stores.deltalake_tables import delta_source

    return delta_source(path, version=version, storage_options=storage_options)


def spark_session(
    app_name: str = "chatgate",
    master: str | None = None,
    extra_conf: Mapping[str, Any] | None = None,
) -> SparkSession:
    """The active SparkSession, or a new one with Delta Lake enabled (Delta's jars from
    `make jars`, or from Maven when they aren't there).

    `master` defaults to the launcher's (spark-submit) or else `local[*]`; `extra_conf` is
    applied last, and ignored when a session is already active. Needs pyspark (the `spark`
    extra); the example is skipped here because it starts a JVM:

    >>> spark = spark_session(master="local[2]")  # doctest: +SKIP
    """
    from .engines.spark.session import get_spark

    return get_spark(app_name, master, extra_conf)
