"""``ContractBranchOperator``: route a DAG on a contract run's decision — pass, quarantine or gate.

It reads the summary that :class:`~airflow_dq_contracts.operators.contract_check.ContractCheckOperator`
pushed to XCom (always with explicit ``task_ids=check_task_id``: never "whatever ran upstream"),
decides as DESIGN §6 says — any failed or errored *gate* check → ``gate``; else any *quarantine*
check with violating rows → ``quarantine``; else ``pass`` — and follows the matching task ids,
skipping the rest. It logs a readable table of the checks that did not pass.

``policy`` re-maps severity → action for the routing decision of *this* branch only (the
results table keeps what the run recorded): ``{"P1": "gate"}`` applies to table-level and row-level
checks alike, ``{"P2": {"table": "gate", "row": "quarantine"}}`` per level. A check is row-level
when its record has ``failed_rows``. The policy overrides every check of that severity, also those
whose action the contract set explicitly: the operator's policy is the stricter, later word.

See the check operator's docs for the two ways the pair cooperates (``fail_on_gate=False`` and a
plain branch, or ``fail_on_gate=True`` and a branch with ``trigger_rule="all_done"``).

Example::

    branch = ContractBranchOperator(
        task_id="route_orders", check_task_id="check_orders",
        pass_task_ids=["publish"], quarantine_task_ids=["notify_quarantine"],
        gate_task_ids=["alert"],
    )
    check >> branch >> [publish, notify_quarantine, alert]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from airflow_dq_contracts.contract.model import ACTIONS
from airflow_dq_contracts.operators.contract_suite import decide_suite, describe_suite, is_suite_summary
from airflow_dq_contracts.results import (
    DECISION_GATE,
    DECISION_PASS,
    DECISION_QUARANTINE,
    SEVERITIES,
    CheckResult,
    decide,
)
from airflow_dq_contracts.version_compat import AirflowException, BaseBranchOperator, Context

_LEVELS = ("table", "row")


def normalise_policy(policy: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """Validate a severity → action override; ``{"P1": "gate"}`` → ``{"P1": {"table": "gate", "row": "gate"}}``.

    >>> normalise_policy({"P2": "gate", "P1": {"row": "gate"}})
    {'P2': {'table': 'gate', 'row': 'gate'}, 'P1': {'row': 'gate'}}
    """
    out: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for severity, value in (policy or {}).items():
        if severity not in SEVERITIES:
            problems.append(f"unknown severity {severity!r} (allowed: {', '.join(SEVERITIES)})")
            continue
        levels = {"table": value, "row": value} if isinstance(value, str) else value
        if not isinstance(levels, dict):
            problems.append(f"{severity}: expected an action or {{table: …, row: …}}, got {value!r}")
            continue
        for level, action in levels.items():
            if level not in _LEVELS:
                problems.append(f"{severity}.{level}: unknown level (allowed: table, row)")
            elif action not in ACTIONS:
                problems.append(f"{severity}.{level}: unknown action {action!r} (allowed: {', '.join(ACTIONS)})")
            elif level == "table" and action == DECISION_QUARANTINE:
                problems.append(f"{severity}.table: a table-level failure cannot quarantine rows; use gate or flag")
            else:
                out.setdefault(severity, {})[level] = action
    if problems:
        raise ValueError("invalid policy: " + "; ".join(problems))
    return out


def apply_policy(checks: Iterable[CheckResult], policy: dict[str, dict[str, str]]) -> list[CheckResult]:
    """The checks with their action re-mapped by ``policy`` (copies; the input is untouched)."""
    import dataclasses

    out = []
    for check in checks:
        level = "row" if check.failed_rows is not None else "table"
        action = policy.get(check.severity, {}).get(level)
        out.append(dataclasses.replace(check, action=action) if action else check)
    return out


def failed_checks_table(checks: Sequence[CheckResult]) -> str:
    """A plain-text table of the checks that did not pass (empty string when all passed).

    >>> c = CheckResult(run_id="r", contract_name="o", contract_version="1", dataset="d", check_id="a/b",
    ...     check_name="b", check_type="missing", column="a", severity="P0", action="gate",
    ...     validator="max 0", metric_value=2.0, status="failed", passed=False, failed_rows=2,
    ...     message="2 nulls", row_count=9)
    >>> print(failed_checks_table([c]))
    severity  action  status  check  metric  failed_rows  validator  message
    P0        gate    failed  a/b    2       2            max 0      2 nulls
    """
    rows = [c for c in checks if c.status != "passed"]
    if not rows:
        return ""
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    rows.sort(key=lambda c: (rank.get(c.severity, 9), c.action != DECISION_GATE, c.check_id))
    header = ("severity", "action", "status", "check", "metric", "failed_rows", "validator", "message")
    body = [
        (
            c.severity,
            c.action,
            c.status,
            c.check_id,
            "" if c.metric_value is None else f"{c.metric_value:.6g}",
            "" if c.failed_rows is None else str(c.failed_rows),
            c.validator or "",
            (c.message or "").replace("\n", " ")[:160],
        )
        for c in rows
    ]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(str(value).ljust(widths[i]) for i, value in enumerate(line)).rstrip() for line in [header, *body]
    ]
    return "\n".join(lines)


def _task_ids(value: str | Iterable[str] | None, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    ids = list(value)
    if not all(isinstance(i, str) and i for i in ids):
        raise ValueError(f"{what} must be task ids (strings), got {value!r}")
    return ids


class ContractBranchOperator(BaseBranchOperator):
    """Follow ``pass_task_ids``, ``quarantine_task_ids`` or ``gate_task_ids`` on a contract run's decision.

    :param check_task_id: task id of the ``ContractCheckOperator`` whose summary decides.
    :param pass_task_ids: followed on ``pass``.
    :param quarantine_task_ids: followed on ``quarantine``.
    :param gate_task_ids: followed on ``gate``; an empty list skips everything downstream.
    :param policy: severity → action override for this routing decision (see module docs).

    Example::

        ContractBranchOperator(task_id="route", check_task_id="check_orders",
                               pass_task_ids=["publish"], quarantine_task_ids=["quarantine_then_publish"],
                               gate_task_ids=["alert"])
    """

    template_fields: Sequence[str] = ("check_task_id",)
    ui_color = "#f7e9c6"

    def __init__(
        self,
        *,
        check_task_id: str,
        pass_task_ids: str | Iterable[str] | None = None,
        quarantine_task_ids: str | Iterable[str] | None = None,
        gate_task_ids: str | Iterable[str] | None = None,
        policy: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(check_task_id, str) or not check_task_id:
            raise ValueError(f"{self.task_id}: check_task_id must name the ContractCheckOperator's task")
        self.check_task_id = check_task_id
        self.pass_task_ids = _task_ids(pass_task_ids, "pass_task_ids")
        self.quarantine_task_ids = _task_ids(quarantine_task_ids, "quarantine_task_ids")
        self.gate_task_ids = _task_ids(gate_task_ids, "gate_task_ids")
        self.policy = normalise_policy(policy)

    def branches(self) -> dict[str, list[str]]:
        """decision → task ids to follow."""
        return {
            DECISION_PASS: self.pass_task_ids,
            DECISION_QUARANTINE: self.quarantine_task_ids,
            DECISION_GATE: self.gate_task_ids,
        }

    def decide(self, summary: dict[str, Any]) -> tuple[str, list[CheckResult]]:
        """(decision, checks as routed) for a summary, with this operator's policy applied.

        A task with several contracts pushed a suite summary: each contract is decided so, one without
        results is ``gate``, and the worst decision routes (see :mod:`.contract_suite`).
        """
        if is_suite_summary(summary):
            decision, checks = decide_suite(summary, self.decide)
            if not self.policy and summary.get("decision") not in (None, decision):
                raise AirflowException(
                    f"{self.task_id}: suite summary says {summary.get('decision')!r} but its contracts decide {decision!r}"
                )
            return decision, checks
        if not isinstance(summary, dict) or not isinstance(summary.get("checks"), list):
            raise AirflowException(
                f"{self.task_id}: the XCom of {self.check_task_id!r} is not a contract summary "
                f"(got {type(summary).__name__}); is it a ContractCheckOperator with do_xcom_push=True?"
            )
        checks = [CheckResult.from_dict(record) for record in summary["checks"]]
        if self.policy:
            checks = apply_policy(checks, self.policy)
            return decide(checks), checks
        # Without an override the run's own decision stands; recomputing it guards against a
        # summary edited by hand on the way.
        decision = decide(checks)
        if summary.get("decision") not in (None, decision):
            raise AirflowException(
                f"{self.task_id}: summary says {summary.get('decision')!r} but its checks decide {decision!r}"
            )
        return decision, checks

    def choose_branch(self, context: Context) -> list[str]:
        """Pull the summary (explicit task id), decide, log the failed checks, return the task ids."""
        summary = context["ti"].xcom_pull(task_ids=self.check_task_id, key="return_value")
        if summary is None:
            raise AirflowException(
                f"{self.task_id}: no contract summary in XCom from task {self.check_task_id!r} for this run "
                "(did it run, and push its summary?)"
            )
        decision, checks = self.decide(summary)
        counts = summary.get("counts") or {}
        if is_suite_summary(summary):
            self.log.info("%s%s", describe_suite(summary), " [policy override]" if self.policy else "")
        else:
            self.log.info(
                "Contract %s %s on %s: decision %s (%s passed, %s failed, %s error; %s rows, %s quarantined)%s",
                (summary.get("contract") or {}).get("name"),
                (summary.get("contract") or {}).get("version") or "",
                summary.get("dataset"),
                decision.upper(),
                counts.get("passed"),
                counts.get("failed"),
                counts.get("error"),
                summary.get("row_count"),
                (summary.get("quarantine") or {}).get("rows", 0),
                " [policy override]" if self.policy else "",
            )
        table = failed_checks_table(checks)
        if table:
            self.log.info("Checks that did not pass:\n%s", table)
        chosen = self.branches()[decision]
        self.log.info("Following %s: %s", decision, chosen or "nothing (all downstream tasks skipped)")
        return chosen
