"""Counting check types: ``num_rows``, ``count``, ``missing``, ``cardinality`` and table/column ``duplicates``.

Distinct counts never enter the main scan: ``cardinality`` and ``duplicates`` read the grouped pass
on their key set (one ``groupBy`` per distinct key set, shared by every check on the same keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from airflow_dq_contracts.engine.spark_types import count_value, groupable, type_name

from .base import GroupKey, GroupScope, MeasureContext, Measurement, Metric, PlanContext, Scope


class NumRowsMetric(Metric):
    """``num_rows``: rows in scope (the evaluator's per-scope row count; nothing to add)."""

    check_type, level = "num_rows", "table"

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        return Measurement(float(ctx.row_count))


class TableDuplicatesMetric(Metric):
    """Table ``duplicates``: ``COUNT(*) − COUNT(DISTINCT (c1…cn))``; tuples with a NULL are never distinct."""

    check_type, level = "duplicates", "table"

    def precondition(self, ctx: PlanContext) -> str | None:
        self.keys: list[GroupKey] = []
        for name in self.check.params["columns"]:
            found = ctx.path(name)
            if isinstance(found, str):
                return found
            if found.elements:
                return f"column {found.text!r} is every element of an array; duplicates compare one value per row"
            if not groupable(found.data_type):
                return f"column {name!r} is {type_name(found.data_type)}; maps cannot be compared for duplicates"
            self.keys.append(GroupKey(f"col:{found.text}", found.value))
        return None

    def group_keys(self) -> list[GroupKey] | None:
        return list(self.keys)

    def group_aggregations(self, group: GroupScope) -> list[Column]:
        return [group.rows(), group.distinct_non_null()]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        rows, distinct = count_value(grouped[0]), count_value(grouped[1])
        return self.ratio(rows - distinct, ctx)


class CountMetric(Metric):
    """``count``: non-null values (any type); on an elements path, the non-null values of all elements."""

    check_type, level, reads_elements = "count", "column", True

    def aggregations(self, scope: Scope) -> list[Column]:
        if self.elements:  # the non-null values of every row's elements
            return [F.sum(scope(self.value_count()))]
        return [F.count(scope(self.col))]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        return Measurement(float(count_value(scan[0])))


class MissingMetric(Metric):
    """``missing``: NULL rows (count or pct); each NULL row violates.

    On a nested path a NULL parent is not a NULL child (:meth:`Metric.is_missing`); on an elements
    path a row is missing when any of its values is NULL.
    """

    check_type, level, reads_elements = "missing", "column", True

    def aggregations(self, scope: Scope) -> list[Column]:
        return [scope.count_if(self.is_missing())]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        nulls = count_value(scan[0])
        return self.ratio(nulls, ctx, failed_rows=nulls)

    def violation(self, window_count: Column | None = None) -> Column | None:
        return self.is_missing()


class _GroupedColumnMetric(Metric):
    """A column metric read from the grouped pass on that column (shared with its siblings)."""

    not_groupable = "maps cannot be grouped"

    def precondition(self, ctx: PlanContext) -> str | None:
        problem = super().precondition(ctx)
        if problem is None and not groupable(self.data_type):
            return f"column {self.column_name!r} is {type_name(self.data_type)}; {self.not_groupable}"
        return problem

    def group_keys(self) -> list[GroupKey] | None:
        return [GroupKey(f"col:{self.column_name}", self.col)]


class CardinalityMetric(_GroupedColumnMetric):
    """``cardinality``: distinct non-null values, from the grouped pass on the column."""

    check_type, level = "cardinality", "column"
    not_groupable = "maps have no distinct values"

    def group_aggregations(self, group: GroupScope) -> list[Column]:
        return [group.distinct_non_null()]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        return Measurement(float(count_value(grouped[0])))


class ColumnDuplicatesMetric(_GroupedColumnMetric):
    """Column ``duplicates``: ``COUNT(*) − COUNT(DISTINCT col)`` — NULLs count as duplicates.

    Per row, a row violates when its value is NULL or occurs more than once in scope, so
    ``failed_rows`` (every copy) is larger than the metric (copies beyond the first).
    """

    check_type, level = "duplicates", "column"
    not_groupable = "maps cannot be compared for duplicates"

    def group_aggregations(self, group: GroupScope) -> list[Column]:
        violating = F.sum(F.when(group.present & (group.any_key_null | (group.n > F.lit(1))), group.n))
        return [group.rows(), group.distinct_non_null(), violating]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        rows, distinct, violating = count_value(grouped[0]), count_value(grouped[1]), count_value(grouped[2])
        return self.ratio(rows - distinct, ctx, failed_rows=violating)

    def window_keys(self) -> list[Column] | None:
        return [self.col]

    def violation(self, window_count: Column | None = None) -> Column | None:
        if window_count is None:
            return None
        return self.col.isNull() | (window_count > F.lit(1))
