"""Progress of Spark's work, from the driver: the tasks done of the stages of the block's jobs.

The check runs on executors, where nothing can print to the user's terminal. The driver
asks instead: on a classic session, the block's jobs run in a job group of their own and
`SparkContext.statusTracker()` gives each job's stages, with their tasks done and their
number (a stage not started yet counts its tasks too, so the total is known early); on
Spark Connect, the server's progress updates (`SparkSession.registerProgressHandler`,
Spark 4.0+) give the same per stage. `chatgate.progress.Progress` polls them from its
thread and shows them; the time left is that of the tasks.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ...progress import Poll, Progress

GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
"""The thread's local properties a job group sets (`SparkContext.setJobGroup`), restored after the block."""


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
    except Exception:  # noqa: BLE001 - no SparkContext to ask: the pass shows its time only
        yield None
        return
    with _job_group(context) as group:
        tracker = context.statusTracker()
        yield lambda: _group_tasks(tracker, group)


@contextmanager
def _job_group(context: Any) -> Iterator[str]:
    """The block's jobs in a job group of their own (this thread's), the thread's own group after."""
    saved = {key: context.getLocalProperty(key) for key in GROUP_PROPERTIES}
    group = f"chatgate-{uuid.uuid4().hex}"
    context.setJobGroup(group, saved["spark.job.description"] or "chatgate", False)
    try:
        yield group
    finally:
        for key, value in saved.items():
            context.setLocalProperty(key, value)


def _group_tasks(tracker: Any, group: str) -> tuple[int, int | None]:
    """The tasks done and in all of the stages of the group's jobs (None: no job started yet)."""
    stages: set[int] = set()
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        if info is not None:
            stages.update(info.stageIds)
    return _sums(info for info in map(tracker.getStageInfo, sorted(stages)) if info is not None)


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
