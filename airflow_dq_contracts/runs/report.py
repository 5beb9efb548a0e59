"""The run's HTML report, written where the settings say (:mod:`airflow_dq_contracts.report` builds it).

``<report folder>/<contract>/<run id>.html`` — the folder by default ``<warehouse>/dq_reports``; its URL is
``<base url>/<contract>/<run id>.html`` when the folder is served over HTTP, else the file's own URI.
A report is a view: :func:`write_run_report` never raises, it returns what went wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.report import load_report_data, render_report, write_report
from airflow_dq_contracts.runs.tables import RunTables
from airflow_dq_contracts.storage.naming import default_report_folder, report_location

__all__ = ["RunReport", "write_run_report"]


@dataclasses.dataclass(frozen=True)
class RunReport:
    """Where a run's report was written (``path``), the URL that shows it, and why not when ``error`` is set."""

    path: str
    url: str
    error: str | None = None


def write_run_report(
    summary: Mapping[str, Any],
    tables: RunTables,
    *,
    folder: str | None = None,
    base_url: str | None = None,
    days: int = 30,
) -> RunReport:
    """Build and write the report of ``summary``'s run from ``tables`` (their storage options reach them)."""
    base = folder or default_report_folder(tables.warehouse or "")
    name, run_id = summary["contract"]["name"], summary["run_id"]
    path, url = report_location(base, name, run_id, base_url)
    options = tables.results.options
    try:
        data = load_report_data(
            tables.results,
            name,
            run_id=run_id,
            days=days,
            quarantine_table=tables.quarantine.uri if tables.quarantine else None,
            storage_options=options,
        )
        write_report(render_report(data, report_link=url), path, storage_options=options)
    except Exception as exc:  # noqa: BLE001 - the report is a view: never fail the check for it
        return RunReport(path, url, str(exc))
    return RunReport(path, url)
