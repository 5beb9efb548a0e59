"""Value checks and lengths: ``whitelist``, ``blacklist``, ``pattern`` and ``min/max/avg_length``.

A value check's metric counts *conforming non-null* rows; ``failed_rows`` counts the non-null rows
that do not conform (NULLs are neither). Lengths are characters (code points) of strings and
elements of lists and maps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.checks import FORMAT_PATTERNS, REGEX_FLAGS
from airflow_dq_contracts.engine.spark_types import LENGTH_TYPES, NUMERIC_TYPES, count_value, type_name

from .base import MeasureContext, Measurement, Metric, PlanContext, Scope
from .statistics import ReducedStatistic


class _ConformanceMetric(Metric):
    """A value check: the metric counts conforming non-null rows; non-null others are violations."""

    def conforming(self) -> Column:
        """True for a non-null value that conforms (only evaluated on non-null values)."""
        raise NotImplementedError

    reads_elements = True

    def aggregations(self, scope: Scope) -> list[Column]:
        if self.elements:
            # A row conforms when it has a value and none of its non-null values breaks the rule.
            return [scope.count_if(self.has_value() & ~self.breaks()), scope.count_if(self.has_value())]
        # Non-conforming = non-null − conforming: the rule (a regex, say) runs once per row.
        return [scope.count_if(self.col.isNotNull() & self.conforming()), F.count(scope(self.col))]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        conforming = count_value(scan[0])
        return self.ratio(conforming, ctx, failed_rows=count_value(scan[1]) - conforming)

    def breaks(self) -> Column:
        """Per row: some non-null value does not conform (for an elements path: any element)."""
        return self.any_value(lambda: self.col.isNotNull() & ~self.conforming())

    def violation(self, window_count: Column | None = None) -> Column | None:
        return self.breaks()


def _text(value: Any) -> str:
    """A YAML scalar as the text Spark would show (``true``, ``1``, ``2.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


_NUMBER_TEXT = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$")


class _MembershipMetric(_ConformanceMetric):
    """Shared by whitelist and blacklist: ``values`` converted to the column's type (see module doc)."""

    def precondition(self, ctx: PlanContext) -> str | None:
        problem = super().precondition(ctx)
        if problem:
            return problem
        data_type = self.data_type
        values = list(self.check.params["values"])
        self.lower = False
        self.as_text = False
        if isinstance(data_type, T.StringType):
            self.values: list[Any] = [_text(v) for v in values]
            self.lower = not self.check.params.get("case_sensitive", True)
            if self.lower:
                self.values = [v.lower() for v in self.values]
        elif isinstance(data_type, NUMERIC_TYPES):
            converted = []
            for value in values:
                if isinstance(value, bool) or not (
                    isinstance(value, (int, float)) or (isinstance(value, str) and _NUMBER_TEXT.match(value))
                ):
                    return (
                        f"value {value!r} can never equal a number of column {self.column_name!r} "
                        f"({type_name(data_type)}); give numbers"
                    )
                number = (
                    value
                    if not isinstance(value, str)
                    else (int(value) if re.fullmatch(r"\s*[+-]?\d+\s*", value) else float(value))
                )
                # Spark literals are 64-bit: a larger integer can only be compared as a double.
                if isinstance(number, int) and not -(2**63) <= number < 2**63:
                    number = float(number)
                converted.append(number)
            self.values = converted
        elif isinstance(data_type, T.BooleanType):
            converted = []
            for value in values:
                if isinstance(value, bool):
                    converted.append(value)
                elif isinstance(value, str) and value.strip().lower() in ("true", "false"):
                    converted.append(value.strip().lower() == "true")
                else:
                    return f"value {value!r} can never equal a boolean of column {self.column_name!r}; give true/false"
            self.values = converted
        elif isinstance(data_type, (T.ArrayType, T.MapType, T.StructType, T.BinaryType)):
            return f"column {self.column_name!r} is {type_name(data_type)}; {self.check.type} compares scalar values"
        else:  # dates, timestamps, intervals…: compared as their text
            self.values = [_text(v) for v in values]
            self.as_text = True
        return None

    @property
    def compared(self) -> Column:
        """The value as compared with ``values`` (dates, timestamps… as their text)."""
        return self.col.cast("string") if self.as_text else self.col

    def member(self) -> Column:
        target = F.lower(self.compared) if self.lower else self.compared
        return target.isin(self.values)


class WhitelistMetric(_MembershipMetric):
    """``whitelist``: non-null values in ``values`` conform."""

    check_type, level = "whitelist", "column"

    def conforming(self) -> Column:
        return self.member()


class BlacklistMetric(_MembershipMetric):
    """``blacklist``: non-null values not in ``values`` conform."""

    check_type, level = "blacklist", "column"

    def conforming(self) -> Column:
        return ~self.member()


def java_pattern(params: dict[str, Any]) -> str:
    """The regex Spark runs for a ``pattern`` check: ``format`` shortcut or ``pattern`` with inline flags.

    >>> java_pattern({"pattern": "^a", "flags": ["IGNORECASE"]})
    '(?i)^a'
    """
    if params.get("format"):
        return FORMAT_PATTERNS[params["format"]]
    flags = "".join(sorted({REGEX_FLAGS[f] for f in params.get("flags") or ()}))
    return (f"(?{flags})" if flags else "") + params["pattern"]


class PatternMetric(_ConformanceMetric):
    """``pattern``: non-null values where the (Java) regex finds a match conform (``rlike``)."""

    check_type, level = "pattern", "column"

    def precondition(self, ctx: PlanContext) -> str | None:
        problem = super().precondition(ctx)
        if problem:
            return problem
        if isinstance(self.data_type, (T.ArrayType, T.MapType, T.StructType, T.BinaryType)):
            return f"column {self.column_name!r} is {type_name(self.data_type)}; pattern matches text"
        self.regex = java_pattern(self.check.params)
        complaint = ctx.regex_error(self.regex)
        if complaint:
            return f"invalid Java regular expression {self.regex!r}: {complaint}"
        return None

    def conforming(self) -> Column:
        text = self.col if isinstance(self.data_type, T.StringType) else self.col.cast("string")
        return text.rlike(self.regex)


# --------------------------------------------------------------------------------------- lengths


class _LengthMetric(ReducedStatistic):
    """``min_length`` / ``max_length`` / ``avg_length``: a length statistic, or conforming rows with ``return``."""

    def precondition(self, ctx: PlanContext) -> str | None:
        return self.require_type(ctx, LENGTH_TYPES, "a string, list or map column")

    @property
    def value(self) -> Column:
        """The length: characters (code points) of a string, elements of a list or map; NULL for NULL."""
        if isinstance(self.data_type, T.StringType):
            return F.char_length(self.col)
        # size(NULL) is -1 under legacy settings: guard it so NULL stays NULL.
        return F.when(self.col.isNotNull(), F.size(self.col))

    def conforming(self) -> Column:
        low, high = self.check.params.get("length_min"), self.check.params.get("length_max")
        condition = self.col.isNotNull()
        if low is not None:
            condition = condition & (self.value >= F.lit(int(low)))
        if high is not None:
            condition = condition & (self.value <= F.lit(int(high)))
        return condition

    def aggregations(self, scope: Scope) -> list[Column]:
        if self.return_type:
            if self.elements:
                breaks = self.any_value(lambda: self.col.isNotNull() & ~self.conforming())
                return [scope.count_if(self.has_value() & ~breaks), scope.count_if(self.has_value())]
            return [scope.count_if(self.conforming()), F.count(scope(self.col))]
        return super().aggregations(scope)

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        if self.return_type:
            conforming = count_value(scan[0])
            return self.ratio(conforming, ctx, failed_rows=count_value(scan[1]) - conforming)
        return super().measure(scan, grouped, ctx)

    def violation(self, window_count: Column | None = None) -> Column | None:
        if self.return_type:
            return self.any_value(lambda: self.col.isNotNull() & ~self.conforming())
        return self.statistic_violation()


class MinLengthMetric(_LengthMetric):
    """``min_length``; per row without ``return``: length < lower bound − tolerance."""

    check_type, level, reducer, side = "min_length", "column", F.min, "lower"
    element_reducer = "array_min"


class MaxLengthMetric(_LengthMetric):
    """``max_length``; per row without ``return``: length > upper bound + tolerance."""

    check_type, level, reducer, side = "max_length", "column", F.max, "upper"
    element_reducer = "array_max"


class AvgLengthMetric(_LengthMetric):
    """``avg_length``: mean length of non-null values (no per-row reading without ``return``)."""

    check_type, level, reducer = "avg_length", "column", F.avg
    reads_elements = False
