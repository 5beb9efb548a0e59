"""A run's verdict as an asset event carries it: the ``extra`` of the check task's events and of the results watcher's.

Plain Python (no Airflow): the check task (:mod:`airflow_dq_contracts.operators.assets`) builds it from its
summary; the results-table watcher (:mod:`airflow_dq_contracts.triggers.results_watcher`) from a run read
back through the results port; :func:`airflow_dq_contracts.operators.verdict.judge` reads it
(:func:`event_verdict` finds it in either kind of event). The layout is versioned (:data:`SCHEMA_VERSION`;
see ``docs/contracts.md`` "Asset event extra").

Example::

    extra = verdict_extra(result.summary(), results_version=12)
    extra[VERDICT_KEY]["decision"], extra[AIRFLOW_DQ_RESULT_KEY]["score"]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_dq_contracts.results import (
    DECISION_GATE,
    DECISION_PASS,
    DECISION_QUARANTINE,
    SEVERITIES,
    STATUS_ERROR,
    STATUS_FAILED,
    STATUS_PASSED,
)

#: Our key in an asset event's ``extra``.
VERDICT_KEY = "airflow_dq_contracts.verdict"
#: The key of Airflow's data-quality provider convention.
AIRFLOW_DQ_RESULT_KEY = "airflow.dataquality.result"
#: Version of the verdict's layout; a consumer refuses a version it does not know.
SCHEMA_VERSION = 1
#: At most this many check ids are listed (the total is always given).
MAX_CHECK_IDS = 50
#: Severity weights of the quality score: each level counts twice the next one.
SEVERITY_WEIGHTS = {"P0": 8, "P1": 4, "P2": 2, "P3": 1}
#: Decisions from best to worst.
DECISION_ORDER = (DECISION_PASS, DECISION_QUARANTINE, DECISION_GATE)


def quality_score(checks: Iterable[Mapping[str, Any]]) -> float | None:
    """Share of checks that passed, weighted by severity (P0 8, P1 4, P2 2, P3 1); None without checks.

    A failed or errored check counts as not passed; an unknown severity weighs 1.

    >>> quality_score([{"severity": "P0", "status": "passed"}, {"severity": "P3", "status": "failed"}])
    0.8889
    >>> quality_score([]) is None
    True
    """
    total = passed = 0
    for check in checks:
        weight = SEVERITY_WEIGHTS.get(str(check.get("severity")), 1)
        total += weight
        passed += weight if check.get("status") == STATUS_PASSED else 0
    return None if total == 0 else round(passed / total, 4)


def _not_passed(checks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    # Worst first: severity, then the id (stable across runs), so the capped list keeps what matters.
    order = {severity: index for index, severity in enumerate(SEVERITIES)}
    failing = [c for c in checks if c.get("status") != STATUS_PASSED]
    return sorted(failing, key=lambda c: (order.get(str(c.get("severity")), len(order)), str(c.get("check_id"))))


def build_verdict(
    summary: Mapping[str, Any],
    *,
    reference_time: str | None = None,
    results_version: int | None = None,
    airflow: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The verdict ``extra`` (schema :data:`SCHEMA_VERSION`) of one run, from its XCom summary.

    ``reference_time`` defaults to the one the result rows carry; ``results_version`` is the Delta
    version of the run's commit to the results table; ``airflow`` names the task instance that
    produced it (``dag_id``, ``run_id``, ``task_id``, ``map_index``). Compact: checks are counted, and
    only the ids of checks that did not pass are listed (at most :data:`MAX_CHECK_IDS`).

    >>> summary = {"run_id": "dq-1", "contract": {"name": "orders", "version": "1"}, "decision": "pass",
    ...            "status": "passed", "counts": {"passed": 1, "failed": 0, "error": 0}, "checks": [
    ...            {"check_id": "_table_/rows", "severity": "P0", "status": "passed", "action": "gate"}]}
    >>> v = build_verdict(summary, results_version=3)
    >>> v["decision"], v["score"], v["failed_checks"], v["results"]["version"]
    ('pass', 1.0, [], 3)
    """
    checks = list(summary.get("checks") or [])
    failing = _not_passed(checks)
    counts = dict(summary.get("counts") or {})
    if reference_time is None:
        reference_time = next((c["reference_time"] for c in checks if c.get("reference_time")), None)
    return {
        "schema_version": SCHEMA_VERSION,
        "decision": summary.get("decision"),
        "status": summary.get("status"),
        "score": quality_score(checks),
        "counts": {
            "passed": int(counts.get(STATUS_PASSED, 0)),
            "failed": int(counts.get(STATUS_FAILED, 0)),
            "error": int(counts.get(STATUS_ERROR, 0)),
            "total": len(checks),
        },
        "failed_by_severity": dict(summary.get("failed_by_severity") or {}),
        "failed_checks": [str(c.get("check_id")) for c in failing[:MAX_CHECK_IDS]],
        "failed_checks_total": len(failing),
        "contract": dict(summary.get("contract") or {}),
        "run_id": summary.get("run_id"),
        "airflow": dict(airflow or {}),
        "dataset": summary.get("dataset"),
        "filter": summary.get("filter"),
        "row_count": summary.get("row_count"),
        "reference_time": reference_time,
        "results": {"table": summary.get("results_table"), "version": results_version},
        "quarantine": summary.get("quarantine"),
        "valid": summary.get("valid"),
        "report": summary.get("report"),
    }


def airflow_dq_result(verdict: Mapping[str, Any], checks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run in the shape of Airflow's data-quality provider (``extra["airflow.dataquality.result"]``).

    ``failed``/``failed_rules``: checks that failed with a gate or quarantine action; ``warned``/
    ``warned_rules``: failed ``flag`` checks (recorded, never blocking); ``errored``: checks that could not be
    computed. ``score`` is ours (:func:`quality_score`). Rule lists are capped like the verdict's.
    """
    failed = [c for c in _not_passed(checks) if c.get("status") == STATUS_FAILED and c.get("action") != "flag"]
    warned = [c for c in _not_passed(checks) if c.get("status") == STATUS_FAILED and c.get("action") == "flag"]
    return {
        "run_uid": verdict.get("run_id"),
        "ruleset": (verdict.get("contract") or {}).get("name"),
        "table": verdict.get("dataset"),
        "score": verdict.get("score"),
        "passed": sum(1 for c in checks if c.get("status") == STATUS_PASSED),
        "warned": len(warned),
        "failed": len(failed),
        "errored": sum(1 for c in checks if c.get("status") == STATUS_ERROR),
        "failed_rules": [str(c.get("check_id")) for c in failed[:MAX_CHECK_IDS]],
        "warned_rules": [str(c.get("check_id")) for c in warned[:MAX_CHECK_IDS]],
    }


def verdict_extra(
    summary: Mapping[str, Any],
    *,
    reference_time: str | None = None,
    results_version: int | None = None,
    airflow: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Both keys of an event's ``extra``: ours (:func:`build_verdict`) and Airflow's convention.

    The value is plain JSON (checked here: an ``extra`` Airflow cannot store would fail the task late).
    """
    verdict = build_verdict(summary, reference_time=reference_time, results_version=results_version, airflow=airflow)
    extra = {VERDICT_KEY: verdict, AIRFLOW_DQ_RESULT_KEY: airflow_dq_result(verdict, list(summary.get("checks") or []))}
    json.dumps(extra, allow_nan=False)
    return extra


def event_verdict(extra: Any) -> Any:
    """The verdict an asset event's ``extra`` carries: the check task's (``extra[VERDICT_KEY]``), or an event
    trigger's — Airflow stores what a watcher's trigger fired as ``{"from_trigger": True, "payload": …}``.
    None when there is none.

    >>> v = {"schema_version": 1, "decision": "pass"}
    >>> event_verdict({VERDICT_KEY: v}) == event_verdict({"from_trigger": True, "payload": {VERDICT_KEY: v}}) == v
    True
    >>> event_verdict({"from_trigger": True, "payload": "text"}) is None
    True
    """
    if not isinstance(extra, Mapping):
        return None
    if VERDICT_KEY not in extra and extra.get("from_trigger") and isinstance(extra.get("payload"), Mapping):
        extra = extra["payload"]
    return extra.get(VERDICT_KEY)


__all__ = [
    "AIRFLOW_DQ_RESULT_KEY",
    "DECISION_ORDER",
    "MAX_CHECK_IDS",
    "SCHEMA_VERSION",
    "SEVERITY_WEIGHTS",
    "VERDICT_KEY",
    "airflow_dq_result",
    "build_verdict",
    "event_verdict",
    "quality_score",
    "verdict_extra",
]
