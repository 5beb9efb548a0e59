"""``FreshnessSensor``: wait until a table's newest (or oldest) timestamp is recent enough."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_dq_contracts.contract.timeliness import AGGREGATIONS
from airflow_dq_contracts.sensors._common import (
    LOCATION_TEMPLATE_FIELDS,
    DeltaMetadataSensorBase,
    pick,
    reference_text,
)
from airflow_dq_contracts.store.tablemeta import FreshnessQuery, FreshnessResult
from airflow_dq_contracts.triggers.delta_metadata import DeltaFreshnessTrigger, MetadataResult
from airflow_dq_contracts.version_compat import AirflowFailException, Context

MEASURES = ("column", "commit")


class FreshnessSensor(DeltaMetadataSensorBase):
    """Succeeds when ``age_hours ≤ max_age_hours`` — the contract's ``freshness`` check, as a sensor.

    ``age_hours = (reference_time − newest) / 3600 s`` where ``newest`` is ``max`` (or, with
    ``aggregation="min"``, ``min``) of ``timestamp_column``, read from Delta statistics without a
    JVM or a full scan (see :mod:`airflow_dq_contracts.store.tablemeta.delta_log`). ``measure="commit"``
    measures the age of the table's last commit instead. ``reference_time`` (templated) defaults
    to the time of each poke; e.g. ``"{{ data_interval_end }}"`` pins it to the run's interval.
    Naive timestamps are UTC. An empty table is not fresh. A timestamp up to 5 minutes after the
    reference time is age 0 (clock skew); further after it means the reference time is wrong (e.g.
    ``airflow dags test``): the sensor logs a WARNING naming both times and the XCom value carries it
    as ``warning`` — the data still counts as fresh (it is newer than asked), so the task proceeds.

    Parameters may come from a contract: ``contract=`` (path or dict) and ``check="<name>"`` (or
    the contract's only ``freshness`` check); explicit arguments override the check's.

    Which table, the contract, ``reference_time``, credentials and deferral: the keyword arguments of
    :class:`~airflow_dq_contracts.sensors._common.DeltaMetadataSensorBase`.

    The XCom value is the measurement (``age_hours``, ``passed``, ``measurement`` …).

    Example::

        wait_fresh = FreshnessSensor(
            task_id="orders_fresh", table="silver.orders", warehouse="/lake/warehouse",
            timestamp_column="created_at", max_age_hours=6,
            reference_time="{{ data_interval_end }}", deferrable=True, poke_interval=300)
        # or: FreshnessSensor(task_id=…, contract="contracts/orders.yaml", check="Data is fresh")
        # on object storage, credentials from an Airflow connection (see DeltaMetadataSensorBase):
        # FreshnessSensor(task_id=…, path="s3://lake/orders", storage_conn_id="lake", …)
    """

    check_type = "freshness"
    trigger_class = DeltaFreshnessTrigger
    template_fields: Sequence[str] = (*LOCATION_TEMPLATE_FIELDS, "timestamp_column")

    def __init__(
        self,
        *,
        timestamp_column: str | None = None,
        max_age_hours: float | None = None,
        aggregation: str | None = None,
        measure: str = "column",
        exact: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if measure not in MEASURES:
            raise self.refuse(f"measure={measure!r} is not one of {', '.join(MEASURES)}")
        self.check_choice("aggregation", aggregation, AGGREGATIONS)
        self.check_number("max_age_hours", max_age_hours)
        if self.contract is None:
            needed = ["max_age_hours"] if max_age_hours is None else []
            if measure == "column" and not timestamp_column:
                needed.insert(0, "timestamp_column")
            if needed:
                raise self.missing_required(needed)
        self.timestamp_column = timestamp_column
        self.max_age_hours = max_age_hours
        self.aggregation = aggregation
        self.measure = measure
        self.exact = bool(exact)

    def _evaluate(self, context: Context) -> MetadataResult:
        result = super()._evaluate(context)
        if isinstance(result, FreshnessResult) and result.warning:  # never a silent pass on a negative age
            self.log.warning("%s", result.warning)
        return result

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired; its warning (data after the reference time) is repeated in the task log."""
        warning = ((event or {}).get("result") or {}).get("warning")
        if warning:
            self.log.warning("%s", warning)
        return super().execute_complete(context, event)

    def _query(self) -> FreshnessQuery:
        """The freshness question: explicit arguments > the contract check's > defaults."""
        params, dataset = self._contract_check()
        path = self._location(dataset)
        timestamp_column = pick(self.timestamp_column, params, "timestamp_column")
        max_age_hours = pick(self.max_age_hours, params, "max_age_hours")
        if max_age_hours is None or (self.measure == "column" and not timestamp_column):
            raise AirflowFailException(f"{self.task_id}: the freshness check needs timestamp_column and max_age_hours")
        return FreshnessQuery(
            path=path,
            timestamp_column=timestamp_column,
            max_age_hours=max_age_hours,
            aggregation=pick(self.aggregation, params, "aggregation", "max"),
            reference_time=reference_text(self.reference_time),
            measure=self.measure,
            storage_options=self.storage_options,
            exact=self.exact,
        )
