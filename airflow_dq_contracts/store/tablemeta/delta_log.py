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

Plain Parquet folders (no ``_delta_log``)
    Read by :mod:`airflow_dq_contracts.store.tablemeta.parquet_dir`: Hive-style partition values from the paths,
    a data column alone with pyarrow, the "commit" time as the newest file's mtime.

Catalog names
    :func:`resolve_table_path` (:func:`airflow_dq_contracts.storage.locations.resolve_location`) finds a name
    where the last job that used it found it in its catalog (:mod:`airflow_dq_contracts.storage.catalog_names`),
    else maps ``db.table`` to Spark's default layout ``<warehouse>/<db>.db/<table>`` (``table`` alone:
    ``<warehouse>/<table>``), the warehouse being an argument or ``$DQ_CONTRACTS_WAREHOUSE``.

Every failure the user can cause is a :class:`DeltaMetadataError` (the store's
:class:`~airflow_dq_contracts.store.delta.StoreError`) with a readable message; results and errors
live in :mod:`airflow_dq_contracts.store.tablemeta.table_facts`. :class:`FreshnessQuery` and
:class:`CompletenessQuery` are one sensor question each, as the sensor asks it and its trigger
polls it.

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
import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from airflow_dq_contracts.contract.timeliness import check_granularity, count_gaps, freshness_age
from airflow_dq_contracts.storage.locations import WAREHOUSE_ENV, StoreError, TableLocation, resolve_location
from airflow_dq_contracts.store.delta import open_table, table_exists
from airflow_dq_contracts.store.tablemeta.log_reader import (
    LogSnapshot,
    UnsupportedFeatureError,
    finish_extreme,
    plan_extreme,
    read_log,
)
from airflow_dq_contracts.store.tablemeta.parquet_dir import (
    HIVE_NULL,
    hive_partition_values,
    list_parquet_files,
    parquet_newest,
)
from airflow_dq_contracts.store.tablemeta.table_facts import (
    ColumnNotFoundError,
    ColumnTypeError,
    CompletenessResult,
    DeltaMetadataError,
    FreshnessResult,
    Measurement,
    NotPartitionedError,
    PartitionListing,
    TableNotFoundError,
    check_aggregation,
    distinct_values,
    epoch_micros,
    extreme_micros,
    extreme_time,
    find_column,
)
from airflow_dq_contracts.timeutil import (
    UTC,
    TimeValueError,
    format_time,
    from_epoch_micros,
    to_epoch_micros,
    to_utc,
    utcnow,
)

__all__ = [
    "HIVE_NULL",
    "DELTA_RS_SCANS",
    "TIMESTAMP_TYPES",
    "WAREHOUSE_ENV",
    "ColumnNotFoundError",
    "ColumnTypeError",
    "CompletenessQuery",
    "CompletenessResult",
    "DeltaMetadataError",
    "FreshnessQuery",
    "FreshnessResult",
    "Measurement",
    "NotPartitionedError",
    "PartitionListing",
    "TableNotFoundError",
    "add_actions",
    "evaluate_completeness",
    "evaluate_freshness",
    "is_delta_table",
    "open_snapshot",
    "last_commit_time",
    "newest_timestamp",
    "partition_values",
    "query_column",
    "query_extreme",
    "resolve_table_path",
]

TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz", "date")
# Delta stores timestamp statistics truncated to milliseconds; one more millisecond of slack
# also covers writers that round instead of truncating.
_STATS_SLACK = dt.timedelta(milliseconds=1)

#: A catalog table's location: where a job found it in its catalog (store/catalog_names.py), else
#: Spark's warehouse layout (the store's one implementation, :func:`~airflow_dq_contracts.storage.locations.resolve_location`).
resolve_table_path = resolve_location
#: Whether a location holds a Delta table (an unreachable store counts as "no").
is_delta_table = table_exists


def _field_type(field: Any) -> str:
    kind = getattr(field.type, "type", None)
    if isinstance(kind, str):
        return kind
    return type(field.type).__name__.replace("Type", "").lower()  # struct / array / map


def _add_actions(table: Any) -> pa.Table:
    # delta-rs returns an arro3 record batch; pyarrow takes it through the Arrow C interfaces.
    actions = table.get_add_actions(flatten=True)
    if hasattr(actions, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(actions).read_all()
    # arro3-core before 0.9 (the newest on Python 3.10) exports a batch as an array only.
    return pa.Table.from_batches([pa.record_batch(actions)])


def _sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_literal(moment: dt.datetime, delta_type: str) -> str:
    if delta_type == "date":
        return f"DATE '{moment.date().isoformat()}'"
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    if delta_type == "timestamp":
        return f"TIMESTAMP '{text}+00:00'"
    return f"TIMESTAMP '{text}'"  # timestamp_ntz: a wall-clock value, naive = UTC


def _query_extreme(
    table: Any, column: str, aggregation: str, delta_type: str, bound: dt.datetime | None, where: str | None = None
) -> dt.datetime | None:
    from deltalake import QueryBuilder

    sql = f"SELECT {aggregation}({_sql_ident(column)}) AS extreme FROM t"
    clauses = [f"({where})"] if where else []
    if bound is not None:
        op = ">=" if aggregation == "max" else "<="
        clauses.append(f"{_sql_ident(column)} {op} {_sql_literal(bound, delta_type)}")
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    result = pa.RecordBatchReader.from_stream(QueryBuilder().register("t", table).execute(sql)).read_all()
    if result.num_rows == 0:
        return None
    return extreme_micros(result.column(0), aggregation)


def _query_column(table: Any, select: str, where: Sequence[str] = ()) -> pa.ChunkedArray:
    """The first column of ``SELECT <select> FROM t [WHERE …]`` run by delta-rs over ``table``.

    delta-rs applies deletion vectors and column mapping and skips the files whose statistics
    rule the predicate out, so a narrow predicate reads a few files' column only.
    """
    from deltalake import QueryBuilder

    sql = f"SELECT {select} FROM t"
    if where:
        sql += " WHERE " + " AND ".join(f"({clause})" for clause in where)
    result = pa.RecordBatchReader.from_stream(QueryBuilder().register("t", table).execute(sql)).read_all()
    return result.column(0)


#: The engine's statistics-first evaluation (``engine/statistics_first.py``) reads the log the same way:
#: the add actions as one Arrow table, and a time column's exact extreme by a narrow delta-rs query
#: (``where``: an extra DataFusion predicate, e.g. the run's partitions).
add_actions = _add_actions
query_extreme = _query_extreme
#: ... and, where some files' statistics cannot say, a metric over those files by a narrow delta-rs query.
query_column = _query_column


def _where(path: TableLocation | str, storage_options: Mapping[str, str] | None) -> TableLocation:
    """The table as a value: a :class:`TableLocation` used as given (never normalised again; ``storage_options``
    only when it carries none), a path or URI normalised here, once."""
    if isinstance(path, TableLocation):
        return TableLocation.of(path, storage_options=storage_options)
    return TableLocation.at(path, storage_options=storage_options)


#: Reader features delta-rs's scan reads; a table requiring any other (``typeWidening``, ``variantType``…)
#: is read by the log reader (:mod:`airflow_dq_contracts.store.tablemeta.log_reader`).
DELTA_RS_SCANS = frozenset({"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})


def open_snapshot(
    location: str, storage_options: Mapping[str, str] | None, version: int | None = None
) -> tuple[Any, LogSnapshot | None]:
    """(delta-rs table or None, the log read directly or None): the log reader where delta-rs cannot scan.

    delta-rs opens a table whose data it cannot scan (``Unsupported table features required:
    [TypeWidening]`` comes at the first read), so the protocol decides; a log delta-rs cannot open at
    all is read directly too. A feature neither reads is an :class:`UnsupportedFeatureError` naming it.
    """
    try:
        table = open_table(location, storage_options=storage_options, version=version)
    except TableNotFoundError:
        raise
    except StoreError as exc:
        try:
            return None, read_log(location, storage_options)
        except UnsupportedFeatureError:
            raise
        except StoreError:
            # A log that cannot be opened after all (a writer creating the table, a corrupt or
            # unreachable log) is "not found" to a sensor, which may wait for it.
            raise TableNotFoundError(str(exc), location) from exc
    if set(table.protocol().reader_features or []) - DELTA_RS_SCANS:
        return table, read_log(location, storage_options)
    return table, None


def _newest_from_log(snapshot: LogSnapshot, column: str, aggregation: str, exact: bool, started: float) -> Measurement:
    """:func:`newest_timestamp` of a table delta-rs cannot scan: statistics, then the candidate files' column."""
    location = snapshot.location
    top_level = [str(f["name"]) for f in snapshot.fields]
    name = find_column(top_level, column, location)
    delta_type = snapshot.columns[name].type if name in snapshot.columns else "struct"
    files_total = len(snapshot.files)

    def measured(value: dt.datetime | None, source: str, **counts: int) -> Measurement:
        elapsed = time.perf_counter() - started
        return Measurement(
            location, name, aggregation, value, source, "delta", snapshot.version, files_total, **counts,
            elapsed_seconds=elapsed,
        )  # fmt: skip

    if name in snapshot.partition_columns:
        values = snapshot.stat_values("partition", name)
        return measured(extreme_time(values, aggregation, location, name), "partition_values")
    if delta_type not in TIMESTAMP_TYPES:
        raise ColumnTypeError(
            f"column {name!r} of {location} is of type {delta_type}, not a timestamp or date: "
            "the freshness sensor needs a timestamp, timestamp_ntz or date column",
            location,
        )
    plan = plan_extreme(snapshot, name, aggregation, exact=exact)
    value = finish_extreme(snapshot, plan)
    moment: dt.datetime | None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        moment = dt.datetime.combine(value, dt.time(0), UTC)
    else:
        moment = None if value is None else from_epoch_micros(value)
    source = "statistics" if not plan.reads else "scan" if plan.files_with_stats == 0 else "statistics+scan"
    return measured(moment, source, files_with_stats=plan.files_with_stats, files_read=len(plan.reads))


def newest_timestamp(
    path: TableLocation | str,
    column: str,
    aggregation: str = "max",
    *,
    storage_options: Mapping[str, str] | None = None,
    exact: bool = True,
) -> Measurement:
    """Newest (``max``) or oldest (``min``) value of ``column``, from metadata.

    See the module docstring for how statistics, partition values and the narrow fallback read
    combine. ``path`` is a path/URI or a resolved :class:`TableLocation` (read where it says, with its
    options). Raises :class:`TableNotFoundError`, :class:`ColumnNotFoundError` or
    :class:`ColumnTypeError` (the column is not a timestamp/date, or a partition value is no time).

    Example::

        m = newest_timestamp("/lake/orders", "created_at")
        print(m.value, m.source, m.files_read)
    """
    check_aggregation(aggregation)
    started = time.perf_counter()
    where = _where(path, storage_options)
    location, storage_options = where.uri, where.options
    if not table_exists(location, storage_options):
        measurement = parquet_newest(location, column, aggregation, storage_options)
        return dataclasses.replace(measurement, elapsed_seconds=time.perf_counter() - started)

    table, snapshot = open_snapshot(location, storage_options)
    if snapshot is not None:
        return _newest_from_log(snapshot, column, aggregation, exact, started)
    fields = {f.name: f for f in table.schema().fields}
    name = find_column(fields, column, location)
    delta_type = _field_type(fields[name])
    partition_columns = list(table.metadata().partition_columns)
    version = table.version()
    actions = _add_actions(table)
    files_total = actions.num_rows

    def measured(value: dt.datetime | None, source: str, **counts: int) -> Measurement:
        """The measurement of this table's column (fields in :class:`Measurement`'s order), timed from the start."""
        elapsed = time.perf_counter() - started
        return Measurement(
            location, name, aggregation, value, source, "delta", version, files_total, **counts, elapsed_seconds=elapsed
        )

    if name in partition_columns:
        key = f"partition.{name}"
        values = distinct_values(actions.column(key)) if key in actions.column_names else []
        return measured(extreme_time(values, aggregation, location, name), "partition_values")

    if delta_type not in TIMESTAMP_TYPES:
        raise ColumnTypeError(
            f"column {name!r} of {location} is of type {delta_type}, not a timestamp or date: "
            "the freshness sensor needs a timestamp, timestamp_ntz or date column"
            + (
                " (text timestamps cannot be ordered from file statistics; check them with the "
                "contract's freshness check in Spark instead)"
                if delta_type == "string"
                else ""
            ),
            location,
        )

    if files_total == 0:
        return measured(None, "statistics")

    # Statistics are keyed by the column's physical name under column mapping (a renamed column keeps them).
    physical = str((fields[name].metadata or {}).get("delta.columnMapping.physicalName", name))
    stat_key, null_key = f"{aggregation}.{physical}", f"null_count.{physical}"
    # Plain Python over one value per file: cheap for thousands of files, and pyarrow compute
    # with Python literals would import pandas (see table_facts).
    stats: list[int | None] = (
        epoch_micros(actions.column(stat_key))
        if stat_key in actions.column_names
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
    stats_extreme = from_epoch_micros((max if aggregation == "max" else min)(known)) if known else None

    protocol = table.protocol()
    has_deletion_vectors = "deletionVectors" in (protocol.reader_features or [])
    # Date statistics are exact; timestamp statistics are truncated to milliseconds.
    stats_are_exact = delta_type == "date" or not exact
    if files_lacking == 0 and not has_deletion_vectors and stats_are_exact:
        return measured(stats_extreme, "statistics", files_with_stats=files_with_stats)

    bound = None
    candidates = 0
    if stats_extreme is not None:
        slack = dt.timedelta(0) if delta_type == "date" else _STATS_SLACK
        bound = stats_extreme - slack if aggregation == "max" else stats_extreme + slack
        limit = to_epoch_micros(bound)
        candidates = sum(1 for stat in known if (stat >= limit if aggregation == "max" else stat <= limit))
    try:
        value = _query_extreme(table, name, aggregation, delta_type, bound)
        files_read = candidates + files_lacking
        if value is None and bound is not None:
            # Every row near the statistics' bound is deleted (deletion vectors): the bound was
            # loose, so look at the whole column.
            value = _query_extreme(table, name, aggregation, delta_type, None)
            files_read = files_total
    except Exception as exc:  # noqa: BLE001 - DataFusion raises its own, OSError and arrow errors alike
        raise DeltaMetadataError(
            f"reading column {name!r} of the Delta table at {location} failed: {exc}", location
        ) from None
    source = "scan" if files_with_stats == 0 else "statistics+scan"
    return measured(value, source, files_with_stats=files_with_stats, files_read=files_read)


def last_commit_time(path: TableLocation | str, *, storage_options: Mapping[str, str] | None = None) -> Measurement:
    """Time of the table's latest commit (Delta), or the newest data file's mtime (Parquet).

    Example::

        last_commit_time("/lake/orders").value   # datetime of the last write, UTC
    """
    started = time.perf_counter()
    where = _where(path, storage_options)
    location, storage_options = where.uri, where.options
    if not table_exists(location, storage_options):
        files = list_parquet_files(location, storage_options)
        newest = max((f.mtime for f in files if f.mtime is not None), default=None)
        elapsed = time.perf_counter() - started
        return Measurement(
            location, None, "commit", newest, "file_mtime", "parquet", None, len(files), elapsed_seconds=elapsed
        )
    table, snapshot = open_snapshot(location, storage_options)
    if snapshot is not None:
        millis = snapshot.commit_millis()
        return Measurement(
            location, None, "commit", None if millis is None else from_epoch_micros(millis * 1000), "commit_log",
            "delta", snapshot.version, 0, elapsed_seconds=time.perf_counter() - started,
        )  # fmt: skip
    history = table.history(limit=1)
    value = None
    if history:
        entry = history[0]
        # With in-commit timestamps enabled the log's own timestamp is authoritative.
        millis = entry.get("inCommitTimestamp") or entry.get("timestamp")
        if millis is not None:
            value = from_epoch_micros(int(millis) * 1000)
    elapsed = time.perf_counter() - started
    return Measurement(
        location, None, "commit", value, "commit_log", "delta", table.version(), 0, elapsed_seconds=elapsed
    )


# --------------------------------------------------------------------------------------------
# Partition values


def partition_values(
    path: TableLocation | str, column: str, *, storage_options: Mapping[str, str] | None = None
) -> PartitionListing:
    """Distinct values of partition column ``column``: from the Delta log, or from Hive paths.

    Raises :class:`NotPartitionedError` for a table not partitioned by ``column``.

    Example::

        partition_values("/lake/orders", "order_date").values   # (date(2024, 1, 1), ...)
    """
    started = time.perf_counter()
    where = _where(path, storage_options)
    location, storage_options = where.uri, where.options
    if not table_exists(location, storage_options):
        listing = hive_partition_values(location, column, storage_options)
        return dataclasses.replace(listing, elapsed_seconds=time.perf_counter() - started)

    table, snapshot = open_snapshot(location, storage_options)
    partition_columns = tuple(table.metadata().partition_columns if snapshot is None else snapshot.partition_columns)
    if not partition_columns:
        raise NotPartitionedError(
            f"the Delta table at {location} is not partitioned, so it has no partitions to count "
            f"(completeness needs a table partitioned by {column!r})",
            location,
        )
    try:
        name = find_column(partition_columns, column, location, what="partition column")
    except ColumnNotFoundError:
        raise NotPartitionedError(
            f"the Delta table at {location} is partitioned by {', '.join(partition_columns)}, not by {column!r}",
            location,
        ) from None
    values: list[Any] = []
    if snapshot is not None:  # plain Python: building Arrow arrays from Python values would import pandas
        raw = snapshot.stat_values("partition", name)
        values = list(dict.fromkeys(v.replace(tzinfo=UTC) if isinstance(v, dt.datetime) else v for v in raw))
        files_total, version = len(snapshot.files), snapshot.version
    else:
        actions = _add_actions(table)
        key = f"partition.{name}"
        if key in actions.column_names and actions.num_rows:
            values = distinct_values(actions.column(key))
        files_total, version = actions.num_rows, table.version()
    return PartitionListing(
        path=location,
        column=name,
        values=tuple(values),
        source="delta_log",
        table_format="delta",
        table_version=version,
        files_total=files_total,
        partition_columns=partition_columns,
        elapsed_seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------------------------
# Evaluations shared by the sensors and their triggers


def _reference(reference_time: dt.datetime | str | None) -> dt.datetime:
    if reference_time is None or reference_time == "":
        return utcnow()
    try:
        return to_utc(reference_time)
    except TimeValueError as exc:
        raise DeltaMetadataError(f"reference_time: {exc}") from None


def evaluate_freshness(
    path: TableLocation | str,
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
    result = functools.partial(
        FreshnessResult, max_age_hours=float(max_age_hours), reference_time=reference, measurement=measurement
    )
    if measurement.value is None:
        message = f"{what} of {measurement.path}: no value yet (no rows with a non-null value), so not fresh"
        return result(passed=False, age_hours=None, message=message)
    # Within the clock skew a timestamp after the reference is age 0; beyond it the reference is wrong: the
    # sensor still counts the data as fresh (it is newer than asked) but says so in ``warning``.
    measured = freshness_age(reference, measurement.value, what)
    age = measured.age_hours
    passed = age <= float(max_age_hours)
    verdict = "fresh" if passed else "stale"
    if measured.problem:
        verdict += " (the data is newer than the reference time, see the warning)"
    return result(
        passed=passed,
        age_hours=age,
        message=(
            f"{what} = {format_time(measurement.value)}, reference {format_time(reference)}: age {age:.3f} h "
            f"{'≤' if passed else '>'} max {float(max_age_hours):g} h → {verdict}"
        ),
        warning=measured.problem,
    )


def evaluate_completeness(
    path: TableLocation | str,
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
            listing.values,
            reference,
            granularity,
            lookback_days=lookback_days,
            allow_future_gaps=allow_future_gaps,
        )
    except TimeValueError as exc:
        raise ColumnTypeError(
            f"partition column {listing.column!r} of {listing.path} holds a value that is not a time: {exc}",
            listing.path,
        ) from None
    except ValueError as exc:
        raise DeltaMetadataError(str(exc), listing.path) from None
    passed = report.passes(max_gap_count)
    return CompletenessResult(
        passed=passed,
        max_gap_count=int(max_gap_count),
        report=report,
        listing=listing,
        message=(
            f"{listing.column} of {listing.path}: {report.describe()} "
            f"{'≤' if passed else '>'} max {max_gap_count} → {'complete' if passed else 'incomplete'}"
        ),
    )


# --------------------------------------------------------------------------------------------
# One sensor question, as the sensor asks it and its trigger polls it


class _TableQuery:
    """What both questions share: the table (``path``, raw ``storage_options``) and their forms as arguments."""

    path: str
    storage_options: dict[str, str] | None

    def _coerce(self, **kinds: Any) -> None:
        """Each field named in ``kinds`` converted by its function; the options as a plain dict (or None)."""
        for name, kind in {**kinds, "storage_options": lambda o: dict(o) if o else None}.items():
            object.__setattr__(self, name, kind(getattr(self, name)))

    def _arguments(self, where: TableLocation | None) -> dict[str, Any]:
        """The evaluation's keyword arguments: the fields, the table ``where`` when the caller resolved it."""
        return {**vars(self), "path": where or self.path}

    def to_kwargs(self) -> dict[str, Any]:
        """The fields as JSON-ready keyword arguments (the trigger's serialised form)."""
        return dataclasses.asdict(cast(Any, self))


@dataclasses.dataclass(frozen=True)
class FreshnessQuery(_TableQuery):
    """A freshness question (arguments of :func:`evaluate_freshness`), stated once.

    The sensor builds it from its arguments and its contract check; its trigger carries it as
    plain JSON keyword arguments (:meth:`to_kwargs`) and rebuilds it in the triggerer.

    >>> FreshnessQuery("/lake/orders", "created_at", 6).to_kwargs()["max_age_hours"]
    6.0
    """

    path: str
    timestamp_column: str | None
    max_age_hours: float
    aggregation: str = "max"
    reference_time: str | None = None
    measure: str = "column"
    storage_options: dict[str, str] | None = None
    exact: bool = True

    def __post_init__(self) -> None:
        self._coerce(max_age_hours=float, exact=bool)

    def evaluate(self, where: TableLocation | None = None) -> FreshnessResult:
        """Look at the table once (blocking: delta-rs reads the log); ``where``: :attr:`path` resolved by the caller."""
        return evaluate_freshness(**self._arguments(where))


@dataclasses.dataclass(frozen=True)
class CompletenessQuery(_TableQuery):
    """A completeness question (arguments of :func:`evaluate_completeness`), stated once.

    >>> CompletenessQuery("/lake/orders", "order_date", "daily", max_gap_count=1.0).to_kwargs()["max_gap_count"]
    1
    """

    path: str
    partition_column: str
    granularity: str
    lookback_days: float = 30
    max_gap_count: int = 0
    allow_future_gaps: bool = True
    reference_time: str | None = None
    storage_options: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self._coerce(max_gap_count=int, allow_future_gaps=bool)

    def evaluate(self, where: TableLocation | None = None) -> CompletenessResult:
        """Look at the table once (blocking: delta-rs reads the log); ``where``: :attr:`path` resolved by the caller."""
        return evaluate_completeness(**self._arguments(where))
