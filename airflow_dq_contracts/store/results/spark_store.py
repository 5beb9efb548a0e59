"""The results store inside a Spark job: :class:`SparkResultsStore`, the Spark twin of ``DeltaResultsStore``.

The job writes through Spark's Delta (catalog table names, a schema to evolve, a retry's
``replaceWhere``, object stores configured in the session) with delta-rs fast paths where they are
safe; it reads local tables with delta-rs (no Spark job) and everything else with Spark. Each
method delegates to the one module-level implementation:

=====================  ==========================================================================
``write_run``          :func:`~airflow_dq_contracts.store.results.spark_writes.write_results`, then
                       :func:`~airflow_dq_contracts.store.results.spark_writes.committed_version`
``read_run``           :class:`~airflow_dq_contracts.store.results.delta_store.DeltaResultsStore` (local
                       paths) or :func:`~airflow_dq_contracts.store.results.spark_writes.read_results`
``read_history``       :func:`~airflow_dq_contracts.store.results.spark_history.load_history`
``upsert_registry``    :func:`~airflow_dq_contracts.store.results.spark_registry.write_registry`
``read_registry``      :func:`~airflow_dq_contracts.store.results.registry.read_registry` (local paths) or
                       :func:`~airflow_dq_contracts.store.results.spark_registry.read_registry`
``committed_version``  :func:`~airflow_dq_contracts.store.results.spark_writes.committed_version`
=====================  ==========================================================================

Example::

    store = SparkResultsStore(spark, "/wh/dq_results")
    version = store.write_run(result.checks, result.run_id)
    checks = store.read_run(result.run_id, contract_name="orders", version=version)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from airflow_dq_contracts.results import CheckResult
from airflow_dq_contracts.store.delta import is_path
from airflow_dq_contracts.store.results import registry
from airflow_dq_contracts.store.results import spark_registry as registry_sink
from airflow_dq_contracts.store.results import spark_writes as spark_results
from airflow_dq_contracts.store.results.delta_store import DeltaResultsStore
from airflow_dq_contracts.store.results.port import Columns, HistoryRows, ResultsStore, TimeBound
from airflow_dq_contracts.store.results.spark_history import load_history
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

__all__ = ["SparkResultsStore"]


def _local(target: str, capabilities: SessionCapabilities) -> bool:
    """A path on this machine's filesystem (delta-rs reads it without the session's credentials)."""
    text = target.strip()
    if not capabilities.driver_sees_outputs:  # Spark Connect: a path is the server's, not this client's
        return False
    return is_path(text) and ("://" not in text or text.startswith("file:"))


class SparkResultsStore(ResultsStore):
    """The results table ``results_table`` (path, URI or catalog name) and its registry, through ``spark``.

    ``capabilities``: what ``spark`` can do, as whoever made the session says (the job, ``dq-contracts
    run``; default: as the session tells) — handed to every write and read.

    Example::

        store = SparkResultsStore(spark, "dq.results")
        store.upsert_registry(registry_row(contract, ...))
        store.write_run(result.checks, result.run_id)
    """

    def __init__(
        self, spark: SparkSession, results_table: str, capabilities: SessionCapabilities | None = None
    ) -> None:
        self.spark = spark
        self.results_table = results_table
        self.capabilities = capabilities or SessionCapabilities.of(spark)
        #: The registry table beside the results (see :func:`~airflow_dq_contracts.store.results.registry.registry_table_for`).
        self.registry_table = registry.registry_table_for(results_table)

    def __repr__(self) -> str:
        return f"SparkResultsStore({self.results_table!r})"

    def write_run(self, records: Sequence[CheckResult], run_id: str, *, attempt: int | None = None) -> int | None:
        """Append a new run's rows, replace a retried run's; the version of that commit (None: unknown)."""
        spark_results.write_results(
            self.spark, records, self.results_table, run_id=run_id, capabilities=self.capabilities, attempt=attempt
        )
        return self.committed_version()

    def read_run(
        self, run_id: str, *, contract_name: str | None = None, version: int | None = None
    ) -> list[CheckResult]:
        """One run's rows, ordered by contract and check id (a local table is read by delta-rs)."""
        if _local(self.results_table, self.capabilities):
            return DeltaResultsStore(self.results_table).read_run(run_id, contract_name=contract_name, version=version)
        records = spark_results.read_results(self.spark, self.results_table, run_id, self.capabilities)
        return [r for r in records if contract_name is None or r.contract_name == contract_name]

    def read_history(
        self, contract_name: str, *, since: TimeBound = None, until: TimeBound = None, columns: Columns = None
    ) -> HistoryRows:
        """See :meth:`ResultsStore.read_history` (:func:`~airflow_dq_contracts.store.results.spark_history.load_history`)."""
        return load_history(self.spark, self.results_table, contract_name, since, until, columns=columns)

    def upsert_registry(self, row: Mapping[str, Any]) -> None:
        """Insert or merge the registry row of ``(contract_name, contract_version)``."""
        registry_sink.write_registry(self.spark, row, self.registry_table, capabilities=self.capabilities)

    def read_registry(self, contract_name: str, contract_version: str | None = None) -> dict[str, Any] | None:
        """A contract's registry row (one version, or the most recently run one); None when absent."""
        if _local(self.registry_table, self.capabilities):
            return registry.read_registry(self.registry_table, contract_name, contract_version)
        return registry_sink.read_registry(
            self.spark, self.registry_table, contract_name, contract_version, self.capabilities
        )

    def committed_version(self) -> int | None:
        """The results table's version as this session last committed or read it (None when unknown)."""
        return spark_results.committed_version(self.spark, self.results_table, self.capabilities)
