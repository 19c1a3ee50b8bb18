"""Repairs: deterministic fixes of a failing value, applied in a fixed order, then re-audited.

A repair is opt-in: it is applied only when named, and only to a value that fails
the check (a passing value comes back as it is, the very same object). The named
repairs are applied in the order of `REPAIRS`, whatever order they are named in,
each while the value still fails: once it passes, the later ones are not tried. A
repair that changes nothing is not reported.

| repair | what it does |
|---|---|
| decode_text | a JSON string holding the JSON text of a message list (double-encoded) is decoded once |
| map_roles | a role that isn't allowed but is a known alias of an allowed one is renamed (`DEFAULT_ROLE_MAP`, extended by `role_map=`) |
| drop_empty | messages with missing, null, empty or blank content are dropped (never one with tool calls) |
| hoist_system | system messages not in first place are merged into one leading system message |
| merge_repeats | consecutive messages of the same role are merged into one (the first one's other keys kept) |
| drop_leading | with `first_role=`, the turns before the first turn of that role are dropped |
| drop_trailing | with `last_role=`, the messages after the last message of that role are dropped |

The preset "safe" names the first five (they never remove user or assistant text),
"all" names every repair. Each repair declares the problems it never takes away
(`Repair.keeps`): a value whose code every named repair keeps (`kept_by_all`: under
"safe", no messages, too few of them, a message that isn't a mapping with a string
role) still fails after them, and a caller that keeps only the values the repairs make
pass (the job) leaves it unread. How contents are joined, and which messages are never
touched, is in `fixes`.

The repaired value keeps the input's form. JSON text comes back as JSON text (a str
as a str, bytes as bytes): compact, keys in their order, numbers as written; text
that only `decode_text` changed is the decoded string itself, and text that no repair
changed is the same object. A native value comes back as the same kind of value: a
list of messages as a list (a tuple as a tuple), a wrapper object with its other
keys, in their order. Messages a repair didn't touch are the same objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any, NamedTuple

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..base.collector import collector_paused
from ..base.sizes import TOO_LARGE
from ..check.batch import check_array, python_values
from ..check.options import with_options
from ..check.reference import problem_of
from ..conversation.spec import ChatFormat
from ..trainers.profiles import format_from
from .fixes import (
    DEFAULT_ROLE_MAP,
    REPAIR_PRESETS,
    REPAIRS,
    TEXT,
    TEXT_TYPES,
    Context,
    Repair,
    Shape,
    context,
    message_shape,
)

__all__ = [
    "DEFAULT_ROLE_MAP",
    "REPAIRS",
    "REPAIR_PRESETS",
    "Repaired",
    "kept_by_all",
    "repair",
    "repair_array",
    "repair_names",
    "repair_value",
    "repaired_values",
    "repairs_and_codes",
]

_BY_NAME = {r.name: r for r in REPAIRS}

ROUND_VALUES = 4096
"""Distinct failing values repaired together (each repair tried on all, then the changed ones judged)."""

# Floats as Decimal, written back by the encoder as they were read: repaired JSON keeps
# its numbers (1e400, 0.1000000000000000055) rather than what a double makes of them.
_load_json = msgspec.json.Decoder(float_hook=Decimal).decode
_dump_json = msgspec.json.Encoder(decimal_format="number").encode


class Repaired(NamedTuple):
    """What `repair` returns: the value in its own form, the repairs that changed it (in the
    order applied), and its code after them (None when it now passes)."""

    value: Any
    applied: list[str]
    reason: str | None


def repair_names(repairs: str | Iterable[str], fmt: ChatFormat | None = None) -> tuple[str, ...]:
    """The repairs named by a preset, a repair's name, or a list of them, in the order they apply.

    With `fmt`, a repair named on its own (not through a preset) whose option isn't set
    is refused: `drop_leading` needs `first_role=`, `drop_trailing` needs `last_role=`.

    >>> repair_names(["merge_repeats", "map_roles"])
    ('map_roles', 'merge_repeats')
    >>> repair_names("safe") == REPAIR_PRESETS["safe"]
    True
    """
    given = [repairs] if isinstance(repairs, str) else _name_list(repairs)
    if not given:
        raise ValueError(f"repairs= is empty: name {_choices()}")
    chosen: set[str] = set()
    for name in given:
        if name in REPAIR_PRESETS:
            chosen.update(REPAIR_PRESETS[name])
        elif name in _BY_NAME:
            chosen.add(name)
            _check_needs(_BY_NAME[name], fmt)
        else:
            raise ValueError(f"unknown repair {name!r}: name {_choices()}")
    return tuple(r.name for r in REPAIRS if r.name in chosen)


def _name_list(repairs: object) -> list[str]:
    if not isinstance(repairs, Iterable) or isinstance(repairs, (bytes, dict)):
        raise TypeError(
            f"repairs= must be a repair's name, a preset or a list of them, not {type(repairs).__name__}"
        )
    names = list(repairs)
    bad = [name for name in names if not isinstance(name, str)]
    if bad:
        raise TypeError(f"repairs= must hold names (strings) only; found {bad[0]!r}")
    return names


def _choices() -> str:
    return f"one of the repairs {', '.join(_BY_NAME)} or the presets {', '.join(REPAIR_PRESETS)}"


def _check_needs(chosen: Repair, fmt: ChatFormat | None) -> None:
    if fmt is not None and chosen.needs is not None and getattr(fmt, chosen.needs) is None:
        raise ValueError(f"repair {chosen.name!r} needs {chosen.needs}= set: it has nothing to aim for")


@with_options
def repair(value: Any, repairs: str | Iterable[str], **options: Any) -> Repaired:
    """Repair one failing value: `(fixed_value, applied, reason_after)`.

    `repairs` is a preset ("safe", "all"), a repair's name, or a list of them (see
    `REPAIRS`). The keyword arguments are the options of the check, listed below: the
    value is repaired only if it fails under them, and re-audited under them.

    >>> repair('[{"role": "human", "content": "Hi"}, {"role": "gpt", "content": "Yo"}]', "safe")
    Repaired(value='[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"}]', applied=['map_roles'], reason=None)
    >>> repair([{"role": "user", "content": "Hi"}, {"role": "user", "content": "?"}], "merge_repeats")
    Repaired(value=[{'role': 'user', 'content': 'Hi\\n\\n?'}], applied=['merge_repeats'], reason=None)
    """
    fmt = format_from(**options)
    return repair_value(value, repair_names(repairs, fmt), fmt)


def repair_value(value: Any, names: Iterable[str], fmt: ChatFormat) -> Repaired:
    """`repair` with its parameters already checked (`names` as `repair_names` gives them)."""
    return _repair_distinct([value], [problem_of(value, fmt)], frozenset(names), fmt)[0]


_NEVER_READ = frozenset({TOO_LARGE})
"""A too large value is never read, so never repaired."""


def kept_by_all(names: Iterable[str]) -> frozenset[str]:
    """The codes no named repair takes away: a value with one of them fails after the repairs.

    >>> sorted(kept_by_all(REPAIR_PRESETS["safe"]))
    ['bad_message', 'no_messages', 'too_few_messages']
    """
    named = set(names)
    kept = [r.keeps for r in REPAIRS if r.name in named]
    return frozenset.intersection(*kept) if kept else frozenset()


def _repair_distinct(
    values: list[Any], reasons: list[str | None], names: frozenset[str], fmt: ChatFormat
) -> list[Repaired]:
    """The named repairs of values whose codes are `reasons`, each while a value still fails.

    The repairs go in rounds, in the order of `REPAIRS`: each is tried on every value that
    still fails, then the values it changed are judged together, as they are written back
    (`_judged`), before the next one is tried."""
    ctx = context(fmt)  # once: hashing a format costs more than some repairs
    unrepaired = {None, *_NEVER_READ}
    works = {i: _Work(v, ctx) for i, (v, code) in enumerate(zip(values, reasons)) if code not in unrepaired}
    codes = list(reasons)
    applied: dict[int, list[str]] = {}
    written: dict[int, Any] = {}  # each changed value as it was last judged: as it comes back
    failing = list(works)
    for chosen in REPAIRS:
        if chosen.name not in names or not failing:
            continue
        changed = [i for i in failing if works[i].apply(chosen)]
        for i in changed:
            applied.setdefault(i, []).append(chosen.name)
            written[i] = works[i].result()
        for i, code in zip(changed, _judged([written[i] for i in changed], fmt)):
            codes[i] = code
        failing = [i for i in failing if codes[i] is not None]
    return [
        Repaired(written[i], applied[i], code) if i in applied else Repaired(value, [], code)
        for i, (value, code) in enumerate(zip(values, codes))
    ]


def _judged(values: list[Any], fmt: ChatFormat) -> list[str | None]:
    """The codes of repaired values: JSON text by the batch checker (`check_array`, several times
    faster than the reference on decoded messages), native values by the reference."""
    kinds = {type(value) for value in values}
    if kinds == {str}:
        return check_array(pa.array(values, pa.large_string()), fmt).to_pylist()
    if kinds == {bytes}:
        return check_array(pa.array(values, pa.large_binary()), fmt).to_pylist()
    return [problem_of(value, fmt) for value in values]


class _Work:
    """A failing value under repair: the value as the text repairs left it, then its messages."""

    def __init__(self, value: Any, ctx: Context) -> None:
        self.value = value
        self.ctx = ctx
        self.shape: Shape | None = None
        self.messages: list[Any] | None = None
        self.loaded = False
        self.edited = False

    def _messages(self) -> list[Any] | None:
        """The messages of the value, decoded once (None when it holds none, or can't be read back)."""
        if not self.loaded:
            self.loaded = True
            found = message_shape(_read(self.value), self.ctx.fmt)
            if found is not None:
                self.shape, self.messages = found
        return self.messages

    def apply(self, chosen: Repair) -> bool:
        """Apply one repair; did it change the value?"""
        if chosen.stage == TEXT:
            out = chosen.fix(self.value, self.ctx)
            if out is None:
                return False
            self.value, self.loaded = out, False
            return True
        messages = self._messages()
        out = None if messages is None else chosen.fix(messages, self.ctx)
        if out is None or (self.shape is not None and self.shape.single and len(out) != 1):
            return False  # a lone ShareGPT message must stay one message to keep its form
        self.messages, self.edited = out, True
        return True

    def current(self) -> Any:
        """The value as it stands, for the check (natively, when its messages were repaired)."""
        if self.edited and self.shape is not None and self.messages is not None:
            return self.shape.build(self.messages)
        return self.value

    def result(self) -> Any:
        """The repaired value in the input's form (JSON text written once, at the end)."""
        built = self.current()
        if not self.edited or not isinstance(self.value, TEXT_TYPES):
            return built
        text = _dump_json(built)
        return text.decode() if isinstance(self.value, str) else text


def _read(value: Any) -> Any:
    """A value's messages holder: its JSON decoded (None if it can't be read back exactly), or the value."""
    if not isinstance(value, TEXT_TYPES):
        return value
    try:
        return _load_json(str(value) if isinstance(value, str) else value)
    except Exception:  # noqa: BLE001 - text the check reads only by shortening its numbers: left as is
        return None


# --- Arrays ---------------------------------------------------------------------------------

_APPLIED_TYPE = pa.list_(pa.string())


def repair_array(
    array: pa.Array | pa.ChunkedArray, repairs: str | Iterable[str], fmt: ChatFormat
) -> tuple[pa.Array, pa.ListArray, pa.StringArray]:
    """Repair every failing value of an array: the fixed values (of the input's type), the repairs
    applied to each (a list, empty where none changed it) and each one's code after them.

    The values are judged by the batch checker; only failing ones are read into Python and
    repaired (`repair_value`'s function), each distinct text once per array. A chunked
    array is combined into one.

    >>> fixed, applied, after = repair_array(pa.array(['[{"role": "bot", "content": "x"}]']), "safe", ChatFormat(roles=["assistant"]))
    >>> fixed.to_pylist(), applied.to_pylist(), after.to_pylist()
    (['[{"role":"assistant","content":"x"}]'], [['map_roles']], [None])
    """
    names = frozenset(repair_names(repairs, fmt))
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    plain = _unviewed(array)
    reasons, failing, done = _failing_repairs(plain, names, fmt)
    applied: list[list[str]] = [[] for _ in range(len(array))]
    after = reasons.to_pylist()
    changed: dict[int, Any] = {}
    for row, result in zip(failing, done):
        applied[row], after[row] = result.applied, result.reason
        if result.applied:
            changed[row] = result.value
    fixed = _replace(plain, list(changed), list(changed.values()))
    if plain is not array:
        fixed = fixed.cast(array.type)
    return fixed, pa.array(applied, _APPLIED_TYPE), pa.array(after, pa.string())


def repaired_values(array: pa.Array, names: Iterable[str], fmt: ChatFormat) -> list[Repaired | None]:
    """Each value of `array` repaired as `repair_array` repairs it (`names` as `repair_names` gives
    them), None for one that passes or is too large to read, for a caller that builds the fixed
    column itself: no array is built here."""
    return repairs_and_codes(array, names, fmt)[1]


def repairs_and_codes(
    array: pa.Array,
    names: Iterable[str],
    fmt: ChatFormat,
    codes: pa.Array | None = None,
    *,
    only_to_pass: bool = False,
) -> tuple[list[str | None], list[Repaired | None]]:
    """`repaired_values`, with each value's code before the repairs. `codes`, when the caller has
    them, are `check_array`'s codes of the values, which aren't then judged again.

    `only_to_pass=True`, for a caller that keeps only the values the repairs make pass: a value
    whose code every named repair keeps (`kept_by_all`) is left unread, as one no repair changed."""
    names = frozenset(names)
    untried = (_NEVER_READ | kept_by_all(names)) if only_to_pass else _NEVER_READ
    reasons, failing, done = _failing_repairs(_unviewed(array), names, fmt, codes, untried)
    out: list[Repaired | None] = [None] * len(array)
    for row, result in zip(failing, done):
        out[row] = result
    return reasons.to_pylist(), out


def _failing_repairs(
    array: pa.Array,
    names: frozenset[str],
    fmt: ChatFormat,
    codes: pa.Array | None = None,
    untried: frozenset[str] = _NEVER_READ,
) -> tuple[pa.StringArray, list[int], list[Repaired]]:
    """The check's code of each value (`codes`, when given), the rows that fail with a code not
    `untried`, and their repairs. Only those rows are read into Python: a value too large to read
    isn't read here either."""
    reasons = check_array(array, fmt) if codes is None else codes
    tried = pc.invert(pc.is_in(reasons, value_set=pa.array(sorted(untried), reasons.type)))
    readable = pc.and_(reasons.is_valid(), tried)
    failing = np.flatnonzero(readable.to_numpy(zero_copy_only=False))
    if not len(failing):
        return reasons, [], []
    rows = pa.array(failing)
    values = python_values(array if len(failing) == len(array) else array.take(rows))
    return reasons, failing.tolist(), _repair_values(values, reasons.take(rows).to_pylist(), names, fmt)


def _unviewed(array: pa.Array) -> pa.Array:
    """Arrow can't take from string or binary views: the array as their large type, to cast back at the end."""
    if pa.types.is_string_view(array.type):
        return array.cast(pa.large_string())
    if pa.types.is_binary_view(array.type):
        return array.cast(pa.large_binary())
    return array


def _repair_values(values: list[Any], reasons: list[str | None], names: frozenset[str], fmt: ChatFormat) -> list[Repaired]:
    """Repair each value; equal texts (a batch repeats them) and missing values are repaired once."""
    first: dict[Any, int] = {}  # a text (or None) -> its place among the values repaired
    kept: list[int] = []
    where = []
    for row, value in enumerate(values):
        # A native value isn't hashable: repaired on its own.
        at = first.setdefault(value, len(kept)) if value is None or isinstance(value, (str, bytes)) else len(kept)
        if at == len(kept):
            kept.append(row)
        where.append(at)
    done: list[Repaired] = []
    with collector_paused():
        # A bounded number at a time: the values under repair are held decoded.
        for start in range(0, len(kept), ROUND_VALUES):
            rows = kept[start : start + ROUND_VALUES]
            done += _repair_distinct([values[row] for row in rows], [reasons[row] for row in rows], names, fmt)
    return [done[at] for at in where]


def _replace(array: pa.Array, rows: list[int], values: list[Any]) -> pa.Array:
    """`array` with `values` at `rows`, of the same type."""
    if not rows:
        return array
    if isinstance(array.type, pa.BaseExtensionType):
        storage = pa.array(values, array.type.storage_type)
        replacements = pa.ExtensionArray.from_storage(array.type, storage)
    else:
        replacements = pa.array(values, array.type)
    index = np.arange(len(array))
    index[rows] = len(array) + np.arange(len(rows))
    return pa.concat_arrays([array, replacements]).take(pa.array(index))

