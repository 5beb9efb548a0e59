"""Free SQL conditions: ``row_condition`` (a boolean per row) and ``table_condition`` (a boolean over aggregates).

Both are parsed and analysed against the data before the scan (no job); both then live inside
the shared scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.engine.spark_errors import first_line, quiet_pyspark_errors
from airflow_dq_contracts.engine.spark_types import count_value, type_name

from .base import MeasureContext, Measurement, Metric, PlanContext, Scope


def analysed_condition(frame: DataFrame, condition: str, aggregate: bool) -> tuple[Column | None, str | None]:
    """Parse + analyse ``condition`` against ``frame`` (no job): (expression, None) or (None, reason)."""
    try:
        with quiet_pyspark_errors():
            expression = F.expr(condition)
            if aggregate:
                data_type = frame.agg(expression.alias("_dq_c")).schema.fields[0].dataType
            else:
                data_type = frame.select(expression.alias("_dq_c")).schema.fields[0].dataType
                # WHERE analysis rejects aggregates and windows per row.
                _ = frame.where(expression).schema
    except Exception as exc:  # noqa: BLE001 - ParseException, AnalysisException
        return None, f"invalid condition {condition!r}: {first_line(exc)}"
    if not isinstance(data_type, T.BooleanType):
        return None, f"condition {condition!r} is {type_name(data_type)}, not a boolean"
    return expression, None


class _ConditionMetric(Metric):
    """A check whose ``condition`` is parsed and analysed against the data before the scan."""

    over_aggregates: ClassVar[bool]
    #: the analysed condition (set by a precondition that passed)
    condition: Column

    def precondition(self, ctx: PlanContext) -> str | None:
        if ctx.frame is None:
            return f"{self.check.type} needs the DataFrame to analyse its condition"
        condition, problem = analysed_condition(ctx.frame, self.check.params["condition"], self.over_aggregates)
        if condition is not None:
            self.condition = condition
        return problem


class RowConditionMetric(_ConditionMetric):
    """``row_condition``: rows where the SQL boolean is not true (NULL too, unless ``null_passes``)."""

    check_type, level, over_aggregates = "row_condition", "table", False

    def violation(self, window_count: Column | None = None) -> Column | None:
        return self.breaks()

    def breaks(self) -> Column:
        """The row's condition is not true (false, or NULL unless ``null_passes``)."""
        return ~F.coalesce(self.condition, F.lit(bool(self.check.params.get("null_passes"))))

    def aggregations(self, scope: Scope) -> list[Column]:
        return [scope.count_if(self.breaks())]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        violating = count_value(scan[0])
        return self.ratio(violating, ctx, failed_rows=violating)


class TableConditionMetric(_ConditionMetric):
    """``table_condition``: a boolean over aggregates in the shared scan; 1 when true, else 0."""

    check_type, level, over_aggregates = "table_condition", "table", True

    def aggregations(self, scope: Scope) -> list[Column]:
        return [self.condition]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        if scan[0] is None:
            return Measurement(0.0, note="the condition is NULL (counts as false)")
        return Measurement(1.0 if scan[0] else 0.0, note="" if scan[0] else "the condition is false")
