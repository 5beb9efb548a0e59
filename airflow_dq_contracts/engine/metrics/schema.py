"""Schema conformance on Spark: ``<column>/schema`` (present, compatible type) and ``_table_/schema`` (exact mode).

Decided from the schema while planning; the type rules are the plain Python of
:mod:`airflow_dq_contracts.contract.conformance`. The scan adds what the schema cannot say: for a
column read as declared (:mod:`..text_read`), the values that did not parse (the check's failing
rows, tagged per row); for a declared numeric or time column that arrives as strings, how many of
its values are a likely null token, named in the message with the contract key that reads them as NULL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract import conformance
from airflow_dq_contracts.contract.column_paths import FIELD, Step, format_path, is_nested, top_name, try_parse
from airflow_dq_contracts.contract.model import ColumnType

from ..spark_types import column, count_value
from ..text_read import is_marker, unparsed_column
from .base import MeasureContext, Measurement, Metric, PlanContext, Scope

#: Strings that often stand for "no value" in text data: named when a typed column holds them.
NULL_TOKENS = ("NA", "N/A", "n/a", "na", "NULL", "null", "None", "NaN", "nan", "-", "#N/A", "?", "")
#: Declared kinds whose values a string column can hold only as text to parse.
_PARSED_KINDS = {
    "byte", "short", "int", "long", "float", "double", "decimal", "boolean", "date", "timestamp", "timestamp_ntz",
}  # fmt: skip
_PLAIN_YAML = re.compile(r"[A-Za-z][A-Za-z0-9_/#.]*")


def yaml_token(token: str) -> str:
    """A null token as written in a YAML flow list: plain when YAML reads it back as that string.

    >>> [yaml_token(t) for t in ("NA", "N/A", "null", "-", "")]
    ['NA', 'N/A', '"null"', '"-"', '""']
    """
    plain = _PLAIN_YAML.fullmatch(token) and token.lower() not in ("null", "true", "false", "yes", "no", "on", "off")
    return token if plain else json.dumps(token)


def null_token_hint(counts: Sequence[tuple[str, int]]) -> str:
    """``; 12 values are 'NA' — set dataset.null_values: [NA]`` for the tokens found (count > 0), else "".

    >>> print(null_token_hint([("NA", 12), ("N/A", 0), ("-", 3)]))
    ; 15 values are 'NA' or '-' — set dataset.null_values: [NA, "-"]
    """
    found = [(token, n) for token, n in counts if n]
    if not found:
        return ""
    total = sum(n for _, n in found)
    named = " or ".join(repr(token) for token, _ in found)
    listed = ", ".join(yaml_token(token) for token, _ in found)
    return f"; {total:,} value{'s are' if total != 1 else ' is'} {named} — set dataset.null_values: [{listed}]"


def _unparseable_tokens(declared: ColumnType) -> tuple[str, ...]:
    """The candidate null tokens a value of ``declared`` cannot be (``NaN`` is a double)."""
    floating = declared.kind in ("float", "double")
    return tuple(t for t in NULL_TOKENS if not (floating and t.lower() == "nan"))


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
    tops = (ctx.path(name) for name in declared)
    matched = {id(p.top) for p in tops if not isinstance(p, str)}
    return [f for f in ctx.schema.fields if id(f) not in matched and not is_marker(f.name)]


def _undeclared_fields(ctx: PlanContext, declared: Sequence[str]) -> list[str]:
    """Fields of the structs the contract opens that no declared path names (``address.zip``).

    A struct is *opened* when a declared path names one of its fields (``address.city`` opens
    ``address``; ``items[].sku`` opens the elements of ``items``); its other fields must then be
    declared too — by their own path, or as the parent of one. Declaring a struct without naming a
    field declares all of it; a map's keys are data, never fields (``attrs[color]`` opens nothing,
    also where JSON made ``attrs`` a struct).
    """
    resolved: list[tuple[Step, ...]] = []
    opened: dict[tuple[Step, ...], None] = {}
    for name in declared:
        found, written = ctx.path(name), try_parse(name)
        if isinstance(found, str) or not found.nested or written is None or len(written) != len(found.steps):
            continue
        resolved.append(found.steps)
        for index in range(1, len(found.steps)):
            if found.steps[index].kind == FIELD and written[index].kind == FIELD:
                opened[found.steps[:index]] = None
    known = {steps[:end] for steps in resolved for end in range(1, len(steps) + 1)}
    extra = []
    for parent in opened:
        node = ctx.path(format_path(parent))
        if isinstance(node, str) or not isinstance(node.data_type, T.StructType):
            continue
        for child in node.data_type.fields:
            path = (*parent, Step(FIELD, child.name))
            if path not in known:
                extra.append(format_path(path))
    return extra


class ColumnSchemaMetric(Metric):
    """``schema`` (``<column>/schema``): the declared column is present with a compatible type.

    Decided from the schema while planning: the metric is the number of problems (0 or 1). A missing
    column is a failure, not an error — that is the finding — with the likely replacement named
    (:func:`~airflow_dq_contracts.contract.conformance.rename_hint`). A deprecated column may be
    absent: the check passes and says so. A declared numeric or time column that arrives as strings
    also counts, in the scan, its values that are likely null tokens (:data:`NULL_TOKENS`), named in
    the message.

    A column read as declared (its unparsed marker in the frame, :mod:`..text_read`) is present with
    its declared type; the metric is then the number of rows whose value did not parse — the check's
    failing rows, each tagged (:meth:`violation`) and set aside per the check's action.
    """

    check_type, level = "schema", "column"

    def precondition(self, ctx: PlanContext) -> str | None:
        self.marker: str | None = None
        self.hints: tuple[str, ...] = ()
        self.finding = self._finding(ctx)
        name = unparsed_column(self.check.column or "")
        if self.field is not None and ctx.frame is not None and name in ctx.frame.columns:
            self.marker = name
        return None

    def _finding(self, ctx: PlanContext) -> Measurement:
        params, name = self.check.params, self.check.column or ""
        declared: ColumnType | None = params.get("declared_type")
        found = ctx.path(name)
        if isinstance(found, str) and is_nested(name) and not isinstance(ctx.path(top_name(name)), str):
            # the top-level column is there; a field, key or element below it is not
            if params.get("deprecated"):
                return Measurement(0.0, note=f"deprecated column {name} is absent")
            return Measurement(1.0, reason=f"missing column {name}: {found}")
        if not isinstance(found, str):
            self.path, self.field = found, found.field()
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
            if actual.kind == "string" and declared.kind in _PARSED_KINDS and not self.elements:
                self.hints = _unparseable_tokens(declared)
            return Measurement(
                1.0,
                reason=f"column {name} is {actual.describe()} in the data but declared "
                f"{declared.describe()} (not the same type or a lossless widening of it)",
            )
        return Measurement(0.0)

    def aggregations(self, scope: Scope) -> list[Column]:
        if self.marker is not None:
            marker = column(self.marker)
            declared: ColumnType | None = self.check.params.get("declared_type")
            token = F.when(marker.isin(*_unparseable_tokens(declared or ColumnType("string"))), marker)
            return [
                F.count(scope(marker)),
                F.min(scope(marker)),
                F.max(scope(marker)),
                F.count(scope(token)),
                F.min(scope(token)),
                F.max(scope(token)),
            ]
        return [scope.count_if(self.col == F.lit(token)) for token in self.hints]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        if self.marker is not None and self.finding.metric_value == 0:
            return self._unparsed(scan)
        if self.hints:
            hint = null_token_hint([(token, count_value(n)) for token, n in zip(self.hints, scan)])
            return Measurement(self.finding.metric_value, reason=self.finding.reason + hint)
        return self.finding

    def _unparsed(self, scan: Sequence[Any]) -> Measurement:
        count, low, high, tokens, token_low, token_high = scan
        count = count_value(count)
        if not count:
            return Measurement(0.0, failed_rows=0)
        declared: ColumnType | None = self.check.params.get("declared_type")
        examples = ", ".join(repr(v) for v in dict.fromkeys((low, high)))
        tokens = count_value(tokens)
        found = list(dict.fromkeys((token_low, token_high))) if tokens else []
        # Two distinct tokens at most are known by name: their total is split only when there is one.
        hint = null_token_hint([(found[0], tokens)]) if len(found) == 1 else ""
        if len(found) > 1:
            listed = ", ".join(yaml_token(t) for t in found)
            hint = f"; {tokens:,} are null-like ({', '.join(map(repr, found))}) — set dataset.null_values: [{listed}]"
        what = declared.describe() if declared is not None else "its declared type"
        return Measurement(
            float(count),
            failed_rows=count,
            reason=f"{count:,} value{'s' if count != 1 else ''} of column {self.check.column} "
            f"{'do' if count != 1 else 'does'} not parse as {what} (e.g. {examples}){hint}",
        )

    def violation(self, window_count: Column | None = None) -> Column | None:
        """A row whose value of this column did not parse as declared (only for a column read as declared)."""
        return column(self.marker).isNotNull() if self.marker is not None else None


class TableSchemaMetric(Metric):
    """``schema`` (``_table_/schema``, mode ``exact``): the number of undeclared columns in the data.

    Nested fields count too: in a struct the contract opens (declares a field of), every undeclared
    sibling is one (``address.zip`` beside a declared ``address.city``; :func:`_undeclared_fields`).
    """

    check_type, level = "schema", "table"

    def precondition(self, ctx: PlanContext) -> str | None:
        declared = self.check.params.get("declared", ())
        extra = [f.name for f in _undeclared(ctx, declared)] + _undeclared_fields(ctx, declared)
        self.finding = Measurement(
            float(len(extra)),
            reason=f"undeclared column(s) in the data: {', '.join(extra)} (enforcement.schema mode exact)",
        )
        return None

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        return self.finding
