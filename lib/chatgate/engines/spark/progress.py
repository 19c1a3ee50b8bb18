"""Progress of Spark's work, from the driver: the tasks done of the stages of the block's jobs.

The check runs on executors, where nothing can print to the user's terminal. The driver
asks instead: on a classic session, `SparkContext.statusTracker()` lists the jobs of this
thread's job group (or of no group), and those that appear during the block are its own;
each job's stages give their tasks done and their number (a stage not started yet counts
its tasks too, so the total is known early; a stage Spark skipped, its output at hand,
isn't counted once a later stage of its job runs). The job group itself is left alone: a notebook or a scheduler cancels by it.
On Spark Connect, the server's progress updates (`SparkSession.registerProgressHandler`,
Spark 4.0+) give the same per stage. `chatgate.progress.Progress` polls them from its
thread and shows them; the time left is that of the tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ...progress import Poll, Progress


@contextmanager
def spark_progress(spark: Any, label: str, *, verb: str = "done") -> Iterator[Progress]:
    """Within the block, the tasks of the jobs it runs on `spark`, done of all, shown as `label`."""
    with _tasks(spark) as poll, Progress(label, unit="tasks", verb=verb, poll=poll, counting=poll is not None) as shown:
        yield shown


@contextmanager
def _tasks(spark: Any) -> Iterator[Poll | None]:
    """A poll of the tasks of the block's jobs; None where neither API answers."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        with _connect_tasks(spark) as poll:
            yield poll
        return
    try:
        context = spark.sparkContext
        tracker = context.statusTracker()
        group = context.getLocalProperty("spark.jobGroup.id")  # this thread's, or None
        before = set(tracker.getJobIdsForGroup(group))
    except Exception:  # noqa: BLE001 - no SparkContext to ask: the pass shows its time only
        yield None
        return
    yield lambda: _job_tasks(tracker, set(tracker.getJobIdsForGroup(group)) - before)


def _job_tasks(tracker: Any, jobs: set[int]) -> tuple[int, int | None]:
    """The tasks done and in all of the stages of `jobs` (None: no job started yet)."""
    stages: list[Any] = []
    for job in jobs:
        info = tracker.getJobInfo(job)
        if info is not None:
            found = (tracker.getStageInfo(stage) for stage in sorted(info.stageIds))
            stages += _run_stages([stage for stage in found if stage is not None])
    return _sums(stages)


def _run_stages(stages: list[Any]) -> list[Any]:
    """A job's stages (in id order) but those Spark skipped: a parent stage (a lower id) that never
    ran a task while a later one did had its output already (Spark's adaptive plans make such jobs)."""
    started = [n for n, stage in enumerate(stages) if stage.numCompletedTasks or stage.numActiveTasks]
    last = started[-1] if started else -1
    return [stage for n, stage in enumerate(stages) if n >= last or n in started]


def _sums(stages: Iterable[Any]) -> tuple[int, int | None]:
    done = total = 0
    for stage in stages:
        done += stage.numCompletedTasks
        total += stage.numTasks
    return done, total or None


@contextmanager
def _connect_tasks(spark: Any) -> Iterator[Poll | None]:
    """The tasks of the block's operations as a Spark Connect server reports them."""
    lock = threading.Lock()
    seen: dict[tuple[str | None, int], tuple[int, int]] = {}

    def handler(stages: Any, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        with lock:
            for stage in stages or ():
                seen[(operation_id, stage.stage_id)] = (stage.num_completed_tasks, stage.num_tasks)

    def poll() -> tuple[int, int | None]:
        with lock:
            counts = list(seen.values())
        total = sum(n for _, n in counts)
        return sum(d for d, _ in counts), total or None

    try:
        spark.registerProgressHandler(handler)
    except Exception:  # noqa: BLE001 - a client before Spark 4.0: the pass shows its time only
        yield None
        return
    try:
        yield poll
    finally:
        spark.removeProgressHandler(handler)
