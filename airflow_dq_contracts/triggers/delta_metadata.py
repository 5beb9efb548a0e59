"""Async triggers behind the deferrable ``FreshnessSensor`` and ``CompletenessSensor``.

While a sensor is deferred no worker slot is held: the triggerer runs :meth:`run`, which checks
the table's metadata every ``poke_interval`` seconds and fires one event when the condition holds
(or when it meets an error no amount of waiting can fix). The metadata read itself is blocking
(delta-rs), so it runs in a thread: the triggerer's event loop, shared by many triggers, never
waits on storage.

Restart-safe: everything a trigger needs is in its serialised keyword arguments (plain JSON
types: the fields of its query, :class:`~airflow_dq_contracts.store.tablemeta.delta_log.FreshnessQuery` or
``CompletenessQuery``, plus the polling settings); it keeps no state between polls. A reference time left as ``None`` means "now" at each
poll; an explicit one is an ISO-8601 string. The deadline is an absolute time (``end_time``,
ISO-8601, computed once when the sensor first defers), so a triggerer restart neither resets nor
loses it; the sensor also passes its ``timeout`` to ``defer()`` as a backstop.

Credentials: a trigger carries only the *name* of its storage connection (``storage_conn_id``); the
triggerer looks the connection up itself when the trigger starts (without blocking its event loop:
:func:`aget_storage_credentials`) and masks its secrets, so no
secret is ever written to the trigger table. A raw ``storage_options`` dict is serialised as given
(kept for compatibility: put no secret in it).

Event payloads: ``{"status": "success", "result": {...}}`` (``result`` as the sensor's XCom value),
``{"status": "timeout", "message": "...", "result": {...last measurement...}}``, or
``{"status": "error", "error": "<ErrorClass>", "message": "..."}``.

Example::

    trigger = DeltaFreshnessTrigger(path="/lake/orders", timestamp_column="created_at",
                                    max_age_hours=6, poke_interval=60)
    classpath, kwargs = trigger.serialize()      # what Airflow stores
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from airflow_dq_contracts.storage.connections import (
    StorageConnectionError,
    StorageCredentials,
    credentials_from_connection,
)
from airflow_dq_contracts.storage.locations import TableLocation
from airflow_dq_contracts.store import tablemeta
from airflow_dq_contracts.store.tablemeta import CompletenessQuery, CompletenessResult, FreshnessQuery, FreshnessResult
from airflow_dq_contracts.timeutil import to_utc, utcnow
from airflow_dq_contracts.version_compat import BaseTrigger, TriggerEvent, aget_connection, mask_secret

_MODULE = "airflow_dq_contracts.triggers.delta_metadata"

#: A question a metadata sensor asks of a table, and its answer.
MetadataQuery = FreshnessQuery | CompletenessQuery
MetadataResult = FreshnessResult | CompletenessResult


async def aget_storage_credentials(conn_id: str) -> StorageCredentials:
    """The storage connection ``conn_id``, looked up in the triggerer without blocking its loop, masked.

    :raises StorageConnectionError: not defined, not a storage type, or incomplete — naming it.
    """
    try:
        conn = await aget_connection(conn_id)
    except Exception as exc:  # noqa: BLE001 - not found or a backend error: one error naming the connection
        raise StorageConnectionError(f"storage connection {conn_id!r} cannot be read: {exc}") from None
    creds = credentials_from_connection(conn)
    for secret in creds.secrets:
        mask_secret(secret)
    return creds


def _error_event(exc: BaseException) -> TriggerEvent:
    return TriggerEvent({"status": "error", "error": type(exc).__name__, "message": str(exc)})


class MetadataPollTrigger(BaseTrigger):
    """Shared polling loop: evaluate the query, log, fire on success or on a permanent error.

    The keyword arguments besides the three polling ones are the query's fields
    (:class:`~airflow_dq_contracts.store.tablemeta.delta_log.FreshnessQuery` or ``CompletenessQuery``): the
    query is the one statement of them, and :meth:`serialize` writes them back as they came.
    """

    #: The query the trigger polls, and the name Airflow stores it under.
    query_class: ClassVar[type[FreshnessQuery] | type[CompletenessQuery]]
    class_name: ClassVar[str]

    def __init__(
        self,
        *,
        poke_interval: float = 60.0,
        fail_on_missing_table: bool = True,
        end_time: str | None = None,
        storage_conn_id: str | None = None,
        **query: Any,
    ) -> None:
        super().__init__()
        self.query = self.query_class(**query)
        self.poke_interval = float(poke_interval)
        self.fail_on_missing_table = bool(fail_on_missing_table)
        self.end_time = end_time
        self.storage_conn_id = storage_conn_id or None
        # The query's table resolved once, with the connection's credentials, in the triggerer (never serialised).
        self._where: TableLocation | None = None

    @classmethod
    def for_query(
        cls,
        query: MetadataQuery,
        *,
        poke_interval: float,
        fail_on_missing_table: bool,
        end_time: str | None,
        storage_conn_id: str | None = None,
    ) -> MetadataPollTrigger:
        """The trigger polling ``query`` (what a deferring sensor hands the triggerer).

        ``query`` must carry no connection credentials: only ``storage_conn_id`` travels.
        """
        return cls(
            poke_interval=poke_interval,
            fail_on_missing_table=fail_on_missing_table,
            end_time=end_time,
            storage_conn_id=storage_conn_id,
            **query.to_kwargs(),
        )

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """(classpath, JSON keyword arguments) — what Airflow stores to rebuild the trigger after a restart."""
        return (
            f"{_MODULE}.{self.class_name}",
            {
                **self.query.to_kwargs(),
                "poke_interval": self.poke_interval,
                "fail_on_missing_table": self.fail_on_missing_table,
                "end_time": self.end_time,
                "storage_conn_id": self.storage_conn_id,
            },
        )

    def _deadline(self) -> dt.datetime | None:
        if not self.end_time:
            return None
        return to_utc(self.end_time)

    async def _resolve(self) -> TableLocation:
        """The query's table as one value: the storage connection's options (looked up in the triggerer) on top
        of the raw ones."""
        if self._where is not None:
            return self._where
        where = TableLocation.at(self.query.path, storage_options=self.query.storage_options)
        if self.storage_conn_id:
            creds = await aget_storage_credentials(self.storage_conn_id)
            creds.check_location(where.uri)
            where = where.with_options(creds.storage_options(self.query.storage_options))
        self._where = where
        return where

    def _evaluate(self) -> MetadataResult:
        where = self._where or TableLocation.at(self.query.path, storage_options=self.query.storage_options)
        try:
            return self.query.evaluate(where)
        except tablemeta.DeltaMetadataError:
            if self.storage_conn_id:  # a refused secret is not "no table yet": never wait for it
                reason = tablemeta.access_refused(where.uri, where.options)
                if reason:
                    raise StorageConnectionError(
                        f"storage connection {self.storage_conn_id!r} is refused at {where.uri}: {reason}"
                    ) from None
            raise

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll every ``poke_interval`` seconds until the condition holds, an error is permanent, or the deadline."""
        deadline = self._deadline()
        poll = 0
        last: dict[str, Any] | None = None
        try:
            await self._resolve()
        except StorageConnectionError as exc:
            yield _error_event(exc)
            return
        while True:
            poll += 1
            try:
                result = await asyncio.to_thread(self._evaluate)
            except tablemeta.TableNotFoundError as exc:
                if self.fail_on_missing_table:
                    yield _error_event(exc)
                    return
                self.log.info("poll %d: table not there yet (%s); next poll in %gs", poll, exc, self.poke_interval)
            except tablemeta.DeltaMetadataError as exc:
                yield _error_event(exc)
                return
            except Exception as exc:  # noqa: BLE001 - surfaced to the task, never swallowed
                # Unexpected (a storage outage, a bug): fail visibly rather than poll blind
                # until the timeout; the task's retries decide what happens next.
                yield _error_event(exc)
                return
            else:
                self.log.info("poll %d: %s", poll, result.message)
                last = result.to_dict()
                if result.passed:
                    yield TriggerEvent({"status": "success", "result": last})
                    return
            now = utcnow()
            if deadline is not None and now >= deadline:
                message = f"timed out at {self.end_time} after {poll} polls"
                if last is not None:
                    message += f"; last poll: {last.get('message')}"
                yield TriggerEvent({"status": "timeout", "message": message, "result": last})
                return
            pause = self.poke_interval
            if deadline is not None:  # wake up for the deadline, not a whole interval past it
                pause = max(0.0, min(pause, (deadline - now).total_seconds()))
            await asyncio.sleep(pause)


class DeltaFreshnessTrigger(MetadataPollTrigger):
    """Fires when a table is fresh (keyword arguments: :class:`~airflow_dq_contracts.store.tablemeta.delta_log.FreshnessQuery`).

    Example::

        DeltaFreshnessTrigger(path="/lake/orders", timestamp_column="created_at", max_age_hours=6,
                              reference_time="2024-01-10T00:00:00Z", poke_interval=300)
    """

    query_class = FreshnessQuery
    class_name = "DeltaFreshnessTrigger"

    def _evaluate(self) -> MetadataResult:
        result = super()._evaluate()
        if isinstance(result, FreshnessResult) and result.warning:  # data after the reference: said, never silent
            self.log.warning("%s", result.warning)
        return result


class DeltaCompletenessTrigger(MetadataPollTrigger):
    """Fires when no partition is missing (keyword arguments: :class:`~airflow_dq_contracts.store.tablemeta.delta_log.CompletenessQuery`).

    Example::

        DeltaCompletenessTrigger(path="/lake/orders", partition_column="order_date",
                                 granularity="daily", lookback_days=7, poke_interval=300)
    """

    query_class = CompletenessQuery
    class_name = "DeltaCompletenessTrigger"
