"""The job's backends: each engine with the store that reads and writes its tables, declared once.

The CLI's `--engine` choices, the config's check of `engine:` and the runner all read
this registry; adding a backend is one entry here (and its engine and store modules).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engines.lakehouse import LakehouseEngine
    from ..stores.base import TableStore


@dataclass(frozen=True)
class Backend:
    """An engine and its store: `store` builds the store from the engine (its connection or session)."""

    engine: str
    store: str
    description: str
    make_store: Callable[[LakehouseEngine], TableStore]


def _deltalake(engine: LakehouseEngine) -> TableStore:
    from ..stores.deltalake_store import DeltalakeStore

    return DeltalakeStore(engine.con)  # type: ignore[attr-defined]


def _delta_spark(engine: LakehouseEngine) -> TableStore:
    from ..stores.delta_spark import DeltaSparkStore

    return DeltaSparkStore(engine.spark, failure=engine.jvm_failure)  # type: ignore[attr-defined]


BACKENDS = {
    "duckdb": Backend("duckdb", "deltalake", "one machine, no JVM: Ibis over DuckDB, Delta through deltalake", _deltalake),
    "spark": Backend("spark", "delta-spark", "Spark (local or a cluster), Delta through delta-spark", _delta_spark),
}

ENGINES = tuple(BACKENDS)


_STORES: weakref.WeakKeyDictionary[LakehouseEngine, TableStore] = weakref.WeakKeyDictionary()


def store_for(engine: LakehouseEngine) -> TableStore:
    """The store that reads and writes the tables of `engine` (a lakehouse engine of BACKENDS):
    the same one for as long as the engine lives, since it shares the engine's connection."""
    store = _STORES.get(engine)
    if store is None:
        store = _STORES[engine] = BACKENDS[engine.name].make_store(engine)
    return store
