"""The engine's Spark vocabulary: type families, column references, numbers and instants from Spark values.

Shared by the metrics (:mod:`.metrics`) and the passes beyond the dataset (:mod:`.relational`); it
imports nothing else of the engine. See :mod:`.metrics` for the semantics these helpers implement
(DESIGN §4: instants are UTC, whatever the session time zone).

Example::

    >>> quote("order.id")
    '`order.id`'
    >>> describe_number(2.0), describe_number(float("inf"))
    ('2', '+Infinity')
"""

from __future__ import annotations

import decimal
import math
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.sqltext import quote_identifier as quote

INTEGRAL_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
NUMERIC_TYPES = (*INTEGRAL_TYPES, T.FloatType, T.DoubleType, T.DecimalType)
TIME_TYPES = (T.DateType, T.TimestampType, T.TimestampNTZType)
LENGTH_TYPES = (T.StringType, T.ArrayType, T.MapType)

MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR

# A string carries its own zone when a clock time is followed by Z, an offset, UTC/GMT(±offset) or
# a region id. Anything else is a naive wall-clock time, read as UTC (DESIGN §4). Requiring the
# clock time first keeps "2024-01-31" (whose "-31" looks like an offset) naive.
_ZONED_TEXT = (
    r"(?i)\d{1,2}:\d{2}(:\d{2}(\.\d*)?)?\s*"
    r"(z|(utc|gmt|ut)?\s*[+-]\d{1,2}(:?\d{2}){0,2}|utc|gmt|ut|[a-z_]+/[a-z_]+(/[a-z_]+)?)\s*$"
)


def column(name: str) -> Column:
    """``F.col`` for a top-level column whose name may contain dots or spaces."""
    return F.col(quote(name))


def type_name(data_type: T.DataType) -> str:
    """Short Spark SQL name of a type, for messages (``bigint``, ``array<string>``)."""
    return data_type.simpleString()


def find_field(schema: T.StructType, name: str, case_sensitive: bool = False) -> T.StructField | None:
    """The top-level field called ``name`` under Spark's case rule (a unique case-insensitive match), or None.

    >>> schema = T.StructType([T.StructField("Amount", T.LongType())])
    >>> find_field(schema, "amount").name, find_field(schema, "amount", case_sensitive=True)
    ('Amount', None)
    """
    for candidate in schema.fields:
        if candidate.name == name:
            return candidate
    if not case_sensitive:
        matches = [f for f in schema.fields if f.name.lower() == name.lower()]
        if len(matches) == 1:
            return matches[0]
    return None


def describe_number(value: float) -> str:
    """A metric for a message: integers without ``.0``, others with up to 10 significant digits."""
    if math.isinf(value):
        return "+Infinity" if value > 0 else "-Infinity"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}"


def to_float(value: Any) -> float | None:
    """A Spark aggregate result (int, Decimal, float, None) as a Python float.

    >>> to_float(decimal.Decimal("2.5")), to_float(None)
    (2.5, None)
    """
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return math.nan
        return float(value)
    return float(value)


def count_value(value: Any) -> int:
    """A Spark count (or a sum of counts, NULL over no rows) as an int: NULL reads as 0.

    >>> count_value(None), count_value(3)
    (0, 3)
    """
    return int(value or 0)


def groupable(data_type: T.DataType) -> bool:
    """Whether Spark can group by a column of this type (not by maps, nor by anything holding one).

    >>> groupable(T.ArrayType(T.MapType(T.StringType(), T.LongType())))
    False
    """
    if isinstance(data_type, T.MapType):
        return False
    if isinstance(data_type, T.ArrayType):
        return groupable(data_type.elementType)
    if isinstance(data_type, T.StructType):
        return all(groupable(f.dataType) for f in data_type.fields)
    return True


def instant_micros(name: str, data_type: T.DataType, value: Column | None = None) -> Column | None:
    """Epoch microseconds (UTC) of a date / timestamp / timestamp_ntz / string column, or None.

    Independent of the session time zone: ``timestamp_ntz`` and zone-less strings are wall-clock
    UTC; dates are midnight UTC; unparseable strings give NULL (``try_cast``, so ANSI mode never
    fails the scan). ``value`` (an expression, e.g. a nested field or a lambda variable) is read
    instead of the column ``name`` when given.
    """
    if value is not None:
        return _instant_micros_of(value, data_type)
    ident = quote(name)
    if isinstance(data_type, T.TimestampType):
        return F.unix_micros(column(name))
    if isinstance(data_type, T.TimestampNTZType):
        return F.expr(f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {ident})")
    if isinstance(data_type, T.DateType):
        return F.unix_date(column(name)).cast("long") * F.lit(MICROS_PER_DAY)
    if isinstance(data_type, T.StringType):
        zoned = F.expr(f"unix_micros(try_cast({ident} AS TIMESTAMP))")
        naive = F.expr(
            f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', try_cast({ident} AS TIMESTAMP_NTZ))"
        )
        return F.when(column(name).rlike(_ZONED_TEXT), zoned).otherwise(naive)
    return None


_EPOCH_NTZ = "1970-01-01 00:00:00"


def _instant_micros_of(value: Column, data_type: T.DataType) -> Column | None:
    """:func:`instant_micros` of an expression (the same rules, through Column functions)."""
    epoch = F.to_timestamp_ntz(F.lit(_EPOCH_NTZ))
    if isinstance(data_type, T.TimestampType):
        return F.unix_micros(value)
    if isinstance(data_type, T.TimestampNTZType):
        return F.timestamp_diff("MICROSECOND", epoch, value)
    if isinstance(data_type, T.DateType):
        return F.unix_date(value).cast("long") * F.lit(MICROS_PER_DAY)
    if isinstance(data_type, T.StringType):
        zoned = F.unix_micros(value.try_cast("timestamp"))
        naive = F.timestamp_diff("MICROSECOND", epoch, value.try_cast("timestamp_ntz"))
        return F.when(value.rlike(_ZONED_TEXT), zoned).otherwise(naive)
    return None
