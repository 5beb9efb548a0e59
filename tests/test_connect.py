"""The Spark Connect transport, end to end: a real Connect server (tests/connect_fixtures.py), real Airflow.

* the example DAG ``dq_orders_pipeline`` with its ``spark_default`` connection of type ``spark_connect``:
  the check task runs as a Connect client (no spark-submit), XCom equals the results rows, the decision
  and the quarantined rows are the ones computed here by hand, and the worker's environment is clean;
* the same contract on the same data through spark-submit gives the same results and quarantine rows
  (all but ids and timings);
* a killed job interrupts its server-side Spark job; an unreachable server fails the task in bounded time
  naming the connection, with nothing written.

A handful of runs (CI budget): one Connect DAG run, one spark-submit task, one killed job, one failed task.
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
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from connect_fixtures import connect_server, connect_sql  # noqa: F401  (a fixture)
from pipeline_expectations import (
    assert_xcom_equals_results_table,
    decision_by_hand,
    delta_rows,
    expected_day,
    interval,
)

from airflow_dq_contracts.engine.connect_session import with_token
from airflow_dq_contracts.hooks.spark_connect import (
    SESSION_CONF_ENV,
    TOKEN_ENV,
    ContractConnectHook,
    connect_target,
)
from airflow_dq_contracts.version_compat import AirflowException

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

DAY = dt.date(2024, 5, 2)
# Not the job's: what differs between two evaluations of the same data by construction.
RUN_FIELDS = {"run_id", "evaluated_at", "task_id", "airflow_run_id", "dag_id"}


def _connection(server: Any, **extra: Any) -> str:
    return json.dumps(server.airflow_connection(**extra))


@pytest.fixture(scope="module")
def env(airflow_db, connect_server, tmp_path_factory):  # noqa: F811 - imported fixtures
    """Warehouse, Delta jars, the example DAGs; ``spark_default`` is the Connect server, ``spark_local`` local[2]."""
    root = tmp_path_factory.mktemp("connect")
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(root / "warehouse"))
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / "job-cache"))
    patch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", _connection(connect_server))
    patch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    patch.setenv(
        "AIRFLOW_CONN_SPARK_CONNECT_DOWN",
        json.dumps(
            {"conn_type": "spark_connect", "host": "127.0.0.1", "port": _dead_port(), "extra": {"connect_timeout": 3}}
        ),
    )
    use_cached_delta_jars(patch, root)
    install_example_dags(patch)
    yield root / "warehouse"
    patch.undo()


def _dead_port() -> int:
    from cluster_fixtures import free_port

    return free_port()  # free a moment ago: nothing listens there


@pytest.fixture(scope="module")
def connect_run(env):
    """The example pipeline, outcome quarantine, its check task through Spark Connect (one dag.test)."""
    from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / "dq_orders_pipeline.py"), include_examples=False)
    assert not bag.import_errors, bag.import_errors
    states, dag_run = run_dag(bag.dags["dq_orders_pipeline"], run_conf={"outcome": "quarantine"}, **interval(DAY))
    return states, dag_run, xcom_value(dag_run, "check_orders")


def test_example_dag_runs_its_check_through_spark_connect(env, connect_run):
    states, dag_run, summary = connect_run
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
    rows = assert_xcom_equals_results_table(summary, env)
    expected = expected_day("quarantine", DAY)
    bad = {r["order_id"] for r in expected if "@" not in r["email"]}
    assert summary["decision"] == decision_by_hand(rows) == "quarantine"
    assert summary["row_count"] == len(expected)
    quarantined = delta_rows(env / "dq_quarantine" / "orders", "_dq_run_id", summary["run_id"])
    assert {r["order_id"] for r in quarantined} == bad
    valid = delta_rows(env / "valid" / "orders", "_dq_run_id", summary["run_id"])
    assert len(valid) + len(quarantined) == len(expected)
    # The worker process never opened a Connect session: a later spark-submit or local session is unaffected.
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ


def test_spark_submit_and_spark_connect_give_the_same_rows(env, connect_run):
    """The same contract on the same silver data through spark-submit: identical rows but ids and timings."""
    _, _, by_connect = connect_run
    silver, valid = env / "silver" / "orders", env / "valid_submit" / "orders"
    dag = install_dag(
        f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_dq_contracts.operators import ContractCheckOperator
        with DAG("dq_connect_vs_submit", schedule=None, start_date=dt.datetime(2024, 1, 1)) as dag:
            ContractCheckOperator(
                task_id="check_orders", contract="contracts/orders.yaml", conn_id="spark_local",
                input_path={str(silver)!r}, filter="order_date = '{DAY}'",
                results_table={str(env / "results_submit")!r}, quarantine_table={str(env / "quarantine_submit")!r},
                valid_table={str(valid)!r}, fail_on_gate=False,
            )
        """
    )
    states, dag_run = run_dag(dag, **interval(DAY))
    assert states == {"check_orders": "success"}
    by_submit = xcom_value(dag_run, "check_orders")

    def comparable(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        # evaluated_from says how a value was computed, not what it is (compared on its own below).
        return {
            r["check_id"]: {k: v for k, v in r.items() if k not in RUN_FIELDS | {"evaluated_from"}} for r in records
        }

    submit_rows = delta_rows(env / "results_submit", "run_id", by_submit["run_id"])
    connect_rows = delta_rows(env / "dq_results", "run_id", by_connect["run_id"])
    assert len(submit_rows) == len(connect_rows) == len(by_connect["checks"])
    assert comparable(submit_rows) == comparable(connect_rows)
    # On Connect the log is read at the location the server's DESCRIBE DETAIL gives (here visible to the job,
    # the same table id): the checks the log answers on spark-submit it answers on Connect too (#37).
    assert {r["check_id"]: r["evaluated_from"] for r in connect_rows} == {
        r["check_id"]: r["evaluated_from"] for r in submit_rows
    }
    assert "statistics" in {r["evaluated_from"] for r in connect_rows}
    assert by_submit["decision"] == by_connect["decision"]

    def rows_of(table: Path, run_id: str) -> list[dict[str, Any]]:
        kept = [
            {k: v for k, v in r.items() if k not in ("_dq_run_id", "_dq_quarantined_at")}
            for r in delta_rows(table, "_dq_run_id", run_id)
        ]
        return sorted(kept, key=lambda r: r["order_id"])

    assert rows_of(env / "quarantine_submit", by_submit["run_id"]) == rows_of(
        env / "dq_quarantine" / "orders", by_connect["run_id"]
    )
    assert len(rows_of(valid, by_submit["run_id"])) == len(rows_of(env / "valid" / "orders", by_connect["run_id"]))


def test_unreachable_server_fails_the_task_naming_the_connection(env):
    results = env / "results_down"
    dag = install_dag(
        f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_dq_contracts.operators import ContractCheckOperator
        with DAG("dq_connect_down", schedule=None, start_date=dt.datetime(2024, 1, 1)) as dag:
            ContractCheckOperator(
                task_id="check_orders", contract="contracts/orders.yaml", conn_id="spark_connect_down",
                input_path={str(env / "silver" / "orders")!r}, results_table={str(results)!r},
                quarantine_table={str(env / "quarantine_down")!r}, fail_on_gate=False,
            )
        """
    )
    from airflow_dq_contracts.operators import ContractCheckOperator

    errors: list[BaseException] = []
    original = ContractCheckOperator.execute

    def watched(self, context):
        try:
            return original(self, context)
        except BaseException as exc:
            errors.append(exc)
            raise

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ContractCheckOperator, "execute", watched)
        states, _ = run_dag(dag, **interval(DAY))
    assert states == {"check_orders": "failed"}
    message = str(errors[0])
    assert "spark_connect_down" in message and "did not answer within 3 s" in message, message
    assert not results.exists() and not (env / "quarantine_down").exists()


def test_a_killed_job_interrupts_its_server_side_spark_job(env, connect_server, tmp_path):  # noqa: F811
    """on_kill while the job's Spark job runs on the server: the server's job ends (interrupted), not the client only."""
    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.runspec import RunSpec

    contract_text = (
        "name: endless\n"
        "dataset: {table: default.dq_endless}\n"
        "columns:\n"
        "  - name: id\n"
        "    type: long\n"
        "    checks: [{name: id duplicates, type: duplicates, severity: P1}]\n"
    )
    # A persistent view over ten billion generated rows: its uniqueness pass runs for many minutes here.
    # Created from a process of its own: this one never opens a Connect session (environment hygiene).
    connect_sql(connect_server.url, "CREATE OR REPLACE VIEW default.dq_endless AS SELECT id FROM range(10000000000)")
    contract = load_contract(contract_text)
    spec = RunSpec.for_contract(
        contract,
        contract_text=contract_text,
        run_id="dq-kill-test",
        results_table=str(tmp_path / "results"),
        quarantine_table=str(tmp_path / "quarantine"),
    )
    hook = ContractConnectHook(conn_id="spark_default", application_args=spec.job_arguments().arguments)
    outcome: list[BaseException] = []
    runner = threading.Thread(target=lambda: _record(hook.submit_job, outcome), daemon=True)
    runner.start()
    deadline = time.monotonic() + 300
    while not connect_server.running_jobs():
        assert runner.is_alive(), f"the job ended before its Spark job ran: {outcome}"
        assert time.monotonic() < deadline, "the server never ran the job's Spark job"
        time.sleep(0.5)
    hook.on_kill()
    runner.join(timeout=120)
    assert not runner.is_alive()
    assert outcome and "stopped" in str(outcome[0]), outcome
    deadline = time.monotonic() + 120
    while connect_server.running_jobs():  # the interrupt reaches the executors' tasks asynchronously
        assert time.monotonic() < deadline, (
            f"the server still runs the killed job's Spark job: {connect_server.running_jobs()}"
        )
        time.sleep(0.5)
    assert not (tmp_path / "results").exists()


def _last_committer(table: Path) -> str:
    """Who wrote the table's newest commit: ``delta-rs`` or ``spark`` (from its ``commitInfo``)."""
    log = sorted((table / "_delta_log").glob("*.json"))[-1]
    for line in log.read_text().splitlines():
        info = json.loads(line).get("commitInfo")
        if info is not None:
            if str(info.get("clientVersion", "")).startswith("delta-rs"):
                return "delta-rs"
            if "Apache-Spark" in str(info.get("engineInfo", "")):
                return "spark"
            return f"unknown: {info}"
    return "no commitInfo"


def _record(action: Any, outcome: list[BaseException]) -> None:
    try:
        action()
    except BaseException as exc:  # noqa: BLE001 - the test reads what the job raised
        outcome.append(exc)


# --------------------------------------------------------------------------------------- plain


def test_the_connection_becomes_a_url_without_its_token():
    target = connect_target("sc://dbc.example.com", 443, "ann", "s3cret", {"use_ssl": True, "connect_timeout": 12})
    assert target.url == "sc://dbc.example.com:443/;user_id=ann;use_ssl=true"
    assert target.token == "s3cret" and target.connect_timeout == 12.0
    assert "s3cret" not in repr(target)
    assert connect_target("h", None, extra={"token": "t"}).token == "t"  # extra token, as the brief's layout


def test_databricks_style_endpoints_get_their_headers_in_the_url():
    """cluster_id / session_id / user_agent / headers become URL parameters PySpark sends as gRPC metadata."""
    from pyspark.sql.connect.client import DefaultChannelBuilder

    session = "6f1c2b7e-3d4a-4c5b-9e8f-0a1b2c3d4e5f"
    target = connect_target(
        "https://dbc-1.cloud.databricks.com",
        443,
        password="dapi-s3cret",
        extra={"use_ssl": True, "cluster_id": "0123-abc", "session_id": session, "headers": {"X-Team": "dq ops"}},
    )
    assert "dapi-s3cret" not in target.url
    builder = DefaultChannelBuilder(target.url)
    assert builder.session_id == session and builder.secure
    assert dict(builder.metadata()) == {"x-databricks-cluster-id": "0123-abc", "x-team": "dq ops"}
    # The job adds the token (from its environment) to exactly such URLs: PySpark reads it back.
    for url in (target.url, connect_target("h", 15002).url, connect_target("h", 15002, "ann").url):
        assert DefaultChannelBuilder(with_token(url, target.token)).token == "dapi-s3cret", url
    with pytest.raises(AirflowException, match="'dbx'.*session_id must be a UUID"):
        connect_target("h", 1, extra={"session_id": "nope"}, conn_id="dbx")
    with pytest.raises(AirflowException, match="'dbx'.*'token' is not a header"):
        connect_target("h", 1, extra={"headers": {"token": "x"}}, conn_id="dbx")
    with pytest.raises(AirflowException, match="headers must be a mapping"):
        connect_target("h", 1, extra={"headers": ["x"]}, conn_id="dbx")


def test_the_job_gets_the_token_by_environment_and_no_connect_leftovers(monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    monkeypatch.setenv("SPARK_REMOTE", "sc://elsewhere")
    hook = ContractConnectHook(conn_id="unused", application_args=["--spec=abc"])
    target = connect_target("h", 15002, password="s3cret")
    command, environment = hook.command(target), hook.environment(target)
    assert not any("s3cret" in part for part in command)
    assert "--remote=sc://h:15002/" in command
    assert environment[TOKEN_ENV] == "s3cret"
    assert "SPARK_CONNECT_MODE_ENABLED" not in environment and "SPARK_REMOTE" not in environment
    # The operator's spark_conf: to the job by environment (never argv); a stale one is not inherited.
    from airflow_dq_contracts.engine import connect_session

    assert SESSION_CONF_ENV == connect_session.SESSION_CONF_ENV
    monkeypatch.setenv(SESSION_CONF_ENV, '{"spark.sql.shuffle.partitions": "99"}')
    assert SESSION_CONF_ENV not in hook.environment(target)
    tuned = ContractConnectHook(
        conn_id="unused", application_args=["--spec=abc"], session_conf={"spark.dqcontracts.passParallelism": 2}
    )
    environment = tuned.environment(target)
    assert not any("passParallelism" in part for part in tuned.command(target))
    monkeypatch.setenv(SESSION_CONF_ENV, environment[SESSION_CONF_ENV])
    assert connect_session.session_conf_from_env() == {"spark.dqcontracts.passParallelism": "2"}
    monkeypatch.setenv(SESSION_CONF_ENV, "not json")
    assert connect_session.session_conf_from_env() == {}


def test_cli_run_remote_gives_the_task_s_rows(env, connect_run, connect_server, tmp_path):  # noqa: F811
    """``dq-contracts run --remote``: the same rows as the task through Connect; an unreachable server, exit 4."""
    import subprocess
    import sys

    _, _, by_task = connect_run
    cli = [sys.executable, "-m", "airflow_dq_contracts.cli.main", "run", str(DAGS_FOLDER / "contracts" / "orders.yaml")]
    common = ["--input", str(env / "silver" / "orders"), "--filter", f"order_date = '{DAY}'"]
    common += ["--reference-time", by_task["checks"][0]["reference_time"], "--results-table", str(tmp_path / "r")]
    common += ["--quarantine-table", str(tmp_path / "q"), "--json-out", "-", "-q"]
    clean = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    done = subprocess.run(
        [*cli, *common, "--remote", connect_server.url], capture_output=True, text=True, env=clean, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]  # quarantine exits 0
    summary = json.loads(done.stdout)
    assert summary["decision"] == by_task["decision"]
    ignored = RUN_FIELDS | {"reference_time"}
    assert {c["check_id"]: {k: v for k, v in c.items() if k not in ignored} for c in summary["checks"]} == {
        c["check_id"]: {k: v for k, v in c.items() if k not in ignored} for c in by_task["checks"]
    }
    # Without --shared-storage the server commits everything (a path is the server's).
    assert _last_committer(tmp_path / "r") == _last_committer(tmp_path / "dq_contracts") == "spark"
    # With it (what the operator's transport passes), this client commits the results and the registry
    # with delta-rs: the same rows, a new run appended, the registry row of the contract version updated.
    # --conf: the session's runtime settings are set (the interpreter's limit to 0: codegen stays), a
    # server setting is refused with a note naming it, and the run goes on.
    settings = ["--conf", "spark.dqcontracts.interpretedInputBytes=0", "--conf", "spark.executor.memory=1g"]
    settings += ["--conf", "spark.sql.shuffle.partitions=s3cret-not-a-number"]  # refused, quoting its value
    shared = subprocess.run(
        [*cli, *[a for a in common if a != "-q"], "--remote", connect_server.url, "--shared-storage", *settings],
        capture_output=True,
        text=True,
        env=clean,
        timeout=600,
    )
    assert shared.returncode == 0, shared.stderr[-3000:]
    assert "Spark conf spark.executor.memory: not set on the Spark Connect session" in shared.stderr
    assert "Spark conf spark.sql.shuffle.partitions: not set" in shared.stderr
    assert "s3cret" not in shared.stderr  # the refusal quoted the value; the note does not
    assert "small input" in shared.stderr and "interpreter" not in shared.stderr, shared.stderr[-3000:]
    again = json.loads(shared.stdout)
    assert again["run_id"] != summary["run_id"]
    assert {c["check_id"]: {k: v for k, v in c.items() if k not in ignored} for c in again["checks"]} == {
        c["check_id"]: {k: v for k, v in c.items() if k not in ignored} for c in summary["checks"]
    }
    assert _last_committer(tmp_path / "r") == _last_committer(tmp_path / "dq_contracts") == "delta-rs"
    stored = delta_rows(tmp_path / "r", "run_id", again["run_id"])
    assert sorted(r["check_id"] for r in stored) == sorted(c["check_id"] for c in again["checks"])
    registry = delta_rows(tmp_path / "dq_contracts", "contract_name", "orders")
    assert len(registry) == 1 and registry[0]["last_run_id"] == again["run_id"]
    down = subprocess.run(
        [*cli, *common, "--remote", f"sc://127.0.0.1:{_dead_port()}", "--connect-timeout", "2"],
        capture_output=True,
        text=True,
        env=clean,
        timeout=300,
    )
    assert down.returncode == 4 and "did not answer within 2 s" in down.stderr, down.stderr[-2000:]
    assert "Traceback" not in down.stderr
