"""Spark settings shared by the job, the CLI, the operator and the tests — plain Python, no pyspark.

Delta's jars are resolved once per machine into a local folder (:mod:`airflow_dq_contracts.jars`,
under an inter-process lock) and passed as ``spark.jars`` / ``--jars``, never ``--packages``: Ivy
is not safe for concurrent writers to one cache. Offline, point ``DQ_CONTRACTS_DELTA_JARS`` at a
folder of jars (``dq-contracts jars fetch`` on a connected machine makes one): every ``*.jar``
there is passed instead.
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


def delta_package(spark_version: str | None = None) -> str:
    """The Maven coordinate of Delta for a Spark version (default: the installed pin).

    >>> delta_package()
    'io.delta:delta-spark_4.1_2.13:4.4.0'
    """
    return DELTA_PACKAGE


def offline_jars() -> list[str]:
    """Jars from ``$DQ_CONTRACTS_DELTA_JARS`` (empty when unset)."""
    folder = os.environ.get(DELTA_JARS_ENV)
    if not folder:
        return []
    return sorted(glob.glob(os.path.join(folder, "*.jar")))


def delta_dependency_conf(ivy_home: str | None = None, ivy_settings: str | None = None) -> dict[str, str]:
    """``spark.jars`` with Delta's local jars (``$DQ_CONTRACTS_DELTA_JARS``, else resolved once).

    ``ivy_home`` / ``ivy_settings`` are the session's ``spark.jars.ivy`` / ``spark.jars.ivySettings``.

    Example::

        conf = {**default_spark_conf(), **delta_dependency_conf()}   # {'spark.jars': '/…/delta-spark….jar,…'}
    """
    from airflow_dq_contracts import jars  # jars imports this module

    return {"spark.jars": ",".join(jars.delta_jars(ivy_home=ivy_home, ivy_settings=ivy_settings))}


def default_spark_conf(local: bool = True) -> dict[str, str]:
    """Delta SQL extensions, plus small-machine tuning when ``local``."""
    conf = dict(DELTA_SQL_CONF)
    conf["spark.sql.session.timeZone"] = "UTC"
    conf["spark.ui.showConsoleProgress"] = "false"  # we print our own progress lines
    if local:
        conf.update(LOCAL_CONF)
    return conf
