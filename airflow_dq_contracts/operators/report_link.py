"""The "Data quality report" extra link of :class:`~airflow_dq_contracts.operators.ContractCheckOperator`.

The operator writes each run's HTML report and pushes its URL to XCom (key :data:`REPORT_URL_KEY`)
through :func:`publish_report_url`, which also keeps it on the operator; the link returns that URL. On the
worker the link reads the operator that ran (no XCom round trip: a task that stopped before its report
logs no "XCom not found" error), elsewhere the XCom. Airflow 3 evaluates links on the worker right after the task and stores
the result in XCom, which the UI and ``GET /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/{task}/links``
read; the class is registered under ``extra-links`` in the provider info so the API server can
deserialise it.

Example::

    ContractCheckOperator(task_id="check_orders", contract="contracts/orders.yaml",
                          report_base_url="https://dq.example.com/reports")
    # task page → "Data quality report" → https://dq.example.com/reports/orders/dq-3f2a….html
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from airflow_dq_contracts.storage.locations import StoreError, TableLocation
from airflow_dq_contracts.version_compat import BaseOperatorLink, XCom

#: XCom key under which the operator pushes the report's URL.
REPORT_URL_KEY = "dq_report_url"
#: The UI plugin's Airflow configuration section, and where the API server mounts its pages (DESIGN §10).
UI_SECTION = "dq_contracts"
UI_URL_PREFIX = "/dq-contracts"


def ui_run_url(run_id: str, results: TableLocation) -> str | None:
    """The run's page in the Airflow UI (``<[api] base_url>/dq-contracts/runs/<run id>``) when ``[dq_contracts]
    results_table`` is this run's results table; None otherwise (the link stays the written report's)."""
    try:
        from airflow.sdk.configuration import conf  # type: ignore[import-not-found,unused-ignore]  # not in 3.0
    except ImportError:
        from airflow.configuration import conf
    configured = str(conf.get(UI_SECTION, "results_table", fallback="") or "").strip()
    if not configured:
        return None
    warehouse = str(conf.get(UI_SECTION, "warehouse", fallback="") or "").strip() or None
    try:
        if TableLocation.resolve(configured, warehouse).uri.rstrip("/") != results.uri.rstrip("/"):
            return None
    except (StoreError, ValueError):
        return None
    base = str(conf.get("api", "base_url", fallback="") or "").rstrip("/")
    return f"{base}{UI_URL_PREFIX}/runs/{quote(run_id, safe='')}"


class ContractReportLink(BaseOperatorLink):
    """Link from a contract check task to the HTML report of its run ('' when no report was written).

    Example::

        link = ContractReportLink()
        link.get_link(check_task, ti_key=ti.key)   # 'file:///wh/dq_reports/orders/dq-….html'
    """

    name = "Data quality report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The report URL the task pushed for this task instance ('' when it wrote none)."""
        if _RAN in vars(operator):  # the operator that ran, on its worker: its own answer, even "none"
            value = vars(operator)[_RAN]
        else:
            value = XCom.get_value(ti_key=ti_key, key=REPORT_URL_KEY)
        return value if isinstance(value, str) else ""


#: Attribute under which :func:`publish_report_url` keeps the URL on the operator instance that ran.
_RAN = "_dq_report_url"


def start_report_link(operator: Any) -> None:
    """Mark ``operator`` as running with no report yet (its link then says '' without asking XCom)."""
    vars(operator)[_RAN] = None


def publish_report_url(operator: Any, context: Any, url: str) -> None:
    """Push ``url`` under :data:`REPORT_URL_KEY` and keep it on ``operator`` for its extra link.

    Example::

        publish_report_url(self, context, "file:///wh/dq_reports/orders/dq-3f2a.html")
    """
    context["ti"].xcom_push(key=REPORT_URL_KEY, value=url)
    vars(operator)[_RAN] = url
