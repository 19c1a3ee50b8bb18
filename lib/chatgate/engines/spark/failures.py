"""Spark failing, on one line: out of memory (driver or executor), or its JVM gone, named with the setting to raise."""

from __future__ import annotations

import re

from ...errors import error_chain
from .errors import first_line, java_throwables, spark_error_line
from .session import jvm_log

_JAVA_OOM = re.compile(r"java\.lang\.OutOfMemoryError(?:: [A-Za-z][A-Za-z ]*[A-Za-z])?")
_OTHER_OOM = re.compile(r"(?:[A-Za-z_$][\w$]*\.)*[\w$]*OutOfMemoryError(?:: [A-Za-z][A-Za-z ]*[A-Za-z])?")
_OOM_PHRASES = ("Java heap space", "GC overhead limit exceeded")


def oom_cause(text: str) -> str | None:
    """The out-of-memory error `text` names (java.lang.OutOfMemoryError: Java heap space, Spark's
    SparkOutOfMemoryError, ...), if any."""
    found = _JAVA_OOM.search(text) or _OTHER_OOM.search(text)
    if found:
        return found.group(0)
    if any(phrase in text for phrase in _OOM_PHRASES):
        return "java.lang.OutOfMemoryError"
    return None


def jvm_gone(error: BaseException, text: str) -> bool:
    """Is `error` py4j finding the JVM gone (refused, reset, an empty answer)?"""
    if isinstance(error, (ConnectionRefusedError, ConnectionResetError, BrokenPipeError)):
        return True
    name = type(error).__name__
    if name == "Py4JNetworkError":
        return True
    if name == "Py4JJavaError" and not text:
        return True  # its message is asked of the JVM, which didn't answer
    return any(phrase in text for phrase in _JVM_GONE)


_JVM_GONE = (
    "Answer from Java side is empty",
    "Error while sending or receiving",
    "Error while receiving",
    "JAVA_GATEWAY_EXITED",
    "SparkContext was shut down",
    "Cannot call methods on a stopped SparkContext",
)


def log_says_oom() -> bool:
    """Does the end of the JVM's own log (when it is a file) name an OutOfMemoryError?"""
    path = jvm_log()
    if path is None:
        return False
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 4 * 2**20))
            return b"java.lang.OutOfMemoryError" in handle.read()
    except OSError:
        return False


def out_of_memory(cause: str, master: str | None, gone: bool) -> str:
    """The one line for Spark running out of memory: which JVM, and the setting to raise."""
    if master is None:  # a Spark Connect server's, or unknown
        who = "Spark"
        raise_it = "raise the memory of the JVM that failed: spark.driver.memory, or spark.executor.memory on a cluster"
    elif master.startswith("local"):
        who = "Spark's JVM (the driver, whose threads are the local executors)"
        raise_it = (
            "raise spark.driver.memory (default 1g): SPARK_DRIVER_MEMORY=8g before chatgate run, "
            "--driver-memory 8g for spark-submit"
        )
    elif gone:
        who = "Spark's driver"
        raise_it = "raise spark.driver.memory (--driver-memory 8g for spark-submit)"
    else:
        who = "a Spark executor"
        raise_it = "raise spark.executor.memory (--executor-memory 8g for spark-submit)"
    return (
        f"{who} ran out of memory ({cause}){' and exited' if gone else ''}; {raise_it}. "
        "Spark reads every value whole, even one over max_value_bytes (reported too_large, never parsed), "
        "so the memory must hold the largest value several times over"
    )


def java_line(error: BaseException) -> str:
    java = next((e for e in error_chain(error) if java_throwables(e)), None)
    return spark_error_line(java) if java is not None else first_line(error)


def short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
