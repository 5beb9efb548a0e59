"""Orders pipeline with a data contract as its quality gate.

``wait_for_fresh_orders`` (FreshnessSensor on the raw table) → ``load_orders`` (raw → silver, the
day's partition) → ``check_orders`` (ContractCheckOperator: the orders contract evaluated by a
spark-submit job on that partition) → ``route_orders`` (ContractBranchOperator) →

* **pass** → ``publish`` (silver partition → gold),
* **quarantine** → ``quarantine_then_publish`` (the rows that broke a row-level check stay in the
  quarantine table; the valid rows the job set aside are published to gold),
* **gate** → ``alert`` (logs the failing checks and fails the run: nothing is published).

Alerts: ``alert``'s ``on_failure_callback`` is a :class:`ContractAlertNotifier` — it e-mails the
contract's ``sla.support_contact`` (from the contract registry) the failing checks, the decision, the
escalation policy and the run's HTML report, through the ``smtp_default`` connection. The quarantine
path has one too, configured with ``on_quarantine=True``; a passing run sends nothing. The check
task's "Data quality report" extra link opens the same report.

The check uses ``fail_on_gate=False`` — the branch enforces the gate — see
:mod:`airflow_dq_contracts.operators.contract_check` for the other way the two cooperate.

``produce_raw_orders`` stands in for the upstream producer: it writes a generated, deterministic
day of orders to the raw table; the run parameter ``outcome`` (pass | quarantine | gate) injects
the defects that lead to each decision. Everything runs on the embedded default: Spark
``local[*]`` from the ``spark_default`` connection and Delta tables under the warehouse folder
(``$DQ_CONTRACTS_WAREHOUSE``, else ``$AIRFLOW_HOME/dq_warehouse``).

The day processed is the data interval's (``{{ data_interval_start | ds }}``); the contract's
freshness is measured against ``data_interval_end``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

from airflow.sdk import DAG, Param, task
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_dq_contracts.notifications import ContractAlertNotifier
from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
from airflow_dq_contracts.operators.contract_check import default_warehouse
from airflow_dq_contracts.sensors import FreshnessSensor

log = logging.getLogger(__name__)

WAREHOUSE = default_warehouse()
RAW_ORDERS = os.path.join(WAREHOUSE, "raw", "orders")
SILVER_ORDERS = os.path.join(WAREHOUSE, "silver", "orders")
VALID_ORDERS = os.path.join(WAREHOUSE, "valid", "orders")
GOLD_ORDERS = os.path.join(WAREHOUSE, "gold", "orders")
DAY = "{{ data_interval_start | ds }}"

with DAG(
    dag_id="dq_orders_pipeline",
    description="Load orders, evaluate their contract with Spark, then publish, quarantine or alert",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    params={
        "outcome": Param(
            "pass", enum=["pass", "quarantine", "gate"], description="defects the stand-in producer injects"
        )
    },
    tags=["data-quality", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def produce_raw_orders(day: str, outcome: str) -> int:
        """Stand-in for the upstream producer: the day's generated orders (and two days before)."""
        from orders_data import generate_orders, spec_for, write_orders

        rows = generate_orders(spec_for(outcome, dt.date.fromisoformat(day)))
        written = write_orders(RAW_ORDERS, rows)
        log.info("raw: wrote %d orders ending %s (outcome %s) to %s", written, day, outcome, RAW_ORDERS)
        return written

    wait_for_fresh_orders = FreshnessSensor(
        task_id="wait_for_fresh_orders",
        path=RAW_ORDERS,
        timestamp_column="created_at",
        max_age_hours=4,
        reference_time="{{ data_interval_end }}",
        poke_interval=60,
        timeout=6 * 3600,
        mode="reschedule",
    )

    @task
    def load_orders(day: str) -> int:
        """Raw → silver for the day (replaces that partition: a re-run does not duplicate)."""
        from orders_data import read_orders, write_orders

        rows = read_orders(RAW_ORDERS, dt.date.fromisoformat(day))
        written = write_orders(SILVER_ORDERS, rows)
        log.info("silver: loaded %d orders of %s into %s", written, day, SILVER_ORDERS)
        return written

    check_orders = ContractCheckOperator(
        task_id="check_orders",
        contract="contracts/orders.yaml",
        input_path=SILVER_ORDERS,
        input_format="delta",
        filter=f"order_date = '{DAY}'",
        valid_table=VALID_ORDERS,
        fail_on_gate=False,  # route_orders decides; the gate path fails the run in `alert`
    )

    route_orders = ContractBranchOperator(
        task_id="route_orders",
        check_task_id="check_orders",
        pass_task_ids=["publish"],
        quarantine_task_ids=["quarantine_then_publish"],
        gate_task_ids=["alert"],
    )

    @task
    def publish(day: str) -> int:
        """Every row of the day passed: silver partition → gold."""
        from orders_data import read_orders, write_orders

        rows = read_orders(SILVER_ORDERS, dt.date.fromisoformat(day))
        written = write_orders(GOLD_ORDERS, rows)
        log.info("gold: published %d orders of %s", written, day)
        return written

    @task(on_success_callback=ContractAlertNotifier(check_task_id="check_orders", on_quarantine=True))
    def quarantine_then_publish(day: str, summary: dict) -> int:
        """Publish only the rows the job kept as valid for this run; the rest wait in quarantine."""
        import pyarrow.compute as pc
        from deltalake import DeltaTable
        from orders_data import COLUMNS, write_orders

        valid = DeltaTable(VALID_ORDERS).to_pyarrow_table()
        valid = valid.filter(pc.equal(valid["_dq_run_id"], summary["run_id"]))
        rows = [{name: row[name] for name in COLUMNS} for row in valid.to_pylist()]
        written = write_orders(GOLD_ORDERS, rows) if rows else 0
        quarantine = summary.get("quarantine") or {}
        log.warning(
            "gold: published %d valid orders of %s; %s rows quarantined in %s for run %s",
            written,
            day,
            quarantine.get("rows"),
            quarantine.get("table"),
            summary["run_id"],
        )
        return written

    @task(on_failure_callback=ContractAlertNotifier(check_task_id="check_orders"))
    def alert(summary: dict) -> None:
        """A gate: nothing is published. Log what failed, then fail the run so it cannot pass silently."""
        from airflow.exceptions import AirflowFailException

        failing = [c for c in summary["checks"] if c["action"] == "gate" and c["status"] != "passed"]
        for check in failing:
            log.error(
                "GATE %s %s: %s (metric %s, %s failing rows)",
                check["severity"],
                check["check_id"],
                check["message"] or check["validator"],
                check["metric_value"],
                check["failed_rows"],
            )
        raise AirflowFailException(
            f"orders contract gated the load of {summary['dataset']} ({len(failing)} gate check(s) failed); "
            f"results in {summary['results_table']} (run_id {summary['run_id']})"
        )

    produced = produce_raw_orders(DAY, "{{ params.outcome }}")
    loaded = load_orders(DAY)
    produced >> wait_for_fresh_orders >> loaded >> check_orders >> route_orders
    route_orders >> [publish(DAY), quarantine_then_publish(DAY, check_orders.output), alert(check_orders.output)]
