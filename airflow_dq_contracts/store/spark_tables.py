"""Spark's side of the store's tables: targets, safe creation, one-commit writes and conflict retries.

The machinery every Spark write of the store shares (results, registry, quarantine and valid rows):

* :func:`resolve_target` — a path/URI or a catalog name as a :class:`SparkTarget` (with the
  :class:`~airflow_dq_contracts.store.spark_remote.SessionCapabilities` of the session it is written
  through: SQL on Spark Connect, delta-rs and the commit lock where this process sees the table), which can tell
  whether its Delta table exists (:meth:`SparkTarget.exists`, waiting out a table another writer is
  creating) and create it with an empty first commit (:meth:`SparkTarget.create_if_missing`).
* :func:`append_rows`, :func:`replace_where`, :func:`replace_run_rows` — one Delta commit each: a
  plain append, or a ``replaceWhere`` that deletes the matching rows and adds the new ones atomically.
* :func:`with_retries` — runs an attempt until it commits; Delta commit conflicts
  (:func:`is_conflict`) are retried with jittered exponential backoff, a table being created by
  another writer is waited for by time (:data:`CREATION_WAIT_SECONDS`); failures are
  :class:`SinkError` naming the table.
* :func:`rows_committed` — the row count of a tagged commit, from its metrics.

Concurrency: Delta uses optimistic concurrency. Appends of new runs do not conflict with each
other; a *replacing* write (a retry) conflicts with any commit that added files to the table while
it ran (its ``replaceWhere`` read the whole table). A missing table is created with an empty first
commit, so any number of writers creating it race only on Delta's put-if-absent of version 0; the
losers retry, refresh the JVM's cached Delta log of the path (a stale one keeps saying "no table")
and find the winner's table.

Example::

    target = resolve_target("/data/dq/quarantine/orders", "quarantine", SessionCapabilities.of(spark))
    with_retries(lambda attempt: append_rows(frame, target, token=None, merge_schema=True), target, 8)
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from delta.tables import DeltaTable
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.storage.s3 import is_s3, outage, spark_location
from airflow_dq_contracts.store import fencing, spark_remote
from airflow_dq_contracts.store.commit_lock import local_commit_lock, local_table_path
from airflow_dq_contracts.store.delta import StoreError, first_line, is_path
from airflow_dq_contracts.store.results import driver_commits as delta_commits
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

__all__ = [
    "CONFLICT_MARKERS",
    "CREATION_WAIT_SECONDS",
    "RETRY_BASE_SECONDS",
    "RETRY_MAX_SECONDS",
    "SPARK_TYPES",
    "TableBeingCreated",
    "SinkError",
    "SparkTarget",
    "append_rows",
    "check_attempts",
    "check_fence",
    "check_run_id",
    "first_line",
    "forget_cached_log",
    "is_conflict",
    "nullable_type",
    "path_state",
    "probe_catalog_names",
    "quote_identifier",
    "replace_run_rows",
    "replace_where",
    "resolve_catalog_once",
    "resolve_target",
    "run_absent_by_spark",
    "run_locations",
    "table_schema",
    "rows_committed",
    "spark_sql_string",
    "store_outage",
    "with_retries",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

SPARK_TYPES: dict[str, T.DataType] = {
    "string": T.StringType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "bigint": T.LongType(),
    "timestamp": T.TimestampType(),
    "array<string>": T.ArrayType(T.StringType(), True),
}

#: Delta's strict check of a path (it asks the JVM's cached log of the path, see :meth:`SparkTarget.exists`).
is_delta_path = DeltaTable.isDeltaTable

# Backoff between conflicting commits: 0.2 s, 0.4 s, 0.8 s … capped at 5 s, each drawn uniformly
# from [half, full] so that writers which collided once do not collide again in lockstep.
RETRY_BASE_SECONDS = 0.2
RETRY_MAX_SECONDS = 5.0

# Delta's commit-conflict errors. The Python classes exist only when the ``delta`` package has
# patched PySpark's error conversion, so the error classes / Java names in the message are
# matched too (e.g. inside spark-submit on a cluster).
CONFLICT_MARKERS = (
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


class SinkError(StoreError, RuntimeError):
    """A Delta sink could not be written or read; the message names the table and the reason.

    ``target`` (also ``location``) is the table as given, ``attempts`` how many commits were tried
    (0 when the failure came before any commit). One of the store's errors
    (:class:`~airflow_dq_contracts.store.delta.StoreError`).

    Example::

        try:
            write_results(spark, checks, "/data/dq/results", run_id=run_id)
        except SinkError as exc:
            print(exc)   # results table '/data/dq/results': gave up after 8 attempts …
    """

    def __init__(self, message: str, *, target: str | None = None, attempts: int = 0) -> None:
        super().__init__(message, target)
        self.target = target
        self.attempts = attempts


# --------------------------------------------------------------------------------------------
# Targets


@dataclasses.dataclass(frozen=True)
class SparkTarget:
    """A resolved sink target: exactly one of ``path`` / ``name`` is set; ``capabilities``: its session's."""

    text: str
    kind: str  # "results" | "quarantine" | "valid" | "registry", for messages
    path: str | None = None
    name: str | None = None
    capabilities: SessionCapabilities = SessionCapabilities()
    #: Set by :func:`resolve_catalog_once`: the catalog said this run that the Delta table exists.
    probed: bool = False

    def __str__(self) -> str:
        return f"{self.kind} table {self.text!r}"

    @property
    def table_name(self) -> str:
        """The catalog name of a target that is not a path."""
        if self.name is None:
            raise SinkError(f"{self}: a path, not a catalog table name", target=self.text)
        return self.name

    @property
    def sql_reference(self) -> str:
        """How SQL names the table: ``delta.`<path>``` or the catalog name."""
        return spark_remote.table_reference(self.path, self.name)

    def delta_table(self, spark: SparkSession) -> DeltaTable:
        """Spark's handle on the (existing) Delta table, for deletes and its history."""
        if self.path is not None:
            return DeltaTable.forPath(spark, self.path)
        return DeltaTable.forName(spark, self.table_name)

    def read(self, spark: SparkSession) -> DataFrame:
        """The table's current rows."""
        if self.path is not None:
            return spark.read.format("delta").load(self.path)
        return spark.read.table(self.table_name)

    def exists(self, spark: SparkSession) -> bool:
        """True for an existing Delta table; SinkError if something else is in the way.

        A path that holds a ``_delta_log`` folder but no readable commit yet is a table another
        writer is creating right now: :class:`TableBeingCreated`, which the write waits out (by time).
        """
        if self.probed:  # the run's one probe of this catalog name said so (resolve_catalog_once)
            return True
        if self.capabilities.remote:  # Spark Connect: asked in SQL (store/spark_remote.py)
            detail = spark_remote.describe_detail(spark, self.sql_reference)
            if detail is not None and str(detail.get("format") or "").lower() != "delta":
                raise SinkError(f"{self}: the table exists but is not a Delta table", target=self.text)
            return detail is not None
        if self.path is not None:
            if is_delta_path(spark, self.path):
                return True
            state = path_state(spark, self.path)
            if state == "missing":
                return False
            # Delta caches one DeltaLog per path in the JVM, and its strict isDeltaTable asks the
            # cached snapshot, which is never refreshed: a log first looked at before another
            # writer's version 0 landed says "no table" for good. Drop it and look again.
            forget_cached_log(spark, self.path)
            if is_delta_path(spark, self.path):
                return True
            if state == "delta_log":
                raise TableBeingCreated(
                    f"{self}: {self.path} has a _delta_log but no commit yet (being created?)", target=self.text
                )
            # Writing a Delta log over a folder of other files would silently bury them.
            raise SinkError(f"{self}: {self.path} exists but is not a Delta table", target=self.text)
        if not spark.catalog.tableExists(self.table_name):
            return False
        try:
            DeltaTable.forName(spark, self.table_name)
        except PySparkException as exc:
            raise SinkError(f"{self}: the catalog table exists but is not a Delta table", target=self.text) from exc
        return True

    def create_if_missing(
        self, spark: SparkSession, schema: T.StructType, partition_by: Sequence[str] = (), comment: str | None = None
    ) -> None:
        """Create the table with an empty first commit (metadata only) unless it exists.

        Creating it with the first *write* would put data files in the folder before its log, and a
        second writer would find "a non-empty folder that is not a Delta table". An empty version 0
        leaves the race to Delta's put-if-absent on ``00000000000000000000.json``: one writer wins,
        the others get a commit conflict, retried, and then find the table.
        """
        if self.capabilities.remote:  # Spark Connect: the same empty version 0, in SQL
            spark.sql(spark_remote.create_table_sql(self.sql_reference, nullable_type(schema), partition_by, comment))
            return
        builder = DeltaTable.createIfNotExists(spark)
        builder = builder.location(self.path) if self.path is not None else builder.tableName(self.table_name)
        builder = builder.addColumns(nullable_type(schema))
        if partition_by:
            builder = builder.partitionedBy(*partition_by)
        if comment:
            builder = builder.comment(comment)
        try:
            with commit_lock(self):
                builder.execute()
        except (PySparkException, Py4JError) as exc:
            down = store_outage(self, exc)
            if down:  # not another writer: the store did not answer (or kept throttling) — never waited out
                raise SinkError(f"{self}: {down} while creating it", target=self.text) from exc
            if is_conflict(exc) or self.path is None or path_state(spark, self.path) != "delta_log":
                raise
            # Another writer's version 0 landed while this one was creating: Delta then fails the
            # loser with whatever its (stale, cached) log says, e.g. [DELTA_TABLE_NOT_FOUND]. Drop
            # the cached log and let the retry loop look again (waiting by time, not attempts).
            forget_cached_log(spark, self.path)
            raise TableBeingCreated(
                f"{self}: created by another writer meanwhile ({first_line(exc, 200)})", target=self.text
            ) from exc

    def run_absent(self, run_column: str, run_id: str) -> bool:
        """True only when the table certainly holds no row of ``run_id`` (read by delta-rs on the driver).

        False — replace, which is always correct — for a catalog name and whenever delta-rs cannot
        tell (see :func:`airflow_dq_contracts.store.results.driver_commits.run_absent`), and on Spark Connect
        unless the client sees the server's paths (:attr:`~.spark_remote.SessionCapabilities.driver_sees_outputs`).
        """
        if not self.capabilities.driver_sees_outputs:
            return False
        return delta_commits.run_absent(self.path, run_column, run_id)


def nullable_type(data_type: T.DataType) -> Any:
    """``data_type`` with every field nullable, as a table created by a first write would have it."""
    if isinstance(data_type, T.StructType):
        return T.StructType(
            [T.StructField(f.name, nullable_type(f.dataType), True, f.metadata) for f in data_type.fields]
        )
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(nullable_type(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(nullable_type(data_type.keyType), nullable_type(data_type.valueType), True)
    return data_type


def resolve_target(target: str, kind: str, capabilities: SessionCapabilities) -> SparkTarget:
    """``target`` (a path/URI, ``~`` expanded, or a catalog table name) as a :class:`SparkTarget` of ``kind``.

    ``capabilities``: what the session that writes it can do (told by the caller, never asked).

    >>> local = SessionCapabilities()
    >>> resolve_target("dq.results", "results", local).name, str(resolve_target("/wh/r", "results", local))
    ('dq.results', "results table '/wh/r'")
    """
    if not isinstance(target, str) or not target.strip():
        raise SinkError(f"{kind} table: expected a path or a table name, got {target!r}", target=str(target))
    text = target.strip()
    if is_path(text):
        # s3:// and s3n:// as Spark's S3 filesystem names them (s3a://); the text stays as given.
        path = os.path.expanduser(text) if text.startswith("~") else spark_location(text)
        return SparkTarget(text=text, kind=kind, path=path, capabilities=capabilities)
    return SparkTarget(text=text, kind=kind, name=text, capabilities=capabilities)


# --------------------------------------------------------------------------------------------
# Catalog names, resolved once per run

#: (session, run id, catalog name) → the table's catalog entry (``format``, ``location``: see
#: :func:`~airflow_dq_contracts.store.spark_remote.catalog_tables`) and (once read) its schema.
_CATALOG_RUNS: dict[tuple[str, str, str], dict[str, Any]] = {}
_CATALOG_RUNS_KEPT = 256  # entries; a long-lived process (a test session, a benchmark) forgets old runs


def _session_key(spark: SparkSession, remote: bool) -> str:
    session = getattr(spark, "session_id", None) if remote else None
    return str(session or id(spark))


def _name_key(spark: SparkSession, remote: bool, run_id: str, name: str) -> tuple[str, str, str]:
    from airflow_dq_contracts.storage.catalog_names import normalise_name

    return (_session_key(spark, remote), run_id, normalise_name(name))


def _catalog_key(spark: SparkSession, target: SparkTarget, run_id: str) -> tuple[str, str, str]:
    return _name_key(spark, target.capabilities.remote, run_id, target.table_name)


def _remember(key: tuple[str, str, str], detail: dict[str, Any]) -> dict[str, Any]:
    if len(_CATALOG_RUNS) >= _CATALOG_RUNS_KEPT:
        _CATALOG_RUNS.clear()
    entry = _CATALOG_RUNS[key] = {"detail": detail}
    return entry


def probe_catalog_names(
    spark: SparkSession, targets: Sequence[str | None], run_id: str, capabilities: SessionCapabilities
) -> None:
    """Look up, at once, every catalog name among a run's output ``targets`` (paths and None are skipped).

    One metastore lookup per database for all of them
    (:func:`~airflow_dq_contracts.store.spark_remote.catalog_tables`) instead of one probe per table
    as each write comes; each write of the run then finds its answer (:func:`resolve_catalog_once`).
    A name with no table yet is not remembered: its write probes it, and creates it.
    """
    names = [
        t.strip()
        for t in dict.fromkeys(targets)
        if t
        and t.strip()
        and not is_path(t.strip())
        and _name_key(spark, capabilities.remote, run_id, t.strip()) not in _CATALOG_RUNS
    ]
    if not names:
        return
    for name, detail in spark_remote.catalog_tables(spark, names).items():
        if detail is not None:
            _remember(_name_key(spark, capabilities.remote, run_id, name), detail)


def run_locations(spark: SparkSession, run_id: str, capabilities: SessionCapabilities) -> dict[str, str]:
    """``{name: location}`` of the catalog names this run resolved (the names as normalised), for reuse.

    What :func:`~airflow_dq_contracts.store.spark_remote.catalog_locations` need not ask again at the
    end of the run.
    """
    session = _session_key(spark, capabilities.remote)
    return {
        name: str(entry["detail"]["location"])
        for (owner, run, name), entry in list(_CATALOG_RUNS.items())
        if owner == session and run == run_id and entry["detail"].get("location")
    }


def resolve_catalog_once(spark: SparkSession, target: SparkTarget, run_id: str) -> SparkTarget:
    """A catalog-named ``target`` as this run writes it, after ONE catalog lookup per table per run.

    The catalog's answer (its provider and location, from the metastore alone:
    :func:`~airflow_dq_contracts.store.spark_remote.catalog_tables`; all of a run's names at once when
    the run looked them up first, :func:`probe_catalog_names`) is kept for the run (``run_id``) and
    reused for existence, format and schema by every write of the run to that name (results,
    registry, quarantine). Where this process sees the table's location itself (a local or shared
    filesystem, :attr:`SessionCapabilities.driver_sees_outputs`) and a Delta log is there, the name
    is written as that location — the path tables' fast writes (delta-rs commits from the driver, a
    plain append of a new run, the commit's version); the metastore entry points at that same Delta
    location, so the catalog's readers see the rows. Otherwise the target stays a name, marked
    :attr:`SparkTarget.probed` so that it is not probed again. A path, or a name with no table yet
    (created by the write, through the catalog), is returned as it is.

    Nothing is kept across runs: a table dropped and created elsewhere between two runs is looked up
    afresh by the next run, and written at its new location.
    """
    if target.name is None:
        return target
    key = _catalog_key(spark, target, run_id)
    entry = _CATALOG_RUNS.get(key)
    if entry is None:
        detail = spark_remote.catalog_tables(spark, [target.table_name])[target.table_name]
        if detail is None:
            return target
        entry = _remember(key, detail)
    if str(entry["detail"].get("format") or "").lower() != "delta":
        raise SinkError(f"{target}: the table exists but is not a Delta table", target=target.text)
    location = local_table_path(str(entry["detail"].get("location") or ""))
    if (
        target.capabilities.driver_sees_outputs
        and location is not None
        and os.path.isdir(os.path.join(location, "_delta_log"))
    ):
        return dataclasses.replace(target, path=location, name=None)
    return dataclasses.replace(target, probed=True)


def table_schema(spark: SparkSession, target: SparkTarget, run_id: str | None = None) -> T.StructType:
    """The existing table's schema; for a catalog name resolved this run, read once per run."""
    if target.name is None or run_id is None or not target.probed:
        return target.read(spark).schema
    entry = _CATALOG_RUNS.get(_catalog_key(spark, target, run_id))
    if entry is None:
        return target.read(spark).schema
    if "schema" not in entry:
        entry["schema"] = target.read(spark).schema
    schema: T.StructType = entry["schema"]
    return schema


def run_absent_by_spark(spark: SparkSession, target: SparkTarget, run_column: str, run_id: str) -> bool:
    """True when the catalog-named table holds no row of ``run_id``, asked through Spark (one small query).

    For the names :meth:`SparkTarget.run_absent` cannot read (the client does not see the location):
    a new run is appended, a retry (whose earlier attempt left rows) replaces. Delta skips the files
    whose statistics exclude the run. False for a path (delta-rs answers those) and on any error.
    """
    if target.name is None or not target.probed:
        return False
    try:
        probe = target.read(spark).select(run_column).where(F.col(run_column) == F.lit(run_id)).limit(1)
        return not probe.collect()
    except PySparkException:
        return False


def path_state(spark: SparkSession, path: str) -> str:
    """``missing``, ``delta_log`` (a ``_delta_log`` folder is there) or ``other`` content at ``path``.

    Any Hadoop filesystem (local, s3a, abfss, hdfs).
    """
    try:
        context: Any = spark.sparkContext  # py4j internals, untyped (or typed Optional) by pyspark
        jvm = context._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(context._jsc.hadoopConfiguration())
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


def forget_cached_log(spark: SparkSession, path: str) -> None:
    """Drop the JVM's cached ``DeltaLog`` of ``path``, so the next look reads the log from storage."""
    try:
        session: Any = spark  # py4j internals, untyped (or typed Optional) by pyspark
        jvm = session.sparkContext._jvm
        jvm.org.apache.spark.sql.delta.DeltaLog.invalidateCache(
            session._jsparkSession, jvm.org.apache.hadoop.fs.Path(path)
        )
    except (Py4JError, AttributeError):
        pass  # no JVM gateway (Spark Connect): nothing cached on this side


def quote_identifier(name: str) -> str:
    """A column name as a Spark SQL identifier (dots, spaces and backticks included)."""
    return "`" + name.replace("`", "``") + "`"


def spark_sql_string(value: str) -> str:
    """A single-quoted Spark SQL string literal (backslash escapes, Spark's default parser).

    >>> spark_sql_string("it's a \\\\ test")
    "'it\\\\'s a \\\\\\\\ test'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def check_run_id(run_id: Any, target: str) -> str:
    """``run_id`` when it is a non-empty string, else :class:`SinkError` naming ``target``."""
    if not isinstance(run_id, str) or not run_id:
        raise SinkError(f"{target}: run_id must be a non-empty string, got {run_id!r}", target=target)
    return run_id


def check_attempts(max_attempts: Any) -> int:
    """``max_attempts`` when it is an integer ≥ 1, else ValueError."""
    if not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    return max_attempts


# --------------------------------------------------------------------------------------------
# Retries


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a Delta commit conflict (worth retrying), by class or by error text.

    Example::

        try:
            df.write.format("delta").mode("append").save(path)
        except Exception as exc:  # noqa: BLE001 - any failed write may be a commit conflict
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
    return any(marker in text for marker in CONFLICT_MARKERS)


class TableBeingCreated(SinkError):
    """A ``_delta_log`` folder without a commit yet where a table should be: another writer creating it."""


#: How long a write waits for a table another writer is creating (its ``_delta_log`` is there, its
#: first commit not yet readable) before it gives up. By time, not by a number of looks: on a
#: loaded worker the other writer's commit can take seconds.
CREATION_WAIT_SECONDS = 120.0


def commit_lock(target: SparkTarget) -> contextlib.AbstractContextManager[None]:
    """The machine-wide lock of a local-filesystem table, held around a commit (see store/commit_lock.py).

    None to hold for a catalog name, another store, or on Spark Connect unless the client sees the
    server's paths (then the server's commit is made under this machine's lock, as any local writer's).
    """
    if target.path is None or not target.capabilities.driver_sees_outputs:
        return contextlib.nullcontext()
    return local_commit_lock(target.path)


def store_outage(target: SparkTarget, exc: BaseException) -> str | None:
    """What ``exc`` says about the object store of an S3 ``target`` that did not answer (storage/s3.py's
    :func:`~airflow_dq_contracts.storage.s3.outage`, after s3a's own bounded retries), or None.

    >>> target = SparkTarget("s3://lake/q", "quarantine", path="s3a://lake/q")
    >>> store_outage(target, OSError("PUT s3a://lake/q/_delta_log/00000000000000000001.json: Connection reset"))
    'the object store did not answer'
    >>> store_outage(SparkTarget("/wh/q", "quarantine", path="/wh/q"), OSError("Connection reset")) is None
    True
    """
    return outage(exc) if target.path is not None and is_s3(target.path) else None


def with_retries(action: Callable[[int], _T], target: SparkTarget, max_attempts: int) -> _T:
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
        except TableBeingCreated:
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
                down = store_outage(target, exc)  # the JVM's first line says only "o159.save"
                raise SinkError(
                    f"{target}: {down} while committing" if down else f"{target}: write failed: {first_line(exc)}",
                    target=target.text,
                    attempts=attempt,
                ) from exc
            last = exc
            if attempt == max_attempts:
                break
            delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempt - 1))
            delay = random.uniform(delay / 2, delay)
            log.warning(
                "%s: concurrent commit conflict on attempt %d/%d, retrying in %.2fs: %s",
                target,
                attempt,
                max_attempts,
                delay,
                first_line(exc, 200),
            )
            time.sleep(delay)
            attempt += 1
    assert last is not None
    raise SinkError(
        f"{target}: gave up after {max_attempts} attempt{'s' if max_attempts != 1 else ''}: "
        f"concurrent Delta commits kept conflicting with this write (last error: {first_line(last)}); "
        "retry the task, or raise max_attempts",
        target=target.text,
        attempts=max_attempts,
    ) from last


def check_fence(target: SparkTarget, run_id: str, attempt: int | None) -> None:
    """Before a write of ``attempt`` of ``run_id``: refuse it when a newer attempt wrote ``target``
    (:class:`~airflow_dq_contracts.store.fencing.StaleAttemptError`, see store/fencing.py).

    Read by delta-rs where this process sees the table (a local path, or S3 with the job's credentials);
    elsewhere (a catalog name, Spark Connect without shared storage) Delta's own check of the writer's
    ``txnAppId``/``txnVersion`` skips a stale write.
    """
    if attempt is None or target.path is None:
        return
    if not (target.capabilities.driver_sees_outputs or delta_commits.on_object_store(target.path)):
        return
    fencing.check_location(target.path, str(target), run_id, attempt)


def replace_run_rows(
    df: DataFrame,
    target: SparkTarget,
    *,
    run_column: str,
    run_id: str,
    token: str,
    merge_schema: bool,
    partition_by: Sequence[str] = (),
    attempt: int | None = None,
) -> None:
    """One commit: delete the rows of ``run_id``, add ``df`` (creating the table if missing).

    ``run_column`` is one of our fixed, plain column names, so it needs no quoting (and the
    predicate reads naturally in the table history). ``attempt``: the run's attempt, carried as the
    commit's transaction identifier (store/fencing.py).
    """
    replace_where(
        df,
        target,
        f"{run_column} = {spark_sql_string(run_id)}",
        token=token,
        merge_schema=merge_schema,
        partition_by=partition_by,
        run_id=run_id,
        attempt=attempt,
    )


def replace_where(
    df: DataFrame,
    target: SparkTarget,
    predicate: str,
    *,
    token: str | None = None,
    merge_schema: bool = False,
    partition_by: Sequence[str] = (),
    run_id: str | None = None,
    attempt: int | None = None,
) -> None:
    """One commit that replaces the rows matching the SQL ``predicate`` by ``df`` (which must match it).

    ``token`` tags the commit (``userMetadata``) so it can be found in the history. With ``run_id``
    and ``attempt`` the commit carries the attempt as its transaction identifier, checked first
    (:func:`check_fence`, under the commit lock) — see store/fencing.py.
    """
    writer = _tagged(
        df.write.format("delta").mode("overwrite").option("replaceWhere", predicate), token, run_id, attempt
    )
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    _save(writer, target, run_id, attempt)


def append_rows(
    df: DataFrame,
    target: SparkTarget,
    *,
    token: str | None,
    merge_schema: bool,
    run_id: str | None = None,
    attempt: int | None = None,
) -> None:
    """One plain append commit of ``df`` (tagged ``token``): a run's first write, see :meth:`SparkTarget.run_absent`.

    With ``run_id`` and ``attempt``, the commit carries the attempt as its transaction identifier (store/fencing.py).
    """
    writer = _tagged(df.write.format("delta").mode("append"), token, run_id, attempt)
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    _save(writer, target, run_id, attempt)


def _tagged(writer: Any, token: str | None, run_id: str | None, attempt: int | None) -> Any:
    """``writer`` with the run's attempt as its transaction identifier (store/fencing.py) and ``token`` as its
    ``userMetadata``, each when given."""
    if run_id is not None:
        writer = writer.options(**fencing.spark_writer_options(run_id, attempt))
    return writer if token is None else writer.option("userMetadata", token)


def _save(writer: Any, target: SparkTarget, run_id: str | None, attempt: int | None) -> None:
    """Commit ``writer``'s write to ``target``: a path under its commit lock, the run's attempt checked first."""
    if target.path is None:
        writer.saveAsTable(target.table_name)
        return
    with commit_lock(target):
        if run_id is not None:
            check_fence(target, run_id, attempt)
        writer.save(target.path)


def rows_committed(spark: SparkSession, target: SparkTarget, token: str) -> int | None:
    """``numOutputRows`` of the commit tagged ``token`` (None if metrics are unavailable)."""
    table = None if target.capabilities.remote else target.delta_table(spark)
    # Our commit is normally the newest or nearly; only under heavy concurrency look further back.
    # (history() reads the commit files eagerly, hence the bounded first look.)
    for limit in (25, None):
        if table is None:  # Spark Connect: DESCRIBE HISTORY
            history = spark_remote.history(spark, target.sql_reference, limit)
        else:
            history = table.history(limit) if limit is not None else table.history()
        rows = history.where(F.col("userMetadata") == F.lit(token)).select("operationMetrics").limit(1).collect()
        if rows:
            metrics = rows[0]["operationMetrics"] or {}
            value = metrics.get("numOutputRows")
            return int(value) if value is not None else None
    return None
