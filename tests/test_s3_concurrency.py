"""Concurrent commits on S3 lose nothing: six ``dq-contracts run`` processes, six drivers, one new
results table on the tests' S3 server (SeaweedFS, which enforces conditional writes — see
tests/test_s3_server.py, so a lost commit would show here).

Every run reads its own input from S3 (``s3://`` → Spark's ``s3a`` filesystem, the jars resolved
under the lock) and commits its results with delta-rs (``If-None-Match: *`` on each
``_delta_log/<version>.json``; the loser of a version retries on the new state). The table does not
exist when they start: exactly one commit creates it. Expected values are computed here from the
generated rows (plain Python) and read back with delta-rs, never with the code under test.

The race is made to happen and then proven, not hoped for: the runs reach S3 through the fault proxy
(``tests/s3_fault_proxy.py``), which holds every ``PUT`` of the results table's version 0 until two
drivers are at it (a barrier outside the code under test), then lets them go together. The proxy's
record is the proof: exactly one ``PUT`` of version 0 was accepted and at least one was refused (412)
— that writer lost the creation and retried; a run without that contention fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from s3_fault_proxy import FaultProxy
from s3_fixtures import S3Place

ROOT = Path(__file__).resolve().parent.parent
RUNS = 6
DEADLINE_SECONDS = 1500  # six JVMs on a loaded two-core machine: a deadline, never a speed assertion
CHECKS = ("_table_/volume", "id/ids_present", "id/schema")


def _contract(path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "name": "orders",
                "version": "1.0.0",
                "columns": [
                    {
                        "name": "id",
                        "type": "long",
                        "checks": [{"name": "ids present", "type": "missing", "max": 0, "severity": "P2"}],
                    }
                ],
                "checks": [{"name": "volume", "type": "num_rows", "min": 1, "severity": "P2"}],
            }
        ),
        encoding="utf-8",
    )
    return path


def _rows(n: int) -> list[dict]:
    """Run ``n``'s input: ``3 + n`` rows, ``n % 2`` of them without an id."""
    return [{"id": None if i < n % 2 else i, "amount": float(i)} for i in range(3 + n)]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(DEADLINE_SECONDS + 300)
def test_six_runs_append_to_one_new_s3_results_table_and_lose_nothing(s3: S3Place, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        _six_runs(s3, tmp_path, stack)


def _six_runs(s3: S3Place, tmp_path: Path, stack: contextlib.ExitStack) -> None:
    from deltalake import DeltaTable

    contract = _contract(tmp_path / "orders.yaml")
    for n in range(RUNS):
        body = "".join(json.dumps(row) + "\n" for row in _rows(n)).encode()
        assert s3.server.put_object(f"{s3.prefix}/input/run-{n}.json", body) == 200
    results = s3.url("dq/dq_results")
    proxy = stack.enter_context(FaultProxy(str(s3.settings.endpoint_url)))
    version_0 = f"PUT /{s3.server.bucket}/{s3.prefix}/dq/dq_results/_delta_log/00000000000000000000.json"
    proxy.hold(version_0, count=2, timeout=25)  # under object_store's 30 s request timeout
    env = {**s3.env(), "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env["AWS_ENDPOINT_URL"] = proxy.endpoint_url
    env["DQ_CONTRACTS_WAREHOUSE"] = str(tmp_path / "warehouse")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    with contextlib.ExitStack() as files:
        logs = [files.enter_context(open(tmp_path / f"run-{n}.log", "w")) for n in range(RUNS)]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "airflow_dq_contracts.cli.main",
                    "run",
                    str(contract),
                    # s3a:// for half of them: both names reach the same table
                    "--input",
                    s3.url(f"input/run-{n}.json", scheme="s3a" if n % 2 else "s3"),
                    "--input-format",
                    "json",
                    "--run-id",
                    f"run-{n}",
                    "--results-table",
                    results,
                    "--master",
                    "local[1]",
                    "--json-out",
                    str(tmp_path / f"{n}.json"),
                ],
                cwd=tmp_path,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for n, log in enumerate(logs)
        ]
        deadline = time.monotonic() + DEADLINE_SECONDS
        for proc in procs:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    outputs = [(tmp_path / f"run-{n}.log").read_text() for n in range(RUNS)]
    for proc, output in zip(procs, outputs):
        assert proc.returncode == 0, output[-3000:]
        # the credentials travelled in the environment only: never echoed by the CLI
        assert s3.settings.secret_access_key not in output

    # the contention happened: one creation accepted, at least one writer refused version 0 (then retried)
    creations = [r.status for r in proxy.requests(version_0)]
    assert creations.count(200) == 1 and creations.count(412) >= 1, creations
    table = DeltaTable(results, storage_options=s3.settings.delta_options())
    rows = table.to_pyarrow_table().to_pylist()
    # each run's rows exactly once
    assert sorted((r["run_id"], r["check_id"]) for r in rows) == sorted(
        (f"run-{n}", check) for n in range(RUNS) for check in CHECKS
    )
    metrics = {(r["run_id"], r["check_id"]): (r["metric_value"], r["passed"]) for r in rows}
    for n in range(RUNS):
        expected_missing = sum(1 for row in _rows(n) if row["id"] is None)
        assert metrics[(f"run-{n}", "_table_/volume")] == (float(len(_rows(n))), True)
        assert metrics[(f"run-{n}", "id/ids_present")] == (float(expected_missing), expected_missing == 0)
    # one commit per run, the first of them created the table: versions 0..5, nothing overwritten
    history = table.history()
    assert sorted(int(c["version"]) for c in history) == list(range(RUNS))
    tagged = sorted(json.loads(c["userMetadata"])["run_id"] for c in history)
    assert tagged == sorted(f"run-{n}" for n in range(RUNS))
    assert table.metadata().partition_columns == ["contract_name"]
    # the registry beside it (also delta-rs's alone on S3) knows the contract
    from airflow_dq_contracts.store.results import registry

    registry_rows = (
        DeltaTable(registry.registry_table_for(results), storage_options=s3.settings.delta_options())
        .to_pyarrow_table()
        .to_pylist()
    )
    assert {r["contract_name"] for r in registry_rows} == {"orders"}
