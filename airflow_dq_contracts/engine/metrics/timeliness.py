"""Timeliness on the data itself: ``freshness`` (age of the newest timestamp) and ``completeness`` (missing periods).

A date / timestamp / timestamp_ntz / string column is read as instants (UTC, DESIGN §4) by
:func:`~airflow_dq_contracts.engine.spark_types.instant_micros`; the gap arithmetic is the plain
Python of :mod:`airflow_dq_contracts.contract.timeliness`, shared with the sensors.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract import timeliness
from airflow_dq_contracts.engine.spark_types import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    count_value,
    instant_micros,
    type_name,
)
from airflow_dq_contracts.timeutil import format_time, from_epoch_micros

from .base import MeasureContext, Measurement, Metric, PlanContext, Scope


def _instant(micros: int) -> dt.datetime:
    """Epoch microseconds → aware UTC datetime (``OverflowError`` beyond Python's year 9999)."""
    moment = from_epoch_micros(micros)
    assert moment is not None  # only None for None
    return moment


class _TimeColumnMetric(Metric):
    """Shared by freshness and completeness: a date / timestamp / string column read as instants."""

    time_param: ClassVar[str]

    def precondition(self, ctx: PlanContext) -> str | None:
        name = self.check.params[self.time_param]
        found = ctx.path(name)
        if isinstance(found, str):
            return found
        if found.elements:
            return f"{self.check.type} reads one time per row; {found.text} is every element of an array"
        self.path, self.field = found, found.field()
        if instant_micros(self.field.name, self.field.dataType, self.nested_col) is None:
            return (
                f"column {self.field.name!r} is {type_name(self.field.dataType)}; {self.check.type} needs "
                "a date, timestamp or timestamp text column"
            )
        return None

    @property
    def micros(self) -> Column:
        assert self.field is not None
        expression = instant_micros(self.field.name, self.field.dataType, self.nested_col)
        assert expression is not None
        return expression


class FreshnessMetric(_TimeColumnMetric):
    """``freshness``: hours from the newest (``aggregation: min`` → oldest) timestamp to the reference.

    A timestamp after the reference by more than ``timeliness.FUTURE_SKEW`` is an error naming both
    times (the reference time is wrong); within the skew the age is 0.
    """

    check_type, level, time_param = "freshness", "table", "timestamp_column"

    def aggregations(self, scope: Scope) -> list[Column]:
        newest = F.max if self.check.params.get("aggregation", "max") == "max" else F.min
        return [newest(scope(self.micros)), F.count(scope(self.micros)), F.count(scope(self.col))]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        extreme, parsed, non_null = scan[0], count_value(scan[1]), count_value(scan[2])
        name = self.column_name
        if non_null == 0:
            return Measurement.failure(f"no non-null value in {name!r} to measure freshness from")
        if parsed == 0 or extreme is None:
            return Measurement.failure(f"none of the {non_null} non-null values of {name!r} could be read as a time")
        try:
            moment = _instant(extreme)
        except OverflowError:
            return Measurement.failure(
                f"the {self.check.params.get('aggregation', 'max')} of {name!r} "
                "is outside the representable years 1–9999"
            )
        what = f"{self.check.params.get('aggregation', 'max')}({name})"
        measured = timeliness.freshness_age(ctx.reference_time, moment, what)
        if measured.problem:  # data newer than the reference: the reference is wrong, not the data fresh
            return Measurement.failure(measured.problem)
        age = measured.age_hours
        note = f"{what} = {format_time(moment)}"
        if parsed < non_null:
            note += f"; {non_null - parsed} value(s) could not be read as a time and were ignored"
        return Measurement(age, note=note)


class CompletenessMetric(_TimeColumnMetric):
    """``completeness``: missing partition periods in the lookback window (see ``timeliness.count_gaps``).

    The distinct partition periods are collected inside the main scan (``collect_set`` of the UTC
    hour for ``hourly``, of the UTC day otherwise — a few thousand values even for years of
    data), so completeness costs no extra pass. String partition values are collected as written
    and read by ``timeliness`` (which also knows ``2024-W05`` and ``2024-01``); one that is not a
    time makes the check an error naming it.
    """

    check_type, level, time_param = "completeness", "table", "partition_column"

    @property
    def _unit(self) -> int:
        return MICROS_PER_HOUR if self.check.params["granularity"] == "hourly" else MICROS_PER_DAY

    def _period(self) -> Column:
        assert self.field is not None
        if isinstance(self.field.dataType, T.StringType):
            return self.col
        if isinstance(self.field.dataType, T.DateType):  # days since the epoch: no arithmetic on micros
            days = F.unix_date(self.col).cast("long")
            return days * F.lit(24) if self._unit == MICROS_PER_HOUR else days
        # Floor division without a detour through doubles that could round to the next period:
        # subtract the positive remainder, then the quotient is a whole number (rounded to it).
        unit = F.lit(self._unit)
        return F.round((self.micros - F.pmod(self.micros, unit)) / unit).cast("long")

    def aggregations(self, scope: Scope) -> list[Column]:
        return [F.collect_set(scope(self._period()))]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        assert self.field is not None
        raw = sorted(scan[0] or [])
        if isinstance(self.field.dataType, T.StringType):
            values: list[Any] = [value for value in raw if value.strip()]
        else:
            # Date buckets are days (or hours) since the epoch, timestamp buckets likewise.
            try:
                values = [_instant(bucket * self._unit) for bucket in raw]
            except OverflowError:
                return Measurement.failure(f"a value of {self.column_name!r} is outside the representable years 1–9999")
        params = self.check.params
        try:
            report = timeliness.count_gaps(
                values, ctx.reference_time, params["granularity"], params["lookback_days"], params["allow_future_gaps"]
            )
        except (timeliness.PartitionValueError, ValueError) as exc:
            return Measurement.failure(f"partition column {self.column_name!r}: {exc}")
        return Measurement(float(report.gap_count), note=report.describe(limit=5))
