"""The "Data quality report" extra link of :class:`~airflow_dq_contracts.operators.ContractCheckOperator`.

The operator writes each run's HTML report and pushes its URL to XCom (key :data:`REPORT_URL_KEY`);
the link returns that URL. Airflow 3 evaluates links on the worker right after the task and stores
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

from airflow_dq_contracts.version_compat import BaseOperatorLink, XCom

#: XCom key under which the operator pushes the report's URL.
REPORT_URL_KEY = "dq_report_url"


class ContractReportLink(BaseOperatorLink):
    """Link from a contract check task to the HTML report of its run ('' when no report was written).

    Example::

        link = ContractReportLink()
        link.get_link(check_task, ti_key=ti.key)   # 'file:///wh/dq_reports/orders/dq-….html'
    """

    name = "Data quality report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The report URL the task pushed for this task instance."""
        value = XCom.get_value(ti_key=ti_key, key=REPORT_URL_KEY)
        return value if isinstance(value, str) else ""
