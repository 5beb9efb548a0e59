"""Many contracts in one task: ``ContractCheckOperator(contract=[…])`` — one spark-submit, one summary each.

Why the list on ``ContractCheckOperator`` rather than a ``ContractSuiteOperator``: DESIGN §9 names
``ContractCheckOperator(contract=[…])``, and a list is the only difference a DAG author should see —
every other argument (``filter``, ``reference_time``, ``results_table``, ``conn_id``, ``spark_conf``,
``fail_on_gate``, ``policy``…) means the same for each contract. This module holds the list's logic;
the operator only hands a list over (:func:`run_suite_task`).

What a task with several contracts does:

1. Validates **every** contract locally first (a bad one fails the task before Spark starts, as alone).
2. Builds each contract's :class:`~airflow_dq_contracts.runspec.RunSpec` exactly as the operator builds
   one alone, then gives it a run id of its own, ``make_run_id(<the task's run id>, <contract name>)``:
   deterministic, so a retry of the task replaces each contract's rows instead of adding copies.
3. Submits ONE Spark application with the specs as a :class:`~airflow_dq_contracts.runspec.SuiteSpec`;
   the job (:mod:`airflow_dq_contracts.engine.suite`) evaluates them side by side, each as if alone.
4. Reads each run back (the same read-back and HTML report as a run alone) and pushes a **suite
   summary** to XCom: each contract's own summary under ``contracts``, plus the combined ``decision``
   (the worst: gate > quarantine > pass) for :class:`ContractBranchOperator`.

A contract whose run failed (its input missing, …) is an entry with ``status: error``,
``decision: gate`` (fails closed) and the job's ``error`` message; the others are read back as usual.
With ``fail_on_gate=True`` a combined gate fails the task after the summary was pushed — retryably
(``AirflowException``) when a contract errored, since a late input may yet arrive; otherwise for good.

The suite summary (XCom ``return_value``; a single contract keeps the summary of DESIGN §5)::

    {"suite": 1, "run_id": ..., "decision": "gate", "status": "error",
     "counts": {"passed": 17, "failed": 2, "error": 0},          # over every contract's checks
     "decisions": {"orders": "pass", "customers": "gate"},
     "contracts": [<summary of orders>, <summary of customers>, ...],
     "started_at": ..., "finished_at": ...}

Per contract: its datasets come from each contract's ``dataset:`` (``table=``/``input_path=`` name one
dataset and are refused with a list); ``quarantine_table``/``valid_table``, when given, must contain
``{contract}`` (replaced by the contract's name as a slug); ``references=`` overrides are refused
(each contract declares its own). The task's extra link shows the report of the contract that decided
the combined outcome; every contract's report URL is in its summary (``report``).

Example::

    ContractCheckOperator(
        task_id="check_landing",
        contract=["contracts/orders.yaml", "contracts/customers.yaml", "contracts/payments.yaml"],
        filter="day = '{{ ds }}'",
        valid_table="/wh/valid/{contract}",
        fail_on_gate=False,
    )
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from airflow_dq_contracts.contract import Contract
from airflow_dq_contracts.hooks.transport import JobHook
from airflow_dq_contracts.jobs.bundle import cache_dir
from airflow_dq_contracts.jobs.markers import SUITE_KEY
from airflow_dq_contracts.operators.report_link import publish_report_url
from airflow_dq_contracts.results import (
    DECISION_GATE,
    DECISION_PASS,
    DECISION_QUARANTINE,
    CheckResult,
    error_summary,
    make_run_id,
)
from airflow_dq_contracts.runspec import RunSpec, SuiteSpec
from airflow_dq_contracts.timeutil import format_time, utcnow
from airflow_dq_contracts.version_compat import AirflowException, AirflowFailException, Context

#: The suite summary's format (its ``"suite"`` key): a reader tells a suite from one contract's summary by it.
SUITE_SCHEMA = 1
#: The placeholder a per-contract output table carries in a task with several contracts.
CONTRACT_PLACEHOLDER = "{contract}"

#: What the operator's ``finish_run`` gives for one run: (its summary, its lineage entry).
RunOutcome = tuple[dict[str, Any], dict[str, Any]]

_RANK = {DECISION_PASS: 0, DECISION_QUARANTINE: 1, DECISION_GATE: 2}
_STATUS_RANK = {"passed": 0, "failed": 1, "error": 2}
_SLUG = re.compile(r"[^a-z0-9]+")


class SuiteHost(Protocol):
    """What :func:`run_suite_task` needs of the operator (``ContractCheckOperator``)."""

    task_id: str
    fail_on_gate: bool
    quarantine_table: str | None
    valid_table: str | None
    max_inline_contract_bytes: int

    @property
    def log(self) -> Any: ...
    def contract_sources(self) -> list[tuple[Any, str]]: ...
    def load_contract(self, source: Any = None, origin: str | None = None) -> tuple[Contract, str]: ...
    def run_spec(self, context: Context, contract: Contract, text: str, warehouse: str) -> RunSpec: ...
    def make_hook(
        self, application_args: list[str], files: list[str], warehouse: str, run_id: str | None = None
    ) -> JobHook: ...
    def submit(self, hook: JobHook, what: str) -> dict[str, Any] | None: ...
    def finish_run(
        self, context: Context, contract: Contract, spec: RunSpec, warehouse: str, reported: Any, started: dt.datetime
    ) -> RunOutcome: ...
    def emit_suite_verdict(
        self, context: Context, combined: Mapping[str, Any], reported: Mapping[Any, Any], warehouse: str | None = None
    ) -> None: ...
    def record_lineage(self, runs: list[dict[str, Any]], warehouse: str) -> None: ...


# --------------------------------------------------------------------------------------- arguments


def check_suite_arguments(task_id: str, contracts: Sequence[Any], **settings: Any) -> list[Any]:
    """The operator's arguments for a list of contracts, checked at DAG parse time; the list (a copy).

    >>> check_suite_arguments("t", ["a.yaml", "b.yaml"], table=None, valid_table="/wh/valid/{contract}")
    ['a.yaml', 'b.yaml']
    >>> check_suite_arguments("t", ["a.yaml", "b.yaml"], valid_table="/wh/valid")
    Traceback (most recent call last):
    ...
    ValueError: t: with several contracts, valid_table= must contain {contract} (one table per contract), got '/wh/valid'
    """
    items = [os.fspath(item) if isinstance(item, os.PathLike) else item for item in contracts]
    if not items:
        raise ValueError(f"{task_id}: contract= is an empty list")
    for index, item in enumerate(items):
        if not isinstance(item, (str, dict)) or (isinstance(item, str) and not item.strip()):
            raise ValueError(f"{task_id}: contract[{index}] must be a path, YAML text or a dict, got {item!r}")
    for name in ("table", "input_path"):
        if settings.get(name):
            raise ValueError(
                f"{task_id}: with several contracts, {name}= is refused: each contract reads its own `dataset:`"
            )
    if settings.get("references"):
        raise ValueError(f"{task_id}: with several contracts, references= is refused: each contract declares its own")
    for name in ("quarantine_table", "valid_table"):
        value = settings.get(name)
        if value and CONTRACT_PLACEHOLDER not in str(value):
            raise ValueError(
                f"{task_id}: with several contracts, {name}= must contain {CONTRACT_PLACEHOLDER} "
                f"(one table per contract), got {value!r}"
            )
    return items


def member_run_id(task_run_id: str, contract_name: str) -> str:
    """A contract's run id inside a task's suite: deterministic from the task's run id, so a retry replaces.

    >>> member_run_id("dq-1", "orders") == member_run_id("dq-1", "orders") != member_run_id("dq-1", "customers")
    True
    """
    return make_run_id(task_run_id, contract_name)


def member_table(template: str | None, contract_name: str) -> str | None:
    """A per-contract table from a ``{contract}`` template (None stays None).

    >>> member_table("/wh/valid/{contract}", "Orders v2")
    '/wh/valid/orders_v2'
    """
    if not template:
        return None
    slug = _SLUG.sub("_", contract_name.lower()).strip("_") or "contract"
    return template.replace(CONTRACT_PLACEHOLDER, slug)


# --------------------------------------------------------------------------------------- summaries


def worst_decision(decisions: Iterable[str]) -> str:
    """The combined decision of several contracts: gate > quarantine > pass (pass for none).

    >>> worst_decision(["pass", "quarantine", "pass"]), worst_decision([])
    ('quarantine', 'pass')
    """
    return max(decisions, key=lambda decision: _RANK.get(decision, _RANK[DECISION_GATE]), default=DECISION_PASS)


def suite_summary(
    run_id: str, summaries: list[dict[str, Any]], started_at: str | None, finished_at: str | None
) -> dict[str, Any]:
    """The task's XCom value for several contracts (see the module docs)."""
    counts = {key: sum(int(s["counts"].get(key, 0)) for s in summaries) for key in ("passed", "failed", "error")}
    return {
        "suite": SUITE_SCHEMA,
        "run_id": run_id,
        "decision": worst_decision(s["decision"] for s in summaries),
        "status": max((s["status"] for s in summaries), key=lambda status: _STATUS_RANK.get(status, 2)),
        "counts": counts,
        "decisions": {s["contract"]["name"]: s["decision"] for s in summaries},
        "contracts": summaries,
        "started_at": started_at,
        "finished_at": finished_at,
    }


def is_suite_summary(value: Any) -> bool:
    """True for the XCom value of a task with several contracts.

    >>> is_suite_summary({"suite": 1, "contracts": []}), is_suite_summary({"checks": []})
    (True, False)
    """
    return isinstance(value, dict) and "suite" in value and isinstance(value.get("contracts"), list)


def decide_suite(
    summary: dict[str, Any], decide_one: Callable[[dict[str, Any]], tuple[str, list[CheckResult]]]
) -> tuple[str, list[CheckResult]]:
    """(combined decision, every contract's checks as routed): ``decide_one`` for each contract that has
    results, ``gate`` for one that errored (no results: fail closed)."""
    decisions: list[str] = []
    checks: list[CheckResult] = []
    for entry in summary["contracts"]:
        if not isinstance(entry, dict) or entry.get("error") is not None:
            decisions.append(DECISION_GATE)
            continue
        decision, routed = decide_one(entry)
        decisions.append(decision)
        checks.extend(routed)
    return worst_decision(decisions), checks


def describe_suite(summary: dict[str, Any]) -> str:
    """One log line: the combined decision and each contract's.

    >>> describe_suite({"decision": "gate", "decisions": {"a": "pass", "b": "gate"}, "contracts": [{}, {}]})
    'Suite of 2 contracts: decision GATE (a: pass, b: gate)'
    """
    each = ", ".join(f"{name}: {decision}" for name, decision in (summary.get("decisions") or {}).items())
    return f"Suite of {len(summary['contracts'])} contracts: decision {str(summary['decision']).upper()} ({each})"


# --------------------------------------------------------------------------------------- the task


def run_suite_task(operator: SuiteHost, context: Context, warehouse: str) -> dict[str, Any]:
    """Validate every contract, submit one application, read each run back, push and return the suite summary.

    Each run is read back and reported by the operator's ``finish_run``, as a run alone.
    """
    started_at = utcnow()
    loaded = [(*operator.load_contract(source, origin), origin) for source, origin in operator.contract_sources()]
    names = [contract.name for contract, _, _ in loaded]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise AirflowFailException(
            f"{operator.task_id}: contract name(s) {', '.join(repeated)} given twice: one task checks each contract once"
        )
    members: list[tuple[Contract, RunSpec]] = []
    task_run_id = ""
    for contract, text, origin in loaded:
        spec = operator.run_spec(context, contract, text, warehouse)
        task_run_id = spec.run_id or task_run_id
        members.append(
            (
                contract,
                dataclasses.replace(
                    spec,
                    contract_origin=origin,
                    run_id=member_run_id(task_run_id, contract.name),
                    quarantine_table=member_table(operator.quarantine_table, contract.name) or spec.quarantine_table,
                    valid_table=member_table(operator.valid_table, contract.name),
                ),
            )
        )
    suite = SuiteSpec(tuple(spec for _, spec in members))
    arguments, files = suite.job_arguments(
        folder=cache_dir() / "specs", max_inline_bytes=operator.max_inline_contract_bytes
    )
    operator.log.info(
        "%d contracts in one Spark application: %s",
        len(members),
        "; ".join(f"{c.name} on {s.dataset} → run {s.run_id}" for c, s in members),
    )
    hook = operator.make_hook(arguments, files, warehouse, run_id=task_run_id)
    reported = operator.submit(hook, f"the contract job for {len(members)} contracts")
    entries = {entry.get("run_id"): entry for entry in (reported or {}).get(SUITE_KEY) or [] if isinstance(entry, dict)}

    summaries: list[dict[str, Any]] = []
    lineage: list[dict[str, Any]] = []  # what each contract checked and wrote (OpenLineage)
    for contract, spec in members:
        entry = entries.get(spec.run_id)
        error = (entry or {}).get("error")
        if error is not None:
            message = f"{error.get('kind', 'run_failed')}: {error.get('message')}"
            summaries.append(error_summary(contract, spec, message, at=format_time(utcnow())))
            operator.log.warning("Contract %s: no result (%s)", contract.name, message)
            continue
        try:
            summary, checked = operator.finish_run(context, contract, spec, warehouse, entry, started_at)
        except AirflowException as exc:  # its rows are not there: that contract's error, not the others'
            summaries.append(error_summary(contract, spec, str(exc), at=format_time(utcnow())))
            continue
        summaries.append(summary)
        lineage.append(checked)

    operator.record_lineage(lineage, warehouse)
    combined = suite_summary(task_run_id, summaries, format_time(started_at), format_time(utcnow()))
    deciding = next((s for s in summaries if s["decision"] == combined["decision"] and s.get("report")), None)
    if deciding is not None:  # the extra link: the report of a contract that decided the outcome
        publish_report_url(operator, context, deciding["report"])
    operator.log.info("%s", describe_suite(combined))
    # Every asset event of the task carries a verdict (none is recorded when the gate fails the task).
    operator.emit_suite_verdict(context, combined, entries, warehouse)
    if combined["decision"] == DECISION_GATE and operator.fail_on_gate:
        context["ti"].xcom_push(key="return_value", value=combined)
        errored = [s for s in summaries if s.get("error")]
        gating = "; ".join(
            f"{s['contract']['name']} ({s.get('error') or s['decision']})"
            for s in summaries
            if s["decision"] == DECISION_GATE
        )
        if errored:
            raise AirflowException(f"{len(errored)} of {len(summaries)} contracts could not be evaluated: {gating}")
        raise AirflowFailException(f"contracts decided GATE: {gating}")
    return combined
