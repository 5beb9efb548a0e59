"""Cluster-test application: write a Delta table, read it back, and report where each part ran.

Run by ``spark-submit`` (client or cluster deploy mode) from ``tests/test_cluster.py``; imports
nothing from this project, so it tests the cluster plumbing alone. Rows are
``(run_id, id, value = id * id % 97)`` for ``id`` in ``range(rows)``; the run replaces its own rows
(``replaceWhere``), so submitting the same run twice leaves one copy.

The JSON report (``--report``) holds what the test checks against its own plain-Python
computation: the row count and value sum read back through Spark, the driver's deploy mode,
working directory and parent process (``DriverWrapper`` on a worker vs. ``SparkSubmit``), and the
working directories of the Python workers that ran the tasks (inside the worker's executor folder).

Example::

    spark-submit --master spark://127.0.0.1:7077 delta_roundtrip.py \\
        --table /shared/t --rows 1000 --run-id r1 --report /shared/r1.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def parent_cmdline() -> str:
    """Command line of this process's parent (the JVM that launched the Python driver)."""
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def task_places(_rows):  # runs in a Python worker on an executor
    yield (os.getcwd(), os.getpid())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--report", required=True)
    args = parser.parse_args(argv)

    spark = SparkSession.builder.appName(f"dq-cluster-test-{args.run_id}").getOrCreate()
    data = spark.range(args.rows, numPartitions=4).select(
        F.lit(args.run_id).alias("run_id"), F.col("id"), (F.col("id") * F.col("id") % 97).alias("value")
    )
    (data.write.format("delta").mode("overwrite").option("replaceWhere", f"run_id = '{args.run_id}'").save(args.table))
    back = spark.read.format("delta").load(args.table).where(F.col("run_id") == args.run_id)
    summary = back.agg(F.count("*").alias("n"), F.sum("value").alias("total")).first()
    places = spark.sparkContext.parallelize(range(4), 4).mapPartitions(task_places).collect()
    report = {
        "master": spark.sparkContext.master,
        "deploy_mode": spark.conf.get("spark.submit.deployMode", "client"),
        "driver_cwd": os.getcwd(),
        "driver_parent": parent_cmdline(),
        "rows": summary["n"],
        "value_sum": summary["total"],
        "task_cwds": sorted({cwd for cwd, _ in places}),
    }
    tmp = args.report + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(report, handle)
    os.replace(tmp, args.report)  # the test polls for the file: never let it see half of it
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
