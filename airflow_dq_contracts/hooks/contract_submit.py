"""Submit the packaged contract job through Airflow's ``SparkSubmitHook``.

The hook owns everything about the external system (STYLE.md): building the job bundle, the Spark
settings Delta needs, the spark-submit process, reading the job's marker lines out of its output,
and killing it. The operator stays thin.

Why a subclass rather than a wrapper: ``SparkSubmitHook`` already knows how to build the command
from the ``spark_default`` connection, track a YARN / Kubernetes driver and kill it; we only add

* the bundle (``--py-files`` zip + launcher) and Delta as local ``--jars``: Delta's package (and any
  ``packages``) resolved once per machine under a lock (:mod:`airflow_dq_contracts.runtime.jars`), never a
  concurrent ``--packages`` resolve; ``$DQ_CONTRACTS_DELTA_JARS`` offline,
* the driver's Python for local and client mode (the Airflow worker's own interpreter),
* storage credentials (``storage``, from a ``storage_conn_id``) in spark-submit's **environment** only —
  never its command line: ``SparkSubmitHook``'s own ``env_vars`` would turn them into
  ``--conf spark.yarn.appMasterEnv.*`` / ``spark.kubernetes.driverEnv.*`` arguments (visible in ``ps`` and
  logged), so they are added to the ``Popen`` environment after the command is built. In cluster deploy
  mode the driver starts elsewhere, where this environment never arrives: a connection with keys is
  refused there (use the cluster's own identity — instance profile, IAM role — and a connection without keys),
* marker parsing — the job prints ``DQ_CONTRACTS_DONE`` / ``DQ_CONTRACTS_ERROR`` lines, so a
  failure surfaces with the job's own error text instead of "exit code 1",
* a kill that takes the whole local process group (the spark-submit JVM, the Python driver it
  spawned and its Python workers) with Airflow's ``reap_process_group``, so nothing survives
  ``on_kill`` in local or client mode,
* the orphan of a worker that died without ``on_kill`` (SIGKILL, OOM): in local and client mode each
  submission records its spark-submit's pid, process group, start time and host under the run id
  (``submits/<digest>.json`` beside the bundle); a retry of the same run id on the same host finds a
  still-running orphan there and stops its process group before submitting again (one warning line).
  An orphan on another host cannot be reached: the writes' fencing refuses its late commits
  (store/fencing.py),
* Spark **standalone cluster deploy mode** for our Python job, which spark-submit refuses for
  ``.py`` applications: with ``deploy-mode: cluster`` on a ``spark://`` connection the hook hands
  the run, transparently, to :class:`~airflow_dq_contracts.hooks.standalone.StandaloneDriverRoute`
  (Spark's PythonRunner, a marker file, the driver followed and killed through the master's REST).

What the hook needs of ``SparkSubmitHook`` beyond its constructor, ``submit()`` and ``on_kill()``
goes through one checked adapter, :class:`~airflow_dq_contracts.hooks.spark_submit_adapter.SparkSubmitAdapter`.
The job's arguments are opaque here: what identifies a run across retries comes as ``run_id``.

Example::

    hook = ContractSubmitHook(conn_id="spark_default", application_args=job_args, run_id="dq-3f2a")
    outcome = hook.submit_job()          # raises ContractJobError with the job's message
    print(outcome["decision"] if outcome else "cluster mode: read the results table")
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_dq_contracts.hooks.errors import ContractJobError
from airflow_dq_contracts.hooks.orphans import JobProcessRecord
from airflow_dq_contracts.hooks.spark_submit_adapter import KILL_GRACE_SECONDS, SparkSubmitAdapter
from airflow_dq_contracts.hooks.standalone import (
    MASTER_UNREACHABLE_TIMEOUT,
    PYTHON_RUNNER_CLASS,
    StandaloneDriverRoute,
)
from airflow_dq_contracts.hooks.storage import StorageConnectionError
from airflow_dq_contracts.jobs.bundle import CACHE_ENV, JobBundle, build_job_bundle
from airflow_dq_contracts.jobs.markers import DONE_MARKER, ERROR_MARKER, parse_marker
from airflow_dq_contracts.runtime import jars as jar_resolution
from airflow_dq_contracts.runtime import jvm_archive, spark_config
from airflow_dq_contracts.storage.connections import StorageCredentials
from airflow_dq_contracts.version_compat import CONNECTION_NOT_FOUND, AirflowException, Connection

#: What a process that opened a Spark Connect session (PySpark sets ``SPARK_CONNECT_MODE_ENABLED`` in its
#: own environment) or ran a PySpark driver leaves behind. PySpark tests these for presence, so a
#: spark-submit started later from the same worker must not inherit them: its driver would turn into a
#: Connect client (or look for another process's gateway). Also what the Connect transport's job drops.
CONNECT_LEFTOVER_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "PYSPARK_GATEWAY_PORT")


@contextlib.contextmanager
def without_connect_leftovers() -> Iterator[None]:
    """``os.environ`` without :data:`CONNECT_LEFTOVER_ENV` while spark-submit is started (SparkSubmitHook
    builds the child's environment from ``os.environ`` itself); restored afterwards. A no-op when none is set."""
    saved = {name: os.environ.pop(name) for name in CONNECT_LEFTOVER_ENV if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


#: The connection the operator uses by default; when it is not defined the job runs on EMBEDDED_MASTER
#: (the product's embedded default) rather than the Spark provider's fallback, YARN.
DEFAULT_CONN_ID = "spark_default"
EMBEDDED_MASTER = "local[*]"
# Spark prints ~1,000 INFO lines per run into the task log otherwise; WARN keeps the job's own
# progress lines readable. Users override it through spark_conf.
DEFAULT_LOG_LEVEL = "WARN"


def _is_local(master: str) -> bool:
    return master.startswith("local")


class ContractSubmitHook(SparkSubmitHook):
    """``SparkSubmitHook`` that runs the airflow-dq-contracts job bundle.

    :param conn_id: Spark connection (``spark_default``: master, deploy mode, queue, namespace…).
    :param application_args: the job's arguments, passed through untouched (never read back here).
    :param conf: Spark conf; merged over the Delta SQL settings (and small-machine tuning on ``local``).
    :param packages: extra Maven coordinates; Delta's is added unless present or ``include_delta=False``.
        In standalone cluster mode they are resolved into jars (see :mod:`~airflow_dq_contracts.hooks.standalone`).
    :param jars: extra jars (comma-separated or list). In standalone cluster mode: paths the workers read.
    :param files: extra files to ship (comma-separated or list).
    :param include_delta: add the Delta package (or ``$DQ_CONTRACTS_DELTA_JARS`` jars offline).
    :param warehouse: ``spark.sql.warehouse.dir`` for local masters (where table names land).
    :param master_unreachable_timeout: standalone cluster mode: seconds the master may be unreachable
        (or report the driver UNKNOWN, as during its recovery) before the task fails; the driver's
        own report, when it arrives meanwhile, settles the outcome without the master.
    :param run_id: what identifies one run across retries (the job's run id); in standalone cluster
        mode a still-running driver of an earlier attempt with the same id is stopped before the new
        one is submitted. Without it, nothing is reclaimed.
    :param run_key: the former name of ``run_id`` (kept for callers of earlier releases).
    :param status_poll_interval: seconds between driver status polls (``SparkSubmitHook``'s argument).
    :param env_vars: environment of spark-submit (``SparkSubmitHook``'s argument; on YARN and Kubernetes
        the parent also puts them on the command line: no secrets here — use ``storage``).
    :param storage: a storage connection's credentials
        (:func:`~airflow_dq_contracts.hooks.storage.get_storage_credentials`): their environment goes to
        spark-submit's process only, their Spark conf (no secrets) under ``conf``.
    :param s3: whether a location of the run is on S3, so the job needs the ``s3a`` filesystem's jars
        (``hadoop-aws`` with the AWS SDK modules, :func:`~airflow_dq_contracts.runtime.jars.s3_jars`);
        they are added too whenever ``storage`` is an S3 connection.
    :param kwargs: any other ``SparkSubmitHook`` argument (``driver_memory``, ``executor_cores``,
        ``num_executors``, ``deploy_mode``, ``verbose``, ``post_submit_commands``…).

    Example::

        shipped = spec.job_arguments()     # one RunSpec argument (airflow_dq_contracts.runspec)
        hook = ContractSubmitHook(application_args=shipped.arguments, files=shipped.files, run_id=spec.run_id)
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
        run_id: str | None = None,
        run_key: str | None = None,
        status_poll_interval: int = 1,
        env_vars: dict[str, Any] | None = None,
        storage: StorageCredentials | None = None,
        s3: bool | None = None,
        **kwargs: Any,
    ) -> None:
        bundle_given = bundle is not None
        self.bundle = bundle or build_job_bundle()
        # The storage's Spark settings carry no secret; the user's conf wins over them.
        user_conf = {
            **{str(k): str(v) for k, v in (storage.spark_conf if storage else {}).items()},
            **{str(k): str(v) for k, v in (conf or {}).items()},
        }
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
        # Decided before the parent resolves the connection (see _resolve_connection).
        self._embedded_default = conn_id == DEFAULT_CONN_ID and not self._connection_defined(conn_id)
        super().__init__(
            conf=dict(user_conf),
            conn_id=conn_id,
            application_args=job_args,
            packages=None,
            jars=",".join(jar_list) or None,
            files=",".join(_as_list(files)) or None,
            py_files=",".join(py_file_list),
            name=name,
            status_poll_interval=status_poll_interval,
            env_vars=env_vars,
            **kwargs,
        )
        self.adapter = SparkSubmitAdapter(self)  # checks the installed provider first
        self.conn_id = conn_id
        if self._embedded_default:
            self.log.warning(
                "Connection %r is not defined: running on the embedded default, Spark %s on this worker "
                '(define %s to run elsewhere, e.g. AIRFLOW_CONN_SPARK_DEFAULT=\'{"conn_type": "spark", '
                '"host": "yarn"}\')',
                conn_id,
                EMBEDDED_MASTER,
                conn_id,
            )
        self.run_key = run_id if run_id is not None else run_key
        self.done: dict[str, Any] | None = None
        self.job_error: dict[str, Any] | None = None
        self._env_vars_given = bool(env_vars)
        self._storage_env = {str(k): str(v) for k, v in (storage.env if storage else {}).items()}
        if storage is not None and storage.has_secrets and self.deploy_mode == "cluster":
            raise StorageConnectionError(
                f"storage connection {storage.conn_id!r} carries keys, but in cluster deploy mode the driver "
                "starts on the cluster, where this worker's environment never arrives (and keys never travel on "
                "a command line): run in client mode, or give the cluster its own identity (instance profile, "
                "IAM role) and use a connection without keys"
            )
        self._killed = False
        self._pending_packages = package_list
        # The s3a filesystem's jars (hadoop-aws + the AWS SDK modules it needs) when a location is on S3
        # (the operator says so) or the storage connection is an S3 one; resolved with the packages.
        self._with_s3 = bool(s3) or bool(storage is not None and storage.s3 is not None)
        # The connection is resolved by the parent's __init__; only now do we know the master and
        # deploy mode the defaults depend on. User conf always wins.
        merged = {**self._default_conf(user_conf, warehouse), **user_conf}
        if self.deploy_mode != "cluster":
            # The driver JVM starts on this machine: map its classes from the machine's archive
            # when one was built (jvm_archive.py; the user's own Java options are kept).
            merged = jvm_archive.with_archive(merged)
        self.adapter.set(conf=merged)
        self.standalone: StandaloneDriverRoute | None = None
        if self.is_standalone_cluster:
            # PythonRunner route: nothing may travel as --packages / --jars / --py-files; the route
            # resolves the packages into spark.jars at submit time (resolving jars starts Java).
            cluster_jars = jar_list + [j for j in _as_list(merged.pop("spark.jars", None)) if j not in jar_list]
            self.adapter.set(conf=merged, packages=None, jars=None, py_files=None, java_class=PYTHON_RUNNER_CLASS)
            self.standalone = StandaloneDriverRoute(
                self,
                self.adapter,
                bundle=self.bundle,
                job_args=job_args,
                packages=package_list,
                jars=cluster_jars,
                py_files=py_file_list,
                run_key=self.run_key,
                rest_endpoint=self.rest_endpoint,
                master_unreachable_timeout=master_unreachable_timeout,
                status_poll_interval=status_poll_interval,
            )
            self._pending_packages = []
            if not bundle_given and not os.environ.get(CACHE_ENV):
                self.log.warning(
                    "Standalone cluster mode: the driver reads the job from %s on a Spark worker; set $%s "
                    "to a folder the workers see at the same path (a shared volume)",
                    self.bundle.zip_path.parent,
                    CACHE_ENV,
                )

    def _resolve_connection(self) -> dict[str, Any]:
        """The parent's resolution; for a missing ``spark_default``, the embedded master's.

        The provider answers a connection it cannot load with YARN and logs "defaulting to yarn"; this
        run's master is decided otherwise, so the parent resolves the connection that names the embedded
        master (as ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'`` would) and
        no line says yarn before the one saying ``local[*]``.
        """
        if not getattr(self, "_embedded_default", False):
            return super()._resolve_connection()
        embedded = Connection(conn_id=DEFAULT_CONN_ID, conn_type="spark", host=EMBEDDED_MASTER)
        vars(self)["get_connection"] = lambda conn_id: embedded  # the instance's, for this one call
        try:
            return super()._resolve_connection()
        finally:
            del vars(self)["get_connection"]

    def _connection_defined(self, conn_id: str) -> bool:
        try:
            self.get_connection(conn_id)
        except CONNECTION_NOT_FOUND:
            return False
        except Exception:  # noqa: BLE001 - a secrets backend that fails: the provider's own handling stands
            return True
        return True

    # ------------------------------------------------------------------ settings

    @property
    def master(self) -> str:
        """The Spark master from the connection (``local[*]``, ``spark://…``, ``yarn``, ``k8s://…``)."""
        return self.adapter.master

    @property
    def deploy_mode(self) -> str:
        """``client`` or ``cluster`` (client when the connection says nothing)."""
        return self.adapter.deploy_mode

    @property
    def is_standalone_cluster(self) -> bool:
        """True for ``spark://`` masters in cluster deploy mode (the PythonRunner route)."""
        return self.master.startswith("spark://") and self.deploy_mode == "cluster"

    @property
    def rest_endpoint(self) -> str | None:
        """The standalone master's REST server (``http://host:6066``), cluster deploy mode only."""
        endpoint = self.adapter.rest_endpoint
        if endpoint or not self.is_standalone_cluster or "," in self.master:
            return endpoint
        # Spark providers before 6.3.4 (the newest on Python 3.10) do not derive it: same rule,
        # from the connection's extras rest-scheme / rest-port (rest_scheme / rest_port accepted too).
        try:
            extra = self.get_connection(self.conn_id).extra_dejson
        except AirflowException:
            extra = {}
        host = self.master.replace("spark://", "").strip().rsplit(":", 1)[0]
        scheme = extra.get("rest-scheme", extra.get("rest_scheme", "http"))
        return f"{scheme}://{host}:{extra.get('rest-port', extra.get('rest_port', 6066))}"

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

    def resolve_packages(self, coordinates: Sequence[str], jars_dir: Path | None = None) -> list[str]:
        """Local jars for Maven coordinates, resolved once per machine under a lock (runtime/jars.py)."""
        conf = self.adapter.conf
        try:
            return [
                str(jar)
                for jar in jar_resolution.resolve(
                    coordinates,
                    jars_dir,
                    ivy_home=conf.get("spark.jars.ivy"),
                    ivy_settings=conf.get("spark.jars.ivySettings"),
                )
            ]
        except jar_resolution.JarResolutionError as exc:
            raise ContractJobError(str(exc), kind="submit_failed") from None

    def _localise_packages(self) -> None:
        """Turn the packages (Delta's, the user's; S3's jars when needed) into local ``--jars``; once,
        before the command is built."""
        if not self._pending_packages and not self._with_s3:
            return
        current = _as_list(self.adapter.jars)
        resolved = self.resolve_packages(self._pending_packages) if self._pending_packages else []
        if self._with_s3:
            conf = self.adapter.conf
            try:
                resolved += jar_resolution.s3_jars(
                    ivy_home=conf.get("spark.jars.ivy"), ivy_settings=conf.get("spark.jars.ivySettings")
                )
            except jar_resolution.JarResolutionError as exc:
                raise ContractJobError(str(exc), kind="submit_failed") from None
        self.adapter.set(jars=",".join(current + [jar for jar in resolved if jar not in current]))
        self._pending_packages = []
        self._with_s3 = False

    def _build_spark_submit_command(self, application: str) -> list[str]:  # noqa: D401 - parent's hook point
        self._localise_packages()
        command = super()._build_spark_submit_command(application)
        if self._storage_env:
            # After the parent set its env from env_vars (and put them on the command line on YARN /
            # Kubernetes): the credentials join only what submit() gives Popen over os.environ.
            self.adapter.set(env={**self._path_env(), **self.adapter.env, **self._storage_env})
        return command

    # ------------------------------------------------------------------ running

    def _watch(self, lines: Iterator[str]) -> Iterator[str]:
        for line in lines:
            self.take_marker(line)
            yield line

    def take_marker(self, line: str) -> bool:
        """Record a ``DQ_CONTRACTS_DONE`` / ``DQ_CONTRACTS_ERROR`` line of the job; True when it was one."""
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
        # Called by submit() right after spark-submit started: recorded before its first line is read.
        self.remember_submit()
        super()._process_spark_submit_log(self._watch(itr))

    # ------------------------------------------------------------------ the spark-submit of a run, across attempts

    def submit_record(self) -> JobProcessRecord | None:
        """Where this run's local spark-submit is recorded (hooks/orphans.py): None without a run id, or in
        cluster deploy mode (the driver is elsewhere: standalone's route follows it through the master)."""
        if not self.run_key or self.deploy_mode == "cluster":
            return None
        return JobProcessRecord(self.bundle.zip_path.parent / "submits", self.run_key, self.log)

    def remember_submit(self) -> None:
        """Record the running spark-submit (the leader of its process group) under the run id."""
        record, process = self.submit_record(), self.adapter.submit_process
        if record is not None and process is not None:
            record.remember(process.pid)

    def forget_submit(self) -> None:
        """Drop this attempt's record (its spark-submit ended)."""
        record, process = self.submit_record(), self.adapter.submit_process
        if record is not None and process is not None:
            record.forget(process.pid)

    def reclaim_orphan(self) -> None:
        """Stop the spark-submit an earlier attempt of this run left running on this host, before submitting.

        The worker of that attempt died without ``on_kill`` (SIGKILL, OOM), so its spark-submit (its own
        session: the JVM, the Python driver, its workers) may still be evaluating and writing.
        """
        record = self.submit_record()
        if record is not None:
            record.reclaim(KILL_GRACE_SECONDS)

    def _start_driver_status_tracking(self) -> None:  # noqa: D401 - parent's hook point
        # Providers before 6 follow a standalone driver from inside submit(): the route's way, then.
        if self.standalone is not None:
            self.standalone.follow_driver()
        else:
            super()._start_driver_status_tracking()

    def _popen_kwargs(self) -> dict[str, Any]:
        # A session of its own: on_kill can signal spark-submit *and* the Python driver and workers
        # it spawns, and a signal meant for the Airflow task process does not reach them half-way.
        kwargs: dict[str, Any] = {"start_new_session": True}
        # SparkSubmitHook builds spark-submit's environment itself (os.environ + env_vars, replacing
        # ours) whenever env_vars are given outside Kubernetes: those env_vars decide, PATH included.
        # (and whenever storage credentials are given: _build_spark_submit_command adds them there).
        parent_sets_env = (self._env_vars_given and "k8s" not in self.master) or bool(self._storage_env)
        if not parent_sets_env and self._path_env():
            kwargs["env"] = {**os.environ, **self._path_env()}
        return kwargs

    def _path_env(self) -> dict[str, str]:
        # spark-submit ships with the pyspark wheel next to this interpreter; a worker started without
        # the virtualenv on PATH still finds it.
        binary = self.adapter.spark_binary
        venv_bin = os.path.dirname(sys.executable)
        if shutil.which(binary) is None and os.path.exists(os.path.join(venv_bin, binary)):
            return {"PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}
        return {}

    def submit_application(self, application: str) -> None:
        """Run spark-submit for ``application`` in a session of its own, unless the task was killed.

        :raises ContractJobError: ``on_kill`` came first (nothing is started).
        :raises AirflowException: spark-submit failed (``SparkSubmitHook.submit``).
        """
        self._refuse_if_killed()
        self.reclaim_orphan()
        try:
            with without_connect_leftovers():
                self.submit(application=application, **self._popen_kwargs())
        finally:
            self.forget_submit()

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
        if self.standalone is not None:
            return self.standalone.run()
        self._refuse_if_killed()
        self._localise_packages()  # before submit(): its errors are ours, with the offline route
        try:
            self.submit_application(str(self.bundle.launcher_path))
        except ContractJobError:
            raise
        except AirflowException as exc:
            if self.job_error is not None:
                raise ContractJobError(
                    str(self.job_error.get("message") or exc), kind=str(self.job_error.get("kind") or "run_failed")
                ) from None
            raise ContractJobError(
                f"spark-submit failed before the contract job reported a result: {exc}", kind="submit_failed"
            ) from None
        if self.job_error is not None:  # exit 0 but an error marker: never pass that silently
            raise ContractJobError(str(self.job_error.get("message")), kind=str(self.job_error.get("kind")))
        if self._killed:
            # on_kill reaped spark-submit itself, so submit() may have read exit status 0: still a kill.
            raise ContractJobError("the task was stopped (on_kill) while the contract job ran", kind="submit_failed")
        return self.done

    def _refuse_if_killed(self) -> None:
        # Airflow's SIGTERM handler calls on_kill and returns: without this, a kill that lands while
        # the bundle or the jars are being prepared would be followed by a fresh submission.
        if self._killed:
            raise ContractJobError("the task was stopped (on_kill) before the job was submitted", kind="submit_failed")

    def on_kill(self) -> None:
        """Stop the application: the local process group in local/client mode, the cluster's way otherwise.

        Standalone cluster mode: the route's REST kill, then a wait until the driver has ended (the
        worker stops its executors with it), so no driver outlives the task.
        """
        self._killed = True
        if self.standalone is not None and self.standalone.rest_endpoint:
            self.standalone.kill()
            self.adapter.run_post_submit_commands()
            return
        if self.deploy_mode != "cluster":
            self.adapter.stop_submit_process(KILL_GRACE_SECONDS)
        super().on_kill()


def _as_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return [str(item) for item in value if str(item).strip()]


__all__ = [
    "DEFAULT_CONN_ID",
    "DEFAULT_LOG_LEVEL",
    "EMBEDDED_MASTER",
    "KILL_GRACE_SECONDS",
    "ContractJobError",
    "ContractSubmitHook",
]
