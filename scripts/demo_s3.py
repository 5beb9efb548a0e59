"""``./dev demo --storage s3``: the orders pipeline (sensor → check → branch) with every table on a local S3.

A SeaweedFS server (``scripts/s3_server.py``, the tests' launcher) is started on 127.0.0.1 and
stopped at the end. The credentials exist only in an Airflow connection defined the Airflow way,
``AIRFLOW_CONN_DQ_LAKE`` (type ``aws``: login, password, extra ``endpoint_url``); the process has
no ``AWS_*`` variable. The day's generated orders (``dags_examples/orders_data.py``, the example
pipeline's generator, with the defects of the chosen outcome) are written to
``s3://lake/silver/orders``; then a DAG of the example pipeline's shape runs with ``dag.test()``:
``FreshnessSensor`` and ``ContractCheckOperator`` (spark-submit on ``local[*]``, the s3a filesystem's
jars added, the keys in its process environment only) with ``storage_conn_id="dq_lake"``, and
``ContractBranchOperator``. The results, quarantine and valid rows are read back from S3 and printed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from s3_server import S3Server

from airflow_dq_contracts.storage.s3 import S3_ENV_NAMES

ROOT = Path(__file__).resolve().parent.parent
CONN_ID = "dq_lake"
DAG_ID = "dq_orders_on_s3"
CONTRACT = ROOT / "dags_examples" / "contracts" / "orders.yaml"

DAG_SOURCE = """
import datetime as dt
from airflow.sdk import DAG, task
from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
from airflow_dq_contracts.sensors import FreshnessSensor

LAKE = {lake!r}
with DAG({dag_id!r}, schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
    wait = FreshnessSensor(task_id="wait_for_fresh_orders", path=f"{{LAKE}}/silver/orders", storage_conn_id={conn!r},
                           timestamp_column="created_at", max_age_hours=4,
                           reference_time="{{{{ data_interval_end }}}}", poke_interval=5, timeout=600)
    check = ContractCheckOperator(
        task_id="check_orders", contract={contract!r}, storage_conn_id={conn!r},
        input_path=f"{{LAKE}}/silver/orders", input_format="delta",
        filter="order_date = '{day}'",
        results_table=f"{{LAKE}}/dq/dq_results", quarantine_table=f"{{LAKE}}/dq/dq_quarantine/orders",
        valid_table=f"{{LAKE}}/valid/orders", fail_on_gate=False)
    route = ContractBranchOperator(task_id="route_orders", check_task_id="check_orders", pass_task_ids=["publish"],
                                   quarantine_task_ids=["quarantine_then_publish"], gate_task_ids=["alert"])

    @task
    def publish():
        return "published"

    @task
    def quarantine_then_publish():
        return "the valid rows are published; the rest wait in quarantine"

    @task
    def alert():
        return "gated: nothing published"

    wait >> check >> route >> [publish(), quarantine_then_publish(), alert()]
"""


def dags_folder(work: Path) -> Path:
    """This demo's own dags folder: ``dag.test()`` runs only a DAG of the dags folder (serialised from
    there), so the caller sets ``AIRFLOW__CORE__DAGS_FOLDER`` to it before anything imports Airflow
    (which reads its configuration once) — before the metadata database is migrated, too."""
    return work / "s3_dags"


def run_on_s3(
    outcome: str,
    day: dt.date,
    progress: Any,
    quiet: Callable[[Path], Any],
    work: Path,
    outcome_of: Callable[[Any, str], tuple[dict[str, str], dict | None]],
    expected_path: dict[str, str],
) -> bool:
    """Start the S3 server, run the S3 pipeline once for ``outcome``, print what it read back, stop the server."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake

    sys.path.insert(0, str(ROOT / "dags_examples"))
    import orders_data

    data = work / "s3"
    dags = dags_folder(work)
    shutil.rmtree(data, ignore_errors=True)
    for name in S3_ENV_NAMES:  # the connection, and only it, carries the credentials
        os.environ.pop(name, None)
    server = S3Server(data)
    with progress(f"start a local S3 server (SeaweedFS, data in {data.relative_to(ROOT)})"):
        server.start()
    try:
        settings = server.settings
        os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = json.dumps(
            {
                "conn_type": "aws",
                "login": settings.access_key_id,
                "password": settings.secret_access_key,
                "extra": {"endpoint_url": settings.endpoint_url, "region_name": "us-east-1"},
            }
        )
        options = settings.delta_options()  # the demo's own read-back; the DAG uses the connection
        lake = f"s3://{server.bucket}"
        with progress(f"write the day's orders ({outcome}) to {lake}/silver/orders"):
            rows = orders_data.generate_orders(orders_data.spec_for(outcome, day))
            write_deltalake(
                f"{lake}/silver/orders",
                orders_data.arrow_table(rows),
                mode="overwrite",
                partition_by=["order_date"],
                storage_options=options,
            )
        dags.mkdir(parents=True, exist_ok=True)
        (dags / f"{DAG_ID}.py").write_text(
            DAG_SOURCE.format(lake=lake, dag_id=DAG_ID, conn=CONN_ID, contract=str(CONTRACT), day=day.isoformat())
        )
        from airflow.models.dagbag import DagBag

        dag = DagBag(dag_folder=str(dags), include_examples=False).dags[DAG_ID]
        logical = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
        log_file = work / "logs" / f"demo-s3-{outcome}.log"
        with (
            progress(f"run {DAG_ID} (storage_conn_id={CONN_ID!r}; log: {log_file.relative_to(ROOT)})"),
            quiet(log_file),
        ):
            dag_run = dag.test(logical_date=logical, run_after=logical)
        states, summary = outcome_of(dag_run, "check_orders")
        print()
        print("  tasks: " + ", ".join(f"{task}={state}" for task, state in sorted(states.items())))
        if not summary:
            print(f"  no summary from check_orders — see {log_file}")
            return False
        print(f"  decision: {summary['decision'].upper()}   (run_id {summary['run_id']}, {summary['row_count']} rows)")
        for name, path, column in (
            ("results", f"{lake}/dq/dq_results", "run_id"),
            ("quarantine", f"{lake}/dq/dq_quarantine/orders", "_dq_run_id"),
            ("valid", f"{lake}/valid/orders", "_dq_run_id"),
        ):
            if not DeltaTable.is_deltatable(path, options):
                print(f"  {name:10s} {path}: no table")
                continue
            table = DeltaTable(path, storage_options=options).to_pyarrow_table()
            mine = table.filter(pc.equal(table[column], summary["run_id"]))
            print(f"  {name:10s} {path}: {mine.num_rows} rows of this run (read back from S3)")
        secret_seen = settings.secret_access_key in log_file.read_text(errors="replace")
        print(f"  the secret in the task log: {'YES (a leak!)' if secret_seen else 'no'}")
        routed = states.get(expected_path[outcome]) == "success"
        print(f"  branch taken: {expected_path[outcome]} ({'as expected' if routed else 'UNEXPECTED'})")
        print()
        return routed and not secret_seen
    finally:
        with progress("stop the S3 server"):
            server.stop()
