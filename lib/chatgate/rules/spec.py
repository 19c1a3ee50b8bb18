"""The parameters of the chat-format check, checked once, before any data is read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

DEFAULT_ROLES: tuple[str, ...] = ("system", "user", "assistant")


@dataclass(frozen=True)
class ChatFormat:
    """What a well-formed conversation is (the keyword arguments of the check).

    >>> ChatFormat(last_role="assistant").roles
    ('system', 'user', 'assistant')
    """

    roles: tuple[str, ...] = DEFAULT_ROLES
    alternate: bool = True
    first_role: str | None = None
    last_role: str | None = None
    allow_empty: bool = False
    role_key: str = "role"
    content_key: str = "content"
    na_pass: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", _role_tuple(self.roles))
        for key in ("role_key", "content_key"):
            if not isinstance(getattr(self, key), str):
                raise TypeError(f"{key}= must be a string, not {type(getattr(self, key)).__name__}")
        for key in ("alternate", "allow_empty", "na_pass"):
            if not isinstance(getattr(self, key), bool):
                raise TypeError(f"{key}= must be True or False, not {getattr(self, key)!r}")
        for key in ("first_role", "last_role"):
            role = getattr(self, key)
            if role is None:
                continue
            if not isinstance(role, str):
                raise TypeError(f"{key}= must be a role name (a string) or None, not {role!r}")
            if role not in self.roles:
                raise ValueError(f"{key}={role!r} isn't one of roles= {list(self.roles)}")

    @property
    def has_system(self) -> bool:
        return "system" in self.roles

    def as_dict(self) -> dict:
        """The parameters as plain JSON-ready values."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["roles"] = list(self.roles)
        return out


def _role_tuple(roles: object) -> tuple[str, ...]:
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
