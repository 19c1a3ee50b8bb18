"""Where the source and the outputs really are, so that no two of them are one table.

Tables are compared as resolved locations, never as the strings a user typed:
`o/q`, `o/q/`, `o/./q`, `o//q`, a symlink to it and its absolute path are one
local table; `S3://Bucket/a//b/` and `s3a://bucket/a/b` are one object-store table.
Catalog names (Spark) are compared by their parts, ignoring case, and by the
location the catalog gives where the engine can tell it.

An output may not be the source, another output, or lie inside another's folder:
a VACUUM of the outer table deletes the inner table's files as unreferenced, and a
Parquet folder read recursively would read the inner table's rows as its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import combinations
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from ..errors import ConfigError

PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
"""Delta readers take a local path as a URL and decode its escapes (`a%20b` is read at `a b`)."""

SAME_SCHEME = {"s3a": "s3", "s3n": "s3", "abfss": "abfs", "wasbs": "wasb", "gcs": "gs"}
"""URL schemes that name the same store (Hadoop's and the object stores' own spellings)."""


@dataclass(frozen=True)
class Location:
    """One table of a run: its role (source, quarantine, ...), the name given, and where it is."""

    role: str
    given: str
    where: str
    """A real local path, a normalised URL, or `catalog:` and the lower-cased name."""

    @property
    def is_catalog(self) -> bool:
        return self.where.startswith("catalog:")

    def contains(self, other: Location) -> bool:
        """Is `other` this table, or inside its folder?"""
        if self.is_catalog or other.is_catalog:
            return self.where == other.where
        return other.where == self.where or other.where.startswith(self.where.rstrip("/") + "/")


def resolve(target: str, *, catalog_names: bool = False) -> str:
    """Where `target` is: a real local path, a normalised URL, or (with `catalog_names`, on Spark)
    `catalog:` and the lower-cased name of a catalog table."""
    if "://" in target and not target.startswith("file://"):
        return _normalised_url(target)
    # file:///a, file://a and Hadoop's file:/a are the local path /a.
    path = "/" + target[len("file:"):].lstrip("/") if target.startswith("file:/") else target
    if catalog_names and not _looks_like_path(path):
        return "catalog:" + path.lower()
    return os.path.realpath(os.path.abspath(path))


def _looks_like_path(name: str) -> bool:
    return "/" in name or name.startswith(".") or os.path.exists(name)


def _normalised_url(url: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    scheme = SAME_SCHEME.get(scheme, scheme)
    path = str(PurePosixPath("/" + parts.path.strip("/"))) if parts.path.strip("/") else ""
    # "." segments go; ".." stays as written (an object store has no parent folders to climb).
    path = "/".join(part for part in path.split("/") if part != ".")
    return f"{scheme}://{parts.netloc.lower()}{path}"


def check_locations(
    named: Iterable[tuple[str, str]],
    *,
    catalog_names: bool = False,
    catalog_location: Callable[[str], str | None] | None = None,
) -> list[Location]:
    """The `(role, target)` pairs resolved; ConfigError, naming both, when two are one table
    or one lies inside the other's folder, or when a local path holds a percent-escape.

    `catalog_location` gives a catalog table's storage location, where the engine knows it.
    """
    locations = []
    for role, target in named:
        _refuse_escapes(role, target)
        where = resolve(target, catalog_names=catalog_names)
        if where.startswith("catalog:") and catalog_location is not None:
            found = catalog_location(target)
            where = resolve(found) if found else where
        locations.append(Location(role, target, where))
    for a, b in combinations(locations, 2):
        if a.contains(b) and b.contains(a):
            raise ConfigError(_same_table(a, b))
        outer, inner = (a, b) if a.contains(b) else (b, a) if b.contains(a) else (None, None)
        if outer is not None and inner is not None:
            raise ConfigError(
                f"{_named(inner)} lies inside the folder of {_named(outer)}, {outer.where}: a VACUUM of "
                f"the {outer.role} table would delete its files; choose a path outside it"
            )
    return locations


def _same_table(a: Location, b: Location) -> str:
    if a.role == "source":
        return f"{_named(b)} is the source table itself ({a.where}); write the outputs elsewhere"
    return f"{_named(a)} and {_named(b)} are one table ({a.where}); each output needs its own table"


def _refuse_escapes(role: str, target: str) -> None:
    if "://" in target and not target.startswith("file://"):
        return
    escape = PERCENT_ESCAPE.search(target)
    if escape:
        raise ConfigError(
            f"{role}: the path {target!r} holds {escape.group()!r}, which Delta readers decode "
            f"(they would read another path than the one written); rename it without '%'"
        )


def _named(location: Location) -> str:
    flag = "--source" if location.role == "source" else f"--{location.role}"
    return f"the {location.role} ({flag} {location.given!r})"
