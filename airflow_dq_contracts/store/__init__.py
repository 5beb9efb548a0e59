"""The store: where a run's results, quarantined and valid rows live, and what the sensors read — three wings.

* :mod:`.results` — the results port (:class:`~.results.ResultsStore`, :func:`~.results.open_results_store`,
  a run as a ``ContractResult``) and its adapters: delta-rs (plain Python) and Spark's (Spark side).
* :mod:`.sinks` — the Spark side's facade: quarantine and valid rows, results and registry writes through
  Spark, the Spark results store (imports pyspark: only Spark code imports it).
* :mod:`.tablemeta` — freshness and partition facts from Delta metadata and Parquet folders (the sensors'
  and triggers' questions, and the statistics-first answers).

Shared low-level code: :mod:`.delta` (the one delta-rs opener, scans, :class:`StoreError` /
:class:`TableNotFoundError`), :mod:`.commit_lock` (local commits in turn), :mod:`.spark_tables` (Spark
targets, safe creation, commit retries) and :mod:`.spark_remote` (Spark Connect). Locations and
credentials are :mod:`airflow_dq_contracts.storage`'s. Outside the store, modules import these packages
(this one, ``results``, ``sinks``, ``tablemeta``), never an adapter module.
"""

from __future__ import annotations

from airflow_dq_contracts.store.delta import (
    StoreError,
    TableNotFoundError,
    access_refused,
    open_table,
    table_exists,
)

__all__ = ["StoreError", "TableNotFoundError", "access_refused", "open_table", "table_exists"]
