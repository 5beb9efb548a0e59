"""Consumers that refuse bad data: stop an asset-scheduled DAG run whose triggering events carry a bad verdict.

A consumer DAG scheduled on a checked asset (``schedule=[orders_valid]``) runs whenever the check task
records an event — a ``gate`` verdict too, when the check runs with ``fail_on_gate=False``. Put
:func:`require_contract` (a :class:`ContractVerdictOperator`) first: it reads the run's
``triggering_asset_events``, finds each event's verdict (``extra["airflow_dq_contracts.verdict"]``, see
:mod:`~airflow_dq_contracts.operators.assets`; in an event an asset watcher's trigger fired — see
:mod:`~airflow_dq_contracts.triggers.results_watcher` — the same verdict under ``extra["payload"]``) and lets the run proceed only when **every** event carries a
verdict no worse than ``accept`` — decisions rank ``pass`` < ``quarantine`` < ``gate``. An event without a
verdict, or with a schema version this release does not know, is refused too (fail closed). When Airflow
collapses several events into one consumer run (the producer ran twice, or a mapped check emitted one event
per contract), one bad event stops the run.

Refusing logs one line naming the producer's DAG run and task and the contract run whose verdict stopped
it, then skips the task — so the tasks after it (default trigger rule) are skipped — or, with
``on_refuse="fail"``, fails it. Proceeding returns the accepted verdicts (XCom), so the next task can read,
say, the valid table and the contract run id to select its rows (``_dq_run_id``).

A run that no asset event triggered (a manual run, ``dag.test()``) has no triggering events; the operator
then judges the asset's **latest** event (it declares the asset as an inlet for that), and refuses when
there is none.

Example::

    orders_valid = contract_asset("/data/valid/orders")

    with DAG("orders_report", schedule=[orders_valid], ...):
        verdict = require_contract(orders_valid, accept="quarantine")
        verdict >> build_report()
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_dq_contracts.runs.verdict import DECISION_ORDER, SCHEMA_VERSION, event_verdict
from airflow_dq_contracts.version_compat import (
    AirflowFailException,
    AirflowSkipException,
    Asset,
    BaseOperator,
    Context,
)

ON_REFUSE = ("skip", "fail")


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What :func:`judge` decided about a run's events: proceed or not, why, and the verdicts it read."""

    proceed: bool
    reason: str
    verdicts: list[dict[str, Any]]


def _source(event: Any) -> str:
    """``dag/run, task[map]`` of the task instance that recorded ``event`` (its DAG run is what a user looks up)."""
    dag_id, run_id = getattr(event, "source_dag_id", None), getattr(event, "source_run_id", None)
    task_id, map_index = getattr(event, "source_task_id", None), getattr(event, "source_map_index", None)
    if not (dag_id and run_id):
        extra = getattr(event, "extra", None)
        if isinstance(extra, Mapping) and extra.get("from_trigger"):
            return "an asset watcher's trigger"
        return "an event with no source task (created through the API or by hand)"
    mapped = f"[{map_index}]" if isinstance(map_index, int) and map_index >= 0 else ""
    return f"DAG run {dag_id}/{run_id}, task {task_id}{mapped}"


def _asset_name(event: Any) -> str:
    asset = getattr(event, "asset", None)
    return str(getattr(asset, "uri", None) or getattr(asset, "name", None) or "the asset")


def judge(events: Sequence[Any], accept: str) -> Judgement:
    """Proceed only if every event carries a verdict whose decision is no worse than ``accept``.

    ``events`` are Airflow's asset event objects (anything with ``extra`` and the ``source_*`` fields).

    >>> from types import SimpleNamespace as E
    >>> ok = E(extra={"airflow_dq_contracts.verdict": {"schema_version": 1, "decision": "quarantine", "run_id": "dq-1"}})
    >>> judge([ok], "quarantine").proceed, judge([ok], "pass").proceed
    (True, False)
    """
    if accept not in DECISION_ORDER[:2]:
        raise ValueError(f"accept must be 'pass' or 'quarantine', not {accept!r}")
    if not events:
        return Judgement(False, "no asset event to judge: nothing says the data was checked", [])
    limit = DECISION_ORDER.index(accept)
    verdicts: list[dict[str, Any]] = []
    for event in events:
        verdict = event_verdict(getattr(event, "extra", None))  # a check task's event or a results watcher's
        where = f"{_asset_name(event)} was updated by {_source(event)}"
        if not isinstance(verdict, Mapping):
            return Judgement(False, f"{where} with no contract verdict in its extra (fails closed)", verdicts)
        version = verdict.get("schema_version")
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            return Judgement(
                False,
                f"{where} with a verdict of schema version {version!r}; this release reads {SCHEMA_VERSION}",
                verdicts,
            )
        decision = verdict.get("decision")
        contract = verdict.get("contract") or {}
        what = (
            f"contract {contract.get('name')} {contract.get('version') or ''}".rstrip()
            + f", run {verdict.get('run_id')}"
        )
        if decision not in DECISION_ORDER or DECISION_ORDER.index(decision) > limit:
            failing = list(verdict.get("failed_checks") or [])
            more = int(verdict.get("failed_checks_total") or len(failing)) - len(failing)
            checks = ", ".join(failing) + (f" (+{more} more)" if more > 0 else "")
            return Judgement(
                False,
                f"{where} ({what}) with decision {str(decision).upper()}; this consumer accepts "
                f"{', '.join(DECISION_ORDER[: limit + 1])}" + (f"; checks not passed: {checks}" if checks else ""),
                verdicts,
            )
        verdicts.append(dict(verdict))
    decisions = ", ".join(f"{v.get('decision')} (run {v.get('run_id')}, score {v.get('score')})" for v in verdicts)
    return Judgement(True, f"{len(verdicts)} event(s) accepted (accept={accept}): {decisions}", verdicts)


class ContractVerdictOperator(BaseOperator):
    """Let an asset-triggered run proceed only on acceptable contract verdicts (see module docs).

    :param asset: the checked asset whose triggering events are judged; None judges every triggering event.
    :param accept: the worst acceptable decision: ``"pass"`` (default) or ``"quarantine"``.
    :param on_refuse: ``"skip"`` (default: this task and, by the default trigger rule, what follows it are
        skipped) or ``"fail"``.

    Example::

        ContractVerdictOperator(task_id="require_orders", asset=orders_valid, accept="quarantine")
    """

    ui_color = "#fdf2d0"

    def __init__(
        self, *, asset: Asset | None = None, accept: str = "pass", on_refuse: str = "skip", **kwargs: Any
    ) -> None:
        if asset is not None:
            # Declared as an inlet: a run with no triggering event reads the asset's latest event instead.
            inlets = list(kwargs.pop("inlets", None) or [])
            kwargs["inlets"] = inlets if asset in inlets else [*inlets, asset]
        super().__init__(**kwargs)
        if accept not in DECISION_ORDER[:2]:
            raise ValueError(f"{self.task_id}: accept must be 'pass' or 'quarantine', not {accept!r}")
        if on_refuse not in ON_REFUSE:
            raise ValueError(f"{self.task_id}: on_refuse must be 'skip' or 'fail', not {on_refuse!r}")
        self.asset = asset
        self.accept = accept
        self.on_refuse = on_refuse

    def _events(self, context: Context) -> tuple[list[Any], str]:
        """(the events to judge, where they came from)."""
        triggering = context.get("triggering_asset_events")  # Airflow's accessor, keyed by asset name and URI
        if self.asset is None:
            return [event for events in (triggering or {}).values() for event in events], "triggering events"
        events: list[Any] = []
        if triggering:
            with contextlib.suppress(KeyError):
                events = list(triggering[self.asset])
        if events:
            return events, "triggering events"
        # Not triggered by this asset (manual run, dag.test): the asset's latest event decides.
        latest = context["inlet_events"][self.asset]
        return (
            [latest[-1]] if len(latest) else []
        ), f"latest event of {self.asset.uri} (the run has no triggering one)"

    def execute(self, context: Context) -> list[dict[str, Any]]:
        """Judge the events; return the accepted verdicts, or skip/fail with the reason."""
        events, origin = self._events(context)
        judgement = judge(events, self.accept)
        if judgement.proceed:
            self.log.info("Contract verdicts accepted (%s): %s", origin, judgement.reason)
            return judgement.verdicts
        message = f"Refusing the data ({origin}): {judgement.reason}"
        self.log.warning(message)
        if self.on_refuse == "fail":
            raise AirflowFailException(message)
        raise AirflowSkipException(message)


def require_contract(
    asset: Asset | None, accept: str = "pass", *, task_id: str | None = None, on_refuse: str = "skip", **kwargs: Any
) -> ContractVerdictOperator:
    """A :class:`ContractVerdictOperator` for ``asset`` (task id ``require_contract`` unless given).

    Example::

        require_contract(orders_valid, accept="quarantine") >> build_report()
    """
    return ContractVerdictOperator(
        task_id=task_id or "require_contract", asset=asset, accept=accept, on_refuse=on_refuse, **kwargs
    )


__all__ = ["ContractVerdictOperator", "Judgement", "judge", "require_contract"]
