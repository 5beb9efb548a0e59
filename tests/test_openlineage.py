"""OpenLineage data-quality facets of ContractCheckOperator, through the real provider and a file transport.

One real DAG run (``dag.test()``, spark-submit, Delta results): the OpenLineage listener writes its
events to a file; the COMPLETE event of the check task must carry, on the checked dataset, one
assertion per result row (name, success, column) and the column metrics that run measured —
compared with hand-computed values over the same rows and with the results table itself (read with
delta-rs). Plus the plain-Python naming rules and the operator being silent without the provider.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import (  # noqa: F401  (airflow_db: fixture)
    airflow_db,
    install_dag,
    run_dag,
    use_cached_delta_jars,
    xcom_value,
)

import json
import statistics

import pytest

from airflow_dq_contracts.interop.lineage import dataset_id

# Hand-written rows; every expected value below is computed from these in plain Python.
ROWS = [
    {"id": 1, "amount": 10.0, "status": "NEW"},
    {"id": 2, "amount": 20.0, "status": "PAID"},
    {"id": 3, "amount": None, "status": "PAID"},
    {"id": 4, "amount": 40.0, "status": "LOST"},
    {"id": 4, "amount": 50.0, "status": None},
]

CONTRACT = """\
name: ol_orders
version: 1.0.0
columns:
  - name: id
    checks:
      - {name: id unique, type: duplicates, max: 0, severity: P2}
      - {name: id distinct, type: cardinality, min: 1}
      - {name: id min, type: min, min: 1}
      - {name: id max, type: max, max: 100}
      - {name: id sum, type: sum}
      - {name: id count, type: count, min: 1}
  - name: amount
    checks:
      - {name: amount present, type: missing, return: count, max: 0, severity: P2}
      - {name: amount median, type: percentile, percentile: 0.5, between: [0, 1000]}
      - {name: amount sum, type: sum}
      - {name: amount count, type: count}
      - {name: amount min, type: min, min: 0}
      - {name: amount max, type: max, max: 1000}
      - {name: paid amount min, type: min, min: 15, filter: "status = 'PAID'"}
  - name: status
    checks:
      - {name: status known, type: whitelist, values: [NEW, PAID], severity: P2}
checks:
  - {name: row count, type: num_rows, between: [1, 100]}
"""


# --------------------------------------------------------------------------------------- plain Python


def test_dataset_naming_follows_openlineage_spec(tmp_path, monkeypatch):
    assert dataset_id("s3a://bucket/warehouse/orders") == ("s3://bucket", "warehouse/orders")
    assert dataset_id("s3://bucket/a/b/") == ("s3://bucket", "a/b")
    assert dataset_id("gs://bkt/x") == ("gs://bkt", "x")
    assert dataset_id("abfss://c@acct.dfs.core.windows.net/p/q") == ("abfss://c@acct.dfs.core.windows.net", "p/q")
    assert dataset_id("hdfs://nn:8020/w/t") == ("hdfs://nn:8020", "w/t")
    assert dataset_id("file:///tmp/a/../b") == ("file", "/tmp/b")
    monkeypatch.chdir(tmp_path)  # restored at teardown: tmp_path itself is removed then
    assert dataset_id("rel/data") == ("file", str(tmp_path / "rel" / "data"))


def test_operator_is_silent_without_a_run_or_without_openlineage(monkeypatch):
    import builtins

    from airflow_dq_contracts.operators import ContractCheckOperator

    op = ContractCheckOperator(task_id="t", contract=CONTRACT, input_path="/x")
    assert op.get_openlineage_facets_on_complete(None) is None  # nothing ran yet
    run = {"contract": None, "summary": {}, "table": None, "input_path": "/x", "outputs": []}
    op.record_lineage([run], "/w")
    real_import = builtins.__import__

    def no_openlineage(name, *args, **kwargs):
        if name.startswith(("openlineage", "airflow.providers.openlineage")):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_openlineage)
    assert op.get_openlineage_facets_on_complete(None) is None


# --------------------------------------------------------------------------------------- a real DAG run


def _reset_openlineage_config() -> None:
    """The provider caches its configuration and client: make it read the environment again."""
    from airflow.providers.openlineage import conf
    from airflow.providers.openlineage.plugins.listener import get_openlineage_listener

    for value in vars(conf).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()
    get_openlineage_listener().adapter._client = None


def _set_openlineage_listener(enabled: bool) -> None:
    """Register (or drop) the provider's listener with Airflow's listener manager.

    The provider's plugin decides at import time whether to register its listener, and only does so when
    a transport is configured. In a full session an earlier test has usually loaded the plugins already,
    without a transport, so the listener must be put in place here to take part in this DAG run.
    """
    from airflow.listeners.listener import get_listener_manager
    from airflow.providers.openlineage.plugins.listener import get_openlineage_listener

    manager, listener = get_listener_manager(), get_openlineage_listener()
    if enabled:
        manager.add_listener(listener)  # a no-op when the plugin registered it already
    elif manager.pm.is_registered(listener):
        manager.pm.unregister(listener)


@pytest.fixture
def lineage_file(airflow_db, tmp_path, monkeypatch):  # noqa: F811 - airflow_db is the imported fixture
    events = tmp_path / "events.jsonl"
    monkeypatch.setenv(
        "AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps({"type": "file", "log_file_path": str(events), "append": True})
    )
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__NAMESPACE", "dq-tests")
    # Emit in a thread of the task process rather than a fork of the pytest process.
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD", "True")
    monkeypatch.setenv("DQ_CONTRACTS_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("DQ_CONTRACTS_JOB_CACHE", str(tmp_path / "job-cache"))
    use_cached_delta_jars(monkeypatch, tmp_path)
    _reset_openlineage_config()
    _set_openlineage_listener(True)
    yield events
    monkeypatch.undo()
    _set_openlineage_listener(False)
    _reset_openlineage_config()  # the rest of the session runs without OpenLineage, as before


def _expected_metrics() -> dict:
    ids = [r["id"] for r in ROWS]
    amounts = sorted(r["amount"] for r in ROWS if r["amount"] is not None)
    return {
        "id": {
            "distinctCount": len(set(ids)),
            "min": float(min(ids)),
            "max": float(max(ids)),
            "sum": float(sum(ids)),
            "count": float(len(ids)),
        },
        "amount": {
            "nullCount": sum(r["amount"] is None for r in ROWS),
            "sum": sum(amounts),
            "count": float(len(amounts)),
            "min": amounts[0],
            "max": amounts[-1],
            # exact percentile, linear interpolation = statistics' "inclusive" method
            "quantiles": {"0.5": statistics.quantiles(amounts, n=2, method="inclusive")[0]},
        },
    }


@pytest.mark.airflow
@pytest.mark.spark
def test_dag_run_emits_complete_event_with_assertions_and_metrics(lineage_file, tmp_path):
    data = tmp_path / "orders"
    data.mkdir()
    (data / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    contract = tmp_path / "ol_orders.yaml"
    contract.write_text(CONTRACT)
    results = tmp_path / "results"
    quarantine = tmp_path / "quarantine"
    dag = install_dag(f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_dq_contracts.operators import ContractCheckOperator

        with DAG("dq_openlineage", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
            ContractCheckOperator(task_id="check", contract={str(contract)!r}, input_path={str(data)!r},
                                  input_format="json", results_table={str(results)!r},
                                  quarantine_table={str(quarantine)!r}, fail_on_gate=False)
        """)
    states, dag_run = run_dag(dag)
    assert states == {"check": "success"}
    summary = xcom_value(dag_run, "check")

    events = [json.loads(line) for line in lineage_file.read_text().splitlines() if line.strip()]
    complete = [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"] == "dq_openlineage.check"]
    assert len(complete) == 1, [(e["eventType"], e["job"]["name"]) for e in events]
    event = complete[0]

    # The checked dataset is the input, named per the spec (file namespace, absolute path).
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [("file", str(data))]
    assert {(d["namespace"], d["name"]) for d in event["outputs"]} == {
        ("file", str(results)),
        ("file", str(quarantine)),
    }
    dataset = event["inputs"][0]

    # One assertion per row of the results table for this run, in the run's order.
    from airflow_dq_contracts.store.results.delta_store import read_results

    rows = read_results(str(results), summary["run_id"])
    # 15 written checks + one schema check per declared column (id, amount, status), all passing
    assert len(rows) == 15 + 3
    assert sorted(r.check_id for r in rows if r.check_type == "schema") == [
        "amount/schema",
        "id/schema",
        "status/schema",
    ]
    by_name = {r.check_name: r for r in rows if r.check_type != "schema"}
    asserted = dataset["facets"]["dataQualityAssertions"]["assertions"]
    assert [(a["name"], a["success"], a.get("column")) for a in asserted] == [
        (c["check_name"], c["status"] == "passed", c["column"]) for c in summary["checks"]
    ]
    assert sorted((a["name"], a["success"], a.get("column")) for a in asserted) == sorted(
        (r.check_name, r.status == "passed", r.column) for r in rows
    )
    # Written by hand from ROWS: the duplicate id 4, the NULL amount and status LOST fail.
    failed = {a["name"] for a in asserted if not a["success"]}
    assert failed == {"id unique", "amount present", "status known"}

    # The metrics are what the run measured (== the results rows), and what plain Python computes.
    metrics = dataset["inputFacets"]["dataQualityMetrics"]
    assert metrics["rowCount"] == len(ROWS) == summary["row_count"]
    columns = metrics["columnMetrics"]
    expected = _expected_metrics()
    assert set(columns) == set(expected)
    for column, values in expected.items():
        for key, value in values.items():
            assert columns[column][key] == pytest.approx(value), (column, key)
    assert columns["amount"]["sum"] == by_name["amount sum"].metric_value
    assert columns["amount"]["min"] == by_name["amount min"].metric_value  # not the filtered "paid amount min"
    assert columns["id"]["distinctCount"] == by_name["id distinct"].metric_value


def test_catalog_table_input_is_its_warehouse_location_with_a_symlink(tmp_path):
    from airflow_dq_contracts.contract import parse_contract
    from airflow_dq_contracts.operators import ContractCheckOperator

    contract = parse_contract("name: t\ncolumns:\n  - name: a\n    checks: [{name: a nulls, type: missing}]\n")
    summary = {
        "row_count": 3,
        "checks": [
            {
                "check_id": "a/a_nulls",
                "check_name": "a nulls",
                "check_type": "missing",
                "column": "a",
                "status": "passed",
                "metric_value": 1.0,
                "severity": "P1",
                "validator": "noop",
                "message": "",
            }
        ],
    }
    op = ContractCheckOperator(task_id="t", contract="name: t\n", table="silver.orders")
    warehouse = str(tmp_path / "wh")
    run = {"contract": contract, "summary": summary, "table": "silver.orders", "input_path": None}
    op.record_lineage([{**run, "outputs": ["s3a://lake/dq/results", "silver.quarantine"]}], warehouse)
    lineage = op.get_openlineage_facets_on_complete(None)
    (dataset,) = lineage.inputs
    from airflow_dq_contracts.store.tablemeta.delta_log import resolve_table_path

    location = resolve_table_path("silver.orders", warehouse)
    assert (dataset.namespace, dataset.name) == ("file", location)
    assert [(i.namespace, i.name, i.type) for i in dataset.facets["symlinks"].identifiers] == [
        ("file", "silver.orders", "TABLE")
    ]
    assert dataset.facets["dataQualityAssertions"].assertions[0].success is True
    assert dataset.inputFacets["dataQualityMetrics"].columnMetrics["a"].nullCount == 1
    assert dataset.inputFacets["dataQualityMetrics"].rowCount == 3
    assert [(o.namespace, o.name) for o in lineage.outputs] == [
        ("s3://lake", "dq/results"),
        ("file", resolve_table_path("silver.quarantine", warehouse)),
    ]

    # Several contracts in one task: every checked input with its own facets, each written table once.
    other = {"contract": contract, "summary": summary, "table": None, "input_path": str(tmp_path / "payments")}
    op.record_lineage(
        [
            {**run, "outputs": ["s3a://lake/dq/results", "silver.quarantine"]},
            {**other, "outputs": ["s3a://lake/dq/results", str(tmp_path / "q_payments")]},
        ],
        warehouse,
    )
    both = op.get_openlineage_facets_on_complete(None)
    assert [(d.namespace, d.name) for d in both.inputs] == [("file", location), ("file", str(tmp_path / "payments"))]
    assert all(d.facets["dataQualityAssertions"].assertions for d in both.inputs)
    assert [(o.namespace, o.name) for o in both.outputs] == [
        ("s3://lake", "dq/results"),
        ("file", resolve_table_path("silver.quarantine", warehouse)),
        ("file", str(tmp_path / "q_payments")),
    ]
