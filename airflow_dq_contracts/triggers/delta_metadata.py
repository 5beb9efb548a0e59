"""Async triggers behind the deferrable ``FreshnessSensor`` and ``CompletenessSensor``.

While a sensor is deferred no worker slot is held: the triggerer runs :meth:`run`, which checks
the table's metadata every ``poke_interval`` seconds and fires one event when the condition holds
(or when it meets an error no amount of waiting can fix). The metadata read itself is blocking
(delta-rs), so it runs in a thread: the triggerer's event loop, shared by many triggers, never
waits on storage.

Restart-safe: everything a trigger needs is in its serialised keyword arguments (plain JSON
types); it keeps no state between polls. A reference time left as ``None`` means "now" at each
poll; an explicit one is an ISO-8601 string. The deadline is an absolute time (``end_time``,
ISO-8601, computed once when the sensor first defers), so a triggerer restart neither resets nor
loses it; the sensor also passes its ``timeout`` to ``defer()`` as a backstop.

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
from typing import Any, AsyncIterator

from airflow_dq_contracts.contract.timeliness import to_utc
from airflow_dq_contracts.store.delta_log import (
    DeltaMetadataError,
    TableNotFoundError,
    evaluate_completeness,
    evaluate_freshness,
)
from airflow_dq_contracts.version_compat import BaseTrigger, TriggerEvent

_MODULE = "airflow_dq_contracts.triggers.delta_metadata"


def _error_event(exc: BaseException) -> TriggerEvent:
    return TriggerEvent({"status": "error", "error": type(exc).__name__, "message": str(exc)})


class _MetadataPollTrigger(BaseTrigger):
    """Shared polling loop: evaluate, log, fire on success or on a permanent error."""

    def __init__(
        self, *, poke_interval: float = 60.0, fail_on_missing_table: bool = True, end_time: str | None = None
    ) -> None:
        super().__init__()
        self.poke_interval = float(poke_interval)
        self.fail_on_missing_table = bool(fail_on_missing_table)
        self.end_time = end_time

    def _common_kwargs(self) -> dict[str, Any]:
        return {
            "poke_interval": self.poke_interval,
            "fail_on_missing_table": self.fail_on_missing_table,
            "end_time": self.end_time,
        }

    def _deadline(self) -> dt.datetime | None:
        if not self.end_time:
            return None
        return to_utc(self.end_time)

    def _evaluate(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self._deadline()
        poll = 0
        last: dict[str, Any] | None = None
        while True:
            poll += 1
            try:
                result = await asyncio.to_thread(self._evaluate)
            except TableNotFoundError as exc:
                if self.fail_on_missing_table:
                    yield _error_event(exc)
                    return
                self.log.info("poll %d: table not there yet (%s); next poll in %gs", poll, exc, self.poke_interval)
            except DeltaMetadataError as exc:
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
            now = dt.datetime.now(dt.timezone.utc)
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


class DeltaFreshnessTrigger(_MetadataPollTrigger):
    """Fires when a table is fresh (see :func:`~airflow_dq_contracts.store.delta_log.evaluate_freshness`).

    Example::

        DeltaFreshnessTrigger(path="/lake/orders", timestamp_column="created_at", max_age_hours=6,
                              reference_time="2024-01-10T00:00:00Z", poke_interval=300)
    """

    def __init__(
        self,
        *,
        path: str,
        timestamp_column: str | None,
        max_age_hours: float,
        aggregation: str = "max",
        reference_time: str | None = None,
        measure: str = "column",
        storage_options: dict[str, str] | None = None,
        exact: bool = True,
        poke_interval: float = 60.0,
        fail_on_missing_table: bool = True,
        end_time: str | None = None,
    ) -> None:
        super().__init__(
            poke_interval=poke_interval, fail_on_missing_table=fail_on_missing_table, end_time=end_time
        )
        self.path = path
        self.timestamp_column = timestamp_column
        self.max_age_hours = float(max_age_hours)
        self.aggregation = aggregation
        self.reference_time = reference_time
        self.measure = measure
        self.storage_options = dict(storage_options) if storage_options else None
        self.exact = bool(exact)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{_MODULE}.DeltaFreshnessTrigger",
            {
                "path": self.path,
                "timestamp_column": self.timestamp_column,
                "max_age_hours": self.max_age_hours,
                "aggregation": self.aggregation,
                "reference_time": self.reference_time,
                "measure": self.measure,
                "storage_options": self.storage_options,
                "exact": self.exact,
                **self._common_kwargs(),
            },
        )

    def _evaluate(self):
        return evaluate_freshness(
            self.path, self.timestamp_column, self.max_age_hours,
            aggregation=self.aggregation, reference_time=self.reference_time,
            measure=self.measure, storage_options=self.storage_options, exact=self.exact,
        )


class DeltaCompletenessTrigger(_MetadataPollTrigger):
    """Fires when no partition is missing (see :func:`~airflow_dq_contracts.store.delta_log.evaluate_completeness`).

    Example::

        DeltaCompletenessTrigger(path="/lake/orders", partition_column="order_date",
                                 granularity="daily", lookback_days=7, poke_interval=300)
    """

    def __init__(
        self,
        *,
        path: str,
        partition_column: str,
        granularity: str,
        lookback_days: float = 30,
        max_gap_count: int = 0,
        allow_future_gaps: bool = True,
        reference_time: str | None = None,
        storage_options: dict[str, str] | None = None,
        poke_interval: float = 60.0,
        fail_on_missing_table: bool = True,
        end_time: str | None = None,
    ) -> None:
        super().__init__(
            poke_interval=poke_interval, fail_on_missing_table=fail_on_missing_table, end_time=end_time
        )
        self.path = path
        self.partition_column = partition_column
        self.granularity = granularity
        self.lookback_days = lookback_days
        self.max_gap_count = int(max_gap_count)
        self.allow_future_gaps = bool(allow_future_gaps)
        self.reference_time = reference_time
        self.storage_options = dict(storage_options) if storage_options else None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{_MODULE}.DeltaCompletenessTrigger",
            {
                "path": self.path,
                "partition_column": self.partition_column,
                "granularity": self.granularity,
                "lookback_days": self.lookback_days,
                "max_gap_count": self.max_gap_count,
                "allow_future_gaps": self.allow_future_gaps,
                "reference_time": self.reference_time,
                "storage_options": self.storage_options,
                **self._common_kwargs(),
            },
        )

    def _evaluate(self):
        return evaluate_completeness(
            self.path, self.partition_column, self.granularity,
            lookback_days=self.lookback_days, max_gap_count=self.max_gap_count,
            allow_future_gaps=self.allow_future_gaps, reference_time=self.reference_time,
            storage_options=self.storage_options,
        )
