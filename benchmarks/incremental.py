"""Benchmark: an incremental daily run on a table of 30 days vs a run over one day's data vs a full re-check (issue 35).

Not part of the test suite. In ONE Spark session, with the same contract (row checks with quarantine,
a table-level count) and the same results/quarantine tables:

* **one day** — ``run_contract`` over a Delta table holding only that day's rows (the floor);
* **incremental** — ``run_contract(..., incremental=True)`` on a table of ``--days`` days right after
  the last day was appended (the earlier days already checked by an earlier incremental run): it reads
  the files added since the recorded version;
* **full** — ``run_contract`` over the whole table of ``--days`` days.

Printed: each run's seconds, then each plan's best of ``--repeat`` rounds (the plans alternate
within a round), incremental / one day (target ≤ 1.3) and full / one
day (≈ the number of days once the scan dominates). The row counts are asserted (one day's rows for
both the day and the increment, all rows for the full run).

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/incremental.py --rows-per-day 200000 --days 30 --master 'local[2]'
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

from pyspark.sql import functions as F  # noqa: E402

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.engine.runner import run_contract  # noqa: E402
from airflow_dq_contracts.engine.session import get_spark  # noqa: E402

CONTRACT = {
    "name": "bench_incremental",
    "columns": [
        {"name": "order_id", "type": "long", "checks": [{"name": "id_present", "type": "missing", "max": 0}]},
        {"name": "amount", "type": "double"},
        {"name": "day", "type": "int"},
    ],
    "checks": [
        {"name": "rows", "type": "num_rows", "min": 1},
        {"name": "amount_positive", "type": "row_condition", "condition": "amount > 0", "action": "quarantine"},
    ],
}


def _day_frame(spark, day: int, rows: int):
    return (
        spark.range(day * rows, (day + 1) * rows)
        .select(
            F.col("id").alias("order_id"),
            F.when(F.col("id") % 997 == 0, F.lit(-1.0)).otherwise(F.col("id") % 1000 + 1.0).alias("amount"),
            F.lit(day).alias("day"),
        )
        .repartition(2)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-day", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = get_spark(master=args.master)
    spark.conf.set("spark.dqcontracts.driverReadBytes", "0")  # Spark reads all three alike
    contract = load_contract(CONTRACT)
    work = tempfile.mkdtemp(prefix="dq-incremental-")
    try:
        table, one_day = os.path.join(work, "orders"), os.path.join(work, "one_day")
        results, quarantine = os.path.join(work, "results"), os.path.join(work, "quarantine")
        for day in range(args.days - 1):
            _day_frame(spark, day, args.rows_per_day).write.format("delta").mode("append").save(table)
        # The earlier days are checked once (recorded), then the last day lands.
        run_contract(
            spark,
            contract,
            input_path=table,
            incremental=True,
            run_id="seed",
            results_table=results,
            quarantine_table=quarantine,
        )
        last = args.days - 1
        _day_frame(spark, last, args.rows_per_day).write.format("delta").mode("append").save(table)
        _day_frame(spark, last, args.rows_per_day).write.format("delta").save(one_day)

        plans = {
            "day": {"input_path": one_day},
            "incremental": {"input_path": table, "incremental": True},
            "full": {"input_path": table},
        }
        best = dict.fromkeys(plans, float("inf"))
        # Alternated, one run of each plan per round, so a busy machine slows all three alike; the
        # first round warms up. The same run id each round: the increment is the same range every time
        # (a retry re-checks what it recorded), the other two replace their own rows.
        for round_ in range(args.repeat + 1):
            for label, settings in plans.items():
                began = time.perf_counter()
                result = run_contract(
                    spark,
                    contract,
                    run_id=f"{label}-run",
                    results_table=results,
                    quarantine_table=quarantine,
                    **settings,
                )
                took = time.perf_counter() - began
                expected = args.rows_per_day * (args.days if label == "full" else 1)
                assert result.row_count == expected, (label, result.row_count, expected)
                if round_:
                    best[label] = min(best[label], took)
                print(f"  round {round_} {label:<12} {took:7.2f} s" + ("" if round_ else " (warm-up)"), flush=True)
        day_s, incremental_s, full_s = best["day"], best["incremental"], best["full"]
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"rows per day {args.rows_per_day:,}, days {args.days}, master {args.master}")
    print(f"one day      {day_s:8.2f} s")
    print(f"incremental  {incremental_s:8.2f} s   incremental / one day = {incremental_s / day_s:.2f} (target <= 1.3)")
    print(f"full         {full_s:8.2f} s   full / one day        = {full_s / day_s:.2f}")


if __name__ == "__main__":
    main()
