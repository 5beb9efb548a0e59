"""Routing decision (DESIGN §6) and summary round-trip — plain Python."""

from __future__ import annotations

import json

import pytest

from airflow_dq_contracts.results import CheckResult, ContractResult, decide, utcnow


def _rec(action: str, status: str, failed_rows: int | None = None, severity: str = "P1") -> CheckResult:
    return CheckResult(
        run_id="r",
        contract_name="c",
        contract_version="1",
        dataset="d",
        check_id=f"x/{action}_{status}",
        check_name="n",
        check_type="whitelist",
        column="x",
        severity=severity,
        action=action,
        validator="implicit: all conform",
        metric_value=None if status == "error" else 1.0,
        status=status,
        passed=status == "passed",
        failed_rows=failed_rows,
        message="",
        row_count=10,
    )


@pytest.mark.parametrize(
    "records, expected",
    [
        ([], "pass"),
        ([_rec("gate", "passed", 0), _rec("quarantine", "passed", 0), _rec("flag", "failed", 3)], "pass"),
        ([_rec("gate", "failed", 0)], "gate"),
        ([_rec("gate", "error")], "gate"),
        ([_rec("quarantine", "failed", 2)], "quarantine"),
        ([_rec("quarantine", "failed", 2), _rec("gate", "failed", 1)], "gate"),
        ([_rec("quarantine", "error")], "gate"),  # cannot say which rows: fail closed
        ([_rec("quarantine", "failed", 0)], "gate"),  # failed, nothing to set aside: never a silent pass
        ([_rec("flag", "error")], "pass"),
    ],
)
def test_decision(records, expected):
    assert decide(records) == expected


def test_summary_round_trip_is_strict_json():
    now = utcnow()
    result = ContractResult(
        run_id="r",
        contract_name="c",
        contract_version="1",
        dataset="d",
        row_count=10,
        checks=[_rec("quarantine", "failed", 2), _rec("flag", "error", severity="P3")],
        started_at=now,
        finished_at=now,
        results_table="/t",
        quarantine_table="/q",
        quarantine_rows=2,
    )
    summary = json.loads(json.dumps(result.summary(), allow_nan=False))
    assert summary["decision"] == "quarantine" and summary["status"] == "error"
    assert summary["counts"] == {"passed": 0, "failed": 1, "error": 1}
    assert summary["failed_by_severity"] == {"P0": 0, "P1": 1, "P2": 0, "P3": 1}
    assert summary["quarantine"] == {"table": "/q", "rows": 2}
    assert ContractResult.from_summary(summary).summary() == summary
