"""Result and summary model shared by the Spark job, the CLI and the operators (DESIGN §5, fixed).

Plain Python: importable with neither Airflow nor Spark loaded.

Example::

    >>> rec = CheckResult(run_id="r1", contract_name="orders", contract_version="1.0.0",
    ...     dataset="silver.orders", check_id="order_id:order_id_is_unique",
    ...     check_name="Order ID is unique", check_type="duplicates", column="order_id",
    ...     severity="P0", action="gate", validator="max 0 ±1e-09", metric_value=0.0,
    ...     status="passed", passed=True, failed_rows=0, message="", row_count=10)
    >>> decide([rec])
    'pass'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Iterable
from typing import Any

# Re-exported (the ``name as name`` form): the result model's own time vocabulary, defined once in timeutil.
from airflow_dq_contracts.timeutil import format_time as format_time
from airflow_dq_contracts.timeutil import parse_time as parse_time
from airflow_dq_contracts.timeutil import to_utc as to_utc
from airflow_dq_contracts.timeutil import utcnow as utcnow

STATUS_PASSED = "passed"
STATUS_FAILED = "failed"
STATUS_ERROR = "error"
STATUSES = (STATUS_PASSED, STATUS_FAILED, STATUS_ERROR)

DECISION_PASS = "pass"
DECISION_QUARANTINE = "quarantine"
DECISION_GATE = "gate"
DECISIONS = (DECISION_PASS, DECISION_QUARANTINE, DECISION_GATE)
#: Violation actions that send a row to quarantine; ``flag`` rows stay valid.
QUARANTINING_ACTIONS: tuple[str, ...] = (DECISION_QUARANTINE, DECISION_GATE)

SEVERITIES = ("P0", "P1", "P2", "P3")

# Ordered (name, Spark SQL type) of the Delta results table. Fixed: users query it.
RESULT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"),
    ("contract_name", "string"),
    ("contract_version", "string"),
    ("dataset", "string"),
    ("check_id", "string"),
    ("check_name", "string"),
    ("check_type", "string"),
    ("column", "string"),
    ("severity", "string"),
    ("action", "string"),
    ("validator", "string"),
    ("metric_value", "double"),
    ("status", "string"),
    ("passed", "boolean"),
    ("failed_rows", "bigint"),
    ("message", "string"),
    ("row_count", "bigint"),
    ("filter", "string"),
    ("evaluated_at", "timestamp"),
    ("dag_id", "string"),
    ("task_id", "string"),
    ("airflow_run_id", "string"),
    # Second wave (DESIGN §5): appended with Delta schema evolution; older rows read them as NULL.
    ("tags", "array<string>"),
    ("reference_time", "timestamp"),
    ("expected_min", "double"),
    ("expected_max", "double"),
    # Third wave (DESIGN §9): how the row was computed, ``statistics`` (the Delta log) or ``scan``.
    ("evaluated_from", "string"),
    # Fourth wave (DESIGN §10): the source range an incremental run covered (versions / files / offsets).
    ("source_range", "string"),
)

#: Columns added after the first release; a results table written before lacks them and is evolved.
EVOLVED_RESULT_COLUMNS: tuple[str, ...] = (
    "tags",
    "reference_time",
    "expected_min",
    "expected_max",
    "evaluated_from",
    "source_range",
)
#: Timestamp columns of the results table (ISO-8601 text in JSON).
TIME_RESULT_COLUMNS: tuple[str, ...] = ("evaluated_at", "reference_time")

# Extra columns of the quarantine table (DESIGN §6, fixed).
QUARANTINE_RUN_ID = "_dq_run_id"
QUARANTINE_VIOLATIONS = "_dq_violations"
QUARANTINE_AT = "_dq_quarantined_at"
#: Valid-table column: the flag-action checks a kept row broke (same struct as _dq_violations).
VALID_FLAGS = "_dq_flags"
VIOLATION_FIELDS = ("check_id", "check_name", "check_type", "severity", "action")


def make_run_id(*parts: str | None) -> str:
    """Deterministic run id from its parts (dag_id, run_id, task_id): a retry gets the same id.

    >>> make_run_id("dag", "manual__1", "check") == make_run_id("dag", "manual__1", "check")
    True
    """
    joined = "\x1f".join("" if p is None else str(p) for p in parts)
    return "dq-" + hashlib.sha256(joined.encode("utf-8")).hexdigest()[:24]


@dataclasses.dataclass
class CheckResult:
    """One check of one run: a row of the results table and an element of ``summary['checks']``."""

    run_id: str
    contract_name: str
    contract_version: str | None
    dataset: str
    check_id: str
    check_name: str
    check_type: str
    column: str | None
    severity: str
    action: str
    validator: str
    metric_value: float | None
    status: str
    passed: bool
    failed_rows: int | None
    message: str
    row_count: int
    filter: str | None = None
    evaluated_at: dt.datetime = dataclasses.field(default_factory=utcnow)
    dag_id: str | None = None
    task_id: str | None = None
    airflow_run_id: str | None = None
    tags: list[str] | None = None
    reference_time: dt.datetime | None = None
    expected_min: float | None = None
    expected_max: float | None = None
    #: ``statistics`` (answered from the Delta log, no scan), ``scan``, or None (rows of older releases)
    evaluated_from: str | None = None
    #: what an incremental run covered (JSON text, docs/incremental.md); None for a run over its whole input
    source_range: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict in the fixed column order (timestamps as ISO strings)."""
        out: dict[str, Any] = {}
        for name, _ in RESULT_COLUMNS:
            value = getattr(self, name)
            if name in TIME_RESULT_COLUMNS:
                value = format_time(value)
            elif name == "tags" and value is not None:
                value = list(value)
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        """Inverse of :meth:`to_dict`; also accepts rows read back from the Delta table."""
        kwargs: dict[str, Any] = {name: data.get(name) for name, _ in RESULT_COLUMNS}
        kwargs["evaluated_at"] = parse_time(kwargs["evaluated_at"]) or utcnow()
        kwargs["reference_time"] = parse_time(kwargs["reference_time"])
        for key in ("metric_value", "expected_min", "expected_max"):
            if kwargs[key] is not None:
                kwargs[key] = float(kwargs[key])
        if kwargs["tags"] is not None:
            kwargs["tags"] = [str(tag) for tag in kwargs["tags"]]
        for key in ("failed_rows", "row_count"):
            if kwargs[key] is not None:
                kwargs[key] = int(kwargs[key])
        kwargs["row_count"] = kwargs["row_count"] or 0
        kwargs["passed"] = bool(kwargs["passed"])
        kwargs["message"] = kwargs["message"] or ""
        return cls(**kwargs)

    @property
    def counts_as_failed(self) -> bool:
        """Failed or errored: an error fails closed for routing (DESIGN §4)."""
        return self.status != STATUS_PASSED


def decide(checks: Iterable[CheckResult]) -> str:
    """Routing decision of DESIGN §6.

    Any failed/errored ``gate`` check → ``gate``; else any failed ``quarantine`` check that has
    violating rows → ``quarantine``; else ``pass``. ``flag`` checks never change the decision.
    A ``quarantine`` check that *errored*, or that failed without any violating row to set aside
    (e.g. a ``pct`` whitelist failing only because of NULLs), cannot be resolved by quarantining
    rows, so it fails closed to ``gate`` rather than passing silently.
    """
    checks = list(checks)
    if any(c.action == DECISION_GATE and c.counts_as_failed for c in checks):
        return DECISION_GATE
    if any(c.action == DECISION_QUARANTINE and c.counts_as_failed and not (c.failed_rows or 0) > 0 for c in checks):
        return DECISION_GATE
    if any(c.action == DECISION_QUARANTINE and c.counts_as_failed and (c.failed_rows or 0) > 0 for c in checks):
        return DECISION_QUARANTINE
    return DECISION_PASS


@dataclasses.dataclass
class ContractResult:
    """A whole evaluation: every check plus the routing decision. ``summary()`` is the XCom value."""

    run_id: str
    contract_name: str
    contract_version: str | None
    dataset: str
    row_count: int
    checks: list[CheckResult]
    started_at: dt.datetime
    finished_at: dt.datetime
    results_table: str | None = None
    quarantine_table: str | None = None
    quarantine_rows: int | None = None
    valid_table: str | None = None
    valid_rows: int | None = None
    filter: str | None = None
    #: The Delta version of this run's commit to the results table, when the job could tell (not in
    #: the summary: the operator uses it to read the run back from that one commit).
    results_version: int | None = None
    #: How the run's Delta input was read (not in the summary): ``{"reader": "delta-rs" | "spark",
    #: "version": the Delta version read, None when not pinned}``; None for another kind of input.
    source_read: dict[str, Any] | None = None

    @property
    def decision(self) -> str:
        return decide(self.checks)

    @property
    def status(self) -> str:
        if any(c.status == STATUS_ERROR for c in self.checks):
            return STATUS_ERROR
        if any(c.status == STATUS_FAILED for c in self.checks):
            return STATUS_FAILED
        return STATUS_PASSED

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for c in self.checks if c.status == s) for s in STATUSES}

    def failed_by_severity(self) -> dict[str, int]:
        return {s: sum(1 for c in self.checks if c.severity == s and c.counts_as_failed) for s in SEVERITIES}

    def summary(self) -> dict[str, Any]:
        """The JSON summary of DESIGN §5 (XCom value and ``--json-out``)."""
        quarantine = None
        if self.quarantine_table is not None:
            quarantine = {"table": self.quarantine_table, "rows": int(self.quarantine_rows or 0)}
        return {
            "run_id": self.run_id,
            "contract": {"name": self.contract_name, "version": self.contract_version},
            "dataset": self.dataset,
            "row_count": self.row_count,
            "status": self.status,
            "decision": self.decision,
            "counts": self.counts(),
            "failed_by_severity": self.failed_by_severity(),
            "quarantine": quarantine,
            "valid": None
            if self.valid_table is None
            else {"table": self.valid_table, "rows": int(self.valid_rows or 0)},
            "results_table": self.results_table,
            "filter": self.filter,
            "started_at": format_time(self.started_at),
            "finished_at": format_time(self.finished_at),
            "checks": [c.to_dict() for c in self.checks],
        }

    @classmethod
    def from_summary(cls, data: dict[str, Any]) -> ContractResult:
        """Rebuild from a summary dict (e.g. pulled from XCom)."""
        quarantine = data.get("quarantine") or {}
        valid = data.get("valid") or {}
        return cls(
            run_id=data["run_id"],
            contract_name=data["contract"]["name"],
            contract_version=data["contract"].get("version"),
            dataset=data.get("dataset", ""),
            row_count=int(data.get("row_count") or 0),
            checks=[CheckResult.from_dict(c) for c in data.get("checks", [])],
            started_at=parse_time(data.get("started_at")) or utcnow(),
            finished_at=parse_time(data.get("finished_at")) or utcnow(),
            results_table=data.get("results_table"),
            quarantine_table=quarantine.get("table"),
            quarantine_rows=quarantine.get("rows"),
            valid_table=valid.get("table"),
            valid_rows=valid.get("rows"),
            filter=data.get("filter"),
        )


def error_summary(contract: Any, spec: Any, message: str, *, at: str | None) -> dict[str, Any]:
    """A contract's summary entry when its run produced no result: status ``error``, decision ``gate`` (fails
    closed). ``contract``: the contract (its name and version); ``spec``: the run's spec (run id, dataset,
    results table, filter) — the suite task's and ``dq-contracts run``'s entry alike."""
    return {
        "run_id": spec.run_id,
        "contract": {"name": contract.name, "version": contract.version},
        "dataset": spec.dataset,
        "row_count": None,
        "status": "error",
        "decision": DECISION_GATE,
        "counts": {"passed": 0, "failed": 0, "error": 0},
        "failed_by_severity": dict.fromkeys(SEVERITIES, 0),
        "quarantine": None,
        "valid": None,
        "results_table": spec.results_table,
        "filter": spec.filter,
        "started_at": at,
        "finished_at": at,
        "checks": [],
        "error": message,
    }
