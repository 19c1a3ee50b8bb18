"""One module or package per engine, each behind `base.Engine`.

- local: Polars and pandas DataFrames, in memory;
- ibis: any Ibis table; `duckdb` is the Ibis engine on DuckDB, reading and
  writing Delta with deltalake (the job's embedded engine);
- spark: PySpark DataFrames, reading and writing Delta with delta-spark.
"""

from __future__ import annotations

from typing import Any

from .base import Engine, Judged

ENGINE_NAMES = ("local", "duckdb", "spark")


def engine_for(table: Any) -> Engine:
    """The engine that runs on `table`'s own backend."""
    module = type(table).__module__
    if module.startswith(("polars", "pandas")):
        from .local import LocalEngine

        engine: Engine = LocalEngine()
    elif module.startswith("ibis"):
        engine = _ibis_engine(table)
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


def _ibis_engine(table: Any) -> Engine:
    """The DuckDB engine for a table of DuckDB, the plain Ibis engine for other backends."""
    from .ibis import IbisEngine

    try:
        backend = table.get_backend()
    except Exception:  # noqa: BLE001 - an unbound table (a memtable) runs on Ibis's default backend, DuckDB
        backend = None
    if backend is None or backend.name == "duckdb":
        from .ibis.duckdb import DuckDBEngine

        return DuckDBEngine(con=backend)
    return IbisEngine()


__all__ = ["ENGINE_NAMES", "Engine", "Judged", "engine_for"]
