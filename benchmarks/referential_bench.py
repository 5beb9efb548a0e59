"""Benchmark: the engine's ``referential`` check (plain and SCD-2 as of) against a hand-written anti-join.

Not part of the test suite. Generates, as Parquet, ``--rows`` fact rows (key, event time, amount;
1% NULL keys, 2% unknown keys) and a dimension of ``--dim`` customers with SCD-2 versions (a third
of them with two versions and a gap), then, in ONE Spark session on the same files, alternates:

* **engine plain / as of** — ``Evaluator.run()`` of a contract with one referential check (the
  whole evaluation: planning, the shared scan — here only the row count — and the anti-join pass;
  the join pass alone is reported too, from ``Evaluator.stats``);
* **hand plain / as of** — what an engineer would write: ``fact.join(dim, cond, "left_anti")``
  (non-NULL keys; for as of, the interval in the join condition) and a ``count()``.

Each pair runs once untimed first, then ``--repeat`` alternating timed rounds (engine, hand, engine,
hand…), so background load hits both alike; it prints the median of each and the ratio
engine/hand (target ≤ 1.3) and checks both found the same number of orphans.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/referential_bench.py --rows 10000000 --dim 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.engine import Evaluator  # noqa: E402
from airflow_dq_contracts.engine.session import get_spark  # noqa: E402

DAY = 86_400
T0 = 1_704_067_200  # 2024-01-01T00:00:00Z


def generate(spark: SparkSession, rows: int, dim: int, folder: str) -> tuple[str, str]:
    """(fact path, dimension path) of freshly written Parquet data."""
    fact_path, dim_path = os.path.join(folder, "fact"), os.path.join(folder, "dim")
    key = F.col("id") * 7919 % F.lit(int(dim * 1.02))  # ~2% of keys beyond the dimension
    (
        spark.range(rows)
        .select(
            F.when(F.col("id") % 100 == 0, None).otherwise(key + 1).alias("customer_id"),
            F.timestamp_seconds(F.lit(T0) + (F.col("id") * 104_729) % (365 * DAY)).alias("event_time"),
            (F.col("id") % 1000 / 10).alias("amount"),
        )
        .write.mode("overwrite")
        .parquet(fact_path)
    )
    ids = spark.range(1, dim + 1)
    first = ids.select(
        F.col("id").alias("customer_id"),
        F.timestamp_seconds(F.lit(T0 - 30 * DAY)).alias("valid_from"),
        F.when(F.col("id") % 3 == 0, F.timestamp_seconds(F.lit(T0 + 100 * DAY))).alias("valid_to"),
    )
    second = ids.where(F.col("id") % 3 == 0).select(  # a gap of 10 days, then a current version
        F.col("id").alias("customer_id"),
        F.timestamp_seconds(F.lit(T0 + 110 * DAY)).alias("valid_from"),
        F.lit(None).cast("timestamp").alias("valid_to"),
    )
    first.unionByName(second).write.mode("overwrite").parquet(dim_path)
    return fact_path, dim_path


def engine_plan(fact: DataFrame, dim: DataFrame, as_of: bool, join_times: list[float]) -> Callable[[], float]:
    check: dict[str, Any] = {
        "name": "known customer",
        "type": "referential",
        "columns": ["customer_id"],
        "reference": "customers",
    }
    if as_of:
        check["as_of"] = {"column": "event_time", "valid_from": "valid_from", "valid_to": "valid_to"}
    contract = load_contract({"name": "bench", "references": {"customers": {"path": "/unused"}}, "checks": [check]})

    def run() -> float:
        evaluator = Evaluator(contract, fact, references={"customers": dim}, progress=lambda _: None)
        record = evaluator.run().checks[0]
        join_times.append(sum(s.seconds for s in evaluator.stats if s.name.startswith("join")))
        assert record.status != "error", record.message
        return float(record.metric_value or 0)

    return run


def hand_plan(fact: DataFrame, dim: DataFrame, as_of: bool) -> Callable[[], float]:
    def run() -> float:
        f = fact.where(F.col("customer_id").isNotNull()).alias("f")
        d = dim.alias("d")
        condition = F.col("f.customer_id") == F.col("d.customer_id")
        if as_of:
            f = f.where(F.col("event_time").isNotNull())
            condition = (
                condition
                & (F.col("d.valid_from") <= F.col("f.event_time"))
                & (F.col("d.valid_to").isNull() | (F.col("f.event_time") < F.col("d.valid_to")))
            )
        else:
            d = dim.select("customer_id").alias("d")
        return float(f.join(d, condition, "left_anti").count())

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", default=None, help="where to write the data (default: a temp dir)")
    args = parser.parse_args(argv)

    spark = get_spark(app_name="dq-referential-bench", master=args.master)
    spark.sparkContext.setLogLevel("ERROR")
    folder = args.workdir or tempfile.mkdtemp(prefix="dq-ref-bench-")
    try:
        began = time.perf_counter()
        fact_path, dim_path = generate(spark, args.rows, args.dim, folder)
        print(f"data: {args.rows:,} fact rows x {args.dim:,} customers in {time.perf_counter() - began:.1f} s")
        fact, dim = spark.read.parquet(fact_path), spark.read.parquet(dim_path)
        for as_of in (False, True):
            label = "as of" if as_of else "plain"
            join_times: list[float] = []
            plans = {"engine": engine_plan(fact, dim, as_of, join_times), "hand": hand_plan(fact, dim, as_of)}
            answers = {name: run() for name, run in plans.items()}  # warm-up (JIT, codegen, file cache)
            join_times.clear()
            assert answers["engine"] == answers["hand"], answers
            times: dict[str, list[float]] = {name: [] for name in plans}
            for _ in range(args.repeat):
                for name, run in plans.items():
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
            engine, hand = statistics.median(times["engine"]), statistics.median(times["hand"])
            join = statistics.median(join_times)
            print(
                f"{label:6} orphans {answers['engine']:,.0f}: engine {engine:.2f} s (its join pass {join:.2f} s), "
                f"hand anti-join {hand:.2f} s; ratio whole evaluation {engine / hand:.2f}, join pass "
                f"{join / hand:.2f} (runs: engine {[f'{t:.2f}' for t in times['engine']]}, "
                f"hand {[f'{t:.2f}' for t in times['hand']]})",
                flush=True,
            )
    finally:
        if not args.workdir:
            shutil.rmtree(folder, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
