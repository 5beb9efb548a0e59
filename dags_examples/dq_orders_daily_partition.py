"""A partition-scoped daily contract check, used alone: one ``ContractCheckOperator`` per day.

Each run evaluates the orders contract on one partition of the silver orders table —
``filter="order_date = '{{ data_interval_start | ds }}'"`` — so Spark reads only that day (partition pruning) and the
results rows record the filter. Used without a branch, ``fail_on_gate=True`` (the default) makes a
*gate* decision fail the task, and with it the run: a P0 failure never passes silently. The summary
is pushed to XCom before the failure, so the grid, a callback or a later task can still say what
failed. (A downstream task with ``trigger_rule="all_done"`` would become the run's only leaf and
turn a gated run green — keep the check a leaf, or put such a reporter in a teardown.)

The contract's "Daily volume follows its seasonal band" check has a ``baseline:``: each run reads
the earlier days' results from the same results table and accepts 0.5–2.5 × the trailing 28-day mean
of the day's row count (days that gated do not count; the first 7 days only learn). Because
history is keyed by reference time (``data_interval_end``), a backfill of an old day compares it
with the days before *it*.

Retries are safe: the run id is derived from dag / run / task, so a retry replaces the attempt's
results and quarantined rows instead of adding a second copy.

The schedule is a *data-interval* one (``CronDataIntervalTimetable``): the run for day D starts
when D is over, the interval's start is D, and freshness is measured against the interval's end (D+1
00:00). (The interval's start, not ``{{ ds }}``: a manual run or ``airflow dags test`` at D+1 00:00 checks the
interval [D, D+1) too, where ``{{ ds }}`` would be D+1 — a day whose rows are newer than the reference time.)
The silver table is the one ``dq_orders_pipeline`` loads.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_dq_contracts.operators import ContractCheckOperator
from airflow_dq_contracts.operators.contract_check import default_warehouse

SILVER_ORDERS = f"{default_warehouse()}/silver/orders"

with DAG(
    dag_id="dq_orders_daily_partition",
    description="Daily contract check of one orders partition ({{ ds }})",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    tags=["data-quality", "example"],
    doc_md=__doc__,
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=5)},
) as dag:
    check_partition = ContractCheckOperator(
        task_id="check_partition",
        contract="contracts/orders.yaml",
        input_path=SILVER_ORDERS,
        filter="order_date = '{{ data_interval_start | ds }}'",
        # reference_time defaults to {{ data_interval_end }}; fail_on_gate defaults to True.
    )
