"""Statistics-first evaluation (issue 27): what the Delta log answers equals a full scan, or falls back to it.

Every table is evaluated twice on the session ``spark`` fixture — statistics on, and off
(``spark.dqcontracts.statistics.enabled=false``: the full scan) — and every result must be equal;
each check's ``evaluated_from`` is asserted (answered from the log, or scanned because the log cannot
say exactly). Expected values come from plain Python over the same generated rows. "No scan" is proved
by deleting every data file of a table: a statistics-only contract still evaluates, identically.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.evaluator import Evaluator
from airflow_dq_contracts.engine.statistics_first import STATISTICS_CONF_KEY, StatisticsSource

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
REFERENCE = dt.datetime(2024, 3, 10, 12, 0, tzinfo=UTC)
DAYS = [dt.date(2024, 3, d) for d in (5, 6, 8, 9)]  # the 7th is a gap
SCHEMA = "id long, qty int, price decimal(10,2), ts timestamp, name string, amount double, opt int, day date, late long"
# late is beyond dataSkippingNumIndexedCols = 7 (id … opt): Delta collects no statistics for it.
PROPERTIES = "'delta.dataSkippingNumIndexedCols' = '7'"


def _rows(count: int = 240, seed: int = 27) -> list[tuple]:
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        day = DAYS[i % len(DAYS)]
        moment = dt.datetime.combine(day, dt.time(0), UTC) + dt.timedelta(
            seconds=rng.randrange(86_400), microseconds=rng.randrange(1, 10**6)
        )
        amount = [1.5, -2.0, float("nan"), float("inf"), float("-inf")][i % 5] if i % 11 == 0 else rng.uniform(-9, 9)
        rows.append(
            (
                1_000 + i,
                None if i % 9 == 0 else rng.randrange(0, 50),
                Decimal(rng.randrange(100, 99_999)) / 100,
                None if i % 13 == 0 else moment,
                None if i % 10 == 0 else "x" * 40 + str(rng.randrange(10**6)),  # beyond the 32-char prefix
                amount,
                None if day == DAYS[0] else i,  # NULL-only files: every file of the first day
                day,
                rng.randrange(-(10**6), 10**6),
            )
        )
    return rows


def _create(spark, path: str, rows: list[tuple], properties: str = PROPERTIES) -> None:
    columns = ", ".join(SCHEMA.split(", "))
    spark.sql(f"CREATE TABLE delta.`{path}` ({columns}) USING delta PARTITIONED BY (day) TBLPROPERTIES ({properties})")
    spark.createDataFrame(rows, SCHEMA).repartition(2).write.format("delta").mode("append").save(path)


def _contract(qty: str = "qty") -> dict:
    return {
        "name": "stats_first",
        "checks": [
            {"name": "rows", "type": "num_rows", "min": 1},
            {"name": "fresh", "type": "freshness", "timestamp_column": "ts", "max_age_hours": 200},
            {"name": "fresh_day", "type": "freshness", "timestamp_column": "day", "max_age_hours": 200},
            {"name": "days", "type": "completeness", "partition_column": "day", "granularity": "daily",
             "lookback_days": 7, "max_gap_count": 3},
        ],
        "columns": [
            {"name": "id", "checks": [
                {"name": "id_missing", "type": "missing", "max": 0},
                {"name": "id_min", "type": "min", "min": 0},
                {"name": "id_max", "type": "max", "max": 10**6},
                {"name": "id_min_fails", "type": "min", "min": 1_100},
                {"name": "id_filtered", "type": "count", "min": 0, "filter": f"{qty} > 3"},
            ]},
            {"name": qty, "checks": [
                {"name": "qty_missing", "type": "missing", "return": "pct", "max": 0.5},
                {"name": "qty_count", "type": "count", "min": 1},
            ]},
            {"name": "price", "checks": [{"name": "price_min", "type": "min"}, {"name": "price_max", "type": "max"}]},
            {"name": "ts", "checks": [{"name": "ts_min", "type": "min"}, {"name": "ts_max", "type": "max"}]},
            {"name": "day", "checks": [{"name": "day_min", "type": "min"}, {"name": "day_max", "type": "max"}]},
            {"name": "amount", "checks": [{"name": "amount_max", "type": "max"}, {"name": "amount_min", "type": "min"}]},
            {"name": "name", "checks": [{"name": "name_missing", "type": "missing"}]},
            {"name": "opt", "checks": [{"name": "opt_missing", "type": "missing"}, {"name": "opt_max", "type": "max"}]},
            {"name": "late", "checks": [{"name": "late_missing", "type": "missing"}, {"name": "late_max", "type": "max"}]},
        ],
    }  # fmt: skip


#: Checks the log answers on a table with statistics everywhere (the rest is scanned, and why).
FROM_LOG = {
    "rows", "fresh", "fresh_day", "days", "id/id_missing", "id/id_min", "id/id_max", "qty/qty_missing",
    "qty/qty_count", "price/price_min", "price/price_max", "ts/ts_min", "ts/ts_max", "day/day_min", "day/day_max",
    "name/name_missing", "opt/opt_missing", "opt/opt_max", "amount/amount_min",
}  # fmt: skip
SCANNED = {
    "id/id_min_fails": "the extreme breaks the validator: the scan counts the violating rows",
    "id/id_filtered": "a per-check filter",
    "amount/amount_max": "a NaN in scope: the maximum is NaN, reported by the scan",
    "late/late_missing": "beyond dataSkippingNumIndexedCols",
    "late/late_max": "beyond dataSkippingNumIndexedCols",
}


def _evaluate(spark, contract, path: str, run_filter: str | None = None, statistics: bool = True):
    spark.conf.set(STATISTICS_CONF_KEY, "true" if statistics else "false")
    try:
        df = spark.read.format("delta").load(path)
        if run_filter:
            df = df.where(run_filter)
        ev = Evaluator(
            contract, df, REFERENCE, run_id="r", filter=run_filter, apply_filter=False,
            statistics=StatisticsSource(path),
        )  # fmt: skip
        return ev.run(), ev
    finally:
        spark.conf.unset(STATISTICS_CONF_KEY)


def _key(record) -> str:
    return f"{record.column}/{record.check_name}" if record.column else record.check_name


def _compare(spark, contract, path: str, run_filter: str | None = None) -> tuple[dict[str, str], object]:
    """Statistics on vs off: every result equal; returns (check → evaluated_from, the statistics run's result)."""
    on, ev = _evaluate(spark, contract, path, run_filter)
    off, _ = _evaluate(spark, contract, path, run_filter, statistics=False)
    assert {r.evaluated_from for r in off.checks} == {"scan"}
    fields = ("status", "metric_value", "failed_rows", "row_count", "message", "validator", "passed")
    for a, b in zip(on.checks, off.checks, strict=True):
        assert a.check_id == b.check_id
        assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}, a.check_id
    assert on.row_count == off.row_count and on.decision == off.decision
    # (the implicit schema checks read the schema only: asserted in the no-scan test)
    return {_key(r): r.evaluated_from for r in on.checks if r.check_type != "schema"}, on


def _expected(rows: list[tuple]) -> dict[str, float]:
    """Plain Python over the live rows."""
    ids = [r[0] for r in rows]
    times = [r[3] for r in rows if r[3] is not None]
    return {
        "rows": len(rows),
        "id/id_min": min(ids),
        "id/id_max": max(ids),
        "qty/qty_missing": sum(1 for r in rows if r[1] is None) / len(rows),
        "qty/qty_count": sum(1 for r in rows if r[1] is not None),
        "price/price_min": float(min(r[2] for r in rows)),
        "price/price_max": float(max(r[2] for r in rows)),
        "ts/ts_max": (max(times) - dt.datetime(1970, 1, 1, tzinfo=UTC)) / dt.timedelta(seconds=1),
        "ts/ts_min": (min(times) - dt.datetime(1970, 1, 1, tzinfo=UTC)) / dt.timedelta(seconds=1),
        "fresh": (REFERENCE - max(times)) / dt.timedelta(hours=1),
        "name/name_missing": sum(1 for r in rows if r[4] is None),
        "opt/opt_missing": sum(1 for r in rows if r[6] is None),
        "days": float(sum(1 for d in range(7) if REFERENCE.date() - dt.timedelta(days=d) not in {r[7] for r in rows})),
    }


def _assert_expected(result, rows) -> None:
    by_key = {_key(r): r for r in result.checks}
    for key, value in _expected(rows).items():
        assert by_key[key].metric_value == pytest.approx(value, rel=1e-12, abs=1e-9), key


def test_a_table_with_statistics_everywhere(spark, tmp_path):
    """Long strings, NaN/±inf, NULL-only files, microsecond timestamps, a column beyond the indexed ones."""
    path = str(tmp_path / "plain")
    rows = _rows()
    _create(spark, path, rows)
    contract = load_contract(_contract())
    sources, result = _compare(spark, contract, path)
    assert {k for k, v in sources.items() if v == "statistics"} == FROM_LOG
    assert {k for k, v in sources.items() if v == "scan"} == set(SCANNED)
    _assert_expected(result, rows)
    # The contract's own switch: every check scanned.
    off, _ = _evaluate(spark, load_contract({**_contract(), "enforcement": {"statistics": "off"}}), path)
    assert {r.evaluated_from for r in off.checks} == {"scan"}
    # Microsecond precision survives millisecond statistics: the value is not a truncated one.
    assert any(r[3] is not None and r[3].microsecond % 1000 for r in rows)


def test_deletion_vectors_and_a_renamed_column(spark, tmp_path):
    path = str(tmp_path / "dv")
    rows = _rows(seed=3)
    _create(
        spark,
        path,
        rows,
        PROPERTIES + ", 'delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name'",
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 0")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN qty TO quantity")
    log_dir = Path(path) / "_delta_log"
    assert any("deletionVector" in entry.read_text() for entry in sorted(log_dir.glob("*.json")))
    live = [r for r in rows if r[0] % 7]
    contract = load_contract(_contract("quantity"))
    sources, result = _compare(spark, contract, path)
    # Row counts subtract the deleted rows; NULL counts are exact only where a file's count is 0 or all rows.
    assert sources["rows"] == "statistics"
    assert sources["days"] == "statistics"  # partition values are exact
    assert sources["id/id_missing"] == "statistics"  # no NULL in id: nothing deleted can change it
    assert sources["opt/opt_missing"] == "statistics"  # each file all NULL or none: exact too
    assert sources["quantity/qty_missing"] == "scan"  # files with some NULLs lost rows: which, unknown
    # Bounds of files with deletion vectors are not tight: min/max are scanned.
    for key in ("id/id_min", "id/id_max", "price/price_min", "ts/ts_max", "fresh"):
        assert sources[key] == "scan", key
    expected = _expected(live)
    by_key = {_key(r).replace("quantity", "qty"): r for r in result.checks}
    for key in ("rows", "id/id_max", "qty/qty_missing", "qty/qty_count", "fresh", "days", "opt/opt_missing"):
        assert by_key[key].metric_value == pytest.approx(expected[key], rel=1e-12), key


def _append_without_statistics(spark, path: str, rows: list[tuple]) -> None:
    spark.conf.set("spark.databricks.delta.stats.collect", "false")
    try:
        spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.stats.collect")


def test_files_written_without_statistics_fall_back_to_the_scan(spark, tmp_path):
    """Most of the data without statistics: a read of those files would be the scan, so the scan it is."""
    path = str(tmp_path / "nostats")
    rows = _rows(seed=5)
    _create(spark, path, rows[:60])
    _append_without_statistics(spark, path, rows[60:])
    contract = load_contract(_contract())
    sources, result = _compare(spark, contract, path)
    assert sources["days"] == "scan"  # no numRecords: a file's live rows are unknown
    # Only the partition column's extremes (partition values are in the log whatever the statistics) — and
    # amount's minimum: the files with statistics hold -inf (row 44), below which nothing lies, NaN included.
    assert -math.inf in [r[5] for r in rows[:60]]
    assert {k for k, v in sources.items() if v == "statistics"} == {
        "day/day_min",
        "day/day_max",
        "fresh_day",
        "amount/amount_min",
    }
    _assert_expected(result, rows)


def test_a_few_files_without_usable_statistics_are_read_narrowly(spark, tmp_path):
    """Deletion vectors in one partition, a few files without statistics, a renamed column: the log answers
    for the other files and one narrow delta-rs read per metric completes it (mergeable metrics)."""
    path = str(tmp_path / "residual")
    rows = _rows(count=480, seed=17)
    _create(
        spark,
        path,
        rows,
        PROPERTIES + ", 'delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name'",
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE day = '2024-03-09' AND id % 7 = 0")
    rng = random.Random(99)
    # The extremes of id, price and ts, and some NULLs, only in files without statistics.
    extra = [
        (
            999 if i == 0 else 9_999 if i == 1 else 5_000 + i,
            None if i % 4 == 0 else rng.randrange(0, 50),
            Decimal("0.01") if i == 2 else Decimal("99999.99") if i == 3 else Decimal(rng.randrange(100, 999)) / 100,
            dt.datetime(2024, 3, 9, 23, 59, 59, 999_997 - i, UTC),
            None if i % 3 == 0 else "y" * 40,
            rng.uniform(-1, 1),
            i,
            DAYS[2],
            i,
        )
        for i in range(12)
    ]
    _append_without_statistics(spark, path, extra)
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN qty TO quantity")
    live = [r for r in rows if not (r[7] == DAYS[3] and r[0] % 7 == 0)] + extra
    assert len(live) < len(rows) + len(extra)
    contract = load_contract(_contract("quantity"))
    sources, result = _compare(spark, contract, path)
    completed = {
        "rows", "fresh", "fresh_day", "id/id_missing", "id/id_min", "id/id_max", "quantity/qty_missing",
        "quantity/qty_count", "price/price_min", "price/price_max", "ts/ts_min", "ts/ts_max", "day/day_min",
        "day/day_max", "name/name_missing", "opt/opt_missing", "opt/opt_max", "amount/amount_min",
    }  # fmt: skip
    assert {k for k, v in sources.items() if v == "statistics"} == completed
    # completeness needs every file's live rows; the rest as on a table with statistics everywhere.
    assert {k for k, v in sources.items() if v == "scan"} == {"days"} | {
        k.replace("qty", "quantity") if k.startswith("qty") else k for k in SCANNED
    }
    expected = _expected(live)
    by_key = {_key(r).replace("quantity", "qty"): r for r in result.checks}
    for key, value in expected.items():
        assert by_key[key].metric_value == pytest.approx(value, rel=1e-12, abs=1e-9), key
    assert by_key["id/id_min"].metric_value == 999 and by_key["id/id_max"].metric_value == 9_999
    assert by_key["price/price_min"].metric_value == 0.01
    # A contract of such checks only: no Spark scan at all.
    log_only = load_contract(
        {
            "name": "log_only",
            "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
            "columns": [
                {"name": "id", "checks": [{"name": "id_max", "type": "max"}]},
                {"name": "quantity", "checks": [{"name": "qty_missing", "type": "missing"}]},
            ],
        }
    )
    after, ev = _evaluate(spark, log_only, path)
    assert {r.evaluated_from for r in after.checks} == {"statistics"}
    assert [r.metric_value for r in after.checks if r.check_type != "schema"] == [
        len(live),
        9_999,
        sum(1 for r in live if r[1] is None),
    ]
    assert next(s for s in ev.stats if s.name == "scan").detail.endswith("no scan")
    assert "narrow delta-rs reads" in next(s for s in ev.stats if s.name == "statistics").detail


DOUBLES = {
    "name": "doubles",
    "columns": [
        {"name": "x", "checks": [{"name": "x_min", "type": "min", "min": -1000}, {"name": "x_max", "type": "max"}]},
        {"name": "f", "checks": [{"name": "f_min", "type": "min"}, {"name": "f_max", "type": "max", "max": 1000}]},
    ],
}


def _doubles(count: int, seed: int, nan_at: int | None = None) -> list[tuple]:
    rng = random.Random(seed)
    rows = [(i, None if i % 17 == 0 else rng.uniform(-500, 500), rng.uniform(-9, 9)) for i in range(count)]
    if nan_at is not None:
        rows[nan_at] = (nan_at, float("nan"), rows[nan_at][2])
    return rows


def _write_doubles(spark, path: str, rows: list[tuple], files: int = 6, mode: str = "append") -> None:
    df = spark.createDataFrame(rows, "id long, x double, f double").selectExpr("id", "x", "CAST(f AS float) AS f")
    df.repartitionByRange(files, "id").write.format("delta").mode(mode).save(path)


def _float32(value: float) -> float:
    import struct

    return struct.unpack("f", struct.pack("f", value))[0]


def test_doubles_min_and_max_from_the_log(spark, tmp_path):
    """Doubles and floats over many files: NaN ruled out by Delta's Spark statistics (NaN is the largest
    value there); a NaN in scope sends ``max`` to the scan; deletion vectors are read narrowly; a table a
    writer that leaves NaN out of its statistics touched is scanned."""
    contract = load_contract(DOUBLES)
    path = str(tmp_path / "doubles")
    rows = _doubles(600, 37)
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id long, x double, f float) USING delta "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    _write_doubles(spark, path, rows)
    sources, result = _compare(spark, contract, path)
    assert sources == dict.fromkeys(["x/x_min", "x/x_max", "f/f_min", "f/f_max"], "statistics")
    by_key = {_key(r): r.metric_value for r in result.checks if r.check_type != "schema"}
    xs = [r[1] for r in rows if r[1] is not None]
    fs = [_float32(r[2]) for r in rows]
    assert by_key == {"x/x_min": min(xs), "x/x_max": max(xs), "f/f_min": min(fs), "f/f_max": max(fs)}
    # No data file is read: every file deleted, the same answers.
    saved = tmp_path / "saved"
    shutil.copytree(path, saved)
    for entry in Path(path).glob("*.parquet"):
        entry.unlink()
    after, _ = _evaluate(spark, contract, path)
    assert {_key(r): r.metric_value for r in after.checks if r.check_type != "schema"} == by_key
    assert {r.evaluated_from for r in after.checks} == {"statistics"}
    shutil.rmtree(path)
    shutil.copytree(saved, path)

    # Deletion vectors on the files holding the extremes: those files read narrowly, the answer exact.
    low, high = min(rows, key=lambda r: r[1] if r[1] is not None else 1e9), max(rows, key=lambda r: r[1] or -1e9)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN ({low[0]}, {high[0]})")
    live = [r for r in rows if r[0] not in (low[0], high[0])]
    sources, result = _compare(spark, contract, path)
    assert sources == dict.fromkeys(["x/x_min", "x/x_max", "f/f_min", "f/f_max"], "statistics")
    by_key = {_key(r): r.metric_value for r in result.checks if r.check_type != "schema"}
    xs = [r[1] for r in live if r[1] is not None]
    assert (by_key["x/x_min"], by_key["x/x_max"]) == (min(xs), max(xs))

    # One NaN in one file: max is NaN (the scan reports it), min still from the log.
    _write_doubles(spark, path, _doubles(50, 5, nan_at=7)[1:], files=1)
    sources, result = _compare(spark, contract, path)
    assert sources["x/x_max"] == "scan" and sources["x/x_min"] == "statistics"
    assert next(r.metric_value for r in result.checks if _key(r) == "x/x_max") is None  # NaN: no number

    # A table delta-rs wrote (NaN and ±Infinity left out of its statistics): the writers are unknown, scanned.
    import pyarrow as pa
    from deltalake import write_deltalake

    other = str(tmp_path / "delta_rs")
    write_deltalake(
        other,
        pa.table({"id": [1, 2, 3], "x": [1.0, float("nan"), 5.0], "f": pa.array([1.0, 2.0, 3.0], pa.float32())}),
    )
    sources, result = _compare(spark, contract, other)
    assert set(sources.values()) == {"scan"}
    assert next(r.metric_value for r in result.checks if _key(r) == "x/x_max") is None


def test_partition_filters_and_data_filters(spark, tmp_path):
    path = str(tmp_path / "filtered")
    rows = _rows(seed=9)
    _create(spark, path, rows)
    contract = load_contract(_contract())
    # A pure partition predicate: pruned files exactly, answered from the log.
    scoped = "day >= '2024-03-08'"
    sources, result = _compare(spark, contract, path, scoped)
    assert {k for k, v in sources.items() if v == "statistics"} == FROM_LOG
    _assert_expected(result, [r for r in rows if r[7] >= dt.date(2024, 3, 8)])
    # Mixed with a data predicate: the log cannot prune exactly, so everything is scanned.
    mixed = "day >= '2024-03-08' AND qty > 10"
    sources, result = _compare(spark, contract, path, mixed)
    assert set(sources.values()) == {"scan"}
    _assert_expected(result, [r for r in rows if r[7] >= dt.date(2024, 3, 8) and r[1] is not None and r[1] > 10])


def test_a_statistics_only_contract_reads_no_data_file(spark, tmp_path):
    """Every data file deleted after the comparison: the log alone still answers, identically."""
    path = str(tmp_path / "no_scan")
    rows = _rows(seed=11)
    _create(spark, path, rows)
    contract = load_contract(
        {
            "name": "log_only",
            "checks": [
                {"name": "rows", "type": "num_rows", "min": 1},
                {"name": "fresh_day", "type": "freshness", "timestamp_column": "day", "max_age_hours": 200},
            ],
            "columns": [
                {
                    "name": "id",
                    "checks": [
                        {"name": "id_missing", "type": "missing", "max": 0},
                        {"name": "id_max", "type": "max", "max": 10**6},
                    ],
                },
                {"name": "day", "checks": [{"name": "day_min", "type": "min"}]},
            ],
        }  # fmt: skip
    )
    before, _ = _evaluate(spark, contract, path, statistics=False)
    for entry in os.listdir(path):
        if entry != "_delta_log":
            shutil.rmtree(os.path.join(path, entry))
    after, ev = _evaluate(spark, contract, path)
    # Five checks and the two columns' schema checks (the schema is the log's): none read a data file.
    assert [r.evaluated_from for r in after.checks] == ["statistics"] * 7
    assert [(r.metric_value, r.status) for r in after.checks] == [(r.metric_value, r.status) for r in before.checks]
    assert next(s for s in ev.stats if s.name == "scan").detail.endswith("no scan")
    assert after.row_count == len(rows)
    assert not math.isnan(after.checks[1].metric_value)


def test_a_results_table_without_evaluated_from_accepts_the_new_rows(spark, tmp_path):
    """A results table of the previous release (no ``evaluated_from``) is evolved by the next write; its
    old rows read the column as NULL (Spark and delta-rs), the new rows keep it."""
    from airflow_dq_contracts.results import RESULT_COLUMNS, CheckResult
    from airflow_dq_contracts.store import sinks
    from airflow_dq_contracts.store.results import delta_store as results_store

    path = str(tmp_path / "results")
    # the release before evaluated_from: the columns before it (later additions, e.g. source_range, came after)
    names = [name for name, _ in RESULT_COLUMNS]
    previous = list(RESULT_COLUMNS[: names.index("evaluated_from")])

    def record(run_id: str, source: str | None) -> CheckResult:
        return CheckResult(
            run_id=run_id, contract_name="c", contract_version="1", dataset="d", check_id="rows",
            check_name="rows", check_type="num_rows", column=None, severity="P1", action="gate",
            validator="min 1", metric_value=3.0, status="passed", passed=True, failed_rows=None,
            message="", row_count=3, evaluated_at=REFERENCE, reference_time=REFERENCE, evaluated_from=source,
        )  # fmt: skip

    old = record("run-old", None)
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in previous)
    spark.createDataFrame([tuple(getattr(old, n) for n, _ in previous)], ddl).write.format("delta").partitionBy(
        "contract_name"
    ).save(path)
    assert sinks.write_results(spark, [record("run-new", "statistics")], path, run_id="run-new") == 1
    columns = spark.read.format("delta").load(path).columns
    assert columns == names  # evolved to this release's columns, in order
    for read in (results_store.read_results, lambda p, r: sinks.read_results(spark, p, r)):
        assert [r.evaluated_from for r in read(path, "run-new")] == ["statistics"]
        assert [r.evaluated_from for r in read(path, "run-old")] == [None]


def test_the_contract_switch_is_validated():
    from airflow_dq_contracts.contract import ContractValidationError

    assert load_contract({"name": "a"}).enforcement.statistics is True
    assert load_contract({"name": "a", "enforcement": {"statistics": "off"}}).enforcement.statistics is False
    with pytest.raises(ContractValidationError, match="statistics"):
        load_contract({"name": "a", "enforcement": {"statistics": "sometimes"}})
