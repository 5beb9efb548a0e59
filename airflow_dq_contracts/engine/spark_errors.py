"""Spark errors as messages: the first meaningful line of an exception, quiet probes, and the driver-side
probes that must never fail a run (a regex compiled by the JVM, a job group tagged where there is a SparkContext).

The bottom of the engine (nothing of the package imported): the metrics, the relational passes and
the evaluator all report what Spark refused as one line of a check's ``error`` message.

Example::

    with quiet_pyspark_errors():
        try:
            df.where(F.expr("amount >")).schema
        except Exception as exc:  # noqa: BLE001 - ParseException
            print(first_line(exc))    # [PARSE_SYNTAX_ERROR] Syntax error at or near end of input…
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import SparkSession

_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first meaningful line of an exception (PySpark messages carry JVM stack traces).

    >>> first_line(ValueError("\\n  bad value  \\n  at org.apache.spark…"))
    'bad value'
    """
    text = str(exc).strip() or type(exc).__name__
    line = next((part.strip() for part in text.splitlines() if part.strip()), text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


_QUIET_LOCK = threading.Lock()
_QUIET: dict[str, Any] = {"depth": 0, "previous": []}


@contextlib.contextmanager
def quiet_pyspark_errors() -> Iterator[None]:
    """Silence PySpark's own error loggers while we probe something that may legitimately fail.

    PySpark 4 logs every analysis error with a query context as a JSON line on stderr before
    raising it; an expected failure (an invalid filter we report as a check error) is not news.
    Safe across threads (concurrent passes): the first one in silences, the last one out restores.
    """
    loggers = [logging.getLogger(name) for name in _PYSPARK_ERROR_LOGGERS]
    with _QUIET_LOCK:
        if _QUIET["depth"] == 0:
            _QUIET["previous"] = [lg.disabled for lg in loggers]
            for lg in loggers:
                lg.disabled = True
        _QUIET["depth"] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET["depth"] -= 1
            if _QUIET["depth"] == 0:
                for lg, was in zip(loggers, _QUIET["previous"]):
                    lg.disabled = was


@contextlib.contextmanager
def job_group(spark: SparkSession, group_id: str, description: str) -> Iterator[None]:
    """Tag the Spark jobs run inside with ``group_id`` (countable with ``statusTracker``); restore after."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: nothing to tag
        yield
        return
    previous_group = sc.getLocalProperty("spark.jobGroup.id")
    previous_description = sc.getLocalProperty("spark.job.description")
    sc.setJobGroup(group_id, description)
    try:
        yield
    finally:
        sc.setLocalProperty("spark.jobGroup.id", previous_group)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", previous_description)  # type: ignore[arg-type]


def java_regex_checker(spark: SparkSession) -> Callable[[str], str | None]:
    """``pattern → Java's complaint or None``, compiled by the driver JVM (no Spark job)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        try:
            jvm = spark.sparkContext._jvm
        except Exception:  # noqa: BLE001 - Spark Connect: the scan fallback isolates bad regexes
            jvm = None
    if jvm is None:
        return lambda pattern: None

    def check(pattern: str) -> str | None:
        try:
            jvm.java.util.regex.Pattern.compile(pattern)
        except Exception as exc:  # noqa: BLE001 - PatternSyntaxException arrives wrapped by py4j
            return first_line(exc)
        return None

    return check
