"""The results store: the port every reader and writer of results goes through, and its adapters.

* :class:`ResultsStore` (:mod:`.port`) — write/read a run, a run as a ``ContractResult``, a history
  window, the registry, the committed version.
* :func:`open_results_store` — the store of one results table, from its
  :class:`~airflow_dq_contracts.storage.locations.TableLocation` (or a target resolved here once).
* :func:`register_results_backend` — another backend, chosen by the URI scheme of the results table
  (``memory://runs`` → the factory registered for ``memory``); anything else is the Delta table.
* Adapters: :mod:`.delta_store` (delta-rs, plain Python) with :mod:`.driver_commits` (the commits delta-rs
  makes from a driver), :mod:`.history` (a contract's window, summarised per check) and :mod:`.registry`
  (the registry's layout and reader); on the Spark side :mod:`.spark_store` (``SparkResultsStore``),
  :mod:`.spark_writes`, :mod:`.spark_registry` and :mod:`.spark_history`, which only Spark code imports
  (through ``airflow_dq_contracts.store.sinks``). Nothing outside the store imports an adapter module.

Example::

    >>> store = open_results_store(TableLocation.resolve("dq.results", "/wh"))
    >>> isinstance(store, ResultsStore), store.results_table
    (True, 'dq.results')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from airflow_dq_contracts.storage.locations import StoreError, TableLocation
from airflow_dq_contracts.store.delta import TableNotFoundError
from airflow_dq_contracts.store.results.delta_store import DeltaResultsStore
from airflow_dq_contracts.store.results.history import HISTORY_COLUMNS, REPORT_COLUMNS, check_histories, read_history
from airflow_dq_contracts.store.results.port import ResultsStore
from airflow_dq_contracts.store.results.registry import (
    REGISTRY_COLUMNS,
    contract_source_text,
    contract_text_hash,
    registry_row,
)

__all__ = [
    "HISTORY_COLUMNS",
    "REGISTRY_COLUMNS",
    "REPORT_COLUMNS",
    "ResultsStore",
    "StoreError",
    "TableLocation",
    "TableNotFoundError",
    "check_histories",
    "contract_source_text",
    "contract_text_hash",
    "open_results_store",
    "read_history",
    "register_results_backend",
    "registry_row",
]

#: A results backend: the store of one results table, from its location and the warehouse.
ResultsBackend = Callable[..., ResultsStore]
_BACKENDS: dict[str, ResultsBackend] = {}


def register_results_backend(scheme: str, factory: ResultsBackend) -> None:
    """Open results tables named ``<scheme>://…`` with ``factory(location, warehouse=…)`` (replaces an earlier one).

    ``location`` is the resolved :class:`~airflow_dq_contracts.storage.locations.TableLocation` (its storage
    options included). Every reader that opens the store by its table — the operator's read-back, the
    report, ``dq-contracts history``, the alert notifier, ``suggest`` — then uses that backend.

    >>> register_results_backend("dq-doctest", lambda location, warehouse=None: location.uri)
    >>> open_results_store("dq-doctest://runs")
    'dq-doctest://runs'
    >>> _ = _BACKENDS.pop("dq-doctest")
    """
    key = scheme.strip().lower()
    if not key or "://" in key:
        raise ValueError(f"a results backend is registered for a URI scheme such as 'memory', got {scheme!r}")
    _BACKENDS[key] = factory


def _scheme(location: TableLocation | str) -> str | None:
    text = location.uri if isinstance(location, TableLocation) else str(location).strip()
    return text.split("://", 1)[0].lower() if "://" in text else None


def open_results_store(
    location: TableLocation | str,
    *,
    warehouse: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> ResultsStore:
    """The results store of one results table: a registered backend's (:func:`register_results_backend`), else
    the Delta table's (delta-rs: no Spark, no JVM).

    ``location`` is used as resolved when it is a :class:`~airflow_dq_contracts.storage.locations.TableLocation`
    (the edge resolved it); a path, URI or catalog name is resolved here, once, in ``warehouse``.
    ``warehouse`` also places the quarantine/valid tables a caller names later; ``storage_options`` apply
    when the location carries none.
    """
    factory = _BACKENDS.get(_scheme(location) or "")
    if factory is not None:
        return factory(TableLocation.of(location, warehouse, storage_options=storage_options), warehouse=warehouse)
    return DeltaResultsStore(location, warehouse=warehouse, storage_options=storage_options)
