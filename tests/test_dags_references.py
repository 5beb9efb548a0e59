"""``dq_orders_references`` run for real (dag.test on SQLite, spark-submit, Delta): the operator carries
``references=`` to the job unchanged and renders the reference filter; a referential (as of) check
quarantines exactly the orphans, a reconciliation catches rows silently lost by the load.

Expected values come from the example generator's rows (orders_data), counted here in plain Python.
One spark-submit run (~1 min here).
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import run_dag, xcom_value

import datetime as dt

import pytest
from pipeline_expectations import delta_rows, interval, orders_data
from test_dags_examples import _load, env  # noqa: F401  (env: fixture)

pytestmark = [pytest.mark.airflow, pytest.mark.spark]


def test_referential_as_of_and_reconciliation_in_a_dag(env):  # noqa: F811 - env is the imported fixture
    dag = _load("dq_orders_references")
    day = dt.date(2024, 6, 3)
    lost = 3
    states, dag_run = run_dag(dag, run_conf={"lost_rows": lost}, **interval(day))
    summary = xcom_value(dag_run, "check_references")
    assert summary is not None, states
    # Used alone, a gate fails the task after pushing the summary.
    assert states["check_references"] == "failed" and summary["decision"] == "gate"

    raw = [r for r in orders_data.generate_orders(orders_data.spec_for("pass", day)) if r["order_date"] == day]
    silver = delta_rows(env / "silver" / "orders_refs", "order_date", day)
    assert len(silver) == len(raw) - lost
    orphan_ids = {
        r["order_id"]
        for r in silver
        if orders_data.never_existed(r["customer_id"]) or orders_data.created_late(r["customer_id"])
    }
    assert orphan_ids, "the generated day must contain orphans"

    checks = {c["check_name"]: c for c in summary["checks"]}
    referential = checks["Customer existed when the order was placed"]
    assert (referential["status"], referential["metric_value"], referential["failed_rows"]) == (
        "failed",
        len(orphan_ids),
        len(orphan_ids),
    )
    assert referential["action"] == "quarantine"
    lost_count = checks["No order lost between raw and silver"]
    assert (lost_count["status"], lost_count["metric_value"], lost_count["action"]) == ("failed", -lost, "gate")
    ours = sum(r["amount"] for r in silver)
    theirs = sum(r["amount"] for r in raw)
    assert checks["Revenue matches raw"]["metric_value"] == pytest.approx((ours - theirs) / theirs)

    quarantined = delta_rows(env / "dq_quarantine" / "orders_references", "_dq_run_id", summary["run_id"])
    assert {r["order_id"] for r in quarantined} == orphan_ids
    assert summary["quarantine"]["rows"] == len(orphan_ids)
