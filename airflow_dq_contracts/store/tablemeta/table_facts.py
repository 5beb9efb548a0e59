"""What the metadata readers answer, and the errors they raise: measurements, partition listings, verdicts.

Shared by the Delta log reader (:mod:`airflow_dq_contracts.store.tablemeta.delta_log`) and the plain-Parquet
fallback (:mod:`airflow_dq_contracts.store.tablemeta.parquet_dir`); the sensors and their triggers hand the
results on as XCom values and trigger events (``to_dict``).

Errors are the store's (:class:`~airflow_dq_contracts.store.delta.StoreError`): a table's metadata
that cannot answer the question is a ``StoreError`` (also known as :data:`DeltaMetadataError`), a
missing table the store's :class:`~airflow_dq_contracts.store.delta.TableNotFoundError`.

Times are compared as int64 microseconds since the epoch (UTC). Besides being exact, this keeps
pyarrow from importing pandas, which it does to turn a tz-aware value into Python (1-2 s per
process: every reschedule-mode poke is a new process).

Example::

    >>> m = Measurement(path="/t", column="c", aggregation="max", value=None, source="statistics",
    ...                 table_format="delta", table_version=0, files_total=0)
    >>> m.describe()
    'max(c) = none (no values) from statistics [delta v0: 0 files, 0 with statistics, 0 read, 0 ms]'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_dq_contracts.contract.timeliness import AGGREGATIONS, GapReport
from airflow_dq_contracts.store.delta import StoreError, TableNotFoundError
from airflow_dq_contracts.timeutil import TimeValueError, format_time, from_epoch_micros, to_utc

__all__ = [
    "ColumnNotFoundError",
    "ColumnTypeError",
    "CompletenessResult",
    "DeltaMetadataError",
    "FreshnessResult",
    "Measurement",
    "NotPartitionedError",
    "PartitionListing",
    "TableNotFoundError",
    "check_aggregation",
    "distinct_values",
    "epoch_micros",
    "extreme_micros",
    "extreme_time",
    "find_column",
]

#: A table's metadata cannot answer the question; the message says why and where (``.path``).
#: The store's one error family: the name the sensors have always caught.
DeltaMetadataError = StoreError

_MICROS_PER_DAY = 86_400_000_000


class ColumnNotFoundError(StoreError):
    """The column is not in the table's schema."""


class ColumnTypeError(StoreError):
    """The column holds no timestamps (or a partition value is not a time)."""


class NotPartitionedError(StoreError):
    """The table is not partitioned, or not by the requested column."""


# --------------------------------------------------------------------------------------------
# Results


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
            f"{what} = {format_time(self.value) or 'none (no values)'} from {self.source} "
            f"[{self.table_format}{version}: {self.files_total} files, "
            f"{self.files_with_stats} with statistics, {self.files_read} read, "
            f"{self.elapsed_seconds * 1000:.0f} ms]"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the value as ISO-8601 with ``Z``)."""
        out = dataclasses.asdict(self)
        out["value"] = format_time(self.value)
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
    """Outcome of a freshness evaluation: passes when ``age_hours ≤ max_age_hours``."""

    passed: bool
    age_hours: float | None
    max_age_hours: float
    reference_time: dt.datetime
    measurement: Measurement
    message: str
    #: set when the measured time lies after the reference beyond the clock skew (``timeliness.freshness_age``)
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (XCom value, trigger event payload); ``warning`` only when there is one."""
        out = {
            "check": "freshness",
            "passed": self.passed,
            "age_hours": self.age_hours,
            "max_age_hours": self.max_age_hours,
            "reference_time": format_time(self.reference_time),
            "message": self.message,
            "measurement": self.measurement.to_dict(),
        }
        if self.warning:
            out["warning"] = self.warning
        return out


@dataclasses.dataclass(frozen=True)
class CompletenessResult:
    """Outcome of a completeness evaluation: passes when ``gap_count ≤ max_gap_count``."""

    passed: bool
    max_gap_count: int
    report: GapReport
    listing: PartitionListing
    message: str

    @property
    def gap_count(self) -> int:
        """Expected periods with no partition."""
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
# Columns and times


def find_column(names: Iterable[str], column: str, path: str, what: str = "column") -> str:
    """``column`` as the table spells it (exact, else the one case-insensitive match), or :class:`ColumnNotFoundError`.

    >>> find_column(["Created_At", "id"], "created_at", "/t")
    'Created_At'
    """
    names = list(names)
    if column in names:
        return column
    folded = [n for n in names if n.lower() == column.lower()]
    if len(folded) == 1:  # Spark resolves names case-insensitively by default
        return folded[0]
    raise ColumnNotFoundError(
        f"{what} {column!r} is not in the table at {path}; its columns are: {', '.join(names) or '(none)'}",
        path,
    )


def check_aggregation(aggregation: str) -> str:
    """``aggregation`` if it is ``max`` or ``min``; a :class:`DeltaMetadataError` otherwise."""
    if aggregation not in AGGREGATIONS:
        raise DeltaMetadataError(f"aggregation {aggregation!r} is not one of {', '.join(AGGREGATIONS)}")
    return aggregation


def extreme_time(values: Iterable[Any], aggregation: str, path: str, column: str) -> dt.datetime | None:
    """max/min of Python values that are times (datetimes, dates, ISO text, e.g. partition values); None if none.

    >>> extreme_time(["2024-01-02", None, "2024-01-01"], "min", "/t", "d").isoformat()
    '2024-01-01T00:00:00+00:00'
    """
    best: dt.datetime | None = None
    for raw in values:
        if raw is None:
            continue
        try:
            moment = to_utc(raw)
        except TimeValueError as exc:
            raise ColumnTypeError(
                f"column {column!r} of {path} holds a value that is not a time: {exc}", path
            ) from None
        if best is None or (moment > best if aggregation == "max" else moment < best):
            best = moment
    return best


def epoch_micros(array: pa.ChunkedArray | pa.Array) -> list[int | None]:
    """Times as microseconds since the epoch (UTC); nulls stay ``None``."""
    kind = array.type
    if pa.types.is_timestamp(kind):
        # Dropping the zone keeps the stored UTC instant; naive (ntz) values are UTC already.
        micros: list[int | None] = pc.cast(pc.cast(array, pa.timestamp("us"), safe=False), pa.int64()).to_pylist()
        return micros
    if pa.types.is_date(kind):
        days = pc.cast(pc.cast(array, pa.date32()), pa.int32()).to_pylist()
        return [None if d is None else d * _MICROS_PER_DAY for d in days]
    raise TypeError(f"not a time type: {kind}")


def extreme_micros(array: pa.ChunkedArray | pa.Array, aggregation: str) -> dt.datetime | None:
    """max/min of a time column in Arrow (a scan may return millions of values)."""
    kind = array.type
    if pa.types.is_timestamp(kind):
        ints, scale = pc.cast(pc.cast(array, pa.timestamp("us"), safe=False), pa.int64()), 1
    elif pa.types.is_date(kind):
        ints, scale = pc.cast(pc.cast(array, pa.date32()), pa.int32()), _MICROS_PER_DAY
    else:
        raise TypeError(f"not a time type: {kind}")
    extreme = (pc.max(ints) if aggregation == "max" else pc.min(ints)).as_py()
    return None if extreme is None else from_epoch_micros(extreme * scale)


def distinct_values(array: pa.ChunkedArray) -> list[Any]:
    """Distinct values as Python objects; timestamps as aware UTC datetimes."""
    distinct = pc.unique(array)
    if pa.types.is_timestamp(distinct.type):
        return [from_epoch_micros(v) for v in epoch_micros(distinct)]
    values: list[Any] = distinct.to_pylist()
    return values
