"""Partition scope: the run filter prunes partitions on Delta and Parquet (issue 4, part 3).

The physical plan of the DataFrame a run evaluates must carry the filter as a *partition* filter
(so files of other partitions are never listed for reading), and evaluation sees only the rows of
the filtered partition — counted here in plain Python.
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
CONTRACT = {"name": "scoped", "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
            "columns": [{"name": "order_id", "checks": [{"name": "ids", "type": "count", "min": 0}]},
                        {"name": "order_date"}]}


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_run_filter_is_a_partition_filter(spark, tmp_path, fmt):
    path = str(tmp_path / fmt)
    spark.createDataFrame(ROWS, "order_id long, order_date date").write.format(fmt) \
        .partitionBy("order_date").save(path)
    contract = load_contract(CONTRACT)
    df = read_dataset(spark, contract, path, fmt, filter="order_date = '2024-05-02'")
    plan = _plan(df)
    partition_filters = [line for line in plan.splitlines() if "PartitionFilters" in line]
    assert partition_filters and "order_date" in partition_filters[0].split("PartitionFilters")[1], plan

    expected = sum(1 for _, day in ROWS if day == dt.date(2024, 5, 2))
    result = evaluate(contract, df, filter="order_date = '2024-05-02'")
    assert result.row_count == expected == 10
    by_type = {c.check_type: c for c in result.checks}
    assert by_type["num_rows"].metric_value == expected
    assert by_type["num_rows"].filter == "order_date = '2024-05-02'"
