"""The orders pipeline end to end on S3: sensor → check → branch, every table on the tests' S3 server,
the credentials only in an ``aws`` Airflow connection named by ``storage_conn_id``.

A real ``dag.test()``: the FreshnessSensor reads the S3 input with delta-rs, ContractCheckOperator
submits the packaged job with spark-submit (``local[*]``; the s3a filesystem's jars added because the
locations are on S3; the keys in spark-submit's process environment only), the job reads the input
through ``s3a://`` with Spark's own Delta reader (the driver-read threshold lowered to 1 byte: the
big-table path), pinned at the version the run found — its ``read:`` line says which reader, at which
version — writes quarantine and valid rows with Spark and the results with delta-rs, and
ContractBranchOperator routes on the decision. Everything is read back from S3 with delta-rs and
compared with expectations computed here from the generated rows (``tests/pipeline_expectations.py``).
The secret must appear nowhere: not in the task log, the XCom values, the results rows, nor on any
process's command line while the run goes on (``/proc/*/cmdline``, sampled throughout).
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  — must come before anything that imports airflow
from airflow_fixtures import airflow_db, install_dag, run_dag, xcom_value  # noqa: F401

import datetime as dt
import json
import threading
from pathlib import Path

import pyarrow.compute as pc
import pytest
from pipeline_expectations import decision_by_hand, expected_day, interval, iso_z, orders_data
from s3_fixtures import S3Place

from airflow_dq_contracts.storage.s3 import S3_ENV_NAMES

CONTRACT = Path(__file__).resolve().parent.parent / "dags_examples" / "contracts" / "orders.yaml"
DAY = dt.date(2024, 5, 2)


def _rows_of(location: str, options: dict, column: str, value: object) -> list[dict]:
    from deltalake import DeltaTable

    table = DeltaTable(location, storage_options=options).to_pyarrow_table()
    return table.filter(pc.equal(table[column], value)).to_pylist()


class CommandLines:
    """Samples every process's ``/proc/<pid>/cmdline`` while a run goes on: was ``needle`` ever there?"""

    def __init__(self, needle: str) -> None:
        self.needle, self.found, self.saw_spark_submit = needle.encode(), [], False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    line = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if b"org.apache.spark.deploy.SparkSubmit" in line or b"spark-submit" in line:
                    self.saw_spark_submit = True
                if self.needle in line:
                    self.found.append(line.replace(b"\0", b" ").decode(errors="replace"))
            self._stop.wait(0.2)

    def __enter__(self) -> CommandLines:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.slow
def test_pipeline_on_s3_with_credentials_from_an_aws_connection_only(s3: S3Place, monkeypatch, capfd, airflow_db):  # noqa: F811
    from deltalake import write_deltalake

    options = s3.settings.delta_options()
    secret = s3.settings.secret_access_key
    assert secret
    # The worker has no AWS_* of its own: only the connection can make this work.
    for name in S3_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    connection = {
        "conn_type": "aws",
        "login": s3.settings.access_key_id,
        "password": secret,
        "extra": {"endpoint_url": s3.settings.endpoint_url, "region_name": "us-east-1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_S3_PIPELINE", json.dumps(connection))

    rows = orders_data.generate_orders(orders_data.spec_for("quarantine", DAY))
    silver, results = s3.url("silver/orders"), s3.url("dq/dq_results")
    quarantine, valid = s3.url("dq/dq_quarantine/orders"), s3.url("valid/orders", scheme="s3a")
    write_deltalake(
        silver, orders_data.arrow_table(rows), mode="overwrite", partition_by=["order_date"], storage_options=options
    )

    dag = install_dag(f"""
        import datetime as dt
        from airflow.sdk import DAG, task
        from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
        from airflow_dq_contracts.sensors import FreshnessSensor

        with DAG("dq_orders_on_s3", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
            wait = FreshnessSensor(task_id="wait_for_fresh_orders", path={silver!r}, storage_conn_id="lake_s3_pipeline",
                                   timestamp_column="created_at", max_age_hours=4,
                                   reference_time="{{{{ data_interval_end }}}}", poke_interval=1, timeout=300)
            check = ContractCheckOperator(
                task_id="check_orders", contract={str(CONTRACT)!r}, storage_conn_id="lake_s3_pipeline",
                input_path={silver!r}, input_format="delta", filter="order_date = '{DAY.isoformat()}'",
                results_table={results!r}, quarantine_table={quarantine!r}, valid_table={valid!r},
                spark_conf={{"spark.dqcontracts.driverReadBytes": "1"}}, fail_on_gate=False, retries=0)
            route = ContractBranchOperator(task_id="route_orders", check_task_id="check_orders",
                                           pass_task_ids=["publish"], quarantine_task_ids=["quarantine_then_publish"],
                                           gate_task_ids=["alert"])

            @task
            def publish():
                return "published"

            @task
            def quarantine_then_publish():
                return "quarantined"

            @task
            def alert():
                return "alerted"

            wait >> check >> route >> [publish(), quarantine_then_publish(), alert()]
    """)
    from deltalake import DeltaTable

    version = DeltaTable(silver, storage_options=options).version()
    with CommandLines(secret) as command_lines:
        states, dag_run = run_dag(dag, **interval(DAY))
    output = capfd.readouterr()
    log = output.out + output.err
    assert states == {
        "wait_for_fresh_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "publish": "skipped",
        "quarantine_then_publish": "success",
        "alert": "skipped",
    }, log[-4000:]
    # the big-table path: Spark's Delta reader read the input, at the version it pinned (the table's)
    read = [line for line in log.splitlines() if "[dq-contracts] read: " in line]
    assert len(read) == 1 and f"spark reader at version {version})" in read[0], read or log[-4000:]

    summary = xcom_value(dag_run, "check_orders")
    expected = [r for r in expected_day("quarantine", DAY)]
    bad = {r["order_id"] for r in expected if "@" not in r["email"]}
    assert len(bad) == 3
    # results: read back from S3 with delta-rs; every XCom record is exactly one row of the run
    stored = _rows_of(results, options, "run_id", summary["run_id"])
    for row in stored:
        row["evaluated_at"], row["reference_time"] = iso_z(row["evaluated_at"]), iso_z(row["reference_time"])
    by_id = {row["check_id"]: row for row in stored}
    assert len(by_id) == len(stored) and sorted(by_id) == sorted(c["check_id"] for c in summary["checks"])
    for record in summary["checks"]:
        assert record == by_id[record["check_id"]]
    assert summary["decision"] == decision_by_hand(stored) == "quarantine"
    assert by_id["email/email_format_is_valid"]["failed_rows"] == len(bad)
    # quarantine and valid: written by Spark through s3a, read back from S3
    quarantined = _rows_of(quarantine, options, "_dq_run_id", summary["run_id"])
    assert sorted(r["order_id"] for r in quarantined) == sorted(bad)
    kept = _rows_of(valid.replace("s3a://", "s3://"), options, "_dq_run_id", summary["run_id"])
    assert sorted(r["order_id"] for r in kept) == sorted(r["order_id"] for r in expected if r["order_id"] not in bad)

    # the secret nowhere: task log, XCom, results rows, any command line during the run
    assert command_lines.saw_spark_submit, "the /proc sampler never saw the job's spark-submit"
    assert command_lines.found == []
    assert secret not in log
    for task_id in ("wait_for_fresh_orders", "check_orders", "route_orders"):
        assert secret not in json.dumps(xcom_value(dag_run, task_id), default=str)
    assert secret not in json.dumps(stored, default=str)
