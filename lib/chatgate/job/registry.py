"""The job's backends: each engine with the store that reads and writes its tables, declared once.

The CLI's `--engine` choices and help, the config's checks of `engine:` and the runner
all read BACKENDS when they run. Adding a store for another table format is its
module under stores/ and one entry here, naming the engine that computes on its tables.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..engines.lakehouse import LakehouseEngine
    from ..stores.base import TableStore
    from .embedded import EmbeddedConfig


@dataclass(frozen=True)
class Backend:
    """An engine and its store, as `--engine NAME` names them."""

    engine: str
    """The engine's name (its `name`): `embedded:` settings are the duckdb engine's."""
    store: str
    """The table library, as the run's log names it."""
    description: str
    """One line for `--engine`'s help."""
    make_engine: Callable[[EmbeddedConfig], LakehouseEngine]
    make_store: Callable[[LakehouseEngine], TableStore]
    """Builds the store from the engine (its connection or session)."""
    catalog: bool = False
    """Names without a "/" are catalog tables (db.chats), not paths."""
    streams: bool = False
    """The engine runs a stream of micro-batches (--stream)."""


def _duckdb(embedded: EmbeddedConfig) -> LakehouseEngine:
    from ..engines.ibis.connection import duckdb_connection
    from ..engines.ibis.duckdb import DuckDBEngine
    from .limits import check_memory_limits

    settings = embedded.resolved()
    check_memory_limits(settings["memory_limit"], settings["threads"])
    # The quarantine reads each problem's message where the check found it (`Judged.locate`).
    return DuckDBEngine(con=duckdb_connection(**settings), workers=settings["threads"], locate=True)


def _spark(embedded: EmbeddedConfig) -> LakehouseEngine:
    from ..engines.spark import SparkEngine

    return SparkEngine(locate=True)


def _deltalake(engine: LakehouseEngine) -> TableStore:
    from ..stores.deltalake_store import DeltalakeStore

    return DeltalakeStore(engine.con)  # type: ignore[attr-defined]


def _delta_spark(engine: LakehouseEngine) -> TableStore:
    from ..stores.delta_spark import DeltaSparkStore

    return DeltaSparkStore(engine.spark, failure=engine.jvm_failure)  # type: ignore[attr-defined]


BACKENDS = {
    "duckdb": Backend(
        "duckdb", "deltalake", "one machine, no JVM: Ibis over DuckDB, Delta through deltalake", _duckdb, _deltalake
    ),
    "spark": Backend(
        "spark", "delta-spark", "Spark (local or a cluster), Delta through delta-spark", _spark, _delta_spark, catalog=True, streams=True
    ),
}

DEFAULT_BACKEND = "duckdb"


def backend(name: str) -> Backend:
    """The backend `--engine NAME` names; ConfigError listing the others when there's none."""
    found = BACKENDS.get(name) if isinstance(name, str) else None
    if found is None:
        raise ConfigError(f"engine: {name!r} isn't one of {list(BACKENDS)}")
    return found


def engine_help() -> str:
    return "; ".join(f"{name}: {b.description}" for name, b in BACKENDS.items()) + f" (default: {DEFAULT_BACKEND})"


def make_engine(name: str, embedded: EmbeddedConfig) -> LakehouseEngine:
    """The lakehouse engine of the backend `name`, imported only when asked for."""
    return backend(name).make_engine(embedded)


_STORES: weakref.WeakKeyDictionary[LakehouseEngine, dict[str, TableStore]] = weakref.WeakKeyDictionary()


def store_for(engine: LakehouseEngine, name: str | None = None) -> TableStore:
    """The store of the backend `name` (by default the one named as the engine) for `engine`:
    the same one for as long as the engine lives, since it shares the engine's connection."""
    stores = _STORES.setdefault(engine, {})
    key = name or engine.name
    if key not in stores:
        stores[key] = backend(key).make_store(engine)
    return stores[key]
