"""History for baselines: read once per run, from a results table or from records the caller gives.

The evaluator calls :func:`load_history` once, before validating, when the contract has at least
one baseline (``baseline:`` or ``drift``) check. Sources:

* a **path or URI** of the Delta results table — read with delta-rs, no Spark job
  (:func:`airflow_dq_contracts.store.history.read_history`), pruned by the ``contract_name`` partition and
  the reference-time window;
* a **catalog table name** — read with Spark, same pruning;
* **records** — :class:`~airflow_dq_contracts.results.CheckResult` objects or result dicts (e.g.
  ``summary["checks"]`` of earlier runs), for users who keep history elsewhere.

Example::

    rows = load_history(spark, "/data/dq/results", "orders", since, until)
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Mapping, Union

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from airflow_dq_contracts.contract.baseline import HISTORY_COLUMNS
from airflow_dq_contracts.results import CheckResult, parse_time
from airflow_dq_contracts.store.results_store import is_path

#: What ``evaluate(history=…)`` accepts.
HistorySource = Union[str, Iterable[Union[CheckResult, Mapping[str, Any]]], None]


def _from_records(records: Iterable[CheckResult | Mapping[str, Any]], contract_name: str,
                  since: dt.datetime, until: dt.datetime) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        row = record.to_dict() if isinstance(record, CheckResult) else dict(record)
        if row.get("contract_name") not in (None, contract_name):
            continue
        moment = parse_time(row.get("reference_time"))
        if moment is None or not since <= moment <= until:
            continue
        rows.append({**{name: row.get(name) for name in HISTORY_COLUMNS}, "reference_time": moment,
                     "evaluated_at": parse_time(row.get("evaluated_at"))})
    return rows


def _from_catalog(spark: SparkSession, name: str, contract_name: str,
                  since: dt.datetime, until: dt.datetime) -> list[dict[str, Any]]:
    if not spark.catalog.tableExists(name):
        return []
    df = spark.read.table(name)
    if "reference_time" not in df.columns:
        return []
    df = df.where((F.col("contract_name") == F.lit(contract_name))
                  & (F.col("reference_time") >= F.lit(since)) & (F.col("reference_time") <= F.lit(until)))
    # Timestamps as epoch microseconds: collect() would give naive local-zone datetimes.
    columns = [F.unix_micros(F.col(c)).alias(c) if c in ("reference_time", "evaluated_at") else F.col(c)
               for c in HISTORY_COLUMNS]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for row in df.select(*columns).collect():
        data = row.asDict()
        for key in ("reference_time", "evaluated_at"):
            if data[key] is not None:
                data[key] = epoch + dt.timedelta(microseconds=data[key])
        rows.append(data)
    return rows


def load_history(spark: SparkSession, source: HistorySource, contract_name: str,
                 since: dt.datetime, until: dt.datetime) -> list[dict[str, Any]]:
    """The results rows of ``contract_name`` with ``since ≤ reference_time ≤ until``, as dicts.

    A results table that does not exist yet is an empty history (the first run). Raises on a
    table that exists but cannot be read; the evaluator turns that into an ``error`` status of
    the baseline checks (fail closed), never a crash.
    """
    if source is None:
        return []
    if isinstance(source, str):
        if is_path(source):
            from airflow_dq_contracts.store.history import read_history

            return read_history(source, contract_name, since=since, until=until)
        return _from_catalog(spark, source, contract_name, since, until)
    return _from_records(source, contract_name, since, until)
