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
  by the scan);
* ``min`` / ``max`` on floats and doubles — where NaN can be ruled out. Spark orders NaN above every
  number (so ``max`` is NaN as soon as one row holds NaN), and Delta's Spark writer collects its
  statistics with Spark's own ``min``/``max``: a file holding NaN has ``maxValues`` NaN (and ``minValues``
  NaN when every non-NULL value is NaN); ``nullCount`` does not count NaN, so it never helps. Other
  writers (delta-rs) leave NaN (and ±Infinity) out of the statistics, so a file's numbers cannot rule a
  NaN out. The log is trusted for floats when every commit of the table's history, from version 0,
  that may add files was made by Delta's Spark writer (``engineInfo`` ``Apache-Spark/… Delta-Lake/…`` or
  Databricks'); then the extreme is the statistics' (files with deletion vectors or without statistics
  read narrowly as above; DataFusion orders NaN as Spark does). A NaN answer, or a history that cannot
  prove its writers (another writer, a log cleaned up before a checkpoint), is scanned;
* ``freshness`` on a date or timestamp column, as ``min``/``max``;
* ``completeness`` on a partition column — the partition values of files with live rows.

Where only **some** files' statistics cannot say — a file without ``numRecords`` or without statistics
for the column (written with ``delta.stats.collect=false``), a file with a deletion vector for
``min``/``max`` (its bounds are no longer tight) or for a NULL count — the metric is mergeable: the log
answers for the other files and one narrow delta-rs query reads the column of those files only (e.g.
``num_rows`` = Σ ``numRecords`` + a count of the others; a ``min`` bounded by the other files' minimum,
so files that cannot hold it are skipped). That read is allowed while those files are at most half of
the in-scope bytes and at most ``spark.dqcontracts.statistics.residualBytes`` (default 1 GiB); the
result is still ``statistics``.

When the log cannot answer exactly, the check is scanned: most of the files without usable statistics
(as above; or the column beyond ``delta.dataSkippingNumIndexedCols`` or outside
``delta.dataSkippingStatsColumns`` — every file), strings (statistics hold 32-char
prefixes; the engine has no string min/max anyway), a run ``filter`` that is not a pure predicate over
partition columns (it is evaluated by Spark on one row per file's partition values, without a job:
a filter naming a data column cannot prune files exactly). Statistics are read by their physical
names under column mapping. Every result row says how it was computed: ``evaluated_from`` is
``statistics`` or ``scan``.

A table delta-rs cannot scan (Spark 4's type widening, variant columns…: ``DELTA_RS_SCANS``) is answered
from its log read directly (:mod:`airflow_dq_contracts.store.tablemeta.log_reader`): the same rules, the
narrow reads done by pyarrow over the few files' column with their deletion vectors applied.

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
import math
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
from airflow_dq_contracts.contract.sqltext import datafusion_literal
from airflow_dq_contracts.store.tablemeta import (
    DELTA_RS_SCANS,
    LogSnapshot,
    add_actions,
    count_nulls,
    epoch_micros,
    finish_extreme,
    open_snapshot,
    plan_extreme,
    query_column,
    query_extreme,
)
from airflow_dq_contracts.timeutil import EPOCH, from_epoch_micros, to_epoch_micros

from .metrics import MeasureContext, Measurement, Metric
from .metrics.counts import CountMetric, MissingMetric, NumRowsMetric
from .metrics.statistics import MaxMetric, MinMetric
from .metrics.timeliness import CompletenessMetric, FreshnessMetric
from .spark_errors import first_line, quiet_pyspark_errors

log = logging.getLogger(__name__)

STATISTICS_CONF_KEY = "spark.dqcontracts.statistics.enabled"
#: Bytes of data files without usable statistics that a narrow delta-rs read may cover (default 1 GiB).
RESIDUAL_CONF_KEY = "spark.dqcontracts.statistics.residualBytes"
_RESIDUAL_BYTES = 1 << 30
FROM_STATISTICS = "statistics"
FROM_SCAN = "scan"

_EXACT_EXTREME_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.DateType)
_TIMESTAMP_TYPES = (T.TimestampType, T.TimestampNTZType)
_FLOAT_TYPES = (T.FloatType, T.DoubleType)
# Delta's Spark writer: statistics are Spark's own min/max aggregates, NaN the largest value.
_SPARK_WRITERS = ("Apache-Spark/", "Databricks-Runtime/")
# Operations that add no data file: any writer may make them without changing what statistics mean.
_NO_DATA_OPERATIONS = frozenset(
    {"VACUUM START", "VACUUM END", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "ADD CONSTRAINT", "DROP CONSTRAINT"}
)
# Delta truncates timestamp statistics to milliseconds: the extreme lies within one of them.
_STATS_SLACK = dt.timedelta(milliseconds=1)


@dataclasses.dataclass(frozen=True)
class StatisticsSource:
    """A Delta table at a path whose log may answer checks (what the runner knows of a Delta input).

    ``table_id``: the table's id as the server or catalog that resolved ``location`` reports it
    (``DESCRIBE DETAIL``'s ``id``); the log is used only when the one found at ``location`` has it.
    """

    location: str
    storage_options: Mapping[str, str] | None = None
    table_id: str | None = None
    #: The version the run reads (its pinned one): the log is read at it, not at whatever landed since.
    version: int | None = None


def _residual_budget(spark: SparkSession) -> int:
    try:
        return int(str(spark.conf.get(RESIDUAL_CONF_KEY, str(_RESIDUAL_BYTES))).strip())
    except Exception:  # noqa: BLE001 - an unreadable or malformed setting: the default
        return _RESIDUAL_BYTES


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
        self.residual_budget = _RESIDUAL_BYTES
        self.residual_reads = 0
        self._rows: tuple[int | None] | None = None  # computed once by rows()
        self._nan_in_statistics: bool | None = None  # computed once by nan_in_statistics()
        #: The log read directly where delta-rs cannot scan the table; ``log_files``: its files in scope.
        self.log: LogSnapshot | None = None
        self.log_files: list[int] = list(range(self.count))
        self.version = -1

    def nan_in_statistics(self) -> bool:
        """Whether every file's float statistics include NaN as Spark orders it (see the module doc).

        A table only the log reader reads has no delta-rs history here: its writers count as unknown."""
        if self._nan_in_statistics is None:
            self._nan_in_statistics = self.table is not None and _spark_written(self.table)
        return self._nan_in_statistics

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

    def readable(self, indices: Sequence[int], what: str, *, read: Sequence[int] | None = None) -> bool:
        """Whether a delta-rs read may complete the log's answer for the files ``indices`` (see the module doc).

        They must be at most half of the in-scope bytes; what the query reads (``read``, default
        ``indices``) at most the budget.
        """
        if not indices:
            return True
        if self.pruned and self.partition_predicate is None and self.log is None:
            return False  # the run's partitions cannot be written as a delta-rs predicate
        sizes = [int(size or 0) for size in self.values("size_bytes")]
        part, whole = sum(sizes[i] for i in set(indices)), sum(sizes)
        reads = part if read is None else sum(sizes[i] for i in set(read))
        if reads > self.residual_budget or 2 * part > whole:
            log.info("statistics: %s: %d of %d files (%d of %d bytes) lack usable statistics; scanned", what,
                     len(set(indices)), self.count, part, whole)  # fmt: skip
            return False
        return True

    def where(self, *clauses: str) -> list[str]:
        """The run's partition predicate (if any) and ``clauses``, for a delta-rs query."""
        return ([self.partition_predicate] if self.partition_predicate else []) + list(clauses)

    def query(self, select: str, *clauses: str) -> Any:
        """One value by a delta-rs query over the in-scope files; None when it fails (the check is scanned)."""
        self.residual_reads += 1
        try:
            values = query_column(self.table, select, self.where(*clauses)).to_pylist()
        except Exception as exc:  # noqa: BLE001 - a query delta-rs cannot run: the scan answers instead
            log.info("statistics: a delta-rs read failed (%s); scanned", first_line(exc))
            return None
        return values[0] if values else None

    def rows(self) -> int | None:
        """Live rows in scope: Σ statistics, plus a delta-rs count of the files without ``numRecords``."""
        if self._rows is None:
            live = self.live()
            if live is not None:
                self._rows = (sum(live),)
            elif self.log is not None:  # the Parquet footers of the files without numRecords
                log = self.log
                self._rows = (sum(log.live_rows(i) for i in self.log_files),)
            else:
                unknown = [i for i, records in enumerate(self.records) if records is None]
                # A predicate on a column: delta-rs 1.x fails a count with no column read at all.
                anchor = _ident((self.partitions or [self.table.schema().fields[0].name])[0])
                every = f"{anchor} IS NULL OR {anchor} IS NOT NULL"
                counted = self.query("count(*)", every) if self.readable(unknown, "row count") else None
                self._rows = (None if counted is None else int(counted),)
        return self._rows[0]

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


def _spark_written(table: Any) -> bool:
    """Whether every commit that may have added a file, since version 0, was made by Delta's Spark writer."""
    try:
        commits = table.history()
    except Exception as exc:  # noqa: BLE001 - a history delta-rs cannot read: the writers are unknown
        log.info("statistics: the table's history cannot be read (%s)", first_line(exc))
        return False
    versions = [commit.get("version") for commit in commits]
    if not commits or 0 not in versions:
        return False  # the log was cleaned up: the first files' writer is unknown
    for commit in commits:
        engine = str(commit.get("engineInfo") or "")
        if not engine.startswith(_SPARK_WRITERS) and commit.get("operation") not in _NO_DATA_OPERATIONS:
            return False
    return True


def _deleted_rows(table: Any) -> dict[str, int]:
    """File name → rows its deletion vector removes."""
    out: dict[str, int] = {}
    data = pa.RecordBatchReader.from_stream(table.deletion_vectors()).read_all()
    for path, keep in zip(data.column("filepath").to_pylist(), data.column("selection_vector").to_pylist()):
        out[posixpath.basename(unquote(path))] = sum(1 for flag in keep if not flag)
    return out


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
            literal = datafusion_literal(value)
            terms.append(f"{quoted} IS NULL" if value is None else f"{quoted} = {literal}" if literal else "")
        clauses.add("(" + " AND ".join(terms) + ")" if all(terms) else "")
    snapshot.pruned = True
    snapshot.partition_predicate = None if "" in clauses else (" OR ".join(sorted(clauses)) or "false")
    mask = pa.array([index in kept for index in range(snapshot.count)], pa.bool_())
    snapshot.actions = snapshot.actions.filter(mask)
    snapshot.log_files = [i for index, i in enumerate(snapshot.log_files) if index in kept]
    snapshot.count = snapshot.actions.num_rows
    snapshot.records = snapshot.values("num_records")
    return None


def _load(
    spark: SparkSession,
    source: StatisticsSource,
    schema: T.StructType,
    run_filter: str | None,
    opened: tuple[Any, LogSnapshot | None] | None = None,
) -> Any:
    """The snapshot of the in-scope files, or the reason the log cannot be used (a string)."""
    table, log = opened or open_snapshot(source.location, source.storage_options, source.version)
    if log is not None and source.version is not None and log.version != source.version:
        return f"the log reader reads the newest version ({log.version}), the run reads version {source.version}"
    found_id = str(log.metadata.get("id")) if log is not None else str(table.metadata().id)
    if source.table_id is not None and found_id != source.table_id:
        return f"the Delta log at {source.location} is not the table the session reads (another table id)"
    if log is not None:  # delta-rs cannot scan this table: the log read directly answers
        snapshot = _Snapshot(table, log.add_actions(), _physical_names(log.schema_json), log.partition_columns)
        snapshot.log, snapshot.version = log, log.version
    else:
        snapshot = _Snapshot(
            table,
            add_actions(table),
            _physical_names(table.schema().to_json()),
            list(table.metadata().partition_columns),
        )
        snapshot.version = table.version()
    if run_filter:
        problem = _prune(spark, snapshot, schema, run_filter)
        if problem:
            return problem
    if log is not None:
        snapshot.deleted = [log.files[i].deleted for i in snapshot.log_files]
    elif "deletionVectors" in (table.protocol().reader_features or []):
        deleted = _deleted_rows(table)
        names = [posixpath.basename(unquote(p)) for p in snapshot.values("path")]
        snapshot.deleted = [deleted.get(name, 0) for name in names]
    return snapshot


# --------------------------------------------------------------------------------------- answers


def _nulls(snapshot: _Snapshot, column: str, live: list[int] | None) -> int | None:
    """Live NULLs of ``column`` in scope; None when neither the statistics nor a narrow read can say exactly."""
    if column in snapshot.partitions:
        if live is None:
            return None
        return sum(n for n, value in zip(live, snapshot.stat("partition", column)) if value is None)
    if snapshot.log is not None:
        return _log_nulls(snapshot, snapshot.log, column)
    total = 0
    unknown: list[int] = []  # files whose statistics cannot say
    maybe: list[int] = []  # files that may hold a NULL (what a delta-rs count reads)
    counts = snapshot.stat("null_count", column)
    for index, (records, nulls, deleted) in enumerate(zip(snapshot.records, counts, snapshot.deleted)):
        if nulls is None or records is None or (deleted and nulls not in (0, records)):
            unknown.append(index)  # no statistics, or some deleted rows may have been NULL
            maybe.append(index)
            continue
        if nulls:
            maybe.append(index)
        if live is not None:
            total += live[index] if nulls == records else nulls
    if not unknown:
        return total
    if not snapshot.readable(unknown, f"NULLs of {column}", read=maybe):
        return None
    counted = snapshot.query("count(*)", f"{_ident(column)} IS NULL")
    return None if counted is None else int(counted)


def _log_nulls(snapshot: _Snapshot, log: LogSnapshot, column: str) -> int | None:
    """:func:`_nulls` of a table read directly: statistics, and the column of the files they cannot say for."""
    total = 0
    unknown: list[int] = []
    counts = snapshot.stat("null_count", column)
    for index, (records, nulls, deleted) in enumerate(zip(snapshot.records, counts, snapshot.deleted)):
        if nulls is None or records is None or (deleted and nulls not in (0, records)):
            unknown.append(index)
        else:
            total += records - deleted if nulls == records else nulls
    if not snapshot.readable(unknown, f"NULLs of {column}"):
        return None
    snapshot.residual_reads += bool(unknown)
    return total + sum(count_nulls(log, snapshot.log_files[index], column) for index in unknown)


def _log_extreme(snapshot: _Snapshot, log: LogSnapshot, column: str, kind: str) -> Any:
    """The exact extreme of a data column of a table read directly (timestamps as epoch micros); None: scan it."""
    plan = plan_extreme(log, column, kind, snapshot.log_files)
    position = {file: index for index, file in enumerate(snapshot.log_files)}
    if not snapshot.readable([position[file] for file in plan.reads], f"{kind} of {column}"):
        return None
    snapshot.residual_reads += bool(plan.reads)
    return finish_extreme(log, plan)


def _extreme(snapshot: _Snapshot, column: str, kind: str, live: list[int] | None) -> tuple[Any, list[int]]:
    """(max or min over the files whose statistics are exact — None if none holds a value, the other files)."""
    values = snapshot.stat(kind, column)
    nulls = snapshot.stat("null_count", column)
    best: Any = None
    residual: list[int] = []
    for index, value in enumerate(values):
        if live is not None and live[index] == 0:
            continue  # every row of the file is deleted
        if column not in snapshot.partitions:
            records = snapshot.records[index]
            if snapshot.deleted[index] or records is None:
                residual.append(index)  # bounds are wide once rows are deleted; no statistics at all
                continue
            if value is None:
                if nulls[index] != records:
                    residual.append(index)  # no statistics for this column in this file
                continue  # an all-NULL file
        elif value is None:
            continue
        if best is None or (value > best if kind == "max" else value < best):
            best = value
    return best, residual


def _float_extreme(snapshot: _Snapshot, column: str, kind: str, live: list[int] | None) -> tuple[Any, list[int]]:
    """As :func:`_extreme` for a float column of a Spark-written table: NaN (the largest) is a value.

    ``max`` is NaN as soon as one file's ``maxValues`` is; a file whose ``minValues`` is NaN holds
    only NaN (and NULLs), the ``min`` then NaN only if no other file holds a number.
    """
    values, highs = snapshot.stat(kind, column), snapshot.stat("max", column)
    nulls = snapshot.stat("null_count", column)
    best: Any = None
    residual: list[int] = []
    only_nan = False
    for index, value in enumerate(values):
        if live is not None and live[index] == 0:
            continue
        records = snapshot.records[index]
        if snapshot.deleted[index] or records is None:
            residual.append(index)
            continue
        if value is None or (kind == "min" and highs[index] is None):
            if nulls[index] != records:
                residual.append(index)  # no statistics for this column in this file
            continue
        if not isinstance(value, float):
            residual.append(index)
            continue
        if math.isnan(value):
            if kind == "max":
                return value, []  # a NaN in scope: the maximum
            only_nan = True
            continue
        if best is None or (value > best if kind == "max" else value < best):
            best = value
    if best is None and only_nan and not residual:
        return math.nan, []
    return best, residual


def _unscannable(log: LogSnapshot) -> str:
    return ", ".join(f for f in log.reader_features if f not in DELTA_RS_SCANS) or "its log"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: Any, data_type: T.DataType) -> str | None:
    """``value`` (a statistic) as a DataFusion literal of the column's type; None if it cannot be written."""
    if isinstance(data_type, T.DecimalType) and isinstance(value, (Decimal, int)):
        return f"CAST('{value}' AS DECIMAL({data_type.precision}, {data_type.scale}))"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and not math.isnan(value):
        kind = "DOUBLE" if isinstance(data_type, T.DoubleType) else "FLOAT"
        return f"CAST('{value!r}' AS {kind})"  # 'inf' and '-inf' too
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE '{value.isoformat()}'"
    return None


def _read_extreme(snapshot: _Snapshot, field: T.StructField, kind: str, best: Any, residual: list[int]) -> Any:
    """The exact extreme over the in-scope files by one delta-rs query; None when it cannot be read here.

    The statistics' extreme (``best``: files without a deletion vector, with statistics) bounds the
    read, so delta-rs skips every file that cannot hold a more extreme value: the ``residual`` files
    and the few whose range reaches the bound are read. A timestamp's statistic is in epoch micros and
    truncated to milliseconds (one of slack); the answer is epoch micros too.
    """
    if not snapshot.readable(residual if best is not None else range(snapshot.count), f"{kind} of {field.name}"):
        return None
    data_type = field.dataType
    if isinstance(data_type, _TIMESTAMP_TYPES):
        bound = None
        if best is not None:
            moment = from_epoch_micros(best)
            assert moment is not None
            bound = moment - _STATS_SLACK if kind == "max" else moment + _STATS_SLACK
        delta_type = "timestamp_ntz" if isinstance(data_type, T.TimestampNTZType) else "timestamp"
        snapshot.residual_reads += 1
        exact = query_extreme(snapshot.table, field.name, kind, delta_type, bound, snapshot.partition_predicate)
        return None if exact is None else to_epoch_micros(exact)
    clauses = []
    if best is not None:
        literal = _literal(best, data_type)
        if literal is None:
            return None
        clauses.append(f"{_ident(field.name)} {'>=' if kind == 'max' else '<='} {literal}")
    return snapshot.query(f"{kind}({_ident(field.name)})", *clauses)


def _micros(value: Any) -> int:
    if isinstance(value, int):
        return value  # a timestamp statistic, already epoch micros
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return (value - EPOCH.date()).days * 86_400_000_000
    raise TypeError(f"not a time: {value!r}")


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
    rows = snapshot.rows()
    ctx = MeasureContext(rows or 0, reference)
    if isinstance(metric, NumRowsMetric):
        return None if rows is None else metric.measure([], [], ctx)
    if isinstance(metric, (MissingMetric, CountMetric)):
        if rows is None or metric.field is None:
            return None
        nulls = _nulls(snapshot, metric.field.name, live)
        if nulls is None:
            return None
        return metric.measure([nulls if isinstance(metric, MissingMetric) else rows - nulls], [], ctx)
    field = metric.field
    if field is None:
        return None
    data_type = field.dataType
    timestamp = isinstance(data_type, _TIMESTAMP_TYPES)
    if isinstance(metric, (MinMetric, MaxMetric)) and isinstance(data_type, _FLOAT_TYPES):
        return _float_answer(snapshot, metric, field, live, ctx)
    if isinstance(metric, (MinMetric, MaxMetric, FreshnessMetric)):
        if not isinstance(data_type, _EXACT_EXTREME_TYPES + _TIMESTAMP_TYPES):
            return None
        if isinstance(metric, FreshnessMetric):
            kind = "max" if metric.check.params.get("aggregation", "max") == "max" else "min"
        else:
            kind = metric.check.type
        micros: int | None = None
        residual: list[int] = []
        if snapshot.log is not None and field.name not in snapshot.partitions:
            value = _log_extreme(snapshot, snapshot.log, field.name, kind)
            if timestamp:
                micros = value
        else:
            value, residual = _extreme(snapshot, field.name, kind, live)
        if snapshot.log is None and (residual or (timestamp and field.name not in snapshot.partitions)):
            # Statistics for part of the files (or millisecond ones): a narrow read completes them.
            if value is None and not residual:
                return None  # no value at all: the scan reports it
            value = _read_extreme(snapshot, field, kind, value, residual)
            if timestamp:
                micros = value
        if value is None:
            return None  # no value at all (the scan reports it), or no read allowed here
        if micros is None and isinstance(data_type, (T.DateType, *_TIMESTAMP_TYPES)):
            micros = _micros(value)
        if isinstance(metric, FreshnessMetric):
            return metric.measure([micros, 1, 1], [], ctx)
        number = value if micros is None else micros / 1_000_000
        return _measure_extreme(metric, kind, number, ctx)
    if isinstance(metric, CompletenessMetric):
        return _completeness(snapshot, metric, live, ctx)
    return None


def _measure_extreme(metric: Metric, kind: str, number: Any, ctx: MeasureContext) -> Measurement | None:
    """A ``min``/``max`` measured with the extreme the scan would have found; None: scan it (it fails)."""
    scan: list[Any] = [number, 1]
    side = "lower" if kind == "min" else "upper"
    if _limit(metric.check, side) is not None:  # the metric has a per-row predicate (Metric.beyond_limit)
        if _breaks(metric.check, side, number):
            return None  # it fails: the scan counts the violating rows
        scan.append(0)
    return metric.measure(scan, [], ctx)


def _float_answer(
    snapshot: _Snapshot, metric: Metric, field: T.StructField, live: list[int] | None, ctx: MeasureContext
) -> Measurement | None:
    """``min``/``max`` of a float column (see the module doc); None: scan it."""
    if field.name in snapshot.partitions or not snapshot.nan_in_statistics():
        return None
    kind = metric.check.type
    value, residual = _float_extreme(snapshot, field.name, kind, live)
    if residual and not (kind == "min" and value == -math.inf):  # nothing is below -inf (NaN is above)
        value = _read_extreme(snapshot, field, kind, value, residual)
    if value is None or math.isnan(value):
        return None  # no value at all, no read allowed, or NaN: the scan reports it
    return _measure_extreme(metric, kind, float(value), ctx)


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


#: The metrics the log may answer.
ANSWERABLE = (NumRowsMetric, MissingMetric, CountMetric, MinMetric, MaxMetric, FreshnessMetric, CompletenessMetric)


def answer(
    spark: SparkSession,
    source: StatisticsSource | None,
    schema: T.StructType,
    run_filter: str | None,
    candidates: Sequence[tuple[Check, Metric, bool]],
    reference_time: dt.datetime,
    progress: Callable[[str], None] | None = None,
    *,
    opened: tuple[Any, LogSnapshot | None] | None = None,
) -> Outcome:
    """Measure from the log what it answers exactly; ``candidates`` are (check, metric, runnable) in plan order.

    ``opened``: the table as :func:`open_snapshot` opened it for ``source`` (then not opened again).
    Never raises: a log that cannot be read (or any surprise) means every check is scanned.
    """
    outcome = Outcome()
    if source is None or not statistics_enabled(spark):
        return outcome
    wanted = [
        (index, metric)
        for index, (check, metric, runnable) in enumerate(candidates)
        if runnable and not check.filter and isinstance(metric, ANSWERABLE)
    ]
    began = time.perf_counter()
    try:
        snapshot = _load(spark, source, schema, run_filter, opened)
        if isinstance(snapshot, str):
            outcome.detail = snapshot
            return outcome
        snapshot.residual_budget = _residual_budget(spark)
        live = snapshot.live()
        outcome.row_count = snapshot.rows()
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
            f"({snapshot.count} files in scope, v{snapshot.version}"
            + (f"; read directly: delta-rs cannot scan {_unscannable(snapshot.log)}" if snapshot.log else "")
            + (f"; {snapshot.residual_reads} narrow delta-rs reads" if snapshot.residual_reads else "")
            + ")"
        )
    except Exception as exc:  # noqa: BLE001 - an unreadable log, no deltalake here: scan everything
        outcome = Outcome(detail=f"Delta log not used: {first_line(exc)}")
    if progress is not None:
        progress(f"statistics: {outcome.detail} in {time.perf_counter() - began:.2f} s")
    return outcome
