"""The results table as history: read one contract's rows with delta-rs, and summarise them per check.

Plain Python plus ``deltalake`` (no Spark, no JVM, no Airflow): the engine reads a run's
baseline history through :func:`read_history` (pruned by the ``contract_name`` partition and
by ``reference_time``), and ``dq-contracts history`` reports on it with :func:`check_histories`.

Example::

    rows = read_history("/data/dq/results", "orders", since=day - timedelta(days=28), until=day)
    for item in check_histories(rows, days=90):
        print(item.check_id, item.runs, item.failures, item.never_fired_days)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_dq_contracts.contract.baseline import HISTORY_COLUMNS, Baseline, gated_runs, judge, select_points
from airflow_dq_contracts.store.delta import TableNotFoundError, open_table, plain_rows, scan_table, sql_string
from airflow_dq_contracts.timeutil import format_time

__all__ = ["CheckHistory", "HISTORY_COLUMNS", "REPORT_COLUMNS", "check_histories", "read_history"]

#: What ``dq-contracts history`` reads besides :data:`HISTORY_COLUMNS`.
REPORT_COLUMNS = (
    *HISTORY_COLUMNS,
    "check_name",
    "check_type",
    "column",
    "severity",
    "expected_min",
    "expected_max",
    "message",
)


def _timestamp_literal(moment: dt.datetime) -> str:
    """A DataFusion timestamp literal (UTC, microseconds) for a delta-rs predicate."""
    text = format_time(moment)
    assert text is not None
    return f"to_timestamp_micros({sql_string(text)})"


def read_history(
    path: str,
    contract_name: str,
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    columns: Sequence[str] = HISTORY_COLUMNS,
    storage_options: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``contract_name`` with ``since ≤ reference_time ≤ until``, read with delta-rs.

    A table that does not exist yet (the very first run) is an empty history. A table written
    before the ``reference_time`` column existed has no history either (those rows have no axis).
    Timestamps come back as aware UTC datetimes. Raises
    :class:`~airflow_dq_contracts.store.delta.StoreError` when the table cannot be read or is not a
    results table.

    Example::

        rows = read_history("/data/dq/results", "orders", since=parse_time("2024-04-04"),
                            until=parse_time("2024-05-02"))
    """
    try:
        table = open_table(path, storage_options=storage_options, what="results")
    except TableNotFoundError:
        return []
    present = set(table.schema().to_arrow().names)
    if "reference_time" not in present:
        return []
    # The partition column prunes other contracts' files; the time bounds use file statistics.
    clauses = [f"contract_name = {sql_string(contract_name)}"]
    if since is not None:
        clauses.append(f"reference_time >= {_timestamp_literal(since)}")
    if until is not None:
        clauses.append(f"reference_time <= {_timestamp_literal(until)}")
    wanted = [c for c in columns if c in present]
    arrow = scan_table(table, path, "results", wanted, " AND ".join(clauses))
    return plain_rows(arrow)


@dataclasses.dataclass
class CheckHistory:
    """One check's record over the report window (``dq-contracts history``)."""

    check_id: str
    check_name: str | None
    check_type: str | None
    column: str | None
    severity: str | None
    dataset: str | None
    runs: int
    failures: int
    errors: int
    last_failure: dt.datetime | None
    last_run: dt.datetime | None
    never_fired_days: int | None
    baseline_min: float | None
    baseline_max: float | None
    baseline: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (timestamps as ISO text)."""
        out = dataclasses.asdict(self)
        out["last_failure"] = format_time(self.last_failure)
        out["last_run"] = format_time(self.last_run)
        return out


def check_histories(
    rows: Iterable[Mapping[str, Any]],
    *,
    days: int,
    newest: dt.datetime | None = None,
    baselines: Mapping[str, Baseline] | None = None,
) -> list[CheckHistory]:
    """Per check (and dataset): runs, failures, last failure and "never fired in N days".

    The window is the ``days`` before the newest reference time in ``rows`` (or ``newest``),
    inclusive. A *run* of a check is one reference time (retries of the same reference time count
    once: the newest evaluation speaks for it, as in baselines); a *failure* is a run whose status
    was ``failed`` or ``error`` (``errors`` counts the latter alone). ``never_fired_days`` — set only
    when the check never failed in the window, a retirement candidate (seed 003) — is the whole
    days from its first run in the window to the window's end (what was actually observed, not
    the window's length). The *current baseline* is the band the
    check's next run would use: for checks in ``baselines`` (from the contract) computed with
    :func:`~airflow_dq_contracts.contract.baseline.judge` from the history up to and including
    the newest reference time (as for a run just after it), otherwise the
    ``expected_min``/``expected_max`` of its newest run.

    >>> day = lambda d: dt.datetime(2024, 1, d, tzinfo=dt.timezone.utc)
    >>> rows = [{"run_id": f"r{d}", "dataset": "t", "check_id": "c", "status": "failed" if d == 2 else "passed",
    ...          "reference_time": day(d), "evaluated_at": day(d)} for d in (1, 2, 3)]
    >>> [(h.runs, h.failures, h.last_failure.day) for h in check_histories(rows, days=90)]
    [(3, 1, 2)]
    """
    rows = [r for r in rows if r.get("reference_time") is not None]
    if not rows:
        return []
    end = newest or max(r["reference_time"] for r in rows)
    start = end - dt.timedelta(days=days)
    window = [r for r in rows if start <= r["reference_time"] <= end]
    latest: dict[tuple[str, str, dt.datetime], Mapping[str, Any]] = {}
    for row in window:
        key = (row["check_id"], row.get("dataset") or "", row["reference_time"])
        evaluated = row.get("evaluated_at") or row["reference_time"]
        current = latest.get(key)
        if current is None or evaluated >= (current.get("evaluated_at") or current["reference_time"]):
            latest[key] = row
    per_check: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for (check_id, dataset, _), row in sorted(latest.items(), key=lambda item: item[0][2]):
        per_check.setdefault((check_id, dataset), []).append(row)
    # Baselines look back their own lookback_days, whatever the report window.
    gated = gated_runs(rows) if baselines else set()
    out: list[CheckHistory] = []
    for (check_id, dataset), runs in sorted(per_check.items()):
        failed = [r for r in runs if r.get("status") == "failed"]
        errored = [r for r in runs if r.get("status") == "error"]
        fired = failed + errored
        last_failure = max((r["reference_time"] for r in fired), default=None)
        newest_run = runs[-1]
        low, high = newest_run.get("expected_min"), newest_run.get("expected_max")
        described = None
        baseline = (baselines or {}).get(check_id)
        if baseline is not None:
            next_time = end + dt.timedelta(microseconds=1)
            points = select_points(
                rows, check_id=check_id, dataset=dataset, reference_time=next_time, baseline=baseline, gated=gated
            )
            outcome = judge(baseline, points)
            low, high, described = outcome.expected_min, outcome.expected_max, outcome.message
        elif low is not None or high is not None:
            described = "newest run's expected bounds"
        out.append(
            CheckHistory(
                check_id=check_id,
                check_name=newest_run.get("check_name"),
                check_type=newest_run.get("check_type"),
                column=newest_run.get("column"),
                severity=newest_run.get("severity"),
                dataset=dataset or None,
                runs=len(runs),
                failures=len(fired),
                errors=len(errored),
                last_failure=last_failure,
                last_run=newest_run["reference_time"],
                never_fired_days=None if fired else (end - runs[0]["reference_time"]).days,
                baseline_min=low,
                baseline_max=high,
                baseline=described,
            )
        )
    return out
