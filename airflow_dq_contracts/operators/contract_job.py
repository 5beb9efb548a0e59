"""How :class:`~airflow_dq_contracts.operators.contract_check.ContractCheckOperator` reaches its job and its storage.

:class:`ContractJobMixin` gives the operator (and the suite task through it) the hook that submits the job —
its transport chosen by the connection's type (:mod:`airflow_dq_contracts.hooks.transport`) — the
submission itself (a refused input fails the task for good, any other failure retryably), ``on_kill``,
and the storage connection's credentials, looked up and tried before anything is submitted.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from airflow_dq_contracts.contract import Contract
from airflow_dq_contracts.hooks.errors import ContractJobError
from airflow_dq_contracts.hooks.storage import StorageCredentials, check_access, check_location, get_storage_credentials
from airflow_dq_contracts.hooks.transport import JobHook, JobRequest, build_job_hook
from airflow_dq_contracts.runs import ReadBackError, read_back, warm_read_back
from airflow_dq_contracts.runspec import RunSpec
from airflow_dq_contracts.storage.s3 import needs_s3
from airflow_dq_contracts.version_compat import AirflowException, AirflowFailException

__all__ = ["ContractJobMixin", "collect_summary"]


class ContractJobMixin:
    """The operator's job and storage (see the module docs); its settings are the operator's parameters."""

    task_id: str
    conn_id: str
    spark_conf: dict[str, Any]
    packages: str | list[str] | None
    jars: str | list[str] | None
    spark_submit_kwargs: dict[str, Any]
    storage_conn_id: str | None
    _storage: StorageCredentials | None = None  # resolved in execute(), never serialised
    _on_s3: bool = False  # a location of the run is on S3: the job needs the s3a filesystem's jars
    _hook: JobHook | None = None

    def make_hook(
        self, application_args: list[str], files: list[str], warehouse: str, run_id: str | None = None
    ) -> JobHook:
        """The hook that submits the job (overridable, e.g. to add ``post_submit_commands``).

        ``run_id`` identifies the run across retries (the hook reclaims an earlier attempt's driver by it).
        The transport is chosen by the connection's type (:mod:`airflow_dq_contracts.hooks.transport`:
        ``spark_connect`` runs the job as a Spark Connect client, any other type through spark-submit).
        """
        return build_job_hook(
            JobRequest(
                conn_id=self.conn_id,
                application_args=application_args,
                files=files,
                warehouse=warehouse,
                run_id=run_id,
                spark_conf={str(k): str(v) for k, v in (self.spark_conf or {}).items()},
                packages=self.packages,
                jars=self.jars,
                name=f"dq-contracts-{self.task_id}",
                storage=self._storage,
                s3=self._on_s3,
                submit_kwargs=self.spark_submit_kwargs,
            )
        )

    def submit(self, hook: JobHook, what: str) -> dict[str, Any] | None:
        """Run ``hook``'s job (``on_kill`` stops it); the job's report, or the task's failure naming ``what``."""
        self._hook = hook
        warm_read_back()
        try:
            return hook.submit_job()
        except ContractJobError as exc:
            if exc.kind in ("invalid_contract", "invalid_arguments"):
                raise AirflowFailException(f"the contract job refused its input: {exc}") from None
            raise AirflowException(f"{what} failed: {exc}") from None

    def resolve_storage(self, *locations: str | None) -> None:
        """Look ``storage_conn_id`` up (masked) and try it on these locations before anything is submitted: a
        bad connection or a refused secret fails the task naming the connection, with nothing written."""
        self._on_s3 = needs_s3(locations)
        if self.storage_conn_id:
            self._storage = get_storage_credentials(self.storage_conn_id)
            for location in locations:
                check_location(self._storage, location)
                check_access(self._storage, location)

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs options of this task's storage connection (None without one: the worker's environment)."""
        return self._storage.storage_options() if self._storage is not None else None

    def on_kill(self) -> None:
        """Stop the Spark application (local process group, or the cluster's driver/application)."""
        if self._hook is not None:
            self._hook.on_kill()


def collect_summary(
    contract: Contract,
    *,
    run_id: str,
    dataset: str,
    results_table: str,
    quarantine_table: str | None,
    valid_table: str | None,
    warehouse: str,
    filter: str | None,  # noqa: A002 - the operator's name for it
    started_at: dt.datetime,
    finished_at: dt.datetime,
    reported: dict[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The XCom summary of one run read back from its tables, as the operator module offered it before #33.

    Kept for callers of ``operators.contract_check.collect_summary``: the work is
    :func:`airflow_dq_contracts.runs.read_back`'s; a run the tables do not back fails as an
    ``AirflowException`` with its reason.
    """
    spec = RunSpec(run_id=run_id, filter=filter, results_table=results_table)
    spec = dataclasses.replace(spec, quarantine_table=quarantine_table, valid_table=valid_table)
    try:
        summary, _ = read_back(
            contract,
            spec,
            warehouse,
            started_at=started_at,
            finished_at=finished_at,
            reported=reported,
            storage_options=storage_options,
        )
    except ReadBackError as exc:
        raise AirflowException(str(exc)) from None
    return {**summary, "dataset": dataset}
