"""Fencing of a run's attempts: a late write of an earlier attempt is refused, never a duplicate.

When the Airflow worker running a check dies (SIGKILL, OOM, a node lost), the job it started may go
on writing while Airflow's retry starts a second run with the same run id. The retry stops such an
orphan when it can reach it (the submit hook, same host); fencing holds when it cannot: every write
of a run's results, quarantine and valid rows carries the **attempt** (Airflow's ``try_number``,
:attr:`~airflow_dq_contracts.runspec.RunSpec.attempt`) as a Delta transaction identifier — the
application id :func:`app_id` (one per run id), the version the attempt — in the same commit:

* delta-rs commits carry it as ``CommitProperties(app_transactions=[Transaction(app_id, attempt)])``;
* Spark's Delta writes carry it as the writer options ``txnAppId`` / ``txnVersion`` (Delta skips a
  write whose version is not above the recorded one, and two concurrent commits of the same
  application id conflict: the loser retries and looks again).

Before committing, every writer reads the version recorded for the run in that table
(:func:`recorded_attempt`, delta-rs ``DeltaTable.transaction_version``) and refuses with
:class:`StaleAttemptError` — naming the newer attempt — when a newer attempt has written there. The
check and the commit are atomic under the local commit lock on a local table, and by Delta's
conflict detection of the application id elsewhere. A run without an attempt (``dq-contracts run``,
the Python API) carries no transaction identifier and is never refused, as before.

Plain Python plus ``deltalake`` (imported lazily): no Spark, no Airflow.

>>> app_id("dq-3f2a")
'airflow-dq-contracts:dq-3f2a'
>>> str(StaleAttemptError("results table '/wh/r'", "dq-1", 1, 2))  # doctest: +NORMALIZE_WHITESPACE
"results table '/wh/r': attempt 1 of run dq-1 is fenced off: attempt 2 of the same run has written this
table already; this attempt's write is refused (a retry superseded it)"
"""

from __future__ import annotations

import logging
from typing import Any

from airflow_dq_contracts.storage.s3 import env_delta_options
from airflow_dq_contracts.store.delta import StoreError, open_table

__all__ = [
    "APP_ID_PREFIX",
    "StaleAttemptError",
    "app_id",
    "app_transactions",
    "check_attempt",
    "check_location",
    "commit_properties",
    "recorded_attempt",
    "spark_writer_options",
]

log = logging.getLogger(__name__)

#: The Delta application id of a run's writes is this prefix and the run id.
APP_ID_PREFIX = "airflow-dq-contracts:"


class StaleAttemptError(StoreError):
    """An earlier attempt of a run tried to write after a newer attempt of the same run wrote the table.

    ``attempt`` is the refused one, ``newer`` the attempt recorded in the table.
    """

    def __init__(self, where: str, run_id: str, attempt: int, newer: int) -> None:
        super().__init__(
            f"{where}: attempt {attempt} of run {run_id} is fenced off: attempt {newer} of the same run has "
            "written this table already; this attempt's write is refused (a retry superseded it)"
        )
        self.run_id, self.attempt, self.newer = run_id, attempt, newer


def app_id(run_id: str) -> str:
    """The Delta transaction application id of ``run_id``'s writes (see the module docs)."""
    return APP_ID_PREFIX + run_id


def recorded_attempt(table: Any, run_id: str) -> int | None:
    """The attempt recorded for ``run_id`` in a ``deltalake.DeltaTable`` (None: no attempt wrote it yet)."""
    version = table.transaction_version(app_id(run_id))
    return None if version is None else int(version)


def check_attempt(table: Any, where: str, run_id: str, attempt: int | None) -> None:
    """Refuse (:class:`StaleAttemptError`) a write of ``attempt`` when a newer attempt of ``run_id`` wrote ``table``.

    ``table`` is a ``deltalake.DeltaTable`` at the state the commit will be made on; ``attempt`` None
    (no attempt given) is never refused.
    """
    if attempt is None:
        return
    recorded = recorded_attempt(table, run_id)
    if recorded is not None and recorded > attempt:
        error = StaleAttemptError(where, run_id, attempt, recorded)
        log.error("%s", error)
        raise error


def check_location(location: str | None, where: str, run_id: str, attempt: int | None) -> None:
    """:func:`check_attempt` on the table at ``location``, read by delta-rs here (S3: the standard AWS_* environment).

    Nothing to check without an attempt, for a catalog name (``location`` None), a missing table or one
    delta-rs cannot open from here: Spark's Delta then applies the same rule itself to the writer's
    ``txnAppId``/``txnVersion`` (a stale write is skipped).
    """
    if attempt is None or location is None:
        return
    uri = "s3://" + location.split("://", 1)[1] if location.lower().startswith(("s3a://", "s3n://")) else location
    try:
        table = open_table(uri, storage_options=env_delta_options(uri) or None)
    except Exception as exc:  # noqa: BLE001 - missing, unreachable, no deltalake: Delta's own txn check decides
        log.debug("%s: attempt not checked with delta-rs (%s)", where, exc)
        return
    check_attempt(table, where, run_id, attempt)


def commit_properties(tag: str | None, run_id: str, attempt: int | None) -> Any:
    """delta-rs ``CommitProperties`` of a commit tagged ``tag`` (``userMetadata``) carrying ``attempt`` of ``run_id``."""
    from deltalake import CommitProperties

    metadata = {"userMetadata": tag} if tag is not None else None
    return CommitProperties(custom_metadata=metadata, app_transactions=app_transactions(run_id, attempt))


def app_transactions(run_id: str, attempt: int | None) -> list[Any] | None:
    """The delta-rs ``app_transactions`` of a commit of ``attempt`` of ``run_id`` (None without an attempt)."""
    if attempt is None:
        return None
    from deltalake import Transaction

    return [Transaction(app_id(run_id), int(attempt))]


def spark_writer_options(run_id: str, attempt: int | None) -> dict[str, str]:
    """Spark's Delta writer options carrying ``attempt`` of ``run_id`` (empty without an attempt).

    >>> spark_writer_options("dq-1", 2)
    {'txnAppId': 'airflow-dq-contracts:dq-1', 'txnVersion': '2'}
    >>> spark_writer_options("dq-1", None)
    {}
    """
    if attempt is None:
        return {}
    return {"txnAppId": app_id(run_id), "txnVersion": str(int(attempt))}
