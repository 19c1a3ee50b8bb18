"""One module per backend, each behind `base.Engine`."""

from __future__ import annotations

from typing import Any

from .base import REASON_COLUMN, Engine, Judged

ENGINE_NAMES = ("local", "duckdb", "spark")


def engine_for(table: Any) -> Engine:
    """The engine that runs on `table`'s own backend."""
    module = type(table).__module__
    if module.startswith(("polars", "pandas")):
        from .local import LocalEngine

        engine: Engine = LocalEngine()
    elif module.startswith("ibis"):
        from .ibis import IbisEngine

        engine = IbisEngine()
    elif module.startswith("pyspark"):
        from .spark import SparkEngine

        engine = SparkEngine()
    else:
        raise TypeError(
            f"chatgate can't validate a {module}.{type(table).__name__}: pass a Polars or pandas "
            "DataFrame, an Ibis table or a PySpark DataFrame"
        )
    if not engine.accepts(table):
        raise TypeError(f"the {engine.name} engine can't read a {type(table).__name__}")
    return engine


__all__ = ["ENGINE_NAMES", "REASON_COLUMN", "Engine", "Judged", "engine_for"]
