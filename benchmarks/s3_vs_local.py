"""Benchmark: the same 1M-row contract check on S3 and on local disk, side by side in one Spark session.

Not part of the test suite. A local S3-compatible server (SeaweedFS, ``scripts/s3_server.py``) is
started on 127.0.0.1; one dataset of ``--rows`` rows (ids with duplicates and NULLs, amounts,
statuses, e-mails, a timestamp) is written once as a Delta table on local disk and once on S3. Then,
in ONE Spark session (Delta's and the s3a filesystem's jars, the S3 settings from the server), the
same contract (7 checks plus schema conformance) runs ``--repeat`` times on each, alternating, each
run writing its results to a results table beside its input (local: Spark/delta-rs on disk; S3:
delta-rs with conditional writes). It prints each run's wall time, the best of each side and the
ratio S3 / local. The first run of each side is a warm-up, not counted.

What the ratio says: the extra cost of reading the input through S3A and committing through an
object store, on this machine's loopback (no network latency — a real bucket adds round trips).

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/s3_vs_local.py --rows 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from s3_server import S3Server  # noqa: E402

from airflow_dq_contracts.contract import load_contract  # noqa: E402
from airflow_dq_contracts.runspec import RunSpec  # noqa: E402

CONTRACT = {
    "name": "orders_bench",
    "version": "1.0.0",
    "columns": [
        {
            "name": "id",
            "type": "long",
            "checks": [
                {"name": "ids present", "type": "missing", "max": 20_000, "severity": "P2"},
                {"name": "ids unique", "type": "duplicates", "max": 1_000_000, "severity": "P3"},
            ],
        },
        {
            "name": "amount",
            "type": "double",
            "checks": [
                {"name": "amount positive", "type": "min", "min": 0, "severity": "P2"},
                {"name": "amount mean", "type": "mean", "max": 1000, "severity": "P3"},
            ],
        },
        {
            "name": "status",
            "type": "string",
            "checks": [
                {"name": "known status", "type": "whitelist", "values": ["new", "paid", "shipped"], "severity": "P3"}
            ],
        },
        {
            "name": "email",
            "type": "string",
            "checks": [{"name": "emails", "type": "pattern", "pattern": "^[^@]+@[^@]+$", "severity": "P3"}],
        },
        {"name": "created_at", "type": "timestamp"},
    ],
    "checks": [{"name": "volume", "type": "num_rows", "min": 1, "severity": "P1"}],
}


def generate(spark, rows: int, local: str, s3: str) -> None:
    from pyspark.sql import functions as F

    df = spark.range(rows).select(
        F.when(F.col("id") % 97 == 0, F.lit(None)).otherwise(F.col("id") % (rows // 2 + 1)).alias("id"),
        (F.col("id") % 1000 / 3.0).alias("amount"),
        F.element_at(
            F.array(F.lit("new"), F.lit("paid"), F.lit("shipped"), F.lit("lost")), (F.col("id") % 4 + 1).cast("int")
        ).alias("status"),
        F.concat(F.lit("user"), F.col("id"), F.when(F.col("id") % 50 == 0, F.lit("")).otherwise(F.lit("@x.org"))).alias(
            "email"
        ),
        F.timestamp_seconds(F.lit(1_714_521_600) + F.col("id") % 86_400).alias("created_at"),
    )
    for target in (local, s3):
        df.repartition(4).write.format("delta").mode("overwrite").save(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="dq-s3-bench-") as tmp, S3Server.running(Path(tmp) / "s3") as server:
        os.environ.update(server.settings.to_env())  # Spark (s3a) and delta-rs read the standard variables
        from airflow_dq_contracts.engine.runner import run_contract
        from airflow_dq_contracts.engine.session import get_spark

        spark = get_spark(app_name="dq-contracts-s3-bench", master=args.master, s3=True)
        places = {"local": f"{tmp}/lake", "s3": server.url("lake")}
        began = time.perf_counter()
        generate(spark, args.rows, f"{places['local']}/orders", f"{places['s3']}/orders")
        print(f"generated {args.rows:,} rows on both sides in {time.perf_counter() - began:.1f} s", flush=True)
        contract = load_contract(CONTRACT)
        times: dict[str, list[float]] = {"local": [], "s3": []}
        for attempt in range(args.repeat + 1):
            for side, base in places.items():
                spec = RunSpec.for_contract(
                    contract,
                    input_path=f"{base}/orders",
                    input_format="delta",
                    results_table=f"{base}/dq/dq_results",
                    run_id=f"bench-{side}-{attempt}",
                    reference_time="2024-05-02T00:00:00Z",
                )
                began = time.perf_counter()
                result = run_contract(spark, contract, spec)
                elapsed = time.perf_counter() - began
                kind = "warm-up" if attempt == 0 else f"run {attempt}"
                print(
                    f"{side:5s} {kind:8s} {elapsed:6.2f} s  ({len(result.checks)} results, {result.decision})",
                    flush=True,
                )
                if attempt > 0:
                    times[side].append(elapsed)
        spark.stop()
    best = {side: min(values) for side, values in times.items()}
    median = {side: statistics.median(values) for side, values in times.items()}
    print(
        f"\nbest:   local {best['local']:.2f} s, s3 {best['s3']:.2f} s → S3 / local = {best['s3'] / best['local']:.2f}"
    )
    print(
        f"median: local {median['local']:.2f} s, s3 {median['s3']:.2f} s → S3 / local = {median['s3'] / median['local']:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
