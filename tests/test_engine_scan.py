"""The main scan is ONE aggregation over ONE read of the data; grouped passes are one per distinct key set.

Spark's adaptive execution runs a global aggregation as two jobs (the partial-aggregate stage and
the final result), so "one scan" is asserted as: the scan costs exactly as many Spark jobs as a
trivial ``df.agg(count(*))`` on the same input, and its physical plan reads the file once and has
no ``Expand`` (which is what several ``COUNT(DISTINCT …)`` in one aggregation would bring).
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import Evaluator

pytestmark = pytest.mark.spark


def _contract() -> dict[str, Any]:
    return {
        "name": "one_scan",
        "checks": [
            {"name": "rows", "type": "num_rows", "min": 1},
            {"name": "rows eu", "type": "num_rows", "min": 1, "filter": "region = 'eu'"},
            {"name": "pair dups", "type": "duplicates", "columns": ["region", "status"]},
            {
                "name": "pair dups reversed",
                "type": "duplicates",
                "columns": ["status", "region"],
                "return": "pct",
                "filter": "amount > 0",
            },
            {"name": "fresh", "type": "freshness", "timestamp_column": "ts", "max_age_hours": 1e9},
            {"name": "gaps", "type": "completeness", "partition_column": "day", "granularity": "daily"},
        ],
        "columns": [
            {
                "name": "id",
                "checks": [
                    {"name": "unique", "type": "duplicates", "max": 0},
                    {"name": "unique eu", "type": "duplicates", "filter": "region = 'eu'"},
                    {"name": "distinct", "type": "cardinality"},
                    {"name": "distinct positive", "type": "cardinality", "filter": "amount > 0"},
                    {"name": "n", "type": "count"},
                ],
            },
            {
                "name": "status",
                "checks": [
                    {"name": "distinct statuses", "type": "cardinality"},
                    {"name": "known", "type": "whitelist", "values": ["a", "b"]},
                    {"name": "no x", "type": "blacklist", "values": ["x"], "return": "pct"},
                    {"name": "shape", "type": "pattern", "pattern": "^[a-z]$"},
                    {"name": "short", "type": "max_length", "max": 3},
                    {"name": "nulls", "type": "missing", "return": "pct"},
                ],
            },
            {
                "name": "amount",
                "checks": [
                    {"name": "mean", "type": "mean"},
                    {"name": "sum", "type": "sum"},
                    {"name": "var", "type": "variance"},
                    {"name": "sd", "type": "stddev"},
                    {"name": "p95", "type": "percentile", "percentile": 0.95},
                    {"name": "lo", "type": "min"},
                    {"name": "hi", "type": "max", "filter": "region = 'eu'"},
                ],
            },
            {"name": "region"},
            {"name": "ts"},
            {"name": "day"},
        ],
    }


@pytest.fixture(scope="module")
def parquet_df(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("one_scan") / "data.parquet")
    (
        spark.range(5000)
        .select(
            (F.col("id") % 4000).alias("id"),
            F.element_at(F.array(*[F.lit(v) for v in ("eu", "us", "apac")]), (F.col("id") % 3 + 1).cast("int")).alias(
                "region"
            ),
            F.when(F.col("id") % 11 == 0, None)
            .otherwise(F.element_at(F.array(*[F.lit(v) for v in "abcx"]), (F.col("id") % 4 + 1).cast("int")))
            .alias("status"),
            ((F.col("id") % 97) - 20).cast("double").alias("amount"),
            F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id") * 60).alias("ts"),
            F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 20).cast("int")).alias("day"),
        )
        .write.parquet(path)
    )
    return spark.read.parquet(path)


def _jobs(spark, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _plan(frame) -> str:
    """The executed physical plan (AQE's final plan only, not the initial one it also prints)."""
    text = frame._jdf.queryExecution().executedPlan().toString()
    return text.split("== Initial Plan ==")[0]


def test_main_scan_is_one_aggregation_and_grouped_passes_are_one_per_key_set(spark, parquet_df):
    contract = load_contract(_contract())
    evaluator = Evaluator(contract, parquet_df, "2024-02-01T00:00:00Z")
    result = evaluator.run()
    assert result.counts()["error"] == 0, [r.message for r in result.checks if r.status == "error"]

    # Baselines on the same input: a trivial global aggregation and a trivial grouped pass.
    spark.sparkContext.setJobGroup("baseline-agg", "baseline")
    parquet_df.agg(F.count(F.lit(1))).collect()
    spark.sparkContext.setJobGroup("baseline-group", "baseline")
    parquet_df.groupBy("id").count().agg(F.sum("count")).collect()
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    scans = [s for s in evaluator.stats if s.name == "scan"]
    assert len(scans) == 1
    assert _jobs(spark, scans[0].job_group) == _jobs(spark, "baseline-agg")

    scan_plan = _plan(evaluator.scan_frame)
    assert scan_plan.count("FileScan parquet") == 1, scan_plan
    assert "Expand" not in scan_plan

    # Distinct key sets: {id} (2 duplicates + 2 cardinality, any filter), {region, status} (both
    # orders), {status} (cardinality). Completeness needs no pass (collected in the scan).
    grouped = [s for s in evaluator.stats if s.name.startswith("group")]
    assert sorted(evaluator.group_frames) == [("col:id",), ("col:region", "col:status"), ("col:status",)]
    assert len(grouped) == 3
    for stat in grouped:
        assert _jobs(spark, stat.job_group) == _jobs(spark, "baseline-group"), stat
    for frame in evaluator.group_frames.values():
        plan = _plan(frame)
        assert plan.count("FileScan parquet") == 1 and "Expand" not in plan, plan


def test_one_scan_results_equal_plain_counts(spark, parquet_df):
    """The shared scan's numbers equal what separate, obvious queries give on the same file."""
    contract = load_contract(_contract())
    by_name = {r.check_name: r for r in Evaluator(contract, parquet_df, "2024-02-01T00:00:00Z").run().checks}
    rows = parquet_df.collect()
    ids = [r["id"] for r in rows]
    eu_ids = [r["id"] for r in rows if r["region"] == "eu"]
    assert by_name["unique"].metric_value == len(ids) - len(set(ids))
    assert by_name["unique eu"].metric_value == len(eu_ids) - len(set(eu_ids))
    assert by_name["distinct positive"].metric_value == len({r["id"] for r in rows if r["amount"] > 0})
    pairs = [(r["region"], r["status"]) for r in rows if r["amount"] > 0]
    distinct_pairs = {p for p in pairs if None not in p}
    assert by_name["pair dups reversed"].metric_value == pytest.approx((len(pairs) - len(distinct_pairs)) / len(pairs))
    assert by_name["distinct statuses"].metric_value == len({r["status"] for r in rows} - {None})
    assert by_name["hi"].metric_value == max(r["amount"] for r in rows if r["region"] == "eu")
    assert by_name["rows eu"].metric_value == len(eu_ids)
