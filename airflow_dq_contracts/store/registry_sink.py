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
(:func:`airflow_dq_contracts.store.sinks._with_retries`), as is a race to create the table.

Example::

    from airflow_dq_contracts.store.registry_sink import write_registry
    write_registry(spark, registry_row(contract, contract_text=text, ...), "/wh/dq_contracts")
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.store.registry import REGISTRY_COLUMNS, REGISTRY_KEY, REGISTRY_TIME_COLUMNS
from airflow_dq_contracts.results import to_utc

from .sinks import (
    _EPOCH,
    _SPARK_TYPES,
    SinkError,
    _check_attempts,
    _replace_where,
    _resolve,
    _Target,
    _append,
    _with_retries,
    arrow_schema,
    driver_table,
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


def _read_key_on_driver(target: _Target, row: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The registry rows of ``row``'s key read by delta-rs on the driver, or None when it cannot.

    The same rows as :func:`_read_key` without a Spark job (which costs a small run seconds: the
    log read, the state reconstruction and a file scan, cold); None — a catalog name, no
    ``deltalake`` here, a table delta-rs cannot read — and Spark reads them.
    """
    if target.path is None:
        return None
    try:
        import pyarrow as pa
        from deltalake import DeltaTable as RustDeltaTable

        from airflow_dq_contracts.store.results_store import plain_rows

        table = RustDeltaTable(target.path)
        names = [name for name, _ in REGISTRY_COLUMNS]
        if not set(names) <= set(table.schema().to_arrow().names):
            return None
        return plain_rows(pa.RecordBatchReader.from_stream(
            table.scan(columns=names, predicate=_driver_key_predicate(row))).read_all())
    except Exception:  # noqa: BLE001 - any doubt: Spark reads the key
        return None


def _fold(found: list[dict[str, Any]], row: Mapping[str, Any]) -> dict[str, Any]:
    """The key's stored rows (normally one) folded, then ``row`` upserted onto them."""
    existing: dict[str, Any] | None = None
    for other in sorted(found, key=lambda r: r["last_run_at"] or _EPOCH):
        existing = merge_registry_rows(existing, other)
    return merge_registry_rows(existing, row)


def _upsert_on_driver(target: _Target, row: Mapping[str, Any], attempts: int = 5) -> bool:
    """The upsert committed by delta-rs on the driver (milliseconds, no Spark job); False: Spark writes it.

    Only for a table :func:`~airflow_dq_contracts.store.sinks.driver_table` allows (local, the exact
    registry schema). One commit: an append for a new key, else a predicate overwrite of the key's
    rows; a concurrent commit makes delta-rs refuse it, and the upsert is read and merged again.
    """
    table = driver_table(target, REGISTRY_COLUMNS)
    if table is None:
        return False
    try:
        import pyarrow as pa
        from deltalake import write_deltalake
        from deltalake.exceptions import CommitFailedError

        names = [name for name, _ in REGISTRY_COLUMNS]
        for _ in range(attempts):
            found = _read_key_on_driver(target, row)
            if found is None:
                return False
            merged = _fold(found, row)
            data = pa.Table.from_pylist([{name: merged.get(name) for name in names}],
                                        schema=arrow_schema(REGISTRY_COLUMNS))
            try:
                if found:
                    write_deltalake(table, data, mode="overwrite", predicate=_driver_key_predicate(row))
                else:
                    write_deltalake(table, data, mode="append")
                return True
            except CommitFailedError:
                table.update_incremental()
        return False
    except Exception as exc:  # noqa: BLE001 - Spark upserts instead (the merge is idempotent)
        log.debug("%s: delta-rs upsert failed (%s); Spark writes", target, str(exc).splitlines()[0][:200])
        return False


def _driver_key_predicate(row: Mapping[str, Any]) -> str:
    """``row``'s key as a delta-rs (DataFusion) predicate, NULL-safe."""
    from airflow_dq_contracts.store.results_store import sql_string

    return " AND ".join(f"{key} IS NULL" if row.get(key) is None else f"{key} = {sql_string(str(row[key]))}"
                        for key in REGISTRY_KEY)


def write_registry(spark: SparkSession, row: Mapping[str, Any], target: str, *, max_attempts: int = 8) -> None:
    """Upsert one registry row (from :func:`airflow_dq_contracts.store.registry.registry_row`) into ``target``.

    The table is created on first use. Commit conflicts with concurrent runs are retried up to
    ``max_attempts`` times, then :class:`~airflow_dq_contracts.store.sinks.SinkError`.

    Example::

        write_registry(spark, row, "/wh/dq_contracts")
    """
    resolved = _resolve(target, "registry")
    _check_attempts(max_attempts)
    predicate = _key_predicate(row)
    # Compared with the stored (UTC) times: a naive time is UTC, as everywhere in the package.
    row = {**row, **{name: to_utc(row[name]) for name in REGISTRY_TIME_COLUMNS if row.get(name) is not None}}
    if _upsert_on_driver(resolved, row):
        log.info("%s: registered %s %s (run %s, delta-rs)", resolved, row.get("contract_name"),
                 row.get("contract_version"), row.get("last_run_id"))
        return

    def attempt(_: int) -> None:
        _ensure_registry(spark, resolved)
        found = _read_key_on_driver(resolved, row)
        certain_absent = found == []  # delta-rs saw no row of the key: nothing to replace
        if found is None:
            found = _read_key(spark, resolved, predicate)
        # One row per key; should a table hold more (written by hand), they are folded into one.
        merged = _fold(found, row)
        frame = spark.createDataFrame([tuple(merged.get(name) for name, _ in REGISTRY_COLUMNS)],
                                      schema=REGISTRY_SCHEMA)
        if certain_absent:
            # A contract version's first run: a plain append (should a concurrent first run append
            # the same key, readers take the newer row and the next upsert folds the two into one).
            _append(frame, resolved, token=None, merge_schema=False)
        else:
            _replace_where(frame, resolved, predicate)

    _with_retries(attempt, resolved, max_attempts)
    log.info("%s: registered %s %s (run %s)", resolved, row.get("contract_name"), row.get("contract_version"),
             row.get("last_run_id"))
