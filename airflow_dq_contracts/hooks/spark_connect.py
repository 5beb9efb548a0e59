"""Run the contract job as a Spark Connect client: the second transport, beside spark-submit (no pyspark here).

A connection of type ``spark_connect`` (the Apache Spark provider's: host, port, login = user id,
password = token, extra ``use_ssl``; ``user_id`` / ``token`` in the extra are accepted too) makes
:class:`~airflow_dq_contracts.operators.contract_check.ContractCheckOperator` run the job through
this hook instead of ``spark-submit`` (the transport registered for that type in
:mod:`airflow_dq_contracts.hooks.transport`):

* The job runs in a short **Python subprocess** — ``python -m airflow_dq_contracts.jobs.run_contract
  --spec=… --remote sc://HOST:PORT/;user_id=… --connect-timeout S --connection ID`` — that is a Spark
  Connect client: no spark-submit, no local JVM. The Airflow worker process never imports PySpark and
  never opens a Connect session, so PySpark's ``SPARK_CONNECT_MODE_ENABLED`` (set in the environment of
  a process that opened one) never reaches a later spark-submit or local session of the same worker;
  the subprocess's environment is cleaned of it too.
* Same protocol as spark-submit: the job prints the ``DQ_CONTRACTS_DONE`` / ``DQ_CONTRACTS_ERROR``
  markers (:mod:`airflow_dq_contracts.jobs.markers`), so the operator's read-back, XCom summary,
  decision and idempotent retries are the same code.
* **The token** travels in the subprocess's environment (``$DQ_CONTRACTS_CONNECT_TOKEN``), never in its
  argv or the log; it is registered with Airflow's secrets masker.
* **Bounded connect**: ``connect_timeout`` seconds (default 30; the connection's extra
  ``connect_timeout`` overrides the default) before an unreachable server fails the task, naming the
  connection — nothing is written.
* **Kill**: ``on_kill`` (and an ``execution_timeout``, which calls it) sends SIGTERM to the job; it
  interrupts its operations on the server (``spark.interruptTag`` of the run's tag) and exits; what is
  left after ``kill_grace`` seconds is killed with its process group.
* **A worker lost** (SIGKILL: no ``on_kill``): the job process is recorded under the run id
  (:mod:`~airflow_dq_contracts.hooks.orphans`, ``connect/`` in the job folder); a retry on the same host
  stops a still-running one the same way first — its SIGTERM interrupts the earlier attempt's operations
  on the server. Elsewhere, the writes' fencing refuses its late commits (store/fencing.py).

Example::

    hook = ContractConnectHook(conn_id="spark_connect_default", application_args=spec.job_arguments().arguments)
    outcome = hook.submit_job()          # the job's DONE payload; ContractJobError with the job's message
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from airflow_dq_contracts.hooks.contract_submit import CONNECT_LEFTOVER_ENV
from airflow_dq_contracts.hooks.errors import ContractJobError
from airflow_dq_contracts.hooks.orphans import JobProcessRecord
from airflow_dq_contracts.jobs.bundle import cache_dir
from airflow_dq_contracts.jobs.markers import DONE_MARKER, ERROR_MARKER, parse_marker
from airflow_dq_contracts.version_compat import AirflowException, BaseHook, mask_secret, reap_process_group

__all__ = [
    "CONNECT_CONN_TYPE",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_PORT",
    "SESSION_CONF_ENV",
    "TOKEN_ENV",
    "ConnectTarget",
    "ContractConnectHook",
    "connect_target",
]

CONNECT_CONN_TYPE = "spark_connect"
DEFAULT_PORT = 15002
#: Seconds an unreachable server may take before the task fails (connection extra ``connect_timeout``).
DEFAULT_CONNECT_TIMEOUT = 30.0
#: The job reads the token from here (engine/connect_session.py): never argv.
TOKEN_ENV = "DQ_CONTRACTS_CONNECT_TOKEN"
#: The job reads the operator's ``spark_conf`` (JSON) from here and sets it on its session.
SESSION_CONF_ENV = "DQ_CONTRACTS_SESSION_CONF"
#: Seconds between SIGTERM (the job interrupts its server-side operations) and SIGKILL.
KILL_GRACE_SECONDS = 20
# Variables a Connect client (or an earlier spark-submit) leaves that must not steer the job's process.
_INHERITED = CONNECT_LEFTOVER_ENV


class ConnectTarget:
    """What a ``spark_connect`` connection says: the ``sc://`` URL (no token), the token, the timeout.

    >>> target = ConnectTarget("sc://h:15002/;user_id=ann", "t0k", 30.0)
    >>> target
    ConnectTarget(url='sc://h:15002/;user_id=ann', token=***, connect_timeout=30.0)
    """

    def __init__(self, url: str, token: str | None, connect_timeout: float) -> None:
        self.url = url
        self.token = token
        self.connect_timeout = connect_timeout

    def __repr__(self) -> str:  # the token never shows, not even in a traceback's locals
        token = "***" if self.token else None
        return f"ConnectTarget(url={self.url!r}, token={token}, connect_timeout={self.connect_timeout!r})"


def connect_target(
    host: str | None,
    port: int | None,
    login: str | None = None,
    password: str | None = None,
    extra: Mapping[str, Any] | None = None,
    conn_id: str = "",
) -> ConnectTarget:
    """A :class:`ConnectTarget` from a connection's fields (the Apache Spark provider's layout).

    >>> connect_target("spark-connect", None, extra={"user_id": "ann", "use_ssl": True}).url
    'sc://spark-connect:15002/;user_id=ann;use_ssl=true'
    >>> connect_target("sc://10.0.0.5", 443, password="x").url
    'sc://10.0.0.5:443/'

    Databricks-style endpoints: extra ``cluster_id`` (sent as the ``x-databricks-cluster-id``
    header), ``session_id`` (a UUID), ``user_agent`` and ``headers`` (more gRPC metadata, not secret:
    they are part of the logged URL; the token is not):

    >>> connect_target("https://dbc-1.cloud.databricks.com", 443, password="dapi…",
    ...                extra={"use_ssl": True, "cluster_id": "0123-abc"}).url
    'sc://dbc-1.cloud.databricks.com:443/;use_ssl=true;x-databricks-cluster-id=0123-abc'
    """
    extra = dict(extra or {})
    text = (host or "").strip()
    if not text:
        raise AirflowException(f"connection {conn_id!r} (spark_connect) has no host")
    address = text.split("://", 1)[1] if "://" in text else text
    address = address.split("/", 1)[0]
    if ":" not in address or port:
        address = f"{address.rsplit(':', 1)[0] if ':' in address else address}:{port or DEFAULT_PORT}"
    params = []
    user_id = login or extra.get("user_id")
    if user_id:
        params.append(f"user_id={quote(str(user_id), safe='')}")
    use_ssl = extra.get("use_ssl")
    if use_ssl is not None and use_ssl != "":
        params.append(f"use_ssl={str(use_ssl).lower() in ('1', 'true', 'yes')}".lower())
    params += _url_params(extra, conn_id)
    token = password or extra.get("token") or None
    try:
        timeout = float(extra.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
    except (TypeError, ValueError):
        raise AirflowException(
            f"connection {conn_id!r}: extra connect_timeout must be a number of seconds, got {extra.get('connect_timeout')!r}"
        ) from None
    url = f"sc://{address}/" + (";" + ";".join(params) if params else "")
    return ConnectTarget(url, str(token) if token else None, timeout)


_RESERVED_PARAMS = frozenset({"token", "user_id", "use_ssl", "session_id", "user_agent"})
_HEADER_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _url_params(extra: Mapping[str, Any], conn_id: str) -> list[str]:
    """``session_id``, ``user_agent``, ``cluster_id`` and ``headers`` of the extra as ``sc://`` URL parameters."""
    params = []
    session_id = extra.get("session_id")
    if session_id:
        try:
            uuid.UUID(str(session_id))
        except ValueError:
            raise AirflowException(
                f"connection {conn_id!r}: extra session_id must be a UUID, got {session_id!r}"
            ) from None
        params.append(f"session_id={session_id}")
    if extra.get("user_agent"):
        params.append(f"user_agent={quote(str(extra['user_agent']), safe='')}")
    headers = dict(extra.get("headers") or {}) if isinstance(extra.get("headers") or {}, Mapping) else None
    if headers is None:
        raise AirflowException(f"connection {conn_id!r}: extra headers must be a mapping of header → value")
    if extra.get("cluster_id"):
        headers.setdefault("x-databricks-cluster-id", extra["cluster_id"])
    for name, value in headers.items():
        key = str(name).strip().lower()
        if not _HEADER_NAME.match(key) or key in _RESERVED_PARAMS:
            raise AirflowException(
                f"connection {conn_id!r}: extra headers: {name!r} is not a header name this URL can carry"
            )
        params.append(f"{key}={quote(str(value), safe='')}")
    return params


class ContractConnectHook(BaseHook):
    """Run the contract job as a Spark Connect client subprocess (see module docs).

    :param conn_id: a ``spark_connect`` connection.
    :param application_args: the job's arguments (``--spec=…`` or ``--spec-file=PATH``), passed untouched.
    :param run_id: the run's id (for log lines; the job tags its operations with it from the spec).
    :param connect_timeout: seconds before an unreachable server fails the task; default the
        connection's extra ``connect_timeout``, else :data:`DEFAULT_CONNECT_TIMEOUT`.
    :param env_vars: extra environment of the job's process.
    :param kill_grace: seconds between SIGTERM and SIGKILL in :meth:`on_kill`.

    Example::

        hook = ContractConnectHook(conn_id="spark_connect_default", application_args=["--spec=..."])
        payload = hook.submit_job()
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_connect_default"
    conn_type = CONNECT_CONN_TYPE
    hook_name = "Data contract job over Spark Connect"

    def __init__(
        self,
        *,
        conn_id: str = default_conn_name,
        application_args: Sequence[str] = (),
        run_id: str | None = None,
        connect_timeout: float | None = None,
        env_vars: Mapping[str, str] | None = None,
        kill_grace: float = KILL_GRACE_SECONDS,
        session_conf: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        #: The operator's ``spark_conf``: set by the job on its Connect session (in its environment, not argv).
        self.session_conf = {str(k): str(v) for k, v in (session_conf or {}).items()}
        self.conn_id = conn_id
        self.application_args = list(application_args)
        self.run_id = run_id
        self.connect_timeout = connect_timeout
        self.env_vars = dict(env_vars or {})
        self.kill_grace = kill_grace
        self.done: dict[str, Any] | None = None
        self.job_error: dict[str, Any] | None = None
        self.process: subprocess.Popen[str] | None = None
        self._killed = False
        self._lock = threading.Lock()

    def target(self) -> ConnectTarget:
        """The connection's URL, token and timeout (the token registered with the secrets masker)."""
        connection = self.get_connection(self.conn_id)
        target = connect_target(
            connection.host,
            connection.port,
            connection.login,
            connection.password,
            connection.extra_dejson,
            conn_id=self.conn_id,
        )
        if target.token:
            mask_secret(target.token)
        if self.connect_timeout is not None:
            target.connect_timeout = float(self.connect_timeout)
        return target

    def command(self, target: ConnectTarget) -> list[str]:
        """The job's command line (no token in it)."""
        return [
            sys.executable,
            "-m",
            "airflow_dq_contracts.jobs.run_contract",
            *self.application_args,
            f"--remote={target.url}",
            f"--connect-timeout={target.connect_timeout:g}",
            f"--connection={self.conn_id}",
            # The operator reads every output table back from this worker with delta-rs, so this
            # worker sees them where the server writes them: the job commits results and registry here.
            "--shared-storage",
        ]

    def environment(self, target: ConnectTarget) -> dict[str, str]:
        """The job's environment: this worker's, without Connect/spark-submit leftovers, plus the token."""
        env = {key: value for key, value in os.environ.items() if key not in _INHERITED}
        env.pop(TOKEN_ENV, None)
        env.update(self.env_vars)
        if target.token:
            env[TOKEN_ENV] = target.token
        env.pop(SESSION_CONF_ENV, None)
        if self.session_conf:
            env[SESSION_CONF_ENV] = json.dumps(self.session_conf)
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def submit_job(self) -> dict[str, Any] | None:
        """Run the job to its end; its DONE payload, or :class:`ContractJobError` with its own words."""
        self.done = None
        self.job_error = None
        target = self.target()
        self.log.info(
            "Running the contract job as a Spark Connect client of %s (connection %s, connect timeout %g s)",
            target.url,
            self.conn_id,
            target.connect_timeout,
        )
        record = None
        if self.run_id:  # a retry first stops the job an earlier attempt left running here (hooks/orphans.py)
            record = JobProcessRecord(cache_dir() / "connect", self.run_id, self.log, "the Spark Connect job")
            record.reclaim(self.kill_grace)
        with self._lock:
            if self._killed:
                raise ContractJobError("the task was stopped (on_kill) before the job started", kind="submit_failed")
            self.process = subprocess.Popen(
                self.command(target),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=self.environment(target),
                start_new_session=True,  # on_kill signals the job and anything it started
            )
        if record is not None:
            record.remember(self.process.pid)
        try:
            return self._follow()
        finally:
            if record is not None:
                record.forget(self.process.pid)

    def _follow(self) -> dict[str, Any] | None:
        """Read the running job's output to its end: its DONE payload, or :class:`ContractJobError`."""
        assert self.process is not None
        tail: list[str] = []
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.rstrip("\n")
            parsed = parse_marker(line)
            if parsed is not None:
                marker, payload = parsed
                if marker == DONE_MARKER:
                    self.done = payload
                elif marker == ERROR_MARKER:
                    self.job_error = payload
            tail = (tail + [line])[-20:]
            self.log.info("%s", line)
        code = self.process.wait()
        if self.job_error is not None:
            raise ContractJobError(
                str(self.job_error.get("message")), kind=str(self.job_error.get("kind") or "run_failed")
            )
        if self._killed:
            raise ContractJobError("the task was stopped (on_kill) while the contract job ran", kind="submit_failed")
        if code != 0 or self.done is None:
            raise ContractJobError(
                f"the Spark Connect job exited with code {code} before reporting a result; last lines:\n"
                + "\n".join(tail),
                kind="submit_failed",
            )
        return self.done

    def on_kill(self) -> None:
        """SIGTERM the job (it interrupts its server-side operations), SIGKILL its group after ``kill_grace``."""
        with self._lock:
            self._killed = True
            process = self.process
        if process is None or process.poll() is not None:
            return
        self.log.info(
            "Stopping the Spark Connect job (pid %s): its server-side operations are interrupted", process.pid
        )
        try:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(timeout=self.kill_grace)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            try:
                reap_process_group(os.getpgid(process.pid), self.log, timeout=5)
            except Exception as exc:  # noqa: BLE001 - on_kill must not raise; say what was left
                self.log.warning("Stopping the Spark Connect job's process group: %s", exc)
