"""Upsert a run's contract version into the Delta registry table ``dq_contracts`` (Spark side, no Airflow).

One ``MERGE`` per run keyed on (``contract_name``, ``contract_version``, NULL-safe): a new version
is inserted; a known one gets the newest run's fields (owner, SLA, text, tables, decision), while
``first_run_at`` keeps the earliest run. Runs finishing out of order never move ``last_run_*`` back:
an older run only lowers ``first_run_at``. Concurrent runs conflict on the MERGE (or race to create
the table); both are retried like the other sinks (:func:`airflow_dq_contracts.engine.sinks._with_retries`).

Example::

    from airflow_dq_contracts.engine.registry_sink import write_registry
    write_registry(spark, registry_row(contract, contract_text=text, ...), "/wh/dq_contracts")
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from airflow_dq_contracts.registry import REGISTRY_COLUMNS, REGISTRY_KEY

from .sinks import _SPARK_TYPES, SinkError, _check_attempts, _resolve, _Target, _with_retries

__all__ = ["REGISTRY_SCHEMA", "write_registry"]

log = logging.getLogger(__name__)

#: The registry table's Spark schema, from the plain-Python ``REGISTRY_COLUMNS``.
REGISTRY_SCHEMA = T.StructType([T.StructField(name, _SPARK_TYPES[kind], True) for name, kind in REGISTRY_COLUMNS])

# Columns a newer run overwrites; first_run_at is handled apart (it keeps the minimum).
_LATEST = [name for name, _ in REGISTRY_COLUMNS if name not in REGISTRY_KEY and name != "first_run_at"]


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


def write_registry(spark: SparkSession, row: Mapping[str, Any], target: str, *, max_attempts: int = 8) -> None:
    """Upsert one registry row (from :func:`airflow_dq_contracts.registry.registry_row`) into ``target``.

    The table is created on first use. Commit conflicts with concurrent runs are retried up to
    ``max_attempts`` times, then :class:`~airflow_dq_contracts.engine.sinks.SinkError`.

    Example::

        write_registry(spark, row, "/wh/dq_contracts")
    """
    resolved = _resolve(target, "registry")
    _check_attempts(max_attempts)
    source = spark.createDataFrame([tuple(row.get(name) for name, _ in REGISTRY_COLUMNS)], schema=REGISTRY_SCHEMA)
    key = " AND ".join(f"t.{name} <=> s.{name}" for name in REGISTRY_KEY)
    earliest = {"first_run_at": "CASE WHEN t.first_run_at IS NULL OR s.first_run_at < t.first_run_at "
                                "THEN s.first_run_at ELSE t.first_run_at END"}

    def attempt(_: int) -> None:
        _ensure_registry(spark, resolved)
        (
            resolved.delta_table(spark).alias("t")
            .merge(source.alias("s"), key)
            .whenMatchedUpdate(
                condition="t.last_run_at IS NULL OR s.last_run_at >= t.last_run_at",
                set={**{name: f"s.{name}" for name in _LATEST}, **earliest},
            )
            .whenMatchedUpdate(set=earliest)
            .whenNotMatchedInsertAll()
            .execute()
        )

    _with_retries(attempt, resolved, max_attempts)
    log.info("%s: registered %s %s (run %s)", resolved, row.get("contract_name"), row.get("contract_version"),
             row.get("last_run_id"))
