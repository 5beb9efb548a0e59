"""The results store on delta-rs: a run's results, its history, the registry — no Spark, no JVM.

:class:`DeltaResultsStore` is the plain-Python implementation of
:class:`~airflow_dq_contracts.store.results.port.ResultsStore`: the operator's read-back, the report,
``dq-contracts history``, the alert notifier and the baselines read through it. Every table is
opened by :func:`airflow_dq_contracts.store.delta.open_table` (one opener, one error mapping:
:class:`~airflow_dq_contracts.store.delta.StoreError`, here also called :class:`ResultsStoreError`).
The commits it can make itself (a new run's append, a registry upsert on a local table) are those of
:mod:`airflow_dq_contracts.store.results.driver_commits`; anything else needs Spark's Delta writer
(``airflow_dq_contracts.store.sinks``).

Plain Python plus ``deltalake``: the Airflow operator imports this module to read what the Spark
job wrote, so it must not import ``pyspark`` (not even transitively) and must not start a JVM.
``deltalake`` and ``pyarrow`` are imported lazily, inside the functions.

delta-rs addresses tables by path or URI only; a catalog table name (``dq.results``) is read at
its place in the warehouse layout (``warehouse=`` or ``$DQ_CONTRACTS_WAREHOUSE``).

A :class:`~airflow_dq_contracts.storage.locations.TableLocation` given to it is used as resolved.

Example::

    >>> from airflow_dq_contracts.store.results.delta_store import DeltaResultsStore
    >>> DeltaResultsStore("dq.results", warehouse="/wh").location
    '/wh/dq.db/results'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_dq_contracts.results import (
    EVOLVED_RESULT_COLUMNS,
    QUARANTINE_RUN_ID,
    QUARANTINE_VIOLATIONS,
    RESULT_COLUMNS,
    CheckResult,
)
from airflow_dq_contracts.storage.locations import TableLocation
from airflow_dq_contracts.store.delta import (
    StoreError,
    TableNotFoundError,
    constant_strings,
    is_path,
    normalise_location,
    open_table,
    plain_rows,
    scan_table,
    sql_string,
    stream_table,
    table_exists,
)
from airflow_dq_contracts.store.results import driver_commits, history, registry
from airflow_dq_contracts.store.results.port import Columns, HistoryRows, ResultsStore, TimeBound

__all__ = [
    "DeltaResultsStore",
    "ResultsStoreError",
    "count_run_rows",
    "is_path",
    "plain_rows",
    "read_quarantine_count",
    "read_results",
    "sql_string",
]

#: The store's error (an alias kept for the callers and tests that name it so).
ResultsStoreError = StoreError
#: Quarantined rows read at most to find a report's samples.
SAMPLE_SCAN_LIMIT = 5_000


def commit_rows(location: str, version: int, run_id: str, names: list[str]) -> list[dict[str, Any]] | None:
    """The rows commit ``version`` of the results table added, if it is a write of run ``run_id``.

    Reads that one JSON log entry and the data files it adds, so its cost does not depend on the
    table's history. None whenever the answer could differ from a scan of the table (the commit is
    not the run's results write, a file carries a deletion vector or lives outside the table,
    a column is not where a plain table keeps it) or the storage cannot be read this way; the
    caller then scans the table.
    """
    import urllib.parse

    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    try:
        if "://" in location:
            filesystem, root = pafs.FileSystem.from_uri(location)
        else:
            filesystem, root = pafs.LocalFileSystem(), os.path.abspath(location)
        with filesystem.open_input_stream(f"{root}/_delta_log/{version:020d}.json") as stream:
            actions = [json.loads(line) for line in stream.read().decode("utf-8").splitlines() if line.strip()]
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        tag = json.loads(info.get("userMetadata") or "{}")
        if not (
            isinstance(tag, dict)
            and tag.get("writer") == "airflow-dq-contracts"
            and tag.get("table") == "results"
            and tag.get("run_id") == run_id
        ):
            return None
        if any("metaData" in a for a in actions):
            return None  # a schema change in this commit (evolution, column mapping): let delta-rs read it
        pieces = []
        for add in (a["add"] for a in actions if "add" in a):
            if add.get("deletionVector") or "://" in add["path"]:
                return None
            # One file, read as such: read_table would build a dataset (its module alone costs ~0.3 s to import).
            with filesystem.open_input_file(f"{root}/{urllib.parse.unquote(add['path'])}") as handle:
                data = pq.ParquetFile(handle).read()
            columns = []
            for name in names:
                if name in data.column_names:
                    columns.append(data.column(name))
                elif name in (add.get("partitionValues") or {}):
                    columns.append(constant_strings(add["partitionValues"][name], data.num_rows))
                else:
                    return None
            pieces.append(pa.table(columns, names=names))
        rows = [row for piece in pieces for row in plain_rows(piece)]
    except Exception:  # noqa: BLE001 - any doubt: the caller scans the table instead
        return None
    if any(row.get("run_id") != run_id for row in rows):
        return None
    return rows


def read_results(
    path: str,
    run_id: str,
    *,
    contract_name: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    version: int | None = None,
) -> list[CheckResult]:
    """The check results of one run, read from the Delta results table at ``path`` with delta-rs.

    Ordered by ``contract_name`` then ``check_id`` (Delta keeps no row order). An unknown
    ``run_id`` gives an empty list; a missing table raises :class:`ResultsStoreError`. Give
    ``contract_name`` when it is known (the operator does): the table is partitioned by it, so
    only that contract's files are considered — the read-back stays as cheap after thousands of
    runs of other contracts. Give ``version`` — the run's results commit, as the job reports it —
    and only that commit's log entry and files are read, whatever the length of the table's
    history; when that commit is not the run's results write (or cannot be read that way) the
    table is scanned as without it.

    Example::

        checks = read_results("/data/dq/results", run_id="dq-3f2a…", contract_name="orders")
        failed = [c.check_id for c in checks if not c.passed]
    """
    if version is not None and is_path(path):
        fast = commit_rows(normalise_location(path), int(version), run_id, [name for name, _ in RESULT_COLUMNS])
        if fast is not None and (contract_name is None or all(r["contract_name"] == contract_name for r in fast)):
            records = [CheckResult.from_dict(row) for row in fast]
            records.sort(key=lambda r: (r.contract_name or "", r.check_id or ""))
            return records
    table = open_table(path, storage_options=storage_options, what="results")
    # A table written by an earlier release lacks the second-wave columns: they read as NULL.
    present = set(table.schema().to_arrow().names)
    names = [name for name, _ in RESULT_COLUMNS if name in present or name not in EVOLVED_RESULT_COLUMNS]
    predicate = f"run_id = {sql_string(run_id)}"
    if contract_name is not None:
        predicate = f"contract_name = {sql_string(contract_name)} AND {predicate}"
    rows = plain_rows(scan_table(table, path, "results", names, predicate))
    records = [CheckResult.from_dict(row) for row in rows]
    records.sort(key=lambda r: (r.contract_name or "", r.check_id or ""))
    return records


def read_quarantine_count(path: str, run_id: str, *, storage_options: Mapping[str, str] | None = None) -> int:
    """How many rows run ``run_id`` set aside in the Delta quarantine table at ``path``.

    Example::

        n = read_quarantine_count("/data/dq/quarantine/orders", run_id="dq-3f2a…")
    """
    table = open_table(path, storage_options=storage_options, what="quarantine")
    predicate = f"{QUARANTINE_RUN_ID} = {sql_string(run_id)}"
    return int(scan_table(table, path, "quarantine", [QUARANTINE_RUN_ID], predicate).num_rows)


def count_run_rows(
    target: TableLocation | str | None,
    run_id: str,
    *,
    warehouse: str | None,
    storage_options: Mapping[str, str] | None = None,
) -> int | None:
    """Rows of run ``run_id`` in a quarantine or valid table (a location, path or catalog name); None without one.

    A table that does not exist is 0 rows: a run that set nothing aside never created it. A
    :class:`~airflow_dq_contracts.storage.locations.TableLocation` is read where it says (its own options first).

    Example::

        n = count_run_rows("silver.orders_quarantine", "dq-3f2a…", warehouse="/wh")
    """
    if not target:
        return None
    where = TableLocation.of(target, warehouse, storage_options=storage_options)
    location, storage_options = where.uri, where.options
    if not table_exists(location, storage_options):
        return 0
    return read_quarantine_count(location, run_id, storage_options=storage_options)


class DeltaResultsStore(ResultsStore):
    """The results table (and the registry beside it) read — and, where delta-rs can, written — without Spark.

    ``results_table`` is a :class:`~airflow_dq_contracts.storage.locations.TableLocation` (used as
    resolved, its options too), or a path, a URI or a catalog name (then found in the warehouse layout
    of ``warehouse`` or ``$DQ_CONTRACTS_WAREHOUSE``), resolved once, here. ``storage_options`` go to every
    open (object-store credentials).

    Example::

        store = DeltaResultsStore("/wh/dq_results")
        checks = store.read_run("dq-3f2a…", contract_name="orders")
        owner = (store.read_registry("orders") or {}).get("owner")
    """

    def __init__(
        self,
        results_table: TableLocation | str,
        *,
        storage_options: Mapping[str, str] | None = None,
        warehouse: str | None = None,
    ) -> None:
        where = TableLocation.of(results_table, warehouse, storage_options=storage_options)
        self.table_location = where
        self.results_table = where.target
        self.warehouse = warehouse
        self.storage_options: dict[str, str] | None = where.options
        #: Where delta-rs reads the results table, and the registry beside it.
        self.location = where.uri
        self.registry_location = registry.registry_table_for(self.location)

    def __repr__(self) -> str:
        return f"DeltaResultsStore({self.results_table!r} at {self.location!r})"

    def write_run(self, records: Sequence[CheckResult], run_id: str, *, attempt: int | None = None) -> int | None:
        """Append a new run's rows with delta-rs (on S3: append or replace); :class:`StoreError` when only
        Spark's writer can commit them."""
        if driver_commits.on_object_store(self.location):
            return driver_commits.commit_results(
                self.location, records, run_id, storage_options=self.storage_options, attempt=attempt
            )
        version = driver_commits.append_results(
            self.location, records, run_id, storage_options=self.storage_options, attempt=attempt
        )
        if version is None:
            raise StoreError(
                f"this commit needs Spark's Delta writer: delta-rs cannot write run {run_id!r} into the results "
                f"table {self.location!r} here (a retry's replacement, another schema, or remote storage)",
                self.location,
            )
        return version

    def read_run(
        self, run_id: str, *, contract_name: str | None = None, version: int | None = None
    ) -> list[CheckResult]:
        """One run's rows, ordered by contract and check id (see :func:`read_results`)."""
        return read_results(
            self.location, run_id, contract_name=contract_name, storage_options=self.storage_options, version=version
        )

    def read_history(
        self, contract_name: str, *, since: TimeBound = None, until: TimeBound = None, columns: Columns = None
    ) -> HistoryRows:
        """See :meth:`ResultsStore.read_history` (:func:`~airflow_dq_contracts.store.results.history.read_history`)."""
        return history.read_history(
            self.location,
            contract_name,
            since=since,
            until=until,
            columns=history.HISTORY_COLUMNS if columns is None else columns,
            storage_options=self.storage_options,
        )

    def read_history_table(
        self, contract_name: str, columns: Sequence[str], optional_columns: Sequence[str] = ()
    ) -> Any:
        """All of ``contract_name``'s rows as a ``pyarrow.Table`` (for readers of millions of rows, e.g. the report).

        ``columns`` must be there (else :class:`StoreError`); ``optional_columns`` are read when the
        table has them (a table written by an earlier release lacks some). A missing table raises
        :class:`~airflow_dq_contracts.store.delta.TableNotFoundError`.
        """
        table = open_table(self.location, storage_options=self.storage_options, what="results")
        present = set(table.schema().to_arrow().names)
        wanted = [*columns, *(c for c in optional_columns if c in present and c not in columns)]
        # The results table is partitioned by contract_name: this predicate reads one directory.
        return scan_table(table, self.location, "results", wanted, f"contract_name = {sql_string(contract_name)}")

    def read_results_table(self, columns: Sequence[str], optional_columns: Sequence[str] = ()) -> Any:
        """Every contract's rows as a ``pyarrow.Table`` (``optional_columns`` when the table has them); a missing
        table is an empty table of ``columns``."""
        import pyarrow as pa

        try:
            table = open_table(self.location, storage_options=self.storage_options, what="results")
        except TableNotFoundError:
            return pa.table({name: pa.array([], pa.string()) for name in columns})
        present = set(table.schema().to_arrow().names)
        wanted = [*columns, *(c for c in optional_columns if c in present and c not in columns)]
        return scan_table(table, self.location, "results", wanted, None)

    def stream_results_table(self, columns: Sequence[str], optional_columns: Sequence[str] = ()) -> Any:
        """Every contract's rows as a ``pyarrow.RecordBatchReader`` of ``columns`` (``optional_columns`` when the
        table has them), read file by file; a missing table is an empty stream of ``columns``."""
        import pyarrow as pa

        try:
            table = open_table(self.location, storage_options=self.storage_options, what="results")
        except TableNotFoundError:
            return pa.table({name: pa.array([], pa.string()) for name in columns}).to_reader()
        present = set(table.schema().to_arrow().names)
        wanted = [*columns, *(c for c in optional_columns if c in present and c not in columns)]
        return stream_table(table, self.location, "results", wanted, None)

    def query_results_table(self, queries: Callable[[Sequence[str]], Sequence[str]]) -> list[Any] | None:
        """The results of ``queries(<the table's column names>)`` — DataFusion SQL over the table named ``results``,
        run by delta-rs's own engine (deletion vectors and column mapping honoured) in one snapshot of the table —
        as ``pyarrow.Table`` s; None when there is no results table yet."""
        import pyarrow as pa
        from deltalake import QueryBuilder

        try:
            table = open_table(self.location, storage_options=self.storage_options, what="results")
        except TableNotFoundError:
            return None
        try:
            builder = QueryBuilder().register("results", table)
            return [
                pa.RecordBatchReader.from_stream(builder.execute(sql)).read_all()
                for sql in queries(list(table.schema().to_arrow().names))
            ]
        except Exception as exc:  # noqa: BLE001 - DataFusion raises its own errors, OSError, ValueError alike
            raise StoreError(f"results table {self.location!r} cannot be read: {exc}", self.location) from exc

    def read_registry_rows(self, contract_name: str | None = None) -> list[dict[str, Any]]:
        """Every registry row, or ``contract_name``'s (see :func:`~airflow_dq_contracts.store.results.registry.read_registry_rows`)."""
        return registry.read_registry_rows(self.registry_location, contract_name, storage_options=self.storage_options)

    def data_version(self) -> tuple[int | None, ...]:
        """The versions of the results table and of the registry beside it (None: not there yet)."""
        versions: list[int | None] = []
        for location, what in ((self.location, "results"), (self.registry_location, "registry")):
            try:
                table = open_table(location, storage_options=self.storage_options, what=what)
            except TableNotFoundError:
                versions.append(None)
                continue
            versions.append(int(table.version()))
        return tuple(versions)

    def upsert_registry(self, row: Mapping[str, Any]) -> None:
        """Merge ``row`` into the registry with delta-rs; :class:`StoreError` when only Spark's writer can."""
        if not driver_commits.upsert_registry(self.registry_location, row, storage_options=self.storage_options):
            raise StoreError(
                f"this commit needs Spark's Delta writer: delta-rs cannot upsert into the registry table "
                f"{self.registry_location!r} here (another schema, or remote storage)",
                self.registry_location,
            )

    def read_registry(self, contract_name: str, contract_version: str | None = None) -> dict[str, Any] | None:
        """A contract's registry row (see :func:`~airflow_dq_contracts.store.results.registry.read_registry`)."""
        return registry.read_registry(
            self.registry_location, contract_name, contract_version, storage_options=self.storage_options
        )

    def committed_version(self) -> int | None:
        """The results table's current version; None before its first commit."""
        try:
            table = open_table(self.location, storage_options=self.storage_options, what="results")
        except TableNotFoundError:
            return None
        return int(table.version())

    def _other(self, table: TableLocation | str) -> TableLocation:
        """A quarantine or valid table beside this store: a location as given, a name in this store's warehouse."""
        return TableLocation.of(table, self.warehouse, storage_options=self.storage_options)

    def read_quarantine_count(self, table: TableLocation | str, run_id: str) -> int:
        """Rows run ``run_id`` set aside in quarantine ``table`` (a location, or a path or name in this store's warehouse)."""
        where = self._other(table)
        return read_quarantine_count(where.uri, run_id, storage_options=where.options)

    def count_run_rows(self, table: TableLocation | str | None, run_id: str) -> int | None:
        """Rows of run ``run_id`` in a quarantine or valid ``table`` (see :func:`count_run_rows`)."""
        return count_run_rows(table and self._other(table), run_id, warehouse=self.warehouse)

    def quarantine_samples(
        self, table: TableLocation | str, run_id: str, check_ids: Sequence[str], limit: int
    ) -> tuple[dict[str, list[dict[str, Any]]], list[str], int]:
        """(up to ``limit`` rows per check id, the dataset's columns, rows of the run) of quarantine ``table``.

        Reads at most :data:`SAMPLE_SCAN_LIMIT` of the run's rows to find the samples; the count is exact.
        A table that does not exist yet (no run ever set a row aside) is an answer: no samples, 0 rows.
        """
        where = self._other(table)
        location, options = where.uri, where.options
        try:
            source = open_table(location, storage_options=options, what="quarantine")
        except TableNotFoundError:
            return {check_id: [] for check_id in check_ids}, [], 0
        predicate = f"{QUARANTINE_RUN_ID} = {sql_string(run_id)}"
        total = int(scan_table(source, location, "quarantine", [QUARANTINE_RUN_ID], predicate).num_rows)
        samples: dict[str, list[dict[str, Any]]] = {check_id: [] for check_id in check_ids}
        columns: list[str] = []
        if not check_ids or total == 0:
            return samples, columns, total
        seen = 0
        for batch in stream_table(source, location, "quarantine", None, predicate):
            columns = [c for c in batch.schema.names if not c.startswith("_dq_")]
            batch = batch.slice(0, max(0, SAMPLE_SCAN_LIMIT - seen))
            seen += batch.num_rows
            # Python objects only for this bounded prefix of the run's quarantined rows.
            for row in batch.to_pylist():
                broken = {(v or {}).get("check_id") for v in (row.get(QUARANTINE_VIOLATIONS) or [])}
                for check_id in check_ids:
                    if check_id in broken and len(samples[check_id]) < limit:
                        samples[check_id].append({c: row.get(c) for c in columns})
            if seen >= SAMPLE_SCAN_LIMIT or all(len(s) >= limit for s in samples.values()):
                break
        return samples, columns, total
