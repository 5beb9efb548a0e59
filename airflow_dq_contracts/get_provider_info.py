"""Airflow provider registration (entry point ``apache_airflow_provider``)."""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    """Provider metadata; ``package-name`` must equal the distribution name."""
    from airflow_dq_contracts import __version__

    return {
        "package-name": "airflow-dq-contracts",
        "name": "Data Quality Contracts",
        "description": "Data contracts as quality gates: Spark checks, Delta results and quarantine, "
        "freshness and completeness sensors.",
        "versions": [__version__],
        "operators": [
            {
                "integration-name": "Data Quality Contracts",
                "python-modules": ["airflow_dq_contracts.operators.contract_check",
                                   "airflow_dq_contracts.operators.contract_branch"],
            }
        ],
        "sensors": [
            {
                "integration-name": "Data Quality Contracts",
                "python-modules": ["airflow_dq_contracts.sensors.freshness",
                                   "airflow_dq_contracts.sensors.completeness"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Data Quality Contracts",
                "python-modules": ["airflow_dq_contracts.triggers.delta_metadata"],
            }
        ],
        "extra-links": ["airflow_dq_contracts.operators.report_link.ContractReportLink"],
        "notifications": ["airflow_dq_contracts.notifications.contract_alert.ContractAlertNotifier"],
    }
