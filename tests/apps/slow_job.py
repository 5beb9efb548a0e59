"""Cluster-test application that holds its executors busy until it is killed.

Each task touches ``<marker-prefix>.<pid>`` (so the test knows tasks are running on executors) and
then sleeps; the job would take ``--seconds`` if nobody killed it.

Example::

    spark-submit --master spark://127.0.0.1:7077 slow_job.py --marker /shared/started --seconds 600
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marker", required=True)
    parser.add_argument("--seconds", type=float, default=600)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("dq-cluster-test-slow").getOrCreate()

    def hold(rows):  # runs in a Python worker on an executor
        with open(f"{args.marker}.{os.getpid()}", "w"):
            pass
        time.sleep(args.seconds)
        yield from rows

    spark.sparkContext.parallelize(range(2), 2).mapPartitions(hold).count()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
