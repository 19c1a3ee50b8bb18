"""A session the job starts on one machine replays Delta's log in as many tasks as it has cores, and logs at WARN."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark")

from chatgate.engines.spark.session import LOG_LEVEL_CONF, _session_conf, local_defaults  # noqa: E402

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


def test_a_session_chatgate_starts_logs_at_warn():
    _, conf = _session_conf("local[2]", {}, {})
    assert conf[LOG_LEVEL_CONF] == "WARN"


@pytest.mark.parametrize(
    "launched, extra",
    [
        ({"spark.log.level": "INFO"}, {}),
        ({}, {"spark.log.level": "DEBUG"}),
        ({"spark.driver.extraJavaOptions": "-Dlog4j.configurationFile=my-log4j2.properties"}, {}),
    ],
)
def test_a_log_level_chosen_by_the_user_wins(launched, extra):
    _, conf = _session_conf("local[2]", launched, extra)
    assert conf.get(LOG_LEVEL_CONF) == extra.get(LOG_LEVEL_CONF)


def test_a_log4j_file_in_sparks_conf_dir_wins(tmp_path, monkeypatch):
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    _, conf = _session_conf("local[2]", {}, {})
    assert LOG_LEVEL_CONF not in conf
