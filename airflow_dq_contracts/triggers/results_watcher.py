"""An event trigger for Airflow 3's ``AssetWatcher``: one asset event per contract run that lands in a results table.

Any contract run writes its verdict as one commit of rows to a Delta results table — a ``ContractCheckOperator``
task, ``dq-contracts run`` (``--incremental`` too), a stream's window (a run with its own run id).
:class:`ContractVerdictTrigger` watches that table from the triggerer and fires one
:class:`~airflow.triggers.base.TriggerEvent` per new run; Airflow turns each into an asset event of the asset
the watcher belongs to, so a DAG scheduled on that asset runs once per verdict, and
:func:`~airflow_dq_contracts.operators.require_contract` refuses the gated ones.

Payload
    The ``extra`` a check task puts on its own asset events (:func:`~airflow_dq_contracts.runs.verdict.verdict_extra`:
    ``extra["airflow_dq_contracts.verdict"]``, versioned, and Airflow's ``airflow.dataquality.result``), built
    from the run read back through the results port (:meth:`~airflow_dq_contracts.store.results.ResultsStore.read_run_result`);
    ``results.version`` is the run's commit. Airflow stores it as the event's ``extra["payload"]``
    (``extra["from_trigger"]`` is true); ``require_contract`` reads it there. What only the producing task knows
    is absent: ``quarantine``/``valid`` are None, ``report`` too; ``airflow`` names the producing task when the
    rows do (``dag_id``, ``task_id``, ``run_id``), else it is empty (a CLI run, a stream).

Cost
    No JVM, no pandas: the Delta log is read directly (:func:`~airflow_dq_contracts.store.tablemeta.commits_after`).
    A poll with nothing new is one metadata request (does the next commit file exist?); a new commit is one
    small JSON file (every results write of this package names its run in the commit), then the run's rows from
    the files of that one commit. ``OPTIMIZE``/``VACUUM`` commits land no run.

Filters
    ``contract_name`` and ``dataset`` (as the results rows spell it) keep only the runs that match; the others
    are passed over without an event.

Once
    Within one trigger's life a run is emitted at most once: a retried run rewrites its rows (a second commit
    with the same run id) and is not emitted again. Across a triggerer restart (or the trigger moving to another
    triggerer) Airflow re-creates the trigger from its keyword arguments, which are fixed when the DAG is parsed
    — a trigger cannot record how far it got. So the start decides the guarantee:

    * ``after_version=None`` (default): the table's newest version when the trigger starts — runs that land
      while no triggerer runs it are never emitted (**at most once**; nothing is emitted twice);
    * ``after_version=N``: every run after version N, at every start — a restart emits again what it emitted
      before (**at least once**; consumers see duplicates, each with the same verdict ``run_id``, and should be
      idempotent by it). Commits cleaned up from the log (older than its retention, after a checkpoint) cannot be
      read: the trigger starts at the oldest one left and logs a warning.

Errors
    An unreadable log or run (storage outage, refused credentials) is logged and retried at the next poll from
    the same position: nothing is skipped, and the watcher never stops (an asset watcher has no task to fail).

Example::

    from airflow.sdk import DAG, Asset, AssetWatcher

    verdicts = Asset("dq-verdicts://orders", watchers=[AssetWatcher(
        name="orders_verdicts",
        trigger=ContractVerdictTrigger(results_table="s3://lake/dq/results", contract_name="orders",
                                       storage_conn_id="lake", poll_interval=30))])
    with DAG("orders_consumer", schedule=[verdicts]):
        require_contract(verdicts, accept="quarantine") >> publish()
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow_dq_contracts.runs.verdict import VERDICT_KEY, verdict_extra
from airflow_dq_contracts.storage.connections import StorageConnectionError
from airflow_dq_contracts.storage.locations import StoreError, TableLocation
from airflow_dq_contracts.store import tablemeta
from airflow_dq_contracts.store.results import ResultsStore, open_results_store
from airflow_dq_contracts.triggers.delta_metadata import aget_storage_credentials
from airflow_dq_contracts.version_compat import BaseEventTrigger, TriggerEvent

_CLASSPATH = "airflow_dq_contracts.triggers.results_watcher.ContractVerdictTrigger"


class ContractVerdictTrigger(BaseEventTrigger):
    """Fire one event per contract run that lands in ``results_table`` (see the module docs).

    :param results_table: the Delta results table: a path, an ``s3://`` URI, or a catalog name (placed in
        ``warehouse``, as the operator places it).
    :param contract_name: only runs of this contract (None: every contract).
    :param dataset: only runs over this dataset, as the results rows name it (None: any).
    :param after_version: emit the runs of commits after this table version; None: after the newest version when
        the trigger starts (see "Once" in the module docs).
    :param poll_interval: seconds between two looks at the log.
    :param storage_conn_id: the storage connection (``aws``) whose credentials reach the table; looked up in
        the triggerer, its secrets masked — only its name is stored with the trigger.
    :param warehouse: where a catalog name is placed (default ``$DQ_CONTRACTS_WAREHOUSE``).

    Example::

        ContractVerdictTrigger(results_table="/lake/dq/results", contract_name="orders", poll_interval=10)
    """

    def __init__(
        self,
        *,
        results_table: str,
        contract_name: str | None = None,
        dataset: str | None = None,
        after_version: int | None = None,
        poll_interval: float = 30.0,
        storage_conn_id: str | None = None,
        warehouse: str | None = None,
    ) -> None:
        super().__init__()
        if not results_table:
            raise ValueError("ContractVerdictTrigger needs results_table")
        self.results_table = results_table
        self.contract_name = contract_name or None
        self.dataset = dataset or None
        self.after_version = None if after_version is None else int(after_version)
        self.poll_interval = float(poll_interval)
        self.storage_conn_id = storage_conn_id or None
        self.warehouse = warehouse or None
        #: Run ids emitted in this trigger's life (never twice).
        self.emitted: set[str] = set()
        #: The version after which runs are new: None until the trigger has started, then the last commit read.
        self.position: int | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """(classpath, JSON keyword arguments): what Airflow stores, and what identifies the watcher's trigger."""
        return (
            _CLASSPATH,
            {
                "results_table": self.results_table,
                "contract_name": self.contract_name,
                "dataset": self.dataset,
                "after_version": self.after_version,
                "poll_interval": self.poll_interval,
                "storage_conn_id": self.storage_conn_id,
                "warehouse": self.warehouse,
            },
        )

    async def _location(self) -> TableLocation:
        """The results table resolved once, with the storage connection's options (looked up in the triggerer)."""
        where = TableLocation.resolve(self.results_table, self.warehouse)
        if self.storage_conn_id:
            creds = await aget_storage_credentials(self.storage_conn_id)
            creds.check_location(where.uri)
            where = where.with_options(creds.storage_options(None))
        return where

    def _start(self, where: TableLocation) -> int:
        """The version after which runs are new (see "Once" in the module docs)."""
        if self.after_version is None:
            return tablemeta.newest_version(where.uri, where.options)
        oldest = tablemeta.oldest_commit(where.uri, where.options)
        if oldest is not None and self.after_version + 1 < oldest:
            self.log.warning(
                "commits %d to %d of %s are no longer in its Delta log (cleaned up): their runs cannot be emitted; "
                "starting at commit %d",
                self.after_version + 1,
                oldest - 1,
                where.uri,
                oldest,
            )
            return oldest - 1
        return self.after_version

    def verdict(self, store: ResultsStore, run_id: str, version: int) -> dict[str, Any] | None:
        """The event payload of run ``run_id`` written by commit ``version``; None when the filters leave it out
        (or the commit no longer holds its rows)."""
        # The commit's own rows first (one small read): a run of another contract is passed over here, never
        # looked for in the whole table.
        records = store.read_run(run_id, version=version)
        if not records or (self.contract_name is not None and records[0].contract_name != self.contract_name):
            return None
        result = store.read_run_result(run_id, contract_name=records[0].contract_name, version=version)
        if result is None or (self.dataset is not None and result.dataset != self.dataset):
            return None
        first = result.checks[0]
        airflow = (
            {"dag_id": first.dag_id, "run_id": first.airflow_run_id, "task_id": first.task_id} if first.dag_id else {}
        )
        return verdict_extra(result.summary(), results_version=version, airflow=airflow)

    def _poll(
        self, store: ResultsStore, where: TableLocation, position: int
    ) -> tuple[int, list[dict[str, Any]], Exception | None]:
        """(the new position, the payloads of the runs landed after ``position`` in commit order, the error that
        stopped the poll). The position only passes a commit whose runs were all read: a failed read is retried."""
        payloads: list[dict[str, Any]] = []
        taken: set[str] = set()
        try:
            for commit in tablemeta.commits_after(where.uri, position, where.options):
                found = []
                for run_id in commit.run_ids:
                    if run_id in self.emitted or run_id in taken:
                        continue
                    payload = self.verdict(store, run_id, commit.version)
                    if payload is not None:
                        found.append(payload)
                        taken.add(run_id)
                payloads.extend(found)
                position = commit.version
        except (StoreError, tablemeta.DeltaMetadataError, OSError, ValueError) as exc:
            return position, payloads, exc
        return position, payloads, None

    def _retry_later(self, exc: Exception) -> None:
        self.log.warning("cannot read %s now (%s); next try in %gs", self.results_table, exc, self.poll_interval)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll the log every ``poll_interval`` seconds, forever; yield one event per new run's verdict."""
        where: TableLocation | None = None
        store: ResultsStore | None = None
        while True:
            payloads: list[dict[str, Any]] = []
            try:
                if where is None or store is None:
                    where = await self._location()
                    store = open_results_store(where, warehouse=self.warehouse)
                if self.position is None:
                    self.position = await asyncio.to_thread(self._start, where)
                    self.log.info("watching %s for contract runs after version %d", where.uri, self.position)
                self.position, payloads, failed = await asyncio.to_thread(self._poll, store, where, self.position)
                if failed is not None:  # retried from the same position: a run is never skipped for a failed read
                    self._retry_later(failed)
            except (StorageConnectionError, StoreError, tablemeta.DeltaMetadataError, OSError, ValueError) as exc:
                self._retry_later(exc)
            for payload in payloads:
                verdict = payload[VERDICT_KEY]
                self.emitted.add(str(verdict["run_id"]))
                self.log.info(
                    "run %s of contract %s landed (version %s): %s",
                    verdict["run_id"],
                    verdict["contract"].get("name"),
                    verdict["results"]["version"],
                    str(verdict["decision"]).upper(),
                )
                yield TriggerEvent(payload)
            await asyncio.sleep(self.poll_interval)


__all__ = ["ContractVerdictTrigger"]
