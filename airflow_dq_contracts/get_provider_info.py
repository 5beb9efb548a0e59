"""Airflow provider registration (entry point ``apache_airflow_provider``).

Follows Airflow's provider metadata (``airflow/provider_info.schema.json``): package name, versions,
integrations with documentation links, and per integration the modules holding operators, sensors,
hooks and triggers; extra links and notifiers are listed by class path once they exist.
``tests/test_provider_info.py`` checks every entry against the modules that really exist, and the
other way round, so a new module cannot be forgotten here.
"""

from __future__ import annotations

from typing import Any

INTEGRATION = "Data Quality Contracts"
PACKAGE = "airflow_dq_contracts"


def _modules(*names: str) -> list[dict[str, Any]]:
    return [{"integration-name": INTEGRATION, "python-modules": [f"{PACKAGE}.{name}" for name in names]}]


def get_provider_info() -> dict[str, Any]:
    """Provider metadata; ``package-name`` equals the distribution name.

    >>> info = get_provider_info()
    >>> info["package-name"], info["operators"][0]["python-modules"][0]
    ('airflow-dq-contracts', 'airflow_dq_contracts.operators.contract_branch')
    """
    from airflow_dq_contracts import __version__
    from airflow_dq_contracts.ui.settings import config_section

    return {
        "package-name": "airflow-dq-contracts",
        "name": INTEGRATION,
        "description": "Data contracts as quality gates: Spark checks, Delta results and quarantine, "
        "freshness and completeness sensors.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://pypi.org/project/airflow-dq-contracts/",
                "tags": ["software"],
            },
            # what the contract job runs on, with the pages a deployer needs from each
            {
                "integration-name": "Apache Spark",
                "external-doc-url": "https://spark.apache.org/docs/latest/submitting-applications.html",
                "tags": ["software"],
            },
            {"integration-name": "Delta Lake", "external-doc-url": "https://docs.delta.io/", "tags": ["software"]},
        ],
        "operators": _modules("operators.contract_branch", "operators.contract_check", "operators.verdict"),
        "sensors": _modules("sensors.completeness", "sensors.freshness"),
        "hooks": _modules("hooks.contract_submit", "hooks.spark_connect", "hooks.storage"),
        "triggers": _modules("triggers.delta_metadata", "triggers.results_watcher"),
        "extra-links": ["airflow_dq_contracts.operators.report_link.ContractReportLink"],
        "notifications": ["airflow_dq_contracts.notifications.contract_alert.ContractAlertNotifier"],
        # The UI plugin (also the `airflow.plugins` entry point, which is what loads it) and its settings.
        "plugins": [{"name": "dq_contracts", "plugin-class": "airflow_dq_contracts.ui.plugin.DataQualityPlugin"}],
        "config": config_section(),
    }
