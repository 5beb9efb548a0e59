"""Statistics over a column's non-null values: ``mean``, ``sum``, ``variance``, ``stddev``, ``percentile``, ``min``, ``max``.

``variance``/``stddev`` are sample statistics (n − 1); ``percentile`` is exact with linear
interpolation unless ``approximate``; ``min``/``max`` of dates and timestamps are epoch seconds (UTC).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Check
from airflow_dq_contracts.engine.spark_types import (
    INTEGRAL_TYPES,
    MICROS_PER_SECOND,
    NUMERIC_TYPES,
    TIME_TYPES,
    column,
    count_value,
    instant_micros,
    to_float,
)

from .base import MeasureContext, Measurement, Metric, PlanContext, Scope


def sum_expression(
    value: str | Column, data_type: T.DataType, scope: Callable[[Column], Column] = lambda c: c
) -> Column:
    """The sum of a numeric column (a name or an expression): exact 64-bit for integers (NULL on overflow), exact
    for decimals, double else."""
    col = column(value) if isinstance(value, str) else value
    if isinstance(data_type, INTEGRAL_TYPES):
        return F.try_sum(scope(col.cast("long")))
    if isinstance(data_type, T.DecimalType):
        return F.try_sum(scope(col))
    return F.sum(scope(col.cast("double")))


class _NumericStat(Metric):
    """A statistic over the non-null numbers of a column (``mean``, ``sum``, ``variance``…)."""

    minimum_values: ClassVar[int] = 1

    def precondition(self, ctx: PlanContext) -> str | None:
        return self.require_type(ctx, NUMERIC_TYPES, "a numeric column")

    @property
    def as_double(self) -> Column:
        return self.col.cast("double")

    def statistic(self, scope: Scope) -> Column:
        raise NotImplementedError

    def aggregations(self, scope: Scope) -> list[Column]:
        return [self.statistic(scope), F.count(scope(self.col))]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        value, count = scan[0], count_value(scan[1])
        if count < self.minimum_values:
            if self.minimum_values == 1:
                return Measurement.failure(f"no non-null value in {self.column_name!r} to compute {self.check.type} of")
            return Measurement.failure(
                f"{self.check.type} needs at least {self.minimum_values} non-null values "
                f"(sample statistic, n − 1); {self.column_name!r} has {count}"
            )
        number = to_float(value)
        if number is None:
            return Measurement.failure(f"{self.check.type} of {self.column_name!r} overflows its type")
        return Measurement(number)


class MeanMetric(_NumericStat):
    """``mean``: arithmetic mean of the non-null values (in double, so it cannot overflow)."""

    check_type, level = "mean", "column"

    def statistic(self, scope: Scope) -> Column:
        return F.avg(scope(self.as_double))


class SumMetric(_NumericStat):
    """``sum``: exact 64-bit for integers, NULL on decimal overflow (an error), double for floats.

    An integer sum beyond 64 bits (where ANSI mode would fail the query) falls back to the double
    sum computed alongside — approximate, and said so in the message. Both are as cheap as the
    plain sum; an exact decimal(38,0) sum would cost several times more on every row.
    """

    check_type, level = "sum", "column"

    def statistic(self, scope: Scope) -> Column:
        return sum_expression(self.col, self.data_type, scope)

    def aggregations(self, scope: Scope) -> list[Column]:
        exprs = super().aggregations(scope)
        if isinstance(self.data_type, INTEGRAL_TYPES):
            exprs.append(F.sum(scope(self.as_double)))
        return exprs

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        if len(scan) > 2 and scan[0] is None and count_value(scan[1]) > 0:
            approximate = super().measure([scan[2], scan[1]], grouped, ctx)
            if approximate.error is None:
                approximate.note = "the sum exceeds 64-bit integers: recorded as a double (approximate)"
            return approximate
        return super().measure(scan[:2], grouped, ctx)


class VarianceMetric(_NumericStat):
    """``variance``: sample variance (n − 1), like SQL ``VARIANCE``."""

    check_type, level, minimum_values = "variance", "column", 2

    def statistic(self, scope: Scope) -> Column:
        return F.var_samp(scope(self.as_double))


class StddevMetric(_NumericStat):
    """``stddev``: sample standard deviation (n − 1), like SQL ``STDDEV``."""

    check_type, level, minimum_values = "stddev", "column", 2

    def statistic(self, scope: Scope) -> Column:
        return F.stddev_samp(scope(self.as_double))


class PercentileMetric(_NumericStat):
    """``percentile``: exact, linear interpolation between closest ranks (numpy's default).

    ``approximate: true`` → ``percentile_approx`` (default accuracy 10000: a value of the column).

    Several percentiles of one column (same filter, same exactness) share ONE aggregate
    ``percentile(col, array(p1, p2, …))``: each check emits the identical expression, Spark
    computes it once (the value counts are built once), and each reads its own element.
    """

    check_type, level = "percentile", "column"

    def __init__(self, check: Check) -> None:
        super().__init__(check)
        self.fraction = float(check.params["percentile"])
        self.approximate = bool(check.params.get("approximate"))
        self.fractions = [self.fraction]

    def coordinate(self, peers: list[Metric]) -> None:
        self.fractions = sorted(
            {
                p.fraction
                for p in peers
                if isinstance(p, PercentileMetric)
                and p.column_name == self.column_name
                and p.approximate == self.approximate
            }
        )

    def statistic(self, scope: Scope) -> Column:
        fractions = F.array(*[F.lit(f) for f in self.fractions])
        if self.approximate:
            return F.percentile_approx(scope(self.as_double), fractions)
        return F.percentile(scope(self.as_double), fractions)

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        values = scan[0]
        picked = None if values is None else values[self.fractions.index(self.fraction)]
        return super().measure([picked, *scan[1:]], grouped, ctx)


class ReducedStatistic(Metric):
    """A statistic reduced from one value per row: ``min``/``max`` here, the length statistics in :mod:`.strings`.

    Its scan reads ``[reducer(value), non-null count]``, plus the rows whose value crosses the
    validator's bound on ``side`` when it has one there; no non-null value to reduce is an error.
    """

    reducer: ClassVar[Callable[[Column], Column]]
    #: the reducer of one row's element values (``array_min``…), for elements paths; None: not on elements
    element_reducer: ClassVar[str | None] = None
    #: the validator bound a single row's value can cross (None: no per-row reading)
    side: ClassVar[str | None] = None
    reads_elements = True

    @property
    def value(self) -> Column:  # pragma: no cover - abstract
        """The per-row value the statistic reduces (NULL for a NULL cell)."""
        raise NotImplementedError

    def statistic_violation(self) -> Column | None:
        """Per row: the value beyond the validator's bound on :attr:`side`, tolerance included (if any).

        For an elements path: any element's value beyond it.
        """
        if self.beyond_limit(F.lit(0), self.side) is None:
            return None
        return self.any_value(lambda: self.beyond_limit(self.value, self.side))  # type: ignore[arg-type, return-value]

    def aggregations(self, scope: Scope) -> list[Column]:
        if self.elements:
            assert self.path is not None and self.element_reducer is not None
            per_row = getattr(F, self.element_reducer)(
                F.transform(self.path.values, lambda v: self.bound(v, lambda: self.value, predicate=False))
            )
            exprs = [type(self).reducer(scope(per_row)), F.sum(scope(self.value_count()))]
        else:
            exprs = [type(self).reducer(scope(self.value)), F.count(scope(self.col))]
        predicate = self.statistic_violation()
        if predicate is not None:
            exprs.append(scope.count_if(predicate))
        return exprs

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        failed_rows = count_value(scan[2]) if len(scan) > 2 else None
        if count_value(scan[1]) == 0:
            return Measurement(
                failed_rows=failed_rows,
                error=f"no non-null value in {self.column_name!r} to compute {self.check.type} of",
            )
        return Measurement(to_float(scan[0]), failed_rows=failed_rows)

    def violation(self, window_count: Column | None = None) -> Column | None:
        return self.statistic_violation()


class _ExtremeMetric(ReducedStatistic):
    """``min`` / ``max`` over numbers, dates and timestamps (epoch seconds, UTC).

    One implementation for both: ``reducer`` is the aggregate, ``side`` the validator bound that a
    single row can cross (per row, a value beyond the limit, tolerance included, violates).
    """

    def precondition(self, ctx: PlanContext) -> str | None:
        return self.require_type(
            ctx, NUMERIC_TYPES + TIME_TYPES, "a numeric, date or timestamp column (validators compare numbers)"
        )

    @property
    def value(self) -> Column:
        """The column in metric units: numbers as they are, dates/timestamps in epoch seconds."""
        if isinstance(self.data_type, TIME_TYPES):
            micros = instant_micros(self.column_name, self.data_type, self.nested_col)
            assert micros is not None
            return micros / F.lit(float(MICROS_PER_SECOND))
        return self.col


class MinMetric(_ExtremeMetric):
    """``min``; per row (when the validator has a lower bound): value < lower − tolerance."""

    check_type, level, reducer, side = "min", "column", F.min, "lower"
    element_reducer = "array_min"


class MaxMetric(_ExtremeMetric):
    """``max``; per row (when the validator has an upper bound): value > upper + tolerance."""

    check_type, level, reducer, side = "max", "column", F.max, "upper"
    element_reducer = "array_max"
