"""The transport seam (hooks/transport.py): a transport is chosen by the connection's type, and a new one
plugs in by registering it — the toy here runs the job in this process, through the operator's make_hook
and through a whole task run (``dag.test()``). docs/architecture.md's "Where to add … a transport" points here;
the other seams' toys are in tests/test_seams.py."""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import airflow_db, install_dag, run_dag, xcom_value  # noqa: F401  (airflow_db: fixture)

import contextlib
import io
import json
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.hooks import transport
from airflow_dq_contracts.hooks.contract_submit import ContractSubmitHook
from airflow_dq_contracts.hooks.errors import ContractJobError
from airflow_dq_contracts.hooks.spark_connect import ContractConnectHook
from airflow_dq_contracts.jobs import markers
from airflow_dq_contracts.jobs import run_contract as job
from airflow_dq_contracts.operators import ContractCheckOperator
from airflow_dq_contracts.runspec import RunSpec

TOY_TYPE = "dq-in-process"  # a URI scheme has no "_"; registered types match either spelling


class InProcessHook:
    """A toy transport: the job's entry called in this process (its session), its markers read from stdout."""

    def __init__(self, request: transport.JobRequest) -> None:
        self.request = request
        self.killed = False

    def submit_job(self) -> dict[str, Any] | None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            job.main(list(self.request.application_args))
        found = [m for m in map(markers.parse_marker, out.getvalue().splitlines()) if m]
        marker, payload = found[-1]
        if marker == markers.ERROR_MARKER:
            raise ContractJobError(payload["message"], kind=payload["kind"])
        return payload

    def on_kill(self) -> None:
        self.killed = True


@pytest.fixture
def toy_connection(monkeypatch):
    transport.register_transport(TOY_TYPE, InProcessHook)
    monkeypatch.setenv("AIRFLOW_CONN_DQ_TOY", json.dumps({"conn_type": TOY_TYPE}))
    monkeypatch.setenv("AIRFLOW_CONN_DQ_CONNECT", json.dumps({"conn_type": "spark_connect", "host": "sc://h"}))
    return "dq_toy"


def test_the_transport_is_chosen_by_the_connection_type(toy_connection):
    op = ContractCheckOperator(
        task_id="check", contract="c.yaml", conn_id=toy_connection, spark_conf={"spark.sql.shuffle.partitions": 2}
    )
    hook = op.make_hook(["--spec=e30="], ["/tmp/shipped.json"], "/wh", run_id="r-1")
    assert isinstance(hook, InProcessHook)
    request = hook.request
    assert (request.conn_id, list(request.application_args), list(request.files)) == (
        "dq_toy",
        ["--spec=e30="],
        ["/tmp/shipped.json"],
    )
    assert (request.warehouse, request.run_id, request.name) == ("/wh", "r-1", "dq-contracts-check")
    assert dict(request.spark_conf) == {"spark.sql.shuffle.partitions": "2"}

    op = ContractCheckOperator(task_id="check", contract="c.yaml", conn_id="dq_connect", spark_conf={"k": 1})
    connect = op.make_hook(["--spec=e30="], [], "/wh", run_id="r-2")
    assert isinstance(connect, ContractConnectHook)
    assert (connect.application_args, connect.run_id, connect.session_conf) == (["--spec=e30="], "r-2", {"k": "1"})

    assert transport.transport_for("spark") is transport.DEFAULT_TRANSPORT
    assert transport.transport_for(None) is transport.DEFAULT_TRANSPORT
    assert transport.transport_for("dq_in_process") is InProcessHook
    assert transport.connection_type("no_such_connection_anywhere") is None


def test_the_default_transport_is_spark_submit(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_DQ_LOCAL", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    hook = transport.build_job_hook(
        transport.JobRequest(
            conn_id="dq_local",
            application_args=["--spec=e30="],
            files=["/a.json"],
            submit_kwargs={"files": "/b.json", "driver_memory": "1g"},
        )
    )
    assert isinstance(hook, ContractSubmitHook)
    command = hook.adapter.build_command("job.py")
    assert command[command.index("--files") + 1] == "/a.json,/b.json"
    assert command[command.index("--driver-memory") + 1] == "1g"
    assert command[-2:] == ["job.py", "--spec=e30="]


@pytest.mark.spark
def test_a_toy_transport_runs_a_contract_through_the_operator_s_hook(spark, tmp_path, toy_connection):
    rows = [{"id": 1, "qty": 3}, {"id": 2, "qty": None}, {"id": 3, "qty": 5}]
    schema = pa.schema([("id", pa.int64()), ("qty", pa.int64())])
    write_deltalake(str(tmp_path / "input"), pa.Table.from_pylist(rows, schema=schema))
    contract = load_contract(
        {
            "name": "toy",
            "dataset": {"path": str(tmp_path / "input")},
            "columns": [
                {"name": "id"},
                {"name": "qty", "checks": [{"name": "qty_present", "type": "missing", "max": 0}]},
            ],
        }
    )
    text = (
        "name: toy\n"
        + f"dataset: {{path: '{tmp_path / 'input'}'}}\n"
        + ("columns:\n  - name: id\n  - name: qty\n    checks: [{name: qty_present, type: missing, max: 0}]\n")
    )
    spec = RunSpec.for_contract(
        contract, contract_text=text, run_id="toy-1", results_table=str(tmp_path / "dq_results")
    )
    op = ContractCheckOperator(task_id="check", contract="c.yaml", conn_id=toy_connection)
    hook = op.make_hook(spec.job_arguments().arguments, [], str(tmp_path), run_id="toy-1")
    payload = hook.submit_job()
    assert payload is not None
    written = DeltaTable(str(tmp_path / "dq_results")).to_pyarrow_table().to_pylist()
    assert (payload["run_id"], payload["row_count"], payload["checks"]) == ("toy-1", 3, len(written))
    assert {r["run_id"] for r in written} == {"toy-1"}
    assert [(r["failed_rows"], r["status"]) for r in written if r["check_name"] == "qty_present"] == [
        (sum(1 for r in rows if r["qty"] is None), "failed")
    ]


@pytest.mark.spark
@pytest.mark.airflow
def test_a_toy_transport_runs_a_task_end_to_end(spark, tmp_path, toy_connection, airflow_db):  # noqa: F811
    """The operator's execute, untouched, through the registered toy: the job in this process, the read-back,
    the summary in XCom."""
    rows = [{"id": 1, "qty": 3}, {"id": 2, "qty": None}, {"id": 3, "qty": 5}, {"id": 3, "qty": 0}]
    schema = pa.schema([("id", pa.int64()), ("qty", pa.int64())])
    write_deltalake(str(tmp_path / "input"), pa.Table.from_pylist(rows, schema=schema))
    contract = tmp_path / "toy.yaml"
    contract.write_text(
        "name: toy_task\n"
        "columns:\n"
        "  - name: id\n"
        "    checks: [{name: id_unique, type: duplicates, max: 0, severity: P2}]\n"
        "  - name: qty\n"
        "    checks: [{name: qty_present, type: missing, max: 0, severity: P2}]\n"
    )
    dag = install_dag(
        f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_dq_contracts.operators import ContractCheckOperator
        with DAG("dq_toy_transport", schedule=None, start_date=dt.datetime(2024, 1, 1)) as dag:
            ContractCheckOperator(
                task_id="check", contract={str(contract)!r}, conn_id={toy_connection!r},
                input_path={str(tmp_path / "input")!r}, results_table={str(tmp_path / "dq_results")!r},
                warehouse={str(tmp_path / "wh")!r}, reference_time="2024-05-02T00:00:00Z", write_report=False,
            )
        """
    )
    states, dag_run = run_dag(dag)
    assert states == {"check": "success"}
    summary = xcom_value(dag_run, "check")
    written = DeltaTable(str(tmp_path / "dq_results")).to_pyarrow_table().to_pylist()
    assert {r["run_id"] for r in written} == {summary["run_id"]}
    assert summary["row_count"] == len(rows) and len(summary["checks"]) == len(written)
    by_id = {c["check_id"]: (c["status"], c["failed_rows"]) for c in summary["checks"]}
    ids = [r["id"] for r in rows]
    assert by_id["id/id_unique"] == ("failed", sum(1 for i in ids if ids.count(i) > 1))
    assert by_id["qty/qty_present"] == ("failed", sum(1 for r in rows if r["qty"] is None))
