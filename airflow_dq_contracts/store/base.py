"""The results store's interface: what a run saves and what readers load, by key — never by file layout.

Modelled on Deequ's ``MetricsRepository``: callers (the Spark job, the operator's read-back, the report,
``dq-contracts history``, the baselines, the alert notifier) talk to a :class:`ResultsStore`; only its
implementation knows that results live in a Delta table partitioned by contract, that the registry is
a second table beside it, and how a commit is made safe.

Implementations:

* :class:`airflow_dq_contracts.store.results_store.DeltaResultsStore` — plain Python + delta-rs
  (no JVM): every read; the writes delta-rs can commit from a driver or worker.
* ``airflow_dq_contracts.store.sinks.SparkResultsStore`` — the same store inside a Spark job: writes
  that need Spark's Delta (catalog table names, a schema to evolve, a retry's ``replaceWhere``), and
  reads of catalog tables.

Example::

    store = DeltaResultsStore("/wh/dq_results")
    checks = store.read_run("dq-3f2a…", contract_name="orders")
    window = store.read_history("orders", since=day - dt.timedelta(days=28), until=day)
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_dq_contracts.results import CheckResult

__all__ = ["ResultsStore"]


class ResultsStore(abc.ABC):
    """One results table and the registry beside it.

    Keys: a run is ``run_id`` (unique per contract evaluation; a retry reuses it), history is a
    ``contract_name`` and a ``reference_time`` window, a registry row is ``(contract_name,
    contract_version)``. Errors are :class:`airflow_dq_contracts.store.delta.StoreError`.
    """

    #: The results table as the user named it (path, URI or catalog name).
    results_table: str

    @abc.abstractmethod
    def write_run(self, records: Sequence[CheckResult], run_id: str) -> int | None:
        """Save one run's result rows: an append when the run is new, a replacement of its rows on a retry.

        Returns the table version of the commit that holds them (None when it cannot be told).
        """

    @abc.abstractmethod
    def read_run(
        self, run_id: str, *, contract_name: str | None = None, version: int | None = None
    ) -> list[CheckResult]:
        """One run's rows, ordered by contract and check id; ``version`` (the run's commit) makes it one read."""

    @abc.abstractmethod
    def read_history(
        self,
        contract_name: str,
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of ``contract_name`` with ``since ≤ reference_time ≤ until``; a missing table is an empty history."""

    @abc.abstractmethod
    def upsert_registry(self, row: Mapping[str, Any]) -> None:
        """Insert or merge the registry row of ``(contract_name, contract_version)``."""

    @abc.abstractmethod
    def read_registry(self, contract_name: str, contract_version: str | None = None) -> dict[str, Any] | None:
        """A contract's registry row (one version, or the most recently run one); None when absent."""

    @abc.abstractmethod
    def committed_version(self) -> int | None:
        """The results table's current version (None when it does not exist yet)."""
