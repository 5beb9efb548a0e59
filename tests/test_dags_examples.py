"""The example DAGs, run for real with ``dag.test()``: Airflow 3 on SQLite, spark-submit, Delta tables.

Each outcome of ``dq_orders_pipeline`` (pass, quarantine, gate) runs once on generated data; the
expected numbers come from the generator's rows, counted here in plain Python, and the XCom payload
is compared with the results rows read straight from the Delta table (delta-rs, not the operator's
reader). ``dq_orders_daily_partition`` runs used alone: a gate fails the task; a job that dies fails
it with the job's own error; a bad contract fails it before any Spark starts.

spark-submit costs ~20-60 s per run here (JVM + Delta), so there are five of them in this module.
Delta comes from ``--jars`` of the already-resolved jars when the Ivy cache has them (the offline
mode of ``spark_config``), else from ``--packages``.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import (  # noqa: F401  (airflow_db: fixture)
    DAGS_FOLDER,
    airflow_db,
    install_example_dags,
    run_dag,
    use_cached_delta_jars,
    xcom_value,
)

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pipeline_expectations import (
    assert_xcom_equals_results_table,
    decision_by_hand,
    delta_rows,
    expected_day,
    interval,
    orders_data,
)

from airflow_dq_contracts.results import make_run_id

pytestmark = [pytest.mark.airflow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "dags_examples"
UTC = dt.timezone.utc


# --------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def env(airflow_db, tmp_path_factory):  # noqa: F811 - airflow_db is the imported fixture
    """Warehouse, Delta jars, the example DAG files installed in the dags folder."""
    root = tmp_path_factory.mktemp("examples")
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(root / "warehouse"))
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / "job-cache"))
    use_cached_delta_jars(patch, root)
    install_example_dags(patch)  # as the dag processor sees them: DAG files import orders_data
    yield root / "warehouse"
    patch.undo()


def _load(dag_id: str):
    from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / f"{dag_id}.py"), include_examples=False)
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


@pytest.fixture(scope="module")
def pipeline(env):
    return _load("dq_orders_pipeline")


@pytest.fixture(scope="module")
def daily(env):
    return _load("dq_orders_daily_partition")


@pytest.fixture
def watch_execute(monkeypatch):
    """Record what ContractCheckOperator.execute returned or raised, without changing it."""
    from airflow_dq_contracts.operators import ContractCheckOperator

    calls: list[dict[str, Any]] = []
    original = ContractCheckOperator.execute

    def watched(self, context):
        call: dict[str, Any] = {"try_number": context["ti"].try_number}
        calls.append(call)
        try:
            call["result"] = original(self, context)
            return call["result"]
        except BaseException as exc:
            call["error"] = exc
            raise

    monkeypatch.setattr(ContractCheckOperator, "execute", watched)
    return calls


# --------------------------------------------------------------------------------------- expectations


# --------------------------------------------------------------------------------------- parsing


def test_example_dags_parse_with_the_documented_shape(pipeline, daily):
    assert {t.task_id for t in pipeline.tasks} == {
        "produce_raw_orders",
        "wait_for_fresh_orders",
        "load_orders",
        "check_orders",
        "route_orders",
        "publish",
        "quarantine_then_publish",
        "alert",
    }
    assert pipeline.task_dict["route_orders"].downstream_task_ids == {"publish", "quarantine_then_publish", "alert"}
    assert pipeline.task_dict["check_orders"].fail_on_gate is False
    assert pipeline.task_dict["wait_for_fresh_orders"].downstream_task_ids == {"load_orders"}
    assert [t.task_id for t in daily.tasks] == ["check_partition"]
    check = daily.task_dict["check_partition"]
    assert check.fail_on_gate is True and check.filter == "order_date = '{{ data_interval_start | ds }}'"


def test_the_provider_shows_in_airflow_providers_list(env):
    out = subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "providers", "list", "-o", "json"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # The listing is a JSON array of objects; Airflow 3.0 prints log lines ("[2026-…] {plugins.py…}")
    # to stdout before it, so the array is found by its "[{", not by the first "[".
    listing, _ = json.JSONDecoder().raw_decode(out.stdout, out.stdout.index("[{"))
    providers = {p["package_name"]: p for p in listing}
    assert "airflow-dq-contracts" in providers


# --------------------------------------------------------------------------------------- outcomes


def _run_pipeline(pipeline, outcome: str, day: dt.date):
    states, dag_run = run_dag(pipeline, run_conf={"outcome": outcome}, **interval(day))
    summary = xcom_value(dag_run, "check_orders")
    return states, dag_run, summary


def test_pass_publishes_everything(pipeline, env, watch_execute):
    day = dt.date(2024, 5, 1)
    states, dag_run, summary = _run_pipeline(pipeline, "pass", day)
    assert states == {
        "produce_raw_orders": "success",
        "wait_for_fresh_orders": "success",
        "load_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "publish": "success",
        "quarantine_then_publish": "skipped",
        "alert": "skipped",
    }
    assert str(dag_run.state) == "success"
    assert summary["run_id"] == make_run_id("dq_orders_pipeline", dag_run.run_id, "check_orders")
    rows = assert_xcom_equals_results_table(summary, env)
    expected = expected_day("pass", day)
    assert summary["decision"] == decision_by_hand(rows) == "pass"
    assert summary["row_count"] == len(expected) == 40
    assert {r["row_count"] for r in rows} == {len(expected)}
    assert {r["filter"] for r in rows} == {f"order_date = '{day}'"}
    assert {(r["dag_id"], r["task_id"], r["airflow_run_id"]) for r in rows} == {
        ("dq_orders_pipeline", "check_orders", dag_run.run_id)
    }
    assert summary["quarantine"]["rows"] == 0
    assert delta_rows(env / "dq_quarantine" / "orders", "_dq_run_id", summary["run_id"]) == []
    gold = delta_rows(env / "gold" / "orders", "order_date", day)
    assert sorted(r["order_id"] for r in gold) == sorted(r["order_id"] for r in expected)
    assert [c["try_number"] for c in watch_execute] == [1]
    _readback_refuses_missing_or_miscounted_rows(summary, env)


def _readback_refuses_missing_or_miscounted_rows(summary: dict[str, Any], warehouse: Path) -> None:
    """The operator never builds an XCom the table does not back: no rows, or a count mismatch, fails."""
    import dataclasses

    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.runs import ReadBackError, RunTables, collect_summary
    from airflow_dq_contracts.runspec import RunSpec

    contract = load_contract(str(EXAMPLES / "contracts" / "orders.yaml"))
    now = dt.datetime.now(UTC)
    spec = RunSpec.for_contract(contract, input_path="d", run_id=summary["run_id"])
    tables = RunTables.of(str(warehouse / "dq_results"), None, None, warehouse=str(warehouse))
    times = dict(started_at=now, finished_at=now)
    rebuilt = collect_summary(contract, spec, tables, **times)
    assert rebuilt["checks"] == summary["checks"]
    with pytest.raises(ReadBackError, match="holds no rows for run dq-nope"):
        collect_summary(contract, dataclasses.replace(spec, run_id="dq-nope"), tables, **times)
    held = len(summary["checks"])  # the checks of orders.yaml (26 before its volume baseline)
    with pytest.raises(ReadBackError, match=f"the job reported {held + 1} check results .* holds {held}"):
        collect_summary(contract, spec, tables, reported={"checks": held + 1}, **times)
    nowhere = RunTables.of(str(warehouse / "nope"), None, None, warehouse=str(warehouse))
    with pytest.raises(ReadBackError, match="cannot read run .* back from its Delta tables: .*does not exist"):
        collect_summary(contract, spec, nowhere, **times)

    # The operator module's collect_summary (its signature before the runs package) answers the same.
    from airflow_dq_contracts.operators.contract_check import collect_summary as operator_collect_summary
    from airflow_dq_contracts.version_compat import AirflowException

    common = dict(
        dataset="d",
        results_table=str(warehouse / "dq_results"),
        quarantine_table=None,
        valid_table=None,
        warehouse=str(warehouse),
        filter=None,
        **times,
    )
    assert operator_collect_summary(contract, run_id=summary["run_id"], **common)["checks"] == summary["checks"]
    with pytest.raises(AirflowException, match="holds no rows for run dq-nope"):
        operator_collect_summary(contract, run_id="dq-nope", **common)


def test_quarantine_sets_bad_rows_aside_and_a_retry_leaves_one_copy(pipeline, env, watch_execute, monkeypatch):
    """The first attempt runs the job to the end, then dies; the retry must replace, not add."""
    from airflow_dq_contracts.operators import ContractCheckOperator
    from airflow_dq_contracts.version_compat import AirflowException

    watched = ContractCheckOperator.execute

    def dies_after_the_job_on_first_try(self, context):
        result = watched(self, context)
        if context["ti"].try_number == 1:
            raise AirflowException("simulated worker loss after the Spark job wrote its results")
        return result

    monkeypatch.setattr(ContractCheckOperator, "execute", dies_after_the_job_on_first_try)
    check = pipeline.task_dict["check_orders"]
    monkeypatch.setattr(check, "retries", 1)
    monkeypatch.setattr(check, "retry_delay", dt.timedelta(0))
    # The large-contract route on this run: the contract travels as a --files attachment.
    monkeypatch.setattr(check, "max_inline_contract_bytes", 0)

    day = dt.date(2024, 5, 2)
    states, dag_run, summary = _run_pipeline(pipeline, "quarantine", day)
    assert [c["try_number"] for c in watch_execute] == [1, 2]
    assert "error" not in watch_execute[0] and "error" not in watch_execute[1]
    assert states == {
        "produce_raw_orders": "success",
        "wait_for_fresh_orders": "success",
        "load_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "publish": "skipped",
        "quarantine_then_publish": "success",
        "alert": "skipped",
    }

    expected = expected_day("quarantine", day)
    bad = {r["order_id"] for r in expected if "@" not in r["email"]}
    assert len(bad) == 3
    rows = assert_xcom_equals_results_table(summary, env)  # one row per check: the retry replaced
    assert summary["decision"] == decision_by_hand(rows) == "quarantine"
    failing = {r["check_id"]: r for r in rows if r["status"] != "passed" and r["action"] != "flag"}
    assert set(failing) == {"email/email_format_is_valid"}
    assert failing["email/email_format_is_valid"]["failed_rows"] == len(bad)

    quarantined = delta_rows(env / "dq_quarantine" / "orders", "_dq_run_id", summary["run_id"])
    assert sorted(r["order_id"] for r in quarantined) == sorted(bad)  # 3, not 6
    assert all([v["check_id"] for v in r["_dq_violations"]] == ["email/email_format_is_valid"] for r in quarantined)
    assert summary["quarantine"]["rows"] == len(bad)
    valid = delta_rows(env / "valid" / "orders", "_dq_run_id", summary["run_id"])
    assert len(valid) == len(expected) - len(bad) == summary["valid"]["rows"]
    gold = delta_rows(env / "gold" / "orders", "order_date", day)
    assert sorted(r["order_id"] for r in gold) == sorted(r["order_id"] for r in expected if r["order_id"] not in bad)


def test_gate_alerts_and_publishes_nothing(pipeline, env, watch_execute):
    day = dt.date(2024, 5, 3)
    states, dag_run, summary = _run_pipeline(pipeline, "gate", day)
    assert states == {
        "produce_raw_orders": "success",
        "wait_for_fresh_orders": "success",
        "load_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "publish": "skipped",
        "quarantine_then_publish": "skipped",
        "alert": "failed",
    }
    assert str(dag_run.state) == "failed"  # a gate never passes silently
    rows = assert_xcom_equals_results_table(summary, env)
    assert summary["decision"] == decision_by_hand(rows) == "gate"
    gating = {r["check_id"] for r in rows if r["action"] == "gate" and r["status"] != "passed"}
    assert gating == {"order_id/order_id_is_unique"}
    by_id = {r["check_id"]: r for r in rows}
    ids = [r["order_id"] for r in expected_day("gate", day)]
    assert by_id["order_id/order_id_is_unique"]["metric_value"] == len(ids) - len(set(ids)) == 2
    assert delta_rows(env / "gold" / "orders", "order_date", day) == []


# --------------------------------------------------------------------------------------- used alone


def test_used_alone_a_gate_fails_the_task_after_pushing_the_summary(daily, env, watch_execute, monkeypatch):
    day = dt.date(2024, 5, 4)
    orders_data.write_orders(env / "silver" / "orders", orders_data.generate_orders(orders_data.spec_for("gate", day)))
    monkeypatch.setattr(daily.task_dict["check_partition"], "retry_delay", dt.timedelta(0))
    # The interval [day, day + 1): the partition its start names, freshness against its end.
    states, dag_run = run_dag(daily, **interval(day))
    assert states == {"check_partition": "failed"}
    assert str(dag_run.state) == "failed"
    assert len(watch_execute) == 1, "a gate is a verdict, not a transient error: no retry"
    error = watch_execute[0]["error"]
    assert type(error).__name__ == "AirflowFailException"
    assert str(error).startswith("contract orders decided GATE on ")
    assert "P0 order_id/order_id_is_unique (failed" in str(error)
    summary = xcom_value(dag_run, "check_partition")
    rows = assert_xcom_equals_results_table(summary, env)
    assert summary["decision"] == "gate"
    assert {r["filter"] for r in rows} == {f"order_date = '{day}'"}
    assert summary["row_count"] == len(expected_day("gate", day))


def test_a_job_that_dies_fails_the_task_with_its_own_error(daily, env, watch_execute, monkeypatch, tmp_path):
    check = daily.task_dict["check_partition"]
    missing = tmp_path / "no-such-table"
    monkeypatch.setattr(check, "input_path", str(missing))
    monkeypatch.setattr(check, "retries", 0)
    start = dt.datetime(2024, 5, 5, tzinfo=UTC)
    states, dag_run = run_dag(daily, logical_date=start, run_after=start)
    assert states == {"check_partition": "failed"}
    message = str(watch_execute[0]["error"])
    # The job's own words: the engine's DatasetError carrying Spark's PATH_NOT_FOUND.
    assert message.startswith(
        f"contract job for orders on {missing} failed: DatasetError: cannot read delta "
        f"dataset '{missing}': [PATH_NOT_FOUND] Path does not exist: "
    )
    assert "Error code is" not in message  # the job's words, not spark-submit's exit status
    assert xcom_value(dag_run, "check_partition") is None


def test_a_bad_contract_fails_before_anything_is_submitted(daily, env, watch_execute, monkeypatch):
    from airflow_dq_contracts.hooks.contract_submit import ContractSubmitHook

    submitted: list = []
    original_submit = ContractSubmitHook.submit_job

    def recording_submit(self):
        submitted.append(self)
        return original_submit(self)

    monkeypatch.setattr(ContractSubmitHook, "submit_job", recording_submit)
    bad = (EXAMPLES / "contracts" / "orders.yaml").read_text().replace("max: 0\n", "maxx: 0\n", 1)
    (DAGS_FOLDER / "contracts" / "orders_broken.yaml").write_text(bad)
    check = daily.task_dict["check_partition"]
    monkeypatch.setattr(check, "contract", "contracts/orders_broken.yaml")
    monkeypatch.setattr(check, "_contract_origin", "contracts/orders_broken.yaml")
    monkeypatch.setattr(check, "retries", 0)
    start = dt.datetime(2024, 5, 6, tzinfo=UTC)
    states, dag_run = run_dag(daily, logical_date=start, run_after=start)
    assert states == {"check_partition": "failed"}
    call = watch_execute[0]
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "maxx" in text)
    lines = str(call["error"]).splitlines()
    assert lines[0] == "invalid contract, nothing submitted:"
    assert lines[1].startswith(f"contracts/orders_broken.yaml:{line}: columns[0].checks[0].maxx: unknown key 'maxx'")
    assert len(lines) == 2
    assert submitted == []  # failed on validation alone: no spark-submit, no JVM
