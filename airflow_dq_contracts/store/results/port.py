"""The results store's interface: what a run saves and what readers load, by key — never by file layout.

Modelled on Deequ's ``MetricsRepository``: callers (the Spark job, the operator's read-back, the report,
``dq-contracts history``, the baselines, the alert notifier) talk to a :class:`ResultsStore`; only its
implementation knows that results live in a Delta table partitioned by contract, that the registry is
a second table beside it, and how a commit is made safe.

Implementations:

* :class:`airflow_dq_contracts.store.results.delta_store.DeltaResultsStore` — plain Python + delta-rs
  (no JVM): every read; the writes delta-rs can commit from a driver or worker. Readers get it from
  :func:`airflow_dq_contracts.store.results.open_results_store`, never by its module.
* ``airflow_dq_contracts.store.sinks.SparkResultsStore`` — the same store inside a Spark job: writes
  that need Spark's Delta (catalog table names, a schema to evolve, a retry's ``replaceWhere``), and
  reads of catalog tables.

A backend implements the abstract methods; the readers' conveniences (:meth:`ResultsStore.read_run_result`)
are built on them here. Optional capabilities a backend may lack (:meth:`ResultsStore.count_run_rows`,
:meth:`ResultsStore.read_history_table`, :meth:`ResultsStore.quarantine_samples`,
:meth:`ResultsStore.read_results_table`, :meth:`ResultsStore.read_registry_rows`) raise
:class:`~airflow_dq_contracts.storage.locations.StoreError` saying so.

Example::

    store = open_results_store(TableLocation.resolve("/wh/dq_results"))
    checks = store.read_run("dq-3f2a…", contract_name="orders")
    window = store.read_history("orders", since=day - dt.timedelta(days=28), until=day)
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_dq_contracts.results import CheckResult, ContractResult
from airflow_dq_contracts.storage.locations import StoreError, TableLocation

__all__ = ["Columns", "HistoryRows", "ResultsStore", "TimeBound"]

#: A bound of a history window (None: open), the columns to read (None: the baselines'), the rows read.
TimeBound = dt.datetime | None
Columns = Sequence[str] | None
HistoryRows = list[dict[str, Any]]


class ResultsStore(abc.ABC):
    """One results table and the registry beside it.

    Keys: a run is ``run_id`` (unique per contract evaluation; a retry reuses it), history is a
    ``contract_name`` and a ``reference_time`` window, a registry row is ``(contract_name,
    contract_version)``. Errors are :class:`airflow_dq_contracts.storage.locations.StoreError`.
    """

    #: The results table as the user named it (path, URI or catalog name).
    results_table: str

    @abc.abstractmethod
    def write_run(self, records: Sequence[CheckResult], run_id: str, *, attempt: int | None = None) -> int | None:
        """Save one run's result rows: an append when the run is new, a replacement of its rows on a retry.

        Returns the table version of the commit that holds them (None when it cannot be told).
        ``attempt`` (the run's attempt; None: not given) travels with the commit, and a newer attempt's
        commit already there refuses it (:class:`~airflow_dq_contracts.store.fencing.StaleAttemptError`).
        """

    @abc.abstractmethod
    def read_run(
        self, run_id: str, *, contract_name: str | None = None, version: int | None = None
    ) -> list[CheckResult]:
        """One run's rows, ordered by contract and check id; ``version`` (the run's commit) makes it one read."""

    @abc.abstractmethod
    def read_history(
        self, contract_name: str, *, since: TimeBound = None, until: TimeBound = None, columns: Columns = None
    ) -> HistoryRows:
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

    # ------------------------------------------------------------------ optional capabilities

    def count_run_rows(self, table: TableLocation | str | None, run_id: str) -> int | None:
        """Rows of run ``run_id`` in a quarantine or valid ``table``; None when ``table`` is None, 0 when absent."""
        raise StoreError(f"{type(self).__name__} cannot count the rows of a quarantine or valid table")

    def read_history_table(
        self, contract_name: str, columns: Sequence[str], optional_columns: Sequence[str] = ()
    ) -> Any:
        """All of ``contract_name``'s rows as a ``pyarrow.Table`` (readers of many rows: the report)."""
        raise StoreError(f"{type(self).__name__} cannot read a contract's history as a table")

    def quarantine_samples(
        self, table: TableLocation | str, run_id: str, check_ids: Sequence[str], limit: int
    ) -> tuple[dict[str, list[dict[str, Any]]], list[str], int]:
        """(up to ``limit`` quarantined rows per check id, the dataset's column names, rows of the run)."""
        raise StoreError(f"{type(self).__name__} cannot read quarantined rows")

    def read_results_table(self, columns: Sequence[str], optional_columns: Sequence[str] = ()) -> Any:
        """Every contract's rows as a ``pyarrow.Table`` of ``columns`` (and ``optional_columns`` the table has).

        For readers of the whole table (the Airflow UI's overview); a missing table is an empty table.
        """
        raise StoreError(f"{type(self).__name__} cannot read the whole results table")

    def stream_results_table(self, columns: Sequence[str], optional_columns: Sequence[str] = ()) -> Any:
        """:meth:`read_results_table` as a ``pyarrow.RecordBatchReader``: readers that aggregate the whole table
        batch by batch never hold all of it (a backend without a streaming scan reads it whole)."""
        return self.read_results_table(columns, optional_columns).to_reader()

    def read_registry_rows(self, contract_name: str | None = None) -> list[dict[str, Any]]:
        """Every registry row (every contract version), or those of ``contract_name``; [] without a registry."""
        raise StoreError(f"{type(self).__name__} cannot list the registry")

    def query_results_table(self, queries: Callable[[Sequence[str]], Sequence[str]]) -> list[Any] | None:
        """SQL aggregates of the results table, computed where it is read (the Airflow UI's per-run summary).

        ``queries`` gets the table's column names and returns SQL queries over the table named ``results``; their
        results come back as ``pyarrow.Table`` s, in order (read whole: meant for aggregates). None: this backend
        runs no SQL, or there is no results table yet — the reader falls back to :meth:`stream_results_table`.
        """
        return None

    def data_version(self) -> tuple[int | None, ...]:
        """A value that changes whenever what the readers see changes (table versions); for readers' caches."""
        return (self.committed_version(),)

    # ------------------------------------------------------------------ built on the above

    def read_run_result(
        self,
        run_id: str,
        *,
        contract_name: str,
        version: int | None = None,
        quarantine_table: TableLocation | str | None = None,
        valid_table: TableLocation | str | None = None,
        check_order: Sequence[str] = (),
        run_filter: str | None = None,
    ) -> ContractResult | None:
        """One run as the :class:`~airflow_dq_contracts.results.ContractResult` its job built; None: no such run.

        The rows come from :meth:`read_run` (``version``: the run's results commit), the quarantine and
        valid counts from :meth:`count_run_rows`. Checks follow ``check_order`` (check ids, e.g. the
        contract's), unknown ones after it by id. The row count is the largest one among checks without
        a filter of their own, the times the first and last evaluation; a caller who knows better (the
        job's own report) cross-checks against this value rather than rebuilding it.
        """
        records = self.read_run(run_id, contract_name=contract_name, version=version)
        if not records:
            return None
        order = {check_id: index for index, check_id in enumerate(check_order)}
        records.sort(key=lambda r: (order.get(r.check_id, len(order)), r.check_id))
        unfiltered = [r.row_count for r in records if not r.filter] or [r.row_count for r in records]
        return ContractResult(
            run_id=run_id,
            contract_name=contract_name,
            contract_version=records[0].contract_version,
            dataset=records[0].dataset,
            row_count=max(unfiltered),
            checks=records,
            started_at=min(r.evaluated_at for r in records),
            finished_at=max(r.evaluated_at for r in records),
            results_table=self.results_table,
            quarantine_table=str(getattr(quarantine_table, "target", quarantine_table)) if quarantine_table else None,
            quarantine_rows=self.count_run_rows(quarantine_table, run_id) if quarantine_table else None,
            valid_table=str(getattr(valid_table, "target", valid_table)) if valid_table else None,
            valid_rows=self.count_run_rows(valid_table, run_id) if valid_table else None,
            filter=run_filter,
            results_version=version,
        )
