"""The asset half of ``./dev demo``: the checked asset's producer, then its consumer, for one outcome.

``scripts/demo.py`` calls :func:`run_assets` after each run of ``dq_orders_pipeline``: it runs
``dq_orders_assets_producer`` (load → check → branch; the check task's event on the valid table's asset
carries the verdict) with the same outcome, prints the event's verdict as Airflow's metadata database holds
it, then runs ``dq_orders_assets_consumer`` by hand — its ``require_contract`` judges the asset's latest event
(the one just recorded) — and prints whether the consumer ran (pass, quarantine) or refused (gate) and why.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PRODUCER, CONSUMER = "dq_orders_assets_producer", "dq_orders_assets_consumer"
STEPS = 2  # progress steps per outcome


def _events(dag_id: str, run_id: str) -> list[Any]:
    """The newest asset event of the run (the demo re-runs one logical date: older events keep its run id)."""
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select
    from sqlalchemy.orm import joinedload

    with create_session() as session:
        query = select(AssetEvent).options(joinedload(AssetEvent.asset))
        events = session.scalars(
            query.where(AssetEvent.source_dag_id == dag_id, AssetEvent.source_run_id == run_id)
            .order_by(AssetEvent.id.desc())
            .limit(1)
        ).all()
        session.expunge_all()
        return list(events)


def _states(dag_run: Any, durations: dict[str, float] | None = None) -> dict[str, str]:
    """{task_id: state} of the run; ``durations``, when given, receives the seconds of the tasks that ran."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.get(DagRun, dag_run.id).get_task_instances(session=session)
        ran = sorted((ti for ti in tis if ti.duration is not None), key=lambda ti: ti.start_date)
        (durations if durations is not None else {}).update({ti.task_id: ti.duration for ti in ran})
        return {ti.task_id: str(ti.state) for ti in tis}


def run_assets(outcome: str, day: dt.date, progress: Any, quiet: Any, work: Path, timings: Any = None) -> bool:
    """Producer then consumer for ``outcome``; True when the consumer ran (pass, quarantine) or refused (gate).
    ``timings`` formats the producer's task times (``demo.timings``) for a line of its own."""
    from airflow.models.dagbag import DagBag

    from airflow_dq_contracts.operators.assets import VERDICT_KEY
    from airflow_dq_contracts.operators.verdict import judge

    bag = DagBag(dag_folder=str(ROOT / "dags_examples"), include_examples=False)
    if PRODUCER not in bag.dags or CONSUMER not in bag.dags:
        print(f"[demo] {PRODUCER}/{CONSUMER} did not load: {bag.import_errors}")
        return False
    logical = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    log_file = work / "logs" / f"demo-assets-{outcome}.log"
    with (
        progress(f"run {PRODUCER} with outcome={outcome!r} (the check updates the valid table's asset)"),
        quiet(log_file),
    ):
        produced = bag.dags[PRODUCER].test(logical_date=logical, run_after=logical, run_conf={"outcome": outcome})
    events = _events(PRODUCER, produced.run_id)
    print()
    if timings is not None:
        durations: dict[str, float] = {}
        _states(produced, durations)
        print(f"  {PRODUCER} task times: {timings(durations)}")
    for event in events:
        verdict = (event.extra or {}).get(VERDICT_KEY) or {}
        print(f"  asset event on {event.asset.uri} (task {event.source_task_id}):")
        print(
            f"    verdict: {str(verdict.get('decision')).upper()}  score {verdict.get('score')}  "
            f"counts {verdict.get('counts')}  failed {verdict.get('failed_checks')}  "
            f"run {verdict.get('run_id')}  results v{(verdict.get('results') or {}).get('version')}"
        )
    if not events:
        print(f"  no asset event recorded — see {log_file}")
        return False
    print()
    consumer_log = log_file.with_name(f"demo-consumer-{outcome}.log")
    with progress(f"run {CONSUMER} (require_contract accepts pass and quarantine)"), quiet(consumer_log):
        consumed = bag.dags[CONSUMER].test(logical_date=logical, run_after=logical)
    states = _states(consumed)
    judgement = judge(events, "quarantine")
    ran = states.get("summarise_orders") == "success"
    print("\n  consumer tasks: " + ", ".join(f"{t}={s}" for t, s in sorted(states.items())))
    print(f"  consumer {'RAN' if ran else 'REFUSED'}: {judgement.reason}")
    expected = outcome != "gate"
    print(f"  ({'as expected' if ran == expected else 'UNEXPECTED'})\n")
    return ran == expected and states.get("require_contract") == ("success" if expected else "skipped")


if __name__ == "__main__":  # pragma: no cover - run through scripts/demo.py
    sys.exit("run ./dev demo")
