"""The results table written by Spark: a run's rows appended when new, replaced on a retry; read back.

Spark side (imports no Airflow). A run's write is **idempotent per run id**: a retry's write is
one Delta commit that overwrites exactly the rows of its run (``replaceWhere "run_id = '…'"``)
and adds the new ones, so an Airflow retry of the same run replaces its rows instead of adding a
second copy, while other runs' rows are untouched.

A missing local results table is created the way a run's rows are appended, by delta-rs
(:func:`~airflow_dq_contracts.store.results.driver_commits.create_local_table`: the same empty ``CREATE TABLE``
version 0, schema, partitioning and description as Spark's ``createIfNotExists``), so a new table
costs milliseconds more than an existing one, not a cold JVM's Delta write path.

A run's *first* write needs no replacement: when the table certainly holds no row of the run yet
(:meth:`~airflow_dq_contracts.store.spark_tables.SparkTarget.run_absent`, read by delta-rs on the
driver) the rows are appended in one plain commit — by delta-rs itself when the table allows it
(:func:`airflow_dq_contracts.store.results.driver_commits.append_results`: a local table of the exact
schema), else by Spark's Delta. That skips the state reconstruction of the whole table that a
``replaceWhere`` needs. Whenever that cannot be known the write replaces, so a retry always
replaces.

The table has exactly :data:`~airflow_dq_contracts.results.RESULT_COLUMNS` (DESIGN §5), is created
on first use and partitioned by ``contract_name``; a table of an earlier release (lacking a tail of
the second-wave columns) gains them by schema evolution in the run's commit.

Example::

    n = write_results(spark, result.checks, "/data/dq/results", run_id=result.run_id)
    version = committed_version(spark, "/data/dq/results")
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.results import EVOLVED_RESULT_COLUMNS, RESULT_COLUMNS, TIME_RESULT_COLUMNS, CheckResult
from airflow_dq_contracts.store import spark_tables as tables
from airflow_dq_contracts.store.delta import StoreError
from airflow_dq_contracts.store.fencing import StaleAttemptError
from airflow_dq_contracts.store.results import driver_commits as delta_commits
from airflow_dq_contracts.store.results.driver_commits import RESULTS_PARTITION_COLUMNS
from airflow_dq_contracts.store.spark_remote import SessionCapabilities
from airflow_dq_contracts.store.spark_tables import SPARK_TYPES, SinkError, SparkTarget, resolve_target
from airflow_dq_contracts.timeutil import from_epoch_micros

__all__ = ["RESULTS_PARTITION_COLUMNS", "RESULTS_SCHEMA", "committed_version", "read_results", "write_results"]

log = logging.getLogger(__name__)

#: The results table's Spark schema, built from the fixed ``RESULT_COLUMNS`` (order and types).
RESULTS_SCHEMA = T.StructType([T.StructField(name, SPARK_TYPES[kind], True) for name, kind in RESULT_COLUMNS])

#: Target text → version of the last commit this process made to it with delta-rs (see committed_version).
_DRIVER_COMMITS: dict[str, int] = {}


def _schema_differences(actual: T.StructType) -> list[str]:
    """How ``actual`` differs from the fixed results schema, one phrase per difference (none: equal)."""
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
    return (
        len(found) < len(expected)
        and found == expected[: len(found)]
        and all(name in EVOLVED_RESULT_COLUMNS for name, _ in expected[len(found) :])
    )


def _ensure_results_table(spark: SparkSession, target: SparkTarget, run_id: str | None = None) -> bool:
    """Create the results table if missing; True when an existing one must be evolved by the write."""
    if target.exists(spark):
        schema = tables.table_schema(spark, target, run_id)
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
    target.create_if_missing(
        spark,
        RESULTS_SCHEMA,
        RESULTS_PARTITION_COLUMNS,
        delta_commits.RESULTS_DESCRIPTION,
    )
    return False


def write_results(
    spark: SparkSession,
    records: Sequence[CheckResult],
    target: str,
    *,
    run_id: str,
    max_attempts: int = 8,
    capabilities: SessionCapabilities | None = None,
    attempt: int | None = None,
) -> int:
    """Write one run's check results to the Delta results table; returns the rows written.

    The table is created on first use with the fixed schema of ``RESULT_COLUMNS``, partitioned
    by ``contract_name``. The rows of ``run_id`` already in the table (an earlier attempt of the
    same run) are replaced in the same commit — an empty ``records`` just removes them. Every
    record must carry ``run_id``. Commit conflicts with concurrent writers are retried up to
    ``max_attempts`` times, then :class:`SinkError`. ``capabilities``: what ``spark`` can do, as its
    maker says (default: as the session tells; on Spark Connect delta-rs commits only with shared storage).
    ``attempt``: the run's attempt, carried by the commit; a newer attempt's commit already in the table
    refuses this write (:class:`~airflow_dq_contracts.store.fencing.StaleAttemptError`, store/fencing.py).

    Example::

        n = write_results(spark, result.checks, "/data/dq/results", run_id=result.run_id)
    """
    resolved = resolve_target(target, "results", capabilities or SessionCapabilities.of(spark))
    tables.check_run_id(run_id, str(resolved))
    tables.check_attempts(max_attempts)
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
    # A catalog name: probed once this run, and written as its location where this process sees it.
    resolved = tables.resolve_catalog_once(spark, resolved, run_id)
    token = delta_commits.commit_token("results", run_id)
    _DRIVER_COMMITS.pop(resolved.text, None)
    version = None
    if resolved.path is not None and delta_commits.on_object_store(resolved.path):
        # On S3 only delta-rs writes this table (conditional writes; see store/delta_commits.py).
        try:
            version = delta_commits.commit_results(
                resolved.path, records, run_id, token=token, attempts=max_attempts, attempt=attempt
            )
        except StaleAttemptError:
            raise
        except StoreError as exc:
            raise SinkError(str(exc), target=target) from None
    # delta-rs from the driver: on Spark Connect only where the client sees the server's paths.
    elif resolved.path is not None and resolved.capabilities.driver_sees_outputs:
        version = delta_commits.append_results(resolved.path, records, run_id, token=token, attempt=attempt)
    if version is not None:
        _DRIVER_COMMITS[resolved.text] = version
        log.info("%s: appended %d check results of run %s (delta-rs)", resolved, len(records), run_id)
        return len(records)
    df = spark.createDataFrame([delta_commits.result_row(r) for r in records], schema=RESULTS_SCHEMA)

    def write_once(_: int) -> None:
        # A table written by an earlier release gains the new columns in this same commit.
        evolve = _ensure_results_table(spark, resolved, run_id)
        # Looked at again on every attempt: only a table holding no row of the run is appended to.
        if resolved.run_absent("run_id", run_id) or tables.run_absent_by_spark(spark, resolved, "run_id", run_id):
            tables.append_rows(df, resolved, token=token, merge_schema=evolve, run_id=run_id, attempt=attempt)
        else:
            tables.replace_run_rows(
                df, resolved, run_column="run_id", run_id=run_id, token=token, merge_schema=evolve, attempt=attempt
            )

    tables.with_retries(write_once, resolved, max_attempts)
    log.info("%s: wrote %d check results of run %s", resolved, len(records), run_id)
    return len(records)


def committed_version(spark: SparkSession, target: str, capabilities: SessionCapabilities | None = None) -> int | None:
    """The version of the table at ``target`` as this session last committed or read it; None when unknown.

    Right after :func:`write_results` this is the version of that write's commit (Delta installs
    the committed snapshot), which the job reports so the operator can read the run back from
    that one commit (:func:`airflow_dq_contracts.store.results.delta_store.read_results` checks that the
    commit is the run's and falls back to a table scan otherwise). Catalog names and sessions
    without a JVM gateway (Spark Connect) give None.
    """
    resolved = resolve_target(target, "results", capabilities or SessionCapabilities.of(spark))
    if resolved.text in _DRIVER_COMMITS:
        return _DRIVER_COMMITS[resolved.text]
    if resolved.path is None:
        return None
    try:
        session: Any = spark  # py4j internals, untyped (or typed Optional) by pyspark
        delta_log = session.sparkContext._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
            session._jsparkSession, resolved.path
        )
        return int(delta_log.unsafeVolatileSnapshot().version())
    except Exception:  # noqa: BLE001 - an internal API: unknown means "read the table"
        return None


def read_results(
    spark: SparkSession, target: str, run_id: str | None = None, capabilities: SessionCapabilities | None = None
) -> list[CheckResult]:
    """Check results from the Delta results table (one run, or all), ordered by run, contract, check.

    Example::

        checks = read_results(spark, "/data/dq/results", run_id="dq-3f2a…")
    """
    resolved = resolve_target(target, "results", capabilities or SessionCapabilities.of(spark))
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
        value = F.col(tables.quote_identifier(name)) if name in present else F.lit(None).cast(SPARK_TYPES[kind])
        if name in TIME_RESULT_COLUMNS:
            value = F.unix_micros(value)
        columns.append(value.alias(name))
    rows = df.select(*columns).collect()
    records = []
    for row in rows:
        data = row.asDict()
        for name in TIME_RESULT_COLUMNS:
            data[name] = from_epoch_micros(data[name])
        records.append(CheckResult.from_dict(data))
    records.sort(key=lambda r: (r.run_id or "", r.contract_name or "", r.check_id or ""))
    return records
