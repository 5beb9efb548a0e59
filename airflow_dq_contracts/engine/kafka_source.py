"""Kafka topics as a contract's dataset (``dataset: {format: kafka, options: …}``): JSON values decoded as declared.

Spark's Kafka source (``spark-sql-kafka-0-10``, put on the session by
:func:`airflow_dq_contracts.engine.session.get_spark` ``(kafka=True)``) reads the messages; each
message's ``value`` is UTF-8 JSON text, decoded with ``from_json`` against the contract's declared
columns. Scalars are decoded as *text* and then parsed by :func:`~.text_read.as_declared` exactly like a
JSON file's (a value that does not parse as its declared type is NULL *and* counted by the column's
``schema`` check, never silently lost); lists and maps of scalars get their declared Spark type. A
message whose value is not a JSON object reads as NULL in every declared column.

The frame of a contract run is the declared columns only. :func:`read_kafka` ``(metadata=True)`` adds
Kafka's own fields as :data:`METADATA_COLUMNS` (``_kafka_topic``, ``_kafka_partition``,
``_kafka_offset``, ``_kafka_timestamp``, ``_kafka_key``) for callers that track positions (streams).

Batch reads take the reader options as given; ``startingOffsets`` / ``endingOffsets`` default to
Spark's batch defaults (``earliest`` / ``latest``). Example (needs a SparkSession with the Kafka jars)::

    df = read_kafka(spark, {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"},
                    {"id": ColumnType("long"), "amount": ColumnType("double")})
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import ColumnType

from .text_read import declared_spark_type

#: Kafka's own fields of a message, as :func:`read_kafka` ``(metadata=True)`` names them.
METADATA_COLUMNS = {
    "topic": "_kafka_topic",
    "partition": "_kafka_partition",
    "offset": "_kafka_offset",
    "timestamp": "_kafka_timestamp",
    "key": "_kafka_key",
}
_VALUE = "__dq_kafka_value__"


def decode_type(declared: ColumnType | None) -> T.DataType:
    """The type a declared column is decoded to from JSON: text for scalars (parsed later, as declared),
    the declared type for lists and maps (their scalar elements as declared), else text.

    >>> decode_type(ColumnType("long")), decode_type(ColumnType("list", value_type=ColumnType("int")))
    (StringType(), ArrayType(IntegerType(), True))
    """
    if declared is None:
        return T.StringType()
    if declared.kind == "list":
        return T.ArrayType(_element(declared.value_type))
    if declared.kind == "map":
        return T.MapType(T.StringType(), _element(declared.value_type))
    return T.StringType()


def _element(declared: ColumnType | None) -> T.DataType:
    if declared is not None and declared.kind in ("list", "map"):
        return decode_type(declared)
    return declared_spark_type(declared) or T.StringType()


def value_schema(columns: Mapping[str, ColumnType | None]) -> T.StructType:
    """The ``from_json`` schema of a message value: one field per declared column (:func:`decode_type`)."""
    return T.StructType([T.StructField(name, decode_type(kind)) for name, kind in columns.items()])


def decode(raw: DataFrame, columns: Mapping[str, ColumnType | None], metadata: bool = False) -> DataFrame:
    """A frame of Kafka messages (Spark's Kafka source schema, batch or streaming) decoded as declared."""
    schema = value_schema(columns)
    parsed = F.from_json(F.col("value").cast(T.StringType()), schema, {"mode": "PERMISSIVE"})
    extra = [
        (F.col(field).cast(T.StringType()) if field == "key" else F.col(field)).alias(name)
        for field, name in METADATA_COLUMNS.items()
    ]
    frame = raw.select(parsed.alias(_VALUE), *(extra if metadata else []))
    return frame.select(
        *(F.col(f"`{_VALUE}`")[name].alias(name) for name in columns),
        *(METADATA_COLUMNS.values() if metadata else []),
    )


def read_kafka(
    spark: SparkSession,
    options: Mapping[str, str],
    columns: Mapping[str, ColumnType | None],
    metadata: bool = False,
) -> DataFrame:
    """A batch read of the topic(s) ``options`` name (Spark's Kafka reader options), decoded as declared.

    ``columns``: declared name → type (``{}`` gives no columns). Raises what Spark raises (no Kafka jars
    on the session: ``Failed to find data source: kafka``).
    """
    return decode(spark.read.format("kafka").options(**options).load(), columns, metadata)
