"""The job's Spark Connect session: a bounded connect, operation tags, and an interrupt on SIGTERM.

The Connect transport runs the job in a short Python process that is a Spark Connect *client* (no
``spark-submit``, no local JVM): :func:`remote_session` opens the session, :func:`interrupt_on_sigterm`
tags every operation of the run and interrupts them on the server when the process is told to stop.

* **Bounded connect.** PySpark's default retry policy retries an unreachable server for about ten
  minutes. :func:`remote_session` first waits for the gRPC channel to be ready for at most
  ``connect_timeout`` seconds (:class:`ConnectUnreachable` naming the address — never the token — if
  it is not), then installs a retry policy whose backoffs add up to about ``connect_timeout`` for the
  rest of the run, so a server lost mid-run fails the run in bounded time too.
* **Token.** Not on the command line (any local user can read argv): the submitter passes it in
  ``$DQ_CONTRACTS_CONNECT_TOKEN`` and it is added to the URL here, in memory.
* **Interrupts.** Every operation runs under the tag ``dq-contracts-<run id>`` (``spark.addTag``); on
  SIGTERM (the hook's ``on_kill``, an ``execution_timeout``) the handler calls
  ``spark.interruptTag(tag)`` — the server cancels the run's queries and writes — and raises
  :class:`RunInterrupted` in the job, which reports it and exits.

Example::

    spark = remote_session("sc://spark-connect:15002", connect_timeout=30)
    with interrupt_on_sigterm(spark, "dq-contracts-r1"):
        run_contract(spark, contract, spec)
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any
from urllib.parse import quote

from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "SESSION_CONF_ENV",
    "TOKEN_ENV",
    "ConnectUnreachable",
    "RunInterrupted",
    "apply_session_conf",
    "bounded_retry_policy",
    "interrupt_on_sigterm",
    "job_session",
    "redact",
    "remote_session",
    "run_scope",
    "run_tag",
    "session_conf_from_env",
    "with_token",
]

#: Seconds an unreachable server may take before the run fails (the operator's ``connect_timeout``).
DEFAULT_CONNECT_TIMEOUT = 30.0
#: The environment variable the submitter passes the connection's token in.
TOKEN_ENV = "DQ_CONTRACTS_CONNECT_TOKEN"
#: The environment variable the submitter passes the operator's ``spark_conf`` in (a JSON object):
#: set on the run's session, as far as a Connect session takes it.
SESSION_CONF_ENV = "DQ_CONTRACTS_SESSION_CONF"


class ConnectUnreachable(RuntimeError):
    """The Spark Connect server did not answer within the connect timeout (nothing was run)."""


class RunInterrupted(BaseException):
    """The job was told to stop (SIGTERM) and interrupted its operations on the server.

    A ``BaseException``, like ``KeyboardInterrupt``: raised wherever the job's main thread is when
    the signal comes, it must pass every ``except Exception`` that turns bad data into a check error
    or a fallback — a stopped run must stop, not start its fallback queries.
    """


def with_token(url: str, token: str | None) -> str:
    """``url`` with ``;token=…`` added (PySpark's parameter; it implies TLS). Unchanged without a token.

    >>> with_token("sc://h:15002/;user_id=ann", "s3cr=t")
    'sc://h:15002/;user_id=ann;token=s3cr%3Dt'
    >>> with_token("sc://h:15002", "t"), with_token("sc://h:15002/", "t")
    ('sc://h:15002/;token=t', 'sc://h:15002/;token=t')
    >>> with_token("sc://h:15002", None)
    'sc://h:15002'
    """
    if not token:
        return url
    base = url if "/" in url[len("sc://") :] else url + "/"
    separator = "" if base.endswith(";") else ";"
    return f"{base}{separator}token={quote(token, safe='')}"


def redact(url: str) -> str:
    """``url`` with any ``token=`` parameter's value hidden (for messages and logs).

    >>> redact("sc://h:1/;user_id=a;token=abc;use_ssl=true")
    'sc://h:1/;user_id=a;token=***;use_ssl=true'
    """
    head, _, params = url.partition("/;")
    if not params:
        return url
    kept = ["token=***" if part.startswith("token=") else part for part in params.split(";")]
    return f"{head}/;{';'.join(kept)}"


def run_tag(run_id: str) -> str:
    """The operation tag of one run (Spark's tags take no commas).

    >>> run_tag("dq-3f2a,1")
    'dq-contracts-dq-3f2a_1'
    """
    return "dq-contracts-" + run_id.replace(",", "_")


def bounded_retry_policy(timeout: float) -> Any:
    """PySpark's default retry policy with its retries cut so that their backoffs add up to about ``timeout``."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    initial_ms, multiplier = 50.0, 4.0
    budget_ms = max(timeout, 0.0) * 1000.0
    max_backoff_ms = max(initial_ms, min(60_000.0, budget_ms / 2))
    retries, spent, backoff = 0, 0.0, initial_ms
    while spent + backoff <= budget_ms:
        spent += backoff
        retries += 1
        backoff = min(backoff * multiplier, max_backoff_ms)
    return DefaultPolicy(
        max_retries=retries,
        initial_backoff=int(initial_ms),
        backoff_multiplier=multiplier,
        max_backoff=int(max_backoff_ms),
        max_server_retry_delay=int(max_backoff_ms),
    )


def remote_session(url: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, name: str | None = None) -> SparkSession:
    """A Spark Connect session on ``url`` (the token from :data:`TOKEN_ENV`), or :class:`ConnectUnreachable`.

    ``name`` labels the error (the Airflow connection id, say).
    """
    import grpc
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    full_url = with_token(url, os.environ.get(TOKEN_ENV))
    label = f"{name} ({redact(url)})" if name else redact(url)
    try:
        builder = DefaultChannelBuilder(full_url)
    except Exception as exc:  # noqa: BLE001 - PySpark's own URL checks: one readable line
        raise ConnectUnreachable(f"Spark Connect {label}: not a valid sc:// URL: {exc}") from None
    channel = builder.toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=connect_timeout)
    except grpc.FutureTimeoutError:
        raise ConnectUnreachable(
            f"Spark Connect server {label} at {builder.endpoint} did not answer within {connect_timeout:g} s "
            "(is it running, and is the address right?); nothing was run"
        ) from None
    finally:
        # Closing a channel that was watched waits out gRPC's connectivity poll (0.2 s): off the run's path.
        threading.Thread(target=channel.close, name="dq-connect-probe-close", daemon=True).start()
    spark = SparkSession.builder.remote(full_url).getOrCreate()
    client: Any = getattr(spark, "client", None)
    if client is not None and hasattr(client, "set_retry_policies"):
        client.set_retry_policies([bounded_retry_policy(connect_timeout)])
    return spark


def apply_session_conf(spark: SparkSession, conf: dict[str, str]) -> list[str]:
    """Set ``conf`` on the Connect session; one note per setting the server refused (it stays unset).

    A Connect client can set the session's runtime settings (SQL, Delta, ``spark.dqcontracts.*``);
    static and core ones (``spark.executor.memory``, ``spark.jars``) are the server's, and its refusal
    is reported, not raised: the same ``spark_conf`` serves a spark-submit task and a Connect one.
    A note names the key, never the value.
    """
    refused = []
    for key, value in conf.items():
        try:
            spark.conf.set(key, value)
        except Exception as exc:  # noqa: BLE001 - the server's refusal (a static or core setting): noted
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            if len(value) >= 4:  # a refusal may quote the value, and a value may be a secret
                reason = reason.replace(value, "***")
            refused.append(f"Spark conf {key}: not set on the Spark Connect session, the server refused it: {reason}")
    return refused


def session_conf_from_env() -> dict[str, str]:
    """The settings the submitter passed in :data:`SESSION_CONF_ENV` (empty when none or unreadable)."""
    import json

    text = os.environ.get(SESSION_CONF_ENV, "")
    try:
        conf = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(key): str(value) for key, value in conf.items()} if isinstance(conf, dict) else {}


@contextlib.contextmanager
def interrupt_on_sigterm(spark: SparkSession, tag: str) -> Iterator[None]:
    """Run the block's operations under ``tag``; SIGTERM interrupts them on the server and raises :class:`RunInterrupted`."""
    spark.addTag(tag)

    def stop(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(Exception):  # the server may be gone already: still stop
            spark.interruptTag(tag)
        raise RunInterrupted(f"stopped by signal {signum}: the run's operations (tag {tag}) were interrupted")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        with contextlib.suppress(Exception):
            spark.removeTag(tag)


def job_session(
    app_name: str, remote: str | None = None, connect_timeout: float | None = None, name: str | None = None
) -> SparkSession:
    """The job's session: a Connect client on ``remote`` (bounded connect), else the spark-submit session.

    Inside spark-submit the master, jars and conf come from the command line, so the local session is
    taken as built (no local tuning: it would be wrong on a cluster).
    """
    if remote:
        timeout = DEFAULT_CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        return remote_session(remote, timeout, name=name)
    from airflow_dq_contracts.engine.session import get_spark

    return get_spark(app_name=app_name, local_tuning=False)


def run_scope(spark: SparkSession, run_id: str | None, remote: bool) -> contextlib.AbstractContextManager[Any]:
    """What a run executes inside: on Connect, its operations tagged and interrupted on SIGTERM, and the
    server's session released at the end; with spark-submit, nothing.

    (A spark-submit driver is stopped by killing its process group: the JVM is local.)
    """
    if not remote:
        return contextlib.nullcontext()
    scope = contextlib.ExitStack()
    # Released at the end (last out): the server drops the session's state now, not after its idle timeout.
    scope.callback(spark.stop)
    scope.enter_context(interrupt_on_sigterm(spark, run_tag(run_id or "run")))
    return scope
