"""The UI's settings: Airflow's ``[dq_contracts]`` configuration section (``AIRFLOW__DQ_CONTRACTS__…`` overrides).

============================  ==================================================================
option                        meaning
============================  ==================================================================
``results_table``             the results table the pages read (a path, URI or catalog name)
``warehouse``                 where catalog names are found (``<warehouse>/<db>.db/<table>``)
``storage_conn_id``           an Airflow connection whose credentials reach the tables (S3, GCS,
                              Azure — read as the operator reads it, secrets masked)
============================  ==================================================================

Example::

    # airflow.cfg                         # or the environment
    [dq_contracts]                        # AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE=s3://lake/dq/dq_results
    results_table = s3://lake/dq/dq_results
    storage_conn_id = lake_s3
"""

from __future__ import annotations

import dataclasses
from typing import Any

from airflow_dq_contracts.operators.report_link import UI_SECTION, UI_URL_PREFIX

__all__ = ["SECTION", "URL_PREFIX", "UISettings", "config_section", "ui_settings"]

#: Airflow configuration section of the provider, and where the plugin's app is mounted (DESIGN §10); the check
#: task's link names them too.
SECTION = UI_SECTION
URL_PREFIX = UI_URL_PREFIX


@dataclasses.dataclass(frozen=True)
class UISettings:
    """What the pages read: the results table, the warehouse of catalog names, the storage connection."""

    results_table: str | None
    warehouse: str | None = None
    storage_conn_id: str | None = None

    @property
    def configured(self) -> bool:
        """Whether a results table is set (without one, the pages say how to configure it)."""
        return bool(self.results_table)

    @property
    def table_label(self) -> str:
        """The results table as the pages name it: a path inside the warehouse relative to it.

        >>> UISettings("/data/wh/dq/dq_results", warehouse="/data/wh/").table_label
        'dq/dq_results'
        >>> UISettings("s3://lake/dq/dq_results", warehouse="/data/wh").table_label
        's3://lake/dq/dq_results'
        """
        table = str(self.results_table or "")
        base = (self.warehouse or "").rstrip("/") + "/"
        if self.warehouse and "://" not in table and table.startswith(base) and len(table) > len(base):
            return table[len(base) :]
        return table


def _option(conf: Any, name: str) -> str | None:
    value = conf.get(SECTION, name, fallback=None)
    text = str(value).strip() if value is not None else ""
    return text or None


def ui_settings(conf: Any = None) -> UISettings:
    """The ``[dq_contracts]`` section as read now by Airflow's configuration (environment overrides included)."""
    if conf is None:
        from airflow.configuration import conf as airflow_conf

        conf = airflow_conf
    return UISettings(
        results_table=_option(conf, "results_table"),
        warehouse=_option(conf, "warehouse"),
        storage_conn_id=_option(conf, "storage_conn_id"),
    )


def config_section() -> dict[str, Any]:
    """The section as the provider declares it to Airflow (``get_provider_info()["config"]``).

    >>> sorted(config_section()["dq_contracts"]["options"])
    ['results_table', 'storage_conn_id', 'warehouse']
    """
    from airflow_dq_contracts import __version__

    def option(description: str, example: str) -> dict[str, Any]:
        return {
            "description": description,
            "version_added": __version__,
            "type": "string",
            "example": example,
            "default": "",
        }

    return {
        SECTION: {
            "description": "Data quality contracts in the Airflow UI (the provider's plugin under /dq-contracts).",
            "options": {
                "results_table": option(
                    "The results table the UI reads: a path, a URI (s3://, gs://, abfss://) or a catalog name. "
                    "Empty: the pages say that nothing is configured.",
                    "s3://lake/dq/dq_results",
                ),
                "warehouse": option("Where catalog table names are found (the Spark warehouse).", "/data/warehouse"),
                "storage_conn_id": option(
                    "An Airflow connection (aws, google_cloud_platform, wasb/adls) whose credentials reach the tables.",
                    "lake_s3",
                ),
            },
        }
    }
