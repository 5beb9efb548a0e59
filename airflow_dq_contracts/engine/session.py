"""Building a SparkSession that can read and write Delta tables."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

from airflow_dq_contracts import jvm_archive, spark_config

log = logging.getLogger(__name__)


def get_spark(
    app_name: str = "dq-contracts",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    local_tuning: bool = True,
) -> SparkSession:
    """Return the active SparkSession, or build one with Delta on the classpath.

    Inside ``spark-submit`` a session already exists (its jars and conf come from the command
    line), so it is reused as is; only the user's extra ``conf`` is applied where allowed.
    Otherwise Delta's jars are resolved once per machine (:func:`airflow_dq_contracts.jars.delta_jars`,
    honouring ``spark.jars.ivy``) and added to ``spark.jars`` (raises
    :class:`~airflow_dq_contracts.jars.JarResolutionError` when that fails).

    Example::

        spark = get_spark(master="local[2]")
        spark.range(3).write.format("delta").save("/tmp/t")
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    user = dict(conf or {})
    settings = spark_config.default_spark_conf(local=local_tuning)
    settings.update(user)
    if not any(p.strip().startswith("io.delta:delta-spark") for p in user.get("spark.jars.packages", "").split(",")):
        # Local jars resolved once per machine under a lock, never a concurrent Ivy resolve (jars.py).
        delta = spark_config.delta_dependency_conf(ivy_home=user.get("spark.jars.ivy"),
                                                   ivy_settings=user.get("spark.jars.ivySettings"))
        settings["spark.jars"] = ",".join(filter(None, [user.get("spark.jars"), delta["spark.jars"]]))
    # The driver JVM starts here: map its classes from the machine's archive when one was built.
    settings = jvm_archive.with_archive(settings)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def startup_line(spark: SparkSession, python_started: float, session_started: float) -> str:
    """One progress line saying where a spark-submit job's start-up went (epoch seconds in).

    ``python_started`` is when the driver's Python process began (the job records it at import),
    ``session_started`` when it asked for the session. The driver JVM's own start time comes from
    its ``RuntimeMXBean``: JVM start → Python start is spark-submit's work (class loading, jar
    resolution, launching Python); Python start → session is the SparkContext and Delta set-up.
    The ``jvm_start=`` field is machine-readable for ``benchmarks/task_overhead.py``.

    Example::

        began = time.time()
        spark = get_spark()
        print(startup_line(spark, PROCESS_STARTED, began))
        # session: jvm_start=1763915000.123 jvm→python 3.41 s, python→session 1.02 s, session 2.80 s
    """
    now = time.time()
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        jvm_start = float(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime()) / 1000
    except Exception:  # noqa: BLE001 - Spark Connect: no driver JVM in reach
        return f"session: ready in {now - session_started:.2f} s"
    return (f"session: jvm_start={jvm_start:.3f} jvm→python {python_started - jvm_start:.2f} s, "
            f"python→session {session_started - python_started:.2f} s, session {now - session_started:.2f} s")


#: Inputs up to this many bytes on disk (Spark's size estimate of the plan) count as *small*; the
#: Spark conf ``spark.dqcontracts.smallInputBytes`` overrides it (0 turns the tuning off).
SMALL_INPUT_BYTES = 8 * 1024 * 1024
SMALL_INPUT_CONF_KEY = "spark.dqcontracts.smallInputBytes"


@contextlib.contextmanager
def small_input_tuning(spark: SparkSession, frames: Sequence[DataFrame]) -> Iterator[str | None]:
    """Cheaper settings while a small run is checked (a freshly landed partition, and any reference
    tables, ``frames``, together at most :data:`SMALL_INPUT_BYTES`); yields a note
    of what changed (None when nothing did) and restores the session's settings afterwards.

    On a small input a check task's seconds go to compiling code, not to running it: whole-stage
    code generation compiles Java classes per query (the shared scan alone has dozens of
    aggregates), which takes longer than interpreting a few thousand rows; and each grouped pass
    shuffles into ``spark.sql.shuffle.partitions`` tasks where one does. So for an input whose
    on-disk size estimate is at most :data:`SMALL_INPUT_BYTES`, whole-stage code generation is
    off and grouped passes use one shuffle partition. Results are the same either way (Spark
    evaluates the same expressions, interpreted); a setting passed explicitly at submit is kept.

    Example::

        with small_input_tuning(spark, [df]) as note:
            print(note)   # small input (~31,744 bytes ≤ 8,388,608): whole-stage codegen off, 1 shuffle partition
    """
    changes = _small_input_changes(spark, frames)
    if not changes:
        yield None
        return
    size, limit, wanted = changes
    previous = {key: spark.conf.get(key, None) for key in wanted}
    for key, value in wanted.items():
        spark.conf.set(key, value)
    labels = {"spark.sql.codegen.wholeStage": "whole-stage codegen off",
              "spark.sql.shuffle.partitions": "1 shuffle partition"}
    try:
        yield f"small input (~{size:,} bytes ≤ {limit:,}): " + ", ".join(labels[key] for key in wanted)
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _small_input_changes(spark: SparkSession, frames: Sequence[DataFrame]) -> tuple[int, int, dict[str, str]] | None:
    try:
        limit = int(spark.conf.get(SMALL_INPUT_CONF_KEY, str(SMALL_INPUT_BYTES)) or 0)
    except ValueError:
        limit = SMALL_INPUT_BYTES
    if limit <= 0:
        return None
    try:
        size = sum(int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))  # type: ignore[attr-defined]
                   for frame in frames)
    except Exception:  # noqa: BLE001 - Spark Connect or an exotic source: no estimate, no tuning
        return None
    if size > limit:
        return None
    submitted = spark.sparkContext.getConf()
    wanted: dict[str, str] = {}
    if not submitted.contains("spark.sql.codegen.wholeStage"):
        wanted["spark.sql.codegen.wholeStage"] = "false"
    ours = spark_config.LOCAL_CONF["spark.sql.shuffle.partitions"]
    if submitted.get("spark.sql.shuffle.partitions", ours) == ours:
        wanted["spark.sql.shuffle.partitions"] = "1"
    return (size, limit, wanted) if wanted else None
