"""Owner alerts, the report and its extra link, through a real DAG run (``dag.test()``, spark-submit, Delta).

A real SMTP server (``aiosmtpd``) listens on localhost; the DAG's SMTP connection points at it.
Two runs of one DAG, check → branch → gate path / quarantine path:

* **gate** data: the gate path's ``ContractAlertNotifier`` e-mails the contract's support contact
  and owner (from the registry); subject, body and the attached report are checked; the quarantine
  notifier sends nothing.
* **quarantine** data: the default notifier (gate only) stays silent, the one configured with
  ``on_quarantine=True`` sends exactly one e-mail, to its own recipient.

And for the gate run: the check task wrote its HTML report next to the results, the summary in XCom
carries its URL, and the "Data quality report" extra link — registered by the provider — resolves
to that URL (the link's own ``get_link`` for the task instance, and the XCom Airflow stores for the
API's ``/links`` endpoint).
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

import datetime as dt
import email
import email.policy
import json
import socket
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.spark]

UTC = dt.timezone.utc

CONTRACT = """\
name: alert_orders
version: 3.0.0
owner: checkout-team@example.com
sla:
  support_contact: orders-oncall@example.com
  escalation_policy: page the checkout on-call, then data-platform
columns:
  - name: order_id
    checks: [{name: unique, type: duplicates, max: 0, severity: P0}]
  - name: status
    checks: [{name: known, type: whitelist, values: [new, paid], severity: P1}]
"""

DAG_SOURCE = """
import datetime as dt
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow_dq_contracts.notifications import ContractAlertNotifier
from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator

with DAG(dag_id="dq_alerts_test", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
    check = ContractCheckOperator(
        task_id="check", contract={contract!r}, input_path={source!r}, input_format="delta",
        results_table={results!r}, quarantine_table={quarantine!r}, report_folder={reports!r},
        fail_on_gate=False,
    )
    route = ContractBranchOperator(task_id="route", check_task_id="check", pass_task_ids=["publish"],
                                   quarantine_task_ids=["set_aside"], gate_task_ids=["stop"])
    stop = EmptyOperator(task_id="stop", on_success_callback=ContractAlertNotifier(check_task_id="check",
                                                                                   smtp_conn_id="smtp_test"))
    set_aside = EmptyOperator(task_id="set_aside", on_success_callback=[
        ContractAlertNotifier(check_task_id="check", smtp_conn_id="smtp_test"),
        ContractAlertNotifier(check_task_id="check", smtp_conn_id="smtp_test", on_quarantine=True,
                              to="quarantine-watch@example.com"),
    ])
    publish = EmptyOperator(task_id="publish")
    check >> route >> [stop, set_aside, publish]
"""


class Inbox:
    """Messages received by the local SMTP server: (envelope recipients, parsed message)."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        parsed = email.message_from_bytes(envelope.original_content or envelope.content, policy=email.policy.default)
        self.messages.append((list(envelope.rcpt_tos), parsed))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def smtp():
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    port = _free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    patch = pytest.MonkeyPatch()
    patch.setenv(
        "AIRFLOW_CONN_SMTP_TEST",
        json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": port, "extra": {"from_email": "dq@example.com"}}),
    )
    yield inbox
    patch.undo()
    controller.stop()


@pytest.fixture(scope="module")
def setup(airflow_db, smtp, tmp_path_factory):  # noqa: F811 - airflow_db is the imported fixture
    root = tmp_path_factory.mktemp("alerts")
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / "job-cache"))
    use_cached_delta_jars(patch, root)
    paths = {
        "source": str(root / "orders"),
        "results": str(root / "wh" / "dq_results"),
        "quarantine": str(root / "wh" / "quarantine"),
        "reports": str(root / "wh" / "reports"),
    }
    dag = install_dag(DAG_SOURCE.format(contract=CONTRACT, **paths))
    yield dag, paths
    patch.undo()


def _write_source(path: str, rows: list[tuple[int, str]]) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    table = pa.table({"order_id": [r[0] for r in rows], "status": [r[1] for r in rows]})
    write_deltalake(path, table, mode="overwrite")


def _run(dag, day: int):
    when = dt.datetime(2024, 5, day, tzinfo=UTC)
    return run_dag(dag, logical_date=when, run_after=when)


def test_gate_mails_the_owner_and_the_task_links_its_report(setup, smtp):
    dag, paths = setup
    rows = [(1, "new"), (2, "paid"), (2, "paid"), (3, "new")]  # order 2 twice: P0 gate
    _write_source(paths["source"], rows)
    smtp.messages.clear()
    states, dag_run = _run(dag, 1)
    assert states["check"] == "success" and states["stop"] == "success"
    assert states["set_aside"] == "skipped" and states["publish"] == "skipped"
    summary = xcom_value(dag_run, "check")
    assert summary["decision"] == "gate"

    assert len(smtp.messages) == 1
    recipients, message = smtp.messages[0]
    # No to=: the registry's support contact and owner.
    assert sorted(recipients) == ["checkout-team@example.com", "orders-oncall@example.com"]
    assert message["From"] == "dq@example.com"
    assert message["Subject"] == "[DQ GATE] alert_orders 3.0.0 on " + paths["source"] + ": 1 check failed (P0: 1)"
    body = message.get_body(("plain",)).get_content()
    duplicates = len(rows) - len({r[0] for r in rows})
    assert f"P0 gate order_id/unique: failed (metric {float(duplicates)}" in body
    assert "Escalation policy: page the checkout on-call, then data-platform" in body
    assert f"Report: {summary['report']}" in body
    attachments = list(message.iter_attachments())
    assert [a.get_filename() for a in attachments] == [f"{summary['run_id']}.html"]
    assert summary["run_id"] in attachments[0].get_content()

    # The report: next to the results, in the configured folder, named after the run.
    report = Path(urlparse(summary["report"]).path)
    assert report == Path(paths["reports"]) / "alert_orders" / f"{summary['run_id']}.html"
    page = report.read_text(encoding="utf-8")
    # one row per result: the two written checks and the two declared columns' schema checks
    assert sorted(c["check_id"] for c in summary["checks"]) == [
        "order_id/schema",
        "order_id/unique",
        "status/known",
        "status/schema",
    ]
    assert page.count('<tr data-status="') == len(summary["checks"])

    # The extra link: registered by the provider, resolved for this task instance.
    from airflow.providers_manager import ProvidersManager

    from airflow_dq_contracts.operators.report_link import ContractReportLink

    assert "airflow_dq_contracts.operators.report_link.ContractReportLink" in ProvidersManager().extra_links_class_names
    check_task = dag.get_task("check")
    assert [link.name for link in check_task.operator_extra_links] == ["Data quality report"]
    assert xcom_value(dag_run, "check", key=ContractReportLink().xcom_key) == summary["report"]
    assert _api_links(dag_run, "check") == {"Data quality report": summary["report"]}


def _api_links(dag_run, task_id: str) -> dict:
    """``GET /api/v2/.../taskInstances/{task}/links`` of Airflow's own API app, in process (as an admin)."""
    from airflow.api_fastapi.app import create_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi.testclient import TestClient

    patch = pytest.MonkeyPatch()
    patch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "True")
    try:
        app = create_app(apps="core")
        for sub in [app, *[route.app for route in app.routes if hasattr(route, "app")]]:
            if hasattr(sub, "dependency_overrides"):
                sub.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="test", role="admin")
        with TestClient(app) as client:
            response = client.get(
                f"/api/v2/dags/{dag_run.dag_id}/dagRuns/{dag_run.run_id}/taskInstances/{task_id}/links"
            )
        assert response.status_code == 200, response.text
        return response.json()["extra_links"]
    finally:
        patch.undo()


def test_quarantine_alerts_only_where_configured(setup, smtp):
    dag, paths = setup
    _write_source(paths["source"], [(1, "new"), (2, "lost"), (3, "paid")])  # P1 whitelist: quarantine
    smtp.messages.clear()
    states, dag_run = _run(dag, 2)
    assert states["set_aside"] == "success" and states["stop"] == "skipped"
    assert xcom_value(dag_run, "check")["decision"] == "quarantine"
    assert [recipients for recipients, _ in smtp.messages] == [["quarantine-watch@example.com"]]
    message = smtp.messages[0][1]
    assert message["Subject"].startswith("[DQ QUARANTINE] alert_orders 3.0.0 on ")
    assert "Quarantined rows: 1 in " + paths["quarantine"] in message.get_body(("plain",)).get_content()


CLEAN_DAG = """
import datetime as dt
from airflow.sdk import DAG
from airflow_dq_contracts.operators import ContractCheckOperator

with DAG(dag_id="dq_clean_pass_test", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
    ContractCheckOperator(
        task_id="check", contract={contract!r}, input_path={source!r}, input_format="delta",
        results_table={results!r}, quarantine_table={quarantine!r}, report_folder={reports!r},
    )
"""

#: Lines a successful run must not log: a contradicted master, deprecations, a resolution that did not happen.
NOISE = (
    "Could not load connection string",
    "defaulting to yarn",
    "without_files",
    "BaseBranchOperator",
    "resolving io.delta",
    "XCom not found",
    "Could not write the data quality report",
)


def test_a_clean_pass_gets_its_report_and_a_quiet_true_log(airflow_db, tmp_path, capfd, monkeypatch):  # noqa: F811
    """No row ever quarantined (no quarantine table), no ``spark_default``: a report, its XCom, a clean log."""
    import re

    import yaml

    from airflow_dq_contracts.operators.report_link import ContractReportLink

    monkeypatch.setenv("DQ_CONTRACTS_JOB_CACHE", str(tmp_path / "job-cache"))
    use_cached_delta_jars(monkeypatch, tmp_path)
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)  # the embedded default decides the master
    paths = {
        "source": str(tmp_path / "orders"),
        "results": str(tmp_path / "wh" / "dq_results"),
        "quarantine": str(tmp_path / "wh" / "dq_quarantine" / "alert_orders"),
        "reports": str(tmp_path / "wh" / "reports"),
    }
    _write_source(paths["source"], [(1, "new"), (2, "paid"), (3, "new")])
    dag = install_dag(CLEAN_DAG.format(contract=CONTRACT, **paths))
    capfd.readouterr()
    states, dag_run = _run(dag, 3)
    logged = "".join(capfd.readouterr())
    assert states["check"] == "success"
    summary = xcom_value(dag_run, "check")
    assert summary["decision"] == "pass" and not Path(paths["quarantine"]).exists()

    # The report of the pass: written, in XCom, behind the extra link.
    report = Path(urlparse(summary["report"]).path)
    assert report == Path(paths["reports"]) / "alert_orders" / f"{summary['run_id']}.html" and report.is_file()
    assert xcom_value(dag_run, "check", key="dq_report_url") == summary["report"]
    assert xcom_value(dag_run, "check", key=ContractReportLink().xcom_key) == summary["report"]

    # The count the task logs, by hand from the YAML: 2 written, one schema check per declared column.
    document = yaml.safe_load(CONTRACT)
    written = sum(len(c.get("checks", [])) for c in document["columns"])
    implied = len(document["columns"])
    assert f"({written + implied} checks ({written} written, {implied} implied by columns/SLA))" in logged
    assert len(summary["checks"]) == written + implied

    # A true, quiet log: the master it runs on said once, nothing contradicting it, no error, no deprecation.
    assert "running on the embedded default, Spark local[*]" in logged
    assert [line for line in logged.splitlines() if any(noise in line for noise in NOISE)] == []
    assert re.findall(r".*\[error\s*\].*", logged) == []
    # Warnings raised in our own modules (Airflow's in-process API server has deprecations of its own).
    assert [line for line in logged.splitlines() if "Warning" in line and "airflow_dq_contracts" in line] == []

    # With the UI plugin configured for this results table ([dq_contracts] results_table, read the Airflow way from
    # the environment), the next run's link — task's extra link and XCom — is its run page in the Airflow UI.
    monkeypatch.setenv("AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE", "dq_results")
    monkeypatch.setenv("AIRFLOW__DQ_CONTRACTS__WAREHOUSE", str(tmp_path / "wh"))
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "http://airflow.example:8080")
    states, dag_run = _run(dag, 4)
    assert states["check"] == "success"
    summary = xcom_value(dag_run, "check")
    page = f"http://airflow.example:8080/dq-contracts/runs/{summary['run_id']}"
    assert xcom_value(dag_run, "check", key="dq_report_url") == page == summary["report"]
    # the run that page shows is in the results table the plugin reads (delta-rs, not the code under test)
    from deltalake import DeltaTable

    run_ids = set(DeltaTable(paths["results"]).to_pyarrow_table(columns=["run_id"]).column("run_id").to_pylist())
    assert summary["run_id"] in run_ids
