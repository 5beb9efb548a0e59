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
(:func:`airflow_dq_contracts.engine.sinks._with_retries`), as is a race to create the table.

Example::

    from airflow_dq_contracts.engine.registry_sink import write_registry
    write_registry(spark, registry_row(contract, contract_text=text, ...), "/wh/dq_contracts")
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.registry import REGISTRY_COLUMNS, REGISTRY_KEY, REGISTRY_TIME_COLUMNS
from airflow_dq_contracts.results import to_utc

from .sinks import (
    _EPOCH,
    _SPARK_TYPES,
    SinkError,
    _check_attempts,
    _replace_where,
    _resolve,
    _Target,
    _with_retries,
    spark_sql_string,
    utc_from_micros,
)

__all__ = ["REGISTRY_SCHEMA", "merge_registry_rows", "write_registry"]

log = logging.getLogger(__name__)

#: The registry table's Spark schema, from the plain-Python ``REGISTRY_COLUMNS``.
REGISTRY_SCHEMA = T.StructType([T.StructField(name, _SPARK_TYPES[kind], True) for name, kind in REGISTRY_COLUMNS])


def _ensure_registry(spark: SparkSession, target: _Target) -> None:
    if target.exists(spark):
        present = set(target.read(spark).columns)
        missing = [name for name, _ in REGISTRY_COLUMNS if name not in present]
        if missing:
            raise SinkError(f"{target} exists but is not a contract registry (missing {', '.join(missing)})",
                            target=target.text)
        return
    # The sinks' safe first creation (an empty version 0; a writer that loses the race waits and looks again).
    target.create_if_missing(spark, REGISTRY_SCHEMA,
                             comment="airflow-dq-contracts contract registry: one row per contract version")


def merge_registry_rows(existing: Mapping[str, Any] | None, incoming: Mapping[str, Any]) -> dict[str, Any]:
    """The registry row after ``incoming`` (one run's row) is upserted onto ``existing`` (or None).

    The newer run (by ``last_run_at``; a row without one counts as older) supplies every field;
    ``first_run_at`` is the earliest of the two whatever their order.

    >>> import datetime as dt
    >>> day = lambda d: dt.datetime(2024, 5, d)
    >>> old = {"owner": "a", "first_run_at": day(2), "last_run_at": day(2), "last_run_id": "r2"}
    >>> late = merge_registry_rows(old, {"owner": "b", "first_run_at": day(3), "last_run_at": day(3), "last_run_id": "r3"})
    >>> late["owner"], late["first_run_at"].day, late["last_run_id"]
    ('b', 2, 'r3')
    >>> early = merge_registry_rows(old, {"owner": "c", "first_run_at": day(1), "last_run_at": day(1), "last_run_id": "r1"})
    >>> early["owner"], early["first_run_at"].day, early["last_run_id"]
    ('a', 1, 'r2')
    """
    if existing is None:
        return dict(incoming)
    newer = existing.get("last_run_at") is None or (
        incoming.get("last_run_at") is not None and incoming["last_run_at"] >= existing["last_run_at"])
    merged = {name: (incoming if newer else existing).get(name) for name, _ in REGISTRY_COLUMNS}
    firsts = [t for t in (existing.get("first_run_at"), incoming.get("first_run_at")) if t is not None]
    merged["first_run_at"] = min(firsts) if firsts else None
    return merged


def _key_predicate(row: Mapping[str, Any]) -> str:
    """SQL matching ``row``'s key NULL-safely, e.g. ``contract_name <=> 'orders' AND contract_version <=> NULL``."""
    return " AND ".join(
        f"{name} <=> " + ("NULL" if row.get(name) is None else spark_sql_string(str(row[name])))
        for name in REGISTRY_KEY
    )


def _read_key(spark: SparkSession, target: _Target, predicate: str) -> list[dict[str, Any]]:
    """The registry rows matching ``predicate``, their times as aware UTC datetimes."""
    columns = [F.unix_micros(F.col(name)).alias(name) if name in REGISTRY_TIME_COLUMNS else F.col(name)
               for name, _ in REGISTRY_COLUMNS]
    rows = []
    for found in target.read(spark).where(predicate).select(*columns).collect():
        row = found.asDict()
        rows.append({**row, **{name: utc_from_micros(row[name]) for name in REGISTRY_TIME_COLUMNS}})
    return rows


def write_registry(spark: SparkSession, row: Mapping[str, Any], target: str, *, max_attempts: int = 8) -> None:
    """Upsert one registry row (from :func:`airflow_dq_contracts.registry.registry_row`) into ``target``.

    The table is created on first use. Commit conflicts with concurrent runs are retried up to
    ``max_attempts`` times, then :class:`~airflow_dq_contracts.engine.sinks.SinkError`.

    Example::

        write_registry(spark, row, "/wh/dq_contracts")
    """
    resolved = _resolve(target, "registry")
    _check_attempts(max_attempts)
    predicate = _key_predicate(row)
    # Compared with the stored (UTC) times: a naive time is UTC, as everywhere in the package.
    row = {**row, **{name: to_utc(row[name]) for name in REGISTRY_TIME_COLUMNS if row.get(name) is not None}}

    def attempt(_: int) -> None:
        _ensure_registry(spark, resolved)
        found = _read_key(spark, resolved, predicate)
        # One row per key; should a table hold more (written by hand), they are folded into one.
        existing: dict[str, Any] | None = None
        for other in sorted(found, key=lambda r: r["last_run_at"] or _EPOCH):
            existing = merge_registry_rows(existing, other)
        merged = merge_registry_rows(existing, row)
        frame = spark.createDataFrame([tuple(merged.get(name) for name, _ in REGISTRY_COLUMNS)],
                                      schema=REGISTRY_SCHEMA)
        _replace_where(frame, resolved, predicate)

    _with_retries(attempt, resolved, max_attempts)
    log.info("%s: registered %s %s (run %s)", resolved, row.get("contract_name"), row.get("contract_version"),
             row.get("last_run_id"))
