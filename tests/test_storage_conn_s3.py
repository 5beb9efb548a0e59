"""``storage_conn_id`` against a real S3-compatible server (SeaweedFS on 127.0.0.1, one per test session: the ``s3`` fixture of tests/s3_fixtures.py).

The credentials exist only in an ``aws`` Airflow connection (``AIRFLOW_CONN_*``, the Amazon provider's
fields). Tables are written with delta-rs under the server's own keys; what the sensors must find is
computed here from the rows written. Covered: both sensors poking, a deferred sensor whose real trigger
resolves the connection in the (``dag.test``) triggerer with only the connection's name in the trigger
table, and a wrong secret — a task error naming the connection, no waiting, nothing written.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  — must come before anything that imports airflow
from airflow_fixtures import airflow_db, install_dag, run_dag, xcom_value  # noqa: F401

import asyncio
import datetime as dt
import json
import threading
import uuid

import pyarrow as pa
import pytest

from airflow_dq_contracts.sensors import CompletenessSensor, FreshnessSensor
from airflow_dq_contracts.store.delta import table_exists
from airflow_dq_contracts.triggers import DeltaFreshnessTrigger
from airflow_dq_contracts.version_compat import AirflowFailException

UTC = dt.timezone.utc
WRONG_SECRET = "wrong-secret-" + uuid.uuid4().hex


def now() -> dt.datetime:
    return dt.datetime.now(UTC)


def aws_connection(monkeypatch, name: str, settings, *, secret: str | None = None) -> str:
    """An ``aws`` connection ``name`` for the server (``AIRFLOW_CONN_<NAME>``); returns its id."""
    conn = {
        "conn_type": "aws",
        "login": settings.access_key_id,
        "password": secret or settings.secret_access_key,
        "extra": {"endpoint_url": settings.endpoint_url, "region_name": settings.region or "us-east-1"},
    }
    monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(conn))
    return name


def write_events(location: str, options: dict, timestamps: list[dt.datetime]) -> None:
    from deltalake import write_deltalake

    table = pa.table(
        {
            "id": pa.array(range(len(timestamps)), pa.int64()),
            "created_at": pa.array(timestamps, pa.timestamp("us", "UTC")),
        }
    )
    write_deltalake(location, table, mode="append", storage_options=options)


def write_days(location: str, options: dict, days: list[dt.date]) -> None:
    from deltalake import write_deltalake

    table = pa.table({"amount": pa.array([1.0] * len(days)), "order_date": pa.array(days, pa.date32())})
    write_deltalake(location, table, mode="append", partition_by=["order_date"], storage_options=options)


def test_sensors_poke_an_s3_table_with_credentials_from_a_connection_only(s3, monkeypatch):
    options = s3.settings.delta_options()
    events = s3.url(f"poke/events-{uuid.uuid4().hex[:8]}")
    newest = now() - dt.timedelta(minutes=20)
    write_events(events, options, [newest - dt.timedelta(hours=5), newest])
    orders = s3.url(f"poke/orders-{uuid.uuid4().hex[:8]}")
    reference = dt.datetime(2024, 3, 10, 12, tzinfo=UTC)
    present = [dt.date(2024, 3, d) for d in (4, 5, 7, 9, 10)]
    write_days(orders, options, present)
    # The worker's own environment has no AWS credentials: only the connection can open the tables.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    conn_id = aws_connection(monkeypatch, "lake_s3_poke", s3.settings)

    fresh = FreshnessSensor(task_id="fresh", path=events, timestamp_column="created_at", max_age_hours=1,
                            storage_conn_id=conn_id).poke({})  # fmt: skip
    assert fresh.is_done
    measured = fresh.xcom_value["measurement"]["value"]
    assert dt.datetime.fromisoformat(measured.replace("Z", "+00:00")) == newest  # max of the two rows written
    assert 0.3 < fresh.xcom_value["age_hours"] < 0.5  # 20 minutes ago, give or take the test's own time

    window = [reference.date() - dt.timedelta(days=n) for n in range(0, 7)]  # lookback 6 days, both ends
    expected_missing = sorted(d.isoformat() for d in window if d not in present)
    complete = CompletenessSensor(task_id="complete", path=orders, partition_column="order_date",
                                  granularity="daily", lookback_days=6, reference_time=reference.isoformat(),
                                  storage_conn_id=conn_id).poke({})  # fmt: skip
    assert not complete.is_done
    assert complete.xcom_value["missing_labels"] == expected_missing
    assert WRONG_SECRET not in json.dumps(complete.xcom_value) and s3.settings.secret_access_key not in json.dumps(
        [fresh.xcom_value, complete.xcom_value]
    )

    # Without the connection the same table cannot be read (the worker has no credentials of its own).
    with pytest.raises(AirflowFailException):
        FreshnessSensor(task_id="bare", path=events, timestamp_column="created_at", max_age_hours=1).poke({})


def test_a_wrong_secret_fails_at_once_naming_the_connection(s3, monkeypatch):
    options = s3.settings.delta_options()
    events = s3.url(f"wrong/events-{uuid.uuid4().hex[:8]}")
    write_events(events, options, [now()])
    conn_id = aws_connection(monkeypatch, "lake_s3_wrong", s3.settings, secret=WRONG_SECRET)
    # fail_on_missing_table=False: a wrong secret must not be mistaken for a table still to come
    sensor = FreshnessSensor(task_id="wrong", path=events, timestamp_column="created_at", max_age_hours=1,
                             storage_conn_id=conn_id, fail_on_missing_table=False)  # fmt: skip
    with pytest.raises(AirflowFailException, match="storage connection 'lake_s3_wrong' .*is refused at") as info:
        sensor.poke({})
    assert WRONG_SECRET not in str(info.value)

    trigger = DeltaFreshnessTrigger(path=events, timestamp_column="created_at", max_age_hours=1,
                                    fail_on_missing_table=False, poke_interval=0.2, storage_conn_id=conn_id)  # fmt: skip

    async def first_event():
        async for event in trigger.run():
            return event

    event = asyncio.run(asyncio.wait_for(first_event(), 60))
    assert event.payload["status"] == "error", event.payload
    assert "storage connection 'lake_s3_wrong' is refused at" in event.payload["message"]
    assert WRONG_SECRET not in json.dumps(event.payload)


def _trigger_kwargs(path: str) -> dict | None:
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        for trigger in session.scalars(select(Trigger)).all():
            if trigger.classpath.endswith("DeltaFreshnessTrigger") and trigger.kwargs.get("path") == path:
                return dict(trigger.kwargs)
    return None


@pytest.mark.airflow
def test_deferred_sensor_on_s3_resolves_the_connection_in_the_triggerer(s3, monkeypatch, capfd, airflow_db):  # noqa: F811
    options = s3.settings.delta_options()
    late = s3.url(f"deferred/late-{uuid.uuid4().hex[:8]}")
    write_events(late, options, [now() - dt.timedelta(days=2)])  # stale until the trigger is waiting
    conn_id = aws_connection(monkeypatch, "lake_s3_deferred", s3.settings)
    wrong_id = aws_connection(monkeypatch, "lake_s3_deferred_wrong", s3.settings, secret=WRONG_SECRET)
    results = s3.url(f"deferred/dq_results-{uuid.uuid4().hex[:8]}")
    dag = install_dag(f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_dq_contracts.operators import ContractCheckOperator
        from airflow_dq_contracts.sensors import FreshnessSensor

        with DAG("dq_storage_conn_s3", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
            FreshnessSensor(task_id="late_deferred", path={late!r}, timestamp_column="created_at", max_age_hours=1,
                            storage_conn_id={conn_id!r}, deferrable=True, poke_interval=0.5, timeout=120)
            ContractCheckOperator(task_id="check_wrong_secret", storage_conn_id={wrong_id!r},
                                  contract={{"name": "orders", "columns": [{{"name": "id", "type": "long"}}]}},
                                  input_path={late!r}, results_table={results!r}, retries=0)
    """)
    written = {"done": False, "trigger": None}
    stop = threading.Event()

    def write_when_deferred() -> None:
        while not stop.is_set():
            try:
                kwargs = _trigger_kwargs(late)
                if kwargs is not None:
                    written["trigger"] = kwargs
                    write_events(late, options, [now()])
                    written["done"] = True
                    return
            except Exception:  # noqa: BLE001 - SQLite busy while dag.test writes: try again
                pass
            stop.wait(0.1)

    writer = threading.Thread(target=write_when_deferred, daemon=True)
    writer.start()
    try:
        start = now()
        states, dag_run = run_dag(dag, logical_date=start, run_after=start)
    finally:
        stop.set()
        writer.join()
    output = capfd.readouterr()
    assert written["done"], states
    assert states == {"late_deferred": "success", "check_wrong_secret": "failed"}
    # The trigger table holds the connection's name, never its credentials.
    stored = json.dumps(written["trigger"])
    assert written["trigger"]["storage_conn_id"] == conn_id
    assert s3.settings.secret_access_key not in stored and s3.settings.access_key_id not in stored
    value = xcom_value(dag_run, "late_deferred")
    assert value["passed"] is True and value["age_hours"] < 0.1
    # The check task failed before submitting anything: the error names the connection, nothing was written.
    log = output.out + output.err
    assert "storage connection 'lake_s3_deferred_wrong' (type aws) is refused at" in log
    assert not table_exists(results, options)
    for secret in (s3.settings.secret_access_key, WRONG_SECRET):
        assert secret not in log
        assert secret not in json.dumps(value)


def test_cli_history_and_report_on_s3_with_storage_options_over_the_environment(s3, tmp_path):
    """Keys in the standard environment, the endpoint only as ``--storage-option``: both are needed."""
    import os
    import subprocess
    import sys

    from deltalake import write_deltalake

    from airflow_dq_contracts.results import RESULT_COLUMNS, CheckResult
    from airflow_dq_contracts.store.results.driver_commits import arrow_schema, result_row

    results = s3.url("cli/dq_results")
    reference = dt.datetime(2024, 3, 1, tzinfo=UTC)
    runs = {"run-a": (True, True), "run-b": (True, False)}  # run → (volume passed, ids passed)
    records = []
    for offset, (run_id, outcomes) in enumerate(runs.items()):
        for check_id, passed in zip(("_table_/volume", "id/ids_present"), outcomes, strict=True):
            records.append(
                CheckResult(run_id=run_id, contract_name="orders", contract_version="1.0.0", dataset="orders",
                            check_id=check_id, check_name=check_id, check_type="row_count", column=None,
                            severity="P1", action="gate", validator="noop", metric_value=1.0,
                            status="passed" if passed else "failed", passed=passed, failed_rows=None, message="",
                            row_count=10, evaluated_at=reference + dt.timedelta(days=offset),
                            reference_time=reference + dt.timedelta(days=offset))
            )  # fmt: skip
    rows = pa.Table.from_pylist(
        [dict(zip([name for name, _ in RESULT_COLUMNS], result_row(r), strict=True)) for r in records],
        schema=arrow_schema(RESULT_COLUMNS),
    )
    write_deltalake(results, rows, partition_by=["contract_name"], storage_options=s3.settings.delta_options())

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": s3.settings.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.settings.secret_access_key})
    endpoint = ["--storage-option", f"AWS_ENDPOINT_URL={s3.settings.endpoint_url}", "--storage-option",
                "AWS_ALLOW_HTTP=true", "--storage-option", "AWS_REGION=us-east-1"]  # fmt: skip
    cli = [sys.executable, "-m", "airflow_dq_contracts.cli.main"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=300)

    without = run("history", "orders", "--results-table", results, "--json")
    assert without.returncode != 0  # the environment alone does not say where the server is
    history = run("history", "orders", "--results-table", results, "--json", *endpoint)
    assert history.returncode == 0, history.stderr
    checks = {c["check_id"]: c for c in json.loads(history.stdout)["checks"]}
    assert {k: (c["runs"], c["failures"]) for k, c in checks.items()} == {
        "_table_/volume": (2, 0),
        "id/ids_present": (2, 1),
    }
    report_url = s3.url("cli/reports/orders.html")
    report = run("report", "--results-table", results, "--contract", "orders", "--run-id", "run-b",
                 "-o", report_url, *endpoint)  # fmt: skip
    assert report.returncode == 0, report.stderr
    status, page = s3.server.get_object(report_url.split(f"s3://{s3.server.bucket}/", 1)[1])
    assert status == 200 and b"run-b" in page and b"id/ids_present" in page
    for done in (without, history, report):
        assert s3.settings.secret_access_key not in done.stdout + done.stderr


def test_a_hive_partitioned_parquet_folder_on_s3_is_read_with_the_connection(s3, monkeypatch, tmp_path):
    """Not a Delta table: the sensors fall back to listing the folders, with the connection's credentials."""
    import pyarrow.parquet as pq

    reference = dt.datetime(2024, 5, 10, 12, tzinfo=UTC)
    present = [dt.date(2024, 5, d) for d in (6, 7, 9, 10)]
    for day in present:  # files built locally, uploaded with the server's own signed PUT
        local = tmp_path / f"{day}.parquet"
        pq.write_table(pa.table({"amount": [1.0, 2.0]}), local)
        status = s3.server.put_object(f"{s3.prefix}/parquet_orders/order_date={day}/part-0.parquet", local.read_bytes())
        assert status == 200
    conn_id = aws_connection(monkeypatch, "lake_s3_parquet", s3.settings)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    value = CompletenessSensor(task_id="parquet", path=s3.url("parquet_orders"), partition_column="order_date",
                               granularity="daily", lookback_days=4, reference_time=reference.isoformat(),
                               storage_conn_id=conn_id).poke({}).xcom_value  # fmt: skip
    window = [reference.date() - dt.timedelta(days=n) for n in range(0, 5)]
    assert value["missing_labels"] == sorted(d.isoformat() for d in window if d not in present)

    wrong_id = aws_connection(monkeypatch, "lake_s3_parquet_wrong", s3.settings, secret=WRONG_SECRET)
    with pytest.raises(AirflowFailException, match="storage connection 'lake_s3_parquet_wrong' .*is refused at"):
        CompletenessSensor(task_id="parquet_wrong", path=s3.url("parquet_orders"), partition_column="order_date",
                           storage_conn_id=wrong_id).poke({})  # fmt: skip
