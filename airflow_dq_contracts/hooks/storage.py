"""``storage_conn_id``: look a storage connection up, map it, mask its secrets — the Airflow side of credentials.

The mapping from a connection's fields to each consumer's vocabulary (delta-rs options, the job's
environment, Spark conf without secrets) is plain Python in :mod:`airflow_dq_contracts.storage.connections`
(the connection types and their fields are documented there). This module adds what needs Airflow:
the lookup (any secrets backend, ``AIRFLOW_CONN_*``), Airflow's secrets masker over every secret, and
an error that fails the task at once, naming the connection. The Amazon, Google and Azure providers
stay optional: the connection's fields are read here, their hooks are never imported.

Where the credentials go (never the DAG file, a command line, XCom, the results or the trigger table):

* delta-rs on the Airflow side — sensors, the operator's read-back, the report, history:
  :func:`resolve_storage_options`, or the table resolved once with them, :func:`table_location`;
* the job's process: its environment (:attr:`StorageCredentials.env`, given to spark-submit by
  :class:`~airflow_dq_contracts.hooks.contract_submit.ContractSubmitHook` ``storage_env``);
* a deferred sensor's trigger: only the connection's *name*; the triggerer looks it up itself.

Example::

    creds = get_storage_credentials("lake")       # masked; StorageConnectionError names "lake"
    options = resolve_storage_options("lake", location="s3://lake/orders")
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_dq_contracts.storage import connections
from airflow_dq_contracts.storage.connections import StorageCredentials, credentials_from_connection
from airflow_dq_contracts.storage.locations import TableLocation
from airflow_dq_contracts.store import access_refused
from airflow_dq_contracts.version_compat import AirflowFailException, BaseHook, mask_secret


class StorageConnectionError(AirflowFailException, connections.StorageConnectionError):
    """A storage connection that is not defined, of the wrong type or incomplete — the task fails at once
    (no retry: it will not heal). The message always names the connection."""


def mask_credentials(creds: StorageCredentials) -> None:
    """Hide every secret of ``creds`` in Airflow's logs (the task process and the supervisor)."""
    for secret in creds.secrets:
        mask_secret(secret)


def get_storage_credentials(conn_id: str) -> StorageCredentials:
    """Look ``conn_id`` up (Airflow's secrets backends, ``AIRFLOW_CONN_*``), map it, mask its secrets.

    :raises StorageConnectionError: not defined, not a storage type, or incomplete — naming it.
    """
    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # noqa: BLE001 - not found or a backend error: one error naming the connection
        raise StorageConnectionError(f"storage connection {conn_id!r} cannot be read: {exc}") from None
    try:
        creds = credentials_from_connection(conn)
    except connections.StorageConnectionError as exc:
        raise StorageConnectionError(str(exc)) from None
    mask_credentials(creds)
    return creds


def resolve_storage_options(
    storage_conn_id: str | None, storage_options: Mapping[str, str] | None = None, *, location: str | None = None
) -> dict[str, str] | None:
    """delta-rs options for a task: the connection's (looked up, masked) with a raw ``storage_options`` on top.

    None when neither is given (local paths, or credentials from the worker's own environment).
    ``location`` (when given) must be on the connection's storage.
    """
    if not storage_conn_id:
        return dict(storage_options) if storage_options else None
    creds = get_storage_credentials(storage_conn_id)
    check_location(creds, location)
    return creds.storage_options(storage_options)


def table_location(
    location: str, creds: StorageCredentials | None = None, storage_options: Mapping[str, str] | None = None
) -> TableLocation:
    """``location`` (a path or URI already resolved) as the value the readers are handed, once: normalised, reached
    with the connection's options (``creds``, its storage checked) over the raw ``storage_options``.

    >>> table_location("/lake/orders/", storage_options={"timeout": "5s"}).uri
    '/lake/orders'
    """
    where = TableLocation.at(location)
    if creds is None:
        return where.with_options(storage_options)
    check_location(creds, where.uri)
    return where.with_options(creds.storage_options(storage_options))


def check_location(creds: StorageCredentials, location: str | None) -> None:
    """:meth:`StorageCredentials.check_location`, failing the task (no retry) instead of a ``ValueError``."""
    try:
        creds.check_location(location)
    except connections.StorageConnectionError as exc:
        raise StorageConnectionError(str(exc)) from None


def check_access(
    creds: StorageCredentials,
    location: TableLocation | str | None,
    storage_options: Mapping[str, str] | None = None,
) -> None:
    """Fail (naming the connection) when the store refuses these credentials at ``location`` (a URI).

    A wrong secret otherwise looks like "no table there" to a sensor, and would reach the job.
    Local paths and table names are not probed. A :class:`TableLocation` (:func:`table_location`) is
    probed with the options it carries.
    """
    if isinstance(location, TableLocation):
        options = location.options
        location = location.uri
    else:
        options = creds.storage_options(storage_options)
    if not location or "://" not in str(location):
        return
    reason = access_refused(str(location), options)
    if reason:
        raise StorageConnectionError(
            f"storage connection {creds.conn_id!r} (type {creds.conn_type}) is refused at {location}: {reason}"
        )


class StorageConnectionHook(BaseHook):
    """The hook behind ``storage_conn_id`` (the providers' shape: a connection name in, credentials out).

    Example::

        creds = StorageConnectionHook("lake").get_credentials()
    """

    conn_name_attr = "storage_conn_id"
    hook_name = "Data contracts storage"

    def __init__(self, storage_conn_id: str) -> None:
        super().__init__()
        self.storage_conn_id = storage_conn_id

    def get_credentials(self) -> StorageCredentials:
        """The connection's credentials, masked (see :func:`get_storage_credentials`)."""
        return get_storage_credentials(self.storage_conn_id)


__all__ = [
    "StorageConnectionError",
    "StorageConnectionHook",
    "StorageCredentials",
    "check_access",
    "check_location",
    "get_storage_credentials",
    "mask_credentials",
    "resolve_storage_options",
    "table_location",
]
