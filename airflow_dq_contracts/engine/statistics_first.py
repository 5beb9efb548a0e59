"""Statistics-first evaluation: answer from the Delta log what needs no scan.

A Delta table's log holds, per data file, ``numRecords``, per-column ``nullCount``, ``minValues`` and
``maxValues`` (and, for deletion vectors, how many rows each file lost); partition values are exact.
Before the shared scan, :func:`answer` decides per check whether the log answers it **exactly** for
the files in scope, and measures those checks with the metric's own ``measure`` fed with the values
the scan would have produced — so messages, notes and validation are the scan's. The others are
scanned as before; when nothing is left for the scan, it is skipped altogether.

What is answered (a check with its own ``filter:`` is always scanned):

* ``num_rows`` — Σ (``numRecords`` − rows deleted by the file's deletion vector);
* ``missing`` / ``count`` — ``nullCount`` per file; a file with a deletion vector counts only when its
  ``nullCount`` is 0 or all of its rows (then nothing deleted can change the answer);
* ``min`` / ``max`` on integers, decimals and dates — exact; on timestamps the statistics (truncated
  to milliseconds) only *locate* the extreme: one narrow delta-rs query reads that column of the few
  files that may hold it (deletion vectors and column mapping applied), so the value is exact to the
  microsecond. A check whose validator the extreme breaks is scanned (its violating rows are counted
  by the scan). Floats are never answered: NaN is the largest value for Spark but not in every
  writer's statistics;
* ``freshness`` on a date or timestamp column, as ``min``/``max``;
* ``completeness`` on a partition column — the partition values of files with live rows.

When the log cannot answer exactly, the check is scanned: a file without ``numRecords`` or without
statistics for the column (written with ``delta.stats.collect=false``, the column beyond
``delta.dataSkippingNumIndexedCols`` or outside ``delta.dataSkippingStatsColumns``), a file with a
deletion vector for ``min``/``max`` (its bounds are no longer tight), strings (statistics hold 32-char
prefixes; the engine has no string min/max anyway), a run ``filter`` that is not a pure predicate over
partition columns (it is evaluated by Spark on one row per file's partition values, without a job:
a filter naming a data column cannot prune files exactly). Statistics are read by their physical
names under column mapping. Every result row says how it was computed: ``evaluated_from`` is
``statistics`` or ``scan``.

Off switches: the Spark conf ``spark.dqcontracts.statistics.enabled=false`` (``--conf`` of
``dq-contracts run``, the operator's ``spark_conf``), or the contract's ``enforcement: {statistics: off}``.

Example::

    source = StatisticsSource("/lake/orders")
    ev = Evaluator(contract, spark.read.format("delta").load("/lake/orders"), statistics=source)
    result = ev.run()
    {r.check_id: r.evaluated_from for r in result.checks}   # {'num_rows': 'statistics', ...}
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import posixpath
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Check
from airflow_dq_contracts.store.delta import open_table
from airflow_dq_contracts.store.delta_log import add_actions, query_extreme
from airflow_dq_contracts.store.table_facts import epoch_micros
from airflow_dq_contracts.timeutil import EPOCH, from_epoch_micros, to_epoch_micros

from .metrics import (
    CompletenessMetric,
    CountMetric,
    FreshnessMetric,
    MaxMetric,
    MeasureContext,
    Measurement,
    Metric,
    MinMetric,
    MissingMetric,
    NumRowsMetric,
)
from .spark_errors import first_line, quiet_pyspark_errors

log = logging.getLogger(__name__)

STATISTICS_CONF_KEY = "spark.dqcontracts.statistics.enabled"
FROM_STATISTICS = "statistics"
FROM_SCAN = "scan"

_EXACT_EXTREME_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.DateType)
_TIMESTAMP_TYPES = (T.TimestampType, T.TimestampNTZType)
# Delta truncates timestamp statistics to milliseconds: the extreme lies within one of them.
_STATS_SLACK = dt.timedelta(milliseconds=1)


@dataclasses.dataclass(frozen=True)
class StatisticsSource:
    """A Delta table at a path whose log may answer checks (what the runner knows of a Delta input)."""

    location: str
    storage_options: Mapping[str, str] | None = None


def statistics_enabled(spark: SparkSession) -> bool:
    """The switch: ``spark.dqcontracts.statistics.enabled`` (default true)."""
    try:
        return str(spark.conf.get(STATISTICS_CONF_KEY, "true")).strip().lower() not in ("false", "0", "off", "no")
    except Exception:  # noqa: BLE001 - a session whose conf cannot be read: the default
        return True


@dataclasses.dataclass
class Outcome:
    """What the log answered: measurements by candidate index, the run's row count (None: unknown)."""

    answers: dict[int, Measurement] = dataclasses.field(default_factory=dict)
    row_count: int | None = None
    detail: str = ""


class _Snapshot:
    """The in-scope files of one version of the table, as columns of plain Python values."""

    def __init__(self, table: Any, actions: Any, physical: dict[str, str], partitions: list[str]) -> None:
        self.table = table
        self.actions = actions
        self.physical = physical
        self.partitions = partitions
        self.count = actions.num_rows
        self.records: list[int | None] = self.values("num_records")
        self.deleted: list[int] = [0] * self.count
        self.partition_predicate: str | None = None
        self.pruned = False

    def values(self, name: str) -> list[Any]:
        if name not in self.actions.column_names:
            return [None] * self.count
        values: list[Any] = self.actions.column(name).to_pylist()
        return values

    def stat(self, kind: str, column: str) -> list[Any]:
        """Per file: a statistic of ``column`` (``kind``: min, max, null_count, partition); times as epoch micros."""
        name = f"partition.{column}" if column in self.partitions else f"{kind}.{self.physical.get(column, column)}"
        if name in self.actions.column_names and pa.types.is_timestamp(self.actions.column(name).type):
            return epoch_micros(self.actions.column(name))  # no pandas: to_pylist of aware times imports it
        return self.values(name)

    def live(self) -> list[int] | None:
        """Rows per file after deletion vectors; None when a file has no ``numRecords``."""
        known = [r for r in self.records if r is not None]
        if len(known) != self.count:
            return None
        return [int(r) - d for r, d in zip(known, self.deleted)]


def _physical_names(schema_json: str) -> dict[str, str]:
    names = {}
    for field in json.loads(schema_json)["fields"]:
        names[field["name"]] = (field.get("metadata") or {}).get("delta.columnMapping.physicalName", field["name"])
    return names


def _deleted_rows(table: Any) -> dict[str, int]:
    """File name → rows its deletion vector removes."""
    out: dict[str, int] = {}
    data = pa.RecordBatchReader.from_stream(table.deletion_vectors()).read_all()
    for path, keep in zip(data.column("filepath").to_pylist(), data.column("selection_vector").to_pylist()):
        out[posixpath.basename(unquote(path))] = sum(1 for flag in keep if not flag)
    return out


def _datafusion_literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE '{value.isoformat()}'"
    return None


def _prune(spark: SparkSession, snapshot: _Snapshot, schema: T.StructType, run_filter: str) -> str | None:
    """Keep the files the run filter selects (evaluated by Spark on partition values); a reason if it cannot."""
    if not snapshot.partitions:
        return "the run filter is not a partition predicate (the table is not partitioned)"
    fields = {f.name: f for f in schema.fields}
    if any(p not in fields for p in snapshot.partitions):
        return "a partition column is not in the data's schema"
    rows = list(zip(*(snapshot.values(f"partition.{p}") for p in snapshot.partitions))) or []
    frame = spark.createDataFrame(
        [(index, *row) for index, row in enumerate(rows)],
        T.StructType([T.StructField("_dq_file", T.IntegerType())] + [fields[p] for p in snapshot.partitions]),
    )
    try:
        with quiet_pyspark_errors():
            kept = {r[0] for r in frame.where(F.expr(run_filter)).select("_dq_file").collect()}
    except Exception as exc:  # noqa: BLE001 - the filter names a data column: no exact pruning from the log
        return f"the run filter is not a pure partition predicate ({first_line(exc)})"
    clauses = set()
    for index in kept:
        terms = []
        for name, value in zip(snapshot.partitions, rows[index]):
            quoted = '"' + name.replace('"', '""') + '"'
            literal = _datafusion_literal(value)
            terms.append(f"{quoted} IS NULL" if value is None else f"{quoted} = {literal}" if literal else "")
        clauses.add("(" + " AND ".join(terms) + ")" if all(terms) else "")
    snapshot.pruned = True
    snapshot.partition_predicate = None if "" in clauses else (" OR ".join(sorted(clauses)) or "false")
    mask = pa.array([index in kept for index in range(snapshot.count)], pa.bool_())
    snapshot.actions = snapshot.actions.filter(mask)
    snapshot.count = snapshot.actions.num_rows
    snapshot.records = snapshot.values("num_records")
    return None


def _load(spark: SparkSession, source: StatisticsSource, schema: T.StructType, run_filter: str | None) -> Any:
    """The snapshot of the in-scope files, or the reason the log cannot be used (a string)."""
    table = open_table(source.location, storage_options=source.storage_options)
    snapshot = _Snapshot(
        table,
        add_actions(table),
        _physical_names(table.schema().to_json()),
        list(table.metadata().partition_columns),
    )
    if run_filter:
        problem = _prune(spark, snapshot, schema, run_filter)
        if problem:
            return problem
    if "deletionVectors" in (table.protocol().reader_features or []):
        deleted = _deleted_rows(table)
        names = [posixpath.basename(unquote(p)) for p in snapshot.values("path")]
        snapshot.deleted = [deleted.get(name, 0) for name in names]
    return snapshot


# --------------------------------------------------------------------------------------- answers


def _nulls(snapshot: _Snapshot, column: str, live: list[int]) -> int | None:
    """Live NULLs of ``column`` in scope; None when a file's statistics cannot say exactly."""
    if column in snapshot.partitions:
        return sum(n for n, value in zip(live, snapshot.stat("partition", column)) if value is None)
    total = 0
    for records, nulls, deleted, alive in zip(
        snapshot.records, snapshot.stat("null_count", column), snapshot.deleted, live
    ):
        if nulls is None or records is None:
            return None
        if deleted and nulls not in (0, records):
            return None  # some deleted rows may have been NULL
        total += alive if nulls == records else nulls
    return total


def _extreme(snapshot: _Snapshot, column: str, kind: str, live: list[int] | None) -> tuple[Any, bool] | None:
    """(max or min over the in-scope files, whether any value exists); None when the log cannot say exactly."""
    values = snapshot.stat(kind, column)
    nulls = snapshot.stat("null_count", column)
    best: Any = None
    for index, value in enumerate(values):
        if live is not None and live[index] == 0:
            continue  # every row of the file is deleted
        if column not in snapshot.partitions:
            if snapshot.deleted[index]:
                return None  # bounds are wide once rows are deleted
            if value is None:
                records = snapshot.records[index]
                if records is None or nulls[index] != records:
                    return None  # no statistics for this column in this file
                continue  # an all-NULL file
        elif value is None:
            continue
        if best is None or (value > best if kind == "max" else value < best):
            best = value
    return best, best is not None


def _micros(value: Any) -> int:
    if isinstance(value, int):
        return value  # a timestamp statistic, already epoch micros
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return (value - EPOCH.date()).days * 86_400_000_000
    raise TypeError(f"not a time: {value!r}")


def _exact_time(snapshot: _Snapshot, column: str, data_type: T.DataType, kind: str, approx: int) -> int | None:
    """A timestamp column's exact extreme, located by the (millisecond) statistics, read by delta-rs."""
    if snapshot.pruned and snapshot.partition_predicate is None:
        return None  # the run's partitions cannot be written as a delta-rs predicate
    moment = from_epoch_micros(approx)
    assert moment is not None
    bound = moment - _STATS_SLACK if kind == "max" else moment + _STATS_SLACK
    delta_type = "timestamp_ntz" if isinstance(data_type, T.TimestampNTZType) else "timestamp"
    exact = query_extreme(snapshot.table, column, kind, delta_type, bound, snapshot.partition_predicate)
    return None if exact is None else to_epoch_micros(exact)


def _limit(check: Check, side: str) -> float | None:
    return check.validator.lower_limit if side == "lower" else check.validator.upper_limit


def _breaks(check: Check, side: str, value: Any) -> bool:
    limit = _limit(check, side)
    if limit is None:
        return False
    number = Decimal(value) if isinstance(value, int) else value
    return bool(number < limit if side == "lower" else number > limit)


def _answer_one(
    snapshot: _Snapshot, metric: Metric, live: list[int] | None, reference: dt.datetime
) -> Measurement | None:
    """The metric measured from the log, or None (scan it)."""
    rows = None if live is None else sum(live)
    ctx = MeasureContext(rows or 0, reference)
    if isinstance(metric, NumRowsMetric):
        return None if rows is None else metric.measure([], [], ctx)
    if isinstance(metric, (MissingMetric, CountMetric)):
        if live is None or metric.field is None:
            return None
        nulls = _nulls(snapshot, metric.field.name, live)
        if nulls is None:
            return None
        return metric.measure([nulls if isinstance(metric, MissingMetric) else sum(live) - nulls], [], ctx)
    field = metric.field
    if field is None:
        return None
    data_type = field.dataType
    timestamp = isinstance(data_type, _TIMESTAMP_TYPES)
    if isinstance(metric, (MinMetric, MaxMetric, FreshnessMetric)):
        if not isinstance(data_type, _EXACT_EXTREME_TYPES + _TIMESTAMP_TYPES):
            return None
        if isinstance(metric, FreshnessMetric):
            kind = "max" if metric.check.params.get("aggregation", "max") == "max" else "min"
        else:
            kind = metric.check.type
        found = _extreme(snapshot, field.name, kind, live)
        if found is None or not found[1]:
            return None
        value = found[0]
        micros: int | None = None
        if timestamp and field.name not in snapshot.partitions:
            micros = _exact_time(snapshot, field.name, data_type, kind, value)
            if micros is None:
                return None
        elif isinstance(data_type, (T.DateType, *_TIMESTAMP_TYPES)):
            micros = _micros(value)
        if isinstance(metric, FreshnessMetric):
            return metric.measure([micros, 1, 1], [], ctx)
        number = value if micros is None else micros / 1_000_000
        scan: list[Any] = [number, 1]
        side = "lower" if kind == "min" else "upper"
        if _limit(metric.check, side) is not None:  # the metric has a per-row predicate (Metric.beyond_limit)
            if _breaks(metric.check, side, number):
                return None  # it fails: the scan counts the violating rows
            scan.append(0)
        return metric.measure(scan, [], ctx)
    if isinstance(metric, CompletenessMetric):
        return _completeness(snapshot, metric, live, ctx)
    return None


def _completeness(
    snapshot: _Snapshot, metric: CompletenessMetric, live: list[int] | None, ctx: MeasureContext
) -> Measurement | None:
    field = metric.field
    if field is None or live is None or field.name not in snapshot.partitions:
        return None
    unit_days = metric.check.params["granularity"] != "hourly"
    periods = set()
    for value, alive in zip(snapshot.stat("partition", field.name), live):
        if value is None or alive == 0:
            continue
        if isinstance(field.dataType, T.StringType):
            periods.add(value)
        elif isinstance(field.dataType, T.DateType):
            days = (value - EPOCH.date()).days
            periods.add(days if unit_days else days * 24)
        elif isinstance(field.dataType, _TIMESTAMP_TYPES):
            unit = 86_400_000_000 if unit_days else 3_600_000_000
            periods.add(_micros(value) // unit)
        else:
            return None
    return metric.measure([sorted(periods)], [], ctx)


_ANSWERABLE = (NumRowsMetric, MissingMetric, CountMetric, MinMetric, MaxMetric, FreshnessMetric, CompletenessMetric)


def answer(
    spark: SparkSession,
    source: StatisticsSource | None,
    schema: T.StructType,
    run_filter: str | None,
    candidates: Sequence[tuple[Check, Metric, bool]],
    reference_time: dt.datetime,
    progress: Callable[[str], None] | None = None,
) -> Outcome:
    """Measure from the log what it answers exactly; ``candidates`` are (check, metric, runnable) in plan order.

    Never raises: a log that cannot be read (or any surprise) means every check is scanned.
    """
    outcome = Outcome()
    if source is None or not statistics_enabled(spark):
        return outcome
    wanted = [
        (index, metric)
        for index, (check, metric, runnable) in enumerate(candidates)
        if runnable and not check.filter and isinstance(metric, _ANSWERABLE)
    ]
    began = time.perf_counter()
    try:
        snapshot = _load(spark, source, schema, run_filter)
        if isinstance(snapshot, str):
            outcome.detail = snapshot
            return outcome
        live = snapshot.live()
        outcome.row_count = None if live is None else sum(live)
        for index, metric in wanted:
            try:
                measured = _answer_one(snapshot, metric, live, reference_time)
            except Exception as exc:  # noqa: BLE001 - one check the log cannot answer: it is scanned
                log.info("statistics cannot answer %s: %s", metric.check.check_id, first_line(exc))
                measured = None
            if measured is not None:
                outcome.answers[index] = measured
        outcome.detail = (
            f"{len(outcome.answers)} of {len(candidates)} checks answered from the Delta log "
            f"({snapshot.count} files in scope, v{snapshot.table.version()})"
        )
    except Exception as exc:  # noqa: BLE001 - an unreadable log, no deltalake here: scan everything
        outcome = Outcome(detail=f"Delta log not used: {first_line(exc)}")
    if progress is not None:
        progress(f"statistics: {outcome.detail} in {time.perf_counter() - began:.2f} s")
    return outcome
