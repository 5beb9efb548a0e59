"""What a run's summary says, in words: the log line of its decision and the reason a gate gives.

>>> summary = {"decision": "gate", "row_count": 10, "counts": {"passed": 1, "failed": 1, "error": 0},
...            "quarantine": None, "checks": [{"action": "gate", "status": "failed", "severity": "P0",
...            "check_id": "id_unique", "message": "2 duplicates", "validator": "== 0"}]}
>>> decision_line(summary, "/wh/dq_results")
'Decision GATE: 1 passed, 1 failed, 0 error; 10 rows, 0 quarantined (results in /wh/dq_results)'
>>> gate_reason(summary)
'P0 id_unique (failed: 2 duplicates)'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.results import DECISION_GATE

__all__ = ["decision_line", "gate_reason"]


def decision_line(summary: Mapping[str, Any], results_table: str | None) -> str:
    """One line: the decision, the checks' counts, the rows and where the results are."""
    counts, quarantine = summary["counts"], summary.get("quarantine") or {}
    return (
        f"Decision {summary['decision'].upper()}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['error']} error; {summary['row_count']} rows, {quarantine.get('rows', 0)} quarantined "
        f"(results in {results_table})"
    )


def gate_reason(summary: Mapping[str, Any]) -> str:
    """The checks that gate the run, ``severity check (status: message)``; an errored quarantine check else."""
    gating = [c for c in summary["checks"] if c["action"] == DECISION_GATE and c["status"] != "passed"]
    names = "; ".join(
        f"{c['severity']} {c['check_id']} ({c['status']}: {c['message'] or c['validator']})" for c in gating
    )
    return names or "a quarantine check errored (fails closed)"
