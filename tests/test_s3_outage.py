"""Storage outages end cleanly: the S3 endpoint down or throttled at each phase of a run, then back.

Between the code and the tests' SeaweedFS sits a fault-injecting proxy (``tests/s3_fault_proxy.py``)
that picks a phase out by the request's path: the input table, the quarantine table's log, the
results table's log, the registry table. With the endpoint down at a phase the run fails with ONE
line naming the table and the phase; what a reader sees meanwhile is read straight from the server
(not through the proxy) with delta-rs; then, the endpoint back, the retry of the same run id
completes exactly once. Throttling (``503 SlowDown``) is retried within the documented bound
(``storage.s3.DELTA_RETRY_OPTIONS``, docs/storage.md). Expected rows are computed here, in plain Python.

The results and the registry are committed by delta-rs from the driver: those phases are driven
through the results port directly (no JVM); one full ``dq-contracts run`` covers the input read and
the order of the writes (quarantine by Spark's ``s3a``, then registry and results by delta-rs).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from s3_fault_proxy import FaultProxy
from s3_fixtures import S3Place

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.results import CheckResult
from airflow_dq_contracts.storage.s3 import DELTA_RETRY_OPTIONS
from airflow_dq_contracts.store.delta import StoreError
from airflow_dq_contracts.store.results import open_results_store, registry

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.timezone.utc
#: The one input every test shares: six orders, two of them without an id.
ROWS = [{"id": None if i in (1, 4) else i, "amount": float(i)} for i in range(6)]
CONTRACT = {
    "name": "orders",
    "version": "1.0.0",
    "columns": [
        {
            "name": "id",
            "type": "long",
            "checks": [{"name": "ids present", "type": "missing", "max": 0, "severity": "P2", "action": "quarantine"}],
        },
        {"name": "amount", "type": "double"},
    ],
    "checks": [{"name": "volume", "type": "num_rows", "min": 1, "severity": "P2"}],
}
# The documented bound of one request's retries (storage/s3.py, docs/deployment.md) is asserted by what
# happened — how many requests were made — never by a wall clock (a loaded CI machine is slow, not wrong).


@pytest.fixture
def proxy(s3: S3Place):
    with FaultProxy(str(s3.settings.endpoint_url)) as running:
        yield running


def _through(proxy: FaultProxy, s3: S3Place) -> dict[str, str]:
    """delta-rs options reaching the server through the proxy."""
    return dataclasses.replace(s3.settings, endpoint_url=proxy.endpoint_url).delta_options()


def _records(run_id: str) -> list[CheckResult]:
    """A run's results as the oracle has them: the row count and the missing ids of ROWS."""
    missing = sum(1 for row in ROWS if row["id"] is None)

    def record(check_id: str, metric: float, passed: bool) -> CheckResult:
        return CheckResult(
            run_id=run_id,
            contract_name="orders",
            contract_version="1.0.0",
            dataset="s3://lake/orders",
            check_id=check_id,
            check_name=check_id.split("/")[-1],
            check_type="num_rows" if check_id.startswith("_table_") else "missing",
            column=None if check_id.startswith("_table_") else "id",
            severity="P2",
            action="gate",
            validator="",
            metric_value=metric,
            status="passed" if passed else "failed",
            passed=passed,
            failed_rows=None if passed else int(metric),
            message="",
            row_count=len(ROWS),
            evaluated_at=dt.datetime(2024, 5, 2, tzinfo=UTC),
        )

    return [record("_table_/volume", float(len(ROWS)), True), record("id/ids_present", float(missing), False)]


def _registry_row(run_id: str, day: int, results: str) -> dict:
    return registry.registry_row(
        load_contract(CONTRACT),
        contract_text=yaml.safe_dump(CONTRACT),
        run_id=run_id,
        run_at=dt.datetime(2024, 5, day, tzinfo=UTC),
        decision="quarantine",
        dataset="s3://lake/orders",
        results_table=results,
        quarantine_table=None,
        valid_table=None,
    )


def _stored(location: str, s3: S3Place, column: str = "run_id") -> list[tuple]:
    """The table's rows read straight from the server (no proxy), as ``(run, check/id, metric/amount)``."""
    from deltalake import DeltaTable

    rows = DeltaTable(location, storage_options=s3.settings.delta_options()).to_pyarrow_table().to_pylist()
    if column == "run_id":
        return sorted((r["run_id"], r["check_id"], r["metric_value"]) for r in rows)
    return sorted((r[column], r["id"] if r["id"] is not None else -1, r["amount"]) for r in rows)


def _expected(*runs: str) -> list[tuple]:
    return sorted((r.run_id, r.check_id, r.metric_value) for run in runs for r in _records(run))


def _one_line(error: BaseException, *parts: str) -> str:
    text = str(error)
    assert "\n" not in text, text
    for part in parts:
        assert part in text, (part, text)
    return text


def test_the_store_down_during_the_registry_upsert_or_the_results_commit_fails_in_one_line_and_the_retry_lands_once(
    s3: S3Place, proxy: FaultProxy
) -> None:
    results = s3.url("dq/dq_results")
    registry_location = registry.registry_table_for(results)
    store = open_results_store(results, storage_options=_through(proxy, s3))
    store.upsert_registry(_registry_row("r0", 1, results))  # an earlier run: both tables exist
    assert store.write_run(_records("r0"), "r0") == 0

    # the registry upsert (before the results: runner.run_contract) with the endpoint down
    proxy.down("/dq/dq_contracts/")
    with pytest.raises(StoreError) as failed:
        store.upsert_registry(_registry_row("r1", 2, results))
    _one_line(
        failed.value, f"registry table {registry_location!r}", "did not answer", "while upserting orders 1.0.0 (run r1)"
    )
    proxy.clear()
    assert (
        registry.read_registry(registry_location, "orders", storage_options=s3.settings.delta_options())["last_run_id"]
        == "r0"
    )

    # the results commit itself: the log and the data file are reached, the commit file of version 1 is not
    proxy.down("/dq/dq_results/_delta_log/00000000000000000001.json")
    with pytest.raises(StoreError) as failed:
        store.write_run(_records("r1"), "r1")
    _one_line(failed.value, f"results table {results!r}", "did not answer", "while committing run r1")
    assert proxy.requests("_delta_log/00000000000000000001.json", "down")
    proxy.clear()
    # nothing half visible: the table is still version 0, without a row of r1
    assert _stored(results, s3) == _expected("r0")

    # the endpoint is back: the retry (same run id) lands once; a second retry (its answer lost) replaces it
    store.upsert_registry(_registry_row("r1", 2, results))
    store.write_run(_records("r1"), "r1")
    store.write_run(_records("r1"), "r1")
    assert _stored(results, s3) == _expected("r0", "r1")
    found = registry.read_registry(registry_location, "orders", storage_options=s3.settings.delta_options())
    assert (found["last_run_id"], found["first_run_at"].day) == ("r1", 1)


def test_throttling_is_retried_within_the_bound_and_beyond_it_fails_in_one_line(s3: S3Place, proxy: FaultProxy) -> None:
    results = s3.url("dq/dq_results")
    store = open_results_store(results, storage_options=_through(proxy, s3))
    # 503 SlowDown for the first 3 requests of each table: retried with backoff, the run succeeds
    proxy.throttle("/dq/dq_contracts/", 3)
    proxy.throttle("/dq/dq_results/", 3)
    store.upsert_registry(_registry_row("r1", 2, results))
    store.write_run(_records("r1"), "r1")
    assert len(proxy.requests("/dq/dq_contracts/", "throttle")) == 3
    assert len(proxy.requests("/dq/dq_results/", "throttle")) == 3
    assert _stored(results, s3) == _expected("r1")

    # throttled for longer than the bound: one line, no partial commit, well within the bound
    proxy.clear()
    proxy.throttle("/dq/dq_results/", 1000)
    before = len(proxy.requests("/dq/dq_results/", "throttle"))
    with pytest.raises(StoreError) as failed:
        store.write_run(_records("r2"), "r2")
    _one_line(failed.value, f"results table {results!r}", "kept answering 503 SlowDown", "while committing run r2")
    # one request, tried once and retried max_retries times
    assert len(proxy.requests("/dq/dq_results/", "throttle")) - before == 1 + int(DELTA_RETRY_OPTIONS["max_retries"])
    assert _stored(results, s3) == _expected("r1")


def _cli(tmp_path: Path, s3: S3Place, proxy: FaultProxy, run_id: str, tables: dict[str, str], name: str):
    env = {**s3.env(), "AWS_ENDPOINT_URL": proxy.endpoint_url}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env["DQ_CONTRACTS_WAREHOUSE"] = str(tmp_path / "warehouse")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    contract = tmp_path / "orders.yaml"
    contract.write_text(yaml.safe_dump(CONTRACT), encoding="utf-8")
    command = [sys.executable, "-m", "airflow_dq_contracts.cli.main", "run", str(contract)]
    command += ["--input", tables["input"], "--input-format", "delta", "--run-id", run_id, "--master", "local[1]"]
    command += ["--results-table", tables["results"], "--quarantine-table", tables["quarantine"]]
    command += ["--json-out", str(tmp_path / f"{name}.json")]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    (tmp_path / f"{name}.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    return done


def _failure_line(done: subprocess.CompletedProcess) -> str:
    """The CLI's one failure line (its progress lines start with ``[dq-contracts]``); no traceback.

    Besides it, only the logged fallback of the driver's delta-rs read to Spark's reader (issue #38: never a
    silent fallback) may precede it — on an input that does not answer, delta-rs fails first."""
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-3000:]
    lines = [
        line
        for line in done.stderr.splitlines()
        if line.strip()
        and not line.startswith("[dq-contracts]")
        and "RuntimeWarning: 'airflow_dq_contracts" not in line
        and "delta-rs could not read it on the driver" not in line
    ]
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]


@pytest.mark.spark
@pytest.mark.slow
def test_a_cli_run_with_the_endpoint_down_at_the_input_or_the_results_fails_in_one_line_then_the_retry_completes_once(
    s3: S3Place, proxy: FaultProxy, tmp_path: Path
) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    tables = {
        "input": s3.url("silver/orders"),
        "results": s3.url("dq/dq_results"),
        "quarantine": s3.url("dq/quarantine/orders"),
    }
    write_deltalake(
        tables["input"],
        pa.Table.from_pylist(ROWS, schema=pa.schema([("id", pa.int64()), ("amount", pa.float64())])),
        storage_options=s3.settings.delta_options(),
    )
    bad = sorted((run, -1, row["amount"]) for run in ["nightly-1"] for row in ROWS if row["id"] is None)

    # 1. the input read: nothing is written anywhere
    proxy.down("/silver/orders/")
    line = _failure_line(_cli(tmp_path, s3, proxy, "nightly-1", tables, "input-down"))
    assert tables["input"] in line and "cannot read" in line and "the object store did not answer" in line, line
    assert not proxy.requests("/dq/")
    proxy.clear()

    # 2. the results commit: quarantine rows first, registry, then the results commit fails
    proxy.down("/dq/dq_results/_delta_log/")
    line = _failure_line(_cli(tmp_path, s3, proxy, "nightly-1", tables, "results-down"))
    assert line.startswith("dq-contracts run: failed: results table ")
    assert tables["results"] in line and "did not answer" in line and "while committing run nightly-1" in line
    proxy.clear()
    # What a reader sees now: the run's quarantine rows, no results row of it. That order is the design
    # (docs/storage.md): the results are the run's commit point — no reader finds a run but through its
    # results rows (the operator's read-back, history, the report), and the retry replaces these rows.
    assert _stored(tables["quarantine"], s3, "_dq_run_id") == bad
    from deltalake import DeltaTable

    assert not DeltaTable.is_deltatable(tables["results"], s3.settings.delta_options())

    # 3. the endpoint back: the retry of the same run completes, every table holds the run once
    done = _cli(tmp_path, s3, proxy, "nightly-1", tables, "retry")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _stored(tables["quarantine"], s3, "_dq_run_id") == bad
    stored = {
        (r[0], r[1]): r[2] for r in _stored(tables["results"], s3) if r[1] in ("_table_/volume", "id/ids_present")
    }
    assert stored == {(run, check): metric for run, check, metric in _expected("nightly-1")}
    assert len(_stored(tables["results"], s3)) == len(json.loads((tmp_path / "retry.json").read_text())["checks"])


@pytest.mark.spark
@pytest.mark.slow
def test_the_store_down_while_the_quarantine_commit_is_in_flight_leaves_nothing_half_written_and_the_retry_lands_once(
    s3: S3Place, proxy: FaultProxy, tmp_path: Path
) -> None:
    """The quarantine is committed by Spark over ``s3a``: a new table is created with an empty version 0, then the
    run's data files are written, then the commit file of version 1. The endpoint drops exactly that commit (every
    try of its PUT): the run fails in one line naming the quarantine table and the phase, and nothing of it is
    visible — no quarantine row, no registry or results row of the run. The endpoint back, the retry of the same
    run lands once."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    tables = {
        "input": s3.url("silver/orders"),
        "results": s3.url("dq/dq_results"),
        "quarantine": s3.url("dq/quarantine/orders"),
    }
    write_deltalake(
        tables["input"],
        pa.Table.from_pylist(ROWS, schema=pa.schema([("id", pa.int64()), ("amount", pa.float64())])),
        storage_options=s3.settings.delta_options(),
    )
    # An earlier run in the results table and the registry (driven through the results port: no JVM).
    store = open_results_store(tables["results"], storage_options=s3.settings.delta_options())
    store.upsert_registry(_registry_row("r0", 1, tables["results"]))
    store.write_run(_records("r0"), "r0")
    registry_location = registry.registry_table_for(tables["results"])
    bad = sorted(("nightly-1", -1, row["amount"]) for row in ROWS if row["id"] is None)

    commit = f"PUT /lake/{s3.prefix}/dq/quarantine/orders/_delta_log/00000000000000000001.json"
    proxy.down(commit)
    line = _failure_line(_cli(tmp_path, s3, proxy, "nightly-1", tables, "quarantine-down"))
    failed = f"dq-contracts run: failed: quarantine table {tables['quarantine']!r}: the object store did not answer"
    assert line.startswith(failed) and line.endswith(" while committing"), line
    # In flight: the table's empty version 0 and the run's data files went through, then its commit was dropped.
    assert proxy.requests(f"PUT /lake/{s3.prefix}/dq/quarantine/orders/_delta_log/00000000000000000000.json", "pass")
    assert proxy.requests(f"PUT /lake/{s3.prefix}/dq/quarantine/orders/part-", "pass")
    assert len(proxy.requests(commit, "down")) >= 1
    proxy.clear()
    # Nothing half written: the quarantine is its empty version 0 (the data files are no version's rows), the
    # registry and the results are as the earlier run left them — the run wrote nothing a reader can see.
    options = s3.settings.delta_options()
    assert DeltaTable(tables["quarantine"], storage_options=options).version() == 0
    assert _stored(tables["quarantine"], s3, "_dq_run_id") == []
    assert _stored(tables["results"], s3) == _expected("r0")
    assert registry.read_registry(registry_location, "orders", storage_options=options)["last_run_id"] == "r0"

    # The endpoint back: the retry of the same run lands once in every table.
    done = _cli(tmp_path, s3, proxy, "nightly-1", tables, "quarantine-retry")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _stored(tables["quarantine"], s3, "_dq_run_id") == bad
    checks = json.loads((tmp_path / "quarantine-retry.json").read_text())["checks"]
    stored = _stored(tables["results"], s3)
    assert [r for r in stored if r[0] == "r0"] == _expected("r0")
    mine = [r for r in stored if r[0] == "nightly-1"]
    assert len(mine) == len(checks) == len({r[1] for r in mine})  # each check of the run once
    assert {(r[1], r[2]) for r in mine} >= {(r.check_id, r.metric_value) for r in _records("nightly-1")}
    assert registry.read_registry(registry_location, "orders", storage_options=options)["last_run_id"] == "nightly-1"
