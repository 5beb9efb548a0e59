"""Submit the packaged contract job through Airflow's ``SparkSubmitHook``.

The hook owns everything about the external system (STYLE.md): building the job bundle, the Spark
settings Delta needs, the spark-submit process, reading the job's marker lines out of its output,
and killing it. The operator stays thin.

Why a subclass rather than a wrapper: ``SparkSubmitHook`` already knows how to build the command
from the ``spark_default`` connection, track a standalone / YARN / Kubernetes driver and kill it;
we only add

* the bundle (``--py-files`` zip + launcher) and Delta as local ``--jars``: Delta's package (and any
  ``packages``) resolved once per machine under a lock (:mod:`airflow_dq_contracts.runtime.jars`), never a
  concurrent ``--packages`` resolve; ``$DQ_CONTRACTS_DELTA_JARS`` offline,
* the driver's Python for local and client mode (the Airflow worker's own interpreter),
* marker parsing — the job prints ``DQ_CONTRACTS_DONE`` / ``DQ_CONTRACTS_ERROR`` lines, so a
  failure surfaces with the job's own error text instead of "exit code 1",
* a kill that takes the whole local process group (the spark-submit JVM, the Python driver it
  spawned and its Python workers), so nothing survives ``on_kill`` in local or client mode,
* Spark **standalone cluster deploy mode** for our Python job, which spark-submit refuses for
  ``.py`` applications ("Cluster deploy mode is currently not supported for python applications on
  standalone clusters"). With ``deploy-mode: cluster`` on a ``spark://`` connection the hook
  switches, transparently, to the route Spark's own classes support: a code-free *carrier jar*
  (built here) whose main class is ``org.apache.spark.deploy.PythonRunner``, given the launcher and
  the bundle as its first two arguments; Delta (and any ``packages``) resolved once into a local
  jar folder and passed as ``spark.jars`` — ``--packages`` would reach the driver only, and the
  executors then fail with a ``ClassCastException`` on ``SerializedLambda``; the job's marker
  lines written to a file (``--markers-out``), since the driver's stdout stays on the worker; the
  driver followed through the master's REST server (status, kill), tolerating a master that is
  away for ``master_unreachable_timeout`` seconds; and the driver of a failed attempt that still
  runs stopped before a retry submits the same run again.

  Everything the driver reads — bundle, launcher, carrier jar, resolved jars, the marker file —
  lives in the job folder (``$DQ_CONTRACTS_JOB_CACHE``), which must be a folder the Spark workers
  see at the same path.

Example::

    hook = ContractSubmitHook(conn_id="spark_default", application_args=job_arguments(...))
    outcome = hook.submit_job()          # raises ContractJobError with the job's message
    print(outcome["decision"] if outcome else "cluster mode: read the results table")
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_dq_contracts.runtime import jars as jar_resolution
from airflow_dq_contracts.runtime import jvm_archive, spark_config
from airflow_dq_contracts.jobs.bundle import CACHE_ENV, JobBundle, build_carrier_jar, build_job_bundle
from airflow_dq_contracts.jobs.run_contract import DONE_MARKER, ERROR_MARKER, parse_marker
from airflow_dq_contracts.version_compat import AirflowException

# Spark prints ~1,000 INFO lines per run into the task log otherwise; WARN keeps the job's own
# progress lines readable. Users override it through spark_conf.
DEFAULT_LOG_LEVEL = "WARN"
# Seconds between SIGTERM (Spark's shutdown hooks stop the context cleanly) and SIGKILL.
KILL_GRACE_SECONDS = 10.0

# Standalone cluster deploy mode (see the module docstring).
PYTHON_RUNNER_CLASS = "org.apache.spark.deploy.PythonRunner"
# org.apache.spark.deploy.master.DriverState: still holding (or about to hold) worker resources.
ACTIVE_DRIVER_STATES = frozenset({"SUBMITTED", "RUNNING", "RELAUNCHING"})
TERMINAL_DRIVER_STATES = frozenset({"FINISHED", "KILLED", "FAILED", "ERROR"})
# How long a master may be away (crash + restart with its recovery state takes ~10-30 s) before a
# cluster-mode task gives up on its driver. SparkSubmitHook itself gives up after 10 failed polls.
MASTER_UNREACHABLE_TIMEOUT = 60.0
# One REST request; a dead master refuses at once, a partitioned one would hang without this.
REST_TIMEOUT_SECONDS = 10.0
# How long on_kill (and a retry reclaiming an earlier attempt's driver) waits for the driver to end.
DRIVER_STOP_TIMEOUT = 60.0


class ContractJobError(AirflowException):
    """The Spark job failed. ``str()`` is the job's own error text when the job could report it.

    ``kind`` is ``run_failed``, ``invalid_contract``, ``invalid_arguments``, ``submit_failed``
    (spark-submit died before the job said anything: JVM, cluster or network trouble) or
    ``master_lost`` (cluster deploy mode: the master stopped answering while the driver ran).
    """

    def __init__(self, message: str, kind: str = "run_failed") -> None:
        super().__init__(message)
        self.kind = kind


def _is_local(master: str) -> bool:
    return master.startswith("local")


class _MasterUnreachable(Exception):
    """The master's REST server did not answer (or only said UNKNOWN) for too long."""


class _RestError(Exception):
    """One REST request to the master failed (refused, timed out, not JSON)."""


class ContractSubmitHook(SparkSubmitHook):
    """``SparkSubmitHook`` that runs the airflow-dq-contracts job bundle.

    :param conn_id: Spark connection (``spark_default``: master, deploy mode, queue, namespace…).
    :param application_args: the job's arguments (:func:`~airflow_dq_contracts.jobs.run_contract.job_arguments`).
    :param conf: Spark conf; merged over the Delta SQL settings (and small-machine tuning on ``local``).
    :param packages: extra Maven coordinates; Delta's is added unless present or ``include_delta=False``.
        In standalone cluster mode they are resolved into jars (see the module docstring).
    :param jars: extra jars (comma-separated or list). In standalone cluster mode: paths the workers read.
    :param files: extra files to ship (comma-separated or list).
    :param include_delta: add the Delta package (or ``$DQ_CONTRACTS_DELTA_JARS`` jars offline).
    :param warehouse: ``spark.sql.warehouse.dir`` for local masters (where table names land).
    :param master_unreachable_timeout: standalone cluster mode: seconds the master may be unreachable
        (or report the driver UNKNOWN, as during its recovery) before the task fails; the driver's
        own report, when it arrives meanwhile, settles the outcome without the master.
    :param run_key: what identifies one run across retries (default: the job's ``--run-id``); in
        standalone cluster mode a still-running driver of an earlier attempt with the same key is
        stopped before the new one is submitted.
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
        master_unreachable_timeout: float = MASTER_UNREACHABLE_TIMEOUT,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        bundle_given = bundle is not None
        self.bundle = bundle or build_job_bundle()
        user_conf = {str(k): str(v) for k, v in (conf or {}).items()}
        # Packages never travel as --packages (a concurrent Ivy resolve on this worker): they are
        # resolved once per machine into local jars at submit time (see _localise_packages).
        package_list = _as_list(packages)
        package_list += [p for p in _as_list(user_conf.pop("spark.jars.packages", None)) if p not in package_list]
        jar_list = _as_list(jars)
        if include_delta and not any(p.startswith("io.delta:delta-spark") for p in package_list):
            if os.environ.get(spark_config.DELTA_JARS_ENV):  # pre-resolved jars: nothing to resolve
                try:
                    offline = jar_resolution.delta_jars()
                except jar_resolution.JarResolutionError as exc:
                    raise ContractJobError(str(exc), kind="submit_failed") from None
                jar_list += [j for j in offline if j not in jar_list]
            else:
                package_list.append(spark_config.delta_package())
        job_args = list(application_args or [])
        py_file_list = [str(self.bundle.zip_path)] + _as_list(py_files)
        super().__init__(
            conf=dict(user_conf),
            conn_id=conn_id,
            application_args=job_args,
            packages=None,
            jars=",".join(jar_list) or None,
            files=",".join(_as_list(files)) or None,
            py_files=",".join(py_file_list),
            name=name,
            **kwargs,
        )
        # The connection is resolved by the parent's __init__; only now do we know the master and
        # deploy mode the defaults depend on. User conf always wins.
        conf = {**self._default_conf(user_conf, warehouse), **user_conf}
        if self.deploy_mode != "cluster":
            # The driver JVM starts on this machine: map its classes from the machine's archive
            # when one was built (jvm_archive.py; the user's own Java options are kept).
            conf = jvm_archive.with_archive(conf)
        self._rewire_parent(conf=conf)
        self.done: dict[str, Any] | None = None
        self.job_error: dict[str, Any] | None = None
        self.master_unreachable_timeout = float(master_unreachable_timeout)
        self.run_key = run_key or _arg_value(job_args, "--run-id")
        self._job_args = job_args
        self._job_folder = self.bundle.zip_path.parent
        self._markers_path: Path | None = None
        self._killed = False
        self._pending_packages = package_list
        if self.is_standalone_cluster:
            # PythonRunner route: nothing may travel as --packages / --jars / --py-files (see
            # _prepare_standalone_cluster, which runs at submit time because resolving jars starts Java).
            self._cluster_packages = package_list
            self._pending_packages = []
            self._cluster_jars = jar_list + [j for j in _as_list(self._conf.pop("spark.jars", None))
                                             if j not in jar_list]
            self._cluster_py_files = py_file_list
            self._rewire_parent(packages=None, jars=None, py_files=None, java_class=PYTHON_RUNNER_CLASS)
            if not bundle_given and not os.environ.get(CACHE_ENV):
                self.log.warning(
                    "Standalone cluster mode: the driver reads the job from %s on a Spark worker; set $%s "
                    "to a folder the workers see at the same path (a shared volume)", self._job_folder, CACHE_ENV)

    # ------------------------------------------------------------------ the seam into the parent

    #: The parent's private attributes this hook sets, and what the parent does with each:
    #: ``_conf`` / ``_packages`` / ``_jars`` / ``_py_files`` / ``_java_class`` / ``_application_args``
    #: become ``--conf`` / ``--packages`` / ``--jars`` / ``--py-files`` / ``--class`` / the arguments in
    #: ``_build_spark_submit_command``; ``_driver_id`` / ``_driver_status`` are what its standalone
    #: driver tracking reads and writes. tests/test_operators.py checks each against the installed provider.
    PARENT_ATTRIBUTES: tuple[str, ...] = ("_conf", "_packages", "_jars", "_py_files", "_java_class",
                                          "_application_args", "_driver_id", "_driver_status")

    def _rewire_parent(self, **values: Any) -> None:
        """Set private attributes of the parent ``SparkSubmitHook``: the one place this hook does.

        ``SparkSubmitHook`` has no public way to change the command after ``__init__`` (Delta's jars
        resolved at submit time, the PythonRunner route of standalone cluster mode); its private
        attributes are that way. Every write goes through here, and an attribute the installed
        provider does not have fails loudly instead of being set and silently ignored.

        Example::

            self._rewire_parent(jars="/jars/delta-spark.jar", packages=None)
        """
        for name, value in values.items():
            attribute = f"_{name}"
            if attribute not in self.PARENT_ATTRIBUTES or not hasattr(self, attribute):
                raise AirflowException(
                    f"SparkSubmitHook of the installed apache-airflow-providers-apache-spark has no attribute "
                    f"{attribute}: this airflow-dq-contracts release does not support that provider version")
            setattr(self, attribute, value)

    # ------------------------------------------------------------------ settings

    @property
    def master(self) -> str:
        """The Spark master from the connection (``local[*]``, ``spark://…``, ``yarn``, ``k8s://…``)."""
        return str(self._connection["master"])

    @property
    def deploy_mode(self) -> str:
        """``client`` or ``cluster`` (client when the connection says nothing)."""
        return str(self._connection.get("deploy_mode") or "client")

    @property
    def is_standalone_cluster(self) -> bool:
        """True for ``spark://`` masters in cluster deploy mode (the PythonRunner route)."""
        return self.master.startswith("spark://") and self.deploy_mode == "cluster"

    @property
    def rest_endpoint(self) -> str | None:
        """The standalone master's REST server (``http://host:6066``), cluster deploy mode only."""
        endpoint = self._connection.get("rest_endpoint")
        if endpoint or not self.is_standalone_cluster or "," in self.master:
            return endpoint
        # Spark providers before 6.3.4 (the newest on Python 3.10) do not derive it: same rule,
        # from the connection's extras rest_scheme / rest_port.
        try:
            extra = self.get_connection(self._conn_id).extra_dejson
        except AirflowException:
            extra = {}
        host = self.master.replace("spark://", "").strip().rsplit(":", 1)[0]
        return f"{extra.get('rest_scheme', 'http')}://{host}:{extra.get('rest_port', 6066)}"

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

    def _prepare_standalone_cluster(self) -> Path:
        """Jars and Python files as conf, the carrier jar written; returns the carrier jar."""
        jars = list(self._cluster_jars)
        if self._cluster_packages:
            # Into the job folder, which the workers see at the same path.
            resolved = self._resolve_packages(self._cluster_packages, self._job_folder / "jars")
            jars += [jar for jar in resolved if jar not in jars]
        if jars:
            # spark.jars reach the driver's and the executors' class loaders alike.
            self._conf["spark.jars"] = ",".join(jars)
        # PythonRunner puts them on the driver's PYTHONPATH; this conf ships them to executors.
        self._conf["spark.submit.pyFiles"] = ",".join(self._cluster_py_files)
        return build_carrier_jar(self._job_folder)

    def _resolve_packages(self, coordinates: Sequence[str], jars_dir: Path | None = None) -> list[str]:
        """Local jars for Maven coordinates, resolved once per machine under a lock (jars.py)."""
        try:
            return [str(jar) for jar in jar_resolution.resolve(
                coordinates, jars_dir, ivy_home=self._conf.get("spark.jars.ivy"),
                ivy_settings=self._conf.get("spark.jars.ivySettings"))]
        except jar_resolution.JarResolutionError as exc:
            raise ContractJobError(str(exc), kind="submit_failed") from None

    def _localise_packages(self) -> None:
        """Turn the packages (Delta's, the user's) into local ``--jars``; once, before the command is built."""
        if not self._pending_packages:
            return
        current = _as_list(self._jars)
        resolved = self._resolve_packages(self._pending_packages)
        self._rewire_parent(jars=",".join(current + [jar for jar in resolved if jar not in current]))
        self._pending_packages = []

    def _build_spark_submit_command(self, application: str) -> list[str]:  # noqa: D401 - parent's hook point
        self._localise_packages()
        return super()._build_spark_submit_command(application)

    # ------------------------------------------------------------------ running

    def _watch(self, lines: Iterator[str]) -> Iterator[str]:
        for line in lines:
            self._take_marker(line)
            yield line

    def _take_marker(self, line: str) -> bool:
        parsed = parse_marker(line)
        if parsed is None:
            return False
        marker, payload = parsed
        if marker == DONE_MARKER:
            self.done = payload
        elif marker == ERROR_MARKER:
            self.job_error = payload
        return True

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
        """Run the job; return its completion payload (None when the job could not report one).

        Raises :class:`ContractJobError` carrying the job's own error text when it reported one,
        else spark-submit's (with the tail of its output) or the cluster's.
        """
        self.done = None
        self.job_error = None
        # spark-submit from the pyspark wheel runs that wheel's Python files: if pyspark-client
        # overwrote them with another version's, say so here rather than as a Py4J error later.
        mismatch = None if os.environ.get("SPARK_HOME") else spark_config.pyspark_distribution_problem()
        if mismatch:
            raise ContractJobError(mismatch, kind="submit_failed")
        if self.is_standalone_cluster:
            return self._submit_standalone_cluster()
        self._refuse_if_killed()
        self._localise_packages()  # before submit(): its errors are ours, with the offline route
        try:
            self.submit(application=str(self.bundle.launcher_path), **self._popen_kwargs())
        except AirflowException as exc:
            if self.job_error is not None:
                raise ContractJobError(str(self.job_error.get("message") or exc),
                                       kind=str(self.job_error.get("kind") or "run_failed")) from None
            raise ContractJobError(f"spark-submit failed before the contract job reported a result: {exc}",
                                   kind="submit_failed") from None
        if self.job_error is not None:  # exit 0 but an error marker: never pass that silently
            raise ContractJobError(str(self.job_error.get("message")), kind=str(self.job_error.get("kind")))
        return self.done

    def _refuse_if_killed(self) -> None:
        # Airflow's SIGTERM handler calls on_kill and returns: without this, a kill that lands while
        # the bundle or the jars are being prepared would be followed by a fresh submission.
        if self._killed:
            raise ContractJobError("the task was stopped (on_kill) before the job was submitted", kind="submit_failed")

    # ------------------------------------------------------------------ standalone cluster mode

    def _submit_standalone_cluster(self) -> dict[str, Any] | None:
        carrier = self._prepare_standalone_cluster()
        self._reclaim_previous_driver()
        runs = self._job_folder / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        self._markers_path = runs / f"{uuid.uuid4().hex}.markers"
        self._rewire_parent(
            application_args=[str(self.bundle.launcher_path), ",".join(self._cluster_py_files),  # PythonRunner's
                              *self._job_args, f"--markers-out={self._markers_path}"],
            driver_id=None, driver_status=None)
        try:
            self._refuse_if_killed()
            try:
                self.submit(application=str(carrier), **self._popen_kwargs())
            except AirflowException as exc:
                if not self._driver_id:
                    raise ContractJobError(f"spark-submit could not hand the driver to {self.master}: {exc}",
                                           kind="submit_failed") from None
                # The master accepted the driver, then spark-submit failed (its one status poll lost the
                # master): the driver runs regardless, so it is followed, not abandoned.
                self.log.warning("spark-submit failed after the master accepted driver %s; following the driver",
                                 self._driver_id)
            self._remember_driver()
            self.log.info("Driver %s submitted to %s; following it through %s", self._driver_id, self.master,
                          self.rest_endpoint or "spark-submit --status")
            try:
                self._start_driver_status_tracking()
            except _MasterUnreachable as exc:
                raise ContractJobError(str(exc), kind="master_lost") from None
            finally:
                self._run_post_submit_commands()
            return self._standalone_outcome()
        finally:
            self._markers_path.unlink(missing_ok=True)

    def _standalone_outcome(self) -> dict[str, Any] | None:
        state = str(self._driver_status or "SUBMITTED")
        self._read_markers()
        if state not in TERMINAL_DRIVER_STATES and self.done is None and self.job_error is None:
            raise ContractJobError(f"Spark driver {self._driver_id} is {state} and reported nothing", kind="run_failed")
        # The job said how it ended: its driver exits by itself, nothing is left to reclaim.
        self._forget_driver()
        if self.job_error is not None:
            raise ContractJobError(str(self.job_error.get("message")),
                                   kind=str(self.job_error.get("kind") or "run_failed"))
        if self.done is not None:
            if state in TERMINAL_DRIVER_STATES and state != "FINISHED":
                self.log.warning("The contract job reported completion; the master reports driver %s as %s "
                                 "(it lost track of the driver while it was away)", self._driver_id, state)
            elif state != "FINISHED":
                self.log.warning("The contract job reported completion; the master could not confirm the end of "
                                 "driver %s (last known state: %s)", self._driver_id, state)
            return self.done
        if state == "FINISHED":
            self.log.warning("Driver %s FINISHED without a marker file (%s not writable from the worker?); "
                             "the results table decides", self._driver_id, self._markers_path)
            return None
        raise ContractJobError(
            f"Spark driver {self._driver_id} ended {state} on {self.master} before the contract job reported a "
            f"result (the driver's log is in the worker's work folder: {self._driver_id}/stderr)",
            kind="run_failed")

    def _read_markers(self) -> bool:
        """Take the job's marker lines from the marker file; True when a final one is there."""
        path = self._markers_path
        if path is None:
            return False
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return False
        found = False
        for line in lines:
            found = self._take_marker(line) or found
        return found

    def _start_driver_status_tracking(self) -> None:
        """Poll the driver through the master's REST server until it ends (standalone cluster mode).

        Unlike the parent (10 failed polls, then give up; UNKNOWN counts as an end), a master that
        is away or recovering is waited for up to ``master_unreachable_timeout`` seconds, and the
        job's own marker file settles the outcome when it arrives in the meantime.
        """
        if not self.rest_endpoint:
            super()._start_driver_status_tracking()
            return
        away_since: float | None = None
        last_problem = ""
        while True:
            time.sleep(self._status_poll_interval)
            try:
                state, message = _rest_driver_state(self.rest_endpoint, str(self._driver_id))
            except _RestError as exc:
                state, message = None, str(exc)
            if state in TERMINAL_DRIVER_STATES or state in ACTIVE_DRIVER_STATES:
                if away_since is not None:
                    self.log.info("The master answers again: driver %s is %s", self._driver_id, state)
                self._driver_status, away_since = state, None
                if state in TERMINAL_DRIVER_STATES:
                    return
                continue
            # Unreachable, or UNKNOWN: a recovering master, or one that lost the driver.
            last_problem = f"driver state {state}" + (f" ({message})" if message else "") if state else message
            now = time.monotonic()
            if away_since is None:
                away_since = now
                self.log.warning("Spark master at %s: %s; waiting up to %.0f s", self.rest_endpoint, last_problem,
                                 self.master_unreachable_timeout)
            if self._read_markers():
                self.log.warning("The contract job reported its end while the master was away")
                return
            if now - away_since >= self.master_unreachable_timeout:
                raise _MasterUnreachable(
                    f"lost the Spark master: its REST server at {self.rest_endpoint} gave no state for driver "
                    f"{self._driver_id} for {now - away_since:.0f} s (last: {last_problem}); its last known state: "
                    f"{self._driver_status or 'SUBMITTED'}. It may still be running on the cluster: the next "
                    f"attempt stops it before submitting again (same run id: its results are replaced, never "
                    f"doubled)."
                )

    # -- the driver of a run, across attempts

    def _driver_record_path(self) -> Path | None:
        if not self.run_key:
            return None
        digest = hashlib.sha256(self.run_key.encode()).hexdigest()[:24]
        return self._job_folder / "drivers" / f"{digest}.json"

    def _remember_driver(self) -> None:
        path = self._driver_record_path()
        if path is None or not self._driver_id:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"run_key": self.run_key, "driver_id": self._driver_id, "master": self.master,
                  "rest_endpoint": self.rest_endpoint, "submitted_at": time.time()}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        os.replace(tmp, path)

    def _forget_driver(self) -> None:
        path = self._driver_record_path()
        if path is None:
            return
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("driver_id") == self._driver_id:
                path.unlink(missing_ok=True)
        except (OSError, ValueError):
            pass

    def _reclaim_previous_driver(self) -> None:
        """Stop the driver an earlier attempt of this run left running, before submitting another.

        Two drivers of one run would write the same run id twice over (replaced, never doubled, but
        which copy wins would be a race) and, on a small cluster, hold each other's cores.
        """
        path = self._driver_record_path()
        if path is None or not path.exists():
            return
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            driver_id, endpoint = str(record["driver_id"]), record.get("rest_endpoint") or self.rest_endpoint
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            return
        if not endpoint:
            return
        try:
            state, _ = _rest_driver_state(endpoint, driver_id)
        except _RestError as exc:
            raise ContractJobError(
                f"driver {driver_id} of an earlier attempt of run {self.run_key} may still be running and the "
                f"master's REST server at {endpoint} does not answer ({exc}): not submitting a second driver "
                f"for the same run", kind="submit_failed") from None
        if state in ACTIVE_DRIVER_STATES:
            self.log.warning("Driver %s of an earlier attempt of run %s is still %s: stopping it first",
                             driver_id, self.run_key, state)
            try:
                final = self._kill_and_wait(endpoint, driver_id)
            except _RestError as exc:
                raise ContractJobError(
                    f"cannot stop driver {driver_id} of an earlier attempt of run {self.run_key} ({exc}): not "
                    f"submitting a second driver for the same run", kind="submit_failed") from None
            if final not in TERMINAL_DRIVER_STATES:
                raise ContractJobError(
                    f"driver {driver_id} of an earlier attempt of run {self.run_key} is still {final} after a kill "
                    f"request; not submitting a second driver for the same run", kind="submit_failed")
        else:
            self.log.info("Driver %s of an earlier attempt of run %s is %s", driver_id, self.run_key, state)
        path.unlink(missing_ok=True)

    def _kill_and_wait(self, endpoint: str, driver_id: str, timeout: float = DRIVER_STOP_TIMEOUT) -> str | None:
        """Ask the master to kill ``driver_id``; wait until it reports an end; return the last state."""
        answer = _rest_request(endpoint, f"kill/{driver_id}", method="POST")
        self.log.info("Kill request for driver %s: %s", driver_id, answer.get("message") or answer)
        deadline = time.monotonic() + timeout
        state: str | None = None
        while time.monotonic() < deadline:
            try:
                state, _ = _rest_driver_state(endpoint, driver_id)
            except _RestError:
                state = None
            if state in TERMINAL_DRIVER_STATES:
                return state
            time.sleep(0.5)
        return state

    def on_kill(self) -> None:
        """Stop the application: the local process group in local/client mode, the cluster's way otherwise.

        Standalone cluster mode: the master's REST kill, then wait until the driver has ended (the
        worker stops its executors with it), so no driver outlives the task.
        """
        self._killed = True
        process = self._submit_sp
        if self.is_standalone_cluster and self.rest_endpoint:
            if process is not None and process.poll() is None:  # still handing the driver over
                _terminate_group(process, KILL_GRACE_SECONDS)
            if not self._driver_id:
                self.log.warning("on_kill: no driver id known yet; spark-submit was stopped before the master "
                                 "named one")
            else:
                self.log.info("Killing driver %s on %s", self._driver_id, self.master)
                try:
                    final = self._kill_and_wait(self.rest_endpoint, self._driver_id)
                except _RestError as exc:
                    self.log.error("Cannot reach the master to kill driver %s (%s): it may still be running; the "
                                   "next attempt of this run stops it", self._driver_id, exc)
                else:
                    self.log.info("Driver %s is %s", self._driver_id, final)
                    if final in TERMINAL_DRIVER_STATES:
                        self._forget_driver()
            self._run_post_submit_commands()
            return
        if process is not None and process.poll() is None and self.deploy_mode != "cluster":
            self.log.info("Stopping the contract job (spark-submit pid %s and its children)", process.pid)
            _terminate_group(process, KILL_GRACE_SECONDS)
        super().on_kill()


# --------------------------------------------------------------------------------------- helpers


def _rest_request(endpoint: str, path: str, method: str = "GET") -> dict[str, Any]:
    """One call to a standalone master's REST submission server; its JSON answer."""
    request = urllib.request.Request(f"{endpoint.rstrip('/')}/v1/submissions/{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=REST_TIMEOUT_SECONDS) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:  # the server answered, with an error document
        body = exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _RestError(f"{type(reason).__name__}: {reason}") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise _RestError(f"not a JSON answer: {body[:200]!r}") from None
    if not isinstance(answer, dict):
        raise _RestError(f"unexpected answer: {answer!r}")
    return answer


def _rest_driver_state(endpoint: str, driver_id: str) -> tuple[str, str]:
    """(``driverState``, message) of a driver; ``UNKNOWN`` when the master has no state for it."""
    answer = _rest_request(endpoint, f"status/{driver_id}")
    state = answer.get("driverState")
    return (str(state) if state else "UNKNOWN"), str(answer.get("message") or "")


def _arg_value(args: Sequence[str], flag: str) -> str | None:
    """The value of ``--flag=value`` (or ``--flag value``) in an argument list.

    >>> _arg_value(["--input=/d", "--run-id=dq-1"], "--run-id")
    'dq-1'
    """
    for index, arg in enumerate(args):
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
        if arg == flag and index + 1 < len(args):
            return args[index + 1]
    return None


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
