"""Read text as declared: null tokens to NULL, declared columns parsed to their types, unparseable values kept.

A CSV's values are text, and so are a JSON document's strings: the reader (:mod:`.runner`) loads them
as text and :func:`as_declared` turns them into the contract's types — never silently: a value that is
present (not NULL, not a null token) but does not parse as its column's declared type becomes NULL in
that column *and* is kept, as written, in the column's **unparsed marker** (:func:`unparsed_column`).
The column's ``<column>/schema`` check counts the rows whose marker is set (its failing rows) and tags
them, so they are quarantined per its action (:mod:`.metrics.schema`). Markers are the run's own:
nothing shows them — the planned schema, ``sql`` check views and the written tables drop them
(:func:`visible`, :func:`is_marker`).

Parsing is strict where Spark's casts are lenient: an integral column takes whole numbers only
(``12`` and ``12.0``, not ``12.5``); dates and timestamps take Spark's cast formats, or the reader's
``dateFormat`` / ``timestampFormat`` option when given. Example (needs a SparkSession)::

    typed = as_declared(spark.read.option("header", "true").csv(path), source)
    typed.where(F.col(unparsed_column("amount")).isNotNull())     # the amounts that did not parse
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import ColumnType
from airflow_dq_contracts.runspec import DatasetSource

from .spark_types import column, find_field

#: The prefix of the unparsed markers (never a column of the data, never written).
UNPARSED_PREFIX = "__dq_unparsed__"

_INTEGRAL = {"byte": T.ByteType(), "short": T.ShortType(), "int": T.IntegerType(), "long": T.LongType()}
_SCALAR: dict[str, T.DataType] = {
    **_INTEGRAL,
    "float": T.FloatType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "date": T.DateType(),
    "timestamp": T.TimestampType(),
    "timestamp_ntz": T.TimestampNTZType(),
    "string": T.StringType(),
}
_WHOLE_NUMBER = r"^\s*[+-]?\d+(\.0*)?\s*$"


def unparsed_column(name: str) -> str:
    """The marker of declared column ``name``: its value as written where it did not parse, else NULL.

    >>> unparsed_column("amount")
    '__dq_unparsed__amount'
    """
    return UNPARSED_PREFIX + name


def is_marker(name: str) -> bool:
    """Whether a column of the run's frame is an unparsed marker (not the data's)."""
    return name.startswith(UNPARSED_PREFIX)


def visible(df: DataFrame) -> DataFrame:
    """``df`` without the unparsed markers (what is written, shown, or handed to a caller)."""
    markers = [name for name in df.columns if is_marker(name)]
    return df.drop(*markers) if markers else df


def declared_spark_type(declared: ColumnType | None) -> T.DataType | None:
    """The Spark type a value of ``declared`` is parsed to (scalars and decimals), or None (kept as read).

    >>> declared_spark_type(ColumnType("decimal", precision=10, scale=2)), declared_spark_type(ColumnType("list"))
    (DecimalType(10,2), None)
    """
    if declared is None:
        return None
    if declared.kind == "decimal":
        if declared.precision is None:
            return T.DecimalType(38, 18)
        return T.DecimalType(declared.precision, declared.scale or 0)
    return _SCALAR.get(declared.kind)


def parse(text: Column, declared: ColumnType, target: T.DataType, options: Mapping[str, str]) -> Column:
    """``text`` (a string column) parsed as ``declared``; NULL where it does not parse (no ANSI error)."""
    if declared.kind in _INTEGRAL:
        whole = text.try_cast(T.DecimalType(38, 0)).try_cast(target)
        return F.when(text.rlike(_WHOLE_NUMBER), whole)
    if declared.kind == "date" and options.get("dateFormat"):
        return F.try_to_timestamp(text, F.lit(options["dateFormat"])).cast(T.DateType())
    if declared.kind == "timestamp" and options.get("timestampFormat"):
        return F.try_to_timestamp(text, F.lit(options["timestampFormat"]))
    return text.try_cast(target)


def as_declared(df: DataFrame, source: DatasetSource, case_sensitive: bool = False) -> DataFrame:
    """``df`` (as read from ``source``) read as declared: null tokens → NULL in every string column,
    declared columns parsed to their types, one unparsed marker per parsed column (after the data's columns).

    A string column declared otherwise is parsed; in a text format, so is any scalar read as another
    type than declared (a JSON number under a declared ``int``: ``12.5`` does not parse); a scalar
    declared ``string`` is read as text. Anything else (lists, maps, structs, a type already as
    declared) is kept; the schema check judges it.
    """
    tokens = source.null_tokens
    declared: dict[str, tuple[str, ColumnType]] = {}
    for name, kind in source.columns.items():
        field = find_field(df.schema, name, case_sensitive) if kind is not None else None
        if field is not None and kind is not None:
            declared.setdefault(field.name, (name, kind))
    columns: list[Column] = []
    markers: list[Column] = []
    for field in df.schema.fields:
        value = column(field.name)
        string = isinstance(field.dataType, T.StringType)
        if string and tokens:
            value = F.when(~value.isin(*tokens), value)
        name, kind = declared.get(field.name, (field.name, None))
        target = declared_spark_type(kind) if source.read_as_declared else None
        atomic = isinstance(field.dataType, T.AtomicType)
        if kind is None or target is None or field.dataType == target or not (string or (source.text and atomic)):
            columns.append(value.alias(field.name))
            continue
        text = value if string else value.cast(T.StringType())
        if isinstance(target, T.StringType):
            columns.append(text.alias(field.name))
            continue
        parsed = parse(text, kind, target, source.options)
        columns.append(parsed.alias(field.name))
        markers.append(F.when(text.isNotNull() & parsed.isNull(), text).alias(unparsed_column(name)))
    return df.select(*columns, *markers)
