"""Speak the ecosystem's formats: DataHub assertions and Dataplex rules in, DataHub assertions out.

Plain Python (no Spark, no Airflow). Mapping tables and refusals: ``docs/interop.md``.

Example::

    from airflow_dq_contracts.interop import import_datahub, import_dataplex, export_datahub
    text = import_datahub(["assertions.yaml"])                  # contract YAML, a comment per check
    text = import_dataplex(["rules.json"], table="shop.orders")
    print(export_datahub(load_contract("contracts/orders.yaml")))
"""

from .datahub import import_datahub
from .datahub_export import export_datahub
from .dataplex import import_dataplex

__all__ = ["export_datahub", "import_datahub", "import_dataplex"]
