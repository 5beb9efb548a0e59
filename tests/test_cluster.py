"""Real Spark standalone cluster: client and cluster deploy mode, Delta on a shared folder, kills.

What these tests establish (Spark 4.1.1, pip wheel, one master + one worker on 127.0.0.1):

* client mode: ``spark-submit --master spark://…`` of a Python app runs its tasks on the worker's
  executors and writes / reads a Delta table (Delta from ``--packages``) on a folder both see;
* ``spark-submit --deploy-mode cluster app.py`` is still refused for Python on a standalone master
  (the rule lives in ``SparkSubmit.prepareSubmitEnvironment``);
* cluster mode is nevertheless real for a Python driver through Spark's own machinery: submit
  a (code-free) jar with ``--class org.apache.spark.deploy.PythonRunner`` and the Python file as
  its first argument; the master places the driver on the worker (``DriverWrapper`` →
  ``PythonRunner`` → python), ``--packages`` are resolved there, and the REST server reports and
  kills it like any driver;
* a master that crashes mid-job and comes back with its recovery state leaves the running job
  alone: it finishes;
* killing a run — SIGKILL of spark-submit in client mode (what ``SparkSubmitHook.on_kill`` does),
  or the master's kill endpoint in cluster mode (what the hook does in cluster mode) — leaves no
  driver, executor or Python worker process behind.

Expected values come from plain Python (``range`` arithmetic) and the Delta table is read back
with delta-rs, never through the code that wrote it. Run them alone with ``pytest -m cluster``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401  (spark_cluster is a fixture)
    MASTER_CLASS,
    WORKER_CLASS,
    ClusterProcess,
    StandaloneCluster,
    listening_addresses,
    python_cluster_mode_args,
    spark_cluster,
)

from airflow_dq_contracts.runtime import jars, spark_config

pytestmark = pytest.mark.cluster

APPS = Path(__file__).resolve().parent / "apps"
ROUNDTRIP_APP = APPS / "delta_roundtrip.py"
SLOW_APP = APPS / "slow_job.py"
DRIVER_ID = re.compile(r"driver-\d{14}-\d{4}")
SUBMIT_TIMEOUT_S = 240


def spark_submit_cmd(
    cluster: StandaloneCluster,
    *,
    deploy_mode: str = "client",
    delta: bool = False,
    delta_jars: list[Path] | None = None,
) -> list[str]:
    """``spark-submit`` against the test master, small resources, optional Delta.

    Delta's jars are local files either way (``delta_jars`` given, else resolved once per machine by
    ``spark_config.delta_dependency_conf``), passed as ``spark.jars`` (local paths the worker can
    read), which Spark ships to the executors.
    """
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.memory": "768m",
        "spark.driver.memory": "768m",
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.session.timeZone": "UTC",
    }
    if delta:
        conf.update(spark_config.DELTA_SQL_CONF)
        if delta_jars:
            conf["spark.jars"] = ",".join(str(jar) for jar in delta_jars)
        else:
            conf.update(jars.delta_dependency_conf())  # local jars, resolved once per machine
    cmd = ["spark-submit", "--master", cluster.master_url, "--deploy-mode", deploy_mode]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd


def expected_rows(run_id: str, rows: int) -> list[dict[str, object]]:
    """The rows delta_roundtrip.py must write, computed here in plain Python."""
    return [{"run_id": run_id, "id": i, "value": i * i % 97} for i in range(rows)]


def read_delta(table: Path) -> list[dict[str, object]]:
    """Read a Delta table with delta-rs (no JVM): independent of the Spark that wrote it."""
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(table)).to_pyarrow_table().to_pylist(), key=lambda r: (r["run_id"], r["id"]))


def wait_for_files(pattern_dir: Path, prefix: str, count: int, timeout: float, what: str) -> list[Path]:
    """Block until ``count`` files named ``prefix*`` exist in ``pattern_dir``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(pattern_dir.glob(f"{prefix}*"))
        if len(found) >= count:
            return found
        time.sleep(0.5)
    raise TimeoutError(f"{what}: {count} marker file(s) {prefix}* not written within {timeout:.0f}s")


def kinds(processes: list[ClusterProcess]) -> set[str]:
    return {p.kind for p in processes}


def submit_cluster_mode(
    cluster: StandaloneCluster, app: Path, app_args: list[str], *, delta_jars: list[Path] | None = None
) -> str:
    """Submit a Python app in cluster deploy mode; return the driver id the master assigned."""
    cmd = spark_submit_cmd(cluster, deploy_mode="cluster", delta=bool(delta_jars), delta_jars=delta_jars)
    cmd += python_cluster_mode_args(cluster.carrier_jar, app, app_args)
    done = subprocess.run(cmd, env=cluster.submit_env(), capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    output = done.stdout + done.stderr
    match = DRIVER_ID.search(output)
    assert done.returncode == 0 and match, f"cluster-mode submission failed (rc={done.returncode}):\n{output[-4000:]}"
    return match.group(0)


@pytest.fixture(scope="session")
def delta_jars() -> list[Path]:
    """Delta's jars as local files: ``$DQ_CONTRACTS_DELTA_JARS`` offline, else resolved once per machine
    under the lock every submission takes (``airflow_dq_contracts.runtime.jars``)."""

    return [Path(jar) for jar in jars.delta_jars()]


@pytest.fixture()
def idle_cluster(spark_cluster: StandaloneCluster) -> Iterator[StandaloneCluster]:  # noqa: F811
    """The shared cluster, with no app running before the test and none left after it."""
    spark_cluster.wait_until_idle(timeout=90)
    yield spark_cluster
    spark_cluster.wait_until_idle(timeout=90)


def test_worker_registered_on_loopback_with_its_limits(spark_cluster: StandaloneCluster) -> None:  # noqa: F811
    state = spark_cluster.state()
    assert state["status"] == "ALIVE"
    assert state["url"] == spark_cluster.master_url
    [worker] = state["workers"]
    assert (worker["host"], worker["state"], worker["cores"], worker["memory"]) == ("127.0.0.1", "ALIVE", 2, 2048)
    daemons = {p.kind for p in spark_cluster.processes() if p.is_jvm}
    assert {"master", "worker"} <= daemons
    # Bound to the loopback only: RPC, web UIs and the REST server alike.
    master_pid, worker_pid = spark_cluster.daemon_pid(MASTER_CLASS), spark_cluster.daemon_pid(WORKER_CLASS)
    assert master_pid and worker_pid
    master_sockets, worker_sockets = listening_addresses(master_pid), listening_addresses(worker_pid)
    assert {spark_cluster.master_port, spark_cluster.master_ui_port, spark_cluster.rest_port} <= {
        port for _, port in master_sockets
    }
    assert {spark_cluster.worker_port, spark_cluster.worker_ui_port} <= {port for _, port in worker_sockets}
    assert {addr for addr, _ in master_sockets | worker_sockets} == {"127.0.0.1"}


def test_client_mode_writes_and_reads_delta_on_shared_folder(idle_cluster: StandaloneCluster, tmp_path: Path) -> None:
    cluster = idle_cluster
    table = cluster.shared_dir / f"client_{tmp_path.name}"
    report = cluster.shared_dir / f"client_{tmp_path.name}.json"
    rows = 1000
    cmd = spark_submit_cmd(cluster, delta=True) + [
        str(ROUNDTRIP_APP),
        "--table",
        str(table),
        "--rows",
        str(rows),
        "--run-id",
        "r-client",
        "--report",
        str(report),
    ]
    done = subprocess.run(cmd, env=cluster.submit_env(), capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]

    facts = json.loads(report.read_text())
    expected = expected_rows("r-client", rows)
    assert facts["master"] == cluster.master_url
    assert facts["deploy_mode"] == "client"
    assert "org.apache.spark.deploy.SparkSubmit" in facts["driver_parent"]  # driver = the submitting JVM
    assert (facts["rows"], facts["value_sum"]) == (rows, sum(r["value"] for r in expected))
    # The tasks ran in Python workers inside the worker's executor folder, not in the driver.
    assert facts["task_cwds"] and all(
        Path(cwd).resolve().is_relative_to(cluster.work_dir) and Path(cwd).parent.name.startswith("app-")
        for cwd in facts["task_cwds"]
    ), facts["task_cwds"]
    assert read_delta(table) == expected


def test_spark_submit_refuses_python_apps_in_standalone_cluster_mode(spark_cluster: StandaloneCluster) -> None:  # noqa: F811
    """The historical rule still holds in Spark 4.1.1: the front door is closed for ``.py`` apps."""
    cmd = spark_submit_cmd(spark_cluster, deploy_mode="cluster") + [str(ROUNDTRIP_APP)]
    done = subprocess.run(cmd, env=spark_cluster.submit_env(), capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    assert done.returncode != 0
    assert (
        "Cluster deploy mode is currently not supported for python applications on standalone clusters." in done.stderr
    ), done.stderr[-2000:]
    assert not spark_cluster.state()["activedrivers"]  # nothing reached the master


def test_cluster_mode_runs_python_driver_on_the_worker_with_delta(
    idle_cluster: StandaloneCluster, delta_jars: list[Path], tmp_path: Path
) -> None:
    cluster = idle_cluster
    table = cluster.shared_dir / f"cluster_{tmp_path.name}"
    report = cluster.shared_dir / f"cluster_{tmp_path.name}.json"
    rows = 777
    driver_id = submit_cluster_mode(
        cluster,
        ROUNDTRIP_APP,
        ["--table", str(table), "--rows", str(rows), "--run-id", "r-cluster", "--report", str(report)],
        delta_jars=delta_jars,
    )
    final = cluster.wait_for_driver(driver_id, timeout=SUBMIT_TIMEOUT_S)
    assert final == "FINISHED", f"driver {driver_id} ended {final}{cluster.driver_logs(driver_id)}"

    facts = json.loads(report.read_text())
    expected = expected_rows("r-cluster", rows)
    assert facts["deploy_mode"] == "cluster"
    assert facts["master"] == cluster.master_url
    # The Python driver is a child of the worker-launched DriverWrapper, in the driver's folder.
    assert "org.apache.spark.deploy.worker.DriverWrapper" in facts["driver_parent"]
    assert Path(facts["driver_cwd"]).resolve() == cluster.driver_dir(driver_id)
    assert (facts["rows"], facts["value_sum"]) == (rows, sum(r["value"] for r in expected))
    assert facts["task_cwds"] and all(
        Path(cwd).resolve().is_relative_to(cluster.work_dir) and Path(cwd).parent.name.startswith("app-")
        for cwd in facts["task_cwds"]
    ), facts["task_cwds"]
    assert read_delta(table) == expected
    completed = {d["id"]: d for d in cluster.state()["completeddrivers"]}
    assert completed[driver_id]["mainclass"] == "org.apache.spark.deploy.PythonRunner"


def test_running_job_survives_a_master_crash_and_restart(idle_cluster: StandaloneCluster, tmp_path: Path) -> None:
    """A standalone master only schedules: when it dies, a running client-mode job keeps its executors,
    and a master restarted with recovery state takes the application back; the job then finishes."""
    cluster = idle_cluster
    prefix = f"started_master_{tmp_path.name}"
    log_path = tmp_path / "spark-submit.log"
    cmd = spark_submit_cmd(cluster) + [str(SLOW_APP), "--marker", str(cluster.shared_dir / prefix), "--seconds", "12"]
    with log_path.open("w") as log:
        submit = subprocess.Popen(cmd, env=cluster.submit_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_files(cluster.shared_dir, prefix, 1, SUBMIT_TIMEOUT_S, "client-mode tasks")
        cluster.kill_master()
        assert cluster.daemon_pid(MASTER_CLASS) is None
        cluster.start_master()
        assert submit.wait(timeout=SUBMIT_TIMEOUT_S) == 0, log_path.read_text()[-4000:]
    finally:
        if submit.poll() is None:
            submit.kill()
        if cluster.daemon_pid(MASTER_CLASS) is None:
            cluster.start_master()  # never leave the shared cluster without its master
    output = log_path.read_text()
    assert "Disconnected from Spark cluster! Waiting for reconnection..." in output
    app_id = re.search(r"app ID (app-\d{14}-\d{4})", output)
    assert app_id, output[-2000:]
    state = cluster.state()
    assert state["status"] == "ALIVE" and state["aliveworkers"] == 1
    assert app_id.group(1) in {app["id"] for app in state["completedapps"]}  # the new master knew it


def test_sigkill_of_client_mode_spark_submit_leaves_no_process(idle_cluster: StandaloneCluster, tmp_path: Path) -> None:
    """What SparkSubmitHook.on_kill does in client mode: SIGKILL the spark-submit process."""
    cluster = idle_cluster
    prefix = f"started_client_{tmp_path.name}"
    cmd = spark_submit_cmd(cluster) + [str(SLOW_APP), "--marker", str(cluster.shared_dir / prefix)]
    submit = subprocess.Popen(cmd, env=cluster.submit_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_files(cluster.shared_dir, prefix, 1, SUBMIT_TIMEOUT_S, "client-mode tasks")
        running = cluster.app_processes()
        assert {"spark-submit", "executor", "python-worker"} <= kinds(running), running
        submit.kill()
        submit.wait(timeout=30)
    finally:
        if submit.poll() is None:
            submit.kill()
    # Poll with a generous deadline: on a loaded machine the master notices the lost driver late.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (cluster.app_processes() or cluster.state()["activeapps"]):
        time.sleep(0.5)
    assert cluster.app_processes() == []  # no driver JVM, Python driver, executor or Python worker
    assert cluster.state()["activeapps"] == []


def test_master_kill_of_cluster_mode_driver_leaves_no_process(idle_cluster: StandaloneCluster, tmp_path: Path) -> None:
    """What SparkSubmitHook.on_kill does in standalone cluster mode: POST /v1/submissions/kill/<id>."""
    cluster = idle_cluster
    prefix = f"started_cluster_{tmp_path.name}"
    driver_id = submit_cluster_mode(cluster, SLOW_APP, ["--marker", str(cluster.shared_dir / prefix)])
    wait_for_files(cluster.shared_dir, prefix, 1, SUBMIT_TIMEOUT_S, "cluster-mode tasks")
    running = cluster.app_processes()
    assert {"driver-wrapper", "executor", "python-worker"} <= kinds(running), running

    answer = cluster.kill_driver(driver_id)
    assert answer.get("success") is True, answer
    assert cluster.wait_for_driver(driver_id, timeout=60) == "KILLED"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and cluster.app_processes():
        time.sleep(0.5)
    assert cluster.app_processes() == []
    assert cluster.state()["activeapps"] == []
