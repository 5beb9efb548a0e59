"""Benchmark: the engine's one-scan plan against a hand-written floor and a naive query-per-check plan.

Not part of the test suite. For each row count it generates a Parquet dataset (10 columns: ids
with duplicates and NULLs, a customer key, strings, doubles, ints, e-mails, unicode names, a
list, a timestamp and a date partition), then, in ONE Spark session and on the same files, runs:

* **engine** — ``Evaluator.run()`` on a contract of 40 checks over those columns;
* **floor** — what a careful engineer would write by hand for the same numbers: one
  ``df.agg(...)`` with every aggregate, plus one ``groupBy`` per distinct key set;
* **naive** — one Spark query per check (``count()``, ``countDistinct``, ``where(...).count()``…).

It prints wall time and Spark job count of each, and the ratios engine/floor (target ≤ 1.3) and
naive/engine (target ≥ 5). ``--constraints`` declares the columns' types and constraints
(``nullable: false``, ``primary_key``, ``allowed_values``, ``format``, ``min_value``/``max_value``),
so the engine also runs schema conformance and the constraint checks that no written check
suppresses; the floor then computes their extra numbers too. Each plan runs once untimed first (JIT and code generation), then
``--repeat`` timed runs; the best is reported.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/engine_bench.py --rows 1000000 10000000 --master 'local[2]'
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

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.engine import Evaluator  # noqa: E402
from airflow_dq_contracts.engine.session import get_spark  # noqa: E402

REFERENCE = "2024-03-01T00:00:00Z"
STATUSES = ["pending", "shipped", "delivered", "cancelled", "Shipped", "bogus"]
REGIONS = ["eu", "us", "apac", "EU"]
EMAIL = r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$"


DISTINCT_TYPES = ("duplicates", "cardinality")

# --constraints: what each column declares (its type, and the constraints of enforcement).
DECLARATIONS: dict[str, dict[str, Any]] = {
    "id": {"type": "long", "primary_key": True},  # both suppressed by written checks
    "customer": {"type": "long", "nullable": False},  # the written check is a share ≤ 1 %
    "status": {"type": "string", "allowed_values": STATUSES[:4]},  # suppressed by the whitelist
    "amount": {"type": "double", "min_value": -50, "max_value": 1950},
    "qty": {"type": "int", "min_value": 0, "max_value": 20},
    "email": {"type": "string", "format": "email"},  # the written check is a share ≥ 90 %
    "name": {"type": "string"},
    "tags": {"type": "list<string>"},
    "region": {"type": "string", "nullable": False},  # suppressed by "region present"
    "created_at": {"type": "timestamp", "nullable": False},
    "day": {"type": "date", "nullable": False},
}


def contract(distinct: bool = True, constraints: bool = False) -> dict[str, Any]:
    """41 checks over 10 columns; key sets {id}, {customer}, {status}, {customer, day}.

    ``distinct=False`` drops the 5 checks that need distinct counts (grouped passes), leaving only
    scan-shareable ones.
    """

    def col(name: str, *checks: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "checks": list(checks)}

    full = {
        "name": "bench_orders",
        "checks": [
            {"name": "rows", "type": "num_rows", "min": 1},
            {
                "name": "one order per customer and day",
                "type": "duplicates",
                "columns": ["customer", "day"],
                "return": "pct",
                "max": 0.5,
            },
            {"name": "fresh", "type": "freshness", "timestamp_column": "created_at", "max_age_hours": 48},
            {
                "name": "daily partitions",
                "type": "completeness",
                "partition_column": "day",
                "granularity": "daily",
                "lookback_days": 30,
            },
        ],
        "columns": [
            col(
                "id",
                {"name": "id present", "type": "missing", "max": 0},
                {"name": "id unique", "type": "duplicates", "max": 0},
                {"name": "id count", "type": "count", "min": 1},
                {"name": "id positive", "type": "min", "min": 0},
            ),
            col(
                "customer",
                {"name": "customer present", "type": "missing", "return": "pct", "max": 0.01},
                {"name": "many customers", "type": "cardinality", "min": 100},
                {"name": "repeat customers", "type": "duplicates", "return": "pct"},
            ),
            col(
                "status",
                {"name": "status valid", "type": "whitelist", "values": STATUSES[:4]},
                {"name": "status present", "type": "missing", "return": "pct", "max": 0.1},
                {"name": "few statuses", "type": "cardinality", "max": 10},
                {"name": "no bogus", "type": "blacklist", "values": ["bogus"], "return": "pct", "min": 0.9},
            ),
            col(
                "amount",
                {"name": "mean amount", "type": "mean", "between": [0, 1000]},
                {"name": "total amount", "type": "sum", "min": 0},
                {"name": "min amount", "type": "min", "min": -100},
                {"name": "max amount", "type": "max", "max": 10000},
                {"name": "amount variance", "type": "variance"},
                {"name": "amount stddev", "type": "stddev", "max": 1000},
                {"name": "median amount", "type": "percentile", "percentile": 0.5},
                {"name": "p95 amount", "type": "percentile", "percentile": 0.95, "max": 5000},
            ),
            col(
                "qty",
                {"name": "mean qty", "type": "mean"},
                {"name": "min qty", "type": "min", "min": 0},
                {"name": "max qty", "type": "max", "max": 100},
                {"name": "total qty", "type": "sum"},
                {"name": "qty values", "type": "whitelist", "values": list(range(0, 20)), "return": "pct", "min": 0.9},
            ),
            col(
                "email",
                {"name": "email format", "type": "pattern", "format": "email", "return": "pct", "min": 0.9},
                {"name": "email present", "type": "missing", "return": "pct"},
                {"name": "email length", "type": "max_length", "max": 254},
            ),
            col(
                "name",
                {"name": "name not empty", "type": "min_length", "min": 1},
                {"name": "name length", "type": "max_length", "max": 100},
                {"name": "name average", "type": "avg_length", "between": [2, 50]},
                {
                    "name": "name reasonable",
                    "type": "avg_length",
                    "return": "pct",
                    "length_min": 2,
                    "length_max": 30,
                    "min": 0.5,
                },
            ),
            col(
                "tags",
                {"name": "tags average", "type": "avg_length", "max": 5},
                {"name": "tags max", "type": "max_length", "max": 10},
            ),
            col(
                "region",
                {"name": "region valid", "type": "whitelist", "values": ["eu", "us", "apac"], "case_sensitive": False},
                {"name": "region present", "type": "missing", "max": 0},
            ),
            col("created_at"),
            col("day", {"name": "first day", "type": "min"}, {"name": "last day", "type": "max"}),
        ],
    }
    if not distinct:
        full["checks"] = [c for c in full["checks"] if c["type"] not in DISTINCT_TYPES]
        for column in full["columns"]:
            column["checks"] = [c for c in column["checks"] if c["type"] not in DISTINCT_TYPES]
    if constraints:
        for column in full["columns"]:
            declared = dict(DECLARATIONS[column["name"]])
            if declared["type"] == "list<string>":
                declared["type"] = {"kind": "list", "value_type": "string"}
            column.update(declared)
    else:
        full["enforcement"] = {"schema": "off", "constraints": "off"}
    return full


def generate(spark: SparkSession, rows: int, path: str) -> None:
    """Deterministic pseudo-random data, written as Parquet (not timed)."""
    rid = F.col("id")
    h = F.xxhash64(rid)
    pick = lambda values, salt: F.element_at(  # noqa: E731
        F.array(*[F.lit(v) for v in values]), (F.pmod(F.xxhash64(rid, F.lit(salt)), F.lit(len(values))) + 1).cast("int")
    )
    (
        spark.range(rows, numPartitions=max(2, rows // 500_000))
        .select(
            F.when(F.pmod(h, F.lit(1000)) == 0, None)
            .otherwise(F.when(F.pmod(h, F.lit(997)) == 1, rid - 1).otherwise(rid))
            .alias("id"),
            F.when(F.pmod(h, F.lit(503)) == 0, None)
            .otherwise(F.pmod(F.xxhash64(rid, F.lit(1)), F.lit(rows // 10 + 1)))
            .alias("customer"),
            F.when(F.pmod(h, F.lit(50)) == 0, None).otherwise(pick(STATUSES, 2)).alias("status"),
            (F.pmod(F.xxhash64(rid, F.lit(3)), F.lit(200_000)) / 100.0 - 50).alias("amount"),
            F.pmod(F.xxhash64(rid, F.lit(4)), F.lit(21)).cast("int").alias("qty"),
            F.when(F.pmod(h, F.lit(20)) == 0, None)
            .otherwise(
                F.when(F.pmod(h, F.lit(30)) == 1, F.concat(F.lit("broken"), rid.cast("string"))).otherwise(
                    F.concat(F.lit("user"), rid.cast("string"), F.lit("@example.com"))
                )
            )
            .alias("email"),
            F.concat(
                pick(["Ana", "Bjørn", "Chloé", "Dmitri", "李娜", "O'Neil"], 5),
                F.lit(" "),
                pick(["Smith", "Müller", "García", "Kowalski", ""], 6),
            ).alias("name"),
            F.slice(
                F.array(*[F.lit(t) for t in ("a", "b", "c", "d", "e", "f")]),
                1,
                F.pmod(F.xxhash64(rid, F.lit(7)), F.lit(6)).cast("int"),
            ).alias("tags"),
            pick(REGIONS, 8).alias("region"),
            F.timestamp_seconds(F.lit(1_709_251_200) - F.pmod(F.xxhash64(rid, F.lit(9)), F.lit(30 * 86400))).alias(
                "created_at"
            ),
            F.date_sub(
                F.lit("2024-03-01").cast("date"), F.pmod(F.xxhash64(rid, F.lit(10)), F.lit(30)).cast("int")
            ).alias("day"),
        )
        .write.mode("overwrite")
        .parquet(path)
    )


# --------------------------------------------------------------------------------------- floor


def floor_plan(df: DataFrame, distinct: bool = True, constraints: bool = False) -> Callable[[], Any]:
    """Hand-written: one aggregation with every metric, one groupBy per key set."""
    c = F.col

    def nulls(name: str) -> Any:
        return F.count_if(c(name).isNull())

    # The numbers the unsuppressed constraints add (the others are already computed below).
    extra = (
        [
            F.count_if(c("amount") < -50),
            F.count_if(c("amount") > 1950),
            F.count_if(c("qty") < 0),
            F.count_if(c("qty") > 20),
            nulls("created_at"),
            nulls("day"),
        ]
        if constraints
        else []
    )

    def run() -> Any:
        main = df.agg(
            *extra,
            F.count(F.lit(1)),
            F.max("created_at"),
            F.collect_set("day"),
            nulls("id"),
            F.count("id"),
            F.min("id"),
            nulls("customer"),
            F.count_if(c("status").isin(STATUSES[:4])),
            F.count_if(c("status").isNotNull()),
            nulls("status"),
            F.count_if(c("status") != "bogus"),
            F.avg("amount"),
            F.sum("amount"),
            F.min("amount"),
            F.max("amount"),
            F.var_samp("amount"),
            F.stddev_samp("amount"),
            F.percentile("amount", F.array(F.lit(0.5), F.lit(0.95))),
            F.avg("qty"),
            F.min("qty"),
            F.max("qty"),
            F.sum("qty"),
            F.count_if(c("qty").isin(list(range(20)))),
            F.count_if(c("email").rlike(EMAIL)),
            nulls("email"),
            F.max(F.char_length("email")),
            F.min(F.char_length("name")),
            F.max(F.char_length("name")),
            F.avg(F.char_length("name")),
            F.count_if(F.char_length("name").between(2, 30)),
            F.avg(F.size("tags")),
            F.max(F.size("tags")),
            F.count_if(F.lower("region").isin("eu", "us", "apac")),
            nulls("region"),
            F.min("day"),
            F.max("day"),
        ).collect()
        grouped = []
        for keys in (["id"], ["customer"], ["status"], ["customer", "day"]) if distinct else ():
            counts = df.groupBy(*keys).count()
            not_null = F.lit(True)
            for key in keys:
                not_null = not_null & c(key).isNotNull()
            grouped.append(counts.agg(F.sum("count"), F.count_if(not_null)).collect())
        return main, grouped

    return run


# --------------------------------------------------------------------------------------- naive


def naive_plan(df: DataFrame, distinct: bool = True) -> Callable[[], Any]:
    """One Spark query per check — what a loop over checks with ``df.count()``-style calls does."""
    c = F.col

    def one(expr: Any) -> Any:
        return df.agg(expr).collect()[0][0]

    distinct_queries: list[Callable[[], Any]] = [
        lambda: df.agg(F.count(F.lit(1)), F.countDistinct("customer", "day")).collect(),
        lambda: df.agg(F.count(F.lit(1)), F.countDistinct("id")).collect(),
        lambda: one(F.countDistinct("customer")),
        lambda: df.agg(F.count(F.lit(1)), F.countDistinct("customer")).collect(),
        lambda: one(F.countDistinct("status")),
    ]
    queries: list[Callable[[], Any]] = [
        lambda: df.count(),
        lambda: one(F.max("created_at")),
        lambda: df.select("day").distinct().collect(),
        lambda: df.where(c("id").isNull()).count(),
        lambda: one(F.count("id")),
        lambda: one(F.min("id")),
        lambda: df.where(c("customer").isNull()).count(),
        lambda: df.where(c("status").isNotNull() & ~c("status").isin(STATUSES[:4])).count(),
        lambda: df.where(c("status").isNull()).count(),
        lambda: df.where(c("status") != "bogus").count(),
        lambda: one(F.avg("amount")),
        lambda: one(F.sum("amount")),
        lambda: one(F.min("amount")),
        lambda: one(F.max("amount")),
        lambda: one(F.var_samp("amount")),
        lambda: one(F.stddev_samp("amount")),
        lambda: one(F.percentile("amount", 0.5)),
        lambda: one(F.percentile("amount", 0.95)),
        lambda: one(F.avg("qty")),
        lambda: one(F.min("qty")),
        lambda: one(F.max("qty")),
        lambda: one(F.sum("qty")),
        lambda: df.where(c("qty").isin(list(range(20)))).count(),
        lambda: df.where(c("email").rlike(EMAIL)).count(),
        lambda: df.where(c("email").isNull()).count(),
        lambda: one(F.max(F.char_length("email"))),
        lambda: one(F.min(F.char_length("name"))),
        lambda: one(F.max(F.char_length("name"))),
        lambda: one(F.avg(F.char_length("name"))),
        lambda: df.where(F.char_length("name").between(2, 30)).count(),
        lambda: one(F.avg(F.size("tags"))),
        lambda: one(F.max(F.size("tags"))),
        lambda: df.where(F.lower("region").isin("eu", "us", "apac")).count(),
        lambda: df.where(c("region").isNull()).count(),
        lambda: one(F.min("day")),
        lambda: one(F.max("day")),
    ]

    if distinct:
        queries += distinct_queries

    def run() -> Any:
        return [query() for query in queries]

    return run


# --------------------------------------------------------------------------------------- harness


def engine_plan(df: DataFrame, distinct: bool = True, constraints: bool = False) -> Callable[[], Any]:
    parsed = load_contract(contract(distinct, constraints))

    def run() -> Any:
        evaluator = Evaluator(parsed, df, REFERENCE, progress=lambda message: None)
        result = evaluator.run()
        errors = [r for r in result.checks if r.status == "error"]
        if errors:
            raise RuntimeError(f"engine errors: {[(r.check_id, r.message) for r in errors]}")
        # The evaluator tags its own jobs per phase: report them to measure().
        return [stat.job_group for stat in evaluator.stats if stat.job_group]

    return run


def measure(spark: SparkSession, name: str, run: Callable[[], Any], repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` runs (after one untimed warm-up) and the Spark jobs of one run."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    run()  # warm-up: JIT, code generation, file listing caches
    best = float("inf")
    jobs = 0
    for attempt in range(repeat):
        group = f"bench-{name}-{attempt}-{time.time_ns()}"
        sc.setJobGroup(group, name)
        began = time.perf_counter()
        outcome = run()
        best = min(best, time.perf_counter() - began)
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        groups = [group] + (outcome if name == "engine" else [])
        jobs = sum(len(tracker.getJobIdsForGroup(g)) for g in groups)
    return best, jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--plans", nargs="+", default=["engine", "floor", "naive"], choices=["engine", "floor", "naive"]
    )
    parser.add_argument("--workdir", default=None, help="where to write the data (default: a temp dir)")
    parser.add_argument(
        "--scan-only",
        action="store_true",
        help="drop the 5 checks that need distinct counts (no grouped passes in any plan)",
    )
    parser.add_argument(
        "--constraints",
        action="store_true",
        help="declare types and column constraints (schema conformance + constraint checks)",
    )
    args = parser.parse_args(argv)

    spark = get_spark(app_name="dq-contracts-bench", master=args.master)
    workdir = args.workdir or tempfile.mkdtemp(prefix="dq-bench-")
    distinct = not args.scan_only
    checks = sum(1 for _ in load_contract(contract(distinct, args.constraints)).evaluated_checks())
    print(
        f"contract: {checks} checks over 10 columns; master {args.master}; repeat {args.repeat}"
        + ("; with schema conformance and column constraints" if args.constraints else "")
    )
    try:
        for rows in args.rows:
            path = os.path.join(workdir, f"orders_{rows}.parquet")
            if not os.path.exists(path):
                began = time.perf_counter()
                generate(spark, rows, path)
                print(f"\n{rows:,} rows generated in {time.perf_counter() - began:.1f} s → {path}")
            df = spark.read.parquet(path)
            plans = {
                "engine": engine_plan(df, distinct, args.constraints),
                "floor": floor_plan(df, distinct, args.constraints),
                "naive": naive_plan(df, distinct),
            }
            timings: dict[str, tuple[float, int]] = {}
            print(f"{'rows':>12} {'plan':>7} {'wall s':>8} {'jobs':>5}")
            for name in args.plans:
                timings[name] = measure(spark, name, plans[name], args.repeat)
                print(f"{rows:>12,} {name:>7} {timings[name][0]:>8.2f} {timings[name][1]:>5}", flush=True)
            if "engine" in timings and "floor" in timings:
                print(f"{'':>12} engine/floor = {timings['engine'][0] / timings['floor'][0]:.2f}  (target ≤ 1.3)")
            if "engine" in timings and "naive" in timings:
                print(f"{'':>12} naive/engine = {timings['naive'][0] / timings['engine'][0]:.2f}  (target ≥ 5)")
    finally:
        spark.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
