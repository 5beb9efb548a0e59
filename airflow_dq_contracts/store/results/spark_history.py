"""History for baselines: read once per run, from a results table or from records the caller gives.

The evaluator calls :func:`load_history` once, before validating, when the contract has at least
one baseline (``baseline:`` or ``drift``) check. Sources:

* a **path or URI** of the Delta results table — read with delta-rs, no Spark job
  (:func:`airflow_dq_contracts.store.results.history.read_history`), pruned by the ``contract_name`` partition and
  the reference-time window;
* a **catalog table name** — read with Spark, same pruning;
* **records** — :class:`~airflow_dq_contracts.results.CheckResult` objects or result dicts (e.g.
  ``summary["checks"]`` of earlier runs), for users who keep history elsewhere.

Example::

    rows = load_history(spark, "/data/dq/results", "orders", since, until)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from airflow_dq_contracts.contract.baseline import HISTORY_COLUMNS
from airflow_dq_contracts.results import TIME_RESULT_COLUMNS, CheckResult
from airflow_dq_contracts.store.delta import is_path
from airflow_dq_contracts.store.results.history import read_history
from airflow_dq_contracts.store.results.port import HistoryRows, TimeBound
from airflow_dq_contracts.timeutil import from_epoch_micros, parse_time

__all__ = ["HistorySource", "load_history"]

#: What ``evaluate(history=…)`` accepts.
HistorySource = str | Iterable[CheckResult | Mapping[str, Any]] | None


def _within(moment: dt.datetime, since: dt.datetime | None, until: dt.datetime | None) -> bool:
    return (since is None or since <= moment) and (until is None or moment <= until)


def _from_records(
    records: Iterable[CheckResult | Mapping[str, Any]],
    contract_name: str,
    since: dt.datetime | None,
    until: dt.datetime | None,
    columns: Sequence[str],
) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        row = record.to_dict() if isinstance(record, CheckResult) else dict(record)
        if row.get("contract_name") not in (None, contract_name):
            continue
        moment = parse_time(row.get("reference_time"))
        if moment is None or not _within(moment, since, until):
            continue
        rows.append(
            {
                **{name: row.get(name) for name in columns},
                "reference_time": moment,
                "evaluated_at": parse_time(row.get("evaluated_at")),
            }
        )
    return rows


def _from_catalog(
    spark: SparkSession, name: str, contract_name: str, since: TimeBound, until: TimeBound, columns: Sequence[str]
) -> HistoryRows:
    if not spark.catalog.tableExists(name):
        return []
    df = spark.read.table(name)
    if "reference_time" not in df.columns:
        return []
    condition = F.col("contract_name") == F.lit(contract_name)
    if since is not None:
        condition = condition & (F.col("reference_time") >= F.lit(since))
    if until is not None:
        condition = condition & (F.col("reference_time") <= F.lit(until))
    df = df.where(condition)
    # Timestamps as epoch microseconds: collect() would give naive local-zone datetimes.
    times = [c for c in columns if c in TIME_RESULT_COLUMNS]
    selected = [F.unix_micros(F.col(c)).alias(c) if c in times else F.col(c) for c in columns]
    rows = []
    for row in df.select(*selected).collect():
        data = row.asDict()
        for key in times:
            data[key] = from_epoch_micros(data[key])
        rows.append(data)
    return rows


def load_history(
    spark: SparkSession,
    source: HistorySource,
    contract_name: str,
    since: dt.datetime | None,
    until: dt.datetime | None,
    *,
    columns: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The results rows of ``contract_name`` with ``since ≤ reference_time ≤ until``, as dicts.

    A bound of None is open. ``columns`` defaults to the baselines' ``HISTORY_COLUMNS``. A results
    table that does not exist yet is an empty history (the first run). Raises on a table that
    exists but cannot be read; the evaluator turns that into an ``error`` status of the baseline
    checks (fail closed), never a crash.
    """
    wanted = HISTORY_COLUMNS if columns is None else tuple(columns)
    if source is None:
        return []
    if isinstance(source, str):
        if is_path(source):
            return read_history(source, contract_name, since=since, until=until, columns=wanted)
        return _from_catalog(spark, source, contract_name, since, until, wanted)
    return _from_records(source, contract_name, since, until, wanted)
