"""The results-table watcher (``ContractVerdictTrigger``) polling real Delta tables with delta-rs — no JVM, no mocks.

Runs are written by the store's own writer (``open_results_store(...).write_run``) from ``ContractResult``
values, as a job writes them; a retry's rows and an ``OPTIMIZE`` are real delta-rs commits. The trigger runs
in an asyncio loop as the triggerer runs it (after a JSON round trip of its keyword arguments). Expected
payloads: the check task's own builder (``verdict_extra``) applied to the run that was written, with the
version its commit got; expected decisions written out from the checks' actions and statuses.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from airflow_dq_contracts.results import CheckResult, ContractResult
from airflow_dq_contracts.runs.verdict import AIRFLOW_DQ_RESULT_KEY, VERDICT_KEY, event_verdict, verdict_extra
from airflow_dq_contracts.store import tablemeta
from airflow_dq_contracts.store.results import open_results_store
from airflow_dq_contracts.triggers.results_watcher import ContractVerdictTrigger

UTC = dt.timezone.utc
#: (check id, action, status, failed rows) of a run per decision it must reach.
OUTCOMES: dict[str, list[tuple[str, str, str, int | None]]] = {
    "pass": [("_table_/rows", "gate", "passed", None), ("email/pattern", "quarantine", "passed", 0)],
    "quarantine": [("_table_/rows", "gate", "passed", None), ("email/pattern", "quarantine", "failed", 2)],
    "gate": [("_table_/rows", "gate", "failed", None), ("email/pattern", "quarantine", "passed", 0)],
}


def contract_run(
    run_id: str, decision: str, *, contract: str = "orders", dataset: str = "/data/orders", results_table: str = ""
) -> ContractResult:
    """A run of ``contract`` whose checks lead to ``decision`` (OUTCOMES), as the job builds it."""
    at = dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
    checks = [
        CheckResult(
            run_id=run_id,
            contract_name=contract,
            contract_version="1.2.0",
            dataset=dataset,
            check_id=check_id,
            check_name=check_id.split("/")[1],
            check_type="num_rows" if check_id.startswith("_table_") else "pattern",
            column=None if check_id.startswith("_table_") else "email",
            severity="P0" if action == "gate" else "P1",
            action=action,
            validator="> 3" if action == "gate" else "implicit: all conform",
            metric_value=6.0 if action == "gate" else float(failed or 0),
            status=status,
            passed=status == "passed",
            failed_rows=failed,
            message="" if status == "passed" else "planted",
            row_count=6,
            evaluated_at=at,
            reference_time=at,
            source_range='{"versions": [0, 3]}',
        )
        for check_id, action, status, failed in OUTCOMES[decision]
    ]
    return ContractResult(
        run_id=run_id,
        contract_name=contract,
        contract_version="1.2.0",
        dataset=dataset,
        row_count=6,
        checks=checks,
        started_at=at,
        finished_at=at,
        results_table=results_table,
    )


def write(results: str, run: ContractResult, storage_options: dict[str, str] | None = None) -> int:
    """The run's rows committed by the store's writer; the version of that commit."""
    version = open_results_store(results, storage_options=storage_options).write_run(run.checks, run.run_id)
    assert isinstance(version, int)
    return version


def expected_payload(run: ContractResult, version: int) -> dict[str, Any]:
    """What the check task would put on its asset event for this run (its builder), with the run's commit."""
    return verdict_extra(run.summary(), results_version=version)


def roundtrip(trigger: ContractVerdictTrigger) -> ContractVerdictTrigger:
    """What Airflow does: serialise to JSON, rebuild from the class path."""
    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(import_module(module), name)(**json.loads(json.dumps(kwargs)))
    assert rebuilt.serialize() == (classpath, kwargs)
    return rebuilt


async def _events(trigger: ContractVerdictTrigger, count: int, during, quiet: float) -> list[dict[str, Any]]:
    """Run the trigger; call ``during()`` (in a thread) once it polls; collect events until ``count`` arrived
    and then ``quiet`` seconds more passed without one (an extra event would be caught)."""
    got: list[dict[str, Any]] = []

    async def consume() -> None:
        async for event in trigger.run():
            got.append(event.payload)

    task = asyncio.create_task(consume())
    try:
        while trigger.position is None:  # the trigger has taken its start position
            assert not task.done(), "the trigger stopped"
            await asyncio.sleep(0.05)
        if during is not None:
            await asyncio.to_thread(during)
        while len(got) < count:
            assert not task.done(), "the trigger stopped"
            await asyncio.sleep(0.05)
        await asyncio.sleep(quiet)
    finally:
        task.cancel()
    return got


def collect(trigger: ContractVerdictTrigger, count: int, during=None, quiet: float = 1.0) -> list[dict[str, Any]]:
    return asyncio.run(asyncio.wait_for(_events(trigger, count, during, quiet), 90))


def test_one_event_per_new_run_from_the_current_version_with_the_check_tasks_extra(tmp_path: Path):
    results = str(tmp_path / "results")
    before = contract_run("dq-before", "pass", results_table=results)
    write(results, before)
    runs = [contract_run(f"dq-{d}", d, results_table=results) for d in ("pass", "gate", "quarantine")]
    versions: list[int] = []
    trigger = roundtrip(ContractVerdictTrigger(results_table=results, poll_interval=0.1))

    got = collect(trigger, 3, lambda: versions.extend(write(results, run) for run in runs))

    assert len(set(versions)) == 3
    assert got == [expected_payload(run, v) for run, v in zip(runs, versions)]  # the run before is not new
    assert [p[VERDICT_KEY]["decision"] for p in got] == ["pass", "gate", "quarantine"]
    assert got[1][VERDICT_KEY]["failed_checks"] == ["_table_/rows"]
    assert got[1][AIRFLOW_DQ_RESULT_KEY]["failed_rules"] == ["_table_/rows"]
    assert {p[VERDICT_KEY]["schema_version"] for p in got} == {1}
    assert [p[VERDICT_KEY]["results"] for p in got] == [{"table": results, "version": v} for v in versions]


def test_a_table_that_does_not_exist_yet_has_its_first_commit_emitted(tmp_path: Path):
    results = str(tmp_path / "later" / "results")
    assert tablemeta.newest_version(results) == -1
    run = contract_run("dq-first", "gate", results_table=results)
    trigger = roundtrip(ContractVerdictTrigger(results_table=results, poll_interval=0.1))

    versions: list[int] = []
    got = collect(trigger, 1, lambda: versions.append(write(results, run)))

    assert got == [expected_payload(run, versions[0])]


def test_a_retry_and_an_optimize_emit_nothing_again_and_a_restart_from_a_version_replays(tmp_path: Path):
    from deltalake import DeltaTable, write_deltalake

    results = str(tmp_path / "results")
    first = contract_run("dq-a", "quarantine", results_table=results)
    start = write(results, first)
    runs = [contract_run("dq-b", "pass", results_table=results), contract_run("dq-c", "gate", results_table=results)]
    versions: list[int] = []

    def land() -> None:
        versions.extend(write(results, run) for run in runs)
        # A retry of dq-b committed by another writer (no tag of ours: its run is read from the files it adds),
        # then a compaction (no data change): neither is a new run.
        table = DeltaTable(results)
        rows = table.to_pyarrow_table(filters=[("run_id", "=", "dq-b")])
        write_deltalake(results, rows, mode="append", partition_by=table.metadata().partition_columns)
        DeltaTable(results).optimize.compact()

    trigger = roundtrip(ContractVerdictTrigger(results_table=results, after_version=start, poll_interval=0.1))
    got = collect(trigger, 2, land, quiet=1.5)
    assert [p[VERDICT_KEY]["run_id"] for p in got] == ["dq-b", "dq-c"]
    assert got == [expected_payload(run, v) for run, v in zip(runs, versions)]
    landed = tablemeta.commits_after(results, versions[-1])
    assert [(c.version, c.run_ids) for c in landed] == [(versions[-1] + 1, ("dq-b",)), (versions[-1] + 2, ())]

    # A restart rebuilds the trigger from the same arguments: from the same version again — at least once.
    again = roundtrip(ContractVerdictTrigger(**trigger.serialize()[1]))
    assert [p[VERDICT_KEY]["run_id"] for p in collect(again, 2, None)] == ["dq-b", "dq-c"]
    # Without a start version, a restart begins at the newest version: nothing old comes back — at most once.
    fresh = roundtrip(ContractVerdictTrigger(results_table=results, poll_interval=0.1))
    late = contract_run("dq-d", "pass", results_table=results)
    assert collect(fresh, 1, lambda: versions.append(write(results, late))) == [expected_payload(late, versions[-1])]


def test_contract_and_dataset_filters_keep_only_matching_runs(tmp_path: Path):
    results = str(tmp_path / "results")
    start = write(results, contract_run("dq-setup", "pass", contract="customers", results_table=results))
    runs = [
        contract_run("dq-o1", "pass", results_table=results),
        contract_run("dq-c1", "gate", contract="customers", results_table=results),
        contract_run("dq-o2", "gate", dataset="/data/orders_eu", results_table=results),
        contract_run("dq-o3", "quarantine", results_table=results),
    ]
    versions: dict[str, int] = {}

    def land() -> None:
        for run in runs:
            versions[run.run_id] = write(results, run)

    trigger = roundtrip(
        ContractVerdictTrigger(results_table=results, contract_name="orders", dataset="/data/orders", poll_interval=0.1)
    )
    got = collect(trigger, 2, land)
    assert got == [expected_payload(runs[0], versions["dq-o1"]), expected_payload(runs[3], versions["dq-o3"])]

    only_customers = roundtrip(
        ContractVerdictTrigger(results_table=results, contract_name="customers", after_version=start, poll_interval=0.1)
    )
    assert [p[VERDICT_KEY]["run_id"] for p in collect(only_customers, 1, None)] == ["dq-c1"]


def test_an_unreadable_commit_is_retried_without_skipping_a_run(tmp_path: Path):
    results = str(tmp_path / "results")
    start = write(results, contract_run("dq-0", "pass", results_table=results))
    run = contract_run("dq-1", "gate", results_table=results)
    version = write(results, run)
    commit = Path(results) / "_delta_log" / f"{version:020d}.json"
    good = commit.read_bytes()
    commit.write_bytes(b"{not json\n")  # a torn read, as an object store outage would give
    trigger = roundtrip(ContractVerdictTrigger(results_table=results, after_version=start, poll_interval=0.1))

    got = collect(trigger, 1, lambda: (time.sleep(0.5), commit.write_bytes(good)))

    assert got == [expected_payload(run, version)]


def test_require_contract_reads_a_watchers_event_as_a_check_tasks(tmp_path: Path):
    from airflow_dq_contracts.operators.verdict import judge

    payloads = {d: expected_payload(contract_run(f"dq-{d}", d), 7) for d in OUTCOMES}
    # What Airflow's triggerer records for an asset watcher's event: the payload under "payload".
    events = {d: SimpleNamespace(extra={"from_trigger": True, "payload": p}) for d, p in payloads.items()}
    assert event_verdict(events["gate"].extra) == payloads["gate"][VERDICT_KEY]
    assert judge([events["pass"], events["quarantine"]], "quarantine").proceed
    refused = judge([events["pass"], events["gate"]], "quarantine")
    assert not refused.proceed
    assert "updated by an asset watcher's trigger (contract orders 1.2.0, run dq-gate) with decision GATE" in (
        refused.reason
    )
    assert "checks not passed: _table_/rows" in refused.reason


def test_the_trigger_reads_s3_with_the_storage_connections_credentials(s3, monkeypatch):
    from test_storage_conn_s3 import aws_connection

    options = s3.settings.delta_options()
    results = s3.url(f"dq/results-{uuid.uuid4().hex[:8]}")
    start = write(results, contract_run("dq-s3-0", "pass", results_table=results), options)
    conn_id = aws_connection(monkeypatch, "lake_watch", s3.settings)
    run = contract_run("dq-s3-1", "gate", results_table=results)
    trigger = roundtrip(ContractVerdictTrigger(results_table=results, storage_conn_id=conn_id, poll_interval=0.1))
    assert "password" not in json.dumps(trigger.serialize()[1]).lower()

    versions: list[int] = []
    got = collect(trigger, 1, lambda: versions.append(write(results, run, options)))

    assert got == [expected_payload(run, versions[0])] and versions[0] > start
    assert s3.settings.secret_access_key not in json.dumps(got)


def test_the_trigger_module_imports_no_pyspark_and_is_an_event_trigger():
    import subprocess
    import sys

    code = (
        "import sys, airflow_dq_contracts.triggers.results_watcher as m\n"
        "from airflow.triggers.base import BaseEventTrigger\n"
        "assert issubclass(m.ContractVerdictTrigger, BaseEventTrigger)\n"
        "print(sorted(n for n in ('pyspark', 'py4j', 'pandas') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the last line is the answer: Airflow 3.0 prints its own plugin set-up lines on import
    assert out.strip().splitlines()[-1] == "[]"


def test_commits_after_reads_only_commit_files_after_the_position(tmp_path: Path):
    results = str(tmp_path / "results")
    runs = [contract_run(f"dq-{i}", "pass", results_table=results) for i in range(3)]
    versions = [write(results, run) for run in runs]
    assert tablemeta.newest_version(results) == versions[-1]
    assert [(c.version, c.run_ids) for c in tablemeta.commits_after(results, versions[0])] == [
        (versions[1], ("dq-1",)),
        (versions[2], ("dq-2",)),
    ]
    assert tablemeta.commits_after(results, versions[-1]) == []
    # From before the table: its creation too (a commit without rows lands no run), a limit per poll.
    firsts = tablemeta.commits_after(results, -1, limit=versions[0] + 1)
    assert [c.version for c in firsts] == list(range(versions[0] + 1))
    assert [c.run_ids for c in firsts if c.run_ids] == [("dq-0",)]
    # Untagged appends of another writer: the runs come from the files' run_id column.
    from deltalake import write_deltalake

    write_deltalake(
        results,
        pa.table({"run_id": ["x", "y", "x"], "contract_name": ["orders"] * 3}),
        mode="append",
        partition_by=["contract_name"],
        schema_mode="merge",
    )
    assert [(c.version, c.run_ids) for c in tablemeta.commits_after(results, versions[-1])] == [
        (versions[-1] + 1, ("x", "y"))
    ]


@pytest.mark.spark
def test_incremental_runs_written_by_the_spark_job_each_fire_once(spark, tmp_path: Path):
    """Three days of appends checked incrementally by the engine (Spark's Delta writes the results), the gated
    day among them, then a retry of that day after the next one committed: one event per run, none twice."""
    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.engine.runner import run_contract

    contract = load_contract(
        {
            "name": "orders_daily",
            "columns": [
                {
                    "name": "order_id",
                    "type": "long",
                    "checks": [{"name": "id_present", "type": "missing", "max": 0, "action": "gate"}],
                },
                {"name": "day", "type": "int"},
            ],
            "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
        }
    )
    source, results = str(tmp_path / "orders"), str(tmp_path / "results")
    days = {day: [(None if day == 2 and i == 5 else day * 100 + i, day) for i in range(10 + day)] for day in (1, 2, 3)}
    expected = {day: ("gate" if any(o is None for o, _ in rows) else "pass", len(rows)) for day, rows in days.items()}
    done = {}
    for day, rows in days.items():
        spark.createDataFrame(rows, "order_id long, day int").write.format("delta").mode("append").save(source)
        done[day] = run_contract(
            spark, contract, input_path=source, incremental=True, run_id=f"day-{day}", results_table=results
        )
    retried = run_contract(spark, contract, input_path=source, incremental=True, run_id="day-2", results_table=results)
    assert retried.results_version is not None and retried.results_version > done[3].results_version

    trigger = roundtrip(ContractVerdictTrigger(results_table=results, after_version=-1, poll_interval=0.1))
    got = [p[VERDICT_KEY] for p in collect(trigger, 3, None, quiet=1.5)]

    assert [(v["run_id"], v["decision"], v["row_count"]) for v in got] == [
        (f"day-{day}", decision, rows) for day, (decision, rows) in expected.items()
    ]
    assert [v["results"]["version"] for v in got] == [done[day].results_version for day in days]
    assert got[1]["failed_checks"] == ["order_id/id_present"]
    assert [v["counts"]["total"] for v in got] == [len(done[day].checks) for day in days]
