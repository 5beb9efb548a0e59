"""Reading freshness and partition facts from real Delta tables (delta-rs, no JVM).

Tables are written with the ``deltalake`` writer, one with Spark (Spark-written statistics,
deletion vectors, column mapping). Expected values are computed in Python from the data written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from sensor_fixtures import (
    delta_data_files,
    now_utc,
    utc,
    write_daily_partitions,
    write_events,
    write_hive_folder,
    write_many_files,
)

from airflow_dq_contracts.store.tablemeta.delta_log import (
    WAREHOUSE_ENV,
    ColumnNotFoundError,
    ColumnTypeError,
    DeltaMetadataError,
    NotPartitionedError,
    TableNotFoundError,
    evaluate_completeness,
    evaluate_freshness,
    last_commit_time,
    newest_timestamp,
    partition_values,
    resolve_table_path,
)


def to_ms(moment: dt.datetime) -> dt.datetime:
    """What Delta statistics keep of a timestamp: milliseconds, truncated."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


# ----------------------------------------------------------------------------------- worlds apart


def test_module_imports_neither_airflow_nor_pyspark_and_a_poke_needs_no_pandas(tmp_path):
    path = tmp_path / "t"
    write_events(path, [utc(2024, 1, 1, 1, 1, 1, 1)])
    code = (
        "import sys\n"
        "from airflow_dq_contracts.store.tablemeta.delta_log import newest_timestamp, partition_values\n"
        f"print(newest_timestamp({str(path)!r}, 'created_at').value)\n"
        "bad = [m for m in ('pyspark', 'airflow', 'pandas') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent.parent
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2024-01-01 01:01:01.000001+00:00" in done.stdout


# ----------------------------------------------------------------------------------- newest / oldest


@pytest.mark.parametrize("tz_aware", [True, False], ids=["timestamp", "timestamp_ntz"])
def test_newest_and_oldest_are_exact_to_the_microsecond(tmp_path, tz_aware):
    path = tmp_path / "events"
    batches = [
        [utc(2024, 1, 1, 0, 0, 0, 999), utc(2024, 1, 2, 12, 0, 0, 123456)],
        [utc(2024, 1, 3, 7, 30, 0, 654321), None, utc(2023, 12, 31, 23, 59, 59, 999999)],
        [utc(2024, 1, 3, 7, 30, 0, 654000)],  # same millisecond as the newest, 321 µs earlier
    ]
    for batch in batches:
        write_events(path, batch, tz_aware=tz_aware)
    stamps = [t for batch in batches for t in batch if t is not None]

    newest = newest_timestamp(str(path), "created_at")
    assert newest.value == max(stamps) == utc(2024, 1, 3, 7, 30, 0, 654321)
    assert newest.value.utcoffset() == dt.timedelta(0)
    assert newest.source == "statistics+scan"
    assert newest.files_total == 3 and newest.files_with_stats == 3
    assert newest.files_read == 2  # the two files whose statistics share the newest millisecond

    oldest = newest_timestamp(str(path), "created_at", "min")
    assert oldest.value == min(stamps) == utc(2023, 12, 31, 23, 59, 59, 999999)

    # Statistics alone: milliseconds, truncated (what Delta stores)
    rough = newest_timestamp(str(path), "created_at", exact=False)
    assert rough.value == to_ms(max(stamps))
    assert rough.source == "statistics" and rough.files_read == 0


def test_truncated_statistics_would_decide_the_boundary_wrongly(tmp_path):
    path = tmp_path / "events"
    newest = utc(2024, 1, 10, 6, 0, 0, 500)
    write_events(path, [utc(2024, 1, 10, 1), newest])
    reference = utc(2024, 1, 10, 12, 0, 0, 500)  # exactly 6 h after the newest row

    exact = evaluate_freshness(str(path), "created_at", 6, reference_time=reference)
    assert exact.age_hours == 6.0 and exact.passed  # age ≤ max passes
    rough = evaluate_freshness(str(path), "created_at", 6, reference_time=reference, exact=False)
    # 0.5 ms lost by truncation makes the table look 6 h + 0.5 ms old
    assert rough.age_hours == pytest.approx(6 + 0.0005 / 3600, abs=1e-12)
    assert not rough.passed
    assert not evaluate_freshness(str(path), "created_at", 5.999, reference_time=reference).passed


def test_files_far_from_the_extreme_are_not_opened(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 1, 10)])
    write_events(path, [utc(2024, 1, 2, 10)])
    write_events(path, [utc(2024, 1, 3, 10, 0, 0, 42)])
    old_file, middle_file, newest_file = sorted(delta_data_files(path), key=os.path.getmtime)
    # Vandalise the files whose statistics lie far from the newest value: if the reader opened
    # them it would fail. It must prune them from the statistics alone.
    old_file.write_bytes(b"not parquet")
    middle_file.unlink()
    assert newest_timestamp(str(path), "created_at").value == utc(2024, 1, 3, 10, 0, 0, 42)
    # The file holding the newest value is read (to make the millisecond statistics exact)
    newest_file.write_bytes(b"not parquet")
    with pytest.raises(DeltaMetadataError, match="reading column 'created_at'"):
        newest_timestamp(str(path), "created_at")


def test_files_without_statistics_are_read_and_only_those(tmp_path):
    path = tmp_path / "mixed"
    # 6 files without statistics (converted Parquet) — the newest row hides in one of them …
    no_stats = [[utc(2024, 2, 1, h, 0, 0, 7)] for h in range(5)] + [[utc(2024, 2, 9, 9, 9, 9, 9)]]
    write_many_files(path, no_stats, collect_stats=False)
    # … then 2 appends with statistics, older than that row.
    write_events(path, [utc(2024, 2, 8, 1)])
    write_events(path, [utc(2024, 2, 8, 2, 0, 0, 5)])
    everything = [t for f in no_stats for t in f] + [utc(2024, 2, 8, 1), utc(2024, 2, 8, 2, 0, 0, 5)]

    measured = newest_timestamp(str(path), "created_at")
    assert measured.value == max(everything) == utc(2024, 2, 9, 9, 9, 9, 9)
    assert measured.files_total == 8 and measured.files_with_stats == 2
    assert measured.files_read == 7  # 6 without statistics + the newest with statistics
    assert newest_timestamp(str(path), "created_at", "min").value == min(everything)

    # exact=False cannot skip the read: statistics do not cover every file
    assert newest_timestamp(str(path), "created_at", exact=False).value == max(everything)


def test_table_without_any_statistics_is_scanned(tmp_path):
    path = tmp_path / "nostats"
    files = [[utc(2024, 3, 1) + dt.timedelta(hours=i, microseconds=i)] for i in range(25)]
    write_many_files(path, files, collect_stats=False)
    measured = newest_timestamp(str(path), "created_at")
    assert measured.value == utc(2024, 3, 1) + dt.timedelta(hours=24, microseconds=24)
    assert measured.source == "scan" and measured.files_read == 25


def test_an_all_null_file_needs_no_reading(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 5, 5)])
    write_events(path, [None, None, None])
    null_file = sorted(delta_data_files(path), key=os.path.getmtime)[-1]
    null_file.write_bytes(b"not parquet")  # statistics say all-null: must not be opened
    assert newest_timestamp(str(path), "created_at").value == utc(2024, 1, 5, 5)


def test_date_column_statistics_are_exact(tmp_path):
    from deltalake import write_deltalake

    path = tmp_path / "dates"
    for day in (dt.date(2024, 1, 30), dt.date(2024, 2, 29), dt.date(2024, 1, 1)):
        write_deltalake(str(path), pa.table({"d": pa.array([day], pa.date32())}), mode="append")
    measured = newest_timestamp(str(path), "d")
    assert measured.value == utc(2024, 2, 29)
    assert measured.source == "statistics" and measured.files_read == 0
    assert newest_timestamp(str(path), "d", "min").value == utc(2024, 1, 1)


def test_partition_column_needs_no_statistics(tmp_path):
    path = tmp_path / "orders"
    write_daily_partitions(path, [dt.date(2024, 1, d) for d in (3, 1, 7)])
    measured = newest_timestamp(str(path), "order_date")
    assert measured.value == utc(2024, 1, 7)
    assert measured.source == "partition_values"
    assert newest_timestamp(str(path), "order_date", "min").value == utc(2024, 1, 1)


def test_empty_table_has_no_value_and_is_not_fresh(tmp_path):
    from deltalake import DeltaTable

    path = tmp_path / "empty"
    DeltaTable.create(str(path), pa.schema([("id", pa.int64()), ("created_at", pa.timestamp("us", tz="UTC"))]))
    measured = newest_timestamp(str(path), "created_at")
    assert measured.value is None and measured.files_total == 0
    result = evaluate_freshness(str(path), "created_at", 24)
    assert not result.passed and result.age_hours is None
    assert "no value" in result.message


def test_column_name_is_matched_case_insensitively_like_spark(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 1, 1)], column="CreatedAt")
    assert newest_timestamp(str(path), "createdat").value == utc(2024, 1, 1, 1)


def test_time_zones_reference_and_values(tmp_path):
    path = tmp_path / "events"
    # written as 08:00 at +05:30 → 02:30 UTC
    write_events(path, [dt.datetime(2024, 6, 1, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))])
    assert newest_timestamp(str(path), "created_at").value == utc(2024, 6, 1, 2, 30)
    # reference 12:00 at -04:00 = 16:00 UTC → 13.5 h
    result = evaluate_freshness(str(path), "created_at", 13.5, reference_time="2024-06-01T12:00:00-04:00")
    assert result.age_hours == 13.5 and result.passed
    assert result.to_dict()["reference_time"] == "2024-06-01T16:00:00Z"
    # naive reference = UTC
    assert evaluate_freshness(str(path), "created_at", 1, reference_time="2024-06-01T03:30:00").age_hours == 1.0


def test_last_commit_time_and_commit_freshness(tmp_path):
    path = tmp_path / "events"
    before = now_utc()
    write_events(path, [utc(2020, 1, 1)])
    after = now_utc()
    measured = last_commit_time(str(path))
    assert before - dt.timedelta(seconds=1) <= measured.value <= after + dt.timedelta(seconds=1)
    assert measured.source == "commit_log" and measured.table_version == 0
    # the rows are 4+ years old, the commit is seconds old
    assert evaluate_freshness(str(path), None, 1, measure="commit").passed
    assert not evaluate_freshness(str(path), "created_at", 1).passed


# ----------------------------------------------------------------------------------- partitions


def test_partition_values_and_completeness_of_daily_partitions(tmp_path):
    path = tmp_path / "orders"
    present = [dt.date(2024, 1, d) for d in (1, 2, 3, 5, 6, 8)]
    write_daily_partitions(path, present[:3])
    write_daily_partitions(path, present[3:])
    listing = partition_values(str(path), "order_date")
    assert sorted(listing.values) == present
    assert listing.source == "delta_log" and listing.partition_columns == ("order_date",)

    reference = utc(2024, 1, 9, 6)  # window [01-02 06:00, 01-09 06:00] → days 2..9
    result = evaluate_completeness(str(path), "order_date", "daily", lookback_days=7, reference_time=reference)
    assert result.gap_count == 2  # 4 and 7; 9 is after the newest (8): not yet due
    assert result.report.missing_labels() == ["2024-01-04", "2024-01-07"]
    assert not result.passed
    assert evaluate_completeness(
        str(path), "order_date", "daily", lookback_days=7, max_gap_count=2, reference_time=reference
    ).passed
    strict = evaluate_completeness(
        str(path), "order_date", "daily", lookback_days=7, allow_future_gaps=False, reference_time=reference
    )
    assert strict.gap_count == 3
    # fill the gaps: complete
    write_daily_partitions(path, [dt.date(2024, 1, 4), dt.date(2024, 1, 7)])
    complete = evaluate_completeness(str(path), "order_date", "daily", lookback_days=7, reference_time=reference)
    assert complete.passed and complete.gap_count == 0
    data = json.loads(json.dumps(complete.to_dict()))
    assert data["expected_count"] == 8 and data["present_count"] == 7


def test_string_and_timestamp_partition_values(tmp_path):
    from deltalake import write_deltalake

    hours = [utc(2024, 1, 9, h) for h in range(0, 24) if h != 13]
    strings = tmp_path / "by_string"
    write_deltalake(
        str(strings),
        pa.table({"v": list(range(len(hours))), "event_hour": [h.strftime("%Y-%m-%d %H:%M:%S") for h in hours]}),
        partition_by=["event_hour"],
    )
    stamps = tmp_path / "by_timestamp"
    write_deltalake(
        str(stamps),
        pa.table(
            {
                "v": list(range(len(hours))),
                "event_hour": pa.array([h.replace(tzinfo=None) for h in hours], pa.timestamp("us")),
            }
        ),
        partition_by=["event_hour"],
    )
    reference = utc(2024, 1, 9, 23, 59)  # 1 day back: 01-08 23:59 → hours 01-08 23:00 … 01-09 23:00
    for path in (strings, stamps):
        result = evaluate_completeness(str(path), "event_hour", "hourly", lookback_days=1, reference_time=reference)
        assert result.report.expected_count == 25
        # 01-08 23:00 is missing too, but it is before the first present hour — it still counts
        assert result.report.missing_labels() == ["2024-01-08T23:00Z", "2024-01-09T13:00Z"], path
        assert newest_timestamp(str(path), "event_hour").value == utc(2024, 1, 9, 23)


def test_hive_partitioned_parquet_folder(tmp_path):
    root = tmp_path / "hive"
    hours = ["2024-01-09 10:00:00", "2024-01-09 11:00:00", "2024-01-09 13:00:00", None]
    write_hive_folder(
        root,
        "event_hour",
        hours,
        stamps=[utc(2024, 1, 9, 10, 5), utc(2024, 1, 9, 11, 5), utc(2024, 1, 9, 13, 5, 0, 3), utc(2024, 1, 1)],
    )
    listing = partition_values(str(root), "event_hour")
    assert listing.source == "hive_paths" and listing.table_format == "parquet"
    assert set(listing.values) == set(hours)  # unescaped; the default partition is None
    result = evaluate_completeness(
        str(root),
        "event_hour",
        "hourly",
        lookback_days=0.25,
        reference_time=utc(2024, 1, 9, 14, 30),
        allow_future_gaps=False,
    )
    # [08:30, 14:30] → 08 … 14 expected; present 10, 11, 13
    assert result.report.missing_labels() == [
        "2024-01-09T08:00Z",
        "2024-01-09T09:00Z",
        "2024-01-09T12:00Z",
        "2024-01-09T14:00Z",
    ]
    assert newest_timestamp(str(root), "event_hour").value == utc(2024, 1, 9, 13)
    data_column = newest_timestamp(str(root), "created_at")
    assert data_column.value == utc(2024, 1, 9, 13, 5, 0, 3) and data_column.source == "scan"
    newest_mtime = max(os.path.getmtime(p) for p in root.rglob("part-*.parquet"))
    commit = last_commit_time(str(root))
    assert abs(commit.value.timestamp() - newest_mtime) < 1e-3
    assert commit.source == "file_mtime"


# ----------------------------------------------------------------------------------- thousands of files


@pytest.fixture(scope="module")
def five_thousand_files(tmp_path_factory):
    """A Delta table of 5,000 small files (one commit), and every timestamp written."""
    rng = random.Random(5000)
    base = utc(2024, 1, 1)
    per_file = [
        [base + dt.timedelta(minutes=i, microseconds=rng.randrange(0, 60_000_000)) for _ in range(2)]
        for i in range(5000)
    ]
    # the newest file is not the last one written
    per_file[1234].append(base + dt.timedelta(days=10, microseconds=777))
    path = tmp_path_factory.mktemp("many") / "events"
    write_many_files(path, per_file)
    return path, [t for f in per_file for t in f]


def test_five_thousand_files_from_statistics(five_thousand_files):
    path, stamps = five_thousand_files
    newest_timestamp(str(path), "created_at")  # warm-up: first delta-rs use in the process
    started = time.perf_counter()
    newest = newest_timestamp(str(path), "created_at")
    elapsed = time.perf_counter() - started
    assert newest.value == max(stamps) == utc(2024, 1, 11, 0, 0, 0, 777)
    assert newest.files_total == 5000 and newest.files_with_stats == 5000
    assert newest.files_read == 1
    assert elapsed < 3.0, f"poke took {elapsed:.2f} s"  # ~0.05 s measured; generous for a busy box
    assert newest_timestamp(str(path), "created_at", "min").value == min(stamps)


def test_thousands_of_hourly_partitions(tmp_path):
    from deltalake import write_deltalake

    base = utc(2024, 1, 1)
    hours = [base + dt.timedelta(hours=i) for i in range(3000) if i not in (100, 2000, 2999)]
    write_deltalake(
        str(tmp_path / "t"),
        pa.table(
            {
                "v": list(range(len(hours))),
                "event_hour": [h.strftime("%Y-%m-%d %H:00:00") for h in hours],
            }
        ),
        partition_by=["event_hour"],
    )
    reference = base + dt.timedelta(hours=2999, minutes=30)
    result = evaluate_completeness(
        str(tmp_path / "t"), "event_hour", "hourly", lookback_days=125, reference_time=reference
    )
    # 125 days = 3000 h back from hour 2999:30 → hours -1 … 2999 expected (3001 periods);
    # hour -1 is missing, 100 and 2000 are gaps, 2999 comes after the newest (2998): not yet due.
    assert result.report.expected_count == 3001
    assert result.gap_count == 3
    assert result.listing.files_total == 2997


# ----------------------------------------------------------------------------------- errors


def test_missing_table_errors(tmp_path):
    with pytest.raises(TableNotFoundError, match="does not exist"):
        newest_timestamp(str(tmp_path / "nowhere"), "created_at")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(TableNotFoundError, match="no _delta_log and no data files"):
        partition_values(str(tmp_path / "empty_dir"), "order_date")
    only_marker = tmp_path / "marker"
    only_marker.mkdir()
    (only_marker / "_SUCCESS").write_text("")
    with pytest.raises(TableNotFoundError):
        last_commit_time(str(only_marker))
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(TableNotFoundError, match="is a file"):
        newest_timestamp(str(a_file), "created_at")


def test_column_errors_are_readable(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 1)], extra={"status": ["ok"]})
    with pytest.raises(ColumnNotFoundError) as missing:
        newest_timestamp(str(path), "updated_at")
    assert "'updated_at' is not in the table" in str(missing.value)
    assert "id, created_at, status" in str(missing.value)
    with pytest.raises(ColumnTypeError, match="'id' .* of type long, not a timestamp"):
        newest_timestamp(str(path), "id")
    with pytest.raises(ColumnTypeError, match="'status' .* of type string"):
        newest_timestamp(str(path), "status")
    with pytest.raises(DeltaMetadataError, match="aggregation 'avg'"):
        newest_timestamp(str(path), "created_at", "avg")


def test_completeness_errors_are_readable(tmp_path):
    events = tmp_path / "events"
    write_events(events, [utc(2024, 1, 1)])
    with pytest.raises(NotPartitionedError, match="is not partitioned"):
        partition_values(str(events), "created_at")
    orders = tmp_path / "orders"
    write_daily_partitions(orders, [dt.date(2024, 1, 1)])
    with pytest.raises(NotPartitionedError, match="partitioned by order_date, not by 'region'"):
        evaluate_completeness(str(orders), "region", "daily")
    regions = tmp_path / "regions"
    write_events(regions, [utc(2024, 1, 1)], extra={"region": ["eu-west"]}, partition_by=["region"])
    with pytest.raises(ColumnTypeError, match="'eu-west' is not an ISO-8601"):
        evaluate_completeness(str(regions), "region", "daily")
    with pytest.raises(DeltaMetadataError, match="granularity 'yearly'"):
        evaluate_completeness(str(orders), "order_date", "yearly")
    with pytest.raises(DeltaMetadataError, match="reference_time"):
        evaluate_completeness(str(orders), "order_date", "daily", reference_time="tomorrow-ish")
    flat = tmp_path / "flat"
    flat.mkdir()
    pa.parquet.write_table(pa.table({"x": [1]}), flat / "part-0.parquet")
    with pytest.raises(NotPartitionedError, match="no Hive-style partition folders"):
        partition_values(str(flat), "order_date")


# ----------------------------------------------------------------------------------- table names


def test_resolve_table_path(monkeypatch):
    monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    assert resolve_table_path("silver.orders", "/wh") == "/wh/silver.db/orders"
    assert resolve_table_path("spark_catalog.Silver.Orders", "/wh/") == "/wh/silver.db/orders"
    assert resolve_table_path("default.orders", "/wh") == "/wh/orders"
    assert resolve_table_path("`orders`", "s3a://lake/wh") == "s3a://lake/wh/orders"
    with pytest.raises(DeltaMetadataError, match="DQ_CONTRACTS_WAREHOUSE"):
        resolve_table_path("silver.orders")
    monkeypatch.setenv(WAREHOUSE_ENV, "/env/wh")
    assert resolve_table_path("silver.orders") == "/env/wh/silver.db/orders"
    for bad in ("a.b.c.d", "silver.", ""):
        with pytest.raises(DeltaMetadataError, match="not a table name"):
            resolve_table_path(bad)


# ----------------------------------------------------------------------------------- Spark-written


@pytest.mark.spark
def test_spark_written_table_statistics_deletion_vectors_and_column_mapping(spark, tmp_path):
    path = str(tmp_path / "spark_events")
    base_micros = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z
    ids = list(range(200))
    micros = {i: base_micros + i * 3_600_000_000 + (i * 7919) % 1_000_000 for i in ids}
    expected = {i: utc(1970, 1, 1) + dt.timedelta(microseconds=m) for i, m in micros.items()}
    previous_zone = spark.conf.get("spark.sql.session.timeZone")
    # A non-UTC session zone: Spark writes statistics like "2023-12-31T16:00:00.000-08:00"
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        rows = [(i, micros[i], expected[i].date().isoformat()) for i in ids]
        (
            spark.createDataFrame(rows, "id long, m long, d string")
            .selectExpr("id", "timestamp_micros(m) AS created_at", "CAST(d AS DATE) AS order_date")
            .repartition(4)
            .write.format("delta")
            .partitionBy("order_date")
            .option("delta.enableDeletionVectors", "true")
            .save(path)
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous_zone)

    newest = newest_timestamp(path, "created_at")
    assert newest.value == max(expected.values())
    assert newest_timestamp(path, "created_at", "min").value == min(expected.values())
    listing = partition_values(path, "order_date")
    assert sorted(listing.values) == sorted({t.date() for t in expected.values()})

    # Delete the newest row: with a deletion vector its file's statistics still say it is there
    newest_id = max(ids, key=lambda i: micros[i])
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = {newest_id}")
    remaining = {i: t for i, t in expected.items() if i != newest_id}
    assert newest_timestamp(path, "created_at").value == max(remaining.values())

    # Column mapping: the logical name differs from the physical one in the Parquet files
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN created_at TO event_time")
    renamed = newest_timestamp(path, "event_time")
    assert renamed.value == max(remaining.values())
    with pytest.raises(ColumnNotFoundError):
        newest_timestamp(path, "created_at")
