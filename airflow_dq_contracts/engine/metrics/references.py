"""Checks against a reference dataset: ``referential`` (orphan rows) and ``reconciliation`` (ours − theirs).

The passes they read — one left anti-join per distinct join, one aggregate per reference — are
run by the evaluator with :mod:`airflow_dq_contracts.engine.relational`; the semantics are in
that module's documentation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_dq_contracts.engine.relational import ReferenceJoin, reference_frame, resolve_column, unmatched
from airflow_dq_contracts.engine.spark_errors import first_line, quiet_pyspark_errors
from airflow_dq_contracts.engine.spark_types import (
    NUMERIC_TYPES,
    column,
    count_value,
    describe_number,
    to_float,
    type_name,
)

from .base import GroupKey, GroupScope, MeasureContext, Measurement, Metric, PlanContext, Scope
from .statistics import sum_expression


class _AgainstReference(Metric):
    """A table-level check that reads the reference dataset named by its ``reference`` parameter."""

    level = "table"

    def precondition(self, ctx: PlanContext) -> str | None:
        reference, problem = reference_frame(ctx.references, self.check.params["reference"])
        if problem:
            return problem
        assert reference is not None
        return self.precondition_against(ctx, reference)

    def precondition_against(self, ctx: PlanContext, reference: DataFrame) -> str | None:  # pragma: no cover
        """:meth:`precondition`, once the reference frame is known to exist."""
        raise NotImplementedError

    def their_column(self, ctx: PlanContext, reference: DataFrame, name: str) -> tuple[str | None, str | None]:
        """(the reference's column ``name`` resolves to, or None with the reason), by Spark's case rule."""
        return resolve_column(
            reference.schema, name, ctx.case_sensitive, f"reference {self.check.params['reference']!r}"
        )


class ReferentialMetric(_AgainstReference):
    """``referential``: orphan rows (count or pct), from the shared left join of its reference."""

    check_type = "referential"

    def precondition_against(self, ctx: PlanContext, reference: DataFrame) -> str | None:
        params = self.check.params
        keys: list[str] = []
        theirs: list[str] = []
        for ours_name, their_name in zip(params["columns"], params.get("reference_columns") or params["columns"]):
            found, problem = resolve_column(ctx.schema, ours_name, ctx.case_sensitive, "the data")
            if found is None:
                return problem
            other, problem = self.their_column(ctx, reference, their_name)
            if other is None:
                return problem
            keys.append(found)
            theirs.append(other)
        as_of: tuple[str, str, str] | None = None
        if params.get("as_of"):
            spec = params["as_of"]
            event, problem = resolve_column(ctx.schema, spec["column"], ctx.case_sensitive, "the data")
            if event is None:
                return problem
            bounds: list[str] = []
            for key in ("valid_from", "valid_to"):
                bound, problem = self.their_column(ctx, reference, spec[key])
                if bound is None:
                    return problem
                bounds.append(bound)
            as_of = (event, bounds[0], bounds[1])
        self.join = ReferenceJoin(params["reference"], tuple(keys), tuple(theirs), as_of)
        self.key_columns = [column(k) for k in keys] + ([column(as_of[0])] if as_of else [])
        if ctx.frame is not None:
            try:  # analysis only (no job): incomparable key types surface here, as this check's error
                with quiet_pyspark_errors():
                    _ = unmatched(ctx.frame, reference, self.join).schema
            except Exception as exc:  # noqa: BLE001 - AnalysisException: incomparable key types
                return f"cannot join on {self.join.describe()}: {first_line(exc)}"
        return None

    def reference_join(self) -> ReferenceJoin | None:
        return self.join

    @property
    def any_key_null(self) -> Column:
        condition = F.lit(False)
        for key in self.key_columns:
            condition = condition | key.isNull()
        return condition

    def violation(self, window_count: Column | None = None) -> Column | None:
        """Per row, given the join's ``matched`` flag (passed in the ``window_count`` slot)."""
        if window_count is None:
            return None
        return self.orphan(window_count)

    def orphan(self, matched: Column) -> Column:
        """A row without a match that counts: any key NULL too with ``nulls: fail``, else all keys non-NULL."""
        if self.check.params.get("nulls") == "fail":
            return ~matched
        return ~self.any_key_null & ~matched

    def join_aggregations(self, scope: Scope, matched: Column) -> list[Column]:
        # Over the anti-join's rows (matched is false for all of them): orphans, and NULL keys for the note.
        return [scope.count_if(self.orphan(matched)), scope.count_if(self.any_key_null)]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        orphans, null_keys = count_value(ctx.extra[0]), count_value(ctx.extra[1])
        measurement = self.ratio(orphans, ctx, failed_rows=orphans)
        if null_keys:
            counted = "counted as orphans" if self.check.params.get("nulls") == "fail" else "not checked"
            measurement.note = f"{null_keys} row(s) with a NULL key {counted}"
        return measurement


class ReconciliationMetric(_AgainstReference):
    """``reconciliation``: ours − theirs (or relative to theirs) of a count, sum or distinct count."""

    check_type = "reconciliation"

    def precondition_against(self, ctx: PlanContext, reference: DataFrame) -> str | None:
        params = self.check.params
        self.measure_kind = params["measure"]
        if self.measure_kind == "count":
            return None
        found = ctx.field(params["column"])
        if found is None:
            return ctx.missing(params["column"])
        self.field = found
        theirs_name = params.get("reference_column") or params["column"]
        their_name, problem = self.their_column(ctx, reference, theirs_name)
        if problem:
            return problem
        self.their_field = next(f for f in reference.schema.fields if f.name == their_name)
        if self.measure_kind == "sum":
            for where, fld in (("the data", found), (f"reference {params['reference']!r}", self.their_field)):
                if not isinstance(fld.dataType, NUMERIC_TYPES):
                    return f"column {fld.name!r} of {where} is {type_name(fld.dataType)}; sum needs a number"
        return None

    def aggregations(self, scope: Scope) -> list[Column]:
        if self.measure_kind == "sum":
            return [sum_expression(self.col, self.data_type, scope), F.count(scope(self.col))]
        return []

    def group_keys(self) -> list[GroupKey] | None:
        if self.measure_kind == "count_distinct":
            return [GroupKey(f"col:{self.column_name}", self.col)]
        return None

    def group_aggregations(self, group: GroupScope) -> list[Column]:
        return [group.distinct_non_null()]

    def reference_aggregations(self) -> tuple[str, list[Column]] | None:
        alias = self.check.params["reference"]
        if self.measure_kind == "count":
            return alias, [F.count(F.lit(1))]
        name = self.their_field.name
        if self.measure_kind == "count_distinct":
            return alias, [F.count_distinct(column(name))]
        return alias, [sum_expression(name, self.their_field.dataType), F.count(column(name))]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        if self.measure_kind == "count":
            ours, theirs = float(ctx.row_count), to_float(ctx.extra[0])
        elif self.measure_kind == "count_distinct":
            ours, theirs = float(count_value(grouped[0])), to_float(ctx.extra[0])
        else:
            # A sum over no value is 0 here (nothing on one side reconciles with 0 on the other);
            # NULL with values present is an overflow.
            if scan[0] is None and count_value(scan[1]) or ctx.extra[0] is None and count_value(ctx.extra[1]):
                return Measurement.failure("the sum overflows 64-bit integers / its decimal type")
            ours, theirs = to_float(scan[0]) or 0.0, to_float(ctx.extra[0]) or 0.0
        assert theirs is not None
        note = f"ours {describe_number(ours)}, theirs {describe_number(theirs)}"
        if self.check.params.get("return") == "pct_diff":
            if theirs == 0:
                if ours == 0:
                    return Measurement(0.0, note=note)
                return Measurement.failure(f"{note}: pct_diff has no denominator (theirs is 0)")
            return Measurement((ours - theirs) / theirs, note=note)
        return Measurement(ours - theirs, note=note)
