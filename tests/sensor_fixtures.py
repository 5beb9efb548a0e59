"""Builders of real Delta tables and Hive-style Parquet folders for the sensor tests.

Plain functions (no pytest fixtures), so any test module can import them. Tables are written with
the ``deltalake`` writer (delta-rs: fast, no JVM); expected values are kept in Python by the
caller, independently of the code under test.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

UTC = dt.timezone.utc


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


def now_utc() -> dt.datetime:
    return dt.datetime.now(UTC)


def write_events(
    path: str | Path,
    timestamps: Sequence[dt.datetime | None],
    *,
    column: str = "created_at",
    tz_aware: bool = True,
    mode: str = "append",
    partition_by: list[str] | None = None,
    extra: dict[str, Sequence] | None = None,
) -> None:
    """Append one file of events: ``id``, ``column`` (UTC ``timestamp`` or ``timestamp_ntz``)."""
    from deltalake import write_deltalake

    kind = pa.timestamp("us", tz="UTC") if tz_aware else pa.timestamp("us")
    values = [
        None if t is None else (t.astimezone(UTC) if tz_aware else t.astimezone(UTC).replace(tzinfo=None))
        for t in timestamps
    ]
    data = {"id": pa.array(range(len(values)), pa.int64()), column: pa.array(values, kind)}
    for name, column_values in (extra or {}).items():
        data[name] = pa.array(list(column_values))
    write_deltalake(str(path), pa.table(data), mode=mode, partition_by=partition_by)


def write_daily_partitions(
    path: str | Path, days: Iterable[dt.date], *, column: str = "order_date", as_string: bool = False
) -> None:
    """One row per day, partitioned by ``column`` (a ``date``, or a string when ``as_string``)."""
    from deltalake import write_deltalake

    day_list = list(days)
    values = pa.array([d.isoformat() for d in day_list]) if as_string else pa.array(day_list, pa.date32())
    table = pa.table({"amount": pa.array([1.0] * len(day_list)), column: values})
    write_deltalake(str(path), table, mode="append", partition_by=[column])


def write_many_files(
    root: str | Path,
    timestamps_per_file: Sequence[Sequence[dt.datetime]],
    *,
    collect_stats: bool = True,
) -> None:
    """A Delta table of ``len(timestamps_per_file)`` small files in one commit.

    Each file is written by pyarrow and the folder converted in place (``convert_to_deltalake``),
    which collects per-file statistics from the Parquet footers — thousands of files in seconds,
    where thousands of separate appends would take minutes.
    """
    from deltalake import convert_to_deltalake

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    kind = pa.timestamp("us", tz="UTC")
    row = 0
    for index, stamps in enumerate(timestamps_per_file):
        ids = pa.array(range(row, row + len(stamps)), pa.int64())
        row += len(stamps)
        table = pa.table({"id": ids, "created_at": pa.array(list(stamps), kind)})
        pq.write_table(table, root / f"part-{index:05d}.parquet")
    convert_to_deltalake(str(root), collect_stats=collect_stats)


def write_hive_folder(
    root: str | Path,
    column: str,
    values: Iterable[str | None],
    *,
    data_column: str = "created_at",
    stamps: Sequence[dt.datetime] | None = None,
) -> None:
    """A plain Parquet folder partitioned Hive-style: ``<root>/<column>=<escaped value>/part-0.parquet``.

    Values are escaped as Hive does (``:`` → ``%3A``, space → ``%20``); ``None`` is written as
    ``__HIVE_DEFAULT_PARTITION__``. Also drops a ``_SUCCESS`` marker and a ``_temporary`` folder,
    which readers must ignore.
    """
    from urllib.parse import quote

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for index, value in enumerate(values):
        folder_value = "__HIVE_DEFAULT_PARTITION__" if value is None else quote(value, safe="-_.")
        folder = root / f"{column}={folder_value}"
        folder.mkdir(parents=True, exist_ok=True)
        moment = stamps[index] if stamps else utc(2024, 1, 1)
        table = pa.table({"id": [index], data_column: pa.array([moment], pa.timestamp("us", tz="UTC"))})
        pq.write_table(table, folder / "part-00000.parquet")
    (root / "_SUCCESS").write_text("")
    (root / "_temporary").mkdir(exist_ok=True)
    (root / "_temporary" / "junk.parquet").write_text("not parquet")


def delta_data_files(path: str | Path) -> list[Path]:
    """Data files of a Delta table folder (every ``*.parquet`` outside ``_delta_log``)."""
    found = []
    for folder, _dirs, files in os.walk(path):
        if "_delta_log" in Path(folder).parts:
            continue
        found.extend(Path(folder) / f for f in files if f.endswith(".parquet"))
    return sorted(found)
