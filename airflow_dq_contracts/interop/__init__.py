"""Speak the ecosystem's formats: ODCS v3, DataHub assertions and Dataplex rules in; ODCS and DataHub out.

Plain Python (no Spark, no Airflow). Mapping tables and refusals: ``docs/interop.md``.

Example::

    from airflow_dq_contracts.interop import import_datahub, import_dataplex, export_datahub
    text = import_datahub(["assertions.yaml"])                  # contract YAML, a comment per check
    text = import_dataplex(["rules.json"], table="shop.orders")
    print(export_datahub(load_contract("contracts/orders.yaml")))
    print(export_odcs(load_contract("contracts/orders.yaml")))   # what `suggest --format odcs` calls
"""

from .datahub import import_datahub
from .datahub_export import export_datahub
from .dataplex import import_dataplex
from .odcs import export_odcs, import_odcs

__all__ = ["export_datahub", "export_odcs", "import_datahub", "import_dataplex", "import_odcs"]
