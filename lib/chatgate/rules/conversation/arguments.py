"""The checks of the option values of `ChatFormat`: lists of names, maps of aliases, counts.

Apart from `spec` so that the options' declarations stay readable; each helper
normalises a value (a list to a tuple, a dict to a `RoleMap`) or raises the
TypeError or ValueError that names the option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class RoleMap(dict[str, str]):
    """A read-only mapping of role aliases, hashable so that a ChatFormat stays hashable
    (formats are cache keys). It equals the plain dict it was made from."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (RoleMap, (dict(self),))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("role_map= is read-only")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _read_only


def name_tuple(key: str, names: object, *, empty: bool = False) -> tuple[str, ...]:
    """A list of names (roles, keys) as a tuple; a single string is refused, not split."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        hint = f"; write [{names!r}] for a single one" if isinstance(names, str) else ""
        raise TypeError(f"{key}= must be a list of names, not {type(names).__name__}{hint}")
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{key}= must hold strings only; found {bad[0]!r}")
    if not names and not empty:
        raise ValueError(f"{key}= is empty")
    return tuple(names)


def alias_map(value: object) -> RoleMap:
    if not isinstance(value, Mapping):
        raise TypeError(f"role_map= must be a mapping of alias to role, not {type(value).__name__}")
    bad = [(k, v) for k, v in value.items() if not (isinstance(k, str) and isinstance(v, str))]
    if bad:
        raise TypeError(f"role_map= must map strings to strings; found {bad[0]!r}")
    return value if isinstance(value, RoleMap) else RoleMap(value)


def role_tuple(roles: object) -> tuple[str, ...]:
    if isinstance(roles, (str, bytes)) or not isinstance(roles, Sequence):
        raise TypeError(
            f"roles= must be a list of role names, not {type(roles).__name__}"
            + (
                f" ({roles!r}); write [{roles!r}] for a single role"
                if isinstance(roles, str)
                else ""
            )
        )
    bad = [r for r in roles if not isinstance(r, str)]
    if bad:
        raise TypeError(f"roles= must hold strings only; found {bad[0]!r}")
    if not roles:
        raise ValueError("roles= is empty: name at least one role")
    return tuple(roles)


def whole_number(key: str, value: object, least: int) -> None:
    """Refuse a count that isn't a whole number of at least `least` (None is no limit; True isn't a number)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
        raise ValueError(f"{key}= must be a whole number of at least {least} or None, not {value!r}")
