"""Spark's errors on one line: the Java exception's message and its root cause, never a frame."""

from __future__ import annotations

import re


def first_line(error: BaseException) -> str:
    """The first non-blank line of an error's message (Spark's start with a newline)."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)


def error_text(error: BaseException) -> str:
    """str(error), or "" when it can't be had (a Py4JJavaError asks the JVM, which may be gone)."""
    try:
        return str(error)
    except Exception:  # noqa: BLE001
        return ""


_THROWN = re.compile(r"^(?:: |Caused by: )([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+)(?:: (.*))?$")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")


def java_throwables(error: BaseException) -> list[tuple[str, str]]:
    """(class, first line of message) of each Java throwable in a Py4JJavaError's text, outermost first.

    The text is pyspark's: "An error occurred while calling o35.sql.", then ": " and the
    Java exception, its frames, and a "Caused by: " line for each cause.
    """
    found = []
    for line in error_text(error).splitlines():
        matched = _THROWN.match(line.strip() if line.startswith("Caused by") else line)
        if matched:
            found.append((matched.group(1), _SQLSTATE.sub("", matched.group(2) or "").strip()))
    return found


def spark_error_line(error: BaseException) -> str:
    """A Spark error on one line: the Java exception's message and its root cause, never a frame.

    A Py4JJavaError's own first line ("An error occurred while calling o35.sql.") names only the
    call: what Spark said is on the lines after it.
    """
    thrown = java_throwables(error)
    if not thrown:
        return first_line(error)
    top_class, top = thrown[0]
    root_class, root = thrown[-1]
    line = top or simple_class(top_class)
    if len(thrown) > 1 and root and root not in line:
        line += f" (caused by {simple_class(root_class)}: {without_source(root)})"
    return " ".join(line.split())


_JSON_SOURCE = re.compile(r"\s*(\(start marker at )?\[Source: .*$")


def without_source(message: str) -> str:
    """A message without the text Jackson quotes from its input ("[Source: (String)"{...")."""
    return _JSON_SOURCE.sub("", message) or message


def simple_class(java_class: str) -> str:
    return java_class.rsplit(".", 1)[-1]
