"""Delta tables as Spark 4 writes them (issue 37): the sensors' readers and statistics-first answer exactly.

One table-building pass (module fixture, real Spark + Delta 4): a partitioned table with type widening
(``int`` → ``bigint`` and ``date`` → ``timestamp_ntz`` after some data), deletion vectors (two DELETEs,
one removing the newest row), ``timestamp_ntz``, column mapping with a rename, an OPTIMIZE, v2
checkpoints with sidecars every 5 commits, the JSON commits before the newest checkpoint removed as log
cleanup would, change data feed, in-commit timestamps, a ``variant`` column and a column without
statistics (beyond ``delta.dataSkippingNumIndexedCols``); and a liquid-clustered table. delta-rs cannot scan either (``Unsupported table features
required: [TypeWidening]``): the answers come from the log reader. Every expected value is plain Python over
the rows written, kept as they are written, deleted and widened.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.evaluator import Evaluator
from airflow_dq_contracts.engine.statistics_first import StatisticsSource
from airflow_dq_contracts.store.tablemeta import CompletenessQuery, FreshnessQuery
from airflow_dq_contracts.store.tablemeta.delta_log import last_commit_time, newest_timestamp, partition_values
from airflow_dq_contracts.store.tablemeta.log_reader import read_log

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
REFERENCE = dt.datetime(2024, 3, 10, 12, 0, tzinfo=UTC)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def _ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def _sql_row(row: dict) -> str:
    def lit(value, kind: str) -> str:
        if value is None:
            return f"CAST(NULL AS {kind})"
        if kind == "TIMESTAMP":
            return f"TIMESTAMP'{value.strftime('%Y-%m-%d %H:%M:%S.%f')}Z'"
        if kind == "TIMESTAMP_NTZ":
            return f"TIMESTAMP_NTZ'{value.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
        if kind == "DATE":
            return f"DATE'{value.isoformat()}'"
        return str(value)

    d_kind = "TIMESTAMP_NTZ" if isinstance(row["d"], dt.datetime) else "DATE"
    return (
        f"({row['id']}, {lit(row['ts'], 'TIMESTAMP')}, {lit(row['d'], d_kind)}, "
        f"{lit(row['ts_ntz'], 'TIMESTAMP_NTZ')}, parse_json('{{\"k\": {row['id']}}}'), {lit(row['day'], 'DATE')})"
    )


class Built:
    """The tables' paths and the live rows (plain Python), kept in step with every write."""

    def __init__(self, root: Path) -> None:
        self.path = str(root / "events")
        self.clustered = str(root / "clustered")
        self.rows: list[dict] = []
        self.clustered_rows: list[dict] = []


def _batch(ids: range, day: dt.date, *, hour: int = 10, ntz: bool = True, d_ntz: bool = False) -> list[dict]:
    rows = []
    for i in ids:
        moment = dt.datetime.combine(day, dt.time(hour), UTC) + dt.timedelta(seconds=i, microseconds=(i * 7919) % 10**6)
        rows.append(
            {
                "id": i,
                "ts": None if i % 6 == 0 else moment,
                "ts_ntz": (moment.replace(tzinfo=None) - dt.timedelta(hours=3)) if ntz and i % 4 else None,
                "d": (moment.replace(tzinfo=None) if d_ntz else day - dt.timedelta(days=i % 3)) if i % 5 else None,
                "day": day,
            }
        )
    return rows


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory) -> Built:
    out = Built(tmp_path_factory.mktemp("spark4"))
    path = out.path
    sql = spark.sql
    sql(
        f"CREATE TABLE delta.`{path}` (id INT, event_time TIMESTAMP, d DATE, ts_ntz TIMESTAMP_NTZ, v VARIANT, day DATE) "
        "USING delta PARTITIONED BY (day) TBLPROPERTIES ('delta.enableTypeWidening' = 'true', "
        "'delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name', "
        "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '5', 'delta.enableChangeDataFeed' = 'true', "
        "'delta.enableInCommitTimestamps' = 'true', 'delta.dataSkippingNumIndexedCols' = '3')"
    )  # v0: no statistics for ts_ntz (beyond the first 3 columns): its files are read

    def insert(rows: list[dict]) -> None:
        sql(f"INSERT INTO delta.`{path}` VALUES {', '.join(_sql_row(r) for r in rows)}")
        out.rows += rows

    insert(_batch(range(1, 41), dt.date(2024, 3, 1)) + _batch(range(41, 61), dt.date(2024, 3, 2)))  # v1
    insert(_batch(range(61, 81), dt.date(2024, 3, 2), hour=20))  # v2: a second file in 2024-03-02
    insert(_batch(range(81, 101), dt.date(2024, 3, 3), ntz=False))  # v3
    sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 0")  # v4: deletion vectors
    out.rows = [r for r in out.rows if r["id"] % 7]
    sql(f"OPTIMIZE delta.`{path}`")  # v5 (a v2 checkpoint): the two files of 2024-03-02 compacted
    sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")  # v6: older files keep int statistics
    sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN d TYPE TIMESTAMP_NTZ")  # v7: date statistics in older files
    for row in out.rows:
        row["d"] = None if row["d"] is None else dt.datetime.combine(row["d"], dt.time(0))
    sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN event_time TO ts")  # v8
    big = _batch(range(3_000_000_001, 3_000_000_011), dt.date(2024, 3, 5), d_ntz=True)
    newest = {"id": 3_000_000_099, "ts": _ts("2024-03-09T23:59:59.999999"), "ts_ntz": dt.datetime(2030, 1, 1),
              "d": dt.datetime(2031, 1, 1), "day": dt.date(2024, 3, 5)}  # fmt: skip
    insert([*big, newest])  # v9
    insert(_batch(range(201, 211), dt.date(2024, 3, 6), hour=1, d_ntz=True))  # v10 (checkpoint)
    sql(f"DELETE FROM delta.`{path}` WHERE id = {newest['id']} OR id = 82")  # v11: the newest row goes
    out.rows = [r for r in out.rows if r["id"] not in (newest["id"], 82)]
    # Log cleanup after the checkpoint at 10 (Delta deletes expired commits at a checkpoint; its cut-off
    # is a day, so do what it does by hand).
    log = Path(path) / "_delta_log"
    for entry in log.iterdir():
        if entry.name[:20].isdigit() and int(entry.name[:20]) < 10 and ".checkpoint." not in entry.name:
            entry.unlink()
    for entry in log.glob(".0*.crc"):
        entry.unlink()

    clustered = out.clustered
    sql(
        f"CREATE TABLE delta.`{clustered}` (id INT, ts TIMESTAMP) USING delta CLUSTER BY (ts) "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.enableDeletionVectors' = 'true')"
    )
    out.clustered_rows = _batch(range(1, 21), dt.date(2024, 3, 7))
    values = ", ".join(f"({r['id']}, {_sql_row(r).split(', ')[1]})" for r in out.clustered_rows)
    sql(f"INSERT INTO delta.`{clustered}` VALUES {values}")
    sql(f"ALTER TABLE delta.`{clustered}` ALTER COLUMN id TYPE BIGINT")
    sql(f"DELETE FROM delta.`{clustered}` WHERE id = 19")
    out.clustered_rows = [r for r in out.clustered_rows if r["id"] != 19]
    return out


def _extreme(rows: list[dict], column: str, kind: str):
    values = [r[column] for r in rows if r[column] is not None]
    return (max if kind == "max" else min)(values)


def test_delta_rs_cannot_scan_them_and_the_log_is_cleaned_up(built):
    """The premise: delta-rs refuses the scan; the log has no commit before the checkpoint at 10."""
    from airflow_dq_contracts.store.delta import StoreError, open_table, scan_table

    with pytest.raises(StoreError, match="TypeWidening"):
        scan_table(open_table(built.path), built.path, "Delta", ["id"], None)
    names = os.listdir(Path(built.path) / "_delta_log")
    assert "00000000000000000000.json" not in names and "00000000000000000011.json" in names
    assert any(".checkpoint." in n for n in names) and os.listdir(Path(built.path) / "_delta_log" / "_sidecars")
    snapshot = read_log(built.path)
    assert snapshot.version == 11
    assert {"typeWidening", "deletionVectors", "columnMapping", "v2Checkpoint", "variantType"} <= set(
        snapshot.reader_features
    )
    assert sum(snapshot.live_rows(i) for i in range(len(snapshot.files))) == len(built.rows)


@pytest.mark.parametrize("column", ["ts", "ts_ntz", "d", "day"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_the_freshness_sensors_reader(built, column, kind):
    measurement = newest_timestamp(built.path, column, kind)
    expected = _extreme(built.rows, column, kind)
    if isinstance(expected, dt.datetime):
        expected = expected if expected.tzinfo else expected.replace(tzinfo=UTC)  # ntz: wall clock as UTC
    else:
        expected = dt.datetime.combine(expected, dt.time(0), UTC)
    assert measurement.value == expected, measurement.describe()
    assert measurement.table_version == 11


def test_the_sensor_questions_and_the_commit_time(built):
    fresh = FreshnessQuery(built.path, "ts", 200, reference_time=REFERENCE.isoformat()).evaluate()
    newest = _extreme(built.rows, "ts", "max")
    assert fresh.passed and fresh.age_hours == pytest.approx((REFERENCE - newest) / dt.timedelta(hours=1))
    complete = CompletenessQuery(
        built.path, "day", "daily", lookback_days=7, max_gap_count=10, allow_future_gaps=False,
        reference_time=REFERENCE.isoformat(),
    ).evaluate()  # fmt: skip
    days = {r["day"] for r in built.rows}
    assert set(partition_values(built.path, "day").values) == days
    expected_gaps = sum(1 for back in range(7) if REFERENCE.date() - dt.timedelta(days=back) not in days)
    assert complete.gap_count == expected_gaps
    commit = last_commit_time(built.path)
    assert commit.source == "commit_log" and commit.table_version == 11
    assert abs(commit.value - dt.datetime.now(UTC)) < dt.timedelta(hours=1)  # the in-commit timestamp


def test_the_clustered_table(built):
    assert newest_timestamp(built.clustered, "ts").value == _extreme(built.clustered_rows, "ts", "max")
    assert newest_timestamp(built.clustered, "ts", "min").value == _extreme(built.clustered_rows, "ts", "min")
    snapshot = read_log(built.clustered)
    assert sum(snapshot.live_rows(i) for i in range(len(snapshot.files))) == len(built.clustered_rows)


def _contract() -> dict:
    return {
        "name": "spark4",
        "checks": [
            {"name": "rows", "type": "num_rows", "min": 1},
            {"name": "fresh", "type": "freshness", "timestamp_column": "ts", "max_age_hours": 500},
            {"name": "days", "type": "completeness", "partition_column": "day", "granularity": "daily",
             "lookback_days": 7, "max_gap_count": 10},
        ],
        "columns": [
            {"name": "id", "checks": [{"name": "id_min", "type": "min"}, {"name": "id_max", "type": "max"},
                                      {"name": "id_missing", "type": "missing"}]},
            {"name": "ts", "checks": [{"name": "ts_max", "type": "max"}, {"name": "ts_missing", "type": "missing"}]},
            {"name": "ts_ntz", "checks": [{"name": "ntz_min", "type": "min"}, {"name": "ntz_count", "type": "count"}]},
            {"name": "d", "checks": [{"name": "d_max", "type": "max"}, {"name": "d_min", "type": "min"},
                                     {"name": "d_missing", "type": "missing"}]},
            {"name": "day"},
        ],
    }  # fmt: skip


def _seconds(moment: dt.datetime) -> float:
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (moment - EPOCH) / dt.timedelta(seconds=1)


def test_statistics_first_answers_from_the_log(spark, built):
    rows = built.rows
    df = spark.read.format("delta").load(built.path)
    result = Evaluator(
        load_contract(_contract()), df, REFERENCE, run_id="r", statistics=StatisticsSource(built.path)
    ).run()
    by_key = {(f"{r.column}/" if r.column else "") + r.check_name: r for r in result.checks if r.check_type != "schema"}
    days = {r["day"] for r in rows}
    expected = {
        "rows": len(rows),
        # The newest ts (ids of 3e9 seconds) lies after REFERENCE: data newer than the reference time is an
        # error (contract/timeliness.py), with no metric; its age from the log is asserted below.
        "fresh": None,
        # Days of the window missing up to the newest partition (later ones are not due yet: the default).
        "days": float(
            sum(
                1
                for back in range(7)
                if (day := REFERENCE.date() - dt.timedelta(days=back)) not in days and day < max(days)
            )
        ),  # fmt: skip
        "id/id_min": _extreme(rows, "id", "min"),
        "id/id_max": _extreme(rows, "id", "max"),
        "id/id_missing": 0,
        "ts/ts_max": _seconds(_extreme(rows, "ts", "max")),
        "ts/ts_missing": sum(1 for r in rows if r["ts"] is None),
        "ts_ntz/ntz_min": _seconds(_extreme(rows, "ts_ntz", "min")),
        "ts_ntz/ntz_count": sum(1 for r in rows if r["ts_ntz"] is not None),
        "d/d_max": _seconds(_extreme(rows, "d", "max")),
        "d/d_min": _seconds(_extreme(rows, "d", "min")),
        "d/d_missing": sum(1 for r in rows if r["d"] is None),
    }
    for key, value in expected.items():
        if value is None:
            assert by_key[key].metric_value is None and by_key[key].status == "error", key
            continue
        assert by_key[key].metric_value == pytest.approx(value, rel=1e-12, abs=1e-6), key
        # ts_ntz has no statistics in any file (beyond dataSkippingNumIndexedCols): Spark's scan answers it.
        source = "scan" if key.startswith("ts_ntz/") else "statistics"
        assert by_key[key].evaluated_from == source, (key, by_key[key].evaluated_from)
    assert result.row_count == len(rows)
    assert "after the reference time" in by_key["fresh"].message
    # A day after the newest ts, the freshness check's age comes from the log: 24 h exactly.
    later = _extreme(rows, "ts", "max") + dt.timedelta(days=1)
    fresh = Evaluator(
        load_contract({"name": "spark4", "checks": [_contract()["checks"][1]]}), df, later, run_id="r2",
        statistics=StatisticsSource(built.path),
    ).run()  # fmt: skip
    (check,) = [r for r in fresh.checks if r.check_type == "freshness"]
    assert check.metric_value == pytest.approx(24.0, abs=1e-6) and check.evaluated_from == "statistics"


def test_a_poke_on_them_needs_no_jvm_and_no_pandas(built):
    """A sensor poke is a new process in reschedule mode: the log reader imports neither pyspark nor pandas."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from airflow_dq_contracts.store.tablemeta import FreshnessQuery, CompletenessQuery\n"
        f"print(FreshnessQuery({built.path!r}, 'ts', 1e9).evaluate().passed)\n"
        f"print(CompletenessQuery({built.path!r}, 'day', 'daily', max_gap_count=99).evaluate().passed)\n"
        "print(sorted(m for m in ('pandas', 'pyspark') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent.parent, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "[]"]
