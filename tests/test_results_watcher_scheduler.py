"""A consumer DAG scheduled on an asset watched by ``ContractVerdictTrigger``: one DAG run per verdict, under a real
scheduler and triggerer; the gated verdict refused by ``require_contract``.

Airflow's components as processes (api-server, dag-processor, scheduler with the LocalExecutor, triggerer — the
machinery of ``test_scheduler_concurrency.py``) on **PostgreSQL** (``tests/pg_fixtures.py``). The consumer's asset
has ``watchers=[AssetWatcher(trigger=ContractVerdictTrigger(results_table=…))]``; the dag-processor registers the
trigger and the triggerer runs it. The test then lands three contract runs in the results table with the store's
own writer (no Spark: the runs are ``ContractResult`` values, as a job or a stream window writes them), each once
the consumer's run for the previous verdict exists — ``pass``, ``gate``, ``quarantine``. Asserted from the
metadata database (psycopg2, not through Airflow): three ``asset_triggered`` runs, each consuming exactly one
event whose ``extra`` is the trigger's payload (the check task's verdict extra); the gated run's
``require_contract`` and the task after it skipped, the others' verdicts handed on; no event twice.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import urllib.request
from typing import Any

import pytest
from cluster_fixtures import free_port
from test_results_watcher import contract_run, expected_payload, write
from test_scheduler_concurrency import (
    RUN_DEADLINE_SECONDS,
    START_DEADLINE_SECONDS,
    _airflow,
    _components,
    _environment,
    _evidence,
    _query,
)

pytestmark = [pytest.mark.slow, pytest.mark.airflow]

CONSUMER = "consumer_of_verdicts"
ASSET_URI = "x-dq-test://orders-verdicts"
DECISIONS = ("pass", "gate", "quarantine")

CONSUMER_SOURCE = '''
"""Scheduled on the verdicts a results table receives (tests/test_results_watcher_scheduler.py)."""
import datetime as dt

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_dq_contracts.operators import require_contract
from airflow_dq_contracts.triggers import ContractVerdictTrigger

VERDICTS = Asset(
    name={uri!r},
    uri={uri!r},
    watchers=[
        AssetWatcher(
            name="orders_verdicts",
            trigger=ContractVerdictTrigger(
                results_table={results!r}, contract_name="orders", after_version={after}, poll_interval=1
            ),
        )
    ],
)

with DAG(dag_id={dag_id!r}, schedule=[VERDICTS], start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
         catchup=False):
    verdict = require_contract(VERDICTS, accept="quarantine")

    @task
    def after(verdicts: list) -> list:
        return [[v["run_id"], v["decision"], v["results"]["version"]] for v in verdicts]

    after(verdict.output)
'''


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


@pytest.mark.timeout(START_DEADLINE_SECONDS * 2 + RUN_DEADLINE_SECONDS + 300)
def test_an_asset_watcher_on_the_results_table_runs_the_consumer_once_per_verdict(tmp_path, postgres):
    home, logs = tmp_path / "airflow-home", tmp_path / "logs"
    for folder in (home / "dags", logs):
        folder.mkdir(parents=True)
    results = str(tmp_path / "results")
    # The table exists with an earlier run: the watcher emits what comes after it.
    start = write(results, contract_run("dq-earlier", "gate", results_table=results))
    (home / "dags" / f"{CONSUMER}.py").write_text(
        CONSUMER_SOURCE.format(uri=ASSET_URI, results=results, after=start, dag_id=CONSUMER)
    )
    marker = f"{os.getpid()}:{secrets.token_hex(8)}"
    db = postgres.create_database("watcher_" + secrets.token_hex(4))
    port = free_port()
    env = _environment(home, tmp_path, port, marker, database_url=db.url)
    # Unpaused when first parsed: Airflow registers a watcher's trigger only for an active, unpaused DAG.
    env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "False"

    _airflow(env, "db", "migrate")
    with _components(env, logs, marker, extra=("triggerer",)) as procs:
        try:

            def alive() -> None:
                assert all(p.poll() is None for p in procs.values()), "a component stopped"

            deadline = time.monotonic() + START_DEADLINE_SECONDS * 2
            while not _query(
                db,
                "SELECT id FROM trigger WHERE classpath LIKE ? AND triggerer_id IS NOT NULL",
                "%ContractVerdictTrigger",
            ):
                assert not _query(db, "SELECT filename, stacktrace FROM import_error"), "the DAG file does not import"
                alive()
                assert time.monotonic() < deadline, "the triggerer did not take the watcher's trigger in time"
                time.sleep(2)

            # The consumer's tasks talk to the api-server's Execution API: it answers before the first verdict lands.
            while not _answers(f"http://127.0.0.1:{port}/execution/health"):
                alive()
                assert time.monotonic() < deadline, "the api-server does not answer"
                time.sleep(2)

            runs = {d: contract_run(f"dq-{d}", d, results_table=results) for d in DECISIONS}
            versions: dict[str, int] = {}
            for count, decision in enumerate(DECISIONS, start=1):
                versions[decision] = write(results, runs[decision])
                # The next verdict lands once the consumer's run for this one exists: one run per verdict.
                deadline = time.monotonic() + START_DEADLINE_SECONDS
                while len(_query(db, "SELECT id FROM dag_run WHERE dag_id = ?", CONSUMER)) < count:
                    alive()
                    assert time.monotonic() < deadline, f"no consumer run for verdict {count} ({decision})"
                    time.sleep(1)

            deadline = time.monotonic() + RUN_DEADLINE_SECONDS
            while True:
                states = [s for (s,) in _query(db, "SELECT state FROM dag_run WHERE dag_id = ?", CONSUMER)]
                if len(states) == len(DECISIONS) and all(s in ("success", "failed") for s in states):
                    break
                alive()
                assert time.monotonic() < deadline, f"consumer runs not finished: {states}"
                time.sleep(2)
            time.sleep(5)  # a few more polls of the trigger: nothing is emitted twice

            events = _query(
                db,
                "SELECT e.id, e.extra, e.source_dag_id FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                "WHERE a.uri = ? ORDER BY e.id",
                ASSET_URI,
            )
            assert len(events) == len(DECISIONS), events
            for (_, extra, source_dag), decision in zip(events, DECISIONS):
                assert source_dag is None
                assert _json(extra) == {
                    "from_trigger": True,
                    "payload": expected_payload(runs[decision], versions[decision]),
                }

            consumer_runs = _query(
                db, "SELECT id, run_id, run_type FROM dag_run WHERE dag_id = ? ORDER BY id", CONSUMER
            )
            assert [r[2] for r in consumer_runs] == ["asset_triggered"] * len(DECISIONS)
            for (dag_run_pk, run_id, _), decision, (event_id, _, _) in zip(consumer_runs, DECISIONS, events):
                consumed = _query(db, "SELECT event_id FROM dagrun_asset_event WHERE dag_run_id = ?", dag_run_pk)
                assert consumed == [(event_id,)], (decision, consumed)
                tasks = dict(
                    _query(
                        db, "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?", CONSUMER, run_id
                    )
                )
                if decision == "gate":
                    assert tasks == {"require_contract": "skipped", "after": "skipped"}
                else:
                    assert tasks == {"require_contract": "success", "after": "success"}
                    ((value,),) = _query(
                        db,
                        "SELECT value FROM xcom WHERE dag_id = ? AND run_id = ? AND task_id = 'after'",
                        CONSUMER,
                        run_id,
                    )
                    assert _json(value) == [[f"dq-{decision}", decision, versions[decision]]]

            (log_file,) = [
                p
                for p in (home / "logs").rglob("*.log")
                if f"dag_id={CONSUMER}" in str(p)
                and "task_id=require_contract" in str(p)
                and f"run_id={consumer_runs[1][1]}" in str(p)
            ]
            assert (
                f"Refusing the data (triggering events): {ASSET_URI} was updated by an asset watcher's trigger "
                "(contract orders 1.2.0, run dq-gate) with decision GATE; this consumer accepts pass, quarantine; "
                "checks not passed: _table_/rows"
            ) in log_file.read_text(errors="replace")
        except (Exception, pytest.fail.Exception) as exc:
            raise AssertionError(f"{exc}\n\n---- logs ----\n{_evidence(home, logs)}") from exc
