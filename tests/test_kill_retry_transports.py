"""A worker lost for real (SIGKILL) mid-job on the other transports: Spark Connect, standalone cluster mode.

The companion of ``tests/test_kill_retry.py`` (spark-submit in client mode), with its attempts and
oracle (:class:`test_kill_retry.Run`): each attempt of the check runs in a process of its own
(``tests/apps/check_attempt.py``, the hook the operator builds for connection ``spark_default``) that
the test SIGKILLs while the job waits at a point (the test-only pause hook of ``engine/runner.py``).

* Spark Connect: attempt 1's worker is SIGKILLed while its Connect client (the job process) waits
  before its first write — the client lives on, an orphan. Attempt 2 runs on another host (out of
  reach) and waits at the same point. Attempt 3 on attempt 1's host stops attempt 1's orphan (one
  warning line naming it), runs to the end; attempt 2 then resumes and its late write is refused —
  it fails naming attempt 3. Results, quarantine and valid rows exactly once, attempt 3's; the
  server runs no job of the run any more.
* Standalone cluster mode: attempt 1's worker — the process that submitted the driver and follows
  it through the master — is SIGKILLed while the driver, on the cluster's worker, waits before its
  first write. Attempt 2 has the master kill that driver first (one warning line naming it), then
  runs: rows exactly once, attempt 2's; attempt 1's driver ended KILLED, its Python process, released,
  ends without a write, and no application process is left.

Every table is read back with delta-rs and compared with an oracle computed from the input rows.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import json
import signal
import time
from pathlib import Path

import pytest
from cluster_fixtures import StandaloneCluster, spark_cluster  # noqa: F401  (spark_cluster: a fixture)
from connect_fixtures import ConnectServer, connect_server  # noqa: F401  (connect_server: a fixture)
from test_kill_retry import ROWS, Run, _alive, _people, _write_input

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# The job's Spark settings on the test cluster (1 worker, 2 cores, 2g), as tests/test_cluster_operator.py
# has them: a driver and an executor fit side by side.
CLUSTER_CONF = {
    "spark.driver.memory": "768m",
    "spark.executor.memory": "768m",
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.ui.enabled": "false",
}


def _killed(worker) -> None:
    """SIGKILL the worker: no ``on_kill``, no ``finally`` — as when a worker is lost."""
    worker.kill()
    worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL


def _lines(out: str, text: str) -> list[str]:
    return [line for line in out.splitlines() if text in line]


def test_spark_connect_a_killed_workers_client_is_stopped_and_an_unreachable_ones_late_write_is_fenced(
    tmp_path: Path,
    connect_server: ConnectServer,  # noqa: F811 - an imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(connect_server.airflow_connection()))
    run = Run(tmp_path, "dq-connect-kill-1")
    _write_input(run.input, _people())

    first = run.start(1, pause="write", host="host-a", tag="-1")
    orphan = run.wait_paused("write", first, tag="-1")  # the Connect client: the job process
    _killed(first)
    assert _alive(orphan)  # it lives on, holding before its first write
    second = run.start(2, pause="write", host="host-b", tag="-2")  # another host: out of attempt 3's reach
    run.wait_paused("write", second, tag="-2")

    code, out, payload = run.finish(run.start(3, host="host-a"))
    assert code == 0, out[-4000:]
    [stopping] = _lines(out, "Stopping the orphan of an earlier attempt")
    assert f"run {run.run_id}: the Spark Connect job pid {orphan}" in stopping
    assert not _alive(orphan)
    assert payload["decision"] == "quarantine" and payload["row_count"] == ROWS
    run.assert_exactly_once(payload, attempt=3)

    run.pause_file("write", "-2").unlink()  # attempt 2 resumes: its first write comes after attempt 3's
    code, out, error = run.finish(second)
    assert code == 1, out[-4000:]
    assert error["kind"] == "run_failed"
    assert f"attempt 2 of run {run.run_id} is fenced off: attempt 3 of the same run has written" in error["message"]
    run.assert_exactly_once(payload, attempt=3)  # nothing of attempts 1 and 2 landed
    deadline = time.monotonic() + 60
    while connect_server.running_jobs():  # every job of the run is over on the server
        assert time.monotonic() < deadline, connect_server.running_jobs()
        time.sleep(0.5)


@pytest.mark.cluster
def test_cluster_mode_a_killed_submitter_leaves_a_driver_the_retry_has_the_master_kill(
    tmp_path: Path,
    spark_cluster: StandaloneCluster,  # noqa: F811 - an imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = spark_cluster
    cluster.wait_until_idle(timeout=90)
    submit_env = cluster.submit_env()
    # spark-submit set up for the test cluster (its spark-defaults, the loopback, the marker that finds the
    # drivers' processes); Delta resolved by the hook into the job folder, as a cluster needs it.
    for key in ("SPARK_CONF_DIR", "SPARK_LOCAL_IP", "SPARK_SUBMIT_OPTS", "DQ_TEST_SPARK_CLUSTER"):
        monkeypatch.setenv(key, submit_env[key])
    monkeypatch.delenv("DQ_CONTRACTS_DELTA_JARS", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(cluster.airflow_connection("cluster")))
    run = Run(tmp_path, "dq-cluster-kill-1")
    _write_input(run.input, _people())

    first = run.start(1, pause="write", conf=CLUSTER_CONF)
    try:
        driver_pid = run.wait_paused("write", first, timeout=900)  # the Python driver, on the cluster's worker
    except pytest.fail.Exception:
        first.kill()
        drivers = cluster.state()["activedrivers"] + cluster.state()["completeddrivers"]
        logs = "\n".join(f"{d['id']} {d['state']}:\n{cluster.driver_logs(d['id'])}" for d in drivers)
        pytest.fail(f"attempt 1 did not pause:\n{first.communicate()[0][-3000:]}\n{logs}")
    [record] = (tmp_path / "host-a" / "drivers").glob("*.json")
    orphan = json.loads(record.read_text(encoding="utf-8"))["driver_id"]
    _killed(first)
    assert cluster.driver_state(orphan) == "RUNNING" and _alive(driver_pid)  # the driver lives on

    code, out, payload = run.finish(run.start(2, conf=CLUSTER_CONF), timeout=600)
    assert code == 0, out[-4000:]
    [stopping] = _lines(out, "of an earlier attempt of run")
    assert f"Driver {orphan} of an earlier attempt of run {run.run_id} is still RUNNING: stopping it first" in stopping
    assert cluster.driver_state(orphan) == "KILLED"
    assert payload["decision"] == "quarantine" and payload["row_count"] == ROWS
    run.assert_exactly_once(payload, attempt=2)
    # The killed driver's Python process (PythonRunner's child) still sleeps in the pause hook: released, it
    # finds its JVM gone and ends without a write — the tables hold attempt 2's rows once.
    run.pause_file("write").unlink()
    deadline = time.monotonic() + 120
    while _alive(driver_pid):
        assert time.monotonic() < deadline, f"the killed driver's Python process {driver_pid} lives on"
        time.sleep(0.5)
    run.assert_exactly_once(payload, attempt=2)
    assert not list((tmp_path / "host-a" / "drivers").glob("*.json"))  # nothing left to reclaim
    deadline = time.monotonic() + 60
    while cluster.app_processes():  # no driver, executor or Python worker of the run outlives it
        assert time.monotonic() < deadline, [(p.kind, p.pid) for p in cluster.app_processes()]
        time.sleep(0.5)
