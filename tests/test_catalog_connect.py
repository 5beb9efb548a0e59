"""Catalog tables as first-class datasets, through Spark Connect and the server's Hive metastore (Derby).

One check task (dag.test) whose contract names its input and its reference by catalog name
(``dataset: {table: dq24.orders}``, ``references: {customers: {table: dq24.customers}}``) and whose
results and quarantine tables are names too (``dq24.results``, ``dq24.quarantine``), created by the job
in the server's catalog as Delta tables. The Airflow side reads them where the catalog put them —
the server's warehouse, which is *not* the Airflow warehouse here — from the locations the job
reported (store/catalog_names.py); a FreshnessSensor given only the input's name finds it the same way.
Expected values come from the generated rows, counted in plain Python.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import airflow_db, install_dag, run_dag, use_cached_delta_jars, xcom_value  # noqa: F401

import datetime as dt
import json

import pytest
from connect_fixtures import connect_server, connect_sql  # noqa: F401  (a fixture)
from pipeline_expectations import delta_rows, interval

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

CONTRACT = """\
name: catalog_orders
version: 1.0.0
dataset: {table: dq24.orders}
references:
  customers: {table: dq24.customers}
columns:
  - name: order_id
    type: long
    nullable: false
  - name: customer_id
    type: long
  - name: created_at
    type: timestamp
checks:
  - name: Customer exists
    type: referential
    columns: [customer_id]
    reference: customers
    severity: P1
"""

DAY = dt.date(2024, 5, 2)


def _orders() -> list[tuple[int, int, str]]:
    return [(n, 1 + (n * 7) % 13, f"2024-05-02 {n % 24:02d}:00:00") for n in range(1, 61)]


def test_catalog_named_input_reference_and_results(airflow_db, connect_server, tmp_path):  # noqa: F811
    orders, customers = _orders(), list(range(1, 11))
    orphans = {order_id for order_id, customer_id, _ in orders if customer_id not in customers}
    assert orphans  # the generator leaves some customers out on purpose
    values = ", ".join(f"({o}L, {c}L, TIMESTAMP'{t}')" for o, c, t in orders)
    connect_sql(
        connect_server.url,
        "CREATE DATABASE IF NOT EXISTS dq24",
        "CREATE OR REPLACE TABLE dq24.orders USING DELTA AS SELECT * FROM VALUES "
        f"{values} AS t(order_id, customer_id, created_at)",
        "CREATE OR REPLACE TABLE dq24.customers USING DELTA AS SELECT id AS customer_id FROM range(1, 11)",
    )
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "catalog_orders.yaml").write_text(CONTRACT)
    warehouse = tmp_path / "airflow-warehouse"  # not the server's: names must resolve through the job's catalog
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW_CONN_SPARK_CONNECT_TEST", json.dumps(connect_server.airflow_connection()))
        patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(warehouse))
        use_cached_delta_jars(patch, tmp_path)
        dag = install_dag(
            f"""
            import datetime as dt
            from airflow.sdk import DAG
            from airflow_dq_contracts.operators import ContractCheckOperator
            from airflow_dq_contracts.sensors import FreshnessSensor
            with DAG("dq_catalog_connect", schedule=None, start_date=dt.datetime(2024, 1, 1),
                     template_searchpath=[{str(tmp_path)!r}]) as dag:
                check = ContractCheckOperator(
                    task_id="check_orders", contract={str(tmp_path / "contracts" / "catalog_orders.yaml")!r},
                    conn_id="spark_connect_test", results_table="dq24.results",
                    quarantine_table="dq24.quarantine", fail_on_gate=False,
                )
                fresh = FreshnessSensor(
                    task_id="orders_fresh", table="dq24.orders", timestamp_column="created_at",
                    max_age_hours=48, reference_time="2024-05-03T00:00:00Z", poke_interval=1, timeout=60,
                )
                check >> fresh
            """
        )
        states, dag_run = run_dag(dag, **interval(DAY))
    assert states == {"check_orders": "success", "orders_fresh": "success"}
    summary = xcom_value(dag_run, "check_orders")
    server_tables = connect_server.warehouse / "dq24.db"
    assert summary["locations"]["dq24.results"] == f"file:{server_tables / 'results'}"
    assert summary["dataset"] == "dq24.orders"
    results = delta_rows(server_tables / "results", "run_id", summary["run_id"])
    assert sorted(r["check_id"] for r in results) == sorted(c["check_id"] for c in summary["checks"])
    referential = next(c for c in summary["checks"] if c["check_type"] == "referential")
    assert referential["failed_rows"] == len(orphans) and referential["status"] == "failed"
    assert summary["decision"] == "quarantine" and summary["row_count"] == len(orders)
    quarantined = delta_rows(server_tables / "quarantine", "_dq_run_id", summary["run_id"])
    assert {r["order_id"] for r in quarantined} == orphans
    assert summary["quarantine"] == {"table": "dq24.quarantine", "rows": len(orphans)}
    # Nothing was written in the Airflow warehouse's own layout: the names were the server catalog's.
    assert not (warehouse / "dq24.db").exists()
