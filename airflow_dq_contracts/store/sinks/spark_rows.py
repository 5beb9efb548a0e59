"""Row sinks of an evaluation: the quarantined rows and the valid rows of one run, each in its Delta table.

Spark side (imports no Airflow). Like the results, each write is **idempotent per run id**: one
Delta commit that replaces exactly the rows of its run (``replaceWhere "_dq_run_id = '…'"``), or a
plain append when delta-rs on the driver sees no row of the run yet — so a retried run replaces
the rows its earlier attempt set aside or published instead of adding them twice.

A few rows (≤ :data:`~airflow_dq_contracts.store.results.driver_commits.DRIVER_ROWS_LIMIT`) bound for a local
table are collected to the driver and committed by delta-rs under the table's commit lock
(:func:`~airflow_dq_contracts.store.results.driver_commits.write_run_rows`): the same table (created with an
empty ``CREATE TABLE`` version 0, as Spark creates it), the same schema and rows, in milliseconds
instead of the seconds Spark's Delta write path costs a small run. Anything else — more rows, a
catalog name, an object store, a schema to evolve, a type delta-rs would store differently — is
written by Spark's Delta as below.

Layouts:

* **quarantine** — the input's columns, then ``_dq_run_id``, ``_dq_violations``
  (``array<struct<check_id, check_name, check_type, severity, action: string>>``) and
  ``_dq_quarantined_at`` (DESIGN §6). Appends across runs. Created by the first write,
  unpartitioned unless ``partition_by`` is given.
* **valid** — the input's columns plus ``_dq_run_id``: without the run id a retried run could
  not find (and replace) the rows its previous attempt published, and would duplicate them; then
  ``_dq_flags`` (the same struct array as ``_dq_violations``): the flag-action checks the kept row
  broke ("load the row but mark it"), empty when none. A valid table written before this column
  existed gains it by schema evolution; its older rows read NULL.

Schema evolution: a later run may bring an input column the table does not have yet; it is added
to the table (Delta ``mergeSchema``, in the same commit) at the end of the schema, and older rows
read it as NULL. A column missing from a later run's input is NULL in that run's rows. A column
whose *type* changed cannot be merged by Delta: that write fails with a
:class:`~airflow_dq_contracts.store.spark_tables.SinkError` naming the column and both types.

Example::

    valid, quarantined = split_annotated(annotated_df)
    write_quarantine(spark, quarantined, "/data/dq/quarantine/orders", run_id=result.run_id)
    write_valid(spark, valid, "/data/silver/orders_valid", run_id=result.run_id)
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.results import (
    QUARANTINE_AT,
    QUARANTINE_RUN_ID,
    QUARANTINE_VIOLATIONS,
    QUARANTINING_ACTIONS,
    VALID_FLAGS,
    VIOLATION_FIELDS,
)
from airflow_dq_contracts.store import spark_remote
from airflow_dq_contracts.store.commit_lock import local_table_path
from airflow_dq_contracts.store.results import driver_commits as delta_commits
from airflow_dq_contracts.store.spark_remote import SessionCapabilities
from airflow_dq_contracts.store.spark_tables import (
    SinkError,
    SparkTarget,
    append_rows,
    check_attempts,
    check_run_id,
    commit_lock,
    first_line,
    nullable_type,
    probe_catalog_names,
    quote_identifier,
    replace_run_rows,
    resolve_catalog_once,
    resolve_target,
    rows_committed,
    run_absent_by_spark,
    table_schema,
    with_retries,
)
from airflow_dq_contracts.timeutil import parse_time, to_epoch_micros, utcnow

__all__ = [
    "QUARANTINING_ACTIONS",
    "clear_run_rows",
    "probe_run_tables",
    "split_annotated",
    "write_quarantine",
    "write_valid",
]

log = logging.getLogger(__name__)


def _violations_field(df: DataFrame, where: str, name: str = QUARANTINE_VIOLATIONS) -> T.StructType:
    if name not in df.columns:
        raise SinkError(f"{where}: the DataFrame has no {name} column")
    data_type = df.schema[name].dataType
    if not isinstance(data_type, T.ArrayType) or not isinstance(data_type.elementType, T.StructType):
        raise SinkError(
            f"{where}: {name} must be array<struct<{', '.join(VIOLATION_FIELDS)}>>, got {data_type.simpleString()}",
        )
    element = data_type.elementType
    missing = [f for f in VIOLATION_FIELDS if f not in element.names]
    if missing:
        raise SinkError(f"{where}: {name} elements lack field(s) {', '.join(missing)}")
    return element


def _normalised_violations(name: str) -> Column:
    """``name`` (an array of violation structs) as the fixed struct of five strings."""
    return F.transform(
        F.col(name), lambda v: F.struct(*[v[field].cast("string").alias(field) for field in VIOLATION_FIELDS])
    )


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


def _reject_reserved(df: DataFrame, target: SparkTarget, reserved: Sequence[str]) -> None:
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


def _check_layout(schema: T.StructType, target: SparkTarget) -> None:
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


def _driver_write(
    out: DataFrame,
    resolved: SparkTarget,
    *,
    run_id: str,
    token: str,
    partition_by: Sequence[str],
    rows_at_most: int | None,
    attempt: int | None = None,
) -> int | None:
    """``out`` collected to the driver and committed by delta-rs when it is small; rows written, or None.

    Only for a local table this process sees (:attr:`~airflow_dq_contracts.store.spark_remote.SessionCapabilities.driver_sees_outputs`),
    at most :data:`~airflow_dq_contracts.store.results.driver_commits.DRIVER_ROWS_LIMIT` rows (``rows_at_most``
    when the caller knows a bound, else found by collecting one row more), a layout this sink accepts,
    and a table delta-rs writes exactly as Spark's Delta would
    (:func:`~airflow_dq_contracts.store.results.driver_commits.write_run_rows`). A few rows then cost
    milliseconds of commit instead of a cold JVM's Delta write path (its own Spark job, the log's
    state, the commit's statistics and the history read for the count).
    """
    limit = delta_commits.DRIVER_ROWS_LIMIT
    if (
        resolved.path is None
        or local_table_path(resolved.path) is None
        or not resolved.capabilities.driver_sees_outputs
    ):
        return None
    if rows_at_most is not None and rows_at_most > limit:
        return None
    schema = nullable_type(out.schema)
    try:
        _check_layout(schema, resolved)
    except SinkError:
        return None  # Spark's path says why
    try:
        data = out.limit(limit + 1).toArrow()
    except (PySparkException, Py4JError, TypeError, ValueError) as exc:  # a type Arrow cannot carry
        log.debug("%s: rows not collected for delta-rs (%s); Spark writes", resolved, first_line(exc, 200))
        return None
    if data.num_rows > limit:
        return None
    return delta_commits.write_run_rows(
        resolved.path,
        data,
        schema.jsonValue(),
        kind=resolved.kind,
        run_column=QUARANTINE_RUN_ID,
        run_id=run_id,
        partition_by=partition_by,
        token=token,
        attempt=attempt,
    )


def probe_run_tables(
    spark: SparkSession,
    run_id: str,
    capabilities: SessionCapabilities,
    results_table: str | None = None,
    quarantine_table: str | None = None,
    valid_table: str | None = None,
) -> None:
    """Before a run's writes: look up all its catalog-named tables at once (the registry beside the results too).

    One metastore lookup per database for the run's quarantine, valid, results and registry names
    (:func:`~airflow_dq_contracts.store.spark_tables.probe_catalog_names`), which each write of the
    run then reuses; paths cost nothing here.

    Example::

        probe_run_tables(spark, run_id, caps, results_table="dq.results", quarantine_table="dq.quarantine")
    """
    from airflow_dq_contracts.store.results.registry import registry_table_for

    registry = registry_table_for(results_table) if results_table else None
    probe_catalog_names(spark, [quarantine_table, valid_table, registry, results_table], run_id, capabilities)


def _write_run_rows(
    spark: SparkSession,
    out: DataFrame,
    resolved: SparkTarget,
    run_id: str,
    max_attempts: int,
    partition_by: Sequence[str] | None,
    rows_at_most: int | None,
    attempt: int | None = None,
) -> int:
    """Replace the rows of ``run_id`` in a quarantine/valid table by ``out``; rows written.

    ``attempt`` (the run's attempt, None: not given) travels with the commit; a newer attempt's commit
    already in the table refuses this one (store/fencing.py).
    """
    # A catalog name: probed once this run, and written as its location where this process sees it.
    resolved = resolve_catalog_once(spark, resolved, run_id)
    token = delta_commits.commit_token(resolved.kind, run_id)
    written = _driver_write(
        out,
        resolved,
        run_id=run_id,
        token=token,
        partition_by=tuple(partition_by or ()),
        rows_at_most=rows_at_most,
        attempt=attempt,
    )
    if written is not None:
        log.info("%s: wrote %d rows of run %s (delta-rs)", resolved, written, run_id)
        return written

    def write_once(_: int) -> None:
        if not resolved.exists(spark):
            # An empty first commit, so concurrent creators race on Delta's version 0 (see create_if_missing).
            resolved.create_if_missing(spark, out.schema, tuple(partition_by or ()))
        # Also after creating: a concurrent creator of another kind of table may have won.
        _check_layout(table_schema(spark, resolved, run_id), resolved)
        try:
            if resolved.run_absent(QUARANTINE_RUN_ID, run_id) or run_absent_by_spark(
                spark, resolved, QUARANTINE_RUN_ID, run_id
            ):
                append_rows(out, resolved, token=token, merge_schema=True, run_id=run_id, attempt=attempt)
            else:
                replace_run_rows(
                    out,
                    resolved,
                    run_column=QUARANTINE_RUN_ID,
                    run_id=run_id,
                    token=token,
                    merge_schema=True,
                    attempt=attempt,
                )
        except PySparkException as exc:
            if "DELTA_FAILED_TO_MERGE_FIELDS" not in str(exc):
                raise
            conflicts = _type_conflicts(resolved.read(spark).schema, out.schema)
            raise SinkError(
                f"{resolved}: this run's columns cannot be merged into the table's schema: "
                + ("; ".join(conflicts) or first_line(exc))
                + " (cast the column, or use a separate table for this dataset)",
                target=resolved.text,
            ) from exc

    with_retries(write_once, resolved, max_attempts)
    rows = rows_committed(spark, resolved, token)
    if rows is None:
        # Commit metrics disabled (spark.databricks.delta.history.metricsEnabled=false): count.
        rows = resolved.read(spark).where(F.col(QUARANTINE_RUN_ID) == F.lit(run_id)).count()
    log.info("%s: wrote %d rows of run %s", resolved, rows, run_id)
    return rows


def _run_has_rows(spark: SparkSession, resolved: SparkTarget, run_id: str) -> bool:
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
    capabilities: SessionCapabilities | None = None,
    attempt: int | None = None,
) -> bool:
    """Make a quarantine/valid table hold no row of ``run_id``, committing only when it held some.

    The write path of a run with nothing to set aside: the common case writes nothing and commits
    nothing (no table is created, no empty version added), while the retry of an attempt that did
    set rows aside still removes them in one Delta commit — the same end state as writing an empty
    frame with :func:`write_quarantine`, minus the commit. Returns True when rows were removed.
    ``capabilities``: what ``spark`` can do, as its maker says (default: as the session tells);
    ``attempt``: the run's attempt, carried by the commit — a newer attempt's commit in the table refuses
    it (store/fencing.py); a retry (attempt ≥ 2) commits it even when there is nothing to remove, so a
    late write of an earlier attempt is refused there too.

    Example::

        removed = clear_run_rows(spark, "/data/dq/quarantine/orders", kind="quarantine", run_id=run_id)
    """
    if kind not in _LAYOUT:
        raise ValueError(f"kind must be one of {', '.join(_LAYOUT)}, got {kind!r}")
    resolved = resolve_target(target, kind, capabilities or SessionCapabilities.of(spark))
    check_run_id(run_id, str(resolved))
    check_attempts(max_attempts)
    resolved = resolve_catalog_once(spark, resolved, run_id)
    if not resolved.exists(spark):
        return False
    _check_layout(table_schema(spark, resolved, run_id), resolved)
    present = not resolved.run_absent(QUARANTINE_RUN_ID, run_id) and _run_has_rows(spark, resolved, run_id)
    if not present and (attempt is None or attempt < 2):
        return False  # no commit: a first attempt has no earlier one to fence off
    token = delta_commits.commit_token(resolved.kind, run_id)

    def remove(_: int) -> None:
        if attempt is not None:
            # One commit carrying the attempt (store/fencing.py): the run's rows replaced by none — on a
            # retry also when there are none, so an orphan of an earlier attempt cannot add them later.
            none = resolved.read(spark).limit(0)
            replace_run_rows(
                none,
                resolved,
                run_column=QUARANTINE_RUN_ID,
                run_id=run_id,
                token=token,
                merge_schema=False,
                attempt=attempt,
            )
        elif resolved.capabilities.remote:  # Spark Connect: DELETE in SQL
            spark_remote.delete_where(spark, resolved.sql_reference, QUARANTINE_RUN_ID, run_id)
        else:
            with commit_lock(resolved):
                resolved.delta_table(spark).delete(F.col(QUARANTINE_RUN_ID) == F.lit(run_id))

    with_retries(remove, resolved, max_attempts)
    if present:
        log.info("%s: removed the rows of an earlier attempt of run %s", resolved, run_id)
    return present


def write_quarantine(
    spark: SparkSession,
    quarantined_df: DataFrame,
    target: str,
    *,
    run_id: str,
    quarantined_at: dt.datetime | str | None = None,
    max_attempts: int = 8,
    partition_by: Sequence[str] | None = None,
    rows_at_most: int | None = None,
    capabilities: SessionCapabilities | None = None,
    attempt: int | None = None,
) -> int:
    """Write the quarantined rows of one run to the Delta quarantine table; returns rows written.

    ``quarantined_df`` is the quarantined side of :func:`split_annotated` (input columns plus
    ``_dq_violations``). The table gets the input's columns, then ``_dq_run_id``,
    ``_dq_violations`` (normalised to the fixed struct of five strings) and
    ``_dq_quarantined_at`` (``quarantined_at``, default now; naive means UTC). Rows of other runs
    stay; the rows of ``run_id`` from an earlier attempt are replaced in the same commit — also
    when this run quarantines nothing. New input columns are added to the table (see the module
    docstring). The count comes from the Delta commit's metrics, not from a second scan.
    ``rows_at_most`` (optional) bounds the rows of ``quarantined_df`` (e.g. the run's row count):
    a few rows (≤ :data:`~airflow_dq_contracts.store.results.driver_commits.DRIVER_ROWS_LIMIT`) of a local
    table are committed by delta-rs from the driver, with the same table and rows as Spark's write.
    ``capabilities``: what ``spark`` can do, as its maker says (default: as the session tells).

    Example::

        valid, quarantined = split_annotated(annotated)
        n = write_quarantine(spark, quarantined, "/data/dq/quarantine/orders", run_id=run_id)
    """
    resolved = resolve_target(target, "quarantine", capabilities or SessionCapabilities.of(spark))
    check_run_id(run_id, str(resolved))
    check_attempts(max_attempts)
    _violations_field(quarantined_df, str(resolved))
    _reject_reserved(quarantined_df, resolved, (QUARANTINE_RUN_ID, QUARANTINE_AT))
    stamp = utcnow() if quarantined_at is None else parse_time(quarantined_at)
    if stamp is None:
        raise ValueError(f"quarantined_at must be a time, got {quarantined_at!r}")
    micros = to_epoch_micros(stamp)
    violations = _normalised_violations(QUARANTINE_VIOLATIONS)
    input_columns = [F.col(quote_identifier(c)) for c in quarantined_df.columns if c != QUARANTINE_VIOLATIONS]
    out = quarantined_df.select(
        *input_columns,
        F.lit(run_id).alias(QUARANTINE_RUN_ID),
        violations.alias(QUARANTINE_VIOLATIONS),
        F.timestamp_micros(F.lit(micros)).alias(QUARANTINE_AT),
    )
    return _write_run_rows(spark, out, resolved, run_id, max_attempts, partition_by, rows_at_most, attempt)


def write_valid(
    spark: SparkSession,
    valid_df: DataFrame,
    target: str,
    *,
    run_id: str,
    max_attempts: int = 8,
    partition_by: Sequence[str] | None = None,
    rows_at_most: int | None = None,
    capabilities: SessionCapabilities | None = None,
    attempt: int | None = None,
) -> int:
    """Write the valid rows of one run to a Delta table; returns rows written.

    The table carries the input's columns plus ``_dq_run_id``: that column is what lets a
    retried run replace the rows its earlier attempt published instead of adding them twice
    (the same one-commit ``replaceWhere`` as the other sinks), then ``_dq_flags``: the flags of
    the valid side of :func:`split_annotated` (a ``_dq_violations`` column of flag-only rows is
    read as the flags; a DataFrame with neither gets NULL flags). ``partition_by`` applies when
    the table is created; ``rows_at_most`` and ``capabilities`` as in :func:`write_quarantine`.

    Example::

        valid, quarantined = split_annotated(annotated)
        n = write_valid(spark, valid, "/data/silver/orders_valid", run_id=run_id,
                        partition_by=["order_date"])
    """
    resolved = resolve_target(target, "valid", capabilities or SessionCapabilities.of(spark))
    check_run_id(run_id, str(resolved))
    check_attempts(max_attempts)
    if QUARANTINE_VIOLATIONS in valid_df.columns:
        valid_df = valid_df.drop(VALID_FLAGS).withColumnRenamed(QUARANTINE_VIOLATIONS, VALID_FLAGS)
    if VALID_FLAGS in valid_df.columns:
        _violations_field(valid_df, str(resolved), VALID_FLAGS)
        flags = _normalised_violations(VALID_FLAGS)
    else:
        flags = F.lit(None).cast(
            T.ArrayType(T.StructType([T.StructField(field, T.StringType(), True) for field in VIOLATION_FIELDS]), True)
        )
    _reject_reserved(valid_df, resolved, (QUARANTINE_RUN_ID,))
    out = valid_df.select(
        *[F.col(quote_identifier(c)) for c in valid_df.columns if c != VALID_FLAGS],
        F.lit(run_id).alias(QUARANTINE_RUN_ID),
        flags.alias(VALID_FLAGS),
    )
    return _write_run_rows(spark, out, resolved, run_id, max_attempts, partition_by, rows_at_most, attempt)
