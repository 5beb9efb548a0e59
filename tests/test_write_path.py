"""The write path's no-op cases on real Delta tables (issue #17).

A run with nothing to quarantine writes no quarantine rows and commits nothing there — unless an
earlier attempt of the same run set rows aside, which the retry must remove (idempotent per run).
A run that does quarantine writes both outputs from one annotated frame and still conserves rows.
Expected rows are computed here in plain Python from the generated rows, never by the engine.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.runner import run_contract
from airflow_dq_contracts.store import sinks
from airflow_dq_contracts.store.results import delta_store as results_store

pytestmark = pytest.mark.spark

CONTRACT = load_contract(
    {
        "name": "write_path",
        "columns": [
            {"name": "id", "checks": [{"name": "unique", "type": "duplicates", "max": 0, "severity": "P2"}]},  # flag
            {
                "name": "status",
                "checks": [{"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"}],
            },  # quarantine
            {"name": "day"},
        ],
    }
)
DDL = "id long, status string, day string"
CLEAN = [(1, "new", "d1"), (2, "paid", "d1"), (2, "new", "d1"), (3, "paid", "d2")]  # a P2 duplicate only
DIRTY = [(1, "new", "d1"), (2, "lost", "d1"), (3, "gone", "d1"), (4, "paid", "d1")]


def _expected_quarantined(rows):
    return sorted(r for r in rows if r[1] not in ("new", "paid"))


def _write_input(spark, path, rows):
    spark.createDataFrame(rows, DDL).write.format("delta").mode("overwrite").save(path)


def _version(spark, path):
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"]


def _rows(spark, path, run_id):
    frame = spark.read.format("delta").load(path).where(f"_dq_run_id = '{run_id}'")
    return sorted((r["id"], r["status"], r["day"]) for r in frame.collect())


def _run(spark, source, run_id, **targets):
    lines: list[str] = []
    result = run_contract(
        spark, CONTRACT, input_path=source, input_format="delta", run_id=run_id, progress=lines.append, **targets
    )
    return result, lines


def test_nothing_to_quarantine_creates_and_commits_nothing(spark, tmp_path):
    source, quarantine = str(tmp_path / "in"), str(tmp_path / "quarantine")
    valid, results = str(tmp_path / "valid"), str(tmp_path / "results")
    _write_input(spark, source, CLEAN)
    result, lines = _run(
        spark, source, "clean-1", quarantine_table=quarantine, valid_table=valid, results_table=results
    )
    assert result.decision == "pass"
    assert [r.status for r in result.checks if r.check_id == "id/unique"] == ["failed"]  # a flag, not a quarantine
    assert result.quarantine_rows == 0 and result.summary()["quarantine"] == {"table": quarantine, "rows": 0}
    assert not os.path.exists(quarantine)  # no table, no empty commit
    assert any("nothing to set aside, no commit" in line for line in lines)
    # Every input row is published, exactly once; the results are there too.
    assert _rows(spark, valid, "clean-1") == sorted(CLEAN)
    assert result.valid_rows == len(CLEAN)
    assert len(results_store.read_results(results, "clean-1", contract_name="write_path")) == len(result.checks)


def test_nothing_to_quarantine_leaves_an_existing_table_untouched(spark, tmp_path):
    source, quarantine = str(tmp_path / "in"), str(tmp_path / "quarantine")
    _write_input(spark, source, DIRTY)
    first, _ = _run(spark, source, "dirty-1", quarantine_table=quarantine)
    assert first.decision == "quarantine" and first.quarantine_rows == len(_expected_quarantined(DIRTY))
    version = _version(spark, quarantine)

    _write_input(spark, source, CLEAN)
    second, _ = _run(spark, source, "clean-2", quarantine_table=quarantine)
    assert second.quarantine_rows == 0
    assert _version(spark, quarantine) == version  # no commit for a run with nothing to set aside
    assert _rows(spark, quarantine, "dirty-1") == _expected_quarantined(DIRTY)  # other runs intact


def test_retry_after_an_attempt_that_quarantined_removes_its_rows(spark, tmp_path):
    source, quarantine = str(tmp_path / "in"), str(tmp_path / "quarantine")
    valid = str(tmp_path / "valid")
    _write_input(spark, source, DIRTY)
    other, _ = _run(spark, source, "other-run", quarantine_table=quarantine, valid_table=valid)
    attempt1, _ = _run(spark, source, "run-x", quarantine_table=quarantine, valid_table=valid)
    expected = _expected_quarantined(DIRTY)
    assert attempt1.quarantine_rows == len(expected) == 2
    assert _rows(spark, quarantine, "run-x") == expected
    # Conservation on the cached two-output path: valid + quarantined = input, each row once.
    assert collections.Counter(_rows(spark, valid, "run-x") + _rows(spark, quarantine, "run-x")) == collections.Counter(
        DIRTY
    )
    version = _version(spark, quarantine)

    # The data was repaired upstream and the task retried under the same run id.
    _write_input(spark, source, CLEAN)
    attempt2, lines = _run(spark, source, "run-x", quarantine_table=quarantine, valid_table=valid)
    assert attempt2.decision == "pass" and attempt2.quarantine_rows == 0
    assert _rows(spark, quarantine, "run-x") == []  # the earlier attempt's rows are gone…
    assert _version(spark, quarantine) == version + 1  # …in one commit
    assert any("an earlier attempt's rows removed" in line for line in lines)
    assert _rows(spark, quarantine, "other-run") == expected  # another run's rows stay
    assert results_store.read_quarantine_count(quarantine, "run-x") == 0
    assert _rows(spark, valid, "run-x") == sorted(CLEAN)  # the valid rows were replaced, not added
    assert other.quarantine_rows == len(expected)

    # A third attempt, still clean: nothing left to remove, so nothing is committed.
    _run(spark, source, "run-x", quarantine_table=quarantine, valid_table=valid)
    assert _version(spark, quarantine) == version + 1


def test_clear_run_rows_refuses_a_table_of_another_kind(spark, tmp_path):
    valid = str(tmp_path / "valid")
    spark.createDataFrame([(1, "r")], "id long, _dq_run_id string").write.format("delta").save(valid)
    with pytest.raises(sinks.SinkError, match="not a quarantine table"):
        sinks.clear_run_rows(spark, valid, kind="quarantine", run_id="r")
    with pytest.raises(ValueError, match="kind must be one of"):
        sinks.clear_run_rows(spark, valid, kind="results", run_id="r")
    assert sinks.clear_run_rows(spark, str(tmp_path / "missing"), kind="quarantine", run_id="r") is False
    assert not os.path.exists(tmp_path / "missing")


# --------------------------------------------------------------------------------------- first writes


def _last_commit(spark, path):
    row = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]
    return row["operation"], dict(row["operationParameters"])


def test_a_runs_first_write_appends_and_its_retry_replaces(spark, tmp_path):
    """A run's first commit to an existing table is a plain append; a retry of that run replaces."""
    source, quarantine, results = str(tmp_path / "in"), str(tmp_path / "quarantine"), str(tmp_path / "results")
    _write_input(spark, source, DIRTY)
    _run(spark, source, "run-a", quarantine_table=quarantine, results_table=results)  # creates both tables
    first, _ = _run(spark, source, "run-b", quarantine_table=quarantine, results_table=results)
    # run-b is new to both tables: appended, no predicate (no replacement, no whole-table rewrite plan).
    for table in (quarantine, results):
        operation, parameters = _last_commit(spark, table)
        assert (operation, parameters.get("mode")) == ("WRITE", "Append"), (table, operation, parameters)
        assert "predicate" not in parameters

    # The same run again (an Airflow retry) after the data changed: its rows are replaced, in one commit.
    dirtier = DIRTY + [(5, "void", "d1")]
    _write_input(spark, source, dirtier)
    version = _version(spark, quarantine)
    retry, _ = _run(spark, source, "run-b", quarantine_table=quarantine, results_table=results)
    operation, parameters = _last_commit(spark, quarantine)
    assert operation == "WRITE" and "run-b" in parameters.get("predicate", ""), parameters
    assert _version(spark, quarantine) == version + 1
    assert _rows(spark, quarantine, "run-b") == _expected_quarantined(dirtier)  # replaced, not added
    assert retry.quarantine_rows == len(_expected_quarantined(dirtier)) == 3
    assert first.quarantine_rows == len(_expected_quarantined(DIRTY)) == 2
    assert "run-b" in _last_commit(spark, results)[1].get("predicate", "")
    checks = results_store.read_results(results, "run-b", contract_name="write_path")
    assert len(checks) == len(retry.checks)  # one copy of the run's results
    assert {c.check_id: c.failed_rows for c in checks}["status/known"] == 3
    assert _rows(spark, quarantine, "run-a") == _expected_quarantined(DIRTY)  # the other run untouched


def test_without_delta_rs_on_the_driver_every_write_replaces(spark, tmp_path, monkeypatch):
    """A driver that cannot read the table with delta-rs (a cluster node without ``deltalake``)
    falls back to the replacing commit: the same rows, never a duplicate."""
    source, quarantine, results = str(tmp_path / "in"), str(tmp_path / "quarantine"), str(tmp_path / "results")
    _write_input(spark, source, DIRTY)
    _run(spark, source, "run-a", quarantine_table=quarantine, results_table=results)
    monkeypatch.setitem(__import__("sys").modules, "deltalake", None)  # import deltalake → ImportError
    result, _ = _run(spark, source, "run-b", quarantine_table=quarantine, results_table=results)
    for table in (quarantine, results):
        operation, parameters = _last_commit(spark, table)
        assert operation == "WRITE" and "run-b" in parameters.get("predicate", ""), (table, parameters)
    assert _rows(spark, quarantine, "run-b") == _expected_quarantined(DIRTY)
    assert result.quarantine_rows == 2
    monkeypatch.undo()
    assert len(results_store.read_results(results, "run-b", contract_name="write_path")) == len(result.checks)


def test_the_read_back_reads_the_runs_own_commit_and_falls_back_to_a_scan(spark, tmp_path):
    """``read_results(version=…)`` reads the one commit the job reports; a commit that is not the
    run's (or no commit at all) still gives the same rows, from a scan of the table."""
    from airflow_dq_contracts.results import RESULT_COLUMNS

    source, results = str(tmp_path / "in"), str(tmp_path / "results")
    _write_input(spark, source, DIRTY)
    run_a, _ = _run(spark, source, "run-a", results_table=results)
    run_b, _ = _run(spark, source, "run-b", results_table=results)
    retried, _ = _run(spark, source, "run-b", results_table=results)  # a replacing commit
    assert retried.results_version == _version(spark, results) == run_b.results_version + 1
    assert run_a.results_version is not None and run_a.results_version < run_b.results_version
    names = [name for name, _ in RESULT_COLUMNS]

    scanned = results_store.read_results(results, "run-b", contract_name="write_path")
    assert len(scanned) == len(retried.checks)
    from_commit = results_store.commit_rows(results, retried.results_version, "run-b", names)
    assert from_commit is not None and len(from_commit) == len(scanned)  # the one-commit path was taken
    assert (
        results_store.read_results(results, "run-b", contract_name="write_path", version=retried.results_version)
        == scanned
    )
    # Not the run's commit (run-a's, or the table's creation), or no such version: the scan answers.
    for version in (run_a.results_version, 0, 999):
        assert results_store.commit_rows(results, version, "run-b", names) is None
        assert results_store.read_results(results, "run-b", contract_name="write_path", version=version) == scanned
    # The expected failed rows, from plain Python: whitelist misses in DIRTY.
    known = {c.check_id: c.failed_rows for c in scanned}["status/known"]
    assert known == sum(1 for row in DIRTY if row[1] not in ("new", "paid"))


def test_the_read_back_of_a_delta_rs_commit_imports_no_pandas(spark, tmp_path):
    """delta-rs leaves the partition column out of its files: the one-commit read rebuilds it — in a fresh
    process, without importing pandas (pyarrow's conversion of a Python list would: a quarter of a
    second of every task's read-back, on a worker that needs no pandas)."""
    source, results = str(tmp_path / "in"), str(tmp_path / "results")
    _write_input(spark, source, DIRTY)
    _run(spark, source, "run-a", results_table=results)
    run_c, _ = _run(spark, source, "run-c", results_table=results)  # a new run: appended by delta-rs
    log = (tmp_path / "results" / "_delta_log" / f"{run_c.results_version:020d}.json").read_text()
    assert '"engineInfo":"delta-rs' in log
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys\n"
            "from airflow_dq_contracts.store import results_store\n"
            f"rows = results_store.read_results({results!r}, 'run-c', contract_name='write_path', "
            f"version={run_c.results_version})\n"
            "print(json.dumps([sorted(r.check_id for r in rows), sorted({r.contract_name for r in rows}), "
            "'pandas' in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    expected = sorted(c.check_id for c in run_c.checks)
    assert json.loads(probe.stdout.strip().splitlines()[-1]) == [expected, ["write_path"], False]


# --------------------------------------------------------------------------------------- small inputs

SMALL_CONTRACT = load_contract(
    {
        "name": "small_input",
        "columns": [
            {
                "name": "id",
                "checks": [
                    {"name": "unique", "type": "duplicates", "max": 0, "severity": "P2"},
                    {"name": "positive", "type": "min", "min": 1, "severity": "P1"},
                ],
            },
            {
                "name": "status",
                "checks": [
                    {"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"},
                    {"name": "kinds", "type": "cardinality", "max": 3, "severity": "P3"},
                ],
            },
            {"name": "day", "checks": [{"name": "shape", "type": "pattern", "pattern": "^d[0-9]$", "severity": "P1"}]},
        ],
    }
)
SMALL_ROWS = [
    (i % 37 + 1 + (i % 5 == 0), ("new", "paid", "lost")[i % 3], f"d{i % 4}" if i % 11 else "day") for i in range(200)
]


def test_a_small_input_runs_with_cheaper_settings_and_the_same_results(spark, tmp_path):
    """Whole-stage codegen off and one shuffle partition during a small run, restored after it; a large
    run scans with the session's settings; every check's metric, failed rows and the quarantine are
    the same in all three and equal plain Python."""
    from airflow_dq_contracts.engine.session import SMALL_INPUT_CONF_KEY

    source = str(tmp_path / "in")
    _write_input(spark, source, SMALL_ROWS)
    before = {key: spark.conf.get(key) for key in ("spark.sql.codegen.wholeStage", "spark.sql.shuffle.partitions")}
    outcomes = {}
    # Default limit (small run); 0 (tuning off); 1 byte (a "large" run: codegen back before the scan).
    for label, limit in (("tuned", None), ("untuned", "0"), ("large", "1")):
        if limit is not None:
            spark.conf.set(SMALL_INPUT_CONF_KEY, limit)
        seen: list[tuple[str, str, str]] = []

        def progress(line: str, seen: list[tuple[str, str, str]] = seen) -> None:
            seen.append(
                (line, spark.conf.get("spark.sql.codegen.wholeStage"), spark.conf.get("spark.sql.shuffle.partitions"))
            )

        try:
            result = run_contract(
                spark,
                SMALL_CONTRACT,
                input_path=source,
                input_format="delta",
                run_id=f"small-{label}",
                quarantine_table=str(tmp_path / f"q_{label}"),
                progress=progress,
            )
        finally:
            spark.conf.unset(SMALL_INPUT_CONF_KEY)
        scan = [entry for entry in seen if entry[0].startswith("scan:")]
        notes = [entry[0] for entry in seen if entry[0].startswith("small input")]
        if label == "tuned":
            assert notes and "whole-stage codegen off" in notes[0] and "1 shuffle partition" in notes[0]
            assert scan[0][1:] == ("false", "1")  # in force while the checks ran
        else:
            assert not notes and scan[0][1:] == (
                before["spark.sql.codegen.wholeStage"],
                before["spark.sql.shuffle.partitions"],
            )
        # The caller's session gets its settings back.
        assert {key: spark.conf.get(key) for key in before} == before
        outcomes[label] = (
            {c.check_id: (c.metric_value, c.failed_rows, c.status) for c in result.checks},
            _rows(spark, str(tmp_path / f"q_{label}"), f"small-{label}"),
        )
    assert outcomes["tuned"] == outcomes["untuned"] == outcomes["large"]
    checks, quarantined = outcomes["tuned"]
    # Plain Python over the same rows.
    ids = collections.Counter(r[0] for r in SMALL_ROWS)
    assert checks["id/unique"][1] == sum(n for n in ids.values() if n > 1)
    assert checks["id/positive"][0] == min(ids)
    assert checks["status/kinds"][0] == len({r[1] for r in SMALL_ROWS})
    bad = sorted(r for r in SMALL_ROWS if r[1] not in ("new", "paid") or not r[2].startswith("d") or r[2] == "day")
    assert checks["status/known"][1] == sum(1 for r in SMALL_ROWS if r[1] not in ("new", "paid"))
    assert checks["day/shape"][1] == sum(1 for r in SMALL_ROWS if r[2] == "day")
    assert quarantined == bad


# --------------------------------------------------------------------------------------- driver-side reads

TYPES_DDL = """id BIGINT NOT NULL COMMENT 'the id', i INT, sh SMALLINT, b TINYINT, d DOUBLE, f FLOAT, dec DECIMAL(10,2),
    s STRING, v VARCHAR(5), flag BOOLEAN, day DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, bin BINARY, arr ARRAY<STRING>,
    m MAP<STRING,INT>, st STRUCT<a:INT,b:STRING>"""
TYPES_ROWS = """
 (1, 1, 2, 3, 1.5, 2.5, 12.34, 'x', 'ab', true, DATE'2024-05-01', TIMESTAMP'2024-05-01 23:30:00.123456',
  TIMESTAMP_NTZ'2024-05-01 23:30:00.5', X'0102', array('a', NULL), map('k', 1), named_struct('a', 1, 'b', 'z')),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, -7, -2, -3, double('NaN'), float('-inf'), -0.01, '', 'abcde', false, DATE'1970-01-01',
  TIMESTAMP'1900-01-01 00:00:00', TIMESTAMP_NTZ'2262-01-01 00:00:00', X'', array(), map(), named_struct('a', NULL, 'b', NULL)),
 (4, 4, 4, 4, 4.0, 4.0, 4.00, 'four', 'four', true, DATE'2024-05-02', TIMESTAMP'2024-05-02 00:00:00',
  TIMESTAMP_NTZ'2024-05-02 00:00:00', X'04', array('d'), map('d', 4), named_struct('a', 4, 'b', 'd'))"""


def _as_spark_reads_it(spark, path):
    frame = spark.read.format("delta").load(path)
    return frame.schema, sorted(map(repr, frame.collect()))


def test_a_small_delta_table_read_on_the_driver_is_the_table_spark_reads(spark, tmp_path):
    """Every column type, NULLs, NaN/infinities, far timestamps, a partition column, a non-UTC session
    zone — then deletion vectors and a renamed column (column mapping): delta-rs on the driver hands
    Spark the same schema (names, types, nullability, comments) and the same rows as Spark's reader."""
    from airflow_dq_contracts.engine import runner
    from airflow_dq_contracts.engine.session import DRIVER_READ_SIZES

    path = str(tmp_path / "types")
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        spark.sql(f"CREATE TABLE delta.`{path}` ({TYPES_DDL}) USING delta PARTITIONED BY (day)")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {TYPES_ROWS}")
        on_driver = runner._driver_read(spark, path, {})
        assert on_driver is not None
        assert DRIVER_READ_SIZES[on_driver] == sum(
            os.path.getsize(os.path.join(root, name))
            for root, _, names in os.walk(path)
            for name in names
            if name.endswith(".parquet")
        )
        assert (on_driver.schema, sorted(map(repr, on_driver.collect()))) == _as_spark_reads_it(spark, path)
        assert on_driver.schema["id"].nullable is False and on_driver.schema["id"].metadata == {"comment": "the id"}

        spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
            "'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '3', 'delta.minWriterVersion' = '7')"
        )
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO s_renamed")
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
        on_driver = runner._driver_read(spark, path, {})
        assert on_driver is not None
        expected = _as_spark_reads_it(spark, path)
        assert len(expected[1]) == 3 and "s_renamed" in expected[0].fieldNames()
        assert (on_driver.schema, sorted(map(repr, on_driver.collect()))) == expected
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

    # Off (0), over the limit, or with a reader option: Spark reads it.
    spark.conf.set("spark.dqcontracts.driverReadBytes", "0")
    try:
        assert runner._driver_read(spark, path, {}) is None
    finally:
        spark.conf.unset("spark.dqcontracts.driverReadBytes")
    spark.conf.set("spark.dqcontracts.driverReadBytes", "100")
    try:
        assert runner._driver_read(spark, path, {}) is None
    finally:
        spark.conf.unset("spark.dqcontracts.driverReadBytes")
    assert runner._driver_read(spark, path, {"versionAsOf": "1"}) is None
    assert runner._driver_read(spark, str(tmp_path / "missing"), {}) is None


def test_a_run_on_a_driver_read_input_has_the_results_of_a_spark_read(spark, tmp_path):
    """The same contract on the same Delta input, read on the driver and by Spark: identical results,
    identical quarantined rows (and the plain-Python count)."""
    source = str(tmp_path / "in")
    _write_input(spark, source, DIRTY)
    runs = {}
    for label, limit in (("driver", None), ("spark", "0")):
        if limit is not None:
            spark.conf.set("spark.dqcontracts.driverReadBytes", limit)
        try:
            quarantine = str(tmp_path / f"quarantine_{label}")
            result, lines = _run(spark, source, f"run-{label}", quarantine_table=quarantine, filter="day = 'd1'")
        finally:
            spark.conf.unset("spark.dqcontracts.driverReadBytes")
        read_line = next(line for line in lines if line.startswith("read: "))
        assert ("read by delta-rs on the driver" in read_line) == (label == "driver"), read_line
        runs[label] = (result, _rows(spark, quarantine, f"run-{label}"))
    (driver, driver_rows), (spark_read, spark_rows) = runs["driver"], runs["spark"]
    assert driver_rows == spark_rows == _expected_quarantined([r for r in DIRTY if r[2] == "d1"])
    assert [(c.check_id, c.metric_value, c.failed_rows, c.status) for c in driver.checks] == [
        (c.check_id, c.metric_value, c.failed_rows, c.status) for c in spark_read.checks
    ]
    assert driver.row_count == spark_read.row_count == sum(1 for r in DIRTY if r[2] == "d1")
