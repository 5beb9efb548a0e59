"""The one checked adapter between :class:`ContractSubmitHook` and ``SparkSubmitHook``'s private state.

``SparkSubmitHook`` has no public way to read the connection it resolved, to change the command
after ``__init__`` (Delta's jars resolved at submit time, the PythonRunner route of standalone
cluster mode), to read the driver it is tracking or to reach the spark-submit process it started.
Its private attributes are that way; this class is the only code that touches them, and it checks
each one against the installed provider when the hook is built, so a provider release that renames
one fails at once, naming it, instead of submitting without Delta or with the wrong main class.

Checked against ``apache-airflow-providers-apache-spark`` **5.3.0** (the oldest the constraints pin,
Airflow 3.0.2) and **6.3.4** (the newest, Airflow 3.1.8): the attributes of :data:`ATTRIBUTES` are
set by ``SparkSubmitHook.__init__`` in both, and the methods of :data:`HOOK_POINTS` exist in both.
``_run_post_submit_commands`` arrived in 6.0.1: before it, :meth:`run_post_submit_commands` does
nothing. tests/test_operators.py checks each attribute against the installed provider.

Example::

    adapter = SparkSubmitAdapter(hook)            # raises AirflowException on a provider it does not know
    adapter.set(jars="/jars/delta-spark.jar", packages=None)
    print(adapter.master, adapter.driver_id)
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_dq_contracts.version_compat import AirflowException, reap_process_group

PROVIDER = "apache-airflow-providers-apache-spark"
CHECKED_PROVIDER_VERSIONS = ("5.3.0", "6.3.4")

#: Name used here → the private attribute of ``SparkSubmitHook`` it stands for, and what the parent
#: does with it: ``conf`` / ``packages`` / ``jars`` / ``py_files`` / ``java_class`` / ``application_args``
#: become ``--conf`` / ``--packages`` / ``--jars`` / ``--py-files`` / ``--class`` / the arguments in
#: ``_build_spark_submit_command``; ``driver_id`` / ``driver_status`` are what its standalone driver
#: tracking reads and writes; ``connection`` is the connection it resolved (master, deploy mode,
#: binary, REST endpoint); ``submit_process`` is the spark-submit ``Popen`` of ``submit()``; ``env`` is what
#: ``submit()`` adds to ``os.environ`` for that ``Popen`` (set from ``env_vars`` while the command is built).
ATTRIBUTES: Mapping[str, str] = {
    "conf": "_conf",
    "packages": "_packages",
    "jars": "_jars",
    "py_files": "_py_files",
    "java_class": "_java_class",
    "application_args": "_application_args",
    "driver_id": "_driver_id",
    "driver_status": "_driver_status",
    "connection": "_connection",
    "submit_process": "_submit_sp",
    "env": "_env",
}
#: What :meth:`SparkSubmitAdapter.set` may change (the rest are read only).
WRITABLE = frozenset(
    {"conf", "packages", "jars", "py_files", "java_class", "application_args", "driver_id", "driver_status", "env"}
)
#: Keys of the resolved connection the hook reads (``rest_endpoint`` is optional: 6.3.4+ derive it).
CONNECTION_KEYS = ("master", "deploy_mode", "spark_binary")
#: ``SparkSubmitHook`` methods :class:`ContractSubmitHook` overrides or calls: ``submit()`` builds the
#: command with ``_build_spark_submit_command`` and feeds spark-submit's output to
#: ``_process_spark_submit_log``; providers before 6 call ``_start_driver_status_tracking`` from
#: ``submit()`` in standalone cluster mode.
HOOK_POINTS = ("_build_spark_submit_command", "_process_spark_submit_log", "_start_driver_status_tracking")

# Seconds between SIGTERM (Spark's shutdown hooks stop the context cleanly) and SIGKILL.
KILL_GRACE_SECONDS = 10


def provider_version() -> str:
    """The installed Spark provider's version (``unknown`` when its metadata is missing).

    >>> provider_version() != ""
    True
    """
    try:
        return _dist_version(PROVIDER)
    except PackageNotFoundError:
        return "unknown"


def _unsupported(what: str) -> AirflowException:
    return AirflowException(
        f"SparkSubmitHook of the installed {PROVIDER} {provider_version()} has no {what}: this "
        f"airflow-dq-contracts release was checked against {PROVIDER} {' and '.join(CHECKED_PROVIDER_VERSIONS)}"
    )


class SparkSubmitAdapter:
    """Reads and writes of ``SparkSubmitHook``'s private state, each checked against the provider.

    :param hook: a ``SparkSubmitHook`` whose ``__init__`` has run (the connection is resolved).
    :raises AirflowException: the installed provider lacks an attribute, a connection key or a
        hook point listed above.
    """

    def __init__(self, hook: SparkSubmitHook) -> None:
        missing = [f"attribute {attr}" for attr in ATTRIBUTES.values() if not hasattr(hook, attr)]
        missing += [f"method {name}" for name in HOOK_POINTS if not callable(getattr(SparkSubmitHook, name, None))]
        if missing:
            raise _unsupported(", ".join(missing))
        connection = getattr(hook, ATTRIBUTES["connection"])
        if not isinstance(connection, Mapping) or any(key not in connection for key in CONNECTION_KEYS):
            raise _unsupported(f"resolved connection with the keys {', '.join(CONNECTION_KEYS)}")
        self._hook = hook

    # ------------------------------------------------------------------ writes

    def set(self, **values: Any) -> None:
        """Set private attributes of the parent hook: the one place anything does.

        A name outside :data:`WRITABLE` raises ``AirflowException`` (``… has no attribute _name …``)
        instead of being set and silently ignored.
        """
        for name, value in values.items():
            if name not in WRITABLE:
                raise _unsupported(f"attribute _{name} this hook may set")
            setattr(self._hook, ATTRIBUTES[name], value)

    # ------------------------------------------------------------------ reads

    def _get(self, name: str) -> Any:
        return getattr(self._hook, ATTRIBUTES[name])

    @property
    def connection(self) -> Mapping[str, Any]:
        """The connection the parent resolved (``master``, ``deploy_mode``, ``spark_binary``, …)."""
        return dict(self._get("connection"))

    @property
    def master(self) -> str:
        """The Spark master (``local[*]``, ``spark://…``, ``yarn``, ``k8s://…``)."""
        return str(self._get("connection")["master"])

    @property
    def deploy_mode(self) -> str:
        """``client`` or ``cluster`` (client when the connection says nothing)."""
        return str(self._get("connection")["deploy_mode"] or "client")

    @property
    def spark_binary(self) -> str:
        """The spark-submit command the parent runs (``spark-submit``, ``spark3-submit``…)."""
        return str(self._get("connection")["spark_binary"])

    @property
    def rest_endpoint(self) -> str | None:
        """The standalone REST endpoint the parent derived (providers 6.3.4+), else None."""
        endpoint = self._get("connection").get("rest_endpoint")
        return str(endpoint) if endpoint else None

    @property
    def conf(self) -> dict[str, Any]:
        """A copy of the Spark conf the command will carry."""
        return dict(self._get("conf") or {})

    @property
    def jars(self) -> str | None:
        """The ``--jars`` value the command will carry."""
        return self._get("jars")

    @property
    def driver_id(self) -> str | None:
        """The standalone driver id the parent read out of spark-submit's output."""
        value = self._get("driver_id")
        return str(value) if value else None

    @property
    def driver_status(self) -> str | None:
        """The driver state last polled (``SUBMITTED``, ``RUNNING``, ``FINISHED``…)."""
        value = self._get("driver_status")
        return str(value) if value else None

    @property
    def env(self) -> dict[str, Any]:
        """A copy of what ``submit()`` adds to spark-submit's environment (empty when nothing)."""
        return dict(self._get("env") or {})

    @property
    def submit_process(self) -> subprocess.Popen[str] | None:
        """The spark-submit process of the running (or last) ``submit()``, if any."""
        return self._get("submit_process")

    # ------------------------------------------------------------------ behaviour

    def build_command(self, application: str) -> list[str]:
        """The spark-submit command for ``application`` (through the hook's own override)."""
        return list(self._hook._build_spark_submit_command(application))

    def track_driver_with_spark_submit(self) -> None:
        """The parent's own standalone driver tracking (``spark-submit --status`` polls)."""
        SparkSubmitHook._start_driver_status_tracking(self._hook)

    def run_post_submit_commands(self) -> None:
        """The user's ``post_submit_commands`` (providers 6.0.1+; at most once per hook); else nothing."""
        run = getattr(self._hook, "_run_post_submit_commands", None)
        if callable(run):
            run()

    def stop_submit_process(self, grace: int = KILL_GRACE_SECONDS) -> bool:
        """SIGTERM spark-submit's whole process group, SIGKILL what is left after ``grace`` seconds.

        The group is the session spark-submit was started in (``start_new_session``): its JVM, the
        Python driver it spawned and that driver's Python workers. Airflow's ``reap_process_group``
        does the signalling and the waiting. False when no spark-submit is running.
        """
        process = self.submit_process
        if process is None or process.poll() is not None:
            return False
        try:
            group = os.getpgid(process.pid)
        except ProcessLookupError:
            return False
        if group != process.pid:  # not the session leader submit() started: never signal another group
            self._hook.log.warning(
                "spark-submit (pid %s) is not the leader of its process group %s: not signalling the group",
                process.pid,
                group,
            )
            return False
        self._hook.log.info("Stopping the contract job (spark-submit pid %s and its process group)", process.pid)
        try:
            reap_process_group(group, self._hook.log, timeout=grace)
        except Exception as exc:  # noqa: BLE001 - on_kill goes on to the parent's own kill whatever reaping met
            self._hook.log.warning("Stopping spark-submit's process group %s: %s", group, exc)
        return True


__all__ = ["CHECKED_PROVIDER_VERSIONS", "KILL_GRACE_SECONDS", "SparkSubmitAdapter", "provider_version"]
