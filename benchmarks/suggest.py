"""Benchmark: ``suggest`` (one profiling run) against evaluating the example contract on the same rows.

Not part of the test suite. Generates an orders dataset with the columns of
``dags_examples/contracts/orders.yaml`` (order_id, customer_id, status, amount, currency, email,
created_at, order_date, tags) as Parquet, then, in ONE Spark session and on the same files, runs:

* **evaluate** — ``Evaluator.run()`` of the example contract (its 25 checks: one shared scan, the
  grouped passes of its duplicates/cardinality checks, the exact median);
* **suggest** — :func:`airflow_dq_contracts.engine.suggest.suggest` with ``order_date`` as the
  partition column (probe, one scan, the value-count pass, the key pass).

Each runs once untimed on a 1 % slice first (JIT, code generation), then ``--repeat`` timed runs on
everything; the best is kept. It prints both wall times, the passes ``suggest`` made and the ratio
suggest / evaluate (target ≤ 2).

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/suggest.py --rows 10000000 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.engine import Evaluator  # noqa: E402
from airflow_dq_contracts.engine.session import get_spark  # noqa: E402
from airflow_dq_contracts.engine.suggest import suggest  # noqa: E402

CONTRACT = os.path.join(ROOT, "dags_examples", "contracts", "orders.yaml")
REFERENCE = "2024-03-02T02:00:00Z"
STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]
CURRENCIES = ["USD", "EUR", "GBP", "CAD"]
TAGS = ["gift", "express", "promo", "b2b", "first-order"]


def generate(spark: SparkSession, rows: int, path: str) -> None:
    """One day of orders (2024-03-01), deterministic, written as Parquet (not timed)."""
    rid = F.col("id")

    def pick(values: list[str], salt: int) -> Any:
        index = (F.pmod(F.xxhash64(rid, F.lit(salt)), F.lit(len(values))) + 1).cast("int")
        return F.element_at(F.array(*[F.lit(v) for v in values]), index)

    customer = F.pmod(F.xxhash64(rid, F.lit(1)), F.lit(rows // 10 + 1)) + 1
    (
        spark.range(rows, numPartitions=max(2, rows // 500_000))
        .select(
            (rid + 1).alias("order_id"),
            customer.alias("customer_id"),
            pick(STATUSES, 2).alias("status"),
            (F.pmod(F.xxhash64(rid, F.lit(3)), F.lit(50_000)) / 100.0 + 1).alias("amount"),
            pick(CURRENCIES, 4).alias("currency"),
            F.when(F.pmod(F.xxhash64(rid, F.lit(5)), F.lit(10)) == 0, None)
            .otherwise(F.concat(F.lit("user"), customer.cast("string"), F.lit("@example.com")))
            .alias("email"),
            F.timestamp_seconds(F.lit(1_709_251_200) + F.pmod(F.xxhash64(rid, F.lit(6)), F.lit(86_400))).alias(
                "created_at"
            ),
            F.lit("2024-03-01").cast("date").alias("order_date"),
            F.slice(
                F.array(*[F.lit(t) for t in TAGS]), 1, F.pmod(F.xxhash64(rid, F.lit(7)), F.lit(4)).cast("int")
            ).alias("tags"),
        )
        .write.mode("overwrite")
        .parquet(path)
    )


def measure(name: str, run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The best wall time of ``repeat`` runs, and the last run's value."""
    best, value = float("inf"), None
    for attempt in range(repeat):
        began = time.perf_counter()
        value = run()
        seconds = time.perf_counter() - began
        best = min(best, seconds)
        print(f"  {name} run {attempt + 1}: {seconds:.1f} s", flush=True)
    return best, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="generate into (or reuse) DIR instead of a temp folder")
    args = parser.parse_args(argv)

    spark = get_spark(app_name="dq-contracts-suggest-bench", master=args.master)
    spark.sparkContext.setLogLevel("ERROR")
    folder = args.keep or tempfile.mkdtemp(prefix="dq-suggest-bench-")
    path = os.path.join(folder, f"orders_{args.rows}")
    try:
        if not os.path.exists(path):
            began = time.perf_counter()
            generate(spark, args.rows, path)
            print(f"generated {args.rows:,} rows in {time.perf_counter() - began:.1f} s → {path}", flush=True)
        df = spark.read.parquet(path)
        contract = load_contract(CONTRACT)

        def evaluate_on(frame: Any) -> Callable[[], Any]:
            return lambda: Evaluator(contract, frame, reference_time=REFERENCE).run()

        def suggest_on(frame: Any) -> Callable[[], Any]:
            return lambda: suggest(frame, name="orders", partition_by=["order_date"], reference_time=REFERENCE)

        warm = df.where(F.col("order_id") % 100 == 0)
        evaluate_on(warm)()
        suggest_on(warm)()
        evaluated, _ = measure("evaluate", evaluate_on(df), args.repeat)
        suggested, suggestion = measure("suggest", suggest_on(df), args.repeat)
        passes = suggestion.profile.passes
        print(f"\nrows: {args.rows:,}  master: {args.master}")
        print(f"evaluate orders.yaml ({sum(1 for _ in contract.evaluated_checks())} checks): {evaluated:.1f} s")
        print(f"suggest: {suggested:.1f} s  passes: " + ", ".join(f"{p} {s:.1f} s" for p, s in passes))
        print(f"ratio suggest / evaluate: {suggested / evaluated:.2f} (target ≤ 2)")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
