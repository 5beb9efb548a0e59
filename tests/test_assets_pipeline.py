"""Asset events of real check tasks, read back from Airflow's metadata database (``dag.test()``, spark-submit).

* The example producer (``dags_examples/dq_orders_assets_producer.py``) on a quarantine day: exactly one event,
  on the valid table's asset, whose ``extra`` equals the verdict written out here from independent sources —
  the generated rows (``orders_data``: 3 bad e-mails → 3 quarantined, 37 valid), the results rows read with
  delta-rs, the results table's Delta version, the DAG run's ids and data interval. Then the example consumer,
  run by hand, judges that latest event and proceeds, reading the 37 valid rows of the contract run.
* A mapped check (``ContractCheckOperator.partial(...).expand(contract=[…])``, ``emit_asset=True``): one event
  per mapped task instance, each with its own verdict (one passes, one gates with ``fail_on_gate=False``); a
  check used alone that gates (``fail_on_gate=True``) fails and records no event for its outlet.

One spark-submit run of the example contract and three tiny ones; the scheduler's view (consumer runs created
by asset events, refusing a gate) is ``test_assets_scheduler.py``.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import (  # noqa: F401  (airflow_db: fixture)
    DAGS_FOLDER,
    airflow_db,
    install_dag,
    install_example_dags,
    run_dag,
    use_cached_delta_jars,
    xcom_value,
)

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from pipeline_expectations import asset_events, delta_rows, expected_day, interval, iso_z

from airflow_dq_contracts.results import make_run_id

pytestmark = [pytest.mark.airflow, pytest.mark.spark]

UTC = dt.timezone.utc
VERDICT = "airflow_dq_contracts.verdict"
CONVENTION = "airflow.dataquality.result"
WEIGHT = {"P0": 8, "P1": 4, "P2": 2, "P3": 1}


@pytest.fixture(scope="module")
def env(airflow_db, tmp_path_factory):  # noqa: F811 - airflow_db is the imported fixture
    root = tmp_path_factory.mktemp("assets")
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(root / "warehouse"))
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / "job-cache"))
    use_cached_delta_jars(patch, root)
    install_example_dags(patch)
    yield root
    patch.undo()


def _load(dag_id: str):
    from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / f"{dag_id}.py"), include_examples=False)
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


def _score(rows: list[dict[str, Any]]) -> float:
    total = sum(WEIGHT[r["severity"]] for r in rows)
    return round(sum(WEIGHT[r["severity"]] for r in rows if r["status"] == "passed") / total, 4)


def test_the_producers_event_carries_the_verdict_the_data_calls_for_and_the_consumer_proceeds(env):
    from deltalake import DeltaTable

    warehouse = env / "warehouse"
    day = dt.date(2024, 5, 2)
    producer = _load("dq_orders_assets_producer")
    states, dag_run = run_dag(producer, run_conf={"outcome": "quarantine"}, **interval(day))
    assert states == {
        "load_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "passed": "skipped",
        "quarantined": "success",
        "gated": "skipped",
    }

    expected = expected_day("quarantine", day)
    bad = [r for r in expected if "@" not in r["email"]]
    run_id = make_run_id("dq_orders_assets_producer", dag_run.run_id, "check_orders")
    rows = delta_rows(warehouse / "dq_results", "run_id", run_id)
    not_passed = sorted((r for r in rows if r["status"] != "passed"), key=lambda r: (r["severity"], r["check_id"]))
    assert [(r["check_id"], r["failed_rows"]) for r in not_passed if r["action"] == "quarantine"] == [
        ("email/email_format_is_valid", len(bad))
    ]
    counts = {s: sum(r["status"] == s for r in rows) for s in ("passed", "failed", "error")}
    valid_table = str(warehouse / "checked" / "valid")
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=UTC)
    verdict = {
        "schema_version": 1,
        "decision": "quarantine",
        "status": "error" if counts["error"] else "failed",
        "score": _score(rows),
        "counts": {**counts, "total": len(rows)},
        "failed_by_severity": {s: sum(r["severity"] == s for r in not_passed) for s in WEIGHT},
        "failed_checks": [r["check_id"] for r in not_passed],
        "failed_checks_total": len(not_passed),
        "contract": {"name": "orders", "version": "2.1.0"},
        "run_id": run_id,
        "airflow": {
            "dag_id": "dq_orders_assets_producer",
            "run_id": dag_run.run_id,
            "task_id": "check_orders",
            "map_index": -1,
        },
        "dataset": str(warehouse / "checked" / "orders"),
        "filter": f"order_date = '{day}'",
        "row_count": len(expected),
        "reference_time": iso_z(end),
        # the run's rows are the results table's newest commit: nothing else wrote to it since
        "results": {
            "table": str(warehouse / "dq_results"),
            "version": DeltaTable(str(warehouse / "dq_results")).version(),
        },
        "quarantine": {"table": str(warehouse / "dq_quarantine" / "orders"), "rows": len(bad)},
        "valid": {"table": valid_table, "rows": len(expected) - len(bad)},
        "report": xcom_value(dag_run, "check_orders", key="dq_report_url"),
    }
    assert verdict["report"] == (warehouse / "dq_reports" / "orders" / f"{run_id}.html").as_uri()
    flagged = [r for r in not_passed if r["status"] == "failed" and r["action"] == "flag"]
    failing = [r for r in not_passed if r["status"] == "failed" and r["action"] != "flag"]
    convention = {
        "run_uid": run_id,
        "ruleset": "orders",
        "table": verdict["dataset"],
        "score": verdict["score"],
        "passed": counts["passed"],
        "warned": len(flagged),
        "failed": len(failing),
        "errored": counts["error"],
        "failed_rules": [r["check_id"] for r in failing],
        "warned_rules": [r["check_id"] for r in flagged],
    }
    events = asset_events("dq_orders_assets_producer", dag_run.run_id)
    assert events == [
        {
            "uri": Path(valid_table).as_uri(),
            "task_id": "check_orders",
            "map_index": -1,
            "extra": {VERDICT: verdict, CONVENTION: convention},
        }
    ]
    assert len(json.dumps(events[0]["extra"])) < 8 * 1024

    # The consumer, triggered by hand: judges the asset's latest event (the one above) and proceeds.
    consumer = _load("dq_orders_assets_consumer")
    states, consumer_run = run_dag(consumer, **interval(day))
    assert states == {"require_contract": "success", "summarise_orders": "success"}
    assert [v["run_id"] for v in xcom_value(consumer_run, "require_contract")] == [run_id]
    assert xcom_value(consumer_run, "summarise_orders") == {run_id: len(expected) - len(bad)}


MAPPED_DAG = """
import datetime as dt

from airflow.sdk import DAG, Asset

from airflow_dq_contracts.operators import ContractCheckOperator


def contract(name, max_amount):
    return {{
        "name": name,
        "version": "1.0.0",
        "columns": [{{"name": "amount", "type": "double", "checks": [
            {{"name": "amounts are small", "type": "max", "max": max_amount, "severity": "P0"}}]}}],
    }}


with DAG(dag_id="dq_assets_mapped", schedule=None, start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)) as dag:
    ContractCheckOperator.partial(
        task_id="check_each",
        input_path={data!r},
        input_format="json",
        results_table={results!r},
        emit_asset=True,
        fail_on_gate=False,
        write_report=False,
    ).expand(contract=[contract("small_amounts", 10.0), contract("tiny_amounts", 1.0)])
    # Used alone, a gate fails the task: Airflow records no event for its outlet.
    ContractCheckOperator(
        task_id="check_gate_alone",
        contract=contract("tiny_alone", 1.0),
        input_path={data!r},
        input_format="json",
        results_table={results!r},
        outlets=[Asset("x-dq-test://never-updated")],
        write_report=False,
        retries=0,
    )
"""


def test_a_mapped_check_records_one_event_per_contract_each_with_its_verdict(env):
    data = env / "amounts.json"
    amounts = [0.5, 2.0, 4.0]
    data.write_text("".join(json.dumps({"amount": a}) + "\n" for a in amounts))
    results = env / "mapped_results"
    dag = install_dag(MAPPED_DAG.format(data=str(data), results=str(results)), name="dq_assets_mapped")
    states, dag_run = run_dag(dag, logical_date=dt.datetime(2024, 6, 1, tzinfo=UTC))
    # both map indexes succeed (fail_on_gate=False: routed elsewhere); the gate used alone fails its task
    assert states == {"check_each": "success", "check_gate_alone": "failed"}

    events = asset_events("dq_assets_mapped", dag_run.run_id)
    assert [(e["uri"], e["task_id"], e["map_index"]) for e in events] == [
        (data.as_uri(), "check_each", 0),
        (data.as_uri(), "check_each", 1),
    ]  # and none from check_gate_alone
    expected = {0: ("small_amounts", "pass"), 1: ("tiny_amounts", "gate")}  # max(amounts) = 4: ≤ 10, > 1
    for event in events:
        verdict = event["extra"][VERDICT]
        name, decision = expected[event["map_index"]]
        run_id = make_run_id("dq_assets_mapped", dag_run.run_id, "check_each", str(event["map_index"]))
        assert (verdict["contract"]["name"], verdict["decision"], verdict["run_id"]) == (name, decision, run_id)
        assert verdict["airflow"]["map_index"] == event["map_index"]
        assert verdict["row_count"] == len(amounts)
        rows = delta_rows(results, "run_id", run_id)
        assert verdict["failed_checks"] == sorted(r["check_id"] for r in rows if r["status"] != "passed")
        assert verdict["counts"]["total"] == len(rows)
