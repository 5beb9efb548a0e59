"""Plain Parquet folders (no ``_delta_log``): the metadata readers' fallback.

Hive-style partition values come from the paths (``order_date=2024-01-31/part-0.parquet``); a data
column is read alone with pyarrow; the "commit" time of such a folder is its newest file's mtime.

Example::

    >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq, os
    >>> folder = tempfile.mkdtemp()
    >>> os.makedirs(f"{folder}/order_date=2024-01-31")
    >>> pq.write_table(pa.table({"n": [1]}), f"{folder}/order_date=2024-01-31/part-0.parquet")
    >>> hive_partition_values(folder, "order_date").values
    ('2024-01-31',)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import posixpath
import urllib.parse
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from airflow_dq_contracts.storage.s3 import arrow_s3_filesystem, is_s3
from airflow_dq_contracts.store.tablemeta.table_facts import (
    ColumnTypeError,
    DeltaMetadataError,
    Measurement,
    NotPartitionedError,
    PartitionListing,
    TableNotFoundError,
    extreme_micros,
    extreme_time,
    find_column,
)
from airflow_dq_contracts.timeutil import UTC

__all__ = [
    "HIVE_NULL",
    "DataFile",
    "hive_partition_values",
    "hive_segments",
    "list_parquet_files",
    "parquet_newest",
    "table_filesystem",
]

#: The folder name Hive and Spark give a NULL partition value.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclasses.dataclass(frozen=True)
class DataFile:
    """A data file under a Parquet folder: its path relative to the folder, its modification time (UTC)."""

    relative: str
    mtime: dt.datetime | None


def table_filesystem(location: str, storage_options: Mapping[str, str] | None = None) -> tuple[Any, str]:
    """(pyarrow filesystem, path within it) of a table location; S3 with the credentials delta-rs was given."""
    import pyarrow.fs as pafs

    try:
        if storage_options and is_s3(location):  # the credentials delta-rs was given, for pyarrow's S3
            return arrow_s3_filesystem(storage_options), location.split("://", 1)[1].rstrip("/")
        return pafs.FileSystem.from_uri(location)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ValueError, OSError or ArrowInvalid for a bad location
        raise TableNotFoundError(f"cannot open {location}: {exc}", location) from None


def list_parquet_files(location: str, storage_options: Mapping[str, str] | None = None) -> list[DataFile]:
    """The data files under ``location`` (Spark/Hive bookkeeping left out); :class:`TableNotFoundError` if none."""
    import pyarrow.fs as pafs

    fs, base = table_filesystem(location, storage_options)
    try:
        info = fs.get_file_info(base)
    except OSError as exc:  # an object store refusing the listing (credentials, network)
        raise DeltaMetadataError(f"cannot list {location}: {exc}", location) from None
    if info.type == pafs.FileType.NotFound:
        raise TableNotFoundError(f"no table at {location}: the path does not exist", location)
    if info.type != pafs.FileType.Directory:
        raise TableNotFoundError(f"{location} is a file, not a Delta table or a directory of Parquet files", location)
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
            mtime = mtime.replace(tzinfo=UTC)
        found.append(DataFile(relative, mtime))
    if not found:
        raise TableNotFoundError(f"no table at {location}: no _delta_log and no data files", location)
    return found


def hive_segments(relative: str) -> dict[str, str | None]:
    """The ``key=value`` folders of a data file's relative path (Hive escapes undone; the default partition is None).

    >>> hive_segments("d=2024-01-31/h=%3A/__x/part-0.parquet")
    {'d': '2024-01-31', 'h': ':'}
    """
    out: dict[str, str | None] = {}
    for part in relative.split("/")[:-1]:
        if "=" not in part:
            continue
        key, _, raw = part.partition("=")
        value = urllib.parse.unquote(raw)  # Hive escapes ':' and '/' as %3A, %2F
        out[urllib.parse.unquote(key)] = None if value == HIVE_NULL else value
    return out


def hive_partition_values(
    location: str, column: str, storage_options: Mapping[str, str] | None = None
) -> PartitionListing:
    """Distinct values of partition folder ``column`` under ``location`` (:class:`NotPartitionedError` if none)."""
    files = list_parquet_files(location, storage_options)
    keys: list[str] = []
    values: set[str | None] = set()
    for data_file in files:
        segments = hive_segments(data_file.relative)
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
                f"the Parquet directory {location} is partitioned by {', '.join(keys)}, not by {column!r}",
                location,
            )
        name = folded[0]
    for data_file in files:
        segments = hive_segments(data_file.relative)
        if name in segments:
            values.add(segments[name])
    return PartitionListing(
        path=location,
        column=name,
        values=tuple(sorted(values, key=lambda v: (v is None, v or ""))),
        source="hive_paths",
        table_format="parquet",
        table_version=None,
        files_total=len(files),
        partition_columns=tuple(keys),
    )


def parquet_newest(
    location: str, column: str, aggregation: str, storage_options: Mapping[str, str] | None = None
) -> Measurement:
    """max/min of ``column``: from the partition folders when it is one, else reading that column alone."""
    import pyarrow.dataset as pads

    files = list_parquet_files(location, storage_options)
    keys: list[str] = []
    for data_file in files:
        for key in hive_segments(data_file.relative):
            if key not in keys:
                keys.append(key)

    def measured(name: str, value: dt.datetime | None, source: str, files_read: int = 0) -> Measurement:
        # Fields in Measurement's order: a Parquet folder has no version and no statistics.
        return Measurement(location, name, aggregation, value, source, "parquet", None, len(files), 0, files_read)

    if column in keys or any(k.lower() == column.lower() for k in keys):
        listing = hive_partition_values(location, column, storage_options)
        return measured(
            listing.column, extreme_time(listing.values, aggregation, location, listing.column), "hive_paths"
        )
    fs, base = table_filesystem(location, storage_options)
    try:
        dataset = pads.dataset(
            base,
            filesystem=fs,
            format="parquet",
            partitioning="hive",
            ignore_prefixes=["_", "."],
        )
    except Exception as exc:  # noqa: BLE001 - pyarrow's dataset discovery raises many types; all mean unreadable
        raise DeltaMetadataError(f"cannot read Parquet files under {location}: {exc}", location) from None
    name = find_column(dataset.schema.names, column, location)
    arrow_type = dataset.schema.field(name).type
    if not (pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type)):
        raise ColumnTypeError(
            f"column {name!r} of {location} is of type {arrow_type}, not a timestamp or date: "
            "freshness needs a timestamp or date column",
            location,
        )
    value = extreme_micros(dataset.to_table(columns=[name]).column(name), aggregation)
    return measured(name, value, "scan", files_read=len(files))


# --------------------------------------------------------------------------------------------
