"""Upsert a run's contract version into the Delta registry table ``dq_contracts`` (Spark side, no Airflow).

One upsert per run keyed on (``contract_name``, ``contract_version``, NULL-safe): a new version is
inserted; a known one gets the newest run's fields (owner, SLA, text, tables, decision), while
``first_run_at`` keeps the earliest run. Runs finishing out of order never move ``last_run_*`` back:
an older run only lowers ``first_run_at``.

The upsert reads the version's one row, merges in Python (:func:`merge_registry_rows`) and writes
it back in one commit that replaces that key's rows (``replaceWhere``): a handful of small Spark
jobs, where a ``MERGE`` plans a join and a rewrite and cost several seconds of every run's fixed
cost. Two runs of the same version at once conflict on that commit (each read the key's rows
another one replaced); the loser is retried from the read, like the other sinks
(:func:`airflow_dq_contracts.store.spark_tables.with_retries`), as is a race to create the table.

A local registry of the exact schema is upserted by delta-rs on the driver instead, without a
Spark job (:func:`airflow_dq_contracts.store.results.driver_commits.upsert_registry`), a missing local one
created by delta-rs as Spark creates it; where Spark writes,
delta-rs still reads the key when it can.

Example::

    from airflow_dq_contracts.store.results.spark_registry import write_registry
    write_registry(spark, registry_row(contract, contract_text=text, ...), "/wh/dq_contracts")
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.store.results import driver_commits as delta_commits
from airflow_dq_contracts.store.results.driver_commits import merge_registry_rows
from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS, REGISTRY_KEY, REGISTRY_TIME_COLUMNS
from airflow_dq_contracts.store.spark_remote import SessionCapabilities
from airflow_dq_contracts.store.spark_tables import (
    SPARK_TYPES,
    SinkError,
    SparkTarget,
    append_rows,
    check_attempts,
    replace_where,
    resolve_catalog_once,
    resolve_target,
    spark_sql_string,
    table_schema,
    with_retries,
)
from airflow_dq_contracts.timeutil import EPOCH, from_epoch_micros, to_utc

__all__ = ["REGISTRY_SCHEMA", "merge_registry_rows", "read_registry", "write_registry"]

log = logging.getLogger(__name__)

#: The registry table's Spark schema, from the plain-Python ``REGISTRY_COLUMNS``.
REGISTRY_SCHEMA = T.StructType([T.StructField(name, SPARK_TYPES[kind], True) for name, kind in REGISTRY_COLUMNS])


def _check_registry(spark: SparkSession, target: SparkTarget, run_id: str | None = None) -> None:
    present = set(table_schema(spark, target, run_id).names)
    missing = [name for name, _ in REGISTRY_COLUMNS if name not in present]
    if missing:
        raise SinkError(
            f"{target} exists but is not a contract registry (missing {', '.join(missing)})", target=target.text
        )


def _ensure_registry(spark: SparkSession, target: SparkTarget, run_id: str | None = None) -> None:
    if target.exists(spark):
        _check_registry(spark, target, run_id)
        return
    # The sinks' safe first creation (an empty version 0; a writer that loses the race waits and looks again).
    target.create_if_missing(spark, REGISTRY_SCHEMA, comment=delta_commits.REGISTRY_DESCRIPTION)


def _key_predicate(row: Mapping[str, Any]) -> str:
    """SQL matching ``row``'s key NULL-safely, e.g. ``contract_name <=> 'orders' AND contract_version <=> NULL``."""
    return " AND ".join(
        f"{name} <=> " + ("NULL" if row.get(name) is None else spark_sql_string(str(row[name])))
        for name in REGISTRY_KEY
    )


def _read_key(spark: SparkSession, target: SparkTarget, predicate: str) -> list[dict[str, Any]]:
    """The registry rows matching ``predicate``, their times as aware UTC datetimes."""
    columns = [
        F.unix_micros(F.col(name)).alias(name) if name in REGISTRY_TIME_COLUMNS else F.col(name)
        for name, _ in REGISTRY_COLUMNS
    ]
    rows = []
    for found in target.read(spark).where(predicate).select(*columns).collect():
        row = found.asDict()
        rows.append({**row, **{name: from_epoch_micros(row[name]) for name in REGISTRY_TIME_COLUMNS}})
    return rows


def write_registry(
    spark: SparkSession,
    row: Mapping[str, Any],
    target: str,
    *,
    max_attempts: int = 8,
    capabilities: SessionCapabilities | None = None,
) -> None:
    """Upsert one registry row (from :func:`airflow_dq_contracts.store.results.registry.registry_row`) into ``target``.

    The table is created on first use. Commit conflicts with concurrent runs are retried up to
    ``max_attempts`` times, then :class:`~airflow_dq_contracts.store.spark_tables.SinkError`.
    ``capabilities``: what ``spark`` can do, as its maker says (default: as the session tells).

    Example::

        write_registry(spark, row, "/wh/dq_contracts")
    """
    resolved = resolve_target(target, "registry", capabilities or SessionCapabilities.of(spark))
    check_attempts(max_attempts)
    predicate = _key_predicate(row)
    # Compared with the stored (UTC) times: a naive time is UTC, as everywhere in the package.
    row = {**row, **{name: to_utc(row[name]) for name in REGISTRY_TIME_COLUMNS if row.get(name) is not None}}
    # A catalog name: probed once per run (the run's results write reuses it), written as its
    # location where this process sees it.
    run_id = row.get("last_run_id")
    if isinstance(run_id, str) and run_id:
        resolved = resolve_catalog_once(spark, resolved, run_id)
    else:
        run_id = None
    # delta-rs from the driver: on Spark Connect only where the client sees the server's paths.
    driver_path = resolved.path if resolved.capabilities.driver_sees_outputs else None
    if driver_path is not None and delta_commits.upsert_registry(driver_path, row):
        log.info(
            "%s: registered %s %s (run %s, delta-rs)",
            resolved,
            row.get("contract_name"),
            row.get("contract_version"),
            row.get("last_run_id"),
        )
        return
    if resolved.path is not None and delta_commits.on_object_store(resolved.path):
        raise SinkError(
            f"{resolved}: delta-rs could not upsert the registry row, and on object storage Spark's Delta never "
            "writes it (its S3 log store is unsafe across drivers); see the job's log for delta-rs's reason",
            target=target,
        )

    def attempt(_: int) -> None:
        _ensure_registry(spark, resolved, run_id)
        found = delta_commits.read_registry_key(driver_path, row)
        certain_absent = found == []  # delta-rs saw no row of the key: nothing to replace
        if found is None:
            found = _read_key(spark, resolved, predicate)
        # One row per key; should a table hold more (written by hand), they are folded into one.
        merged = delta_commits.fold_registry_rows(found, row)
        frame = spark.createDataFrame([tuple(merged.get(name) for name, _ in REGISTRY_COLUMNS)], schema=REGISTRY_SCHEMA)
        if certain_absent:
            # A contract version's first run: a plain append (should a concurrent first run append
            # the same key, readers take the newer row and the next upsert folds the two into one).
            append_rows(frame, resolved, token=None, merge_schema=False)
        else:
            replace_where(frame, resolved, predicate)

    with_retries(attempt, resolved, max_attempts)
    log.info(
        "%s: registered %s %s (run %s)",
        resolved,
        row.get("contract_name"),
        row.get("contract_version"),
        row.get("last_run_id"),
    )


def read_registry(
    spark: SparkSession,
    target: str,
    contract_name: str,
    contract_version: str | None = None,
    capabilities: SessionCapabilities | None = None,
) -> dict[str, Any] | None:
    """A contract's registry row read by Spark (one version, or the most recently run one); None if absent.

    The Spark twin of :func:`airflow_dq_contracts.store.results.registry.read_registry`, for tables delta-rs
    cannot reach from here (catalog names, object stores with the session's credentials). A
    missing table is None too.

    Example::

        row = read_registry(spark, "dq.dq_contracts", "orders")
    """
    resolved = resolve_target(target, "registry", capabilities or SessionCapabilities.of(spark))
    if not resolved.exists(spark):
        return None
    _check_registry(spark, resolved)
    predicate = f"contract_name = {spark_sql_string(contract_name)}"
    if contract_version is not None:
        predicate += f" AND contract_version = {spark_sql_string(contract_version)}"
    rows = _read_key(spark, resolved, predicate)
    if not rows:
        return None
    return max(rows, key=lambda r: r.get("last_run_at") or EPOCH)
