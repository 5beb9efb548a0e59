"""Benchmark: stream throughput of the example contract vs a plain ``filter`` + write of the same stream (issue 35).

Not part of the test suite. In ONE Spark session (``--master``, default ``local[2]``), the same Delta
source (``--rows`` orders in ``--batches`` commits, one file each, read with ``maxFilesPerTrigger=1``:
one micro-batch per commit), each query with its own fresh checkpoint and ``Trigger.AvailableNow``:

* **plain** — ``readStream`` → ``filter`` (the row conditions a hand-written job would test: amount,
  status, currency) → Delta append: the floor;
* **contract** — ``run_stream`` with the example contract as it ships
  (``dags_examples/contracts/orders.yaml``: row checks, no ``stream`` key): every row-level check tags
  rows, quarantine and valid rows appended exactly once;
* **contract + windows** (unless ``--no-windows``) — the same contract plus a ``stream`` key on
  ``created_at`` (1-hour windows, 10-minute watermark): the table-level checks also evaluated per closed
  window into a results table.

After one untimed round of each (the JVM warmed alike), each contract query alternates with plain runs
(plain, contract, plain, contract, …: ``--repeat`` of each). Printed per contract query: the seconds of
it and of its plain runs (best of each), rows per second, and the throughput ratio plain time /
contract time (the target, ≥ 0.7, is the example contract's). The row counts are asserted
(valid + quarantine = all rows, plain output = the rows its filter keeps).

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/stream_throughput.py --rows 400000 --batches 4 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import yaml  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.engine.session import get_spark  # noqa: E402
from airflow_dq_contracts.engine.streams import run_stream  # noqa: E402

EXAMPLE = os.path.join(ROOT, "dags_examples", "contracts", "orders.yaml")
STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]
PLAIN_FILTER = (
    "amount >= 0 AND amount <= 100000 AND order_id IS NOT NULL AND customer_id IS NOT NULL "
    "AND status IN ('pending', 'processing', 'shipped', 'delivered', 'cancelled') "
    "AND currency IN ('USD', 'EUR', 'GBP', 'CAD')"
)


def generate(spark: SparkSession, path: str, rows: int, batches: int) -> None:
    """``rows`` orders in ``batches`` Delta commits (one file each); about 1 % break a row check."""
    per = rows // batches
    statuses = F.array(*[F.lit(s) for s in STATUSES])
    for batch in range(batches):
        frame = spark.range(batch * per, (batch + 1) * per).select(
            F.col("id").alias("order_id"),
            (F.col("id") % 5000).alias("customer_id"),
            F.when(F.col("id") % 211 == 0, F.lit("lost"))
            .otherwise(statuses[(F.col("id") % 5).cast("int")])
            .alias("status"),
            F.when(F.col("id") % 173 == 0, F.lit(-5.0)).otherwise(F.col("id") % 900 + 10.5).alias("amount"),
            F.element_at(
                F.array(*[F.lit(c) for c in ("USD", "EUR", "GBP", "CAD")]), (F.col("id") % 4 + 1).cast("int")
            ).alias("currency"),
            F.concat(F.lit("user"), (F.col("id") % 5000).cast("string"), F.lit("@shop.example")).alias("email"),
            F.timestamp_seconds(F.lit(1_714_521_600) + F.col("id") * 3600 * 24 / F.lit(rows)).alias("created_at"),
            F.lit("2024-05-01").cast("date").alias("order_date"),
            F.array(F.lit("web"), F.lit("promo")).alias("tags"),
        )
        frame.coalesce(1).write.format("delta").mode("append").save(path)


def plain(spark: SparkSession, source: str, out: str) -> float:
    began = time.perf_counter()
    (
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", "1")
        .load(source)
        .where(PLAIN_FILTER)
        .writeStream.format("delta")
        .option("checkpointLocation", f"{out}/_checkpoint")
        .trigger(availableNow=True)
        .start(f"{out}/table")
        .awaitTermination()
    )
    return time.perf_counter() - began


def contract_run(spark: SparkSession, contract_path: str, out: str) -> float:
    contract = load_contract(contract_path)
    began = time.perf_counter()
    run_stream(
        spark,
        contract,
        checkpoint=f"{out}/checkpoint",
        results_table=f"{out}/results",
        quarantine_table=f"{out}/quarantine",
        valid_table=f"{out}/valid",
    )
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-windows", action="store_true", help="the example contract only (no run with windows)")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="dq-stream-bench-")
    spark = get_spark(app_name="dq-stream-bench", master=args.master)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        source = f"{work}/orders"
        generate(spark, source, args.rows, args.batches)
        total = spark.read.format("delta").load(source).count()
        kept = spark.read.format("delta").load(source).where(PLAIN_FILTER).count()
        with open(EXAMPLE, encoding="utf-8") as handle:
            doc = yaml.safe_load(handle)
        doc["dataset"] = {"path": source, "format": "delta", "options": {"maxFilesPerTrigger": "1"}}
        contracts = {"contract (row checks)": f"{work}/orders.yaml"}
        with open(contracts["contract (row checks)"], "w", encoding="utf-8") as handle:
            yaml.safe_dump(doc, handle)
        if not args.no_windows:
            doc["stream"] = {"event_time": "created_at", "window": "1 hour", "watermark": "10 minutes"}
            contracts["contract + 1-hour windows"] = f"{work}/orders_windows.yaml"
            with open(contracts["contract + 1-hour windows"], "w", encoding="utf-8") as handle:
                yaml.safe_dump(doc, handle)

        # one untimed round of each first: the JVM's code warmed for both alike
        plain(spark, source, f"{work}/plain-warmup")
        for index, contract_path in enumerate(contracts.values()):
            contract_run(spark, contract_path, f"{work}/contract-{index}-warmup")
        # each contract side by side with its own plain runs (plain, contract, plain, contract, …), so a
        # heavier query's memory churn (the windows') does not weigh on the other comparison
        print(f"\n{total:,} rows in {args.batches} micro-batches, master {args.master}, best of {args.repeat}")
        for index, (name, contract_path) in enumerate(contracts.items()):
            plain_times, contract_times = [], []
            for attempt in range(args.repeat):
                out = f"{work}/plain-{index}-{attempt}"
                plain_times.append(plain(spark, source, out))
                assert spark.read.format("delta").load(f"{out}/table").count() == kept
                out = f"{work}/contract-{index}-{attempt}"
                contract_times.append(contract_run(spark, contract_path, out))
                valid = spark.read.format("delta").load(f"{out}/valid").count()
                quarantined = spark.read.format("delta").load(f"{out}/quarantine").count()
                assert valid + quarantined == total, (name, valid, quarantined, total)
            best_plain, best_contract = min(plain_times), min(contract_times)
            target = "  (target ≥ 0.7)" if index == 0 else ""
            print(
                f"{'plain filter + write':28s}: {best_plain:7.2f} s  ({total / best_plain:,.0f} rows/s), {kept:,} rows kept"
            )
            print(
                f"{name:28s}: {best_contract:7.2f} s  ({total / best_contract:,.0f} rows/s), "
                f"ratio {best_plain / best_contract:.2f}{target}"
            )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
