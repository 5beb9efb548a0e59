"""Spark settings shared by the job, the CLI, the operator and the tests — plain Python, no pyspark.

Delta comes from Maven Central through Spark's ``--packages`` (the Ivy cache under ``~/.ivy2*`` is
reused between runs). Offline, resolve the jars once (``mvn dependency:copy-dependencies`` or a
machine with access) into a folder and point ``DQ_CONTRACTS_DELTA_JARS`` at it: every ``*.jar``
there is passed with ``--jars`` instead.
"""

from __future__ import annotations

import glob
import os

SPARK_VERSION = "4.1.1"
DELTA_VERSION = "4.4.0"
SCALA_BINARY = "2.13"
DELTA_PACKAGE = f"io.delta:delta-spark_4.1_{SCALA_BINARY}:{DELTA_VERSION}"
DELTA_JARS_ENV = "DQ_CONTRACTS_DELTA_JARS"

DELTA_SQL_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

# Small-machine defaults: Delta's log replay uses 50 partitions and SQL shuffles 200, which on
# local[*] costs seconds of scheduling per query for nothing. Users override any of these.
LOCAL_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "8",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}


def offline_jars() -> list[str]:
    """Jars from ``$DQ_CONTRACTS_DELTA_JARS`` (empty when unset)."""
    folder = os.environ.get(DELTA_JARS_ENV)
    if not folder:
        return []
    return sorted(glob.glob(os.path.join(folder, "*.jar")))


def delta_dependency_conf() -> dict[str, str]:
    """``spark.jars`` (offline) or ``spark.jars.packages`` (Maven Central) for Delta."""
    jars = offline_jars()
    if jars:
        return {"spark.jars": ",".join(jars)}
    return {"spark.jars.packages": DELTA_PACKAGE}


def default_spark_conf(local: bool = True) -> dict[str, str]:
    """Delta SQL extensions, plus small-machine tuning when ``local``."""
    conf = dict(DELTA_SQL_CONF)
    conf["spark.sql.session.timeZone"] = "UTC"
    conf["spark.ui.showConsoleProgress"] = "false"  # we print our own progress lines
    if local:
        conf.update(LOCAL_CONF)
    return conf
