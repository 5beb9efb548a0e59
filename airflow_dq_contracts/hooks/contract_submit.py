"""Submit the packaged contract job through Airflow's ``SparkSubmitHook``.

The hook owns everything about the external system (STYLE.md): building the job bundle, the Spark
settings Delta needs, the spark-submit process, reading the job's marker lines out of its output,
and killing it. The operator stays thin.

Why a subclass rather than a wrapper: ``SparkSubmitHook`` already knows how to build the command
from the ``spark_default`` connection, track a standalone / YARN / Kubernetes driver and kill it;
we only add

* the bundle (``--py-files`` zip + launcher) and Delta (``--packages``, or ``--jars`` offline),
* the driver's Python for local and client mode (the Airflow worker's own interpreter),
* marker parsing — the job prints ``DQ_CONTRACTS_DONE`` / ``DQ_CONTRACTS_ERROR`` lines, so a
  failure surfaces with the job's own error text instead of "exit code 1",
* a kill that takes the whole local process group (the spark-submit JVM, the Python driver it
  spawned and its Python workers), so nothing survives ``on_kill`` in local or client mode.

Example::

    hook = ContractSubmitHook(conn_id="spark_default", application_args=job_arguments(...))
    outcome = hook.submit_job()          # raises ContractJobError with the job's message
    print(outcome["decision"] if outcome else "cluster mode: read the results table")
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Iterator

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_dq_contracts import spark_config
from airflow_dq_contracts.jobs.bundle import JobBundle, build_job_bundle
from airflow_dq_contracts.jobs.run_contract import DONE_MARKER, ERROR_MARKER, parse_marker
from airflow_dq_contracts.version_compat import AirflowException

# Spark prints ~1,000 INFO lines per run into the task log otherwise; WARN keeps the job's own
# progress lines readable. Users override it through spark_conf.
DEFAULT_LOG_LEVEL = "WARN"
# Seconds between SIGTERM (Spark's shutdown hooks stop the context cleanly) and SIGKILL.
KILL_GRACE_SECONDS = 10.0


class ContractJobError(AirflowException):
    """The Spark job failed. ``str()`` is the job's own error text when the job could report it.

    ``kind`` is ``run_failed``, ``invalid_contract``, ``invalid_arguments`` or ``submit_failed``
    (spark-submit died before the job said anything: JVM, cluster or network trouble).
    """

    def __init__(self, message: str, kind: str = "run_failed") -> None:
        super().__init__(message)
        self.kind = kind


def _is_local(master: str) -> bool:
    return master.startswith("local")


class ContractSubmitHook(SparkSubmitHook):
    """``SparkSubmitHook`` that runs the airflow-dq-contracts job bundle.

    :param conn_id: Spark connection (``spark_default``: master, deploy mode, queue, namespace…).
    :param application_args: the job's arguments (:func:`~airflow_dq_contracts.jobs.run_contract.job_arguments`).
    :param conf: Spark conf; merged over the Delta SQL settings (and small-machine tuning on ``local``).
    :param packages: extra Maven coordinates; Delta's is added unless present or ``include_delta=False``.
    :param jars: extra jars (comma-separated or list).
    :param files: extra files to ship (comma-separated or list).
    :param include_delta: add the Delta package (or ``$DQ_CONTRACTS_DELTA_JARS`` jars offline).
    :param warehouse: ``spark.sql.warehouse.dir`` for local masters (where table names land).
    :param kwargs: any other ``SparkSubmitHook`` argument (``driver_memory``, ``executor_cores``,
        ``num_executors``, ``deploy_mode``, ``verbose``…).

    Example::

        hook = ContractSubmitHook(application_args=["--contract-b64=...", "--input=/data/orders"])
        hook.submit_job()
    """

    def __init__(
        self,
        *,
        conn_id: str = "spark_default",
        application_args: list[str] | None = None,
        conf: dict[str, Any] | None = None,
        packages: str | list[str] | None = None,
        jars: str | list[str] | None = None,
        files: str | list[str] | None = None,
        py_files: str | list[str] | None = None,
        name: str = "dq-contracts",
        include_delta: bool = True,
        warehouse: str | None = None,
        bundle: JobBundle | None = None,
        **kwargs: Any,
    ) -> None:
        self.bundle = bundle or build_job_bundle()
        package_list = _as_list(packages)
        jar_list = _as_list(jars)
        user_conf = {str(k): str(v) for k, v in (conf or {}).items()}
        if include_delta:
            delta = spark_config.delta_dependency_conf()
            if "spark.jars" in delta:
                jar_list += [j for j in delta["spark.jars"].split(",") if j not in jar_list]
            elif not any(p.startswith("io.delta:delta-spark") for p in package_list) and \
                    "spark.jars.packages" not in user_conf:
                package_list.append(spark_config.DELTA_PACKAGE)
        super().__init__(
            conf=dict(user_conf),
            conn_id=conn_id,
            application_args=list(application_args or []),
            packages=",".join(package_list) or None,
            jars=",".join(jar_list) or None,
            files=",".join(_as_list(files)) or None,
            py_files=",".join([str(self.bundle.zip_path)] + _as_list(py_files)),
            name=name,
            **kwargs,
        )
        # The connection is resolved by the parent's __init__; only now do we know the master and
        # deploy mode the defaults depend on. User conf always wins.
        self._conf = {**self._default_conf(user_conf, warehouse), **user_conf}
        self.done: dict[str, Any] | None = None
        self.job_error: dict[str, Any] | None = None

    # ------------------------------------------------------------------ settings

    @property
    def master(self) -> str:
        """The Spark master from the connection (``local[*]``, ``spark://…``, ``yarn``, ``k8s://…``)."""
        return str(self._connection["master"])

    @property
    def deploy_mode(self) -> str:
        """``client`` or ``cluster`` (client when the connection says nothing)."""
        return str(self._connection.get("deploy_mode") or "client")

    def _default_conf(self, user_conf: dict[str, str], warehouse: str | None) -> dict[str, str]:
        local = _is_local(self.master)
        conf = spark_config.default_spark_conf(local=local)
        conf["spark.log.level"] = DEFAULT_LOG_LEVEL
        if local and warehouse:
            conf["spark.sql.warehouse.dir"] = warehouse
        # The driver runs on this worker in local and client mode: use this interpreter, which has
        # pyspark (spark-submit comes from it). Executors on a cluster use the cluster's own
        # Python, so only a local master gets spark.pyspark.python too. An explicit env wins.
        if self.deploy_mode != "cluster" and not os.environ.get("PYSPARK_DRIVER_PYTHON"):
            conf["spark.pyspark.driver.python"] = sys.executable
        if local and not os.environ.get("PYSPARK_PYTHON"):
            conf["spark.pyspark.python"] = sys.executable
        return conf

    # ------------------------------------------------------------------ running

    def _watch(self, lines: Iterator[str]) -> Iterator[str]:
        for line in lines:
            parsed = parse_marker(line)
            if parsed is not None:
                marker, payload = parsed
                if marker == DONE_MARKER:
                    self.done = payload
                elif marker == ERROR_MARKER:
                    self.job_error = payload
            yield line

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:  # noqa: D401 - parent's hook point
        super()._process_spark_submit_log(self._watch(itr))

    def _popen_kwargs(self) -> dict[str, Any]:
        # A session of its own: on_kill can signal spark-submit *and* the Python driver and workers
        # it spawns, and a signal meant for the Airflow task process does not reach them half-way.
        kwargs: dict[str, Any] = {"start_new_session": True}
        binary = self._connection["spark_binary"]
        if shutil.which(binary) is None and not self._env:
            # spark-submit ships with the pyspark wheel next to this interpreter; a worker started
            # without the virtualenv on PATH still finds it.
            venv_bin = os.path.dirname(sys.executable)
            if os.path.exists(os.path.join(venv_bin, binary)):
                env = os.environ.copy()
                env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
                kwargs["env"] = env
        return kwargs

    def submit_job(self) -> dict[str, Any] | None:
        """Run the job; return its completion payload (None in cluster mode, where its stdout is remote).

        Raises :class:`ContractJobError` carrying the job's own error text when it reported one,
        else spark-submit's (with the tail of its output).
        """
        self.done = None
        self.job_error = None
        try:
            self.submit(application=str(self.bundle.launcher_path), **self._popen_kwargs())
            if self._should_track_driver_status:  # standalone cluster mode: spark-submit returns at once
                try:
                    self._start_driver_status_tracking()
                finally:
                    self._run_post_submit_commands()
                if self._driver_status != "FINISHED":
                    raise AirflowException(f"Spark driver {self._driver_id} ended with status {self._driver_status}")
        except AirflowException as exc:
            if self.job_error is not None:
                raise ContractJobError(str(self.job_error.get("message") or exc),
                                       kind=str(self.job_error.get("kind") or "run_failed")) from None
            raise ContractJobError(f"spark-submit failed before the contract job reported a result: {exc}",
                                   kind="submit_failed") from None
        if self.job_error is not None:  # exit 0 but an error marker: never pass that silently
            raise ContractJobError(str(self.job_error.get("message")), kind=str(self.job_error.get("kind")))
        return self.done

    def on_kill(self) -> None:
        """Stop the application: the local process group in local/client mode, the cluster's way otherwise."""
        process = self._submit_sp
        if process is not None and process.poll() is None and self.deploy_mode != "cluster":
            self.log.info("Stopping the contract job (spark-submit pid %s and its children)", process.pid)
            _terminate_group(process, KILL_GRACE_SECONDS)
        super().on_kill()


def _terminate_group(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL what is left."""
    try:
        group = os.getpgid(process.pid)
    except ProcessLookupError:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        if sig == signal.SIGTERM:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.2)
            if process.poll() is not None and not _group_alive(group):
                return


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _as_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return [str(item) for item in value if str(item).strip()]
