"""Schema conformance on Spark: ``<column>/schema`` (present, compatible type) and ``_table_/schema`` (exact mode).

Decided from the schema alone while planning (no Spark job); the type rules are the plain Python
of :mod:`airflow_dq_contracts.contract.conformance`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import types as T

from airflow_dq_contracts.contract import conformance
from airflow_dq_contracts.contract.model import ColumnType

from .base import MeasureContext, Measurement, Metric, PlanContext

#: Spark's atomic types in the contract's type vocabulary (also what ``suggest`` declares for them).
SCALAR_KINDS: dict[type, str] = {
    T.ByteType: "byte",
    T.ShortType: "short",
    T.IntegerType: "int",
    T.LongType: "long",
    T.FloatType: "float",
    T.DoubleType: "double",
    T.StringType: "string",
    T.VarcharType: "string",
    T.CharType: "string",
    T.BooleanType: "boolean",
    T.DateType: "date",
    T.TimestampType: "timestamp",
    T.TimestampNTZType: "timestamp_ntz",
    T.BinaryType: "binary",
}
_SIMPLE_KINDS: dict[type, str] = {**SCALAR_KINDS, T.StructType: "struct"}


def declared_kind(data_type: T.DataType) -> ColumnType:
    """A Spark type in the contract's type vocabulary (``LongType`` → ``long``, arrays → ``list<…>``).

    >>> declared_kind(T.ArrayType(T.IntegerType())).describe()
    'list<int>'
    """
    if isinstance(data_type, T.DecimalType):
        return ColumnType("decimal", precision=data_type.precision, scale=data_type.scale)
    if isinstance(data_type, T.ArrayType):
        return ColumnType("list", value_type=declared_kind(data_type.elementType))
    if isinstance(data_type, T.MapType):
        return ColumnType(
            "map", key_type=declared_kind(data_type.keyType), value_type=declared_kind(data_type.valueType)
        )
    return ColumnType(_SIMPLE_KINDS.get(type(data_type), data_type.simpleString()))


def _undeclared(ctx: PlanContext, declared: Sequence[str]) -> list[T.StructField]:
    """Fields of the data that no declared column resolves to (Spark's case rule)."""
    matched = {id(f) for f in (ctx.field(name) for name in declared) if f is not None}
    return [f for f in ctx.schema.fields if id(f) not in matched]


class ColumnSchemaMetric(Metric):
    """``schema`` (``<column>/schema``): the declared column is present with a compatible type.

    Decided from the schema alone, while planning (no Spark job): the metric is the number of
    problems (0 or 1). A missing column is a failure, not an error — that is the finding — with the
    likely replacement named (:func:`~airflow_dq_contracts.contract.conformance.rename_hint`). A
    deprecated column may be absent: the check passes and says so.
    """

    check_type, level = "schema", "column"

    def precondition(self, ctx: PlanContext) -> str | None:
        self.finding = self._finding(ctx)
        return None

    def _finding(self, ctx: PlanContext) -> Measurement:
        params, name = self.check.params, self.check.column or ""
        declared: ColumnType | None = params.get("declared_type")
        self.field = ctx.field(name)
        if self.field is None:
            if params.get("deprecated"):
                details = [
                    f"replaced by {params['deprecated_by']}" if params.get("deprecated_by") else "",
                    f"sunset {params['sunset'].isoformat()}" if params.get("sunset") else "",
                ]
                extra = "; ".join(d for d in details if d)
                return Measurement(0.0, note=f"deprecated column {name} is absent" + (f" ({extra})" if extra else ""))
            old = params.get("renamed_from")
            if old and ctx.field(old) is not None:
                return Measurement(1.0, reason=f"missing column {name} — the data still has its old name {old}")
            undeclared = [(f.name, declared_kind(f.dataType)) for f in _undeclared(ctx, params.get("declared", ()))]
            hint = conformance.rename_hint(name, declared, undeclared)
            return Measurement(
                1.0, reason=f"missing column {name}" + (f" — did the producer rename it to {hint}?" if hint else "")
            )
        actual = declared_kind(self.field.dataType)
        if not conformance.compatible(declared, actual):
            assert declared is not None
            return Measurement(
                1.0,
                reason=f"column {name} is {actual.describe()} in the data but declared "
                f"{declared.describe()} (not the same type or a lossless widening of it)",
            )
        return Measurement(0.0)

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        return self.finding


class TableSchemaMetric(Metric):
    """``schema`` (``_table_/schema``, mode ``exact``): the number of undeclared columns in the data."""

    check_type, level = "schema", "table"

    def precondition(self, ctx: PlanContext) -> str | None:
        extra = [f.name for f in _undeclared(ctx, self.check.params.get("declared", ()))]
        self.finding = Measurement(
            float(len(extra)),
            reason=f"undeclared column(s) in the data: {', '.join(extra)} (enforcement.schema mode exact)",
        )
        return None

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        return self.finding
