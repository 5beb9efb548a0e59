"""Spark settings shared by the job, the CLI, the operator and the tests — plain Python, no pyspark.

Delta's jars are resolved once per machine into a local folder (:mod:`airflow_dq_contracts.runtime.jars`,
under an inter-process lock) and passed as ``spark.jars`` / ``--jars``, never ``--packages``: Ivy
is not safe for concurrent writers to one cache. Offline, point ``DQ_CONTRACTS_DELTA_JARS`` at a
folder of jars (``dq-contracts jars fetch`` on a connected machine makes one): every ``*.jar``
there is passed instead.

The Delta artifact follows the Spark version the job runs on (:func:`delta_package`): Delta publishes
one ``delta-spark_<spark minor>_<scala>`` artifact per Spark minor release, and a jar built for
another minor fails at class-loading time, far from the cause.
"""

from __future__ import annotations

import glob
import os
import re
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

SPARK_VERSION = "4.1.1"
DELTA_VERSION = "4.4.0"
SCALA_BINARY = "2.13"
DELTA_JARS_ENV = "DQ_CONTRACTS_DELTA_JARS"
DELTA_PACKAGE_ENV = "DQ_CONTRACTS_DELTA_PACKAGE"
# Spark minor release -> Delta artifact built for it (Maven Central, io.delta, all at DELTA_VERSION).
DELTA_ARTIFACTS: dict[str, str] = {
    "4.0": f"delta-spark_4.0_{SCALA_BINARY}",
    "4.1": f"delta-spark_4.1_{SCALA_BINARY}",
}
# The default (Spark 4.1) coordinate; code that knows the running Spark calls delta_package().
DELTA_PACKAGE = f"io.delta:{DELTA_ARTIFACTS['4.1']}:{DELTA_VERSION}"

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


def installed_spark_version() -> str | None:
    """The Spark version ``spark-submit`` will run, found without importing pyspark.

    ``$SPARK_HOME`` (an existing Spark install) wins, read from its ``jars/spark-core_*.jar``;
    otherwise the ``pyspark`` wheel's distribution version. ``pyspark-client`` alone ships no
    Spark (no jars, no ``spark-submit``), so it is not asked. ``None`` when neither exists.

    >>> installed_spark_version() is None or installed_spark_version().count(".") >= 1
    True
    """
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        for jar in glob.glob(os.path.join(spark_home, "jars", "spark-core_*.jar")):
            found = re.search(r"spark-core_[\d.]+-(\d+\.\d+\.\d+)", os.path.basename(jar))
            if found:
                return found.group(1)
    try:
        return _dist_version("pyspark")
    except PackageNotFoundError:
        return None


def delta_package(spark_version: str | None = None) -> str:
    """Maven coordinate of the Delta jars for the Spark version the job runs on.

    ``$DQ_CONTRACTS_DELTA_PACKAGE`` overrides everything (any coordinate, e.g. a newer Delta);
    else ``spark_version`` (e.g. ``"4.0.1"``), else :func:`installed_spark_version`, else Spark
    4.1. A Spark minor release with no known Delta artifact is a clear ``ValueError`` naming the
    override, rather than a jar that fails to load inside the job.

    >>> delta_package("4.0.1")
    'io.delta:delta-spark_4.0_2.13:4.4.0'
    >>> delta_package("4.1.1")
    'io.delta:delta-spark_4.1_2.13:4.4.0'
    """
    override = os.environ.get(DELTA_PACKAGE_ENV, "").strip()
    if override:
        return override
    version_text = spark_version or installed_spark_version() or SPARK_VERSION
    minor = ".".join(version_text.split(".")[:2])
    artifact = DELTA_ARTIFACTS.get(minor)
    if artifact is None:
        raise ValueError(
            f"no Delta {DELTA_VERSION} artifact is known for Spark {version_text} (supported: "
            f"{', '.join(sorted(DELTA_ARTIFACTS))}); set {DELTA_PACKAGE_ENV}=io.delta:<artifact>:<version>"
        )
    return f"io.delta:{artifact}:{DELTA_VERSION}"


def pyspark_distribution_problem() -> str | None:
    """Why the installed PySpark Python files cannot be trusted, or ``None`` when they can.

    The Spark provider depends on ``pyspark-client``, which ships the same ``pyspark/`` files as
    ``pyspark``: two different versions installed means one overwrote the other's Python code
    over the jars of the ``pyspark`` wheel (DESIGN §8). The constraints files pin them equal.

    >>> pyspark_distribution_problem() is None or "pyspark-client" in pyspark_distribution_problem()
    True
    """
    try:
        wheel, client = _dist_version("pyspark"), _dist_version("pyspark-client")
    except PackageNotFoundError:  # only one of them (or neither): nothing overwrote anything
        return None
    if wheel == client:
        return None
    return (
        f"pyspark {wheel} and pyspark-client {client} are both installed: their pyspark/ Python "
        f"files overwrite each other over Spark {wheel}'s jars. Install pyspark-client=={wheel} "
        "(the constraints file pins it), or uninstall both and reinstall pyspark."
    )


def offline_jars() -> list[str]:
    """Jars from ``$DQ_CONTRACTS_DELTA_JARS`` (empty when unset)."""
    folder = os.environ.get(DELTA_JARS_ENV)
    if not folder:
        return []
    return sorted(glob.glob(os.path.join(folder, "*.jar")))


def default_spark_conf(local: bool = True) -> dict[str, str]:
    """Delta SQL extensions, plus small-machine tuning when ``local``."""
    conf = dict(DELTA_SQL_CONF)
    conf["spark.sql.session.timeZone"] = "UTC"
    conf["spark.ui.showConsoleProgress"] = "false"  # we print our own progress lines
    if local:
        conf.update(LOCAL_CONF)
    return conf
