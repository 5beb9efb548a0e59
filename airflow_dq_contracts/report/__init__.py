"""The data quality report: a self-contained HTML page about one run, read from the results table.

A *reader of the results* (no Spark, no Airflow): :mod:`.data` reads the Delta tables with
delta-rs, :mod:`.charts` draws trend charts (matplotlib SVG), :mod:`.html` renders the page.

Example::

    from airflow_dq_contracts.report import build_report, write_report
    page = build_report("/wh/dq_results", "orders", days=30)
    write_report(page, "/wh/dq_reports/orders/latest.html")
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from airflow_dq_contracts.storage.s3 import arrow_s3_filesystem, is_s3

from .data import ReportData, ReportDataError, load_report_data
from .html import render_report

__all__ = ["ReportData", "ReportDataError", "build_report", "load_report_data", "render_report", "write_report"]


def build_report(
    results_table: str,
    contract_name: str,
    *,
    run_id: str | None = None,
    days: int = 30,
    quarantine_table: str | None = None,
    report_link: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> str:
    """The HTML page for one run of ``contract_name`` (default its newest run).

    Example::

        page = build_report("/wh/dq_results", "orders", run_id="dq-3f2a…", days=7)
    """
    data = load_report_data(
        results_table,
        contract_name,
        run_id=run_id,
        days=days,
        quarantine_table=quarantine_table,
        storage_options=storage_options,
    )
    return render_report(data, report_link=report_link)


def write_report(page: str, location: str, *, storage_options: Mapping[str, str] | None = None) -> str:
    """Write ``page`` to a local path or an object-store URI (``s3://…``, through fsspec); returns the location.

    An ``s3://`` location with ``storage_options`` (delta-rs's ``AWS_*`` names, e.g. a storage connection's)
    is written with pyarrow's S3 filesystem using those credentials (fsspec's S3 needs ``s3fs`` and its own
    option names).

    Example::

        write_report(page, "/wh/dq_reports/orders/run.html")
    """
    if is_s3(location) and storage_options:
        with arrow_s3_filesystem(storage_options).open_output_stream(location.split("://", 1)[1]) as handle:
            handle.write(page.encode("utf-8"))
        return location
    if "://" in location and not location.startswith("file://"):
        import fsspec

        with fsspec.open(location, "w", encoding="utf-8", **dict(storage_options or {})) as handle:
            handle.write(page)
        return location
    path = os.path.expanduser(location[len("file://") :] if location.startswith("file://") else location)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # Write then rename: a reader following the task's link never sees half a page.
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(page)
    os.replace(temporary, path)
    return path
