"""Spark jobs of one run submitted from several threads, with the run's Spark Connect tags in each.

A run's scan and grouped passes (and a suite's contracts) share nothing but the session, so they
are submitted together: Spark runs concurrent jobs of one application side by side, and on a small
run — where a job is mostly planning and, on Spark Connect, gRPC round trips — their latencies
overlap instead of adding up.

On Spark Connect the operation tags of a session are *per thread* (``spark.addTag``): the run's tag,
which ``on_kill`` interrupts (:mod:`.connect_session`), is copied into every worker thread here, so
a stopped task still cancels the jobs those threads submitted. (A spark-submit session's job groups
are set by each job itself: :func:`~.spark_errors.job_group`.)

Example::

    run_concurrently(spark, [lambda: scan(), lambda: grouped(0)], pass_parallelism(spark, 2))
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_PASS_PARALLELISM",
    "PASS_PARALLELISM_CONF_KEY",
    "conf_parallelism",
    "pass_parallelism",
    "run_concurrently",
]

_T = TypeVar("_T")

#: Spark conf: how many of a run's passes (scan, grouped passes) are submitted at once; 1 = one after another.
PASS_PARALLELISM_CONF_KEY = "spark.dqcontracts.passParallelism"
DEFAULT_PASS_PARALLELISM = 4


def conf_parallelism(spark: SparkSession, key: str, default: int, jobs: int) -> int:
    """Threads for ``jobs`` jobs from the Spark conf ``key`` (``default`` when unset or not a number), 1..``jobs``."""
    try:
        wanted = int(spark.conf.get(key, str(default)) or default)
    except ValueError:
        wanted = default
    return max(1, min(wanted, jobs))


def pass_parallelism(spark: SparkSession, jobs: int) -> int:
    """Threads for ``jobs`` passes: ``spark.dqcontracts.passParallelism`` (default 4), at least 1, at most ``jobs``."""
    return conf_parallelism(spark, PASS_PARALLELISM_CONF_KEY, DEFAULT_PASS_PARALLELISM, jobs)


def _tags(spark: SparkSession) -> set[str]:
    """The calling thread's operation tags (Spark Connect); none on a classic session."""
    try:
        return set(spark.getTags())
    except Exception:  # noqa: BLE001 - a classic session before Spark 3.5 APIs, or no tags: nothing to copy
        return set()


@contextlib.contextmanager
def _tagged(spark: SparkSession, tags: set[str]) -> Any:
    added = [tag for tag in sorted(tags) if tag not in _tags(spark)]
    for tag in added:
        spark.addTag(tag)
    try:
        yield
    finally:
        for tag in added:
            with contextlib.suppress(Exception):
                spark.removeTag(tag)


def run_concurrently(
    spark: SparkSession, jobs: Sequence[Callable[[], _T]], parallelism: int, *, remote: bool = False
) -> list[_T]:
    """Run ``jobs`` (at most ``parallelism`` at a time); their results in order.

    ``remote``: ``spark`` is a Spark Connect session (its capabilities say so), whose per-thread
    operation tags are copied into each worker thread.

    Every job runs to its end; then the first exception raised by one of them (in job order) is
    raised here. An interrupt of the calling thread (``RunInterrupted``, ``KeyboardInterrupt``) is
    raised at once. With ``parallelism`` 1, or one job, they run in this thread, in order.
    """
    if parallelism <= 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    remote_tags = _tags(spark) if remote else set()

    def call(job: Callable[[], _T]) -> _T:
        if not remote_tags:
            return job()
        with _tagged(spark, remote_tags):
            return job()

    with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="dq-pass") as pool:
        futures = [pool.submit(call, job) for job in jobs]
        outcomes: list[tuple[bool, Any]] = []
        for future in futures:
            # An interrupt (the run told to stop: a BaseException, raised in this thread by its signal
            # handler) is not held back: it leaves at once, the pool waiting for the jobs it stopped.
            try:
                outcomes.append((True, future.result()))
            except Exception as exc:  # noqa: BLE001 - re-raised below, after every job ended
                outcomes.append((False, exc))
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]
