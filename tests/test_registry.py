"""The contract registry ``dq_contracts`` beside the results table, written by real runs (Spark + Delta).

Each run upserts its contract version's row; the row is read back with delta-rs (the reader the
report and the alerts use) and compared with the contract written here by hand. Then the report is
built from those real tables: one row per result, the quarantined rows found through the registry.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.runner import run_contract
from airflow_dq_contracts.report import build_report, load_report_data
from airflow_dq_contracts.store.results.registry import (
    contract_text_hash,
    read_registry,
    registry_row,
    registry_table_for,
)
from airflow_dq_contracts.store.results.spark_registry import write_registry

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
TEXT_V1 = """\
name: reg_orders
version: 1.0.0
owner: checkout-team@example.com
domain: commerce
consumers: [analytics, finance]
sla:
  freshness_hours: 6
  support_contact: orders-oncall@example.com
  escalation_policy: page checkout, then data-platform
columns:
  - name: order_id
    checks: [{name: unique, type: duplicates, max: 0, severity: P1}]
  - name: status
    checks: [{name: known, type: whitelist, values: [new, paid], severity: P1}]
"""
TEXT_V2 = TEXT_V1.replace("version: 1.0.0", "version: 1.1.0").replace("checkout-team@", "orders-team@")
ROWS = [(1, "new"), (2, "paid"), (3, "<b>lost</b>"), (3, "paid")]


@pytest.fixture(scope="module")
def source(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("reg") / "orders")
    spark.createDataFrame(ROWS, "order_id long, status string").write.format("delta").save(path)
    return path


def _run(spark, text, source, wh, run_id, at):
    return run_contract(
        spark,
        load_contract(text),
        input_path=source,
        run_id=run_id,
        results_table=f"{wh}/dq_results",
        quarantine_table=f"{wh}/quarantine",
        reference_time=at,
        contract_text=text,
    )


def test_every_run_upserts_its_version_and_the_report_reads_it(spark, source, tmp_path):
    wh = str(tmp_path)
    first = _run(spark, TEXT_V1, source, wh, "run-1", "2024-05-01T00:00:00Z")
    second = _run(spark, TEXT_V1, source, wh, "run-2", "2024-05-02T00:00:00Z")
    assert registry_table_for(f"{wh}/dq_results") == f"{wh}/dq_contracts"
    row = read_registry(f"{wh}/dq_contracts", "reg_orders", "1.0.0")
    expected = {
        "contract_name": "reg_orders",
        "contract_version": "1.0.0",
        "owner": "checkout-team@example.com",
        "domain": "commerce",
        "consumers": ["analytics", "finance"],
        "sla_freshness_hours": 6.0,
        "sla_support_contact": "orders-oncall@example.com",
        "sla_escalation_policy": "page checkout, then data-platform",
        "contract_text": TEXT_V1,
        "contract_hash": contract_text_hash(TEXT_V1),
        "last_run_id": "run-2",
        "results_table": f"{wh}/dq_results",
        "quarantine_table": f"{wh}/quarantine",
        "valid_table": None,
        "first_run_at": first.started_at,
        "last_run_at": second.started_at,
    }
    assert {k: row[k] for k in expected} == expected
    # Decision by hand: order 3 is duplicated and "<b>lost</b>" is not whitelisted → P1 quarantine.
    assert row["last_decision"] == second.decision == "quarantine"

    _run(spark, TEXT_V2, source, wh, "run-3", "2024-05-03T00:00:00Z")
    assert read_registry(f"{wh}/dq_contracts", "reg_orders", "1.0.0")["last_run_id"] == "run-2"
    newest = read_registry(f"{wh}/dq_contracts", "reg_orders")  # the most recently run version
    assert (newest["contract_version"], newest["owner"]) == ("1.1.0", "orders-team@example.com")

    # The report, from the real tables: one row per result, samples found through the registry.
    data = load_report_data(f"{wh}/dq_results", "reg_orders", run_id="run-2")
    # the written checks and the declared columns' schema checks (enforcement)
    assert sorted(c.check_id for c in data.result.checks) == [
        "order_id/schema",
        "order_id/unique",
        "status/known",
        "status/schema",
    ]
    assert data.quarantine_table == f"{wh}/quarantine"
    assert sorted(s["order_id"] for s in data.samples["status/known"]) == [3]
    assert sorted(s["order_id"] for s in data.samples["order_id/unique"]) == [3, 3]
    page = build_report(f"{wh}/dq_results", "reg_orders", run_id="run-2")
    assert "&lt;b&gt;lost&lt;/b&gt;" in page and "<b>lost</b>" not in page
    assert "orders-oncall@example.com" in page and "page checkout, then data-platform" in page


def test_out_of_order_and_concurrent_upserts(spark, tmp_path):
    contract = load_contract(TEXT_V1)
    target = str(tmp_path / "dq_contracts")
    base = dt.datetime(2024, 5, 10, tzinfo=UTC)

    def row(run_id, at, name="reg_orders"):
        c = contract if name == "reg_orders" else load_contract(TEXT_V1.replace("reg_orders", name))
        return registry_row(
            c,
            contract_text=TEXT_V1,
            run_id=run_id,
            run_at=at,
            decision="pass",
            dataset="d",
            results_table="/r",
            quarantine_table=None,
            valid_table=None,
        )

    write_registry(spark, row("late", base), target)
    write_registry(spark, row("early", base - dt.timedelta(days=3)), target)  # finished later, ran earlier
    stored = read_registry(target, "reg_orders")
    assert (stored["last_run_id"], stored["last_run_at"], stored["first_run_at"]) == (
        "late",
        base,
        base - dt.timedelta(days=3),
    )

    errors: list[BaseException] = []

    def upsert(name):
        try:
            write_registry(spark, row(f"run-{name}", base, name), target)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=upsert, args=(f"contract_{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for i in range(3):
        assert read_registry(target, f"contract_{i}")["last_run_id"] == f"run-contract_{i}"
