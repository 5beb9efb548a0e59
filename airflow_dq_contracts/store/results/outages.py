"""What the results store's delta-rs commits say about an object store that did not answer, or a lost race.

Beside :mod:`~airflow_dq_contracts.store.results.driver_commits` (which calls these), so its commits stay
short: an outage becomes ONE located line (:func:`raise_if_outage`: the table, the store's state, the
phase), and a commit that landed after another writer took its version is said at INFO
(:func:`note_lost`) — what the concurrency tests count. Plain Python: no pyspark, no Airflow.

>>> note_lost("s3://lake/r", "r1", -1, 0)
0
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.storage.s3 import is_s3, outage
from airflow_dq_contracts.store.delta import StoreError

__all__ = ["note_lost", "raise_if_outage", "registry_outage"]

log = logging.getLogger("airflow_dq_contracts.store.results.driver_commits")


def raise_if_outage(exc: BaseException, what: str, location: str, doing: str) -> None:
    """A :class:`StoreError` ``<what> table '<location>': <the store's state> while <doing>`` when ``exc``
    says the object store did not answer (or kept throttling); nothing otherwise.

    >>> raise_if_outage(OSError("Error performing PUT … after 5 retries - Connection reset by peer"),
    ...                 "results", "s3://lake/r", "committing run r1")
    Traceback (most recent call last):
    ...
    airflow_dq_contracts.storage.locations.StoreError: results table 's3://lake/r': the object store did not answer (after 5 retries) while committing run r1
    """
    down = outage(exc)
    if down is not None:
        raise StoreError(f"{what} table {location!r}: {down} while {doing}", location) from None


def registry_outage(location: str, row: Mapping[str, Any], exc: BaseException) -> None:
    """:func:`raise_if_outage` for a registry upsert on S3 (delta-rs its only writer there); elsewhere nothing."""
    if is_s3(location):
        uri = "s3://" + location.split("://", 1)[1]
        doing = f"upserting {row.get('contract_name')} {row.get('contract_version')} (run {row.get('last_run_id')})"
        raise_if_outage(exc, "registry", uri, doing)


def note_lost(uri: str, run_id: str, read_version: int, version: int) -> int:
    """``version``, after saying (INFO) that the versions before it were taken by another writer: a commit
    made on the table as read at ``read_version`` (-1: no table yet) that landed later lost its first
    version to a concurrent writer, and delta-rs retried it on the new state."""
    if version > read_version + 1:
        creation = " (the table's creation)" if read_version < 0 else ""
        log.info(
            "results table %r: run %s lost version %d to a concurrent writer%s; retried, committed version %d",
            uri,
            run_id,
            read_version + 1,
            creation,
            version,
        )
    return version
