"""Freshness and partition facts of a table, read from metadata — no JVM, no full scan.

Plain Python plus ``deltalake`` (delta-rs) and ``pyarrow``; imports neither Airflow nor pyspark,
so the sensors, their triggers and the CLI can all use it.

Delta tables
    * :func:`newest_timestamp` takes the newest (``max``) or oldest (``min``) value of a timestamp
      or date column from the per-file statistics of the transaction log
      (``DeltaTable.get_add_actions``). Delta truncates timestamp statistics to milliseconds, and
      files written without statistics (or columns beyond ``delta.dataSkippingNumIndexedCols``)
      have none, so by default the value is made exact with one DataFusion query
      ``SELECT max(c) FROM t WHERE c >= <stats bound − 1 ms>``: delta-rs prunes every file whose
      statistics lie below the bound, so only the file(s) holding the extreme and the files
      without statistics are opened, and only column ``c`` of them. That query also applies
      deletion vectors and column mapping correctly. ``exact=False`` skips it whenever statistics
      cover every file (millisecond precision).
    * A partition column needs no statistics: its values are in the log (``partition_values``).
    * :func:`last_commit_time`: the timestamp of the latest commit (``inCommitTimestamp`` if set).

Plain Parquet directories (no ``_delta_log``)
    Hive-style partition values come from the paths (``order_date=2024-01-31/part-0.parquet``);
    a data column is read alone with pyarrow; the "commit" time is the newest file's mtime.

Catalog names
    :func:`resolve_table_path` maps ``db.table`` to Spark's default layout
    ``<warehouse>/<db>.db/<table>`` (``table`` alone: ``<warehouse>/<table>``), the warehouse being
    an argument or ``$DQ_CONTRACTS_WAREHOUSE``.

Every failure the user can cause is a :class:`DeltaMetadataError` with a readable message.

Example::

    >>> import datetime as dt, tempfile, pyarrow as pa
    >>> from deltalake import write_deltalake
    >>> path = tempfile.mkdtemp() + "/orders"
    >>> write_deltalake(path, pa.table({"created_at": pa.array(
    ...     [dt.datetime(2024, 1, 1, 5, 0, 0, 250), dt.datetime(2024, 1, 1, 6)], pa.timestamp("us"))}))
    >>> newest_timestamp(path, "created_at").value.isoformat()
    '2024-01-01T06:00:00+00:00'
    >>> newest_timestamp(path, "created_at", "min").value.isoformat()
    '2024-01-01T05:00:00.000250+00:00'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import posixpath
import time
import urllib.parse
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from airflow_dq_contracts.contract.timeliness import (
    AGGREGATIONS,
    GapReport,
    PartitionValueError,
    age_hours,
    check_granularity,
    count_gaps,
    to_utc,
)

WAREHOUSE_ENV = "DQ_CONTRACTS_WAREHOUSE"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz", "date")
# Delta stores timestamp statistics truncated to milliseconds; one more millisecond of slack
# also covers writers that round instead of truncating.
_STATS_SLACK = dt.timedelta(milliseconds=1)
_PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


class DeltaMetadataError(Exception):
    """A table's metadata cannot answer the question; the message says why and where."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class TableNotFoundError(DeltaMetadataError):
    """No Delta table (and no Parquet directory) at the path."""


class ColumnNotFoundError(DeltaMetadataError):
    """The column is not in the table's schema."""


class ColumnTypeError(DeltaMetadataError):
    """The column holds no timestamps (or a partition value is not a time)."""


class NotPartitionedError(DeltaMetadataError):
    """The table is not partitioned, or not by the requested column."""


# --------------------------------------------------------------------------------------------
# Results


def _iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return to_utc(value).isoformat().replace("+00:00", "Z")


@dataclasses.dataclass(frozen=True)
class Measurement:
    """A time read from a table's metadata: a column's newest/oldest value or the last commit.

    ``value`` is an aware UTC datetime, or ``None`` when the column holds no non-null value.
    ``source`` says where it came from: ``statistics`` (log statistics only),
    ``statistics+scan`` (statistics, made exact by reading only the candidate files' column),
    ``scan`` (no usable statistics: only that column was read), ``partition_values``,
    ``commit_log``, ``hive_paths``, ``file_mtime``. ``files_read`` is the number of data files
    whose column had to be opened (an upper bound when deletion vectors are involved).

    >>> m = Measurement(path="/t", column="c", aggregation="max", value=None, source="statistics",
    ...                 table_format="delta", table_version=0, files_total=0)
    >>> m.to_dict()["value"] is None
    True
    """

    path: str
    column: str | None
    aggregation: str
    value: dt.datetime | None
    source: str
    table_format: str
    table_version: int | None
    files_total: int
    files_with_stats: int = 0
    files_read: int = 0
    elapsed_seconds: float = 0.0

    def describe(self) -> str:
        """One line for logs."""
        what = "last commit" if self.column is None else f"{self.aggregation}({self.column})"
        version = "" if self.table_version is None else f" v{self.table_version}"
        return (
            f"{what} = {_iso(self.value) or 'none (no values)'} from {self.source} "
            f"[{self.table_format}{version}: {self.files_total} files, "
            f"{self.files_with_stats} with statistics, {self.files_read} read, "
            f"{self.elapsed_seconds * 1000:.0f} ms]"
        )

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["value"] = _iso(self.value)
        return out


@dataclasses.dataclass(frozen=True)
class PartitionListing:
    """Distinct values of one partition column, as found in the Delta log or in Hive paths."""

    path: str
    column: str
    values: tuple[Any, ...]
    source: str
    table_format: str
    table_version: int | None
    files_total: int
    partition_columns: tuple[str, ...]
    elapsed_seconds: float = 0.0


@dataclasses.dataclass(frozen=True)
class FreshnessResult:
    """Outcome of :func:`evaluate_freshness`: passes when ``age_hours ≤ max_age_hours``."""

    passed: bool
    age_hours: float | None
    max_age_hours: float
    reference_time: dt.datetime
    measurement: Measurement
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (XCom value, trigger event payload)."""
        return {
            "check": "freshness",
            "passed": self.passed,
            "age_hours": self.age_hours,
            "max_age_hours": self.max_age_hours,
            "reference_time": _iso(self.reference_time),
            "message": self.message,
            "measurement": self.measurement.to_dict(),
        }


@dataclasses.dataclass(frozen=True)
class CompletenessResult:
    """Outcome of :func:`evaluate_completeness`: passes when ``gap_count ≤ max_gap_count``."""

    passed: bool
    max_gap_count: int
    report: GapReport
    listing: PartitionListing
    message: str

    @property
    def gap_count(self) -> int:
        return self.report.gap_count

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (XCom value, trigger event payload)."""
        out = {
            "check": "completeness",
            "passed": self.passed,
            "gap_count": self.report.gap_count,
            "max_gap_count": self.max_gap_count,
            "message": self.message,
            "path": self.listing.path,
            "partition_column": self.listing.column,
            "source": self.listing.source,
            "table_format": self.listing.table_format,
            "table_version": self.listing.table_version,
            "files_total": self.listing.files_total,
            "elapsed_seconds": self.listing.elapsed_seconds,
        }
        out.update(self.report.to_dict())
        return out


# --------------------------------------------------------------------------------------------
# Locating tables


def resolve_table_path(table: str, warehouse: str | None = None) -> str:
    """Path of a catalog table in Spark's default warehouse layout.

    ``db.table`` → ``<warehouse>/<db>.db/<table>``; ``table`` or ``default.table`` →
    ``<warehouse>/<table>``; a leading ``spark_catalog.`` is dropped. Names are lower-cased, as
    Spark's session catalog stores them. ``warehouse`` defaults to ``$DQ_CONTRACTS_WAREHOUSE``.

    >>> resolve_table_path("Silver.Orders", "/data/warehouse")
    '/data/warehouse/silver.db/orders'
    >>> resolve_table_path("orders", "s3://lake/wh/")
    's3://lake/wh/orders'
    """
    base = warehouse or os.environ.get(WAREHOUSE_ENV)
    if not base:
        raise DeltaMetadataError(
            f"table {table!r} needs a warehouse folder to be found: pass warehouse=... "
            f"or set ${WAREHOUSE_ENV} (or give path=... instead of table=...)"
        )
    parts = [p.strip().strip("`").lower() for p in str(table).split(".")]
    if len(parts) == 3 and parts[0] == "spark_catalog":
        parts = parts[1:]
    if not parts or any(not p for p in parts) or len(parts) > 2:
        raise DeltaMetadataError(
            f"table {table!r} is not a table name of the form 'table' or 'database.table'"
        )
    base = base.rstrip("/")
    if len(parts) == 1 or parts[0] == "default":
        return f"{base}/{parts[-1]}"
    return f"{base}/{parts[0]}.db/{parts[1]}"


def _normalise_path(path: str) -> str:
    text = os.fspath(path)
    if "://" in text:
        return text.rstrip("/")
    if text.startswith("file:"):
        text = urllib.parse.urlparse(text).path
    return os.path.abspath(os.path.expanduser(text))


def is_delta_table(path: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether ``path`` holds a Delta table (has a readable ``_delta_log``)."""
    from deltalake import DeltaTable

    try:
        return bool(DeltaTable.is_deltatable(_normalise_path(path), dict(storage_options or {})))
    except Exception:  # an unreachable store is "not a Delta table" here; open() says why
        return False


def _open_delta(path: str, storage_options: Mapping[str, str] | None, *, without_files: bool = False):
    from deltalake import DeltaTable

    try:
        return DeltaTable(
            path, storage_options=dict(storage_options or {}) or None, without_files=without_files
        )
    except Exception as exc:  # delta-rs raises its own TableNotFoundError / OSError variants
        raise TableNotFoundError(f"cannot open Delta table at {path}: {exc}", path) from None


def _field_type(field: Any) -> str:
    kind = getattr(field.type, "type", None)
    if isinstance(kind, str):
        return kind
    return type(field.type).__name__.replace("Type", "").lower()  # struct / array / map


def _find_column(names: Iterable[str], column: str, path: str, what: str = "column") -> str:
    names = list(names)
    if column in names:
        return column
    folded = [n for n in names if n.lower() == column.lower()]
    if len(folded) == 1:  # Spark resolves names case-insensitively by default
        return folded[0]
    raise ColumnNotFoundError(
        f"{what} {column!r} is not in the table at {path}; its columns are: "
        f"{', '.join(names) or '(none)'}",
        path,
    )


def _add_actions(table: Any) -> pa.Table:
    # delta-rs returns an arro3 record batch; pyarrow takes it through the Arrow C interfaces.
    actions = table.get_add_actions(flatten=True)
    if hasattr(actions, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(actions).read_all()
    # arro3-core before 0.9 (the newest on Python 3.10) exports a batch as an array only.
    return pa.Table.from_batches([pa.record_batch(actions)])


# --------------------------------------------------------------------------------------------
# Newest / oldest timestamp


def _check_aggregation(aggregation: str) -> str:
    if aggregation not in AGGREGATIONS:
        raise DeltaMetadataError(
            f"aggregation {aggregation!r} is not one of {', '.join(AGGREGATIONS)}"
        )
    return aggregation


def _extreme(values: Iterable[Any], aggregation: str, path: str, column: str) -> dt.datetime | None:
    best: dt.datetime | None = None
    for raw in values:
        if raw is None:
            continue
        try:
            moment = to_utc(raw)
        except PartitionValueError as exc:
            raise ColumnTypeError(
                f"column {column!r} of {path} holds a value that is not a time: {exc}", path
            ) from None
        if best is None or (moment > best if aggregation == "max" else moment < best):
            best = moment
    return best


def _sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_literal(moment: dt.datetime, delta_type: str) -> str:
    if delta_type == "date":
        return f"DATE '{moment.date().isoformat()}'"
    text = moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    if delta_type == "timestamp":
        return f"TIMESTAMP '{text}+00:00'"
    return f"TIMESTAMP '{text}'"  # timestamp_ntz: a wall-clock value, naive = UTC


def _query_extreme(
    table: Any, column: str, aggregation: str, delta_type: str, bound: dt.datetime | None
) -> dt.datetime | None:
    from deltalake import QueryBuilder

    sql = f"SELECT {aggregation}({_sql_ident(column)}) AS extreme FROM t"
    if bound is not None:
        op = ">=" if aggregation == "max" else "<="
        sql += f" WHERE {_sql_ident(column)} {op} {_sql_literal(bound, delta_type)}"
    result = pa.RecordBatchReader.from_stream(QueryBuilder().register("t", table).execute(sql)).read_all()
    if result.num_rows == 0:
        return None
    return _extreme_micros(result.column(0), aggregation)


# Times are compared as int64 microseconds since the epoch (UTC). Besides being exact, this keeps
# pyarrow from importing pandas, which it does to turn a tz-aware value into Python (1-2 s per
# process: every reschedule-mode poke is a new process).
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROS_PER_DAY = 86_400_000_000


def _epoch_micros(array: pa.ChunkedArray | pa.Array) -> list[int | None]:
    """Times as microseconds since the epoch (UTC); nulls stay ``None``."""
    kind = array.type
    if pa.types.is_timestamp(kind):
        # Dropping the zone keeps the stored UTC instant; naive (ntz) values are UTC already.
        return pc.cast(pc.cast(array, pa.timestamp("us"), safe=False), pa.int64()).to_pylist()
    if pa.types.is_date(kind):
        days = pc.cast(pc.cast(array, pa.date32()), pa.int32()).to_pylist()
        return [None if d is None else d * _MICROS_PER_DAY for d in days]
    raise TypeError(f"not a time type: {kind}")


def _from_micros(micros: int | None) -> dt.datetime | None:
    if micros is None:
        return None
    return _EPOCH + dt.timedelta(microseconds=int(micros))


def _to_micros(moment: dt.datetime) -> int:
    delta = to_utc(moment) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _extreme_micros(array: pa.ChunkedArray | pa.Array, aggregation: str) -> dt.datetime | None:
    """max/min of a time column in Arrow (a scan may return millions of values)."""
    kind = array.type
    if pa.types.is_timestamp(kind):
        ints, scale = pc.cast(pc.cast(array, pa.timestamp("us"), safe=False), pa.int64()), 1
    elif pa.types.is_date(kind):
        ints, scale = pc.cast(pc.cast(array, pa.date32()), pa.int32()), _MICROS_PER_DAY
    else:
        raise TypeError(f"not a time type: {kind}")
    extreme = (pc.max(ints) if aggregation == "max" else pc.min(ints)).as_py()
    return None if extreme is None else _from_micros(extreme * scale)


def _python_values(array: pa.ChunkedArray) -> list[Any]:
    """Distinct values as Python objects; timestamps as aware UTC datetimes."""
    distinct = pc.unique(array)
    if pa.types.is_timestamp(distinct.type):
        return [_from_micros(v) for v in _epoch_micros(distinct)]
    return distinct.to_pylist()


def newest_timestamp(
    path: str,
    column: str,
    aggregation: str = "max",
    *,
    storage_options: Mapping[str, str] | None = None,
    exact: bool = True,
) -> Measurement:
    """Newest (``max``) or oldest (``min``) value of ``column``, from metadata.

    See the module docstring for how statistics, partition values and the narrow fallback read
    combine. Raises :class:`TableNotFoundError`, :class:`ColumnNotFoundError` or
    :class:`ColumnTypeError` (the column is not a timestamp/date, or a partition value is no time).

    Example::

        m = newest_timestamp("/lake/orders", "created_at")
        print(m.value, m.source, m.files_read)
    """
    _check_aggregation(aggregation)
    started = time.perf_counter()
    location = _normalise_path(path)
    if not is_delta_table(location, storage_options):
        measurement = _parquet_newest(location, column, aggregation)
        return dataclasses.replace(measurement, elapsed_seconds=time.perf_counter() - started)

    table = _open_delta(location, storage_options)
    fields = {f.name: f for f in table.schema().fields}
    name = _find_column(fields, column, location)
    delta_type = _field_type(fields[name])
    partition_columns = list(table.metadata().partition_columns)
    version = table.version()
    actions = _add_actions(table)
    files_total = actions.num_rows

    if name in partition_columns:
        key = f"partition.{name}"
        values = _python_values(actions.column(key)) if key in actions.column_names else []
        value = _extreme(values, aggregation, location, name)
        return Measurement(
            path=location, column=name, aggregation=aggregation, value=value,
            source="partition_values", table_format="delta", table_version=version,
            files_total=files_total, files_with_stats=0, files_read=0,
            elapsed_seconds=time.perf_counter() - started,
        )

    if delta_type not in TIMESTAMP_TYPES:
        raise ColumnTypeError(
            f"column {name!r} of {location} is of type {delta_type}, not a timestamp or date: "
            "the freshness sensor needs a timestamp, timestamp_ntz or date column"
            + (
                " (text timestamps cannot be ordered from file statistics; check them with the "
                "contract's freshness check in Spark instead)" if delta_type == "string" else ""
            ),
            location,
        )

    if files_total == 0:
        return Measurement(
            path=location, column=name, aggregation=aggregation, value=None, source="statistics",
            table_format="delta", table_version=version, files_total=0,
            elapsed_seconds=time.perf_counter() - started,
        )

    stat_key, null_key = f"{aggregation}.{name}", f"null_count.{name}"
    # Plain Python over one value per file: cheap for thousands of files, and pyarrow compute
    # with Python literals would import pandas (see _epoch_micros).
    stats: list[int | None] = (
        _epoch_micros(actions.column(stat_key)) if stat_key in actions.column_names
        else [None] * files_total  # no file has statistics for this column
    )
    if null_key in actions.column_names and "num_records" in actions.column_names:
        null_counts = actions.column(null_key).to_pylist()
        record_counts = actions.column("num_records").to_pylist()
    else:
        null_counts = record_counts = [None] * files_total
    files_with_stats = files_lacking = 0
    for stat, nulls, records in zip(stats, null_counts, record_counts):
        if stat is not None:
            files_with_stats += 1
        elif nulls is None or records is None or nulls != records:
            # No statistics, and not known to be all-null: this file's column must be read.
            files_lacking += 1
    known = [stat for stat in stats if stat is not None]
    stats_extreme = _from_micros((max if aggregation == "max" else min)(known)) if known else None

    protocol = table.protocol()
    has_deletion_vectors = "deletionVectors" in (protocol.reader_features or [])
    # Date statistics are exact; timestamp statistics are truncated to milliseconds.
    stats_are_exact = delta_type == "date" or not exact
    if files_lacking == 0 and not has_deletion_vectors and stats_are_exact:
        return Measurement(
            path=location, column=name, aggregation=aggregation, value=stats_extreme,
            source="statistics", table_format="delta", table_version=version,
            files_total=files_total, files_with_stats=files_with_stats, files_read=0,
            elapsed_seconds=time.perf_counter() - started,
        )

    bound = None
    candidates = 0
    if stats_extreme is not None:
        slack = dt.timedelta(0) if delta_type == "date" else _STATS_SLACK
        bound = stats_extreme - slack if aggregation == "max" else stats_extreme + slack
        limit = _to_micros(bound)
        candidates = sum(1 for stat in known if (stat >= limit if aggregation == "max" else stat <= limit))
    try:
        value = _query_extreme(table, name, aggregation, delta_type, bound)
        files_read = candidates + files_lacking
        if value is None and bound is not None:
            # Every row near the statistics' bound is deleted (deletion vectors): the bound was
            # loose, so look at the whole column.
            value = _query_extreme(table, name, aggregation, delta_type, None)
            files_read = files_total
    except Exception as exc:
        raise DeltaMetadataError(
            f"reading column {name!r} of the Delta table at {location} failed: {exc}", location
        ) from None
    source = "scan" if files_with_stats == 0 else "statistics+scan"
    return Measurement(
        path=location, column=name, aggregation=aggregation, value=value, source=source,
        table_format="delta", table_version=version, files_total=files_total,
        files_with_stats=files_with_stats, files_read=files_read,
        elapsed_seconds=time.perf_counter() - started,
    )


def last_commit_time(path: str, *, storage_options: Mapping[str, str] | None = None) -> Measurement:
    """Time of the table's latest commit (Delta), or the newest data file's mtime (Parquet).

    Example::

        last_commit_time("/lake/orders").value   # datetime of the last write, UTC
    """
    started = time.perf_counter()
    location = _normalise_path(path)
    if not is_delta_table(location, storage_options):
        files = _list_parquet_files(location)
        newest = max((f.mtime for f in files if f.mtime is not None), default=None)
        return Measurement(
            path=location, column=None, aggregation="commit", value=newest, source="file_mtime",
            table_format="parquet", table_version=None, files_total=len(files),
            elapsed_seconds=time.perf_counter() - started,
        )
    # The commit time needs no file list: skip loading the add actions (O(1) in table size).
    table = _open_delta(location, storage_options, without_files=True)
    history = table.history(limit=1)
    value = None
    if history:
        entry = history[0]
        # With in-commit timestamps enabled the log's own timestamp is authoritative.
        millis = entry.get("inCommitTimestamp") or entry.get("timestamp")
        if millis is not None:
            value = dt.datetime.fromtimestamp(int(millis) / 1000.0, tz=dt.timezone.utc)
    return Measurement(
        path=location, column=None, aggregation="commit", value=value, source="commit_log",
        table_format="delta", table_version=table.version(), files_total=0,
        elapsed_seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------------------------
# Partition values


def partition_values(
    path: str, column: str, *, storage_options: Mapping[str, str] | None = None
) -> PartitionListing:
    """Distinct values of partition column ``column``: from the Delta log, or from Hive paths.

    Raises :class:`NotPartitionedError` for a table not partitioned by ``column``.

    Example::

        partition_values("/lake/orders", "order_date").values   # (date(2024, 1, 1), ...)
    """
    started = time.perf_counter()
    location = _normalise_path(path)
    if not is_delta_table(location, storage_options):
        listing = _hive_partition_values(location, column)
        return dataclasses.replace(listing, elapsed_seconds=time.perf_counter() - started)

    table = _open_delta(location, storage_options)
    partition_columns = tuple(table.metadata().partition_columns)
    if not partition_columns:
        raise NotPartitionedError(
            f"the Delta table at {location} is not partitioned, so it has no partitions to count "
            f"(completeness needs a table partitioned by {column!r})",
            location,
        )
    try:
        name = _find_column(partition_columns, column, location, what="partition column")
    except ColumnNotFoundError:
        raise NotPartitionedError(
            f"the Delta table at {location} is partitioned by {', '.join(partition_columns)}, "
            f"not by {column!r}",
            location,
        ) from None
    actions = _add_actions(table)
    key = f"partition.{name}"
    values: list[Any] = []
    if key in actions.column_names and actions.num_rows:
        values = _python_values(actions.column(key))
    return PartitionListing(
        path=location, column=name, values=tuple(values), source="delta_log",
        table_format="delta", table_version=table.version(), files_total=actions.num_rows,
        partition_columns=partition_columns, elapsed_seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------------------------
# Plain Parquet directories


@dataclasses.dataclass(frozen=True)
class _DataFile:
    relative: str
    mtime: dt.datetime | None


def _filesystem(location: str):
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(location)
    except Exception as exc:
        raise TableNotFoundError(f"cannot open {location}: {exc}", location) from None


def _list_parquet_files(location: str) -> list[_DataFile]:
    import pyarrow.fs as pafs

    fs, base = _filesystem(location)
    info = fs.get_file_info(base)
    if info.type == pafs.FileType.NotFound:
        raise TableNotFoundError(f"no table at {location}: the path does not exist", location)
    if info.type != pafs.FileType.Directory:
        raise TableNotFoundError(
            f"{location} is a file, not a Delta table or a directory of Parquet files", location
        )
    found = []
    for entry in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        if entry.type != pafs.FileType.File:
            continue
        relative = posixpath.relpath(entry.path, base)
        # Spark/Hive bookkeeping (_SUCCESS, _temporary/, .crc) is not data.
        if any(part.startswith(("_", ".")) for part in relative.split("/")):
            continue
        mtime = entry.mtime
        if mtime is not None and mtime.tzinfo is None:
            mtime = mtime.replace(tzinfo=dt.timezone.utc)
        found.append(_DataFile(relative, mtime))
    if not found:
        raise TableNotFoundError(
            f"no table at {location}: no _delta_log and no data files", location
        )
    return found


def _hive_segments(relative: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for part in relative.split("/")[:-1]:
        if "=" not in part:
            continue
        key, _, raw = part.partition("=")
        value = urllib.parse.unquote(raw)  # Hive escapes ':' and '/' as %3A, %2F
        out[urllib.parse.unquote(key)] = None if value == HIVE_NULL else value
    return out


def _hive_partition_values(location: str, column: str) -> PartitionListing:
    files = _list_parquet_files(location)
    keys: list[str] = []
    values: set[str | None] = set()
    for data_file in files:
        segments = _hive_segments(data_file.relative)
        for key in segments:
            if key not in keys:
                keys.append(key)
    if not keys:
        raise NotPartitionedError(
            f"{location} is not a Delta table and has no Hive-style partition folders "
            f"({column}=<value>/), so it has no partitions to count",
            location,
        )
    name = column
    if column not in keys:
        folded = [k for k in keys if k.lower() == column.lower()]
        if len(folded) != 1:
            raise NotPartitionedError(
                f"the Parquet directory {location} is partitioned by {', '.join(keys)}, "
                f"not by {column!r}",
                location,
            )
        name = folded[0]
    for data_file in files:
        segments = _hive_segments(data_file.relative)
        if name in segments:
            values.add(segments[name])
    return PartitionListing(
        path=location, column=name, values=tuple(sorted(values, key=lambda v: (v is None, v or ""))),
        source="hive_paths", table_format="parquet", table_version=None,
        files_total=len(files), partition_columns=tuple(keys),
    )


def _parquet_newest(location: str, column: str, aggregation: str) -> Measurement:
    import pyarrow.dataset as pads

    files = _list_parquet_files(location)
    keys: list[str] = []
    for data_file in files:
        for key in _hive_segments(data_file.relative):
            if key not in keys:
                keys.append(key)
    if column in keys or any(k.lower() == column.lower() for k in keys):
        listing = _hive_partition_values(location, column)
        value = _extreme(listing.values, aggregation, location, listing.column)
        return Measurement(
            path=location, column=listing.column, aggregation=aggregation, value=value,
            source="hive_paths", table_format="parquet", table_version=None,
            files_total=len(files),
        )
    fs, base = _filesystem(location)
    try:
        dataset = pads.dataset(
            base, filesystem=fs, format="parquet", partitioning="hive",
            ignore_prefixes=["_", "."],
        )
    except Exception as exc:
        raise DeltaMetadataError(f"cannot read Parquet files under {location}: {exc}", location) from None
    name = _find_column(dataset.schema.names, column, location)
    arrow_type = dataset.schema.field(name).type
    if not (pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type)):
        raise ColumnTypeError(
            f"column {name!r} of {location} is of type {arrow_type}, not a timestamp or date: "
            "freshness needs a timestamp or date column",
            location,
        )
    value = _extreme_micros(dataset.to_table(columns=[name]).column(name), aggregation)
    return Measurement(
        path=location, column=name, aggregation=aggregation,
        value=value, source="scan", table_format="parquet",
        table_version=None, files_total=len(files), files_read=len(files),
    )


# --------------------------------------------------------------------------------------------
# Evaluations shared by the sensors and their triggers


def _reference(reference_time: dt.datetime | str | None) -> dt.datetime:
    if reference_time is None or reference_time == "":
        return dt.datetime.now(dt.timezone.utc)
    try:
        return to_utc(reference_time)
    except PartitionValueError as exc:
        raise DeltaMetadataError(f"reference_time: {exc}") from None


def evaluate_freshness(
    path: str,
    timestamp_column: str | None,
    max_age_hours: float,
    *,
    aggregation: str = "max",
    reference_time: dt.datetime | str | None = None,
    measure: str = "column",
    storage_options: Mapping[str, str] | None = None,
    exact: bool = True,
) -> FreshnessResult:
    """Is the table fresh? ``measure="column"``: age of ``max``/``min`` of ``timestamp_column``;
    ``measure="commit"``: age of the last commit. ``reference_time`` defaults to now (UTC).

    A column with no non-null value (an empty table) is not fresh.

    Example::

        result = evaluate_freshness("/lake/orders", "created_at", max_age_hours=6)
        result.passed, result.age_hours
    """
    if measure not in ("column", "commit"):
        raise DeltaMetadataError(f"measure {measure!r} is not 'column' or 'commit'")
    reference = _reference(reference_time)
    if measure == "commit":
        measurement = last_commit_time(path, storage_options=storage_options)
    else:
        if not timestamp_column:
            raise DeltaMetadataError("freshness needs a timestamp_column (or measure='commit')")
        measurement = newest_timestamp(
            path, timestamp_column, aggregation, storage_options=storage_options, exact=exact
        )
    what = "last commit" if measure == "commit" else f"{measurement.aggregation}({measurement.column})"
    if measurement.value is None:
        return FreshnessResult(
            passed=False, age_hours=None, max_age_hours=float(max_age_hours),
            reference_time=reference, measurement=measurement,
            message=f"{what} of {measurement.path}: no value yet (no rows with a non-null value), "
            "so not fresh",
        )
    age = age_hours(reference, measurement.value)
    passed = age <= float(max_age_hours)
    verdict = "fresh" if passed else "stale"
    return FreshnessResult(
        passed=passed, age_hours=age, max_age_hours=float(max_age_hours),
        reference_time=reference, measurement=measurement,
        message=(
            f"{what} = {_iso(measurement.value)}, reference {_iso(reference)}: age {age:.3f} h "
            f"{'≤' if passed else '>'} max {float(max_age_hours):g} h → {verdict}"
        ),
    )


def evaluate_completeness(
    path: str,
    partition_column: str,
    granularity: str,
    *,
    lookback_days: float = 30,
    max_gap_count: int = 0,
    allow_future_gaps: bool = True,
    reference_time: dt.datetime | str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CompletenessResult:
    """Are the partitions of the lookback window complete? (semantics: ``contract.timeliness``)

    Example::

        result = evaluate_completeness("/lake/orders", "order_date", "daily", lookback_days=7)
        result.passed, result.report.missing_labels()
    """
    try:
        check_granularity(granularity)
    except ValueError as exc:
        raise DeltaMetadataError(str(exc)) from None
    reference = _reference(reference_time)
    listing = partition_values(path, partition_column, storage_options=storage_options)
    try:
        report = count_gaps(
            listing.values, reference, granularity,
            lookback_days=lookback_days, allow_future_gaps=allow_future_gaps,
        )
    except PartitionValueError as exc:
        raise ColumnTypeError(
            f"partition column {listing.column!r} of {listing.path} holds a value that is not a "
            f"time: {exc}",
            listing.path,
        ) from None
    except ValueError as exc:
        raise DeltaMetadataError(str(exc), listing.path) from None
    passed = report.passes(max_gap_count)
    return CompletenessResult(
        passed=passed, max_gap_count=int(max_gap_count), report=report, listing=listing,
        message=(
            f"{listing.column} of {listing.path}: {report.describe()} "
            f"{'≤' if passed else '>'} max {max_gap_count} → {'complete' if passed else 'incomplete'}"
        ),
    )
