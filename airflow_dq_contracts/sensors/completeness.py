"""``CompletenessSensor``: wait until no partition is missing in the lookback window."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_dq_contracts.contract.timeliness import GRANULARITIES
from airflow_dq_contracts.sensors._common import (
    LOCATION_TEMPLATE_FIELDS,
    DeltaMetadataSensorBase,
    pick,
    reference_text,
)
from airflow_dq_contracts.store.tablemeta import CompletenessQuery
from airflow_dq_contracts.triggers.delta_metadata import DeltaCompletenessTrigger
from airflow_dq_contracts.version_compat import AirflowFailException


class CompletenessSensor(DeltaMetadataSensorBase):
    """Succeeds when ``gap_count ≤ max_gap_count`` — the contract's ``completeness`` check, as a sensor.

    Partition values come from the Delta log (or, for a plain Parquet folder, from its
    ``column=value/`` paths); nothing is scanned. Expected periods are those of ``granularity``
    (``hourly``, ``daily``, ``weekly`` = ISO weeks from Monday, ``monthly``; all UTC) overlapping
    ``[reference − lookback_days, reference]``; a gap is an expected period with no partition.
    With ``allow_future_gaps=True`` missing periods after the newest present partition are not
    yet due; partitions after the reference never count. Full rules:
    :mod:`airflow_dq_contracts.contract.timeliness`.

    Defaults when neither the arguments nor a contract check say otherwise: ``granularity="daily"``,
    ``lookback_days=30``, ``max_gap_count=0``, ``allow_future_gaps=True``. ``reference_time``
    (templated) defaults to the time of each poke.

    Which table, the contract, ``reference_time``, credentials and deferral: the keyword arguments of
    :class:`~airflow_dq_contracts.sensors._common.DeltaMetadataSensorBase`.

    The XCom value is the gap report (``gap_count``, ``missing``, ``missing_labels`` …).

    Example::

        wait_complete = CompletenessSensor(
            task_id="orders_complete", path="/lake/orders", partition_column="order_date",
            granularity="daily", lookback_days=7, reference_time="{{ data_interval_end }}",
            mode="reschedule", poke_interval=600)
        # on object storage: path="s3://lake/orders", storage_conn_id="lake" (an `aws` connection)
    """

    check_type = "completeness"
    trigger_class = DeltaCompletenessTrigger
    template_fields: Sequence[str] = (*LOCATION_TEMPLATE_FIELDS, "partition_column")

    def __init__(
        self,
        *,
        partition_column: str | None = None,
        granularity: str | None = None,
        lookback_days: float | None = None,
        max_gap_count: int | None = None,
        allow_future_gaps: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.check_choice("granularity", granularity, GRANULARITIES)
        self.check_number("lookback_days", lookback_days)
        self.check_number("max_gap_count", max_gap_count, integer=True)
        if allow_future_gaps is not None and not isinstance(allow_future_gaps, bool):
            raise self.refuse(f"allow_future_gaps must be True or False, got {allow_future_gaps!r}")
        if self.contract is None and not partition_column:
            raise self.missing_required(["partition_column"])
        self.partition_column = partition_column
        self.granularity = granularity
        self.lookback_days = lookback_days
        self.max_gap_count = max_gap_count
        self.allow_future_gaps = allow_future_gaps

    def _query(self) -> CompletenessQuery:
        """The completeness question: explicit arguments > the contract check's > defaults."""
        params, dataset = self._contract_check()
        path = self._location(dataset)
        partition_column = pick(self.partition_column, params, "partition_column")
        if not partition_column:
            raise AirflowFailException(f"{self.task_id}: the completeness check needs partition_column")
        return CompletenessQuery(
            path=path,
            partition_column=partition_column,
            granularity=pick(self.granularity, params, "granularity", "daily"),
            lookback_days=pick(self.lookback_days, params, "lookback_days", 30),
            max_gap_count=pick(self.max_gap_count, params, "max_gap_count", 0),
            allow_future_gaps=pick(self.allow_future_gaps, params, "allow_future_gaps", True),
            reference_time=reference_text(self.reference_time),
            storage_options=self.storage_options,
        )
