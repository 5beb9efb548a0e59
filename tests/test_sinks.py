"""Delta sinks on real Delta tables: results (fixed schema, idempotent per run, concurrent writers),
quarantine / valid rows (conservation, retries, schema evolution), read back by Spark and delta-rs.

Expected values are written out by hand or computed in plain Python from the rows we feed in —
never by the code under test.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from airflow_dq_contracts.results import CheckResult
from airflow_dq_contracts.store.results import delta_store as results_store
from airflow_dq_contracts.store.results import driver_commits as delta_commits

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)

# DESIGN §5, written out independently of RESULT_COLUMNS.
EXPECTED_RESULTS_SCHEMA = [
    ("run_id", "string"),
    ("contract_name", "string"),
    ("contract_version", "string"),
    ("dataset", "string"),
    ("check_id", "string"),
    ("check_name", "string"),
    ("check_type", "string"),
    ("column", "string"),
    ("severity", "string"),
    ("action", "string"),
    ("validator", "string"),
    ("metric_value", "double"),
    ("status", "string"),
    ("passed", "boolean"),
    ("failed_rows", "bigint"),
    ("message", "string"),
    ("row_count", "bigint"),
    ("filter", "string"),
    ("evaluated_at", "timestamp"),
    ("dag_id", "string"),
    ("task_id", "string"),
    ("airflow_run_id", "string"),
    # second wave, appended
    ("tags", "array<string>"),
    ("reference_time", "timestamp"),
    ("expected_min", "double"),
    ("expected_max", "double"),
    # third wave (issue 27), appended
    ("evaluated_from", "string"),
    # fourth wave (issue 35), appended
    ("source_range", "string"),
]
FIRST_WAVE_COLUMNS = EXPECTED_RESULTS_SCHEMA[:22]

VIOLATIONS_DDL = "array<struct<check_id:string,check_name:string,check_type:string,severity:string,action:string>>"


def sinks():
    from airflow_dq_contracts.store import sinks as module

    return module


def make_records(run_id: str, contract: str = "orders", variant: int = 0, n: int = 3) -> list[CheckResult]:
    """``n`` check results with every nullable field null somewhere and distinct values per variant."""
    out = []
    for i in range(n):
        failed = (i + variant) % 2 == 1
        out.append(
            CheckResult(
                run_id=run_id,
                contract_name=contract,
                contract_version=f"1.{variant}.0",
                dataset="silver.orders",
                check_id=f"col{i}:check_{i}",
                check_name=f"Check {i}",
                check_type=("missing", "between", "count")[i % 3],
                column=None if i % 3 == 2 else f"col{i}",
                severity=f"P{i % 4}",
                action=("gate", "quarantine", "flag")[i % 3],
                validator=f"between [0, {i + 1}] ±1e-09",
                metric_value=None if i % 3 == 1 else 0.25 + i + variant,
                status="failed" if failed else "passed",
                passed=not failed,
                failed_rows=None if i % 3 == 2 else 10 * i + variant,
                message=f"message {i} of variant {variant}",
                row_count=1000 + variant,
                filter=None if i == 0 else "order_date = '2024-03-01'",
                evaluated_at=T0 + dt.timedelta(seconds=variant, microseconds=i),
                dag_id="orders_dag",
                task_id="check_orders",
                airflow_run_id=None if i == 0 else f"manual__{variant}",
                tags=None if i % 3 == 0 else [f"tag{i}", "pii"][: 1 + i % 2],
                reference_time=None if i % 3 == 1 else T0 - dt.timedelta(days=1 + variant, microseconds=i),
                expected_min=None if i % 2 else 10.0 * i - 0.5,
                expected_max=None if i % 2 else 10.0 * i + 0.5,
            )
        )
    return out


def as_dicts(records: list[CheckResult]) -> list[dict]:
    return sorted((dataclasses.asdict(r) for r in records), key=lambda d: (d["run_id"], d["check_id"]))


def run_values(spark, path: str, run_id: str) -> list[str]:
    """The ``note`` of each quarantined row of ``run_id``, sorted."""
    frame = spark.read.format("delta").load(path).where(f"_dq_run_id = '{run_id}'")
    return sorted(row["note"] for row in frame.select("note").collect())


def run_counts(spark, path: str, column: str) -> dict[str, int]:
    rows = spark.read.format("delta").load(path).groupBy(column).count().collect()
    return {row[0]: row[1] for row in rows}


def write_commits(spark, path: str) -> list:
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history().where("operation = 'WRITE'")
    return history.select("version", "operationParameters", "operationMetrics").collect()


# ------------------------------------------------------------------------------------------
# Targets


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/data/dq/results", True),
        ("relative/results", True),
        ("./results", True),
        ("~/dq/results", True),
        ("C:\\dq\\results", True),
        ("s3a://bucket/dq/results", True),
        ("file:///tmp/results", True),
        ("results", False),
        ("dq.results", False),
        ("main.dq.results", False),
    ],
)
def test_is_path(target, expected):
    assert sinks().is_path(target) is expected
    assert results_store.is_path(target) is expected


# ------------------------------------------------------------------------------------------
# Results table


def test_results_schema_partitioning_and_read_back_by_spark_and_delta_rs(spark, tmp_path):
    sk = sinks()
    path = str(tmp_path / "results")
    records = make_records("run-1", n=5)
    assert sk.write_results(spark, records, path, run_id="run-1") == 5

    schema = spark.read.format("delta").load(path).schema
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == EXPECTED_RESULTS_SCHEMA
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, path).detail().collect()[0]
    assert detail["partitionColumns"] == ["contract_name"]

    expected = as_dicts(records)
    assert as_dicts(sk.read_results(spark, path, run_id="run-1")) == expected
    assert as_dicts(sk.read_results(spark, path)) == expected
    assert as_dicts(results_store.read_results(path, "run-1")) == expected
    assert results_store.read_results(path, "no-such-run") == []
    # delta-rs sees the same fixed schema (Arrow names) and an instant, not a local wall time.
    from deltalake import DeltaTable as RsTable

    rs = RsTable(path)
    assert rs.schema().to_arrow().names == [name for name, _ in EXPECTED_RESULTS_SCHEMA]
    assert results_store.read_results(path, "run-1")[0].evaluated_at == T0

    # The operator's side: a fresh interpreter reads the run back with no pyspark (and no JVM).
    script = (
        "import json, sys\n"
        "from airflow_dq_contracts.store.results.delta_store import read_results\n"
        "checks = read_results(sys.argv[1], 'run-1')\n"
        "print(json.dumps({'pyspark': any(m.split('.')[0] == 'pyspark' for m in sys.modules),\n"
        "                  'checks': [c.to_dict() for c in checks]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["pyspark"] is False
    assert [c["check_id"] for c in answer["checks"]] == sorted(r.check_id for r in records)
    assert answer["checks"][0]["evaluated_at"] == "2024-03-01T12:30:15.123456Z"


def test_results_table_of_the_first_release_is_evolved_and_old_rows_read_as_null(spark, tmp_path):
    """A results table written before the second-wave columns existed: the next write appends the
    four columns in its own commit, old rows read them as NULL (Spark and delta-rs), new rows keep them."""
    sk = sinks()
    path = str(tmp_path / "results")
    old = make_records("run-old", n=3)
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in FIRST_WAVE_COLUMNS)
    rows = [tuple(getattr(r, name) for name, _ in FIRST_WAVE_COLUMNS) for r in old]
    spark.createDataFrame(rows, schema=ddl).write.format("delta").partitionBy("contract_name").save(path)
    assert len(spark.read.format("delta").load(path).columns) == 22
    # Reading the old table works before any new write.
    for record in results_store.read_results(path, "run-old") + sk.read_results(spark, path, "run-old"):
        assert (record.tags, record.reference_time, record.expected_min, record.expected_max) == (None,) * 4

    new = make_records("run-new", variant=1, n=3)
    assert sk.write_results(spark, new, path, run_id="run-new") == 3
    schema = spark.read.format("delta").load(path).schema
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == EXPECTED_RESULTS_SCHEMA
    assert as_dicts(results_store.read_results(path, "run-new")) == as_dicts(new)
    assert as_dicts(sk.read_results(spark, path, "run-new")) == as_dicts(new)
    expected_old = [
        dataclasses.replace(r, tags=None, reference_time=None, expected_min=None, expected_max=None) for r in old
    ]
    assert as_dicts(results_store.read_results(path, "run-old")) == as_dicts(expected_old)
    assert as_dicts(sk.read_results(spark, path, "run-old")) == as_dicts(expected_old)


def test_same_run_twice_leaves_one_copy_and_other_runs_accumulate(spark, tmp_path):
    sk = sinks()
    path = str(tmp_path / "results")
    tricky = "it's a \\ run"  # a quote and a backslash must not break (or widen) the predicate
    sk.write_results(spark, make_records(tricky, variant=0, n=3), path, run_id=tricky)
    sk.write_results(spark, make_records("run-b", contract="customers", n=4), path, run_id="run-b")
    second = make_records(tricky, variant=7, n=2)
    assert sk.write_results(spark, second, path, run_id=tricky) == 2

    assert run_counts(spark, path, "run_id") == {tricky: 2, "run-b": 4}
    # The second attempt's values win, and nothing of the first is left.
    assert as_dicts(sk.read_results(spark, path, run_id=tricky)) == as_dicts(second)
    assert as_dicts(results_store.read_results(path, tricky)) == as_dicts(second)
    assert as_dicts(results_store.read_results(path, "run-b")) == as_dicts(make_records("run-b", "customers", n=4))

    # Each write is one commit: a run's first write a plain append (delta-rs saw no row of the run,
    # so nothing needs replacing), its second a replacement whose predicate is exactly that run.
    commits = sorted(write_commits(spark, path), key=lambda c: c["version"])
    assert len(commits) == 3
    assert [c["operationParameters"].get("mode") for c in commits[:2]] == ["Append", "Append"]
    assert [c["operationParameters"].get("predicate") for c in commits] == [None, None, "run_id = 'it\\'s a \\\\ run'"]

    # A run that now has no checks removes its earlier rows.
    assert sk.write_results(spark, [], path, run_id="run-b") == 0
    assert run_counts(spark, path, "run_id") == {tricky: 2}


def test_spark_results_store_writes_replaces_and_reads_through_the_store_interface(spark, tmp_path):
    from airflow_dq_contracts.store.results.port import ResultsStore
    from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS

    sk = sinks()
    path = str(tmp_path / "dq_results")
    store = sk.SparkResultsStore(spark, path)
    assert isinstance(store, ResultsStore)
    first = make_records("run-1", n=4)
    version = store.write_run(first, "run-1")
    assert version is not None and version == store.committed_version()
    assert as_dicts(store.read_run("run-1", version=version)) == as_dicts(first)
    assert store.read_run("run-1", contract_name="customers") == []

    # A retry of the run replaces its rows in a later commit.
    retried = make_records("run-1", variant=1, n=2)
    again = store.write_run(retried, "run-1")
    assert again is not None and again > version
    assert as_dicts(store.read_run("run-1", contract_name="orders")) == as_dicts(retried)

    # make_records leaves reference_time NULL for every third-plus-one check: no history point.
    dated = sorted(r.check_id for r in retried if r.reference_time is not None)
    window = store.read_history("orders", since=T0 - dt.timedelta(days=30), until=T0)
    assert sorted(row["check_id"] for row in window) == dated
    assert store.read_history("orders", since=T0) == []

    row = {name: None for name, _ in REGISTRY_COLUMNS}
    row.update(
        contract_name="orders",
        contract_version="1.0.0",
        owner="team-a",
        first_run_at=T0,
        last_run_at=T0,
        last_run_id="run-1",
    )
    store.upsert_registry(row)
    later = T0 + dt.timedelta(hours=1)
    store.upsert_registry(
        {**row, "owner": "team-b", "first_run_at": later, "last_run_at": later, "last_run_id": "run-2"}
    )
    stored = store.read_registry("orders")
    assert (stored["owner"], stored["first_run_at"], stored["last_run_id"]) == ("team-b", T0, "run-2")
    assert store.read_registry("orders", "9.9.9") is None and store.read_registry("customers") is None


def test_delta_results_store_commits_new_runs_without_spark_and_leaves_retries_to_spark(spark, tmp_path):
    """The plain (delta-rs) store: a new run's append and a registry upsert need no Spark; a retry's
    replacement is Spark's to commit, so the plain store refuses it and writes nothing."""
    from airflow_dq_contracts.store.delta import StoreError
    from airflow_dq_contracts.store.results.port import ResultsStore
    from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS

    sk = sinks()
    path = str(tmp_path / "dq_results")
    spark_store = sk.SparkResultsStore(spark, path)  # Spark creates the tables (partitioning, schema)
    spark_store.write_run(make_records("run-1", n=3), "run-1")
    row = {name: None for name, _ in REGISTRY_COLUMNS}
    row.update(
        contract_name="orders",
        contract_version="1.0.0",
        owner="team-a",
        first_run_at=T0,
        last_run_at=T0,
        last_run_id="run-1",
    )
    spark_store.upsert_registry(row)

    store = results_store.DeltaResultsStore(path)
    assert isinstance(store, ResultsStore)
    before = store.committed_version()
    second = make_records("run-2", n=4)
    version = store.write_run(second, "run-2")
    assert before is not None and version == before + 1 == store.committed_version()
    assert as_dicts(store.read_run("run-2", version=version)) == as_dicts(second)
    assert as_dicts(store.read_run("run-2")) == as_dicts(second)
    assert as_dicts(spark_store.read_run("run-1")) == as_dicts(make_records("run-1", n=3))

    with pytest.raises(StoreError, match="needs Spark's Delta writer"):
        store.write_run(make_records("run-2", variant=1, n=2), "run-2")
    assert store.committed_version() == version
    assert as_dicts(store.read_run("run-2")) == as_dicts(second)

    later = T0 + dt.timedelta(hours=1)
    store.upsert_registry(
        {**row, "owner": "team-b", "first_run_at": later, "last_run_at": later, "last_run_id": "run-2"}
    )
    store.upsert_registry({**row, "contract_name": "customers", "owner": "team-c"})
    stored = store.read_registry("orders")
    assert (stored["owner"], stored["first_run_at"], stored["last_run_id"]) == ("team-b", T0, "run-2")
    assert store.read_registry("customers")["owner"] == "team-c"
    assert spark_store.read_registry("orders")["owner"] == "team-b"


def test_four_concurrent_writers_into_a_table_that_does_not_exist_yet(spark, tmp_path, caplog):
    sk = sinks()
    path = str(tmp_path / "results")
    runs = {f"run-{i}": make_records(f"run-{i}", contract=f"contract{i % 2}", variant=i, n=3) for i in range(4)}
    errors: list[BaseException] = []
    written: dict[str, int] = {}
    windows: dict[str, tuple[float, float]] = {}
    barrier = threading.Barrier(len(runs))
    caplog.set_level("DEBUG", logger="airflow_dq_contracts.store.commit_lock")

    def write(run_id: str) -> None:
        try:
            barrier.wait()  # start together so they really race for version 0 and later commits
            began = time.monotonic()
            written[run_id] = sk.write_results(spark, runs[run_id], path, run_id=run_id)
            windows[run_id] = (began, time.monotonic())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(run_id,)) for run_id in runs]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    elapsed = time.monotonic() - started
    assert not errors, errors
    assert written == {run_id: 3 for run_id in runs}
    assert run_counts(spark, path, "run_id") == {run_id: 3 for run_id in runs}
    expected = as_dicts([r for records in runs.values() for r in records])
    assert as_dicts(sk.read_results(spark, path)) == expected
    assert len(write_commits(spark, path)) == 4  # nothing written twice
    from delta.tables import DeltaTable

    operations = [r["operation"] for r in DeltaTable.forPath(spark, path).history().collect()]
    assert operations.count("CREATE TABLE") == 1  # the creation race had exactly one winner
    # The race happened: every write overlapped another in time, and some writer waited on the table's
    # commit lock while another committed (a run without contention fails here).
    for run_id, (began, ended) in windows.items():
        assert any(b < ended and began < e for other, (b, e) in windows.items() if other != run_id), windows
    waits = [r for r in caplog.records if "waited" in r.getMessage() and "for another commit" in r.getMessage()]
    assert waits, "no writer ever waited for another's commit: the writers did not contend"
    print(f"4 concurrent result writers: {elapsed:.1f}s, {len(waits)} waits on the commit lock")


def test_table_name_target_in_the_default_database(spark):
    sk = sinks()
    suffix = uuid.uuid4().hex[:8]
    name, quarantine = f"dq_sinks_results_{suffix}", f"dq_sinks_quarantine_{suffix}"
    assert not sk.is_path(name)
    try:
        sk.write_results(spark, make_records("run-1", n=2), name, run_id="run-1")
        sk.write_results(spark, make_records("run-2", n=3), name, run_id="run-2")
        again = make_records("run-1", variant=3, n=1)
        sk.write_results(spark, again, name, run_id="run-1")
        assert spark.catalog.tableExists(name)
        table = spark.table(name)
        assert [(f.name, f.dataType.simpleString()) for f in table.schema.fields] == EXPECTED_RESULTS_SCHEMA
        assert {r[0]: r[1] for r in table.groupBy("run_id").count().collect()} == {"run-1": 1, "run-2": 3}
        assert as_dicts(sk.read_results(spark, name, run_id="run-1")) == as_dicts(again)
        with pytest.raises(results_store.ResultsStoreError, match="catalog table name"):
            results_store.read_results(name, "run-1")

        # Quarantine by name too; a first run with nothing to set aside still creates the table.
        empty = spark.createDataFrame([], f"id int, _dq_violations {VIOLATIONS_DDL}")
        assert sk.write_quarantine(spark, empty, quarantine, run_id="run-1") == 0
        assert spark.table(quarantine).columns == ["id", "_dq_run_id", "_dq_violations", "_dq_quarantined_at"]
        rows = spark.createDataFrame([(1, [violation("c:q", "gate")])], f"id int, _dq_violations {VIOLATIONS_DDL}")
        assert sk.write_quarantine(spark, rows, quarantine, run_id="run-2") == 1
        assert [(r["id"], r["_dq_run_id"]) for r in spark.table(quarantine).collect()] == [(1, "run-2")]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"DROP TABLE IF EXISTS {quarantine}")


def test_spark_results_store_reads_catalog_tables_with_spark(spark):
    from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS

    sk = sinks()
    database = f"dq_store_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {database}")
    try:
        store = sk.SparkResultsStore(spark, f"{database}.results")
        assert store.registry_table == f"{database}.dq_contracts"
        records = make_records("run-1", n=2)
        store.write_run(records, "run-1")
        assert as_dicts(store.read_run("run-1")) == as_dicts(records)
        assert store.read_run("run-1", contract_name="customers") == []
        window = store.read_history("orders", since=T0 - dt.timedelta(days=30), until=T0)
        assert sorted(row["check_id"] for row in window) == sorted(r.check_id for r in records if r.reference_time)
        assert store.read_registry("orders") is None  # no registry table yet

        row = {name: None for name, _ in REGISTRY_COLUMNS}
        row.update(
            contract_name="orders",
            contract_version="1.0.0",
            owner="team-a",
            first_run_at=T0,
            last_run_at=T0,
            last_run_id="run-1",
        )
        store.upsert_registry(row)
        stored = store.read_registry("orders", "1.0.0")
        assert (stored["owner"], stored["first_run_at"]) == ("team-a", T0)
        assert store.read_registry("customers") is None
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


def test_results_input_errors_are_clear(spark, tmp_path):
    sk = sinks()
    path = str(tmp_path / "results")
    with pytest.raises(sk.SinkError, match="record 'col0:check_0' has run_id 'run-x'"):
        sk.write_results(spark, make_records("run-x", n=1), path, run_id="run-y")
    with pytest.raises(sk.SinkError, match="run_id must be a non-empty string"):
        sk.write_results(spark, [], path, run_id="")
    with pytest.raises(sk.SinkError, match="results table '.*' does not exist"):
        sk.read_results(spark, path)
    with pytest.raises(results_store.ResultsStoreError, match="does not exist"):
        results_store.read_results(path, "run-x")
    with pytest.raises(results_store.ResultsStoreError, match="does not exist"):
        results_store.read_quarantine_count(str(tmp_path / "quarantine"), "run-x")

    # Something that is not a Delta table is never overwritten.
    folder = tmp_path / "not_delta"
    folder.mkdir()
    (folder / "data.csv").write_text("a,b\n1,2\n")
    with pytest.raises(sk.SinkError, match="exists but is not a Delta table"):
        sk.write_results(spark, make_records("run-1", n=1), str(folder), run_id="run-1")
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"

    # A Delta table with another schema is refused, naming the differences.
    other = str(tmp_path / "other")
    spark.createDataFrame([(1, "x")], "run_id int, note string").write.format("delta").save(other)
    with pytest.raises(sk.SinkError, match=r"different schema .*column run_id is int, expected string"):
        sk.write_results(spark, make_records("run-1", n=1), other, run_id="run-1")
    annotated = spark.createDataFrame([(1, [])], f"id int, _dq_violations {VIOLATIONS_DDL}")
    with pytest.raises(sk.SinkError, match="is not a quarantine table .*no _dq_run_id"):
        sk.write_quarantine(spark, annotated, other, run_id="run-1")
    assert spark.read.format("delta").load(other).columns == ["run_id", "note"]


# ------------------------------------------------------------------------------------------
# Split, quarantine and valid rows


def violation(check_id: str, action: str | None) -> tuple:
    return (check_id, f"name of {check_id}", "pattern", "P1", action)


ANNOTATED_ROWS = [
    # id, name, amount, src.region, _dq_violations
    (1, "a", 10.0, "eu", []),  # no violation
    (2, "b", None, None, None),  # NULL violations = none
    (3, "c", 30.0, "us", [violation("amount:positive", "flag")]),  # flag only: valid
    (4, None, 40.0, "eu", [violation("name:not_null", "quarantine")]),
    (
        5,
        "e",
        -5.0,
        "us",
        [  # several violations: quarantined once, listing all three
            violation("amount:positive", "flag"),
            violation("id:range", "gate"),
            violation("name:pattern", "quarantine"),
        ],
    ),
    (6, "f", 60.0, "eu", [violation("x:odd", None)]),  # no action: not quarantining
    (7, "g", 70.0, "us", [violation("name:pattern", "quarantine")]),
    (7, "g", 70.0, "us", [violation("name:pattern", "quarantine")]),  # exact duplicate: both kept
    (8, "h", 80.0, "eu", [violation("amount:positive", "flag"), violation("amount:max", "flag")]),
    (9, "i", 90.0, "us", [violation("id:range", "gate")]),
]
ANNOTATED_DDL = f"id int, name string, amount double, `src.region` string, _dq_violations {VIOLATIONS_DDL}"


def expected_split(rows):
    """Plain-Python oracle: quarantined iff some violation's action is quarantine or gate."""
    valid, quarantined = [], []
    for row in rows:
        violations = row[-1] or []
        if any(v[4] in ("quarantine", "gate") for v in violations):
            quarantined.append(row)
        else:
            valid.append(row)
    return valid, quarantined


def test_split_quarantine_and_valid_conserve_rows(spark, tmp_path):
    sk = sinks()
    annotated = spark.createDataFrame(ANNOTATED_ROWS, ANNOTATED_DDL)
    exp_valid, exp_quarantined = expected_split(ANNOTATED_ROWS)
    assert (len(exp_valid), len(exp_quarantined)) == (5, 5)

    valid, quarantined = sk.split_annotated(annotated)
    assert valid.columns == ["id", "name", "amount", "src.region", "_dq_flags"]
    assert quarantined.columns == ["id", "name", "amount", "src.region", "_dq_violations"]

    q_path, v_path = str(tmp_path / "quarantine"), str(tmp_path / "valid")
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=UTC)
    assert sk.write_quarantine(spark, quarantined, q_path, run_id="run-1", quarantined_at=at) == 5
    assert sk.write_valid(spark, valid, v_path, run_id="run-1") == 5

    q_df = spark.read.format("delta").load(q_path)
    assert [(f.name, f.dataType.simpleString()) for f in q_df.schema.fields] == [
        ("id", "int"),
        ("name", "string"),
        ("amount", "double"),
        ("src.region", "string"),
        ("_dq_run_id", "string"),
        ("_dq_violations", VIOLATIONS_DDL),
        ("_dq_quarantined_at", "timestamp"),
    ]
    v_df = spark.read.format("delta").load(v_path)
    assert v_df.columns == ["id", "name", "amount", "src.region", "_dq_run_id", "_dq_flags"]

    def data(row) -> tuple:
        return (row["id"], row["name"], row["amount"], row["src.region"])

    q_rows = q_df.selectExpr("*", "unix_micros(_dq_quarantined_at) AS at_us").collect()
    got_quarantined = collections.Counter(data(r) + (tuple(tuple(v) for v in r["_dq_violations"]),) for r in q_rows)
    assert got_quarantined == collections.Counter(r[:4] + (tuple(r[4]),) for r in exp_quarantined)
    assert {r["_dq_run_id"] for r in q_rows} == {"run-1"}
    at_us = (at - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
    assert {r["at_us"] for r in q_rows} == {at_us}

    v_rows = v_df.collect()
    assert collections.Counter(data(r) for r in v_rows) == collections.Counter(r[:4] for r in exp_valid)
    # A kept row keeps its (flag) violations as _dq_flags; none → empty, NULL stays NULL.
    flags = lambda vs: None if vs is None else tuple(tuple(v) for v in vs)  # noqa: E731
    assert collections.Counter(data(r) + (flags(r["_dq_flags"]),) for r in v_rows) == collections.Counter(
        r[:4] + (flags(r[4]),) for r in exp_valid
    )
    assert {r["_dq_run_id"] for r in v_rows} == {"run-1"}
    # Conservation: valid + quarantined is exactly the input, duplicates included.
    assert collections.Counter(data(r) for r in v_rows) + collections.Counter(data(r) for r in q_rows) == (
        collections.Counter(r[:4] for r in ANNOTATED_ROWS)
    )
    assert results_store.read_quarantine_count(q_path, "run-1") == 5
    assert results_store.read_quarantine_count(q_path, "run-2") == 0

    # A retried run replaces its published valid rows instead of duplicating them.
    assert sk.write_valid(spark, valid, v_path, run_id="run-1") == 5
    assert run_counts(spark, v_path, "_dq_run_id") == {"run-1": 5}

    # The sinks refuse each other's tables rather than mixing two kinds of rows.
    with pytest.raises(sk.SinkError, match="is not a valid table .*has _dq_violations"):
        sk.write_valid(spark, valid, q_path, run_id="run-2")
    with pytest.raises(sk.SinkError, match="is not a quarantine table .*no _dq_violations, _dq_quarantined_at"):
        sk.write_quarantine(spark, quarantined, v_path, run_id="run-2")
    assert run_counts(spark, q_path, "_dq_run_id") == {"run-1": 5}
    assert run_counts(spark, v_path, "_dq_run_id") == {"run-1": 5}


def test_quarantine_appends_runs_replaces_retries_and_evolves_schema(spark, tmp_path):
    sk = sinks()
    path = str(tmp_path / "quarantine")
    q = [violation("c:q", "quarantine")]

    def frame(rows, ddl=f"id int, name string, _dq_violations {VIOLATIONS_DDL}"):
        return spark.createDataFrame(rows, ddl)

    assert sk.write_quarantine(spark, frame([(1, "a", q), (2, "b", q), (3, "c", q)]), path, run_id="A") == 3
    assert sk.write_quarantine(spark, frame([(10, "x", q), (11, "y", q)]), path, run_id="B") == 2
    assert sk.write_quarantine(spark, frame([(4, "d", q)]), path, run_id="A") == 1  # retry of A
    assert run_counts(spark, path, "_dq_run_id") == {"A": 1, "B": 2}
    assert sorted(r["id"] for r in spark.read.format("delta").load(path).where("_dq_run_id = 'A'").collect()) == [4]

    # A later run brings a new column: added to the table; earlier rows read it as NULL.
    evolved = frame([(20, "w", "web", q)], f"id int, name string, channel string, _dq_violations {VIOLATIONS_DDL}")
    assert sk.write_quarantine(spark, evolved, path, run_id="C") == 1
    table = spark.read.format("delta").load(path)
    assert "channel" in table.columns
    assert {(r["id"], r["channel"]) for r in table.collect()} == {(4, None), (10, None), (11, None), (20, "web")}

    # A retry that quarantines nothing still removes the earlier attempt's rows.
    assert sk.write_quarantine(spark, frame([]), path, run_id="A") == 0
    assert run_counts(spark, path, "_dq_run_id") == {"B": 2, "C": 1}
    assert results_store.read_quarantine_count(path, "A") == 0
    assert results_store.read_quarantine_count(path, "B") == 2

    # A changed column type cannot be merged: a clear error, and the table is untouched.
    retyped = frame([("9", "z", q)], f"id string, name string, _dq_violations {VIOLATIONS_DDL}")
    with pytest.raises(sk.SinkError, match=r"column id is int in the table but string in this run"):
        sk.write_quarantine(spark, retyped, path, run_id="D")
    assert run_counts(spark, path, "_dq_run_id") == {"B": 2, "C": 1}


def test_quarantine_input_errors_are_clear(spark, tmp_path):
    sk = sinks()
    path = str(tmp_path / "quarantine")
    plain = spark.createDataFrame([(1,)], "id int")
    with pytest.raises(sk.SinkError, match="has no _dq_violations column"):
        sk.split_annotated(plain)
    with pytest.raises(sk.SinkError, match="has no _dq_violations column"):
        sk.write_quarantine(spark, plain, path, run_id="A")
    wrong = spark.createDataFrame([(1, ["x"])], "id int, _dq_violations array<string>")
    with pytest.raises(sk.SinkError, match="must be array<struct<check_id"):
        sk.split_annotated(wrong)
    clash = spark.createDataFrame([(1, "old", [])], f"id int, _dq_run_id string, _dq_violations {VIOLATIONS_DDL}")
    with pytest.raises(sk.SinkError, match="already has column.*_dq_run_id"):
        sk.write_quarantine(spark, clash, path, run_id="A")
    with pytest.raises(ValueError, match="max_attempts"):
        sk.write_quarantine(spark, clash.drop("_dq_run_id"), path, run_id="A", max_attempts=0)
    assert not os.path.exists(path)


# ------------------------------------------------------------------------------------------
# Real commit conflicts: a Python UDF inside the write blocks until another writer has committed
# to the same table, so the write's commit really conflicts (Delta ConcurrentAppendException).


class Interferer:
    """Commits an append of another run to ``path`` whenever the UDF signals, ``budget`` times."""

    def __init__(self, spark, path: str, signal_dir: Path, budget: int) -> None:
        self.spark, self.path, self.dir, self.budget = spark, path, signal_dir, budget
        self.commits = 0
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Interferer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop.set()
        self.thread.join(timeout=60)

    def _loop(self) -> None:
        from pyspark.sql import functions as F

        while not self.stop.is_set():
            for go in sorted(self.dir.glob("go-*")):
                done = self.dir / ("done-" + go.name[3:])
                if done.exists():
                    continue
                try:
                    if self.commits < self.budget:
                        other = self.spark.createDataFrame(
                            [(100 + self.commits, "other", [violation("c:q", "quarantine")])],
                            f"id int, note string, _dq_violations {VIOLATIONS_DDL}",
                        ).select(
                            "id",
                            "note",
                            F.lit(f"other-{self.commits}").alias("_dq_run_id"),
                            "_dq_violations",
                            F.current_timestamp().alias("_dq_quarantined_at"),
                        )
                        other.write.format("delta").mode("append").save(self.path)
                        self.commits += 1
                except BaseException as exc:  # noqa: BLE001 - reported by the test
                    self.errors.append(exc)
                done.touch()
            time.sleep(0.05)


def blocking_frame(spark, signal_dir: Path):
    """One quarantined row whose computation waits until the interferer has committed."""
    from pyspark.sql import functions as F

    directory = str(signal_dir)

    @F.udf("string")
    def wait_for_other_writer(note):
        import os as _os
        import time as _time
        import uuid as _uuid

        token = _uuid.uuid4().hex
        open(_os.path.join(directory, "go-" + token), "w").close()
        deadline = _time.monotonic() + 120
        while not _os.path.exists(_os.path.join(directory, "done-" + token)):
            if _time.monotonic() > deadline:
                raise TimeoutError("interfering writer never committed")
            _time.sleep(0.05)
        return note

    frame = spark.createDataFrame(
        [(1, "mine", [violation("c:q", "quarantine")])], f"id int, note string, _dq_violations {VIOLATIONS_DDL}"
    )
    return frame.withColumn("note", wait_for_other_writer("note"))


#: A row bound above the driver's limit: the write goes through Spark's Delta, whose commit
#: conflicts and retries the test below is about (a few rows of a local table are otherwise
#: collected first and committed by delta-rs under the table's lock, see test_a_new_table_…).
SPARK_WRITE = delta_commits.DRIVER_ROWS_LIMIT + 1


def test_conflicting_commits_are_retried_then_exhausted_with_a_clear_error(spark, tmp_path):
    sk = sinks()
    path = str(tmp_path / "quarantine")
    seed = spark.createDataFrame(
        [(0, "seed", [violation("c:q", "quarantine")])], f"id int, note string, _dq_violations {VIOLATIONS_DDL}"
    )
    sk.write_quarantine(spark, seed, path, run_id="seed")
    # An earlier attempt of run "mine": the writes below are retries, which replace the run's rows,
    # and a replacing commit conflicts with any append committed while it ran.
    sk.write_quarantine(spark, seed, path, run_id="mine")

    # Every attempt conflicts: after max_attempts a clear error, and nothing of the run is written.
    signals = tmp_path / "signals-exhausted"
    signals.mkdir()
    with Interferer(spark, path, signals, budget=100) as interferer, pytest.raises(sk.SinkError) as caught:
        sk.write_quarantine(
            spark, blocking_frame(spark, signals), path, run_id="mine", max_attempts=2, rows_at_most=SPARK_WRITE
        )
    assert not interferer.errors, interferer.errors
    message = str(caught.value)
    assert f"quarantine table {path!r}" in message
    assert "gave up after 2 attempts" in message
    assert "conflict" in message.lower()
    assert caught.value.attempts == 2 and caught.value.target == path
    assert interferer.commits == 2
    assert run_counts(spark, path, "_dq_run_id") == {"seed": 1, "mine": 1, "other-0": 1, "other-1": 1}
    assert run_values(spark, path, "mine") == ["seed"]  # the earlier attempt's row, untouched

    # Only the first attempt conflicts: the retry lands, exactly once.
    signals = tmp_path / "signals-retried"
    signals.mkdir()
    with Interferer(spark, path, signals, budget=1) as interferer:
        written = sk.write_quarantine(
            spark, blocking_frame(spark, signals), path, run_id="mine", max_attempts=3, rows_at_most=SPARK_WRITE
        )
    assert not interferer.errors, interferer.errors
    assert interferer.commits == 1
    assert written == 1
    assert len(list(signals.glob("go-*"))) == 2  # the first attempt conflicted, the second landed
    assert run_counts(spark, path, "_dq_run_id") == {"seed": 1, "other-0": 2, "other-1": 1, "mine": 1}
    assert run_values(spark, path, "mine") == ["mine"]  # replaced by the retry's row

    # A run's first write is a plain append: another writer's append meanwhile is no conflict.
    signals = tmp_path / "signals-fresh"
    signals.mkdir()
    with Interferer(spark, path, signals, budget=1) as interferer:
        written = sk.write_quarantine(
            spark, blocking_frame(spark, signals), path, run_id="new", max_attempts=3, rows_at_most=SPARK_WRITE
        )
    assert not interferer.errors, interferer.errors
    assert interferer.commits == 1 and written == 1
    assert len(list(signals.glob("go-*"))) == 1  # one attempt, no conflict
    assert run_counts(spark, path, "_dq_run_id") == {"seed": 1, "other-0": 3, "other-1": 1, "mine": 1, "new": 1}


def _table_facts(path: str) -> dict:
    """What a Delta table is, read with delta-rs: schema, partitioning, description, properties, protocol, history."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    metadata, protocol = table.metadata(), table.protocol()
    return {
        "schema": json.loads(table.schema().to_json()),
        "partition_columns": list(metadata.partition_columns),
        "description": metadata.description,
        "configuration": dict(metadata.configuration),
        "protocol": (protocol.min_reader_version, protocol.min_writer_version),
        "operations": [h["operation"] for h in reversed(table.history())],
    }


def _engines(path: str) -> list[str]:
    from deltalake import DeltaTable

    return [str(h.get("engineInfo", "")).split(":")[0].split("/")[0] for h in reversed(DeltaTable(path).history())]


def test_a_new_table_is_created_as_spark_creates_it_and_small_writes_keep_every_guarantee(spark, tmp_path):
    """A first write into a new table yields exactly the table Spark's own creation gives.

    Quarantine/valid: the same few rows written once through Spark's Delta (``rows_at_most`` above the
    driver limit) and once through the driver path, into two new tables: the same schema,
    partitioning, description, properties, protocol, history shape and rows. Then a retry of the run
    replaces its rows and another run's rows stay. Results/registry: the driver's creation equals
    ``create_if_missing`` (Spark's ``createIfNotExists``).
    """
    from airflow_dq_contracts.store import registry_sink, spark_results
    from airflow_dq_contracts.store.spark_remote import SessionCapabilities
    from airflow_dq_contracts.store.spark_tables import resolve_target

    sk = sinks()
    violation = ("status/known", "known", "whitelist", "P1", "quarantine")
    rows = [
        (1, "lost", dt.date(2024, 5, 1), dt.datetime(2024, 5, 1, 10, tzinfo=UTC), ["a", None], [violation]),
        (2, "new", dt.date(2024, 5, 1), None, None, []),
        (3, None, dt.date(2024, 5, 2), dt.datetime(2024, 5, 2, 11, tzinfo=UTC), [], [violation]),
        (4, "paid", dt.date(2024, 5, 2), dt.datetime(2024, 5, 2, 12, tzinfo=UTC), ["b"], None),
    ]
    frame = spark.createDataFrame(
        [(*r[:5], None if r[0] == 2 else r[0] * 1.25, r[5]) for r in rows],
        "id long, status string, day date, at timestamp, tags array<string>, amount double, "
        f"_dq_violations {VIOLATIONS_DDL}",
    ).selectExpr("id", "status", "day", "at", "tags", "cast(amount as decimal(12,2)) as amount", "_dq_violations")
    valid, quarantined = sk.split_annotated(frame)
    above = delta_commits.DRIVER_ROWS_LIMIT + 1
    writes = {
        "quarantine": lambda df, path, run_id, **kw: sk.write_quarantine(
            spark, df, path, run_id=run_id, quarantined_at=T0, **kw
        ),
        "valid": lambda df, path, run_id, **kw: sk.write_valid(
            spark, df, path, run_id=run_id, partition_by=["day"], **kw
        ),
    }
    sides = {"quarantine": quarantined, "valid": valid}
    for kind, write in writes.items():
        by_spark, by_driver = str(tmp_path / f"{kind}_spark"), str(tmp_path / f"{kind}_driver")
        expected = 2
        assert write(sides[kind], by_spark, "run-1", rows_at_most=above) == expected
        assert write(sides[kind], by_driver, "run-1") == expected
        assert _engines(by_spark) == ["Apache-Spark", "Apache-Spark"]
        assert _engines(by_driver) == ["delta-rs", "delta-rs"]  # the small write took the driver path
        assert _table_facts(by_driver) == _table_facts(by_spark)
        assert _table_facts(by_driver)["operations"] == ["CREATE TABLE", "WRITE"]

        def content(path):
            return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())

        assert content(by_driver) == content(by_spark)
        # Rows conserved: the two sides together are the input, each row once.
        ids = {kind: sorted(r["id"] for r in spark.read.format("delta").load(by_driver).collect())}
        assert ids[kind] == ([1, 3] if kind == "quarantine" else [2, 4])

        # Another run, then a retry of run-1 with one row: run-1's rows are replaced, run-2's stay.
        assert write(sides[kind], by_driver, "run-2") == 2
        retry = sides[kind].where("id in (1, 2)")
        assert write(retry, by_driver, "run-1") == 1
        counts = run_counts(spark, by_driver, "_dq_run_id")
        assert counts == {"run-1": 1, "run-2": 2}
        assert _engines(by_driver) == ["delta-rs"] * 4

    # Results and registry: a new local table is created by delta-rs with Spark's metadata.
    results_spark, results_driver = str(tmp_path / "results_spark"), str(tmp_path / "results_driver")
    resolve_target(results_spark, "results", SessionCapabilities.of(spark)).create_if_missing(
        spark,
        spark_results.RESULTS_SCHEMA,
        delta_commits.RESULTS_PARTITION_COLUMNS,
        delta_commits.RESULTS_DESCRIPTION,
    )
    assert sk.write_results(spark, make_records("run-1"), results_driver, run_id="run-1") == 3
    created = _table_facts(results_driver)
    assert created["operations"] == ["CREATE TABLE", "WRITE"]
    assert {**created, "operations": None} == {**_table_facts(results_spark), "operations": None}
    assert _engines(results_driver) == ["delta-rs", "delta-rs"]
    assert as_dicts(sk.read_results(spark, results_driver, "run-1")) == as_dicts(make_records("run-1"))

    registry_spark, registry_driver = str(tmp_path / "registry_spark"), str(tmp_path / "registry_driver")
    resolve_target(registry_spark, "registry", SessionCapabilities.of(spark)).create_if_missing(
        spark, registry_sink.REGISTRY_SCHEMA, comment=delta_commits.REGISTRY_DESCRIPTION
    )
    row = {
        "contract_name": "orders",
        "contract_version": "1.0.0",
        "owner": "team-a",
        "first_run_at": T0,
        "last_run_at": T0,
        "last_run_id": "run-1",
    }
    registry_sink.write_registry(spark, row, registry_driver)
    assert {**_table_facts(registry_driver), "operations": None} == {**_table_facts(registry_spark), "operations": None}
    assert _engines(registry_driver) == ["delta-rs", "delta-rs"]
    stored = registry_sink.read_registry(spark, registry_driver, "orders")
    assert (stored["owner"], stored["first_run_at"], stored["last_run_id"]) == ("team-a", T0, "run-1")
