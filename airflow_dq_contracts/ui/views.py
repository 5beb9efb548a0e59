"""What the UI's pages show, read through the results port — no Airflow here, the caller says who may see what.

* :class:`ResultsView` — one results table (a :class:`~airflow_dq_contracts.store.results.ResultsStore`) summarised
  per run once per table version (a 1,000-contract × 100-run table is read and aggregated with Arrow, then kept
  until the table or its registry gets a new commit), and answers:
  :meth:`~ResultsView.contracts` (the overview), :meth:`~ResultsView.contract` (one contract's timeline,
  failing checks, drift flags and versions), :meth:`~ResultsView.run` (one run as the report's data).
* :class:`Access` — who is asking: ``can_read(dag_id)`` decides which runs exist for them (a run carries the
  ``dag_id`` of the task that wrote it; ``None`` for runs outside Airflow), ``can_read_logs(dag_id)`` whether the
  quarantined rows of a run may be shown (they are data, like task logs).

A contract is listed when at least one of its runs is visible; every number (last decision, score, trend,
never-fired checks, failing checks, versions) is computed from visible runs only.

Example::

    view = ResultsView(open_results_store(TableLocation.resolve("/wh/dq_results")))
    for row in view.contracts(Access.everything()):
        print(row.name, row.last_decision, row.last_score)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from airflow_dq_contracts.results import STATUS_PASSED
from airflow_dq_contracts.store.results import ResultsStore
from airflow_dq_contracts.ui.summary import (  # noqa: F401 - RunSummary is part of this module's API
    EPOCH,
    OPTIONAL_RUN_COLUMNS,
    RunSummary,
    TableSummary,
    contract_spans,
    int_scalar,
    ints,
    load_summary,
    plain_strings,
    save_summary,
    strings,
    summarise_runs,
    summarise_with_sql,
    when,
)

log = logging.getLogger(__name__)

__all__ = [
    "Access",
    "CheckFailures",
    "ContractDetail",
    "ContractRow",
    "NotFound",
    "NotVisible",
    "ResultsView",
    "RunSummary",
    "VersionDiff",
]

#: How often the cached summary asks whether the tables got a commit (a new run shows within this time).
VERSION_CHECK_SECONDS = 2.0
#: Runs drawn in an overview trend.
TREND_RUNS = 20
#: The overview's sortable fields.
SORTABLE = ("name", "dataset", "owner", "version", "last_run_at", "last_decision", "last_score", "runs", "never_fired")
_RUN_COLUMNS = ["contract_name", "run_id", "check_id", "severity", "action", "status", "row_count", "evaluated_at"]


class NotFound(LookupError):
    """No such contract or run in the results table."""


class NotVisible(PermissionError):
    """The contract or run exists, but every run of it belongs to a DAG the user may not read."""


@dataclasses.dataclass(frozen=True)
class Access:
    """Who is asking: ``can_read(dag_id)`` (a run's DAG, None outside Airflow) and ``can_read_logs(dag_id)``."""

    can_read: Callable[[str | None], bool]
    can_read_logs: Callable[[str | None], bool]

    @classmethod
    def everything(cls) -> Access:
        """Everything visible (the benchmark, a test reading as an administrator).

        >>> Access.everything().can_read("any_dag")
        True
        """
        return cls(lambda _dag: True, lambda _dag: True)

    def cached(self) -> Access:
        """The same answers, each DAG asked once (one page asks about thousands of runs of a few DAGs)."""
        reads: dict[str | None, bool] = {}
        logs: dict[str | None, bool] = {}

        def can_read(dag_id: str | None) -> bool:
            if dag_id not in reads:
                reads[dag_id] = bool(self.can_read(dag_id))
            return reads[dag_id]

        def can_read_logs(dag_id: str | None) -> bool:
            if dag_id not in logs:
                logs[dag_id] = bool(self.can_read_logs(dag_id))
            return logs[dag_id]

        return Access(can_read, can_read_logs)


@dataclasses.dataclass(frozen=True)
class ContractRow:
    """A line of the contracts overview."""

    name: str
    dataset: str | None
    owner: str | None
    version: str | None
    last_run_id: str
    last_run_at: dt.datetime
    last_decision: str
    last_score: float | None
    runs: int
    trend: list[float | None]
    trend_decisions: list[str]
    never_fired: int
    checks: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the time as ISO-8601 text)."""
        out = dataclasses.asdict(self)
        out["last_run_at"] = self.last_run_at.isoformat()
        return out


@dataclasses.dataclass(frozen=True)
class CheckFailures:
    """How often one check did not pass over a period (runs it was evaluated in, runs it failed or errored)."""

    check_id: str
    check_name: str | None
    check_type: str | None
    severity: str | None
    evaluated: int
    failed: int
    last_status: str | None


@dataclasses.dataclass(frozen=True)
class VersionDiff:
    """Two versions of a contract text: the unified diff and the schema/SLA changes between them."""

    old: str | None
    new: str | None
    text_diff: list[str]
    changes: list[dict[str, Any]]
    error: str | None = None


@dataclasses.dataclass
class ContractDetail:
    """Everything the contract page shows."""

    name: str
    registry: dict[str, Any] | None
    runs: list[RunSummary]
    failing: list[CheckFailures]
    drift: list[dict[str, Any]]
    versions: list[dict[str, Any]]
    diff: VersionDiff | None
    days: int
    never_fired: list[str]


def _parse(text: str) -> Any:
    from airflow_dq_contracts.contract.loader import parse_contract

    return parse_contract(text, filename="<registry>")


def version_diff(old: dict[str, Any], new: dict[str, Any]) -> VersionDiff:
    """The text diff of two registry rows' contract texts, and :func:`~airflow_dq_contracts.contract.diff.diff_contracts`
    of the contracts they parse to (``error`` when a text no longer parses: the text diff stays)."""
    from airflow_dq_contracts.contract.diff import diff_contracts

    old_text, new_text = old.get("contract_text") or "", new.get("contract_text") or ""
    lines = list(
        difflib.unified_diff(
            old_text.splitlines(),
            new_text.splitlines(),
            fromfile=f"version {old.get('contract_version')}",
            tofile=f"version {new.get('contract_version')}",
            lineterm="",
        )
    )
    try:
        changes = [change.to_dict() for change in diff_contracts(_parse(old_text), _parse(new_text))]
        error = None
    except Exception as exc:  # noqa: BLE001 - an old text that no longer validates: show the text diff alone
        changes, error = [], f"the versions cannot be compared as contracts: {type(exc).__name__}: {exc}"
    return VersionDiff(old.get("contract_version"), new.get("contract_version"), lines, changes, error)


class ResultsView:
    """The pages' reader of one results store (see the module docstring); thread-safe, one per API server."""

    def __init__(self, store: ResultsStore, *, saved: Any = None) -> None:
        self.store = store
        #: Where the summary is saved after each build (a local file; None: kept in memory only) — see :meth:`restore`.
        self.saved = saved
        self._restore_tried = False
        self._restored = False
        self._lock = threading.Lock()
        self._lock_refresh = threading.Lock()
        self._refreshing = False
        self._summary: TableSummary | None = None

    # ------------------------------------------------------------------ the cached per-run summary

    def summary(self, *, wait: bool = False) -> TableSummary:
        """The per-run summary of the tables. Their versions are asked at most every :data:`VERSION_CHECK_SECONDS`;
        after a new commit the summary is rebuilt in the background while the previous one keeps answering
        (``wait``: answer from the current versions, building now if needed — for a run that is not there yet)."""
        current = self._summary
        if current is None and self.saved is not None and not self._restore_tried:
            self.restore()
            current = self._summary
        if current is not None and not wait and time.monotonic() - current.checked_at < VERSION_CHECK_SECONDS:
            return current
        key = self.store.data_version()
        if current is not None and current.key == key:
            current.checked_at = time.monotonic()
            return current
        if current is not None and not wait:
            self._refresh_in_background(key)
            return current
        return self._build(key)

    def restore(self) -> bool:
        """Take the summary saved by an earlier server (:attr:`saved`) when nothing is summarised yet (tried once; a
        page asked meanwhile waits for it, not for a read of the table): it answers at once and, as after any commit,
        one of a table that has commits since is rebuilt while it answers (a contract or run newer than it waits for
        the rebuild). Whether the current summary is the saved one."""
        with self._lock:
            if self._summary is None and self.saved is not None and not self._restore_tried:
                self._restore_tried = True
                self._summary = self._load_saved()
                self._restored = self._summary is not None
            return self._restored

    def _load_saved(self) -> TableSummary | None:
        found = load_summary(self.saved, self._location())
        if found is None:
            return None
        version, runs, checks = found
        current = self.store.data_version()  # before the registry's rows: a newer registry is only read again
        if current[0] is None or (current[0] == version and not self._same_rows(runs)):
            return None  # no table any more, or another table at the same version (its rows differ in number)
        registry: dict[str, list[dict[str, Any]]] = {}
        for row in self.store.read_registry_rows():
            registry.setdefault(row["contract_name"], []).append(row)
        # checked_at 0: the next request asks the tables' versions (and rebuilds if they moved on).
        return TableSummary((version, *current[1:]), runs, checks, registry, 0.0)

    def _same_rows(self, runs: Any) -> bool:
        """Whether the table has as many rows as the runs of ``runs`` counted (``COUNT(*)``: from file statistics)."""
        import pyarrow.compute as pc

        counted = self.store.query_results_table(lambda _columns: ["SELECT COUNT(*) AS n FROM results"])
        if counted is None:
            return False
        total = pc.sum(runs.table["checks"]).as_py() if len(runs) else 0
        return int(counted[0]["n"][0].as_py()) == int(total or 0)

    def _location(self) -> str:
        where = getattr(self.store, "table_location", None)
        return str(getattr(where, "uri", None) or self.store.results_table)

    def _save(self, summary: TableSummary) -> None:
        """Save ``summary`` for the next server start (in the background; a failure only costs that start a read)."""
        saved, version = self.saved, summary.key[0] if summary.key else None
        if saved is None or version is None:
            return

        def save() -> None:
            try:
                save_summary(saved, self._location(), int(version), summary.runs, summary.checks)
            except Exception as exc:  # noqa: BLE001 - a cache: the next start reads the table instead
                log.warning(
                    "Data quality UI: could not save the summary to %s (%s); a restart reads the table", saved, exc
                )

        threading.Thread(target=save, name="dq-contracts-ui-save", daemon=True).start()

    def _build(self, key: tuple[Any, ...]) -> TableSummary:
        with self._lock:
            current = self._summary
            if current is not None and current.key == key:
                return current
            # Aggregated where the table is read (SQL); else only the columns the pages need, streamed in batches
            # and aggregated in Arrow as they come.
            summarised = summarise_with_sql(self.store)
            if summarised is None:
                summarised = summarise_runs(self.store.stream_results_table(_RUN_COLUMNS, OPTIONAL_RUN_COLUMNS))
            runs, checks = summarised
            registry: dict[str, list[dict[str, Any]]] = {}
            for row in self.store.read_registry_rows():
                registry.setdefault(row["contract_name"], []).append(row)
            self._summary = TableSummary(key, runs, checks, registry, time.monotonic())
            _release_arrow_memory()
            self._save(self._summary)
            return self._summary

    def _contract_summary(self, name: str) -> TableSummary:
        """The summary of one contract's runs alone — its partition of the results table and its registry rows —
        for a contract or run page asked before any overview (the whole table is not read for it)."""
        from airflow_dq_contracts.storage.locations import StoreError

        summarised = summarise_with_sql(self.store, name)
        if summarised is not None:
            runs, checks = summarised
            return TableSummary((), runs, checks, {name: self.store.read_registry_rows(name)}, time.monotonic())
        try:
            table = self.store.read_history_table(name, _RUN_COLUMNS, OPTIONAL_RUN_COLUMNS)
        except StoreError:
            if self.store.data_version()[0] is None:  # no results table yet: no such contract
                raise NotFound(f"no contract {name!r} in the results table") from None
            raise
        runs, checks = summarise_runs(table)
        del table
        return TableSummary((), runs, checks, {name: self.store.read_registry_rows(name)}, time.monotonic())

    def _summary_with(self, name: str) -> TableSummary:
        """A summary holding contract ``name``: the cached one (rebuilt if the contract is newer than it), or, when
        nothing is cached yet, that contract's alone."""
        if self._summary is None:
            return self._contract_summary(name)
        summary = self.summary()
        if name not in summary.runs.slices:
            summary = self.summary(wait=True)  # a contract whose first run is newer than the summary
        return summary

    def _refresh_in_background(self, key: tuple[Any, ...]) -> None:
        with self._lock_refresh:
            if self._refreshing:
                return
            self._refreshing = True

        def refresh() -> None:
            try:
                self._build(key)
            except Exception:  # noqa: BLE001 - the next request builds it in the foreground and shows the error
                pass
            finally:
                self._refreshing = False

        threading.Thread(target=refresh, name="dq-contracts-ui-refresh", daemon=True).start()

    # ------------------------------------------------------------------ the pages' answers

    def contracts(
        self, access: Access, *, query: str = "", decision: str = "", sort: str = "name", descending: bool = False
    ) -> list[ContractRow]:
        """The overview: one row per contract with a visible run; ``query`` matches name, dataset or owner
        (case-insensitive), ``decision`` the last decision; sorted by ``sort`` (a :class:`ContractRow` field)."""

        summary = self.summary()
        visible = summary.runs.visible_table(access)
        if visible.num_rows == 0:
            return []
        # Per contract (its runs are adjacent, oldest first): where its visible runs start and end.
        _names, firsts, ends = contract_spans(visible["contract_name"])
        lasts = [end - 1 for end in ends]
        fields = ["contract_name", "run_id", "at", "decision", "score", "contract_version", "dataset"]
        last_runs = visible.take(ints(lasts)).select(fields).to_pylist()
        # The trends: the last TREND_RUNS visible runs of each contract, read in one take.
        spans = [(max(first, last - TREND_RUNS + 1), last + 1) for first, last in zip(firsts, lasts)]
        points = visible.take(ints(i for begin, end in spans for i in range(begin, end)))
        scores, decisions = points["score"].to_pylist(), points["decision"].to_pylist()
        needle = query.strip().lower()
        rows: list[ContractRow] = []
        offset = 0
        for (first, last), (begin, end), run in zip(zip(firsts, lasts), spans, last_runs):
            trend = slice(offset, offset + end - begin)
            offset += end - begin
            name, version, dataset = run["contract_name"], run["contract_version"], run["dataset"]
            registry = _newest(summary.registry.get(name, []), version)
            owner = (registry or {}).get("owner")
            if needle and not any(needle in str(v or "").lower() for v in (name, dataset, owner)):
                continue
            if decision and run["decision"] != decision:
                continue
            checks = summary.checks.get(name, {})
            visible_checks = {
                check_id: any(fired for dag_id, fired in dags.items() if access.can_read(dag_id))
                for check_id, dags in checks.items()
                if any(access.can_read(dag_id) for dag_id in dags)
            }
            rows.append(
                ContractRow(
                    name=name,
                    dataset=dataset,
                    owner=owner,
                    version=version,
                    last_run_id=run["run_id"],
                    last_run_at=when(run["at"]),
                    last_decision=run["decision"],
                    last_score=run["score"],
                    runs=last - first + 1,
                    trend=scores[trend],
                    trend_decisions=decisions[trend],
                    never_fired=sum(1 for fired in visible_checks.values() if not fired),
                    checks=len(visible_checks),
                )
            )
        field = sort if sort in SORTABLE else "name"
        known = [row for row in rows if getattr(row, field) is not None]
        known.sort(key=lambda row: (_sort_key(getattr(row, field)), row.name), reverse=descending)
        return known + sorted((row for row in rows if getattr(row, field) is None), key=lambda row: row.name)

    def contract(
        self,
        name: str,
        access: Access,
        *,
        days: int = 30,
        diff: tuple[str, str] | None = None,
        now: dt.datetime | None = None,
    ) -> ContractDetail:
        """One contract: visible runs, checks failing most in the ``days`` before its last run, drift flags of the
        last run, the versions its visible runs used (with the registry's text) and the diff of two of them."""
        summary = self._summary_with(name)
        if name not in summary.runs.slices:
            raise NotFound(f"no contract {name!r} in the results table")
        runs = summary.runs.summaries(summary.runs.visible(name, access))
        if not runs:
            raise NotVisible(name)
        last = runs[-1]
        end = now or last.at
        start = end - dt.timedelta(days=days)
        failing, drift = self._checks(name, runs, start, end, last.run_id)
        used = {run.contract_version for run in runs}
        versions = sorted(
            (row for row in summary.registry.get(name, []) if row.get("contract_version") in used),
            key=lambda row: row.get("first_run_at") or EPOCH,
        )
        chosen: VersionDiff | None = None
        by_version = {row.get("contract_version"): row for row in versions}
        if diff is not None and diff[0] in by_version and diff[1] in by_version:
            chosen = version_diff(by_version[diff[0]], by_version[diff[1]])
        elif diff is None and len(versions) >= 2:
            chosen = version_diff(versions[-2], versions[-1])
        checks = summary.checks.get(name, {})
        never = sorted(
            check_id
            for check_id, dags in checks.items()
            if any(access.can_read(d) for d in dags) and not any(f for d, f in dags.items() if access.can_read(d))
        )
        return ContractDetail(
            name=name,
            registry=_newest(summary.registry.get(name, []), last.contract_version),
            runs=runs,
            failing=failing,
            drift=drift,
            versions=versions,
            diff=chosen,
            days=days,
            never_fired=never,
        )

    def _checks(
        self, name: str, runs: list[RunSummary], start: dt.datetime, end: dt.datetime, last_run_id: str
    ) -> tuple[list[CheckFailures], list[dict[str, Any]]]:
        import pyarrow.compute as pc

        wanted = ["run_id", "check_id", "status", "evaluated_at"]
        optional = ["check_name", "check_type", "severity", "metric_value", "expected_min", "expected_max", "message"]
        table = plain_strings(self.store.read_history_table(name, wanted, optional))
        in_window = [r.run_id for r in runs if start <= r.at <= end]
        table = table.filter(pc.is_in(table["run_id"], value_set=strings(in_window or [""])))
        order = {run.run_id: index for index, run in enumerate(runs)}
        stats: dict[str, list[Any]] = {}
        drift: list[dict[str, Any]] = []
        for row in table.to_pylist():
            check_id = row["check_id"]
            entry = stats.setdefault(
                check_id, [row.get("check_name"), row.get("check_type"), row.get("severity"), 0, 0, -1, None]
            )
            entry[3] += 1
            entry[4] += 0 if row["status"] == STATUS_PASSED else 1
            if order.get(row["run_id"], -1) > entry[5]:
                entry[5], entry[6] = order[row["run_id"]], row["status"]
            if row["run_id"] == last_run_id and _drifted(row):
                drift.append(
                    {
                        "check_id": check_id,
                        "check_name": row.get("check_name"),
                        "metric_value": row.get("metric_value"),
                        "expected_min": row.get("expected_min"),
                        "expected_max": row.get("expected_max"),
                        "status": row["status"],
                    }
                )
        failing = [
            CheckFailures(check_id, e[0], e[1], e[2], e[3], e[4], e[6]) for check_id, e in stats.items() if e[4] > 0
        ]
        failing.sort(key=lambda f: (-f.failed, f.check_id))
        drift.sort(key=lambda d: str(d["check_id"]))
        return failing, drift

    def task_runs(self, dag_id: str, airflow_run_id: str, task_id: str, access: Access) -> list[RunSummary]:
        """The contract runs one Airflow task instance made (a suite task makes one per contract)."""
        if not access.can_read(dag_id):
            raise NotVisible(dag_id)
        import pyarrow as pa
        import pyarrow.compute as pc

        def matching(summary: TableSummary) -> list[int]:
            table = summary.runs.table
            if table.num_rows == 0:
                return []
            wanted = strings([dag_id, airflow_run_id, task_id])
            mask = pc.and_(
                pc.and_(pc.equal(table["dag_id"], wanted[0]), pc.equal(table["airflow_run_id"], wanted[1])),
                pc.equal(table["task_id"], wanted[2]),
            )
            found = pc.indices_nonzero(pc.fill_null(mask, int_scalar(0, pa.bool_())))
            return [int(index) for index in found.to_pylist()] if isinstance(found, pa.Array) else []

        summary = self.summary()
        indices = matching(summary)
        if not indices:
            summary = self.summary(wait=True)  # the task's tab opened right after its run
            indices = matching(summary)
        return summary.runs.summaries(indices)

    def run(self, run_id: str, access: Access, *, days: int = 30) -> tuple[Any, bool]:
        """(the report's :class:`~airflow_dq_contracts.report.ReportData` of run ``run_id``, whether its quarantined
        samples were kept — they are dropped unless ``access.can_read_logs`` the run's DAG)."""
        from airflow_dq_contracts.report import load_report_data

        if self._summary is None:
            # Nothing read yet (the task's link is often the first page opened): this run's contract alone.
            checks = self.store.read_run(run_id) if self.store.data_version()[0] is not None else []
            if not checks:
                raise NotFound(f"no run {run_id!r} in the results table")
            summary = self._contract_summary(str(checks[0].contract_name))
        else:
            summary = self.summary()
            if summary.runs.position(run_id) is None:
                summary = self.summary(wait=True)  # the task's link is opened right after its run
        position = summary.runs.position(run_id)
        if position is None:
            raise NotFound(f"no run {run_id!r} in the results table")
        found = summary.runs.summary(position)
        if not access.can_read(found.dag_id):
            raise NotVisible(run_id)
        location = getattr(self.store, "table_location", None) or self.store.results_table
        data = load_report_data(location, found.contract_name, run_id=run_id, days=days)
        # Trend points of runs the user may not see are left out (another DAG's runs of the same contract).
        visible = {run.run_id for run in summary.runs.summaries(summary.runs.visible(found.contract_name, access))}
        for history in data.history.values():
            keep = [index for index, rid in enumerate(history.run_id) if rid in visible]
            if len(keep) != len(history.run_id):
                for field in dataclasses.fields(history):
                    values = getattr(history, field.name)
                    setattr(history, field.name, [values[index] for index in keep])
        if access.can_read_logs(found.dag_id):
            return data, True
        return dataclasses.replace(data, samples={}, sample_columns=[]), False


def _release_arrow_memory() -> None:
    """Give the memory of the table's scan back to the system (Arrow's pool keeps freed blocks otherwise)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _drifted(row: dict[str, Any]) -> bool:
    """A check of the last run outside its baseline band, or a drift check that did not pass."""
    value, low, high = row.get("metric_value"), row.get("expected_min"), row.get("expected_max")
    if row.get("check_type") == "drift" and row.get("status") != STATUS_PASSED:
        return True
    if value is None or (low is None and high is None):
        return False
    return (low is not None and value < low) or (high is not None and value > high)


def _newest(rows: list[dict[str, Any]], version: str | None) -> dict[str, Any] | None:
    """The registry row of ``version`` (else the most recently run one)."""
    matching = [row for row in rows if row.get("contract_version") == version] or rows
    return max(matching, key=lambda row: row.get("last_run_at") or EPOCH) if matching else None


def _sort_key(value: Any) -> Any:
    # Text case-insensitively; numbers and times as themselves.
    return value.lower() if isinstance(value, str) else value
