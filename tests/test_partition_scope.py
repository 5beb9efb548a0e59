"""Partition scope: the run filter prunes partitions on Delta and Parquet (issue 4, part 3).

The physical plan of the DataFrame a run evaluates must carry the filter as a *partition* filter
(so files of other partitions are never listed for reading), and evaluation sees only the rows of
the filtered partition — counted here in plain Python. A small Delta table read by delta-rs on the
driver is pruned the same way: Spark evaluates the filter on the files' partition values and only
the landed partition's files are read.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import evaluate
from airflow_dq_contracts.engine.runner import read_dataset

pytestmark = pytest.mark.spark

DAYS = [dt.date(2024, 5, d) for d in (1, 2, 3)]
ROWS = [(i, DAYS[i % 3]) for i in range(30)]
CONTRACT = {
    "name": "scoped",
    "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
    "columns": [{"name": "order_id", "checks": [{"name": "ids", "type": "count", "min": 0}]}, {"name": "order_date"}],
}


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_run_filter_is_a_partition_filter(spark, tmp_path, fmt):
    path = str(tmp_path / fmt)
    spark.createDataFrame(ROWS, "order_id long, order_date date").write.format(fmt).partitionBy("order_date").save(path)
    contract = load_contract(CONTRACT)
    # Spark's own reader (a table this small is otherwise read by delta-rs on the driver, see below).
    spark.conf.set("spark.dqcontracts.driverReadBytes", "0")
    try:
        df = read_dataset(spark, contract, path, fmt, filter="order_date = '2024-05-02'")
        plan = _plan(df)
    finally:
        spark.conf.unset("spark.dqcontracts.driverReadBytes")
    partition_filters = [line for line in plan.splitlines() if "PartitionFilters" in line]
    assert partition_filters and "order_date" in partition_filters[0].split("PartitionFilters")[1], plan

    expected = sum(1 for _, day in ROWS if day == dt.date(2024, 5, 2))
    result = evaluate(contract, df, filter="order_date = '2024-05-02'")
    assert result.row_count == expected == 10
    by_type = {c.check_type: c for c in result.checks}
    assert by_type["num_rows"].metric_value == expected
    assert by_type["num_rows"].filter == "order_date = '2024-05-02'"


def test_a_driver_read_reads_only_the_landed_partition(spark, tmp_path):
    import os

    from airflow_dq_contracts.engine.session import DRIVER_READ_SIZES

    path = str(tmp_path / "delta")
    spark.createDataFrame(ROWS, "order_id long, order_date date").write.format("delta").partitionBy("order_date").save(
        path
    )
    contract = load_contract(CONTRACT)
    landed = os.path.join(path, "order_date=2024-05-02")
    landed_bytes = sum(os.path.getsize(os.path.join(landed, n)) for n in os.listdir(landed) if n.endswith(".parquet"))
    for condition, expected_days in (
        ("order_date = '2024-05-02'", {DAYS[1]}),
        ("order_date >= DATE'2024-05-02' AND order_id < 100", {DAYS[1], DAYS[2]}),
        ("order_id % 3 = 1", {DAYS[1]}),
    ):
        df = read_dataset(spark, contract, path, "delta", filter=condition)
        assert df in DRIVER_READ_SIZES, condition  # read by delta-rs on the driver
        rows = sorted(tuple(r) for r in df.collect())
        assert rows == sorted(r for r in ROWS if r[1] in expected_days and eval_filter(condition, r)), condition
        if condition == "order_date = '2024-05-02'":
            assert DRIVER_READ_SIZES[df] == landed_bytes  # only that partition's files
        if condition == "order_id % 3 = 1":
            assert DRIVER_READ_SIZES[df] > landed_bytes  # a data-column filter cannot prune: the whole table


def eval_filter(condition: str, row) -> bool:
    """The same filters in plain Python."""
    order_id, day = row
    return {
        "order_date = '2024-05-02'": day == DAYS[1],
        "order_date >= DATE'2024-05-02' AND order_id < 100": day >= DAYS[1] and order_id < 100,
        "order_id % 3 = 1": order_id % 3 == 1,
    }[condition]
