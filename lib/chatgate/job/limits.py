"""The embedded engine's memory against the limits the process runs under, checked at start.

Under an address-space limit (`ulimit -v`) or a cgroup memory limit (a container's)
smaller than what DuckDB's memory_limit and the check's workers need, a run fails
late and badly: a shared library that can't be mapped, an allocation abort inside
Rust, or a segfault with no message. A run whose settings can't fit is refused
before it starts, in one line naming the settings to lower.
"""

from __future__ import annotations

import resource
from pathlib import Path

from ..errors import ConfigError

GiB = 2**30
MiB = 2**20

ADDRESS_SPACE_BASE = 2 * GiB
"""Address space the process maps before DuckDB holds any data: Python, Arrow, DuckDB, deltalake,
pandas and their thread pools' reservations (measured: a run with memory_limit=64MB fails at 1.8 GiB
of `ulimit -v` and finishes at 1.9 GiB)."""

ADDRESS_SPACE_PER_THREAD = 64 * MiB
"""What each of DuckDB's threads reserves (a malloc arena and a stack)."""

RESIDENT_BASE = 512 * MiB
"""Resident memory of the main process beside DuckDB's data."""

RESIDENT_PER_WORKER = 256 * MiB
"""Resident memory of each check worker process (its imports and the batches in flight)."""

_UNITS = {
    "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def size_bytes(size: str) -> int:
    """DuckDB's size text (`512MB`, `1.5GiB`; MB and GB are powers of 1000 there) in bytes."""
    text = size.strip().lower().replace(" ", "")
    unit = text.lstrip("0123456789.")
    return int(float(text[: len(text) - len(unit)]) * _UNITS[unit])


def check_memory_limits(memory_limit: str, threads: int, *, cgroup_root: Path = Path("/sys/fs/cgroup")) -> None:
    """ConfigError naming --memory-limit and --threads when the process's limits can't hold a run with them."""
    data = size_bytes(memory_limit)
    settings = f"--memory-limit {memory_limit} and --threads {threads}"
    address_space = resource.getrlimit(resource.RLIMIT_AS)[0]
    needed = ADDRESS_SPACE_BASE + data + threads * ADDRESS_SPACE_PER_THREAD
    if address_space != resource.RLIM_INFINITY and address_space < needed:
        raise ConfigError(
            f"this process may map {_size(address_space)} of memory (ulimit -v), and a run with {settings} "
            f"needs about {_size(needed)}: lower --memory-limit or --threads, or raise the limit"
        )
    cgroup = cgroup_memory_limit(cgroup_root)
    resident = RESIDENT_BASE + data + threads * RESIDENT_PER_WORKER
    if cgroup is not None and cgroup < resident:
        raise ConfigError(
            f"this container's memory limit is {_size(cgroup)}, and a run with {settings} needs about "
            f"{_size(resident)}: lower --memory-limit or --threads, or raise the limit"
        )


def cgroup_memory_limit(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The memory limit of this process's cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), None without one."""
    for path in _cgroup_files(root):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**62:  # v1 writes a huge number for "no limit"
            return int(text)
    return None


def _cgroup_files(root: Path) -> list[Path]:
    own = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                own.append(root / path.lstrip("/") / "memory.max")
            elif "memory" in controllers.split(","):
                own.append(root / "memory" / path.lstrip("/") / "memory.limit_in_bytes")
    except (OSError, ValueError):
        pass
    return [*own, root / "memory.max", root / "memory" / "memory.limit_in_bytes"]


def _size(n: int) -> str:
    return f"{n / GiB:.1f} GiB"
