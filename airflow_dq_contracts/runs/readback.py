"""A run read back from its Delta tables: the summary XCom holds is what the results table holds.

:func:`collect_summary` reads the run through the results port
(:meth:`~airflow_dq_contracts.store.results.ResultsStore.read_run_result`: the job's rows as the
``ContractResult`` it built, the quarantine/valid counts) and cross-checks it against the job's own
completion payload (``reported``, client mode): a mismatch means rows were lost or duplicated, and the
run is refused (:class:`ReadBackError`) rather than trusted. What only the edge knows — the spec's dataset
and filter, the times of the task when the job did not report its own — completes the summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import threading
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.contract import Contract
from airflow_dq_contracts.runs.tables import RunTables, reported_locations
from airflow_dq_contracts.runspec import RunSpec
from airflow_dq_contracts.storage.locations import StoreError
from airflow_dq_contracts.store.results import open_results_store
from airflow_dq_contracts.timeutil import parse_time

__all__ = ["ReadBackError", "collect_summary", "read_back", "warm_read_back"]


class ReadBackError(Exception):
    """A run cannot be read back, or its tables do not back what the job reported (the message says which)."""


def warm_read_back() -> None:
    """Import what the read-back needs (pyarrow's Parquet reader, delta-rs) in a thread while the job runs.

    A task process imports them on its first read-back: a few tenths of a second that otherwise come
    after the job, on the task's critical path. A failed import here is the read-back's to report.
    """

    def load() -> None:
        with contextlib.suppress(ImportError):
            import deltalake  # noqa: F401
            import pyarrow.fs  # noqa: F401
            import pyarrow.parquet  # noqa: F401

    threading.Thread(target=load, name="dq-warm-read-back", daemon=True).start()


def collect_summary(
    contract: Contract,
    spec: RunSpec,
    tables: RunTables,
    *,
    started_at: dt.datetime,
    finished_at: dt.datetime,
    reported: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary (DESIGN §5) of ``spec``'s run, read from ``tables``; :class:`ReadBackError` when they do not back it.

    ``started_at``/``finished_at`` are the task's, used when the job did not report its own times.
    """
    run_id, results = str(spec.run_id), tables.results
    version = (reported or {}).get("results_version")
    try:
        store = open_results_store(results, warehouse=tables.warehouse)
        # The job's report names its results commit: read that one commit, not the whole history.
        result = store.read_run_result(
            run_id,
            contract_name=contract.name,
            version=version if isinstance(version, int) else None,
            quarantine_table=tables.quarantine,
            valid_table=tables.valid,
            check_order=[check.check_id for check in contract.evaluated_checks()],
            run_filter=spec.filter,
        )
    except (StoreError, ValueError) as exc:
        raise ReadBackError(f"cannot read run {run_id} back from its Delta tables: {exc}") from None
    if result is None:
        raise ReadBackError(
            f"the results table {results.target} holds no rows for run {run_id}: the job reported success "
            "but its results are not there (wrong table, or another process removed them)"
        )
    held = len(result.checks)
    if reported is not None and int(reported.get("checks", held)) != held:
        raise ReadBackError(
            f"the job reported {reported.get('checks')} check results for run {run_id} but the results "
            f"table {results.target} holds {held}"
        )
    given = reported or {}
    result = dataclasses.replace(
        result,
        contract_version=contract.version,
        dataset=spec.dataset or "",
        row_count=int(given["row_count"]) if given.get("row_count") is not None else result.row_count,
        started_at=parse_time(given.get("started_at")) or started_at,
        finished_at=parse_time(given.get("finished_at")) or finished_at,
        results_table=results.target,
    )
    summary = result.summary()
    locations = reported_locations(reported)
    if locations:
        summary["locations"] = locations
    if reported is not None and reported.get("decision") not in (None, summary["decision"]):
        raise ReadBackError(
            f"the job decided {reported.get('decision')!r} but the rows in {results.target} decide "
            f"{summary['decision']!r} for run {run_id}"
        )
    return summary


def read_back(
    contract: Contract,
    spec: RunSpec,
    warehouse: str,
    *,
    started_at: dt.datetime,
    finished_at: dt.datetime,
    reported: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], RunTables]:
    """(summary, the run's tables resolved once) of ``spec``'s run (:meth:`RunTables.resolve`, :func:`collect_summary`)."""
    try:
        tables = RunTables.resolve(spec, warehouse, storage_options=storage_options, reported=reported)
    except (StoreError, ValueError) as exc:
        raise ReadBackError(f"cannot read run {spec.run_id} back from its Delta tables: {exc}") from None
    summary = collect_summary(contract, spec, tables, started_at=started_at, finished_at=finished_at, reported=reported)
    return summary, tables
