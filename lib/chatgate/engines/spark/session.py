"""A SparkSession with Delta Lake enabled, wherever chatgate runs.

Four situations, in the order they are tried:

1. A session is already active (a notebook, a test fixture, a job that built its
   own): it is returned as it is.
2. `$SPARK_REMOTE` (or `spark.remote` in `extra_conf`) names a Spark Connect server
   (`sc://host:15002`): a Connect session to it. The server brings its own jars and
   settings, Delta's among them; only the app name and `extra_conf` go with the session.
3. The driver runs under `spark-submit` (or another launcher that already started
   the JVM): the settings it was launched with are kept, and Delta's extension
   and catalog are added when the launcher put Delta on the class path
   (`--packages io.delta:delta-spark_4.1_2.13:4.1.0`, `--jars ...`, or a platform
   with Delta built in). Jars can't be added to a running driver, so without them
   a warning says what to pass and the session comes up without Delta.
4. A plain Python process: Delta's jars are taken from a local directory,
   `$CHATGATE_JARS_DIR` or else the first `.cache/jars` found walking up from the
   working directory and from this package (`make jars` fills `<repo>/.cache/jars`),
   and passed with `spark.jars`. If there is no such directory, the session falls
   back to `spark.jars.packages` with `DELTA_PACKAGE`, which makes Spark resolve
   the jars from Maven Central at start-up (that needs a route to it).

In the fourth case the JVM is this process's child, and `jvm_output=` sends what it
prints (Spark's log, its progress bars, the JVM's own warnings and crash messages) to a
file instead of this process's stderr and stdout: the job does (`job_jvm_output`), so
`chatgate run --engine spark` prints its own lines only, and a failure is one line
that can name the file.

(Skipped in the doctests: it starts a JVM.)

>>> spark = get_spark(master="local[2]")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_PACKAGE = "io.delta:delta-spark_4.1_2.13:4.1.0"
"""The Maven coordinate of Delta Lake for Spark 4.1 / Scala 2.13 (delta-storage comes with it)."""

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
JARS_DIR_ENV = "CHATGATE_JARS_DIR"
JVM_OUTPUT_ENV = "CHATGATE_SPARK_LOG"
"""Where the job's own JVM prints (a file); `-` leaves it on the console."""

OOM_EXIT_CODE = 52
"""The status a Spark JVM exits with after an OutOfMemoryError (SparkExitCode.OOM)."""

_JARS_SUBDIR = Path(".cache") / "jars"
_DELTA_JAR_PREFIXES = ("delta-spark", "delta-core")


def get_spark(
    app_name: str = "chatgate",
    master: str | None = None,
    extra_conf: Mapping[str, Any] | None = None,
    *,
    jvm_output: str | os.PathLike[str] | None = None,
) -> SparkSession:
    """The active SparkSession, or a new one with Delta Lake enabled.

    `master` defaults to the launcher's (spark-submit) or else `local[*]`; a
    Spark Connect session (`$SPARK_REMOTE`) has the server's. `extra_conf` is
    applied last, so it overrides anything set here; it is ignored when a session
    is already active (set runtime options on it with `spark.conf.set`).
    `jvm_output`: a file that a JVM started here prints to, rather than this
    process's stderr (see the module notes; `jvm_log()` then names it).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = (extra_conf or {}).get("spark.remote") or os.environ.get("SPARK_REMOTE")
    if remote:
        return _connect_session(app_name, str(remote), extra_conf or {})

    launched = _launcher_conf()
    master, conf = _session_conf(master, launched, extra_conf or {})
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    if jvm_output is not None and not launched:
        _launch_jvm({"spark.app.name": app_name, "spark.master": master, **conf}, Path(jvm_output))
    return builder.getOrCreate()


def _session_conf(
    master: str | None, launched: Mapping[str, str], extra_conf: Mapping[str, Any]
) -> tuple[str, dict[str, str]]:
    """The master and settings of a new session: Delta's, then `extra_conf`, then a local session's defaults."""
    conf = delta_conf(launched)
    conf.update({key: _conf_value(value) for key, value in extra_conf.items()})
    if _log_level_free(launched, conf):
        conf[LOG_LEVEL_CONF] = DEFAULT_LOG_LEVEL
    conf_master = conf.pop("spark.master", None)
    master = master or conf_master or launched.get("spark.master") or "local[*]"
    if master.startswith("local"):
        # Local workers must run this interpreter (with pyarrow and chatgate), not `python3`.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        for key, value in local_defaults(master).items():
            if key not in conf and key not in launched:
                conf[key] = value
    return master, conf


LOG_LEVEL_CONF = "spark.log.level"
DEFAULT_LOG_LEVEL = "WARN"
"""Spark's own log level in a session chatgate starts: its INFO lines (thousands a run) bury the job's."""


def _log_level_free(launched: Mapping[str, str], conf: Mapping[str, str]) -> bool:
    """Whether no one chose Spark's log level: no `spark.log.level`, no log4j settings of one's own."""
    if LOG_LEVEL_CONF in launched or LOG_LEVEL_CONF in conf:
        return False
    options = "spark.driver.extraJavaOptions"
    if "log4j" in launched.get(options, "") + conf.get(options, ""):
        return False
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(os.environ.get("SPARK_HOME", ""), "conf")
    return not os.path.exists(os.path.join(conf_dir, "log4j2.properties"))


def local_defaults(master: str) -> dict[str, str]:
    """Settings for a session on one machine: as many partitions of Delta's log replay as it has cores.

    Delta's default is cluster-sized: 50 tasks rebuild a table's state at each new version
    of its log, which on local[2] costs a second or more per table read or written, whatever
    its size (most of a run that checks a few appended rows). Shuffles keep Spark's default,
    which adaptive execution coalesces. Settings given in `extra_conf` or to spark-submit win.
    """
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master)
    if found is None:  # local-cluster[...] is a cluster of processes: Spark's defaults
        return {}
    threads = found.group(1) or "1"
    partitions = str(os.cpu_count() or 1) if threads == "*" else str(max(1, int(threads)))
    return {"spark.databricks.delta.snapshotPartitions": partitions}


_jvm_log: Path | None = None


def jvm_log() -> Path | None:
    """The file the JVM started by `get_spark(jvm_output=...)` prints to (None: it prints to the console)."""
    return _jvm_log


def jvm_exit_code() -> int | None:
    """The exit status of this process's own Spark JVM once it has exited (None: running, or not a child)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return None
    code = process.poll()
    return None if code is None else int(code)


def job_jvm_output() -> Path | None:
    """Where the job's JVM prints: `$CHATGATE_SPARK_LOG`, else a new file in the system's temp
    directory (chatgate-spark/<time>-<pid>.log, kept `JVM_LOGS_KEPT_DAYS` days); None when
    `$CHATGATE_SPARK_LOG` is `-` (the console)."""
    chosen = os.environ.get(JVM_OUTPUT_ENV)
    if chosen == "-":
        return None
    if chosen:
        return Path(chosen).expanduser()
    folder = Path(tempfile.gettempdir()) / "chatgate-spark"
    _remove_old_logs(folder)
    return folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


JVM_LOGS_KEPT_DAYS = 7
"""How long the job's JVM logs stay in the temp directory's chatgate-spark folder."""


def _remove_old_logs(folder: Path) -> None:
    cutoff = time.time() - JVM_LOGS_KEPT_DAYS * 86400
    try:
        for old in folder.glob("*.log"):
            if old.stat().st_mtime < cutoff:
                old.unlink()
    except OSError:
        pass  # another run's cleanup, or a folder we can't list: the logs stay


def _launch_jvm(conf: Mapping[str, str], output: Path) -> None:
    """Start the JVM that the builder's session will use, printing to `output` (appended to).

    It is what the builder does when it finds no JVM (pyspark's `launch_gateway` with the
    session's settings), with the JVM's stdout and stderr sent to the file.
    """
    global _jvm_log
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return  # a JVM runs already: its output goes where it went
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("ab") as sink:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": sink, "stderr": sink})
    SparkContext._ensure_initialized(gateway=gateway)
    _jvm_log = output


def _connect_session(app_name: str, url: str, extra_conf: Mapping[str, Any]) -> SparkSession:
    """A Spark Connect session to `url`; the master, jars and Delta's settings are the server's."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in extra_conf.items():
        if key != "spark.remote":
            builder = builder.config(key, _conf_value(value))
    return builder.getOrCreate()


def delta_conf(launched: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings that enable Delta, given the settings the JVM was launched with."""
    launched = dict(launched or {})
    conf = {
        "spark.sql.extensions": _append(launched.get("spark.sql.extensions"), DELTA_EXTENSION),
        # A catalog set by the platform (Unity, Glue, ...) is kept.
        "spark.sql.catalog.spark_catalog": launched.get(
            "spark.sql.catalog.spark_catalog", DELTA_CATALOG
        ),
    }
    if _names_delta(launched.get("spark.jars")) or _names_delta(
        launched.get("spark.jars.packages")
    ):
        return conf
    if launched:
        if _delta_loadable():
            return conf
        # The driver is running: jars set now wouldn't reach its class path, and a
        # Delta catalog it can't load would break every table lookup.
        warnings.warn(
            "Delta Lake isn't on this driver's class path, so Delta tables can't be read or "
            f"written: pass `--packages {DELTA_PACKAGE}` (or `--jars` with the jars of "
            "`make jars`) to spark-submit",
            RuntimeWarning,
            stacklevel=3,
        )
        return {}
    jars = delta_jars()
    if jars:
        conf["spark.jars"] = _append(launched.get("spark.jars"), *map(str, jars))
    else:
        conf["spark.jars.packages"] = _append(launched.get("spark.jars.packages"), DELTA_PACKAGE)
    return conf


def delta_jars() -> list[Path]:
    """The jars of the local jars directory (see the module notes), or [] when there is none."""
    directory = find_jars_dir()
    return sorted(directory.glob("*.jar")) if directory else []


def find_jars_dir() -> Path | None:
    """`$CHATGATE_JARS_DIR`, else the nearest `.cache/jars` holding Delta's jar, else None.

    A `$CHATGATE_JARS_DIR` without Delta's jar is an error: it was asked for.
    """
    explicit = os.environ.get(JARS_DIR_ENV)
    if explicit:
        directory = Path(explicit).expanduser()
        if not _holds_delta(directory):
            raise FileNotFoundError(
                f"${JARS_DIR_ENV}={explicit} holds no delta-spark jar (run `make jars`)"
            )
        return directory
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidate = folder / _JARS_SUBDIR
            if _holds_delta(candidate):
                return candidate
    return None


def _conf_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _holds_delta(directory: Path) -> bool:
    return directory.is_dir() and any(
        jar.name.startswith(_DELTA_JAR_PREFIXES) for jar in directory.glob("*.jar")
    )


def _names_delta(value: str | None) -> bool:
    if not value:
        return False
    return any(prefix in value for prefix in _DELTA_JAR_PREFIXES)


def _append(existing: str | None, *items: str) -> str:
    """A comma-separated Spark list with `items` added once each."""
    values = [v.strip() for v in (existing or "").split(",") if v.strip()]
    values += [item for item in items if item not in values]
    return ",".join(values)


def _launcher_conf() -> dict[str, str]:
    """The spark.* settings of a JVM that is already running (spark-submit), else {}.

    In a plain Python process no JVM runs yet; none is started here, because the
    one started by the builder must get `spark.jars` at launch.
    """
    from pyspark import SparkConf, SparkContext

    if SparkContext._jvm is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def _delta_loadable() -> bool:
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    if jvm is None:  # no JVM: Delta can't be loaded in it
        return False
    try:
        return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(DELTA_EXTENSION))
    except Exception:  # noqa: BLE001 - no JVM or no such helper: assume it isn't there
        return False


@contextmanager
def runtime_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Runtime SQL settings of `spark` for the jobs run inside the block, restored after."""
    conf = spark.conf
    changed: dict[str, str | None] = {}
    for key, value in settings.items():
        if conf.get(key, None) != value:
            changed[key] = conf.get(key, None)
            conf.set(key, value)
    try:
        yield
    finally:
        for key, old in changed.items():
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)
