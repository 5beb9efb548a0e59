"""The store's Delta operations in plain SQL, for a Spark Connect session (no JVM gateway in this process).

A Spark Connect client reaches the server through gRPC only: there is no ``sparkContext`` and no
``_jvm``, and Delta's Python ``DeltaTable`` API sends Delta's own Connect messages, which an open-source
Spark Connect server understands only with Delta's server plugin — not published for Spark 4.1 with
Delta 4.4. Every Delta statement the store needs exists in SQL, which any Connect server with Delta's
SQL extensions executes (Databricks' included), so on a Connect session
:class:`~airflow_dq_contracts.store.spark_tables.SparkTarget` routes these operations here:

==========================  ===============================================================
``DeltaTable`` API           SQL here
==========================  ===============================================================
``isDeltaTable`` of a path  ``DESCRIBE DETAIL delta.`<path>``` → ``format = 'delta'``
``forName(name)`` probe      ``DESCRIBE DETAIL <name>`` → ``format = 'delta'``
a run's catalog names        ``SHOW TABLE EXTENDED IN <db> LIKE 'a|b'`` (the metastore's entries, no Delta log)
``createIfNotExists()``      ``CREATE TABLE IF NOT EXISTS … USING DELTA [LOCATION …]``
``history(n)``               ``DESCRIBE HISTORY … LIMIT n``
``delete(condition)``        ``DELETE FROM … WHERE …``
==========================  ===============================================================

The driver-side shortcuts of the spark-submit job — delta-rs commits and reads from the driver
(:mod:`~airflow_dq_contracts.store.results.driver_commits`) — are off on Connect
(:attr:`SessionCapabilities.remote`): the client is not where Spark runs, and a path means what it
means *on the server*. Unless the client says it sees the server's output paths
(:attr:`SessionCapabilities.shared_storage`, the job's ``--shared-storage``): the operator's Connect
transport always does, because the operator reads every output table back with delta-rs from the
same worker (so a worker that did not see them could not run a Connect task at all). Then the
results table and the registry are committed by delta-rs from the client as in a spark-submit job
(:attr:`SessionCapabilities.driver_sees_outputs`), and the client holds the machine-wide commit lock
around the server's commits to local tables. Inputs are not covered: they stay the server's alone.

What a session can do is decided once, where the session is made (the job's entry, ``dq-contracts
run``), as a :class:`SessionCapabilities` value that the engine and the store's Spark adapters
(:class:`~airflow_dq_contracts.store.spark_tables.SparkTarget`, the sinks, ``SparkResultsStore``)
are handed — none of them asks a process-wide switch.

Example::

    capabilities = SessionCapabilities.of(spark, shared_storage=True)
    if capabilities.remote:
        created = create_table_sql("delta.`/wh/q`", schema, ["order_date"])
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

__all__ = [
    "SessionCapabilities",
    "catalog_locations",
    "catalog_tables",
    "create_table_sql",
    "delete_where",
    "describe_detail",
    "history",
    "is_delta",
    "no_such_table",
    "table_reference",
]


@dataclasses.dataclass(frozen=True)
class SessionCapabilities:
    """What a run's Spark session can do, decided once where the session is made and passed down.

    * ``remote``: a Spark Connect client — no JVM in this process, Delta's operations in SQL, a
      path means what it means on the server, a session's operation tags are per thread;
    * ``shared_storage``: (Connect) this process sees the output tables at the paths the server
      writes them (the job's ``--shared-storage``).

    >>> SessionCapabilities().driver_reads_paths, SessionCapabilities(remote=True).driver_reads_paths
    (True, False)
    >>> SessionCapabilities(remote=True, shared_storage=True).driver_sees_outputs
    True
    """

    remote: bool = False
    shared_storage: bool = False

    @property
    def driver_reads_paths(self) -> bool:
        """Whether this process may read an input's path itself (delta-rs on the driver, the Delta log's statistics)."""
        return not self.remote

    @property
    def driver_sees_outputs(self) -> bool:
        """Whether this process may read and commit the output tables' paths itself with delta-rs."""
        return not self.remote or self.shared_storage

    @classmethod
    def of(cls, spark: SparkSession, *, shared_storage: bool = False) -> SessionCapabilities:
        """The capabilities of ``spark``, told by the session itself (a Connect session's class is Connect's own)."""
        return cls(remote=is_connect_session(spark), shared_storage=bool(shared_storage))


def is_connect_session(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (PySpark's Connect classes live in ``pyspark.sql.connect``).

    >>> is_connect_session(object())
    False
    """
    return type(spark).__module__.startswith("pyspark.sql.connect")


def table_reference(path: str | None, name: str | None) -> str:
    """How SQL names a Delta table: ``delta.`<path>``` for a path, the catalog name as given otherwise.

    >>> table_reference("/wh/t`x", None), table_reference(None, "dq.results")
    ('delta.`/wh/t``x`', 'dq.results')
    """
    if path is not None:
        return "delta.`" + path.replace("`", "``") + "`"
    if not name:
        raise ValueError("a table needs a path or a name")
    return name


def describe_detail(spark: SparkSession, reference: str) -> dict[str, Any] | None:
    """``DESCRIBE DETAIL`` of a table as a dict (``format``, ``location``, …); None when there is no table."""
    try:
        rows = spark.sql(f"DESCRIBE DETAIL {reference}").collect()
    except PySparkException as exc:
        if no_such_table(exc):
            return None
        raise
    return rows[0].asDict() if rows else None


#: What Spark and Delta say when a statement names no table (the path holds none, the name is unknown).
_NO_TABLE = ("DELTA_MISSING_DELTA_TABLE", "TABLE_OR_VIEW_NOT_FOUND", "PATH_NOT_FOUND", "not a Delta table")


def no_such_table(exc: Exception) -> bool:
    """Whether ``exc`` (of a ``DESCRIBE …`` statement) says there is no table there — and not that the
    storage or the server failed, which the caller must not read as "no table"."""
    return isinstance(exc, PySparkException) and any(marker in str(exc) for marker in _NO_TABLE)


def is_delta(spark: SparkSession, reference: str) -> bool:
    """Whether ``reference`` names an existing Delta table (a Parquet table or a view is not one)."""
    detail = describe_detail(spark, reference)
    return detail is not None and str(detail.get("format") or "").lower() == "delta"


def _ddl_type(data_type: T.DataType) -> str:
    # Nested field names are quoted too: the quarantine table carries the input's columns as they are.
    if isinstance(data_type, T.StructType):
        fields = ", ".join(f"{_quote(f.name)}: {_ddl_type(f.dataType)}" for f in data_type.fields)
        return f"STRUCT<{fields}>"
    if isinstance(data_type, T.ArrayType):
        return f"ARRAY<{_ddl_type(data_type.elementType)}>"
    if isinstance(data_type, T.MapType):
        return f"MAP<{_ddl_type(data_type.keyType)}, {_ddl_type(data_type.valueType)}>"
    return data_type.simpleString()


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_table_sql(
    reference: str, schema: T.StructType, partition_by: Sequence[str] = (), comment: str | None = None
) -> str:
    """The ``CREATE TABLE IF NOT EXISTS`` statement of an empty Delta table (columns nullable, as a first write).

    >>> schema = T.StructType([T.StructField("a b", T.LongType()), T.StructField("d", T.DateType())])
    >>> create_table_sql("delta.`/wh/t`", schema, ["d"])
    'CREATE TABLE IF NOT EXISTS delta.`/wh/t` (`a b` bigint, `d` date) USING DELTA PARTITIONED BY (`d`)'
    """
    columns = ", ".join(f"{_quote(f.name)} {_ddl_type(f.dataType)}" for f in schema.fields)
    statement = f"CREATE TABLE IF NOT EXISTS {reference} ({columns}) USING DELTA"
    if partition_by:
        statement += " PARTITIONED BY (" + ", ".join(_quote(c) for c in partition_by) + ")"
    if comment:
        statement += f" COMMENT {_literal(comment)}"
    return statement


def history(spark: SparkSession, reference: str, limit: int | None = None) -> DataFrame:
    """The table's commit history (newest first), as ``DeltaTable.history`` returns it."""
    return spark.sql(f"DESCRIBE HISTORY {reference}" + (f" LIMIT {int(limit)}" if limit is not None else ""))


def delete_where(spark: SparkSession, reference: str, column: str, value: str) -> None:
    """One Delta commit removing the rows whose ``column`` equals ``value``."""
    spark.sql(f"DELETE FROM {reference} WHERE {_quote(column)} = {_literal(value)}").collect()


#: A name ``SHOW TABLE EXTENDED`` can look up by pattern: plain identifiers (no quoting, no pattern characters).
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


def catalog_tables(spark: SparkSession, names: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """``{name: {"format", "location"}}`` of catalog names as the catalog says; None: no table of that name.

    Asked of the metastore alone: ``SHOW TABLE EXTENDED [IN <db>] LIKE 'a|b|c'`` — one round trip for
    all the names of one database. ``DESCRIBE DETAIL`` (and ``DESCRIBE TABLE``) of a Delta table load
    its Delta log on the server first (about 1 s each on a Hive metastore); the catalog entry alone
    carries what a write needs before it starts: the provider (the format) and the location. A name
    this cannot answer — not a plain identifier, a temporary view of that name, an entry without a
    provider or a location (a view), a catalog that refuses the statement — is asked with
    ``DESCRIBE DETAIL``, as before.
    """
    found: dict[str, dict[str, Any] | None] = {}
    groups: dict[str, list[tuple[str, str]]] = {}
    for name in dict.fromkeys(names):
        if _PLAIN_NAME.match(name.strip()):
            namespace, _, table = name.strip().rpartition(".")
            groups.setdefault(namespace, []).append((name, table))
        else:
            found[name] = describe_detail(spark, name)
    for namespace, members in groups.items():
        pattern = "|".join(table for _, table in members)
        statement = "SHOW TABLE EXTENDED" + (f" IN {namespace}" if namespace else "") + f" LIKE {_literal(pattern)}"
        try:
            rows = spark.sql(statement).collect()
        except PySparkException:
            rows = None  # e.g. no such database, or a catalog without the statement: asked one by one
        for name, table in members:
            entry = _listed(rows, table, qualified=bool(namespace)) if rows is not None else None
            found[name] = entry if entry is not None else describe_detail(spark, name)
    return found


def _listed(rows: Sequence[Any], table: str, *, qualified: bool) -> dict[str, Any] | None:
    """The ``{"format", "location"}`` of ``table`` among ``SHOW TABLE EXTENDED`` rows; None: not answered there.

    A table that is not listed is not answered either: the caller asks ``DESCRIBE DETAIL``, so a
    pattern the catalog matches differently can cost a round trip, never a wrong "no table".

    >>> info = "Type: MANAGED\\nProvider: delta\\nLocation: file:/wh/dq.db/r\\n"
    >>> _listed([{"tableName": "r", "isTemporary": False, "information": info}], "R", qualified=True)
    {'format': 'delta', 'location': 'file:/wh/dq.db/r'}
    >>> _listed([{"tableName": "r", "isTemporary": True, "information": ""}], "r", qualified=False) is None
    True
    """
    entry: dict[str, Any] | None = None
    for row in rows:
        if str(row["tableName"]).lower() != table.lower():
            continue
        if row["isTemporary"] and not qualified:
            return None  # a temporary view shadows the table for this unqualified name
        if row["isTemporary"]:
            continue
        fields = dict(line.split(": ", 1) for line in str(row["information"] or "").splitlines() if ": " in line)
        provider, location = fields.get("Provider", "").strip(), fields.get("Location", "").strip()
        if not provider or not location or fields.get("Type", "").strip().upper() == "VIEW":
            return None
        entry = {"format": provider.lower(), "location": location}
    return entry


def catalog_locations(
    spark: SparkSession, targets: Sequence[str | None], known: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``{name: location}`` of the catalog tables among ``targets`` (paths are skipped), as the catalog says.

    Any session (spark-submit or Connect). ``known``: locations the run already resolved (its writes'
    probes, by normalised name), not asked again; the rest in one metastore lookup per database (:func:`catalog_tables`).
    A name whose table does not exist (an output not written by this run) is left out; the Airflow
    side then falls back to the warehouse layout and says so.
    """
    from airflow_dq_contracts.storage.catalog_names import normalise_name
    from airflow_dq_contracts.store.delta import is_path

    known = known or {}
    found: dict[str, str] = {}
    asked: list[str] = []
    for target in targets:
        if not target or is_path(target) or target in found or target in asked:
            continue
        if known.get(normalise_name(target)):
            found[target] = known[normalise_name(target)]
        else:
            asked.append(target)
    try:
        answers = catalog_tables(spark, asked) if asked else {}
    except PySparkException:
        answers = {}
    for target in asked:
        location = (answers.get(target) or {}).get("location")
        if location:
            found[target] = str(location)
    return {target: found[target] for target in dict.fromkeys(t for t in targets if t) if target in found}
