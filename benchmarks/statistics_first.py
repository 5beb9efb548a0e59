"""Benchmark: statistics-first evaluation against the scan and a hand-written floor (issue 27).

Not part of the test suite. In ONE Spark session, side by side:

1. **Statistics-only contract** on a partitioned Delta table (default 10M rows in 100 files: 20 days ×
   5 files): ``num_rows``, ``missing`` on the required columns, ``min``/``max`` on integer, decimal
   and date columns, ``freshness`` on a timestamp. Three plans:

   * **statistics** — the job's entry, ``run_contract`` on the table's location (location in, result
     out), the default: the input is read lazily, and a contract the Delta log answers whole runs with
     no DataFrame built and no Spark job (``engine/log_plan.py``);
   * **scan** — the same with ``spark.dqcontracts.statistics.enabled=false`` (the one shared scan);
   * **floor** — one hand-written ``spark.read…load(path).agg(...)`` computing the same numbers.

   Results are asserted identical (every metric of statistics = scan = floor); the ratio
   floor/statistics is the headline (target ≥ 20). Run twice: on a plain table, and on one like a
   table that lived (``--no-lived`` skips it): deletion vectors in one day's files (a ``DELETE``), a
   renamed column (column mapping) and 60-character strings — the files with deletion vectors are read
   narrowly by delta-rs, the rest answered from the log.
2. **Bounds on doubles** (``--rows`` rows, DAYS × FILES_PER_DAY files written by Spark's Delta): a
   ``min`` and a ``max`` check on a ``double`` column. NaN is outside Delta's statistics: the log answers
   when the table's files were all written by Spark's Delta (which orders NaN above every number, so a
   file's ``maxValues`` is NaN when it holds one) — see ``engine/statistics_first.py``. Same three plans,
   results asserted identical.
3. **The example contract** (``dags_examples/contracts/orders.yaml``, mixed checks) on generated orders
   in Delta: statistics on vs off (runs alternated), results asserted identical, the ratio printed.

Each plan runs once untimed first, then ``--repeat`` timed runs; the best is reported.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/statistics_first.py --rows 10000000 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import datetime as dt
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
for entry in (ROOT, os.path.join(ROOT, "dags_examples")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.engine import Evaluator  # noqa: E402
from airflow_dq_contracts.engine.runner import run_contract  # noqa: E402
from airflow_dq_contracts.engine.session import get_spark  # noqa: E402
from airflow_dq_contracts.engine.statistics_first import STATISTICS_CONF_KEY, StatisticsSource  # noqa: E402

REFERENCE = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
DAYS = 20
FILES_PER_DAY = 5

STATS_CONTRACT: dict[str, Any] = {
    "name": "stats_only",
    "checks": [
        {"name": "rows", "type": "num_rows", "min": 1},
        {"name": "fresh", "type": "freshness", "timestamp_column": "created_at", "max_age_hours": 48},
    ],
    "columns": [
        {"name": "id", "checks": [{"name": "id_missing", "type": "missing", "max": 0},
                                  {"name": "id_min", "type": "min", "min": 0},
                                  {"name": "id_max", "type": "max"}]},
        {"name": "customer", "checks": [{"name": "customer_missing", "type": "missing", "max": 0}]},
        {"name": "qty", "checks": [{"name": "qty_min", "type": "min", "min": 0},
                                   {"name": "qty_max", "type": "max", "max": 20}]},
        {"name": "price", "checks": [{"name": "price_min", "type": "min"}, {"name": "price_max", "type": "max"}]},
        {"name": "day", "checks": [{"name": "day_min", "type": "min"}, {"name": "day_max", "type": "max"}]},
        {"name": "created_at", "checks": [{"name": "created_missing", "type": "missing", "max": 0}]},
    ],
}  # fmt: skip


LIVED_DEFAULTS = {
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    "spark.databricks.delta.properties.defaults.columnMapping.mode": "name",
    "spark.databricks.delta.properties.defaults.minReaderVersion": "3",
    "spark.databricks.delta.properties.defaults.minWriterVersion": "7",
}


def generate(spark: SparkSession, rows: int, path: str, lived: bool = False) -> None:
    """``rows`` rows, DAYS daily partitions of FILES_PER_DAY files each (no NULL in the required columns).

    ``lived``: deletion vectors and column mapping on; then rows of the newest day deleted (deletion
    vectors in its files), ``customer`` renamed to ``customer_ref``, ``status`` 60 characters long.
    """
    if lived:
        for key, value in LIVED_DEFAULTS.items():
            spark.conf.set(key, value)
    try:
        _write(spark, rows, path, lived)
    finally:
        for key in LIVED_DEFAULTS:
            spark.conf.unset(key)
    if lived:
        newest = REFERENCE.date() - dt.timedelta(days=1)
        spark.sql(f"DELETE FROM delta.`{path}` WHERE day = '{newest.isoformat()}' AND id % 97 = 0")
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN customer TO customer_ref")


def _write(spark: SparkSession, rows: int, path: str, lived: bool) -> None:
    rid = F.col("id")
    day = F.date_add(F.lit(REFERENCE.date() - dt.timedelta(days=DAYS)), (rid % DAYS).cast("int"))
    frame = spark.range(rows).select(
        rid,
        ((rid * 7919) % 100_000).alias("customer"),
        ((rid * 31) % 21).cast("int").alias("qty"),
        (((rid * 17) % 1_000_000) / 100).cast("decimal(10,2)").alias("price"),
        F.timestamp_micros(F.lit(int(REFERENCE.timestamp() * 1e6) - 3_600_000_000) - (rid * 9_973) % 10**12).alias(
            "created_at"
        ),
        F.concat(F.lit("status-" + ("x" * 53 if lived else "")), (rid % 7).cast("string")).alias("status"),
        day.alias("day"),
    )
    frame.repartition(DAYS * FILES_PER_DAY, "day", (rid % FILES_PER_DAY)).write.format("delta").partitionBy("day").save(
        path
    )


def floor_values(spark: SparkSession, path: str, customer: str = "customer") -> dict[str, Any]:
    """The hand-written floor: one aggregate query for every number of the contract."""
    df = spark.read.format("delta").load(path)
    epoch = F.unix_date  # dates as days; seconds below
    row = df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.max(F.unix_micros("created_at")).alias("fresh"),
        F.count(F.when(F.col("id").isNull(), 1)).alias("id_missing"),
        F.min("id").alias("id_min"),
        F.max("id").alias("id_max"),
        F.count(F.when(F.col(customer).isNull(), 1)).alias("customer_missing"),
        F.min("qty").alias("qty_min"),
        F.max("qty").alias("qty_max"),
        F.min("price").alias("price_min"),
        F.max("price").alias("price_max"),
        F.min(epoch("day")).alias("day_min"),
        F.max(epoch("day")).alias("day_max"),
        F.count(F.when(F.col("created_at").isNull(), 1)).alias("created_missing"),
    ).collect()[0]
    values = row.asDict()
    values["fresh"] = (REFERENCE.timestamp() * 1e6 - values["fresh"]) / 3.6e9
    values["day_min"] *= 86_400
    values["day_max"] *= 86_400
    return {key: float(value) for key, value in values.items()}


def evaluate(spark: SparkSession, contract: Any, path: str, statistics: bool) -> Any:
    """The contract on the Delta table at ``path`` as an Evaluator over a DataFrame read by the caller."""
    spark.conf.set(STATISTICS_CONF_KEY, str(statistics).lower())
    try:
        df = spark.read.format("delta").load(path)
        return Evaluator(contract, df, REFERENCE, run_id="bench", statistics=StatisticsSource(path)).run()
    finally:
        spark.conf.unset(STATISTICS_CONF_KEY)


def run_job(spark: SparkSession, contract: Any, path: str, statistics: bool) -> Any:
    """The contract on the Delta table at ``path`` from the job's entry (``run_contract``: location in, result out)."""
    spark.conf.set(STATISTICS_CONF_KEY, str(statistics).lower())
    try:
        return run_contract(
            spark, contract, input_path=path, input_format="delta", run_id="bench", reference_time=REFERENCE
        )
    finally:
        spark.conf.unset(STATISTICS_CONF_KEY)


def best_of(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    run()  # warm-up: JIT, code generation, the Delta log cached
    best, value = float("inf"), None
    for _ in range(repeat):
        began = time.perf_counter()
        value = run()
        best = min(best, time.perf_counter() - began)
    return best, value


def comparable(result: Any) -> list[tuple]:
    return [(r.check_id, r.status, r.metric_value, r.failed_rows, r.row_count, r.message) for r in result.checks]


def statistics_only(spark: SparkSession, rows: int, folder: str, repeat: int, lived: bool = False) -> None:
    path = os.path.join(folder, "lived_table" if lived else "stats_table")
    began = time.perf_counter()
    generate(spark, rows, path, lived)
    what = "a lived table (deletion vectors in one day, a renamed column, long strings)" if lived else "a plain table"
    print(f"generated {what}: {rows:,} rows in {DAYS} partitions in {time.perf_counter() - began:.1f} s")
    customer = "customer_ref" if lived else "customer"
    spec = dict(
        STATS_CONTRACT,
        columns=[dict(c, name=customer) if c["name"] == "customer" else c for c in STATS_CONTRACT["columns"]],
    )
    contract = load_contract(spec)
    t_stats, on = best_of(lambda: run_job(spark, contract, path, True), repeat)
    t_scan, off = best_of(lambda: run_job(spark, contract, path, False), repeat)
    t_floor, floor = best_of(lambda: floor_values(spark, path, customer), repeat)
    assert comparable(on) == comparable(off), "statistics and scan differ"
    assert {r.evaluated_from for r in on.checks if r.check_type != "schema"} == {"statistics"}
    by_name = {r.check_name: r.metric_value for r in on.checks}
    for name, value in floor.items():
        assert abs(by_name[name] - value) <= 1e-9 * max(1.0, abs(value)), (name, by_name[name], value)
    print(f"statistics-only contract, {len(on.checks)} checks on {rows:,} rows (best of {repeat}):")
    print(f"  statistics {t_stats:8.3f} s   scan {t_scan:8.3f} s   floor {t_floor:8.3f} s")
    print(
        f"  floor/statistics = {t_floor / t_stats:6.1f}×   scan/statistics = {t_scan / t_stats:6.1f}×  (target ≥ 20×)"
    )


DOUBLES_CONTRACT: dict[str, Any] = {
    "name": "double_bounds",
    "columns": [
        {"name": "amount", "checks": [{"name": "amount_min", "type": "min", "min": -1e9},
                                      {"name": "amount_max", "type": "max", "max": 1e9}]},
    ],
}  # fmt: skip


def doubles(spark: SparkSession, rows: int, folder: str, repeat: int) -> None:
    path = os.path.join(folder, "doubles_table")
    rid = F.col("id")
    began = time.perf_counter()
    spark.range(rows).select(
        rid, (((rid * 7919) % 2_000_003) / 7.0 - 140_000.0).cast("double").alias("amount")
    ).repartition(DAYS * FILES_PER_DAY).write.format("delta").save(path)
    print(
        f"generated a table of doubles: {rows:,} rows in {DAYS * FILES_PER_DAY} files in {time.perf_counter() - began:.1f} s"
    )
    contract = load_contract(DOUBLES_CONTRACT)

    def floor() -> dict[str, float]:
        row = spark.read.format("delta").load(path).agg(F.min("amount"), F.max("amount")).collect()[0]
        return {"amount_min": float(row[0]), "amount_max": float(row[1])}

    t_stats, on = best_of(lambda: run_job(spark, contract, path, True), repeat)
    t_scan, off = best_of(lambda: run_job(spark, contract, path, False), repeat)
    t_floor, values = best_of(floor, repeat)
    assert comparable(on) == comparable(off), "statistics and scan differ"
    by_name = {r.check_name: r for r in on.checks}
    for name, value in values.items():
        assert by_name[name].metric_value == value, (name, by_name[name].metric_value, value)
    answered = sorted(r.check_name for r in on.checks if r.evaluated_from == "statistics")
    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(None)), len(tracker.getJobIdsForGroup("dq-contracts:bench:scan"))
    run_job(spark, contract, path, True)
    jobs_after = len(tracker.getJobIdsForGroup(None)), len(tracker.getJobIdsForGroup("dq-contracts:bench:scan"))
    print(f"double bounds, {len(on.checks)} checks on {rows:,} rows (best of {repeat}); from the log: {answered}")
    print(f"  Spark jobs of one statistics run: {sum(jobs_after) - sum(jobs)}")
    print(f"  statistics {t_stats:8.3f} s   scan {t_scan:8.3f} s   floor {t_floor:8.3f} s")
    print(
        f"  floor/statistics = {t_floor / t_stats:6.1f}×   scan/statistics = {t_scan / t_stats:6.1f}×  (target ≥ 20×)"
    )


def example_contract(spark: SparkSession, folder: str, days: int, per_day: int, repeat: int) -> None:
    from orders_data import OrdersSpec, generate_orders, write_orders

    path = os.path.join(folder, "orders")
    write_orders(path, generate_orders(OrdersSpec(end=REFERENCE.date(), days=days, rows_per_day=per_day)))
    contract = load_contract(os.path.join(ROOT, "dags_examples", "contracts", "orders.yaml"))
    evaluate(spark, contract, path, True)  # warm-up of both plans' code paths
    evaluate(spark, contract, path, False)
    t_on = t_off = float("inf")
    for _ in range(repeat):  # alternated, so a busy machine slows both alike
        began = time.perf_counter()
        on = evaluate(spark, contract, path, True)
        t_on = min(t_on, time.perf_counter() - began)
        began = time.perf_counter()
        off = evaluate(spark, contract, path, False)
        t_off = min(t_off, time.perf_counter() - began)
    assert comparable(on) == comparable(off), "statistics and scan differ"
    answered = [r.check_id for r in on.checks if r.evaluated_from == "statistics"]
    print(f"example contract orders.yaml, {len(on.checks)} checks on {days * per_day:,} rows (best of {repeat}):")
    print(f"  switch on {t_on:8.3f} s   off {t_off:8.3f} s   off/on = {t_off / t_on:5.2f}×")
    print(f"  answered from the log: {', '.join(answered) or 'none'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--orders-days", type=int, default=30)
    parser.add_argument("--orders-per-day", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-lived", action="store_true", help="skip the table with deletion vectors")
    cases = ("statistics", "lived", "doubles", "example")
    parser.add_argument("--only", choices=cases, action="append", help="run only this case (repeatable)")
    args = parser.parse_args(argv)
    chosen = set(args.only or cases) - ({"lived"} if args.no_lived else set())
    spark = get_spark(app_name="statistics-first-bench", master=args.master)
    folder = tempfile.mkdtemp(prefix="dq-stats-bench-")
    try:
        if "statistics" in chosen:
            statistics_only(spark, args.rows, folder, args.repeat)
        if "lived" in chosen:
            statistics_only(spark, args.rows, folder, args.repeat, lived=True)
        if "doubles" in chosen:
            doubles(spark, args.rows, folder, args.repeat)
        if "example" in chosen:
            example_contract(spark, folder, args.orders_days, args.orders_per_day, args.repeat)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
