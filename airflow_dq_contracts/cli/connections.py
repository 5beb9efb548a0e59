"""The commands' Airflow connections: ``--storage-conn-id`` and ``--conn-id`` (DESIGN §10), read as the operator reads them.

``--storage-conn-id NAME`` (``run``, ``history``, ``report``, ``suggest``) names a storage connection
(``aws``, ``google_cloud_platform``, ``wasb``/``adls``; fields: :mod:`airflow_dq_contracts.storage.connections`).
It is looked up the way a task looks it up — Airflow's secrets backends, ``AIRFLOW_CONN_<NAME>``, the metadata
database — by :func:`airflow_dq_contracts.hooks.storage.get_storage_credentials`; ``--storage-option KEY=VALUE``
items go on top of it. Without the option, the standard ``AWS_*`` environment and ``--storage-option`` apply
as before. ``--conn-id NAME`` (``run``, ``suggest``) names a ``spark_connect`` connection: the run becomes a
Spark Connect client of its server, as ``--remote`` (the token stays in this process's environment).

Both need Apache Airflow installed; without it they stop with one line saying so. Every failure is one
line naming the option, the location and what was tried — never a traceback, never a secret.

When nothing gives S3 credentials (no key in the environment or the options, no profile, no web identity,
no connection), the EC2 instance metadata service is not probed (``AWS_EC2_METADATA_DISABLED=true`` while the
command runs): off EC2 the probe only prints the AWS SDK's warnings before failing. On EC2 with an instance
role, set ``AWS_EC2_METADATA_DISABLED=false`` (or name a keyless ``aws`` connection) to use the role.

Example::

    add_storage_conn_argument(parser)                  # in a subcommand's add_parser
    with command_storage(args, "history", [args.results_table]) as storage:
        rows = open_results_store(TableLocation.resolve(args.results_table, storage_options=storage.options))
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from airflow_dq_contracts.storage.s3 import (
    ACCESS_KEY_ID,
    cli_storage_options,
    is_s3,
    parse_storage_options,
)

STORAGE_CONN_OPTION = "--storage-conn-id"
CONN_ID_OPTION = "--conn-id"
#: The AWS SDKs' switch for the instance metadata service (read by delta-rs's credential chain).
IMDS_DISABLED = "AWS_EC2_METADATA_DISABLED"
#: Environment variables that give the AWS default chain something other than the instance metadata.
_OTHER_AWS_SOURCES = (
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CREDENTIALS = re.compile(r"credential|IMDS|no credentials|access key|Forbidden|AccessDenied|\b40[13]\b", re.I)


class CliConnectionError(ValueError):
    """A connection option that cannot be used: one line, naming the option (never a secret)."""


def add_storage_conn_argument(parser: argparse.ArgumentParser) -> None:
    """``--storage-conn-id NAME``: credentials for the command's tables from an Airflow connection."""
    parser.add_argument(
        STORAGE_CONN_OPTION,
        dest="storage_conn_id",
        metavar="NAME",
        default=None,
        help="read the tables with this Airflow storage connection (aws, google_cloud_platform, wasb/adls), "
        "looked up as a task does (secrets backends, AIRFLOW_CONN_<NAME>); needs Apache Airflow; "
        "--storage-option items go on top",
    )


def add_conn_id_argument(parser: Any) -> None:
    """``--conn-id NAME``: a ``spark_connect`` Airflow connection to run on (``parser``: a parser or a group)."""
    parser.add_argument(
        CONN_ID_OPTION,
        dest="conn_id",
        metavar="NAME",
        default=None,
        help="run as a Spark Connect client of the server this Airflow connection (type spark_connect) names, "
        "as --remote does; its token never leaves this process's environment; needs Apache Airflow",
    )


# --------------------------------------------------------------------------------------- Airflow, quietly


@contextlib.contextmanager
def _quiet_airflow() -> Iterator[None]:
    """Airflow imported for a lookup without its chatter (start-up INFO lines, deprecation warnings): a command's
    output is its own lines. Airflow reads its logging level once, when it is first imported."""
    name = "AIRFLOW__LOGGING__LOGGING_LEVEL"
    saved = os.environ.get(name)
    first = "airflow" not in sys.modules
    if first:
        os.environ[name] = "ERROR"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if first and saved is None:
            os.environ.pop(name, None)
        elif first and saved is not None:
            os.environ[name] = saved


def _needs_airflow(option: str, exc: ImportError) -> CliConnectionError:
    missing = exc.name or "airflow"
    return CliConnectionError(
        f"{option} reads an Airflow connection and needs Apache Airflow installed ({missing} cannot be imported: "
        "pip install apache-airflow); without Airflow, give credentials in the standard environment "
        "(AWS_ACCESS_KEY_ID …) or with --storage-option"
    )


def _looked_up(conn_id: str) -> str:
    return f"looked up as Airflow does: its secrets backends, AIRFLOW_CONN_{conn_id.upper()}, its metadata database"


def storage_credentials(conn_id: str) -> Any:
    """The storage connection ``conn_id`` as :class:`~airflow_dq_contracts.storage.connections.StorageCredentials`.

    :raises CliConnectionError: Airflow missing, the connection not defined, of another type or incomplete.
    """
    try:
        with _quiet_airflow():
            from airflow_dq_contracts.hooks import storage as hooks_storage

            warnings.simplefilter("ignore")  # again: importing Airflow installs filters of its own
            return hooks_storage.get_storage_credentials(conn_id)
    except ImportError as exc:
        raise _needs_airflow(STORAGE_CONN_OPTION, exc) from None
    except ValueError as exc:  # StorageConnectionError (both worlds' are ValueErrors): names the connection
        raise CliConnectionError(f"{STORAGE_CONN_OPTION} {conn_id}: {exc} ({_looked_up(conn_id)})") from None


def connect_target(conn_id: str) -> Any:
    """The ``spark_connect`` connection ``conn_id`` as a ``ConnectTarget`` (URL without token, token, timeout).

    :raises CliConnectionError: Airflow missing, the connection not defined or not a ``spark_connect`` one.
    """
    try:
        with _quiet_airflow():
            from airflow_dq_contracts.hooks import spark_connect

            warnings.simplefilter("ignore")  # again: importing Airflow installs filters of its own
            hook = spark_connect.ContractConnectHook(conn_id=conn_id)
            try:
                connection = hook.get_connection(conn_id)
            except Exception as exc:  # noqa: BLE001 - not found or a backend error: one line naming it
                raise CliConnectionError(
                    f"{CONN_ID_OPTION} {conn_id}: connection {conn_id!r} cannot be read: {exc} ({_looked_up(conn_id)})"
                ) from None
            if connection.conn_type != spark_connect.CONNECT_CONN_TYPE:
                raise CliConnectionError(
                    f"{CONN_ID_OPTION} {conn_id}: connection {conn_id!r} has type {connection.conn_type!r}; "
                    f"{CONN_ID_OPTION} takes a {spark_connect.CONNECT_CONN_TYPE} connection "
                    f"(for storage credentials: {STORAGE_CONN_OPTION})"
                )
            try:
                return hook.target()
            except Exception as exc:  # noqa: BLE001 - AirflowException naming the connection's bad field
                raise CliConnectionError(f"{CONN_ID_OPTION} {conn_id}: {exc}") from None
    except ImportError as exc:
        raise _needs_airflow(CONN_ID_OPTION, exc) from None


# --------------------------------------------------------------------------------------- one command's storage


@dataclasses.dataclass(frozen=True)
class CommandStorage:
    """What a command reaches its tables with: delta-rs ``options`` (None: the environment's own), Spark
    settings without secrets (``spark_conf``), and ``tried`` — what was used, for a failure's message."""

    options: dict[str, str] | None
    spark_conf: Mapping[str, str]
    tried: str
    env: Mapping[str, str]

    def failure(self, exc: BaseException, location: str | None = None) -> str:
        """One line for a store error ``exc`` at ``location``: the credentials failure said with what was tried,
        anything else as its first line (delta-rs's multi-line chains folded)."""
        text = _ANSI.sub("", str(exc))
        lines = [line.strip().lstrip("↳").strip() for line in text.splitlines() if line.strip()]
        first = "; ".join(lines[:4])[:600]
        if not _CREDENTIALS.search(text):
            return first
        where = getattr(exc, "location", None) or location or "the table"
        # delta-rs's chain: "Kernel error -> …", then why, most telling first ("no credentials found in chain").
        said = [line.removesuffix(". Attempted:") for line in lines if _CREDENTIALS.search(line) and "->" not in line]
        said.sort(key=lambda line: "no credentials" not in line.lower())
        detail = said[0][:300] if said else first
        return f"cannot read {where}: the credentials are missing or refused ({detail}); tried: {self.tried}"


def _aws_sources(options: Mapping[str, str] | None, env: Mapping[str, str]) -> bool:
    """Whether anything gives AWS credentials other than the instance metadata service."""
    names = {str(k).upper() for k in (options or {})}
    return ACCESS_KEY_ID in names or any(env.get(name) for name in (ACCESS_KEY_ID, *_OTHER_AWS_SOURCES))


def resolve_storage(args: argparse.Namespace, locations: Iterable[str | None] = ()) -> CommandStorage:
    """The command's :class:`CommandStorage` from ``--storage-conn-id`` / ``--storage-option`` and the environment.

    ``locations`` are the command's table locations (to check a connection's storage against, and to know
    whether S3 is involved). Raises :class:`CliConnectionError` or ``ValueError`` (a malformed item), one line.
    """
    items = getattr(args, "storage_option", None) or []
    conn_id = getattr(args, "storage_conn_id", None)
    places = [str(place) for place in locations if place]
    env: dict[str, str] = {}
    if conn_id:
        creds = storage_credentials(conn_id)
        for place in places:
            try:
                creds.check_location(place)
            except ValueError as exc:
                raise CliConnectionError(f"{STORAGE_CONN_OPTION} {conn_id}: {exc}") from None
        options: dict[str, str] | None = creds.storage_options(parse_storage_options(items))
        tried = f"storage connection {conn_id!r} (type {creds.conn_type})"
        env.update(creds.env)
        env.update({str(k).upper(): str(v) for k, v in (options or {}).items()})
        spark_conf: Mapping[str, str] = dict(creds.spark_conf)
    else:
        options = cli_storage_options(items)
        spark_conf = {}
        given = "--storage-option items" if items else "no --storage-option"
        keys = "AWS_ACCESS_KEY_ID set" if os.environ.get(ACCESS_KEY_ID) else "no AWS_ACCESS_KEY_ID"
        tried = f"the environment ({keys}), {given}, no {STORAGE_CONN_OPTION}"
    unconfigured = not conn_id and not _aws_sources(options, os.environ) and IMDS_DISABLED not in os.environ
    if unconfigured and any(is_s3(place) for place in places):
        env[IMDS_DISABLED] = "true"
        tried += f"; the instance metadata service not probed ({IMDS_DISABLED}=false allows it)"
    return CommandStorage(options, spark_conf, tried, env)


@contextlib.contextmanager
def command_environment(storage: CommandStorage) -> Iterator[CommandStorage]:
    """This process's environment with ``storage.env`` while the command runs (what delta-rs, the AWS SDK and a
    Spark JVM started meanwhile read), restored afterwards."""
    from airflow_dq_contracts.storage.s3 import environment_overlay

    with environment_overlay(storage.env):
        yield storage


def apply_spark_connection(args: argparse.Namespace) -> dict[str, str]:
    """Turn ``--conn-id`` into ``args.remote`` (and a default ``args.connect_timeout``); returns the environment
    the session needs (the token), for :func:`command_environment`. Nothing to do without ``--conn-id``."""
    conn_id = getattr(args, "conn_id", None)
    if not conn_id:
        return {}
    if getattr(args, "remote", None):
        raise CliConnectionError(f"give {CONN_ID_OPTION} or --remote, not both")
    target = connect_target(conn_id)
    args.remote = target.url
    if getattr(args, "connect_timeout", None) is None:
        args.connect_timeout = target.connect_timeout
    from airflow_dq_contracts.hooks.spark_connect import TOKEN_ENV

    return {TOKEN_ENV: target.token} if target.token else {}


@contextlib.contextmanager
def spark_command(args: argparse.Namespace, locations: Iterable[str | None] = ()) -> Iterator[CommandStorage]:
    """For ``run`` and ``suggest``: the connections resolved, the Spark settings added to ``args.conf``,
    the environment set while the command runs. Raises :class:`CliConnectionError` / ``ValueError`` first."""
    token_env = apply_spark_connection(args)
    storage = resolve_storage(args, locations)
    if storage.spark_conf:
        args.conf = [f"{key}={value}" for key, value in storage.spark_conf.items()] + list(
            getattr(args, "conf", []) or []
        )
    storage = dataclasses.replace(storage, env={**storage.env, **token_env})
    with command_environment(storage):
        yield storage


__all__ = [
    "CONN_ID_OPTION",
    "STORAGE_CONN_OPTION",
    "CliConnectionError",
    "CommandStorage",
    "add_conn_id_argument",
    "add_storage_conn_argument",
    "apply_spark_connection",
    "command_environment",
    "connect_target",
    "resolve_storage",
    "spark_command",
    "storage_credentials",
]
