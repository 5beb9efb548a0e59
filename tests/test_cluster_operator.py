"""ContractCheckOperator on a real Spark standalone cluster: client and cluster deploy mode, kills.

One master + one worker from the pip wheel (``cluster_fixtures.spark_cluster``), Airflow's
``dag.test()`` on SQLite, Delta tables on the cluster's shared folder. What is established:

* the example DAG ``dq_orders_pipeline`` runs unchanged against ``spark://…`` in **client** mode
  (the driver is this process's spark-submit, executors on the worker) and in **cluster** mode
  (the user only sets ``deploy-mode: cluster``; the hook takes Spark's PythonRunner route with
  its own carrier jar, Delta resolved into jars as ``spark.jars``, the bundle and a marker file in
  the shared job folder); the decision, the XCom and the results rows agree, and the rows are
  read back with delta-rs, independently of the code that wrote them;
* a cluster-mode job that fails reports its own error to the task (through the marker file: the
  driver's stdout stays on the worker);
* ``on_kill`` — reached the way Airflow reaches it, by a SIGTERM to the task runner — stops the
  cluster-mode driver through the master, and nothing of the application survives;
* a master killed while a cluster-mode driver starts fails the attempt with a readable error
  (the master is unreachable, so nobody can say how the driver is doing); with the master back,
  the retry stops the earlier attempt's driver, runs again and leaves ONE copy of the results;
* a master killed while the executors work, and never restarted, does not stop the job: it ends,
  and its marker file settles the task (a success, read back from the results table).

Expected values come from the orders generator's rows, counted here in plain Python. Run them
alone with ``pytest -m cluster``. Each spark-submit costs ~10-50 s here; there are seven.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import DAGS_FOLDER, airflow_db, install_example_dags, run_dag, xcom_value  # noqa: F401  (airflow_db: fixture)

import datetime as dt
import json
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import MASTER_CLASS, StandaloneCluster, spark_cluster  # noqa: F401  (spark_cluster: fixture)
from pipeline_expectations import (
    assert_xcom_equals_results_table,
    decision_by_hand,
    delta_rows,
    expected_day,
    interval,
    orders_data,
)

from airflow_dq_contracts.results import make_run_id

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "dags_examples"
UTC = dt.timezone.utc
# The job's Spark settings on the test cluster (1 worker, 2 cores, 2g): small memory so a driver and
# an executor fit side by side; few partitions, or Delta's log replay and the shuffles cost more
# scheduling than work. Executors then take the worker's remaining core.
CLUSTER_CONF = {
    "spark.driver.memory": "768m",
    "spark.executor.memory": "768m",
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.ui.enabled": "false",
}
WAIT_S = 240


# --------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def shared_env(spark_cluster: StandaloneCluster, airflow_db):  # noqa: F811 - imported fixtures
    """Warehouse and job folder on the cluster's shared folder; spark-submit set up for the test cluster.

    ``DQ_CONTRACTS_DELTA_JARS`` is removed: in cluster mode the hook must resolve Delta itself.
    """
    cluster = spark_cluster
    warehouse = cluster.shared_dir / f"warehouse-{uuid.uuid4().hex[:8]}"
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(warehouse))
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(cluster.shared_dir / "job-cache"))
    patch.delenv("DQ_CONTRACTS_DELTA_JARS", raising=False)
    submit_env = cluster.submit_env()
    # What spark-submit needs from the test cluster: its spark-defaults (fast JVM options), the
    # loopback, and the marker that lets cluster.processes() find the spark-submit JVM too.
    for key in ("SPARK_CONF_DIR", "SPARK_LOCAL_IP", "SPARK_SUBMIT_OPTS", "DQ_TEST_SPARK_CLUSTER"):
        patch.setenv(key, submit_env[key])
    install_example_dags(patch)  # as the dag processor sees them: DAG files import orders_data
    yield warehouse
    patch.undo()


@pytest.fixture()
def cluster(spark_cluster: StandaloneCluster, shared_env: Path):  # noqa: F811
    """The shared cluster, idle before and after the test, its master always running afterwards."""
    spark_cluster.wait_until_idle(timeout=90)
    yield spark_cluster
    if spark_cluster.daemon_pid(MASTER_CLASS) is None:
        spark_cluster.start_master()
    spark_cluster.wait_until_idle(timeout=90)


def _connect(monkeypatch: pytest.MonkeyPatch, cluster: StandaloneCluster, deploy_mode: str) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(cluster.airflow_connection(deploy_mode)))


def _load(dag_id: str):
    from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / f"{dag_id}.py"), include_examples=False)
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


@pytest.fixture
def calls(monkeypatch):
    """What each ContractCheckOperator.execute and ContractSubmitHook.submit_job returned or raised."""
    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.operators import ContractCheckOperator

    record: dict[str, list[dict[str, Any]]] = {"execute": [], "submit": []}

    def recorder(kind: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(self, *args: Any, **kwargs: Any) -> Any:
            call: dict[str, Any] = {"self": self}
            context = kwargs.get("context", args[0] if args else None)
            if context is not None:
                call["try_number"] = context["ti"].try_number
            record[kind].append(call)
            began = time.monotonic()
            try:
                call["result"] = original(self, *args, **kwargs)
                return call["result"]
            except BaseException as exc:
                call["error"] = exc
                raise
            finally:
                call["seconds"] = round(time.monotonic() - began, 1)

        return wrapped

    monkeypatch.setattr(ContractCheckOperator, "execute", recorder("execute", ContractCheckOperator.execute))
    monkeypatch.setattr(ContractSubmitHook, "submit_job", recorder("submit", ContractSubmitHook.submit_job))
    return record


# --------------------------------------------------------------------------------------- expectations


def _new_drivers(cluster: StandaloneCluster, before: set[str]) -> list[dict[str, Any]]:
    state = cluster.state()
    return [d for d in state["completeddrivers"] + state["activedrivers"] if d["id"] not in before]


def _driver_ids(cluster: StandaloneCluster) -> set[str]:
    state = cluster.state()
    return {d["id"] for d in state["completeddrivers"] + state["activedrivers"]}


def _wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise TimeoutError(f"{what}: not within {timeout:.0f}s")


def _no_app_process_left(cluster: StandaloneCluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and cluster.app_processes():
        time.sleep(0.5)
    assert cluster.app_processes() == [], [(p.kind, p.pid) for p in cluster.app_processes()]


class Watcher(threading.Thread):
    """Polls the master until ``condition(state)`` holds, then runs ``action`` once (in this thread)."""

    def __init__(
        self, cluster: StandaloneCluster, condition: Callable[[dict[str, Any]], bool], action: Callable[[], None]
    ) -> None:
        super().__init__(daemon=True)
        self.cluster, self.condition, self.action = cluster, condition, action
        self.fired_at: float | None = None
        self.error: BaseException | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                try:
                    state = self.cluster.state()
                except OSError:
                    state = None
                if state is not None and self.condition(state):
                    self.fired_at = time.monotonic()
                    self.action()
                    return
                time.sleep(0.2)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


# --------------------------------------------------------------------------------------- command line


def test_cluster_mode_switches_to_the_python_runner_route(monkeypatch, tmp_path):
    """What the hook hands spark-submit for ``deploy-mode: cluster`` on a standalone master (no Spark run)."""
    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.jobs.bundle import build_job_bundle

    jars = tmp_path / "jars"
    jars.mkdir()
    for name in ("delta-spark.jar", "delta-storage.jar"):
        (jars / name).write_bytes(b"")
    monkeypatch.setenv("DQ_CONTRACTS_DELTA_JARS", str(jars))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_SA",
        json.dumps(
            {
                "conn_type": "spark",
                "host": "spark://spark-master",
                "port": 7077,
                "extra": {"deploy-mode": "cluster", "rest-port": "6066"},
            }
        ),
    )
    hook = ContractSubmitHook(
        conn_id="spark_sa",
        application_args=["--contract-b64=eA==", "--run-id=dq-0"],
        jars=["/opt/extra.jar"],
        bundle=build_job_bundle(tmp_path / "job"),
        run_id="dq-1",
    )
    assert hook.is_standalone_cluster and hook.rest_endpoint == "http://spark-master:6066"
    assert hook.run_key == "dq-1"  # passed in, never read back from the job's arguments
    assert hook.standalone is not None and hook.standalone.run_key == "dq-1"
    carrier = hook.standalone.prepare()
    hook.adapter.set(
        application_args=[str(hook.bundle.launcher_path), str(hook.bundle.zip_path), "--contract-b64=eA=="]
    )
    cmd = hook.adapter.build_command(str(carrier))
    options = {cmd[i + 1].split("=", 1)[0]: cmd[i + 1].split("=", 1)[1] for i, a in enumerate(cmd) if a == "--conf"}
    for flag in ("--packages", "--jars", "--py-files"):  # each would reach the driver only, or be refused
        assert flag not in cmd
    assert options["spark.jars"] == f"/opt/extra.jar,{jars / 'delta-spark.jar'},{jars / 'delta-storage.jar'}"
    assert options["spark.submit.pyFiles"] == str(hook.bundle.zip_path)
    assert "spark.pyspark.driver.python" not in options  # the worker's Python, not this machine's path
    assert cmd[cmd.index("--class") + 1] == "org.apache.spark.deploy.PythonRunner"
    assert cmd[cmd.index("--deploy-mode") + 1] == "cluster"
    assert cmd[-4:] == [str(carrier), str(hook.bundle.launcher_path), str(hook.bundle.zip_path), "--contract-b64=eA=="]
    assert carrier.parent == hook.bundle.zip_path.parent  # where the worker reads the bundle
    import zipfile

    assert zipfile.ZipFile(carrier).namelist() == ["META-INF/MANIFEST.MF"]


def test_the_run_key_is_passed_in_and_run_key_still_names_it(tmp_path):
    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.jobs.bundle import build_job_bundle

    bundle = build_job_bundle(tmp_path / "job")
    assert ContractSubmitHook(application_args=["--run-id=dq-9"], bundle=bundle).run_key is None
    assert ContractSubmitHook(application_args=[], bundle=bundle, run_key="dq-2").run_key == "dq-2"


def test_a_missing_default_connection_runs_on_the_embedded_default(monkeypatch, tmp_path):
    """No ``spark_default``: local[*] (the embedded default), said in the log — not the provider's YARN."""
    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.jobs.bundle import build_job_bundle

    bundle = build_job_bundle(tmp_path / "job")
    assert ContractSubmitHook(application_args=[], bundle=bundle).master == "local[2]"  # defined: as defined
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    warnings: list[str] = []
    everything: list[str] = []  # every line the hook logs, at any level

    class Log:  # what the hook logs at warning level (Airflow's task logging bypasses caplog)
        def warning(self, message: str, *args: Any) -> None:
            warnings.append(message % args)
            everything.append(message % args)

        def __getattr__(self, name: str) -> Any:
            return lambda message="", *args, **kwargs: everything.append(str(message) % args if args else str(message))

    monkeypatch.setattr(ContractSubmitHook, "log", property(lambda self: Log()))
    hook = ContractSubmitHook(application_args=[], bundle=bundle)
    assert hook.master == "local[*]" and hook.deploy_mode == "client"
    command = hook.adapter.build_command("job.py")
    assert command[command.index("--master") + 1] == "local[*]"
    assert any("Connection 'spark_default' is not defined: running on the embedded default" in w for w in warnings)
    # Nothing said before it contradicts it (the provider's "defaulting to yarn" for a missing connection).
    assert [line for line in everything if "yarn" in line and "AIRFLOW_CONN_SPARK_DEFAULT" not in line] == []
    # Another connection the DAG names but nobody defined is not guessed at: the provider's handling stands.
    assert ContractSubmitHook(conn_id="spark_elsewhere", application_args=[], bundle=bundle).master == "yarn"


def test_a_provider_that_renamed_a_private_attribute_is_named_at_once(monkeypatch, tmp_path):
    """The adapter checks SparkSubmitHook's private state when the hook is built, not mid-run."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.jobs.bundle import build_job_bundle
    from airflow_dq_contracts.version_compat import AirflowException

    original = SparkSubmitHook.__init__

    def renamed(self, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._spark_submit_process = self.__dict__.pop("_submit_sp")

    monkeypatch.setattr(SparkSubmitHook, "__init__", renamed)
    with pytest.raises(
        AirflowException,
        match=r"has no attribute _submit_sp: this airflow-dq-contracts release was "
        r"checked against apache-airflow-providers-apache-spark 5\.3\.0",
    ):
        ContractSubmitHook(application_args=[], bundle=build_job_bundle(tmp_path / "job"))


def test_package_resolution_refuses_what_is_not_a_coordinate(tmp_path):
    from airflow_dq_contracts.hooks import ContractSubmitHook
    from airflow_dq_contracts.hooks.contract_submit import ContractJobError
    from airflow_dq_contracts.jobs.bundle import build_job_bundle

    hook = ContractSubmitHook(application_args=["--contract-b64=eA=="], bundle=build_job_bundle(tmp_path / "job"))
    with pytest.raises(ContractJobError, match=r"group:artifact:version, got \['io.delta:delta-spark'\]"):
        hook.resolve_packages(["io.delta:delta-spark"], tmp_path / "jars")
    assert not (tmp_path / "jars").exists()  # nothing started, nothing written


# --------------------------------------------------------------------------------------- example DAG


@pytest.mark.cluster
@pytest.mark.airflow
def test_example_pipeline_in_client_mode(cluster, shared_env, calls, monkeypatch):
    """Driver in this process's spark-submit, executors on the worker, Delta from --packages."""
    _connect(monkeypatch, cluster, "client")
    pipeline = _load("dq_orders_pipeline")
    monkeypatch.setattr(pipeline.task_dict["check_orders"], "spark_conf", CLUSTER_CONF)
    apps_before = {app["id"] for app in cluster.state()["completedapps"]}
    day = dt.date(2024, 6, 1)

    states, dag_run = run_dag(pipeline, run_conf={"outcome": "pass"}, **interval(day))

    assert states == {
        "produce_raw_orders": "success",
        "wait_for_fresh_orders": "success",
        "load_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "publish": "success",
        "quarantine_then_publish": "skipped",
        "alert": "skipped",
    }, calls["execute"]
    summary = xcom_value(dag_run, "check_orders")
    assert summary["run_id"] == make_run_id("dq_orders_pipeline", dag_run.run_id, "check_orders")
    rows = assert_xcom_equals_results_table(summary, shared_env)
    expected = expected_day("pass", day)
    assert summary["decision"] == decision_by_hand(rows) == "pass"
    assert summary["row_count"] == len(expected) == 40
    gold = delta_rows(shared_env / "gold" / "orders", "order_date", day)
    assert sorted(r["order_id"] for r in gold) == sorted(r["order_id"] for r in expected)
    # It ran on the cluster: one new application, its executors on our worker; no driver on it.
    [submit] = calls["submit"]
    assert submit["self"].master == cluster.master_url and submit["self"].deploy_mode == "client"
    assert submit["result"]["decision"] == "pass"  # the job's own report, from stdout
    new_apps = [app for app in cluster.state()["completedapps"] if app["id"] not in apps_before]
    assert len(new_apps) == 1 and new_apps[0]["state"] == "FINISHED", new_apps
    assert Path(cluster.work_dir / new_apps[0]["id"]).is_dir()  # the executors' folder on the worker
    print(f"client mode: check_orders execute {calls['execute'][0]['seconds']} s")


@pytest.mark.cluster
@pytest.mark.airflow
def test_example_pipeline_in_cluster_mode(cluster, shared_env, calls, monkeypatch):
    """Only the connection changes; the driver runs on the worker through Spark's PythonRunner."""
    _connect(monkeypatch, cluster, "cluster")
    pipeline = _load("dq_orders_pipeline")
    monkeypatch.setattr(pipeline.task_dict["check_orders"], "spark_conf", CLUSTER_CONF)
    drivers_before = _driver_ids(cluster)
    day = dt.date(2024, 6, 2)

    states, dag_run = run_dag(pipeline, run_conf={"outcome": "quarantine"}, **interval(day))

    assert states == {
        "produce_raw_orders": "success",
        "wait_for_fresh_orders": "success",
        "load_orders": "success",
        "check_orders": "success",
        "route_orders": "success",
        "publish": "skipped",
        "quarantine_then_publish": "success",
        "alert": "skipped",
    }, calls["execute"]
    summary = xcom_value(dag_run, "check_orders")
    rows = assert_xcom_equals_results_table(summary, shared_env)
    expected = expected_day("quarantine", day)
    bad = {r["order_id"] for r in expected if "@" not in r["email"]}
    assert len(bad) == 3
    assert summary["decision"] == decision_by_hand(rows) == "quarantine"
    failing = {r["check_id"]: r["failed_rows"] for r in rows if r["status"] != "passed" and r["action"] != "flag"}
    assert failing == {"email/email_format_is_valid": len(bad)}
    quarantined = delta_rows(shared_env / "dq_quarantine" / "orders", "_dq_run_id", summary["run_id"])
    assert sorted(r["order_id"] for r in quarantined) == sorted(bad)
    valid = delta_rows(shared_env / "valid" / "orders", "_dq_run_id", summary["run_id"])
    assert len(valid) == len(expected) - len(bad) == summary["valid"]["rows"]
    gold = delta_rows(shared_env / "gold" / "orders", "order_date", day)
    assert sorted(r["order_id"] for r in gold) == sorted(r["order_id"] for r in expected if r["order_id"] not in bad)

    # The driver ran on the worker, as Spark's PythonRunner, and finished.
    [driver] = _new_drivers(cluster, drivers_before)
    assert (driver["state"], driver["mainclass"]) == ("FINISHED", "org.apache.spark.deploy.PythonRunner")
    assert (cluster.driver_dir(driver["id"]) / "stderr").is_file()
    [submit] = calls["submit"]
    hook = submit["self"]
    assert hook.is_standalone_cluster and hook.adapter.driver_id == driver["id"]
    # The job's own report came back through the marker file on the shared folder (its stdout is remote).
    assert submit["result"]["run_id"] == summary["run_id"] and submit["result"]["decision"] == "quarantine"
    assert not hook.standalone.markers_path.exists()
    # Delta reached driver and executors as jars the hook resolved into the shared job folder.
    job_jars = hook.adapter.conf["spark.jars"].split(",")
    assert any(Path(j).name == "io.delta_delta-spark_4.1_2.13-4.4.0.jar" for j in job_jars)
    assert all(Path(j).is_relative_to(cluster.shared_dir / "job-cache" / "jars") for j in job_jars)
    assert not any((cluster.shared_dir / "job-cache" / "drivers").glob("*.json"))  # nothing left to reclaim
    _no_app_process_left(cluster)
    print(f"cluster mode: check_orders execute {calls['execute'][0]['seconds']} s")


# --------------------------------------------------------------------------------------- failures


def _daily_check(
    monkeypatch: pytest.MonkeyPatch,
    warehouse: Path,
    day: dt.date,
    *,
    retries: int,
    submit_kwargs: dict[str, Any] | None = None,
):
    """dq_orders_daily_partition on the shared silver table, with the day's orders written to it."""
    orders_data.write_orders(
        warehouse / "silver" / "orders", orders_data.generate_orders(orders_data.spec_for("pass", day))
    )
    daily = _load("dq_orders_daily_partition")
    check = daily.task_dict["check_partition"]
    monkeypatch.setattr(check, "spark_conf", CLUSTER_CONF)
    monkeypatch.setattr(check, "retries", retries)
    monkeypatch.setattr(check, "retry_delay", dt.timedelta(0))
    monkeypatch.setattr(check, "spark_submit_kwargs", dict(submit_kwargs or {}))
    return daily, check


def _running_driver(before: set[str]) -> Callable[[dict[str, Any]], bool]:
    return lambda state: any(d["id"] not in before and d["state"] == "RUNNING" for d in state["activedrivers"])


def _executors_working(cluster: StandaloneCluster, before: set[str]) -> Callable[[dict[str, Any]], bool]:
    """Mid-job: a new driver runs, its application registered, and an executor process is up."""
    running = _running_driver(before)
    return lambda state: (
        running(state) and bool(state["activeapps"]) and "executor" in {p.kind for p in cluster.app_processes()}
    )


@pytest.mark.cluster
@pytest.mark.airflow
def test_a_failing_cluster_mode_job_fails_the_task_with_its_own_error(
    cluster, shared_env, calls, monkeypatch, tmp_path
):
    """The driver's stdout is on the worker; the job's error still reaches the task, through the marker file."""
    _connect(monkeypatch, cluster, "cluster")
    day = dt.date(2024, 6, 9)
    daily, check = _daily_check(monkeypatch, shared_env, day, retries=0)
    missing = tmp_path / "no-such-table"
    monkeypatch.setattr(check, "input_path", str(missing))
    drivers_before = _driver_ids(cluster)
    start = dt.datetime.combine(day, dt.time(), tzinfo=UTC)

    states, dag_run = run_dag(daily, logical_date=start, run_after=start)

    assert states == {"check_partition": "failed"}
    message = str(calls["execute"][0]["error"])
    assert message.startswith(
        f"contract job for orders on {missing} failed: DatasetError: cannot read delta "
        f"dataset '{missing}': [PATH_NOT_FOUND] Path does not exist: "
    ), message
    [driver] = _new_drivers(cluster, drivers_before)
    assert driver["state"] == "FAILED"  # the job exits 1; the master only knows that
    assert xcom_value(dag_run, "check_partition") is None
    _no_app_process_left(cluster)


@pytest.mark.cluster
@pytest.mark.airflow
def test_on_kill_stops_the_cluster_mode_driver(cluster, shared_env, calls, monkeypatch):
    """SIGTERM to the task runner → on_kill → the master kills the driver; nothing survives."""
    _connect(monkeypatch, cluster, "cluster")
    day = dt.date(2024, 6, 10)
    daily, _ = _daily_check(monkeypatch, shared_env, day, retries=0)
    drivers_before = _driver_ids(cluster)
    seen: dict[str, Any] = {}

    def sigterm_the_task() -> None:
        handler = signal.getsignal(signal.SIGTERM)
        # Airflow's task runner installs _on_term (which calls task.on_kill()); anything else would
        # end this pytest process instead.
        assert getattr(handler, "__qualname__", "").endswith("_on_term"), handler
        seen["kinds"] = sorted({p.kind for p in cluster.app_processes()})
        os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler in the main thread: the task's

    previous = signal.getsignal(signal.SIGTERM)
    watcher = Watcher(cluster, _executors_working(cluster, drivers_before), sigterm_the_task)
    watcher.start()
    try:
        start = dt.datetime.combine(day, dt.time(), tzinfo=UTC)
        states, dag_run = run_dag(daily, logical_date=start, run_after=start)
    finally:
        watcher.stop()
        signal.signal(signal.SIGTERM, previous)
    assert watcher.error is None, watcher.error
    assert watcher.fired_at is not None, "the driver never reached its executors"
    assert {"driver-wrapper", "executor"} <= set(seen["kinds"]), seen

    assert states == {"check_partition": "failed"}
    [driver] = _new_drivers(cluster, drivers_before)
    assert driver["state"] == "KILLED"
    error = str(calls["execute"][0]["error"])
    assert f"Spark driver {driver['id']} ended KILLED on {cluster.master_url}" in error, error
    _no_app_process_left(cluster, timeout=30)  # no driver, executor or Python worker left
    assert cluster.state()["activeapps"] == []
    assert not any((cluster.shared_dir / "job-cache" / "drivers").glob("*.json"))


@pytest.mark.cluster
@pytest.mark.airflow
def test_master_lost_mid_job_fails_readably_and_the_retry_leaves_one_copy(cluster, shared_env, calls, monkeypatch):
    """Master SIGKILLed once the driver runs: attempt 1 fails naming the lost master; with the master
    back (recovering its state), attempt 2 stops attempt 1's driver, runs, and one copy remains."""
    from airflow_dq_contracts.operators import ContractCheckOperator

    _connect(monkeypatch, cluster, "cluster")
    day = dt.date(2024, 6, 11)
    daily, check = _daily_check(
        monkeypatch, shared_env, day, retries=1, submit_kwargs={"master_unreachable_timeout": 10}
    )
    drivers_before = _driver_ids(cluster)
    recorded = ContractCheckOperator.execute  # the `calls` recorder

    def master_back_before_the_retry(self, context):
        try:
            return recorded(self, context)
        finally:
            if context["ti"].try_number == 1:
                watcher.join(timeout=60)  # its kill_master() has completed
                if cluster.daemon_pid(MASTER_CLASS) is None:
                    cluster.start_master()  # recovers its drivers from its recovery folder

    monkeypatch.setattr(ContractCheckOperator, "execute", master_back_before_the_retry)
    # As soon as the driver runs: spark-submit is still waiting to ask the master about it, and the
    # driver's SparkContext has not registered yet.
    watcher = Watcher(cluster, _running_driver(drivers_before), cluster.kill_master)
    watcher.start()
    try:
        states, dag_run = run_dag(daily, **interval(day))  # the interval [day, day + 1)
    finally:
        watcher.stop()
    assert watcher.error is None, watcher.error
    assert watcher.fired_at is not None, "the master was never killed"

    first, second = calls["execute"]
    assert (first["try_number"], second["try_number"]) == (1, 2)
    message = str(first["error"])
    assert message.startswith(
        f"contract job for orders on {shared_env / 'silver' / 'orders'} failed: lost the "
        f"Spark master: its REST server at {cluster.rest_url} gave no state for driver "
    ), message
    assert "Connection refused" in message and "the next attempt stops it before submitting again" in message
    assert "error" not in second and states == {"check_partition": "success"}

    drivers = {d["id"]: d for d in _new_drivers(cluster, drivers_before)}
    first_driver, second_driver = (
        calls["submit"][0]["self"].adapter.driver_id,
        calls["submit"][1]["self"].adapter.driver_id,
    )
    assert set(drivers) == {first_driver, second_driver}
    # Attempt 1's driver did not outlive its attempt: attempt 2 had the master kill it first.
    assert drivers[first_driver]["state"] == "KILLED" and drivers[second_driver]["state"] == "FINISHED"
    summary = xcom_value(dag_run, "check_partition")
    assert summary["run_id"] == make_run_id("dq_orders_daily_partition", dag_run.run_id, "check_partition")
    rows = assert_xcom_equals_results_table(summary, shared_env)  # one row per check: ONE copy
    assert summary["decision"] == decision_by_hand(rows) == "pass"
    assert {r["row_count"] for r in rows} == {len(expected_day("pass", day))}
    _no_app_process_left(cluster)


@pytest.fixture()
def doomed_cluster(shared_env: Path, monkeypatch: pytest.MonkeyPatch):
    """A cluster of its own, whose master will not come back.

    The shared cluster's master restarts with its recovery state, and a recovering master waits for
    every application it knew to answer — one that ended meanwhile never does, so recovery would
    sit out ``spark.worker.timeout`` (60 s). A second small cluster, stopped afterwards, is cheaper.
    """
    from cluster_fixtures import start_cluster

    doomed = start_cluster()
    submit_env = doomed.submit_env()
    for key in ("SPARK_CONF_DIR", "SPARK_LOCAL_IP", "SPARK_SUBMIT_OPTS", "DQ_TEST_SPARK_CLUSTER"):
        monkeypatch.setenv(key, submit_env[key])
    try:
        yield doomed
    finally:
        doomed.stop()
        shutil.rmtree(doomed.root, ignore_errors=True)


@pytest.mark.cluster
@pytest.mark.airflow
def test_a_job_that_ends_while_the_master_is_down_still_settles_the_task(
    doomed_cluster, shared_env, calls, monkeypatch
):
    """Master SIGKILLed while the executors work, and not restarted: a standalone master only schedules,
    so the job runs to its end; its marker file (not the absent master) tells the task how it ended."""
    cluster = doomed_cluster
    _connect(monkeypatch, cluster, "cluster")
    day = dt.date(2024, 6, 12)
    # The hook waits for the absent master as long as the job may still run: a deadline generous
    # enough for a loaded machine (with the default 60 s, a job slowed by load outlived the wait and
    # the task gave up with "lost the Spark master" before the job's marker file settled it).
    daily, _ = _daily_check(monkeypatch, shared_env, day, retries=0, submit_kwargs={"master_unreachable_timeout": 600})
    drivers_before = _driver_ids(cluster)
    watcher = Watcher(cluster, _executors_working(cluster, drivers_before), cluster.kill_master)
    watcher.start()
    try:
        states, dag_run = run_dag(daily, **interval(day))  # the interval [day, day + 1)
        master_was_down = cluster.daemon_pid(MASTER_CLASS) is None
    finally:
        watcher.stop()
    assert watcher.error is None, watcher.error
    assert watcher.fired_at is not None, "the master was never killed"
    assert master_was_down
    assert states == {"check_partition": "success"}, calls["execute"]
    [submit] = calls["submit"]
    hook = submit["self"]
    assert hook.adapter.driver_status != "FINISHED"  # the master never confirmed the end: the job did
    assert submit["result"]["decision"] == "pass"
    summary = xcom_value(dag_run, "check_partition")
    rows = assert_xcom_equals_results_table(summary, shared_env)
    assert summary["decision"] == decision_by_hand(rows) == "pass"
    assert {r["row_count"] for r in rows} == {len(expected_day("pass", day))}
    _no_app_process_left(cluster)  # the driver and its executors ended by themselves
    assert not any((Path(os.environ["DQ_CONTRACTS_JOB_CACHE"]) / "drivers").glob("*.json"))
