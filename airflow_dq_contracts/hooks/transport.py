"""The transport seam: how a contract job reaches Spark, chosen by the connection's type.

A transport is a factory turning a :class:`JobRequest` (the job's arguments and the task's Spark
settings, transport-neutral) into a :class:`JobHook` — anything with ``submit_job()`` (the job's DONE
payload; :class:`~airflow_dq_contracts.hooks.errors.ContractJobError` with the job's message) and
``on_kill()``. Transports are registered by connection type (:func:`register_transport`):

* ``spark_connect`` → :class:`~airflow_dq_contracts.hooks.spark_connect.ContractConnectHook` (the job
  as a Spark Connect client subprocess);
* any other type, or a connection that does not exist → the default,
  :class:`~airflow_dq_contracts.hooks.contract_submit.ContractSubmitHook` (``spark-submit``).

The operator only calls :func:`build_job_hook`; a new transport is added by registering it, without
touching the operator. No pyspark here (the Airflow side).

Example::

    register_transport("my_cluster", lambda request: MyClusterHook(request.conn_id, request.application_args))
    hook = build_job_hook(JobRequest(conn_id="my_cluster_default", application_args=["--spec=..."]))
    payload = hook.submit_job()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from airflow_dq_contracts.hooks.contract_submit import ContractSubmitHook
from airflow_dq_contracts.hooks.spark_connect import CONNECT_CONN_TYPE, ContractConnectHook
from airflow_dq_contracts.hooks.storage import StorageCredentials
from airflow_dq_contracts.version_compat import BaseHook

__all__ = [
    "DEFAULT_TRANSPORT",
    "JobHook",
    "JobRequest",
    "Transport",
    "build_job_hook",
    "connection_type",
    "register_transport",
    "transport_for",
]


class JobHook(Protocol):
    """What runs a contract job for the operator: submit it and wait, or stop it."""

    def submit_job(self) -> dict[str, Any] | None:
        """Run the job to its end: its DONE payload (None when it printed none); ``ContractJobError`` on failure."""
        ...

    def on_kill(self) -> None:
        """Stop the running job (the task was killed or timed out)."""
        ...


@dataclasses.dataclass(frozen=True)
class JobRequest:
    """One job for a transport: what the job is told, and the task's Spark settings (each transport uses
    what it understands: the Connect transport ignores packages and jars, spark-submit uses them all).

    >>> JobRequest(conn_id="spark_default", application_args=["--spec=e30="], name="dq-contracts-check").files
    ()
    """

    conn_id: str
    application_args: Sequence[str] = ()
    files: Sequence[str] = ()
    warehouse: str | None = None
    run_id: str | None = None
    spark_conf: Mapping[str, str] = dataclasses.field(default_factory=dict)
    packages: str | list[str] | None = None
    jars: str | list[str] | None = None
    name: str = "dq-contracts"
    storage: StorageCredentials | None = None
    s3: bool = False
    #: Any other ``SparkSubmitHook`` argument given to the operator (``driver_memory``, ``files``…).
    submit_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)


#: A transport: builds the hook that runs one job.
Transport = Callable[[JobRequest], JobHook]


def _spark_submit(request: JobRequest) -> JobHook:
    """The default transport: ``spark-submit`` of the packaged job."""
    kwargs = dict(request.submit_kwargs)
    extra_files = kwargs.pop("files", None)
    files = list(request.files) + ([extra_files] if isinstance(extra_files, str) else list(extra_files or []))
    return ContractSubmitHook(
        conn_id=request.conn_id,
        application_args=list(request.application_args),
        conf=dict(request.spark_conf),
        packages=request.packages,
        jars=request.jars,
        files=files or None,
        name=request.name,
        warehouse=request.warehouse,
        run_id=request.run_id,
        storage=request.storage,
        s3=request.s3,
        **kwargs,
    )


def _spark_connect(request: JobRequest) -> JobHook:
    """The Spark Connect transport: the job as a Connect client subprocess; ``spark_conf`` set on its session."""
    return ContractConnectHook(
        conn_id=request.conn_id,
        application_args=request.application_args,
        run_id=request.run_id,
        session_conf=request.spark_conf,
    )


#: The transport of a connection whose type no transport is registered for.
DEFAULT_TRANSPORT: Transport = _spark_submit
_TRANSPORTS: dict[str, Transport] = {CONNECT_CONN_TYPE: _spark_connect}


def _normalised(conn_type: str | None) -> str:
    return str(conn_type or "").strip().lower().replace("-", "_")


def register_transport(conn_type: str, transport: Transport) -> None:
    """Run the jobs of connections of type ``conn_type`` through ``transport`` (replaces an earlier one).

    >>> register_transport("dq_doctest", lambda request: None)  # doctest: +ELLIPSIS
    >>> transport_for("dq-doctest") is not DEFAULT_TRANSPORT
    True
    """
    key = _normalised(conn_type)
    if not key:
        raise ValueError("a transport needs a connection type")
    _TRANSPORTS[key] = transport


def transport_for(conn_type: str | None) -> Transport:
    """The transport registered for ``conn_type`` (``-`` and ``_`` alike), else :data:`DEFAULT_TRANSPORT`.

    >>> transport_for("spark_connect") is DEFAULT_TRANSPORT, transport_for("spark") is DEFAULT_TRANSPORT
    (False, True)
    """
    return _TRANSPORTS.get(_normalised(conn_type), DEFAULT_TRANSPORT)


def connection_type(conn_id: str) -> str | None:
    """The type of connection ``conn_id`` (None when it does not exist: the default transport will say so)."""
    try:
        connection = BaseHook.get_connection(conn_id)
    except Exception:  # noqa: BLE001 - AirflowNotFoundException and friends: not ours to decide, the default transport's hook will say
        return None
    return connection.conn_type


def build_job_hook(request: JobRequest) -> JobHook:
    """The hook that runs ``request``'s job, by the type of its connection (:func:`transport_for`)."""
    return transport_for(connection_type(request.conn_id))(request)
