"""A session the job starts on one machine replays Delta's log in as many tasks as it has cores."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark")

from chatgate.engines.spark.session import local_defaults  # noqa: E402

SNAPSHOT = "spark.databricks.delta.snapshotPartitions"


@pytest.mark.parametrize(
    "master, partitions",
    [("local", "1"), ("local[2]", "2"), ("local[4,3]", "4"), ("local[*]", str(os.cpu_count() or 1)), ("local[*,2]", str(os.cpu_count() or 1))],
)
def test_local_masters_replay_the_log_in_one_task_per_core(master, partitions):
    assert local_defaults(master) == {SNAPSHOT: partitions}


@pytest.mark.parametrize("master", ["local-cluster[2,1,1024]", "yarn", "spark://host:7077", "k8s://https://api:6443"])
def test_clusters_keep_deltas_own_default(master):
    assert local_defaults(master) == {}
