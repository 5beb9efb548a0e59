"""Where a task's outputs go when the DAG does not say: the warehouse, its results, quarantine and report folders.

The operator, the suite task and the CLI name their default tables the same way through these helpers.

>>> default_results_table("/wh"), default_quarantine_table("/wh", "Orders v2")
('/wh/dq_results', '/wh/dq_quarantine/orders_v2')
>>> default_report_folder("s3a://b/wh/")
's3a://b/wh/dq_reports'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from airflow_dq_contracts.storage.locations import WAREHOUSE_ENV

RESULTS_TABLE_NAME = "dq_results"
QUARANTINE_FOLDER = "dq_quarantine"
REPORT_FOLDER = "dq_reports"
_SLUG = re.compile(r"[^a-z0-9]+")

__all__ = [
    "QUARANTINE_FOLDER",
    "REPORT_FOLDER",
    "RESULTS_TABLE_NAME",
    "WAREHOUSE_ENV",
    "default_quarantine_table",
    "default_report_folder",
    "default_results_table",
    "default_warehouse",
    "join_location",
    "report_location",
]


def join_location(base: str, *parts: str) -> str:
    """``base`` joined with ``parts``: URIs (``s3a://…``) with ``/`` whatever the local OS says.

    >>> join_location("s3://b/wh/", "dq_results")
    's3://b/wh/dq_results'
    """
    return "/".join([base.rstrip("/"), *parts]) if "://" in base else os.path.join(base, *parts)


def _slug(contract_name: str) -> str:
    return _SLUG.sub("_", contract_name.lower()).strip("_") or "contract"


def default_warehouse() -> str:
    """``$DQ_CONTRACTS_WAREHOUSE``, else ``$AIRFLOW_HOME/dq_warehouse`` (``~/airflow`` when unset).

    Example: with ``DQ_CONTRACTS_WAREHOUSE=/data/wh`` → ``'/data/wh'``; with only
    ``AIRFLOW_HOME=/opt/airflow`` → ``'/opt/airflow/dq_warehouse'``.
    """
    configured = os.environ.get(WAREHOUSE_ENV)
    if configured:
        return configured
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return os.path.join(home, "dq_warehouse")


def default_results_table(warehouse: str) -> str:
    """``<warehouse>/dq_results`` — one results table for every contract (it is partitioned by contract)."""
    return join_location(warehouse, RESULTS_TABLE_NAME)


def default_quarantine_table(warehouse: str, contract_name: str) -> str:
    """``<warehouse>/dq_quarantine/<contract>`` — one per contract: it carries the dataset's columns.

    >>> default_quarantine_table("/wh", "Orders v2")
    '/wh/dq_quarantine/orders_v2'
    """
    return join_location(warehouse, QUARANTINE_FOLDER, _slug(contract_name))


def default_report_folder(warehouse: str) -> str:
    """``<warehouse>/dq_reports`` — where run reports go unless ``report_folder`` says otherwise."""
    return join_location(warehouse, REPORT_FOLDER)


def report_location(folder: str, contract_name: str, run_id: str, base_url: str | None = None) -> tuple[str, str]:
    """(where the report is written, the URL the extra link shows) for one run.

    >>> report_location("/wh/dq_reports", "Orders", "dq-1")
    ('/wh/dq_reports/orders/dq-1.html', 'file:///wh/dq_reports/orders/dq-1.html')
    >>> report_location("s3://b/r", "orders", "dq-1", "https://dq.example.com/r/")[1]
    'https://dq.example.com/r/orders/dq-1.html'
    """
    slug = _slug(contract_name)
    path = join_location(os.path.expanduser(folder), slug, f"{run_id}.html")
    if base_url:
        return path, f"{base_url.rstrip('/')}/{slug}/{run_id}.html"
    return path, (path if "://" in path else Path(os.path.abspath(path)).as_uri())
