"""Delta sinks of an evaluation: the results table, the quarantine table and the valid-rows table.

Spark side (imports no Airflow). Every sink is **idempotent per run id**: a write is one Delta
commit that overwrites exactly the rows of its run (``replaceWhere "run_id = '…'"``) and adds the
new ones, so an Airflow retry of the same run replaces its rows instead of adding a second copy,
while other runs' rows are untouched. Readers never see a half-replaced run: the delete and the
append are the same atomic commit.

The results and the registry are a handful of rows per run: a new run's results and the registry
upsert are committed by delta-rs from the driver (:func:`driver_table`: local filesystem tables of
the exact schema only), in milliseconds instead of the seconds a cold JVM spends in Delta's write
path; Spark's Delta writes them otherwise, and always writes the quarantine and valid rows.

A run's *first* write needs no replacement: when the table certainly holds no row of the run
yet — read with delta-rs on the driver (:func:`_run_absent`: a metadata lookup plus at most that
run's files, no Spark job) — the rows are appended in one plain commit instead. That skips
Delta's state reconstruction of the whole table that a ``replaceWhere`` needs to find the files
to remove, which is most of a small run's write and grows with the table's history. Whenever
that cannot be known (a catalog table name, no ``deltalake`` on the driver, a table delta-rs
cannot read) the write replaces as before, so a retry always replaces.

Concurrency: Delta uses optimistic concurrency. Appends of new runs do not conflict with each
other; a *replacing* write (a retry) conflicts with any commit that added files to the table while
it ran (its ``replaceWhere`` read the whole table). Such conflicts are retried with jittered exponential backoff, up to ``max_attempts``; when
they are exhausted a :class:`SinkError` names the table and the number of attempts. A missing
table (results, quarantine and valid alike) is created with an empty first commit, so any
number of writers creating it race only on Delta's put-if-absent of version 0; the losers retry,
refresh the JVM's cached Delta log of the path (a stale one keeps saying "no table") and find the
winner's table, waiting for it by time (:data:`CREATION_WAIT_SECONDS`), not by a count of looks.

Targets are a path/URI (``/data/dq/results``, ``s3a://bucket/dq/results``) or a catalog table
name (``dq.results``), see :func:`is_path`.

Layouts:

* **results** — exactly :data:`~airflow_dq_contracts.results.RESULT_COLUMNS` (DESIGN §5), created
  on first use, partitioned by ``contract_name``: dashboards and history queries ask about one
  contract ("the last 30 runs of orders"), so they read one directory; the number of contracts
  is small, whereas partitioning by ``run_id`` would create one directory of tiny files per run.
* **quarantine** — the input's columns, then ``_dq_run_id``, ``_dq_violations``
  (``array<struct<check_id, check_name, check_type, severity, action: string>>``) and
  ``_dq_quarantined_at`` (DESIGN §6). Appends across runs. Created by the first write,
  unpartitioned unless ``partition_by`` is given.
* **valid** — the input's columns plus ``_dq_run_id``: without the run id a retried run could
  not find (and replace) the rows its previous attempt published, and would duplicate them; then
  ``_dq_flags`` (the same struct array as ``_dq_violations``): the flag-action checks the kept row
  broke ("load the row but mark it"), empty when none. A valid table written before this column
  existed gains it by schema evolution; its older rows read NULL.

Schema evolution (quarantine, valid): a later run may bring an input column the table does not
have yet; it is added to the table (Delta ``mergeSchema``, in the same commit) at the end of the
schema, and older rows read it as NULL. A column missing from a later run's input is NULL in
that run's rows. A column whose *type* changed cannot be merged by Delta: that write fails with
a :class:`SinkError` naming the column and both types (cast the column, or give each dataset
its own quarantine table).

Example::

    from airflow_dq_contracts.engine import sinks
    sinks.write_results(spark, result.checks, "/data/dq/results", run_id=result.run_id)
    bad, good = sinks.split_annotated(annotated_df)[::-1]
    sinks.write_quarantine(spark, bad, "/data/dq/quarantine/orders", run_id=result.run_id)
    sinks.write_valid(spark, good, "/data/silver/orders_valid", run_id=result.run_id)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import random
import time
import uuid
from typing import Any, Callable, Sequence, TypeVar

from delta.tables import DeltaTable
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.results import (
    DECISION_GATE,
    DECISION_QUARANTINE,
    QUARANTINE_AT,
    QUARANTINE_RUN_ID,
    QUARANTINE_VIOLATIONS,
    VALID_FLAGS,
    EVOLVED_RESULT_COLUMNS,
    RESULT_COLUMNS,
    TIME_RESULT_COLUMNS,
    VIOLATION_FIELDS,
    CheckResult,
    parse_time,
    to_utc,
    utcnow,
)
from airflow_dq_contracts.store.results_store import is_path

__all__ = [
    "RESULTS_PARTITION_COLUMNS",
    "RESULTS_SCHEMA",
    "SinkError",
    "clear_run_rows",
    "is_path",
    "read_results",
    "split_annotated",
    "write_quarantine",
    "write_results",
    "write_valid",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_SPARK_TYPES: dict[str, T.DataType] = {
    "string": T.StringType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "bigint": T.LongType(),
    "timestamp": T.TimestampType(),
    "array<string>": T.ArrayType(T.StringType(), True),
}

#: The results table's Spark schema, built from the fixed ``RESULT_COLUMNS`` (order and types).
RESULTS_SCHEMA = T.StructType([T.StructField(name, _SPARK_TYPES[kind], True) for name, kind in RESULT_COLUMNS])
#: Partitioning of the results table (see the module docstring for why).
RESULTS_PARTITION_COLUMNS: tuple[str, ...] = ("contract_name",)

#: Violation actions that send a row to quarantine; ``flag`` rows stay valid.
QUARANTINING_ACTIONS: tuple[str, ...] = (DECISION_QUARANTINE, DECISION_GATE)

# Backoff between conflicting commits: 0.2 s, 0.4 s, 0.8 s … capped at 5 s, each drawn uniformly
# from [half, full] so that writers which collided once do not collide again in lockstep.
RETRY_BASE_SECONDS = 0.2
RETRY_MAX_SECONDS = 5.0

# Delta's commit-conflict errors. The Python classes exist only when the ``delta`` package has
# patched PySpark's error conversion, so the error classes / Java names in the message are
# matched too (e.g. inside spark-submit on a cluster).
_CONFLICT_MARKERS = (
    "DELTA_CONCURRENT_",
    "DELTA_PROTOCOL_CHANGED",
    "DELTA_METADATA_CHANGED",
    "DeltaConcurrentModificationException",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    # Two writers creating the same path table: the loser can see the winner's data files before
    # its first commit lands ("… is not empty and also not a Delta table"); the next attempt finds
    # a Delta table.
    "is not empty and also not a Delta table",
    # Two writers creating the same catalog table: the loser sees it exist on the next attempt.
    "TABLE_OR_VIEW_ALREADY_EXISTS",
    "TableAlreadyExistsException",
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class SinkError(RuntimeError):
    """A Delta sink could not be written or read; the message names the table and the reason.

    ``target`` is the table as given, ``attempts`` how many commits were tried (0 when the
    failure came before any commit).

    Example::

        try:
            write_results(spark, checks, "/data/dq/results", run_id=run_id)
        except SinkError as exc:
            print(exc)   # results table '/data/dq/results': gave up after 8 attempts …
    """

    def __init__(self, message: str, *, target: str | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.target = target
        self.attempts = attempts


# --------------------------------------------------------------------------------------------
# Targets


@dataclasses.dataclass(frozen=True)
class _Target:
    """A resolved sink target: exactly one of ``path`` / ``name`` is set."""

    text: str
    kind: str  # "results" | "quarantine" | "valid", for messages
    path: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        return f"{self.kind} table {self.text!r}"

    def delta_table(self, spark: SparkSession) -> DeltaTable:
        if self.path is not None:
            return DeltaTable.forPath(spark, self.path)
        return DeltaTable.forName(spark, self.name)

    def read(self, spark: SparkSession) -> DataFrame:
        if self.path is not None:
            return spark.read.format("delta").load(self.path)
        return spark.read.table(self.name)

    def exists(self, spark: SparkSession) -> bool:
        """True for an existing Delta table; SinkError if something else is in the way.

        A path that holds a ``_delta_log`` folder but no readable commit yet is a table another
        writer is creating right now: :class:`_NotDeltaTable`, which the write waits out (by time).
        """
        if self.path is not None:
            if DeltaTable.isDeltaTable(spark, self.path):
                return True
            state = _path_state(spark, self.path)
            if state == "missing":
                return False
            # Delta caches one DeltaLog per path in the JVM, and its strict isDeltaTable asks the
            # cached snapshot, which is never refreshed: a log first looked at before another
            # writer's version 0 landed says "no table" for good. Drop it and look again.
            _forget_cached_log(spark, self.path)
            if DeltaTable.isDeltaTable(spark, self.path):
                return True
            if state == "delta_log":
                raise _NotDeltaTable(f"{self}: {self.path} has a _delta_log but no commit yet (being created?)",
                                     target=self.text)
            # Writing a Delta log over a folder of other files would silently bury them.
            raise SinkError(f"{self}: {self.path} exists but is not a Delta table", target=self.text)
        if not spark.catalog.tableExists(self.name):
            return False
        try:
            DeltaTable.forName(spark, self.name)
        except PySparkException as exc:
            raise SinkError(f"{self}: the catalog table exists but is not a Delta table", target=self.text) from exc
        return True

    def create_if_missing(self, spark: SparkSession, schema: T.StructType, partition_by: Sequence[str] = (),
                          comment: str | None = None) -> None:
        """Create the table with an empty first commit (metadata only) unless it exists.

        Creating it with the first *write* would put data files in the folder before its log, and a
        second writer would find "a non-empty folder that is not a Delta table". An empty version 0
        leaves the race to Delta's put-if-absent on ``00000000000000000000.json``: one writer wins,
        the others get a commit conflict, retried, and then find the table.
        """
        builder = DeltaTable.createIfNotExists(spark)
        builder = builder.location(self.path) if self.path is not None else builder.tableName(self.name)
        builder = builder.addColumns(_nullable(schema))
        if partition_by:
            builder = builder.partitionedBy(*partition_by)
        if comment:
            builder = builder.comment(comment)
        try:
            builder.execute()
        except (PySparkException, Py4JError) as exc:
            if is_conflict(exc) or self.path is None or _path_state(spark, self.path) != "delta_log":
                raise
            # Another writer's version 0 landed while this one was creating: Delta then fails the
            # loser with whatever its (stale, cached) log says, e.g. [DELTA_TABLE_NOT_FOUND]. Drop
            # the cached log and let the retry loop look again (waiting by time, not attempts).
            _forget_cached_log(spark, self.path)
            raise _NotDeltaTable(f"{self}: created by another writer meanwhile ({_first_line(exc, 200)})",
                                 target=self.text) from exc


def _nullable(data_type: T.DataType) -> Any:
    """``data_type`` with every field nullable, as a table created by a first write would have it."""
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _resolve(target: str, kind: str) -> _Target:
    if not isinstance(target, str) or not target.strip():
        raise SinkError(f"{kind} table: expected a path or a table name, got {target!r}", target=str(target))
    text = target.strip()
    if is_path(text):
        return _Target(text=text, kind=kind, path=os.path.expanduser(text) if text.startswith("~") else text)
    return _Target(text=text, kind=kind, name=text)


def _path_state(spark: SparkSession, path: str) -> str:
    """``missing``, ``delta_log`` (a ``_delta_log`` folder is there) or ``other`` content at ``path``.

    Any Hadoop filesystem (local, s3a, abfss, hdfs).
    """
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
        if not fs.exists(hadoop_path):
            return "missing"
        if fs.getFileStatus(hadoop_path).isFile():
            return "other"
        if fs.exists(jvm.org.apache.hadoop.fs.Path(hadoop_path, "_delta_log")):
            return "delta_log"
        return "other" if len(fs.listStatus(hadoop_path)) > 0 else "missing"
    except (Py4JError, AttributeError):
        # No JVM gateway (e.g. Spark Connect): let Delta decide on write.
        return "missing"


def _forget_cached_log(spark: SparkSession, path: str) -> None:
    """Drop the JVM's cached ``DeltaLog`` of ``path``, so the next look reads the log from storage."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        jvm.org.apache.spark.sql.delta.DeltaLog.invalidateCache(
            spark._jsparkSession, jvm.org.apache.hadoop.fs.Path(path))  # type: ignore[attr-defined]
    except (Py4JError, AttributeError):
        pass  # no JVM gateway (Spark Connect): nothing cached on this side


def _quote(name: str) -> str:
    """A column name as a Spark SQL identifier (dots, spaces and backticks included)."""
    return "`" + name.replace("`", "``") + "`"


def spark_sql_string(value: str) -> str:
    """A single-quoted Spark SQL string literal (backslash escapes, Spark's default parser).

    >>> spark_sql_string("it's a \\\\ test")
    "'it\\\\'s a \\\\\\\\ test'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _check_run_id(run_id: Any, target: str) -> str:
    if not isinstance(run_id, str) or not run_id:
        raise SinkError(f"{target}: run_id must be a non-empty string, got {run_id!r}", target=target)
    return run_id


def _check_attempts(max_attempts: Any) -> int:
    if not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    return max_attempts


# --------------------------------------------------------------------------------------------
# Retries


def _first_line(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a Delta commit conflict (worth retrying), by class or by error text.

    Example::

        try:
            df.write.format("delta").mode("append").save(path)
        except Exception as exc:
            retry = is_conflict(exc)
    """
    try:
        import delta.exceptions as delta_exc

        conflict_types: tuple[type, ...] = (
            delta_exc.DeltaConcurrentModificationException,
            delta_exc.ConcurrentWriteException,
            delta_exc.MetadataChangedException,
            delta_exc.ProtocolChangedException,
            delta_exc.ConcurrentAppendException,
            delta_exc.ConcurrentDeleteReadException,
            delta_exc.ConcurrentDeleteDeleteException,
            delta_exc.ConcurrentTransactionException,
        )
        if isinstance(exc, conflict_types):
            return True
    except ImportError:  # pragma: no cover - delta-spark is a dependency
        pass
    text = str(exc)[:4000]
    return any(marker in text for marker in _CONFLICT_MARKERS)


class _NotDeltaTable(SinkError):
    """A ``_delta_log`` folder without a commit yet where a table should be: another writer creating it."""


#: How long a write waits for a table another writer is creating (its ``_delta_log`` is there, its
#: first commit not yet readable) before it gives up. By time, not by a number of looks: on a
#: loaded worker the other writer's commit can take seconds.
CREATION_WAIT_SECONDS = 120.0


def _with_retries(action: Callable[[int], _T], target: _Target, max_attempts: int) -> _T:
    """Run ``action(attempt)`` until it commits; retry Delta conflicts with jittered backoff.

    Waiting for a table that another writer is creating does not use up attempts: it is bounded by
    :data:`CREATION_WAIT_SECONDS` instead.
    """
    last: BaseException | None = None
    attempt = 1
    creation_deadline: float | None = None
    while attempt <= max_attempts:
        try:
            return action(attempt)
        except _NotDeltaTable:
            now = time.monotonic()
            creation_deadline = creation_deadline or now + CREATION_WAIT_SECONDS
            if now >= creation_deadline:
                raise
            time.sleep(random.uniform(RETRY_BASE_SECONDS, 2 * RETRY_BASE_SECONDS))
            continue
        except SinkError:
            raise
        except (PySparkException, Py4JError) as exc:
            if not is_conflict(exc):
                raise SinkError(f"{target}: write failed: {_first_line(exc)}", target=target.text, attempts=attempt) from exc
            last = exc
            if attempt == max_attempts:
                break
            delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempt - 1))
            delay = random.uniform(delay / 2, delay)
            log.warning(
                "%s: concurrent commit conflict on attempt %d/%d, retrying in %.2fs: %s",
                target, attempt, max_attempts, delay, _first_line(exc, 200),
            )
            time.sleep(delay)
            attempt += 1
    assert last is not None
    raise SinkError(
        f"{target}: gave up after {max_attempts} attempt{'s' if max_attempts != 1 else ''}: "
        f"concurrent Delta commits kept conflicting with this write (last error: {_first_line(last)}); "
        "retry the task, or raise max_attempts",
        target=target.text,
        attempts=max_attempts,
    ) from last


def _commit_token(kind: str, run_id: str) -> str:
    """A unique ``userMetadata`` for one write, so its commit can be found in the history."""
    return json.dumps({"writer": "airflow-dq-contracts", "table": kind, "run_id": run_id, "write": uuid.uuid4().hex})


def _replace_run_rows(
    df: DataFrame,
    target: _Target,
    *,
    run_column: str,
    run_id: str,
    token: str,
    merge_schema: bool,
    partition_by: Sequence[str] = (),
) -> None:
    """One commit: delete the rows of ``run_id``, add ``df`` (creating the table if missing).

    ``run_column`` is one of our fixed, plain column names, so it needs no quoting (and the
    predicate reads naturally in the table history).
    """
    _replace_where(df, target, f"{run_column} = {spark_sql_string(run_id)}", token=token,
                   merge_schema=merge_schema, partition_by=partition_by)


def _replace_where(
    df: DataFrame,
    target: _Target,
    predicate: str,
    *,
    token: str | None = None,
    merge_schema: bool = False,
    partition_by: Sequence[str] = (),
) -> None:
    """One commit that replaces the rows matching the SQL ``predicate`` by ``df`` (which must match it).

    ``token`` tags the commit (``userMetadata``) so it can be found in the history.
    """
    writer = df.write.format("delta").mode("overwrite").option("replaceWhere", predicate)
    if token is not None:
        writer = writer.option("userMetadata", token)
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    if target.path is not None:
        writer.save(target.path)
    else:
        writer.saveAsTable(target.name)


def _append(df: DataFrame, target: _Target, *, token: str | None, merge_schema: bool) -> None:
    """One plain append commit of ``df`` (tagged ``token``): a run's first write, see :func:`_run_absent`."""
    writer = df.write.format("delta").mode("append")
    if token is not None:
        writer = writer.option("userMetadata", token)
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    if target.path is not None:
        writer.save(target.path)
    else:
        writer.saveAsTable(target.name)


def _run_absent(target: _Target, run_column: str, run_id: str) -> bool:
    """True only when the existing Delta table at ``target`` certainly holds no row of ``run_id``.

    Read with delta-rs on the driver: the table's log plus, at most, the files whose statistics
    admit the run (deletion vectors and column mapping honoured) — no Spark job and no state
    reconstruction. False whenever that cannot be known: a catalog table name, no ``deltalake``
    on this driver (a cluster node without it), a location or credentials delta-rs cannot use, a
    missing table; the caller then replaces, which is always correct.
    """
    if target.path is None:
        return False
    try:
        import pyarrow as pa
        from deltalake import DeltaTable as RustDeltaTable

        from airflow_dq_contracts.store.results_store import sql_string

        table = RustDeltaTable(target.path)
        if run_column not in table.schema().to_arrow().names:
            return False
        reader = table.scan(columns=[run_column], predicate=f"{run_column} = {sql_string(run_id)}")
        return pa.RecordBatchReader.from_stream(reader).read_all().num_rows == 0
    except Exception as exc:  # noqa: BLE001 - any doubt means "replace", never "append"
        log.debug("%s: cannot tell with delta-rs whether run %s has rows (%s); replacing", target, run_id,
                  _first_line(exc, 200))
        return False


# --------------------------------------------------------------------------------------------
# Small commits on the driver (delta-rs)

#: Target text → version of the last commit this process made to it with delta-rs (see committed_version).
_DRIVER_COMMITS: dict[str, int] = {}

_ARROW_KINDS = {"string": "string", "double": "float64", "boolean": "bool_", "bigint": "int64"}


def arrow_schema(columns: Sequence[tuple[str, str]]) -> Any:
    """The ``pyarrow`` schema of ``(name, kind)`` columns (the kinds of RESULT_COLUMNS / REGISTRY_COLUMNS)."""
    import pyarrow as pa

    def kind_of(kind: str) -> Any:
        if kind == "timestamp":
            return pa.timestamp("us", tz="UTC")
        if kind == "array<string>":
            return pa.list_(pa.string())
        return getattr(pa, _ARROW_KINDS[kind])()

    return pa.schema([(name, kind_of(kind)) for name, kind in columns])


def driver_table(target: _Target, columns: Sequence[tuple[str, str]], partition_by: Sequence[str] = ()) -> Any:
    """The existing table at ``target`` opened with delta-rs, for a small commit from the driver; else None.

    Only a table on the local filesystem (a plain path or ``file:``) whose schema is exactly
    ``columns`` and whose partitioning is ``partition_by``: on object stores Delta writers
    coordinate through the log store each engine is configured with (S3 needs one shared by all
    writers), so there the commits stay with Spark's Delta; a catalog name, another schema (an
    older release's results table to evolve), no ``deltalake`` here — Spark writes as well.
    """
    if target.path is None or ("://" in target.path and not target.path.startswith("file:")):
        return None
    try:
        from deltalake import DeltaTable as RustDeltaTable

        table = RustDeltaTable(target.path)
        found = [(f.name, f.dataType.simpleString())
                 for f in T.StructType.fromJson(json.loads(table.schema().to_json())).fields]
        if found != list(columns) or list(table.metadata().partition_columns) != list(partition_by):
            return None
        return table
    except Exception as exc:  # noqa: BLE001 - missing table, unreadable, no deltalake: Spark writes
        log.debug("%s: not written from the driver (%s)", target, _first_line(exc, 200))
        return None


def _absent_in(table: Any, run_column: str, run_id: str) -> bool:
    import pyarrow as pa

    from airflow_dq_contracts.store.results_store import sql_string

    reader = table.scan(columns=[run_column], predicate=f"{run_column} = {sql_string(run_id)}")
    return pa.RecordBatchReader.from_stream(reader).read_all().num_rows == 0


def _append_results_on_driver(target: _Target, records: Sequence[CheckResult], run_id: str, token: str) -> bool:
    """A new run's results appended by delta-rs on the driver (one commit, milliseconds); False: Spark writes.

    Only when :func:`driver_table` allows it and the table holds no row of the run (a retry replaces,
    with Spark). A failure after the commit is harmless: Spark's write then finds the run's rows and
    replaces them.
    """
    table = driver_table(target, RESULT_COLUMNS, RESULTS_PARTITION_COLUMNS)
    if table is None:
        return False
    try:
        import pyarrow as pa
        from deltalake import CommitProperties, write_deltalake

        if not _absent_in(table, "run_id", run_id):
            return False
        names = [name for name, _ in RESULT_COLUMNS]
        data = pa.Table.from_pylist([dict(zip(names, _result_row(r))) for r in records],
                                    schema=arrow_schema(RESULT_COLUMNS))
        write_deltalake(table, data, mode="append",
                        commit_properties=CommitProperties(custom_metadata={"userMetadata": token}))
        _DRIVER_COMMITS[target.text] = int(table.version())
        return True
    except Exception as exc:  # noqa: BLE001 - Spark writes instead (and replaces, should this have committed)
        log.debug("%s: delta-rs append failed (%s); Spark writes", target, _first_line(exc, 200))
        return False


def utc_from_micros(micros: int | None) -> dt.datetime | None:
    """An epoch-microseconds value (``unix_micros`` of a timestamp column) as an aware UTC datetime.

    Timestamps are collected as epoch microseconds because ``collect()`` would turn them into naive
    datetimes in the Python process's local zone.

    >>> utc_from_micros(1_000_000).isoformat(), utc_from_micros(None)
    ('1970-01-01T00:00:01+00:00', None)
    """
    return None if micros is None else _EPOCH + dt.timedelta(microseconds=micros)


def _rows_committed(spark: SparkSession, target: _Target, token: str) -> int | None:
    """``numOutputRows`` of the commit tagged ``token`` (None if metrics are unavailable)."""
    table = target.delta_table(spark)
    # Our commit is normally the newest or nearly; only under heavy concurrency look further back.
    # (history() reads the commit files eagerly, hence the bounded first look.)
    for limit in (25, None):
        history = table.history(limit) if limit is not None else table.history()
        rows = history.where(F.col("userMetadata") == F.lit(token)).select("operationMetrics").limit(1).collect()
        if rows:
            metrics = rows[0]["operationMetrics"] or {}
            value = metrics.get("numOutputRows")
            return int(value) if value is not None else None
    return None


# --------------------------------------------------------------------------------------------
# Results table


def _result_row(record: CheckResult) -> tuple[Any, ...]:
    values: list[Any] = []
    for name, kind in RESULT_COLUMNS:
        value = getattr(record, name)
        if value is not None:
            if kind == "string":
                value = str(value)
            elif kind == "double":
                value = float(value)
            elif kind == "bigint":
                value = int(value)
            elif kind == "boolean":
                value = bool(value)
            elif kind == "timestamp":
                # Aware datetimes convert to the right instant whatever the JVM/Python time zone.
                value = parse_time(value) if isinstance(value, str) else to_utc(value)
            elif kind == "array<string>":
                value = [str(item) for item in value]
        values.append(value)
    return tuple(values)


def _schema_differences(actual: T.StructType) -> list[str]:
    expected = [(name, kind) for name, kind in RESULT_COLUMNS]
    found = [(f.name, f.dataType.simpleString()) for f in actual.fields]
    if found == expected:
        return []
    problems = []
    found_map = dict(found)
    for name, kind in expected:
        if name not in found_map:
            problems.append(f"missing column {name} {kind}")
        elif found_map[name] != kind:
            problems.append(f"column {name} is {found_map[name]}, expected {kind}")
    expected_names = {name for name, _ in expected}
    problems += [f"unexpected column {name} {kind}" for name, kind in found if name not in expected_names]
    if not problems:
        problems.append("columns are in a different order than " + ", ".join(n for n, _ in expected))
    return problems


def _evolvable(actual: T.StructType) -> bool:
    """True when ``actual`` is the results schema of an earlier release: a prefix of today's, lacking
    only (a tail of) the second-wave columns, which a write with ``mergeSchema`` appends."""
    found = [(f.name, f.dataType.simpleString()) for f in actual.fields]
    expected = list(RESULT_COLUMNS)
    return (len(found) < len(expected) and found == expected[: len(found)]
            and all(name in EVOLVED_RESULT_COLUMNS for name, _ in expected[len(found):]))


def _ensure_results_table(spark: SparkSession, target: _Target) -> bool:
    """Create the results table if missing; True when an existing one must be evolved by the write."""
    if target.exists(spark):
        schema = target.read(spark).schema
        if _evolvable(schema):
            return True
        problems = _schema_differences(schema)
        if problems:
            raise SinkError(
                f"{target} exists with a different schema than the fixed results schema: " + "; ".join(problems),
                target=target.text,
            )
        return False
    # Created explicitly (not by the first write) so the table has the fixed schema and its
    # partitioning even when the first run has no checks at all.
    target.create_if_missing(spark, RESULTS_SCHEMA, RESULTS_PARTITION_COLUMNS,
                             "airflow-dq-contracts check results: one row per check per run")
    return False


def write_results(
    spark: SparkSession,
    records: Sequence[CheckResult],
    target: str,
    *,
    run_id: str,
    max_attempts: int = 8,
) -> int:
    """Write one run's check results to the Delta results table; returns the rows written.

    The table is created on first use with the fixed schema of ``RESULT_COLUMNS``, partitioned
    by ``contract_name``. The rows of ``run_id`` already in the table (an earlier attempt of the
    same run) are replaced in the same commit — an empty ``records`` just removes them. Every
    record must carry ``run_id``. Commit conflicts with concurrent writers are retried up to
    ``max_attempts`` times, then :class:`SinkError`.

    Example::

        n = write_results(spark, result.checks, "/data/dq/results", run_id=result.run_id)
    """
    resolved = _resolve(target, "results")
    _check_run_id(run_id, str(resolved))
    _check_attempts(max_attempts)
    records = list(records)
    for record in records:
        if not isinstance(record, CheckResult):
            raise SinkError(f"{resolved}: expected CheckResult records, got {type(record).__name__}", target=target)
        if record.run_id != run_id:
            raise SinkError(
                f"{resolved}: record {record.check_id!r} has run_id {record.run_id!r}, "
                f"but this write replaces run {run_id!r}",
                target=target,
            )
    token = _commit_token("results", run_id)
    _DRIVER_COMMITS.pop(resolved.text, None)
    if _append_results_on_driver(resolved, records, run_id, token):
        log.info("%s: appended %d check results of run %s (delta-rs)", resolved, len(records), run_id)
        return len(records)
    df = spark.createDataFrame([_result_row(r) for r in records], schema=RESULTS_SCHEMA)

    def attempt(_: int) -> None:
        # A table written by an earlier release gains the new columns in this same commit.
        evolve = _ensure_results_table(spark, resolved)
        # Looked at again on every attempt: only a table holding no row of the run is appended to.
        if _run_absent(resolved, "run_id", run_id):
            _append(df, resolved, token=token, merge_schema=evolve)
        else:
            _replace_run_rows(df, resolved, run_column="run_id", run_id=run_id, token=token, merge_schema=evolve)

    _with_retries(attempt, resolved, max_attempts)
    log.info("%s: wrote %d check results of run %s", resolved, len(records), run_id)
    return len(records)


def committed_version(spark: SparkSession, target: str) -> int | None:
    """The version of the table at ``target`` as this session last committed or read it; None when unknown.

    Right after :func:`write_results` this is the version of that write's commit (Delta installs
    the committed snapshot), which the job reports so the operator can read the run back from
    that one commit (:func:`airflow_dq_contracts.store.results_store.read_results` checks that the
    commit is the run's and falls back to a table scan otherwise). Catalog names and sessions
    without a JVM gateway (Spark Connect) give None.
    """
    resolved = _resolve(target, "results")
    if resolved.text in _DRIVER_COMMITS:
        return _DRIVER_COMMITS[resolved.text]
    if resolved.path is None:
        return None
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, resolved.path)  # type: ignore[attr-defined]
        return int(delta_log.unsafeVolatileSnapshot().version())
    except Exception:  # noqa: BLE001 - an internal API: unknown means "read the table"
        return None


def read_results(spark: SparkSession, target: str, run_id: str | None = None) -> list[CheckResult]:
    """Check results from the Delta results table (one run, or all), ordered by run, contract, check.

    Example::

        checks = read_results(spark, "/data/dq/results", run_id="dq-3f2a…")
    """
    resolved = _resolve(target, "results")
    if not resolved.exists(spark):
        raise SinkError(f"{resolved} does not exist", target=target)
    df = resolved.read(spark)
    problems = _schema_differences(df.schema)
    missing = [p for p in problems if p.startswith("missing") and p.split()[2] not in EVOLVED_RESULT_COLUMNS]
    if missing:
        raise SinkError(f"{resolved} is not a results table: " + "; ".join(missing), target=target)
    if run_id is not None:
        df = df.where(F.col("run_id") == F.lit(run_id))
    # Timestamps travel as epoch microseconds: collect() would turn them into naive datetimes
    # in the Python process's local zone. Columns an older table lacks read as NULL.
    present = set(df.columns)
    columns: list[Column] = []
    for name, kind in RESULT_COLUMNS:
        value = F.col(_quote(name)) if name in present else F.lit(None).cast(_SPARK_TYPES[kind])
        if name in TIME_RESULT_COLUMNS:
            value = F.unix_micros(value)
        columns.append(value.alias(name))
    rows = df.select(*columns).collect()
    records = []
    for row in rows:
        data = row.asDict()
        for name in TIME_RESULT_COLUMNS:
            data[name] = utc_from_micros(data[name])
        records.append(CheckResult.from_dict(data))
    records.sort(key=lambda r: (r.run_id or "", r.contract_name or "", r.check_id or ""))
    return records


# --------------------------------------------------------------------------------------------
# Quarantine and valid rows


def _violations_field(df: DataFrame, where: str, name: str = QUARANTINE_VIOLATIONS) -> T.StructType:
    if name not in df.columns:
        raise SinkError(f"{where}: the DataFrame has no {name} column")
    data_type = df.schema[name].dataType
    if not isinstance(data_type, T.ArrayType) or not isinstance(data_type.elementType, T.StructType):
        raise SinkError(
            f"{where}: {name} must be array<struct<{', '.join(VIOLATION_FIELDS)}>>, "
            f"got {data_type.simpleString()}",
        )
    element = data_type.elementType
    missing = [f for f in VIOLATION_FIELDS if f not in element.names]
    if missing:
        raise SinkError(f"{where}: {name} elements lack field(s) {', '.join(missing)}")
    return element


def _normalised_violations(name: str) -> Column:
    """``name`` (an array of violation structs) as the fixed struct of five strings."""
    return F.transform(
        F.col(name), lambda v: F.struct(*[v[field].cast("string").alias(field) for field in VIOLATION_FIELDS]))


def _quarantining(violations: Column) -> Column:
    """True when a row has at least one violation whose action quarantines it (null → False)."""
    hit = F.exists(violations, lambda v: F.lower(F.trim(v["action"])).isin(*QUARANTINING_ACTIONS))
    # exists() is NULL for a NULL array and for "no match but some action NULL": both are valid.
    return F.coalesce(hit, F.lit(False))


def split_annotated(df: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split an annotated DataFrame into ``(valid, quarantined)``.

    ``df`` holds the input columns plus ``_dq_violations`` (an empty array or NULL means no
    violation). A row is quarantined when at least one of its violations has action
    ``quarantine`` or ``gate``; every other row — including rows with only ``flag``
    violations — is valid. ``valid`` has the input columns and ``_dq_flags`` (its flag
    violations); ``quarantined`` keeps ``_dq_violations``, listing *all* the row's violations. Each input row lands on exactly
    one side (the two filters are complements), provided ``df`` yields the same rows each time
    it is computed — pin the source version or ``persist()`` a non-deterministic input.

    Example::

        valid, quarantined = split_annotated(annotated)
        assert valid.count() + quarantined.count() == annotated.count()
    """
    _violations_field(df, "split_annotated")
    flag = _quarantining(F.col(QUARANTINE_VIOLATIONS))
    quarantined = df.where(flag)
    # A kept row has no quarantining violation left: what remains are its flags.
    valid = df.where(~flag).withColumnRenamed(QUARANTINE_VIOLATIONS, VALID_FLAGS)
    return valid, quarantined


def _reject_reserved(df: DataFrame, target: _Target, reserved: Sequence[str]) -> None:
    lowered = {c.lower() for c in df.columns}
    clashes = [name for name in reserved if name.lower() in lowered]
    if clashes:
        raise SinkError(
            f"{target}: the input already has column(s) {', '.join(clashes)}, which the sink adds "
            "itself; rename them before writing",
            target=target.text,
        )


def _type_conflicts(existing: T.StructType, incoming: T.StructType) -> list[str]:
    by_name = {f.name.lower(): f for f in existing.fields}
    conflicts = []
    for field in incoming.fields:
        old = by_name.get(field.name.lower())
        if old is not None and old.dataType.simpleString() != field.dataType.simpleString():
            conflicts.append(
                f"column {field.name} is {old.dataType.simpleString()} in the table but "
                f"{field.dataType.simpleString()} in this run"
            )
    return conflicts


# Bookkeeping columns a table of each kind must have / must not have. mergeSchema would happily
# widen *any* Delta table, so pointing the quarantine sink at the results table (or the valid sink
# at the quarantine table) would silently mix two kinds of rows; this refuses it instead.
_LAYOUT = {
    "quarantine": ((QUARANTINE_RUN_ID, QUARANTINE_VIOLATIONS, QUARANTINE_AT), ()),
    "valid": ((QUARANTINE_RUN_ID,), (QUARANTINE_VIOLATIONS, QUARANTINE_AT)),
}


def _check_layout(schema: T.StructType, target: _Target) -> None:
    required, forbidden = _LAYOUT[target.kind]
    names = {name.lower() for name in schema.names}
    missing = [c for c in required if c.lower() not in names]
    extra = [c for c in forbidden if c.lower() in names]
    if missing or extra:
        reason = f"it has no {', '.join(missing)} column" if missing else f"it has {', '.join(extra)}"
        raise SinkError(
            f"{target} exists but is not a {target.kind} table ({reason}); "
            "give each sink (results, quarantine, valid) its own table",
            target=target.text,
        )


def _write_run_rows(
    spark: SparkSession,
    out: DataFrame,
    resolved: _Target,
    *,
    run_id: str,
    max_attempts: int,
    partition_by: Sequence[str] | None,
) -> int:
    """Replace the rows of ``run_id`` in a quarantine/valid table by ``out``; rows written."""
    token = _commit_token(resolved.kind, run_id)

    def attempt(_: int) -> None:
        if not resolved.exists(spark):
            # An empty first commit, so concurrent creators race on Delta's version 0 (see create_if_missing).
            resolved.create_if_missing(spark, out.schema, tuple(partition_by or ()))
        # Also after creating: a concurrent creator of another kind of table may have won.
        _check_layout(resolved.read(spark).schema, resolved)
        try:
            if _run_absent(resolved, QUARANTINE_RUN_ID, run_id):
                _append(out, resolved, token=token, merge_schema=True)
            else:
                _replace_run_rows(
                    out,
                    resolved,
                    run_column=QUARANTINE_RUN_ID,
                    run_id=run_id,
                    token=token,
                    merge_schema=True,
                )
        except PySparkException as exc:
            if "DELTA_FAILED_TO_MERGE_FIELDS" not in str(exc):
                raise
            conflicts = _type_conflicts(resolved.read(spark).schema, out.schema)
            raise SinkError(
                f"{resolved}: this run's columns cannot be merged into the table's schema: "
                + ("; ".join(conflicts) or _first_line(exc))
                + " (cast the column, or use a separate table for this dataset)",
                target=resolved.text,
            ) from exc

    _with_retries(attempt, resolved, max_attempts)
    rows = _rows_committed(spark, resolved, token)
    if rows is None:
        # Commit metrics disabled (spark.databricks.delta.history.metricsEnabled=false): count.
        rows = resolved.read(spark).where(F.col(QUARANTINE_RUN_ID) == F.lit(run_id)).count()
    log.info("%s: wrote %d rows of run %s", resolved, rows, run_id)
    return rows


def _run_has_rows(spark: SparkSession, resolved: _Target, run_id: str) -> bool:
    """Whether the table holds any row of ``run_id``: a one-column read that stops at the first row.

    Delta skips every file whose ``_dq_run_id`` min/max statistics exclude the run, and Parquet
    skips row groups the same way, so this costs a metadata lookup plus (at most) the files of that
    run — not a scan of the table.
    """
    probe = resolved.read(spark).select(QUARANTINE_RUN_ID).where(F.col(QUARANTINE_RUN_ID) == F.lit(run_id))
    return bool(probe.limit(1).collect())


def clear_run_rows(
    spark: SparkSession,
    target: str,
    *,
    kind: str,
    run_id: str,
    max_attempts: int = 8,
) -> bool:
    """Make a quarantine/valid table hold no row of ``run_id``, committing only when it held some.

    The write path of a run with nothing to set aside: the common case writes nothing and commits
    nothing (no table is created, no empty version added), while the retry of an attempt that did
    set rows aside still removes them in one Delta commit — the same end state as writing an empty
    frame with :func:`write_quarantine`, minus the commit. Returns True when rows were removed.

    Example::

        removed = clear_run_rows(spark, "/data/dq/quarantine/orders", kind="quarantine", run_id=run_id)
    """
    if kind not in _LAYOUT:
        raise ValueError(f"kind must be one of {', '.join(_LAYOUT)}, got {kind!r}")
    resolved = _resolve(target, kind)
    _check_run_id(run_id, str(resolved))
    _check_attempts(max_attempts)
    if not resolved.exists(spark):
        return False
    _check_layout(resolved.read(spark).schema, resolved)
    if _run_absent(resolved, QUARANTINE_RUN_ID, run_id) or not _run_has_rows(spark, resolved, run_id):
        return False

    def attempt(_: int) -> None:
        resolved.delta_table(spark).delete(F.col(QUARANTINE_RUN_ID) == F.lit(run_id))

    _with_retries(attempt, resolved, max_attempts)
    log.info("%s: removed the rows of an earlier attempt of run %s", resolved, run_id)
    return True


def write_quarantine(
    spark: SparkSession,
    quarantined_df: DataFrame,
    target: str,
    *,
    run_id: str,
    quarantined_at: dt.datetime | str | None = None,
    max_attempts: int = 8,
    partition_by: Sequence[str] | None = None,
) -> int:
    """Write the quarantined rows of one run to the Delta quarantine table; returns rows written.

    ``quarantined_df`` is the quarantined side of :func:`split_annotated` (input columns plus
    ``_dq_violations``). The table gets the input's columns, then ``_dq_run_id``,
    ``_dq_violations`` (normalised to the fixed struct of five strings) and
    ``_dq_quarantined_at`` (``quarantined_at``, default now; naive means UTC). Rows of other runs
    stay; the rows of ``run_id`` from an earlier attempt are replaced in the same commit — also
    when this run quarantines nothing. New input columns are added to the table (see the module
    docstring). The count comes from the Delta commit's metrics, not from a second scan.

    Example::

        valid, quarantined = split_annotated(annotated)
        n = write_quarantine(spark, quarantined, "/data/dq/quarantine/orders", run_id=run_id)
    """
    resolved = _resolve(target, "quarantine")
    _check_run_id(run_id, str(resolved))
    _check_attempts(max_attempts)
    _violations_field(quarantined_df, str(resolved))
    _reject_reserved(quarantined_df, resolved, (QUARANTINE_RUN_ID, QUARANTINE_AT))
    stamp = parse_time(quarantined_at) if quarantined_at is not None else utcnow()
    micros = (stamp - _EPOCH) // dt.timedelta(microseconds=1)
    violations = _normalised_violations(QUARANTINE_VIOLATIONS)
    input_columns = [F.col(_quote(c)) for c in quarantined_df.columns if c != QUARANTINE_VIOLATIONS]
    out = quarantined_df.select(
        *input_columns,
        F.lit(run_id).alias(QUARANTINE_RUN_ID),
        violations.alias(QUARANTINE_VIOLATIONS),
        F.timestamp_micros(F.lit(micros)).alias(QUARANTINE_AT),
    )
    return _write_run_rows(spark, out, resolved, run_id=run_id, max_attempts=max_attempts, partition_by=partition_by)


def write_valid(
    spark: SparkSession,
    valid_df: DataFrame,
    target: str,
    *,
    run_id: str,
    max_attempts: int = 8,
    partition_by: Sequence[str] | None = None,
) -> int:
    """Write the valid rows of one run to a Delta table; returns rows written.

    The table carries the input's columns plus ``_dq_run_id``: that column is what lets a
    retried run replace the rows its earlier attempt published instead of adding them twice
    (the same one-commit ``replaceWhere`` as the other sinks), then ``_dq_flags``: the flags of
    the valid side of :func:`split_annotated` (a ``_dq_violations`` column of flag-only rows is
    read as the flags; a DataFrame with neither gets NULL flags). ``partition_by`` applies when
    the table is created.

    Example::

        valid, quarantined = split_annotated(annotated)
        n = write_valid(spark, valid, "/data/silver/orders_valid", run_id=run_id,
                        partition_by=["order_date"])
    """
    resolved = _resolve(target, "valid")
    _check_run_id(run_id, str(resolved))
    _check_attempts(max_attempts)
    if QUARANTINE_VIOLATIONS in valid_df.columns:
        valid_df = valid_df.drop(VALID_FLAGS).withColumnRenamed(QUARANTINE_VIOLATIONS, VALID_FLAGS)
    if VALID_FLAGS in valid_df.columns:
        _violations_field(valid_df, str(resolved), VALID_FLAGS)
        flags = _normalised_violations(VALID_FLAGS)
    else:
        flags = F.lit(None).cast(T.ArrayType(T.StructType(
            [T.StructField(field, T.StringType(), True) for field in VIOLATION_FIELDS]), True))
    _reject_reserved(valid_df, resolved, (QUARANTINE_RUN_ID,))
    out = valid_df.select(*[F.col(_quote(c)) for c in valid_df.columns if c != VALID_FLAGS],
                          F.lit(run_id).alias(QUARANTINE_RUN_ID), flags.alias(VALID_FLAGS))
    return _write_run_rows(spark, out, resolved, run_id=run_id, max_attempts=max_attempts, partition_by=partition_by)
