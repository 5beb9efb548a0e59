"""Orders checked against other datasets: a referential check to an SCD-2 dimension and a reconciliation
against the source they were loaded from.

``produce_sources`` stands in for the upstream systems: it writes the day's raw orders and the
customers dimension (one row per version, ``valid_from``/``valid_to``). ``load_orders`` copies the
day from raw to silver — the run parameter ``lost_rows`` makes it silently drop that many orders, the
kind of partition loss only a reconciliation catches. ``check_references`` evaluates
``contracts/orders_references.yaml``:

* *Customer existed when the order was placed* — ``referential`` with ``as_of``: an order whose
  customer has no version valid at ``created_at`` is an orphan; P1, so orphans are quarantined;
* *No order lost between raw and silver* — ``reconciliation`` of the row count with the raw day
  (the reference's ``filter: "order_date = '{{ data_interval_start | ds }}'"`` is rendered like the
  run filter); P0, so
  a loss gates the run and, used alone (``fail_on_gate=True``), fails the task.

The contract declares placeholder paths; ``references={…}`` points them at this warehouse — the
operator's equivalent of ``dq-contracts run --reference NAME=PATH[:FORMAT]``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

from airflow.sdk import DAG, Param, task
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_dq_contracts.operators import ContractCheckOperator
from airflow_dq_contracts.operators.contract_check import default_warehouse

log = logging.getLogger(__name__)

WAREHOUSE = default_warehouse()
RAW_ORDERS = os.path.join(WAREHOUSE, "raw", "orders_refs")
SILVER_ORDERS = os.path.join(WAREHOUSE, "silver", "orders_refs")
CUSTOMERS = os.path.join(WAREHOUSE, "dim", "customers")
DAY = "{{ data_interval_start | ds }}"

with DAG(
    dag_id="dq_orders_references",
    description="Orders vs. the customers dimension (as of order time) and vs. the raw source",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    params={"lost_rows": Param(0, type="integer", minimum=0, description="orders the load silently drops")},
    tags=["data-quality", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def produce_sources(day: str) -> int:
        """Stand-in for the upstream systems: the day's raw orders and the customers dimension."""
        from orders_data import generate_customers, generate_orders, spec_for, write_customers, write_orders

        end = dt.date.fromisoformat(day)
        written = write_orders(RAW_ORDERS, generate_orders(spec_for("pass", end)))
        versions = write_customers(CUSTOMERS, generate_customers(end))
        log.info("raw: %d orders; dimension: %d customer versions", written, versions)
        return written

    @task
    def load_orders(day: str, lost_rows: int) -> int:
        """Raw → silver for the day, dropping the last ``lost_rows`` orders (a silent loss, on purpose)."""
        from orders_data import read_orders, write_orders

        rows = read_orders(RAW_ORDERS, dt.date.fromisoformat(day))
        kept = rows[: len(rows) - int(lost_rows)] if int(lost_rows) else rows
        return write_orders(SILVER_ORDERS, kept)

    check_references = ContractCheckOperator(
        task_id="check_references",
        contract="contracts/orders_references.yaml",
        input_path=SILVER_ORDERS,
        filter=f"order_date = '{DAY}'",
        references={"customers": f"{CUSTOMERS}:delta", "raw_orders": RAW_ORDERS},
    )

    produce_sources(DAY) >> load_orders(DAY, "{{ params.lost_rows }}") >> check_references
