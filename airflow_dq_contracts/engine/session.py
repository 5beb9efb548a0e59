"""Building a SparkSession that can read and write Delta tables."""

from __future__ import annotations

import logging
import time
from typing import Mapping

from pyspark.sql import SparkSession

from airflow_dq_contracts import spark_config

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
