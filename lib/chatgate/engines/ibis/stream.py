"""The stream to Python (step 3): the auto-dedup decision, the batches and their check.

`_decide` says whether to deduplicate (or lets the first rows of the stream
decide), `_stream` sends the tuples to Python in Arrow batches, and `_check`
judges one batch, keeping its failing tuples in the `_Tally`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ibis
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ChatgateError
from ...progress import Progress, label_or, mode
from ...rules import RowCheck
from .. import base
from ..base import FailingColumns, repeats_share
from ..group_check import KEPT, KEPT_KEY, ROWS_KEY, GroupCheck, failing_tuples
from ..parquet_files import ROW_ID, ViewPart, quote_identifier
from ..workers import CheckPool, run_tasks
from .connection import missing_folders, record_batches
from .plan import MAPPED, _Plan, join_value
from .prefetch import Prefetched
from .split import group_checks, parts_of
from .tally import _distinct_failing, _Names, _Tally

log = logging.getLogger("chatgate")

COMPACT_FAILING_ROWS = 100_000
"""Without deduplication, the failing keys are deduplicated whenever this many rows piled up."""

KEPT_ROWS_BYTES = 256 * 2**20
"""The most bytes of failing rows the workers reading in parts keep whole, all together (see
`split`); past that, the failing set is joined back to the table, which is read again."""

PARALLEL_MIN_ROWS = 100_000
"""Fewer rows than this are checked in the engine's process: starting workers costs about a second."""

PROGRESS_MIN_BATCHES = 10
"""Progress is shown when the check takes more than this many batches."""


def _decide(
    table: ibis.Table, plan: _Plan, rows: int, dedup: str, chunk_size: int, *, in_stream: bool = True
) -> tuple[bool | None, float | None]:
    """Deduplicate or not (None: the stream decides), and the share of repeats (auto only).

    With dedup="auto" and a key in the stream (the hash join), the first
    `AUTO_SAMPLE_ROWS` rows of the stream without dedup decide (see `_stream`):
    no query is spent on the estimate. Without a key, or when the stream would be read
    in parts (not `in_stream`, see `split`), a query of the first rows the backend reads
    counts their distinct values; in parts, `EMBEDDED_PARTS_AUTO` decides.
    """
    if dedup != "auto":
        return dedup == "on", None
    if rows <= chunk_size:
        return True, None  # one batch either way: deduplicating costs nothing
    if plan.join_on == "hash" and in_stream:
        return None, None
    values, distinct = _distinct_estimate(table.limit(base.AUTO_SAMPLE_ROWS), plan.whole)
    repeats = max(0.0, 1.0 - distinct / values) if values else 0.0
    policy = base.EMBEDDED_AUTO if in_stream else base.EMBEDDED_PARTS_AUTO
    return policy.decide(repeats), round(repeats, 4)


def file_parts(table: ibis.Table, plan: _Plan, rows: int, workers: int) -> list[ViewPart] | None:
    """The parts a stream of `table` without dedup is read in by the workers (see `split`), or None."""
    return parts_of(table, plan, workers) if rows >= PARALLEL_MIN_ROWS else None


def _stream(
    table: ibis.Table,
    check: RowCheck,
    plan: _Plan,
    names: _Names,
    rows: int,
    *,
    chunk_size: int,
    progress: bool | None,
    dedup_on: bool,
    decide: bool = False,
    workers: int = 1,
    locate: bool = False,
    parts: list[ViewPart] | None = None,
    computed: FailingColumns | None = None,
    reason_column: str = "",
) -> tuple[_Tally | None, float | None]:
    """Check the stream of values in batches; the tally, and the share of repeats when deciding.

    With `decide`, the keys of the first `AUTO_SAMPLE_ROWS` rows give the share
    of repeats; when `EMBEDDED_AUTO` says to deduplicate, the stream stops and the
    tally is None: the caller streams again with dedup (the rows checked so far
    are checked again, a small cost next to what dedup saves then). `chunk_size`,
    `progress`, `workers` and `locate` are the engine's; a stream shorter than
    `PARALLEL_MIN_ROWS` is checked here, where starting workers would cost more. Without
    dedup, the `parts` of the table's files (`file_parts`) are read by a worker each, which
    keeps its failing rows with the `computed` columns of them (see `split.group_checks`).
    """
    stream = _stream_expr(table, plan, names, dedup_on=dedup_on)
    if not (dedup_on or decide) and parts:
        with kept_rows_folder(table.get_backend()) as folder:
            reads = group_checks(
                table, stream, plan, names, check,
                parts=parts, chunk_size=chunk_size, locate=locate, kept_in=folder, kept_bytes=KEPT_ROWS_BYTES,
                computed=computed, reason_column=reason_column,
            )
            try:
                return _stream_in_parts(reads, plan, names, rows, chunk_size=chunk_size, progress=progress), None
            except ChatgateError as error:
                log.warning("reading in %d parts failed (%s): checking one stream instead", len(reads), error)
    tally = _Tally()
    sampler = _Sampler(names.k1) if decide else None
    with (
        _open_reader(stream, chunk_size, ahead=workers > 1) as reader,
        _judges(check, workers if rows >= PARALLEL_MIN_ROWS else 1) as judge,
        # Entered last, left first: the bar is gone before the pool logs its workers' memory.
        _progress(rows, f"checking {', '.join(plan.columns)}", chunk_size=chunk_size, progress=progress) as shown,
    ):
        batches = reader if sampler is None else sampler.sample(reader)
        for batch, codes in judge(_prepared(batches, plan, names, tally, dedup_on=dedup_on)):
            _keep(batch, codes, check, plan, names, tally, dedup_on=dedup_on, locate=locate)
            shown.update((pc.sum(batch.column(names.n)).as_py() or 0) if dedup_on else len(batch))
        if sampler is not None and sampler.dedup:
            return None, sampler.repeats
        shown.update(rows - shown.done)  # the missing values, never streamed without dedup
    return tally, None if sampler is None else sampler.final_repeats()


def spill_folder(backend: Any) -> str | None:
    """The folder DuckDB was told to spill to (--temp-dir, a disk chosen for its room), or None when
    it wasn't told: DuckDB's own default (`.tmp` in the working folder, `<database>.tmp` beside a
    database file) is left to DuckDB, which makes it only when it spills."""
    try:
        folder, database = backend.con.execute(
            "SELECT current_setting('temp_directory'), "
            "(SELECT path FROM duckdb_databases() WHERE database_name = current_database())"
        ).fetchone()
    except Exception:  # noqa: BLE001 - not DuckDB: the system's temp folder
        return None
    defaults = {".tmp", *([f"{database}.tmp"] if database else [])}
    return None if not folder or folder in defaults else str(folder)


@contextlib.contextmanager
def kept_rows_folder(backend: Any) -> Iterator[str]:
    """A folder of its own for the failing rows the workers keep: in DuckDB's spill folder when one
    was set (`spill_folder`), else, or when that can't be written in, in the system's temp folder.
    Removed afterwards, with any folder made to hold it."""
    spill = spill_folder(backend)
    made = _make_folders(spill) if spill is not None else None
    try:
        folder = tempfile.mkdtemp(prefix="chatgate-kept-", dir=spill if made is not None else None)
    except OSError:  # permissions don't tell for root, nor for a read-only mount
        folder = tempfile.mkdtemp(prefix="chatgate-kept-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for parent in reversed(made or []):
            try:
                os.rmdir(parent)
            except OSError:  # DuckDB spilled there meanwhile
                break


def _make_folders(path: str) -> list[str] | None:
    """Make `path` and its missing parents; the folders made, outermost first, or None when it can't be made."""
    missing = missing_folders(path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return missing


def _stream_in_parts(
    reads: list[GroupCheck], plan: _Plan, names: _Names, rows: int, *, chunk_size: int, progress: bool | None
) -> _Tally:
    """`_stream` without dedup, each worker reading and checking its part of the files (`split`)."""
    log.info("reading the files in %d parts, each read and checked by a worker of its own", len(reads))
    tally = _Tally()
    label = f"checking {', '.join(plan.columns)}"
    kept: list[bytes] = []
    with _progress(rows, label, chunk_size=chunk_size, progress=progress) as shown:
        for failing, metadata in run_tasks(reads):
            if KEPT_KEY in metadata:
                kept.append(metadata[KEPT_KEY])
                continue
            checked = int(metadata[ROWS_KEY])
            tally.batches += 1
            tally.checked += checked
            if failing.num_rows:  # an empty failing set stays None: nothing to join back
                _count(tally, failing.column(names.freason), None)
                _file_failing(tally, pa.Table.from_batches([failing]), names)
            shown.update(checked)
        shown.update(rows - shown.done)  # the missing values, never streamed without dedup
    if kept == [KEPT] * len(reads):  # every worker kept its rows (only those asked to say so)
        tally.kept = _kept_rows(reads)
    return tally


def _kept_rows(reads: list[GroupCheck]) -> list[pa.Table]:
    """The failing rows the workers kept whole (see `group_check.KeptRows`), mapped from their
    files (which may be removed as soon as they are mapped)."""
    tables = []
    for read in reads:
        assert read.kept is not None
        if os.path.exists(read.kept.path):
            tables.append(pa.ipc.open_file(pa.memory_map(read.kept.path)).read_all())
    return tables


class _Sampler:
    """The auto-dedup decision from the keys of the stream's first `AUTO_SAMPLE_ROWS` rows."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.keys: list[Any] | None = []
        self.repeats: float | None = None
        self.dedup = False

    def sample(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The batches, until the sample says to deduplicate (then the stream stops)."""
        for batch in batches:
            if self.keys is not None:
                self.keys += batch.column(self.key).to_pylist()
                if len(self.keys) >= base.AUTO_SAMPLE_ROWS:
                    self.repeats = round(repeats_share(self.keys), 4)
                    self.keys = None
                    if base.EMBEDDED_AUTO.decide(self.repeats):
                        self.dedup = True
                        return
            yield batch

    def final_repeats(self) -> float | None:
        """The share of repeats, from the whole stream when it was shorter than the sample."""
        if self.keys is not None:
            self.repeats = round(repeats_share(self.keys), 4)
        return self.repeats


Judge = Callable[[Iterable[tuple[pa.RecordBatch, pa.RecordBatch]]], Iterator[tuple[pa.RecordBatch, pa.Array]]]


@contextlib.contextmanager
def _judges(check: RowCheck, workers: int) -> Iterator[Judge]:
    """What gives each batch its codes: `check.check` here, or a pool of `workers` processes."""
    if workers <= 1:
        yield lambda items: ((batch, check.check(values)) for batch, values in items)
        return
    with CheckPool(check, workers) as pool:
        yield pool.codes


def _prepared(
    batches: Iterable[pa.RecordBatch], plan: _Plan, names: _Names, tally: _Tally, *, dedup_on: bool
) -> Iterator[tuple[pa.RecordBatch, pa.RecordBatch]]:
    """Each batch (its missing values counted and set aside) and the values its check reads."""
    for batch in batches:
        if not len(batch):
            continue
        tally.batches += 1
        if dedup_on:
            tally.units += pc.sum(batch.column(names.n)).as_py() or 0
        if plan.single:
            values = batch.column(plan.columns[0])
            if values.null_count:  # the null group of the deduplicated stream
                nulls = values.is_null()
                tally.nulls += pc.sum(batch.column(names.n).filter(nulls)).as_py() or 0
                batch = batch.filter(pc.invert(nulls))
                if not len(batch):
                    continue
        tally.checked += len(batch)
        tally.present += len(batch) - _missing_tuples(batch, plan.columns)
        yield batch, batch.select(list(plan.columns))


def _keep(
    batch: pa.RecordBatch,
    codes: pa.Array | pa.ChunkedArray,
    check: RowCheck,
    plan: _Plan,
    names: _Names,
    tally: _Tally,
    *,
    dedup_on: bool,
    locate: bool = False,
) -> None:
    """Count one checked batch's failures and keep its failing tuples (with `locate`, on the
    hash join, the message of each one's problem too: see `group_check.located_messages`)."""
    if isinstance(codes, pa.ChunkedArray):
        codes = codes.combine_chunks()
    if len(codes) != len(batch):
        raise ChatgateError(
            f"the check {check.describe()!r} gave {len(codes)} codes for {len(batch)} rows"
        )
    if codes.null_count == len(codes):
        return
    where = pc.indices_nonzero(codes.is_valid())
    reasons = codes.take(where).cast(pa.string())
    _count(tally, reasons, batch.column(names.n).take(where) if dedup_on else None)
    if plan.join_on == "value":
        joined = [batch.column(column).take(where) for column in names.joined(plan).values()]
        values = {name: array for name, array in zip(names.fvalues(plan), joined)}
        tally.failing.append(pa.table({**values, names.freason: reasons}))
        return
    arrays = failing_tuples(
        check, batch, codes, columns=plan.columns, kinds=plan.kinds, single=plan.single,
        keys=(names.k1, names.kl), locate=locate,
    )
    failing = dict(zip((names.fk1, names.fkl, names.fsha, names.freason, names.fmessage), arrays))
    _file_failing(tally, pa.table(failing), names)


def _count(tally: _Tally, reasons: pa.Array, rows: pa.Array | None) -> None:
    """Count the failing tuples' `reasons`, each on its number of `rows` (None: one row each)."""
    if not len(reasons):
        return
    per_reason = pa.table({"reason": reasons, "rows": pa.repeat(1, len(reasons)) if rows is None else rows})
    per_reason = per_reason.group_by("reason").aggregate([("rows", "sum")])
    for reason, count in zip(per_reason["reason"].to_pylist(), per_reason["rows_sum"].to_pylist()):
        tally.count(reason, count)


def _file_failing(tally: _Tally, failing: pa.Table, names: _Names) -> None:
    """Keep failing tuples of the hash join: (hash, length, SHA-256, code)."""
    tally.pending += failing.num_rows
    tally.failing.append(failing)
    if tally.pending > max(COMPACT_FAILING_ROWS, tally.compacted):
        # A failing tuple on many rows is kept once; the threshold grows with the
        # distinct failing set, so compacting stays linear overall.
        tally.failing = [_distinct_failing(tally.failing, names)]
        tally.compacted = tally.failing[0].num_rows
        tally.pending = 0


def _progress(
    rows: int, label: str, *, chunk_size: int, progress: bool | None, verb: str = "checked"
) -> Progress:
    """The rows `verb` (checked, counted), shown as `chatgate.progress` says (see `IbisEngine`'s
    `progress=`) under `label` unless the job names the step (`progress.labelled`); nothing for
    `PROGRESS_MIN_BATCHES` batches or fewer."""
    show = mode(progress) if rows > PROGRESS_MIN_BATCHES * chunk_size else "off"
    return Progress(label_or(label), rows, unit="rows", verb=verb, show=show)


def _distinct_estimate(table: ibis.Table, value_of: Callable[[ibis.Table], ibis.Value]) -> tuple[int, int]:
    """The number of non-null values of `table` and an estimate of how many are distinct.

    The distinct count of the values' 64-bit hashes: exact but for hash collisions, and
    cheap (a scan and a hash table of integers). DuckDB 1.x's `approx_count_distinct` was
    off by up to 20% on 1M rows, too much to decide on; it serves backends without `hash()`.
    A tuple is a struct, never null: every row counts.
    """
    value = value_of(table)
    try:
        distinct = value.hash().nunique()
        table.get_backend().compile(distinct)
    except Exception:  # noqa: BLE001 - no hash() here
        distinct = value.approx_nunique()
    stats = table.aggregate(values=value.count(), distinct=distinct)
    row = stats.to_pyarrow().to_pylist()[0]
    return row["values"] or 0, row["distinct"] or 0


def _missing_tuples(batch: pa.RecordBatch, columns: tuple[str, ...]) -> int:
    """The rows of `batch` whose every column in `columns` is null (a missing tuple)."""
    if any(batch.column(c).null_count == 0 for c in columns):
        return 0
    missing = functools.reduce(pc.and_, (batch.column(c).is_null() for c in columns))
    return pc.sum(missing).as_py() or 0


def _stream_expr(table: ibis.Table, plan: _Plan, names: _Names, *, dedup_on: bool) -> ibis.Table:
    """What is sent to Python: the tuples (distinct, with their row counts) and their keys.

    The check's columns keep their names; the work columns have fresh ones.
    """
    if dedup_on and _has_row_ids(table, plan):
        return _distinct_by_row_id(table, plan, names)
    values = table.select(
        **{column: value for column, value in zip(plan.columns, plan.read(table))}
    )
    if dedup_on:
        values = values.group_by(list(plan.columns)).aggregate(**{names.n: ibis._.count()})
    elif plan.single:
        values = values.filter(values[plan.columns[0]].notnull())
    if plan.join_on == "hash":
        k1, kl = plan.keys([values[column] for column in plan.columns])
        values = values.mutate(**{names.k1: k1, names.kl: kl})
    texts = {name: join_value(values[column], MAPPED) for column, name in names.joined(plan).items() if name != column}
    return values.mutate(**texts) if texts else values


def _has_row_ids(table: ibis.Table, plan: _Plan) -> bool:
    """Can the distinct tuples be found by row id (see parquet_files), never holding a value in a hash table?"""
    return ROW_ID in table.columns and plan.join_on == "hash" and table.get_backend().name == "duckdb"


def _distinct_by_row_id(table: ibis.Table, plan: _Plan, names: _Names) -> ibis.Table:
    """The distinct tuples, their row counts and keys: grouped by SHA-256, fetched back by row id.

    The group-by holds a digest and two numbers per distinct tuple, however long the
    texts, so DuckDB keeps it under its memory limit (spilling when it must); the
    tuples themselves stream through a join on the smallest row id of each group.
    The source is scanned twice and never materialised (NOT MATERIALIZED).
    """
    read = table.select(
        **{column: value for column, value in zip(plan.columns, plan.read(table))},
        **{names.rid: table[ROW_ID]},
    )
    backend = table.get_backend()
    scanned = ibis.table(read.schema(), name=names.source)
    tuples = [scanned[column] for column in plan.columns]
    groups = scanned.group_by(plan.digest_of(tuples).name(names.fsha)).aggregate(
        **{names.n: ibis._.count(), names.first: scanned[names.rid].min()}
    )
    k1, kl = plan.keys(tuples)
    distinct = scanned.join(groups, scanned[names.rid] == groups[names.first]).select(
        *tuples, groups[names.n], **{names.k1: k1, names.kl: kl}
    )
    # A view keeps the SQL as written: Ibis's own parser would drop NOT MATERIALIZED.
    view = f"{names.source}_distinct"
    backend.con.execute(
        f"CREATE OR REPLACE TEMP VIEW {quote_identifier(view)} AS "
        f"WITH {quote_identifier(names.source)} AS NOT MATERIALIZED ({backend.compile(read)}) "
        f"{backend.compile(distinct)}"
    )
    return backend.table(view)


@contextlib.contextmanager
def _open_reader(expr: ibis.Table, chunk_size: int, *, ahead: bool) -> Iterator[Iterable[pa.RecordBatch]]:
    """The stream's batches; `ahead`, read ahead on a thread (`prefetch`): the engine reads the
    next batches while this process sends the last ones to the check and counts their codes.
    That takes a second core, so one worker (`--threads 1`) reads in turn with the check."""
    reader = record_batches(expr, chunk_size=chunk_size)
    try:
        if not ahead:
            yield reader
            return
        with Prefetched(reader) as batches:
            yield batches
    finally:
        reader.close()
