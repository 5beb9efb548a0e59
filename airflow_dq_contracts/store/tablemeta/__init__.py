"""Table metadata: what the sensors, their triggers and the statistics-first answers read (plain Python, no JVM).

* :mod:`.delta_log` — freshness and partition completeness from a Delta log (``FreshnessQuery``,
  ``CompletenessQuery``) and the column statistics of its add actions;
* :mod:`.table_facts` — the facts those queries share (newest timestamps, partition values, gaps);
* :mod:`.parquet_dir` — the same questions of a plain Parquet folder.

Outside the store, modules import this package, not its modules.
"""

from __future__ import annotations

from airflow_dq_contracts.store.delta import access_refused
from airflow_dq_contracts.store.tablemeta.delta_log import (
    CompletenessQuery,
    CompletenessResult,
    DeltaMetadataError,
    FreshnessQuery,
    FreshnessResult,
    TableNotFoundError,
    add_actions,
    query_column,
    query_extreme,
    resolve_table_path,
)
from airflow_dq_contracts.store.tablemeta.table_facts import epoch_micros

__all__ = [
    "CompletenessQuery",
    "CompletenessResult",
    "DeltaMetadataError",
    "FreshnessQuery",
    "FreshnessResult",
    "TableNotFoundError",
    "access_refused",
    "add_actions",
    "epoch_micros",
    "query_column",
    "query_extreme",
    "resolve_table_path",
]
