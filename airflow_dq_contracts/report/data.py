"""What a report shows, read from the Delta tables with delta-rs (no JVM, no Airflow, no Spark).

* the run's check results (the run given, else the contract's newest run in the results table);
* per check, its metric history over the last ``days`` before that run, as Arrow columns —
  1M results rows are filtered with Arrow compute, never turned into Python objects;
* the contract's registry row (owner, SLA, version, text, tables), when the registry exists;
* a bounded sample of the run's quarantined rows per failed row-level check (none when no run ever
  quarantined a row: a quarantine table not written yet is an answer, not an error);
* how many checks the contract runs, written and implied (from the registry's contract text).

Example::

    data = load_report_data("/wh/dq_results", "orders", days=30)
    print(data.result.decision, len(data.history), data.registry and data.registry["owner"])
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.contract import ContractValidationError, parse_contract
from airflow_dq_contracts.contract.counts import CheckCount, count_checks
from airflow_dq_contracts.results import CheckResult, ContractResult
from airflow_dq_contracts.storage.locations import StoreError, TableLocation
from airflow_dq_contracts.store.results import open_results_store

__all__ = ["CheckHistory", "ReportData", "ReportDataError", "load_report_data"]

#: Most recent points drawn per trend chart: a 230-pixel chart shows no more, and every point
#: costs SVG bytes and drawing time.
MAX_POINTS = 200
#: Quarantined rows shown per failed row-level check.
SAMPLE_ROWS = 20

_HISTORY_COLUMNS = ["run_id", "check_id", "metric_value", "status", "evaluated_at"]
_OPTIONAL_HISTORY_COLUMNS = ["reference_time", "expected_min", "expected_max"]


class ReportDataError(StoreError):
    """Nothing to report: no such contract or run in the results table."""


@dataclasses.dataclass
class CheckHistory:
    """One check's recent runs, oldest first (parallel lists; ``at`` is the reference time, else evaluation time)."""

    at: list[dt.datetime]
    metric_value: list[float | None]
    status: list[str]
    expected_min: list[float | None]
    expected_max: list[float | None]
    run_id: list[str]


@dataclasses.dataclass
class ReportData:
    """Everything one report shows (see the module docstring)."""

    result: ContractResult
    history: dict[str, CheckHistory]
    registry: dict[str, Any] | None
    quarantine_table: str | None
    quarantine_rows: int | None
    samples: dict[str, list[dict[str, Any]]]
    sample_columns: list[str]
    days: int
    #: the checks the contract runs, written and implied (None: no readable contract text in the registry)
    check_count: CheckCount | None = None


def _plain_strings(table: Any) -> Any:
    """``table`` with delta-rs's ``string_view`` columns as plain strings (Arrow's take/sort kernels need them)."""
    import pyarrow as pa

    fields = [pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type) for f in table.schema]
    return table.cast(pa.schema(fields)) if fields != list(table.schema) else table


def _check_count(registry: Mapping[str, Any] | None, results: int) -> CheckCount | None:
    """What :func:`~airflow_dq_contracts.contract.counts.count_checks` says of the registry's contract text,
    when it agrees with the run's ``results`` rows (one per check); None when there is no such text."""
    text = (registry or {}).get("contract_text")
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        count = count_checks(parse_contract(text))
    except ContractValidationError:  # a text this release no longer reads (or an ODCS file of many objects)
        return None
    return count if count.total == results else None


def _latest_run(history: Any) -> str:
    import pyarrow.compute as pc

    # The position of the newest evaluation, then its run id: no filtered copy of the whole table.
    newest = pc.max(history["evaluated_at"])
    return str(history["run_id"][pc.index(history["evaluated_at"], newest).as_py()].as_py())


def _column(rows: Any, name: str) -> list[Any]:
    """A column of ``rows`` as Python values; all None when the table lacks it (an older results table)."""
    return rows[name].to_pylist() if name in rows.column_names else [None] * rows.num_rows


def _history(history: Any, run: list[CheckResult], days: int) -> dict[str, CheckHistory]:
    """Per check of ``run``: its points in ``[run time - days, run time]``, newest ``MAX_POINTS`` of them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "reference_time" in history.column_names:
        at = pc.coalesce(history["reference_time"], history["evaluated_at"])
    else:
        at = history["evaluated_at"]
    history = history.append_column("_at", at)
    run_times = [r.reference_time or r.evaluated_at for r in run]
    end = max(run_times)
    start = end - dt.timedelta(days=days)
    unit = history.schema.field("_at").type
    window = pc.and_(
        pc.greater_equal(history["_at"], pa.scalar(start, type=unit)),
        pc.less_equal(history["_at"], pa.scalar(end, type=unit)),
    )
    history = history.filter(window)
    # Check ids as small integer codes: one integer comparison per row and check, no string sort.
    encoded = pc.dictionary_encode(history["check_id"]).combine_chunks()
    codes = {value: index for index, value in enumerate(encoded.dictionary.to_pylist())}
    out: dict[str, CheckHistory] = {}
    for check_id in dict.fromkeys(r.check_id for r in run):
        if check_id not in codes:
            out[check_id] = CheckHistory([], [], [], [], [], [])
            continue
        rows = history.filter(pc.equal(encoded.indices, pa.scalar(codes[check_id], encoded.indices.type)))
        rows = rows.take(pc.sort_indices(rows["_at"]))
        if rows.num_rows > MAX_POINTS:
            rows = rows.slice(rows.num_rows - MAX_POINTS)
        out[check_id] = CheckHistory(
            at=_column(rows, "_at"),
            metric_value=_column(rows, "metric_value"),
            status=_column(rows, "status"),
            expected_min=_column(rows, "expected_min"),
            expected_max=_column(rows, "expected_max"),
            run_id=_column(rows, "run_id"),
        )
    return out


def load_report_data(
    results_table: TableLocation | str,
    contract_name: str,
    *,
    run_id: str | None = None,
    days: int = 30,
    quarantine_table: str | None = None,
    sample_rows: int = SAMPLE_ROWS,
    storage_options: Mapping[str, str] | None = None,
) -> ReportData:
    """Read one run of ``contract_name`` (default its newest) and its history for a report.

    ``quarantine_table`` defaults to the one the registry recorded for the contract version.
    Raises :class:`ReportDataError` when the contract or run has no results,
    :class:`~airflow_dq_contracts.storage.locations.StoreError` when a table cannot be read.

    Example::

        data = load_report_data("/wh/dq_results", "orders", run_id="dq-3f2a…", days=7)
    """
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    where = TableLocation.of(results_table, storage_options=storage_options)
    location = where.uri
    store = open_results_store(where)
    history = _plain_strings(store.read_history_table(contract_name, _HISTORY_COLUMNS, _OPTIONAL_HISTORY_COLUMNS))
    if history.num_rows == 0:
        raise ReportDataError(f"results table {location!r} has no results for contract {contract_name!r}")
    run_id = run_id or _latest_run(history)
    found = store.read_run_result(run_id, contract_name=contract_name)
    if found is None:
        raise ReportDataError(f"results table {location!r} has no run {run_id!r} of contract {contract_name!r}")
    records = found.checks

    registry = store.read_registry(contract_name, found.contract_version)
    quarantine_table = quarantine_table or (registry or {}).get("quarantine_table")
    failed_row_checks = [r.check_id for r in records if r.status != "passed" and (r.failed_rows or 0) > 0]
    samples: dict[str, list[dict[str, Any]]] = {}
    sample_columns: list[str] = []
    quarantine_rows: int | None = None
    if quarantine_table:
        samples, sample_columns, quarantine_rows = store.quarantine_samples(
            quarantine_table, run_id, failed_row_checks, sample_rows
        )
    result = dataclasses.replace(
        found, results_table=where.target, quarantine_table=quarantine_table, quarantine_rows=quarantine_rows
    )
    return ReportData(
        result=result,
        history=_history(history, records, days),
        registry=registry,
        quarantine_table=quarantine_table,
        quarantine_rows=quarantine_rows,
        samples=samples,
        sample_columns=sample_columns,
        days=days,
        check_count=_check_count(registry, len(records)),
    )
