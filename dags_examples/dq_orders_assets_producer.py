"""Producer of a checked asset: load → check → branch, and the check task's asset event carries the verdict.

``load_orders`` (the stand-in upstream: the day's generated orders, with the defects of the run parameter
``outcome`` — pass | quarantine | gate — written to the landing table) → ``check_orders``
(:class:`ContractCheckOperator` with ``emit_asset=True`` and a valid table) → ``route_orders``
(:class:`ContractBranchOperator`) → ``passed`` / ``quarantined`` / ``gated``.

``check_orders`` updates the asset of its **valid table** — :data:`ORDERS_VALID`, ``file:///…/valid``, the
rows that passed, what consumers read — and the event's ``extra`` carries the run's verdict under
``airflow_dq_contracts.verdict`` (decision, counts, score, failed check ids, contract, run id, reference
time, results table and version, report link) and, in the shape of Airflow's data-quality provider, under
``airflow.dataquality.result``. The check runs with ``fail_on_gate=False`` (the branch routes), so a gate
also records an event — one whose verdict says ``gate``: ``dq_orders_assets_consumer`` refuses it, and
``gated`` fails this run so the gate never passes silently. (With ``fail_on_gate=True`` a gate fails the
check task and Airflow records no event at all.)

Everything runs on the embedded default (Spark ``local[*]``, Delta under the warehouse folder); the day is
the data interval's, freshness is measured against its end, as in ``dq_orders_pipeline``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

from airflow.sdk import DAG, Param, task
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator, contract_asset
from airflow_dq_contracts.operators.contract_check import default_warehouse

log = logging.getLogger(__name__)

WAREHOUSE = default_warehouse()
LANDED_ORDERS = os.path.join(WAREHOUSE, "checked", "orders")
VALID_ORDERS = os.path.join(WAREHOUSE, "checked", "valid")
#: What the check task updates (emit_asset=True derives the same asset from valid_table).
ORDERS_VALID = contract_asset(VALID_ORDERS)
DAY = "{{ data_interval_start | ds }}"

with DAG(
    dag_id="dq_orders_assets_producer",
    description="Load orders, check their contract, update the checked asset with the verdict",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    params={
        "outcome": Param(
            "pass", enum=["pass", "quarantine", "gate"], description="defects the stand-in upstream injects"
        )
    },
    tags=["data-quality", "example", "assets"],
    doc_md=__doc__,
) as dag:

    @task
    def load_orders(day: str, outcome: str) -> int:
        """Stand-in for the load: the day's generated orders (and two days before) into the landing table."""
        from orders_data import generate_orders, spec_for, write_orders

        written = write_orders(LANDED_ORDERS, generate_orders(spec_for(outcome, dt.date.fromisoformat(day))))
        log.info("landed %d orders ending %s (outcome %s) in %s", written, day, outcome, LANDED_ORDERS)
        return written

    check_orders = ContractCheckOperator(
        task_id="check_orders",
        contract="contracts/orders.yaml",
        input_path=LANDED_ORDERS,
        input_format="delta",
        filter=f"order_date = '{DAY}'",
        valid_table=VALID_ORDERS,
        emit_asset=True,  # the valid table's asset: ORDERS_VALID
        fail_on_gate=False,  # route_orders decides; a gate still records an event that says "gate"
    )

    route_orders = ContractBranchOperator(
        task_id="route_orders",
        check_task_id="check_orders",
        pass_task_ids=["passed"],
        quarantine_task_ids=["quarantined"],
        gate_task_ids=["gated"],
    )

    @task
    def passed(summary: dict) -> str:
        """Every check passed: the valid table holds the whole day."""
        log.info("PASS: %s valid rows for run %s", (summary.get("valid") or {}).get("rows"), summary["run_id"])
        return summary["decision"]

    @task
    def quarantined(summary: dict) -> str:
        """Rows that broke a row-level check wait in quarantine; the valid table holds the rest."""
        quarantine = summary.get("quarantine") or {}
        log.warning("QUARANTINE: %s rows set aside in %s", quarantine.get("rows"), quarantine.get("table"))
        return summary["decision"]

    @task
    def gated(summary: dict) -> None:
        """A gate: consumers refuse the event; this run fails so the gate is visible."""
        from airflow.exceptions import AirflowFailException

        failing = [c["check_id"] for c in summary["checks"] if c["action"] == "gate" and c["status"] != "passed"]
        raise AirflowFailException(f"orders contract gated run {summary['run_id']}: {', '.join(failing)}")

    load_orders(DAY, "{{ params.outcome }}") >> check_orders >> route_orders
    route_orders >> [passed(check_orders.output), quarantined(check_orders.output), gated(check_orders.output)]
