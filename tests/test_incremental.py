"""Incremental runs (issue 35, deliverable 1): each run checks exactly the rows new since the last one.

Three "days" of appends to a Delta table, with planted bad rows; an incremental run after each day
checks that day's rows once: its row count, failed counts and quarantined ids equal a plain-Python
oracle over that day's rows. A retry of day 2's run (same run id) after a simulated worker loss
(its quarantine written, its results never committed — the checkpoint did not advance) covers the
same range, and no row is quarantined twice. A folder of parquet files: new files only. Real Spark
and Delta, in process.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.runner import run_contract
from airflow_dq_contracts.results import RESULT_COLUMNS
from airflow_dq_contracts.runspec import RunSpec, RunSpecError
from airflow_dq_contracts.store import sinks

pytestmark = pytest.mark.spark

CONTRACT = {
    "name": "incr_orders",
    "columns": [
        {
            "name": "order_id",
            "type": "long",
            "checks": [{"name": "id_present", "type": "missing", "max": 0, "action": "gate"}],
        },
        {"name": "amount", "type": "double", "checks": [{"name": "amount_total", "type": "sum", "max": 700}]},
        {"name": "day", "type": "int"},
    ],
    "checks": [
        {"name": "rows", "type": "num_rows", "min": 1},
        {"name": "amount_positive", "type": "row_condition", "condition": "amount > 0", "action": "quarantine"},
    ],
}
DDL = "order_id long, amount double, day int"


def _day(day: int) -> list[tuple[int, float, int]]:
    """Day ``day``'s rows: 20 orders, every 7th of them with a non-positive amount (planted)."""
    rows = []
    for i in range(20):
        order_id = day * 1000 + i
        rows.append((order_id, -1.0 if i % 7 == 3 else 10.0 + i, day))
    return rows


def _bad(rows: list[tuple[int, float, int]]) -> list[int]:
    return sorted(order_id for order_id, amount, _ in rows if not amount > 0)


def _check(result, name):
    return next(c for c in result.checks if c.check_name == name)


@pytest.mark.parametrize("cdf", [False, True], ids=["log", "change-feed"])
def test_three_days_of_appends_each_checked_once(spark, tmp_path, cdf):
    source = str(tmp_path / "orders")
    targets = {"results_table": str(tmp_path / "results"), "quarantine_table": str(tmp_path / "quarantine")}
    contract = load_contract(CONTRACT)
    writer = spark.createDataFrame(_day(1), DDL).write.format("delta")
    if cdf:
        writer = writer.option("delta.enableChangeDataFeed", "true")
    writer.save(source)

    ranges = []
    for day in (1, 2, 3):
        if day > 1:
            spark.createDataFrame(_day(day), DDL).write.format("delta").mode("append").save(source)
        if day == 2:
            # A worker lost after the quarantine write, before the results commit: the first attempt's
            # quarantine rows are there, its results rows (and so its range) are not.
            lost = run_contract(spark, contract, input_path=source, incremental=True, run_id="day-2", **targets)
            assert lost.quarantine_rows == len(_bad(_day(2)))
            spark.sql(f"DELETE FROM delta.`{targets['results_table']}` WHERE run_id = 'day-2'")
        result = run_contract(spark, contract, input_path=source, incremental=True, run_id=f"day-{day}", **targets)
        expected = _day(day)
        assert result.row_count == len(expected)
        assert _check(result, "amount_positive").failed_rows == len(_bad(expected))
        # num_rows is a table-level count: the whole table's, from the Delta log at the range's end.
        assert _check(result, "rows").metric_value == sum(len(_day(d)) for d in range(1, day + 1))
        assert _check(result, "rows").message.endswith("(scope: whole table)")
        assert _check(result, "rows").evaluated_from == ("scan" if day == 1 else "statistics")
        stored = sinks.read_results(spark, targets["results_table"], run_id=f"day-{day}")
        assert {r.row_count for r in stored} == {len(expected)}
        (text,) = {r.source_range for r in stored}
        ranges.append(json.loads(text))

    assert [(r["from_version"], r["to_version"]) for r in ranges] == [(-1, 0), (0, 1), (1, 2)]
    assert [r["read"] for r in ranges[1:]] == ["cdf" if cdf else "files"] * 2

    quarantine = spark.read.format("delta").load(targets["quarantine_table"]).collect()
    by_run = {}
    for row in quarantine:
        by_run.setdefault(row["_dq_run_id"], []).append(row["order_id"])
    assert {run: sorted(ids) for run, ids in by_run.items()} == {
        f"day-{day}": _bad(_day(day)) for day in (1, 2, 3)
    }  # every bad row once: the lost attempt's rows replaced by its retry

    # A retry of day 2 after day 3 committed: exactly day 2's recorded range again, nothing new or twice.
    again = run_contract(spark, contract, input_path=source, incremental=True, run_id="day-2", **targets)
    assert again.row_count == len(_day(2))
    assert _check(again, "amount_positive").failed_rows == len(_bad(_day(2)))
    stored = sinks.read_results(spark, targets["results_table"], run_id="day-2")
    assert {json.loads(r.source_range)["to_version"] for r in stored} == {1}
    assert spark.read.format("delta").load(targets["quarantine_table"]).count() == len(quarantine)

    # Nothing new: an empty increment.
    idle = run_contract(spark, contract, input_path=source, incremental=True, run_id="day-4", **targets)
    assert idle.row_count == 0


@pytest.mark.parametrize("layout", ["plain", "partitioned", "deletion-vectors"])
def test_an_increment_opens_only_the_appended_files_where_parquet_alone_gives_its_rows(spark, tmp_path, layout):
    """The planner reads an append-only increment of a plain table as the appended Parquet files alone; a table
    whose files need Delta's reader for their rows (partition values in the log, deletion vectors) is read
    through Delta, filtered to those files. Either way: exactly the new rows, against plain Python."""
    from airflow_dq_contracts.engine.incremental import plan_increment
    from airflow_dq_contracts.runspec import DatasetSource

    source = str(tmp_path / "orders")
    writer = spark.createDataFrame(_day(1), DDL).write.format("delta")
    if layout == "partitioned":
        writer = writer.partitionBy("day")
    if layout == "deletion-vectors":
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.save(source)
    before = set(spark.read.format("delta").load(source).inputFiles())
    for day in (2, 3):
        spark.createDataFrame(_day(day), DDL).write.format("delta").mode("append").save(source)
    if layout == "deletion-vectors":
        # A deletion vector on an appended file (no file rewritten): its deleted row stays out of the increment.
        spark.sql(f"DELETE FROM delta.`{source}` WHERE order_id = 3005")
        from airflow_dq_contracts.store.tablemeta.log_reader import read_log

        assert any(f.deletion_vector for f in read_log(source).files)  # marked, not rewritten
    appended = set(spark.read.format("delta").load(source).inputFiles()) - before
    end = 3 if layout == "deletion-vectors" else 2

    earlier = [{"kind": "delta", "from_version": -1, "to_version": 0}]
    increment = plan_increment(spark, DatasetSource(path=source, format="delta"), earlier, None, driver=True)
    expected = sorted(r for r in _day(2) + _day(3) if r[0] != 3005 or layout != "deletion-vectors")
    got = sorted((r["order_id"], r["amount"], r["day"]) for r in increment.frame.collect())
    assert got == expected
    assert json.loads(increment.source_range) == {
        "kind": "delta",
        "from_version": 0,
        "to_version": end,
        "read": "files",
    }
    opened = {os.path.basename(name) for name in increment.frame.inputFiles()}
    appended = {os.path.basename(name) for name in appended}
    if layout == "plain":
        assert opened == appended  # the day-1 file is never opened
    else:
        assert opened >= appended  # Delta's reader, filtered by file


def test_a_rewrite_in_the_range_checks_the_whole_table(spark, tmp_path):
    source, results = str(tmp_path / "orders"), str(tmp_path / "results")
    contract = load_contract(CONTRACT)
    spark.createDataFrame(_day(1), DDL).write.format("delta").save(source)
    run_contract(spark, contract, input_path=source, incremental=True, run_id="r1", results_table=results)
    spark.createDataFrame(_day(2), DDL).write.format("delta").mode("overwrite").save(source)
    lines: list[str] = []
    result = run_contract(
        spark,
        contract,
        input_path=source,
        incremental=True,
        run_id="r2",
        results_table=results,
        progress=lines.append,
    )
    assert result.row_count == 20
    assert any("not append-only" in line for line in lines)
    assert "(scope: whole table)" in _check(result, "rows").message


def test_a_folder_of_files_checks_new_files(spark, tmp_path):
    folder, results = tmp_path / "landing", str(tmp_path / "results")
    contract = load_contract(CONTRACT)
    spark.createDataFrame(_day(1), DDL).coalesce(1).write.parquet(str(folder / "d1"))
    spark.createDataFrame(_day(2), DDL).coalesce(1).write.parquet(str(folder / "d2"))
    spark.createDataFrame(_day(3), DDL).coalesce(1).write.parquet(str(folder / "d3"))
    import shutil

    (folder / "all").mkdir()
    for day in ("d1", "d2", "d3"):
        for part in (folder / day).glob("part-*.parquet"):
            shutil.move(str(part), str(folder / "all" / f"{day}-{part.name}"))
    staged = sorted((folder / "all").iterdir())
    landing = tmp_path / "orders"
    landing.mkdir()
    checked = []
    for number, part in enumerate(staged, start=1):
        shutil.move(str(part), str(landing / part.name))
        result = run_contract(
            spark,
            contract,
            input_path=str(landing),
            input_format="parquet",
            incremental=True,
            run_id=f"f{number}",
            results_table=results,
        )
        expected = _day(number)
        assert result.row_count == len(expected)
        assert _check(result, "amount_positive").failed_rows == len(_bad(expected))
        (text,) = {r.source_range for r in sinks.read_results(spark, results, run_id=f"f{number}")}
        files = json.loads(text)["files"]
        assert [name.rsplit("/", 1)[1] for name, _, _ in files] == [part.name]
        checked.append(files)


def test_the_spec_carries_incremental_and_an_incremental_run_needs_a_ledger(spark, tmp_path):
    spec = RunSpec(input_path="/d", incremental=True, checkpoint="/wh/dq_results")
    assert RunSpec.from_json(spec.to_json()) == spec
    assert "incremental" not in RunSpec(input_path="/d").to_json()  # earlier readers read it unchanged
    assert RESULT_COLUMNS[-1] == ("source_range", "string")
    contract = load_contract(CONTRACT)
    source = str(tmp_path / "orders")
    spark.createDataFrame(_day(1), DDL).write.format("delta").save(source)
    with pytest.raises(RunSpecError, match="needs a results table"):
        run_contract(spark, contract, input_path=source, incremental=True)


def test_a_results_table_of_the_previous_release_gains_source_range(spark, tmp_path):
    previous = RESULT_COLUMNS[:-1]  # the third wave's schema: no source_range
    results = str(tmp_path / "results")
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in previous)
    old_row = tuple("old" if kind == "string" else None for _, kind in previous)
    spark.createDataFrame([old_row], ddl).write.format("delta").partitionBy("contract_name").save(results)
    source = str(tmp_path / "orders")
    spark.createDataFrame(_day(1), DDL).write.format("delta").save(source)
    contract = load_contract(CONTRACT)
    first = run_contract(spark, contract, input_path=source, incremental=True, run_id="r1", results_table=results)
    assert first.row_count == 20  # nothing recorded: a first run checks everything
    table = {row["run_id"]: row["source_range"] for row in spark.read.format("delta").load(results).collect()}
    assert table["old"] is None and json.loads(table["r1"])["to_version"] == 0
    spark.createDataFrame(_day(2), DDL).write.format("delta").mode("append").save(source)
    second = run_contract(spark, contract, input_path=source, incremental=True, run_id="r2", results_table=results)
    assert second.row_count == 20 and _check(second, "amount_positive").failed_rows == len(_bad(_day(2)))


def test_the_command_line_describes_an_incremental_run():
    from airflow_dq_contracts.cli.main import build_parser
    from airflow_dq_contracts.runs.spec import spec_from_args

    contract = load_contract(CONTRACT)
    args = build_parser().parse_args(
        ["run", "c.yaml", "--input", "/lake/orders", "--incremental", "--checkpoint", "/wh/r"]
    )
    spec = spec_from_args(args, contract)
    assert (spec.incremental, spec.checkpoint, spec.results_table) == (True, "/wh/r", None)
    plain = spec_from_args(build_parser().parse_args(["run", "c.yaml", "--input", "/lake/orders"]), contract)
    assert (plain.incremental, plain.checkpoint) == (False, None)


UNIQUE_CONTRACT = {
    "name": "incr_unique",
    "columns": [
        {
            "name": "order_id",
            "type": "long",
            "checks": [{"name": "unique", "type": "duplicates", "max": 0, "action": "quarantine"}],
        },
        {"name": "amount", "type": "double", "checks": [{"name": "amount_total", "type": "sum", "max": 700}]},
        {"name": "day", "type": "int"},
    ],
    "checks": [
        {"name": "rows", "type": "num_rows", "min": 1},
        {"name": "order_unique", "type": "duplicates", "columns": ["order_id", "day"], "max": 0},
        {"name": "id_unique", "type": "duplicates", "columns": ["order_id"], "max": 0},
        # the share of duplicate ids in the whole table: crosses 5 % on day 3
        {"name": "id_share", "type": "duplicates", "columns": ["order_id"], "return": "pct", "max": 0.05},
    ],
}


def _duplicates(rows: list[tuple], positions: list[int]) -> int:
    """COUNT(*) − COUNT(DISTINCT key) over ``rows``, a key holding a NULL never distinct (plain Python)."""
    keys = [tuple(row[p] for p in positions) for row in rows]
    return len(keys) - len({key for key in keys if None not in key})


def test_uniqueness_across_increments_is_the_whole_tables(spark, tmp_path):
    """A key planted again in a later increment (and one repeated inside an increment, and a NULL key) is
    found: each day's duplicates verdicts equal the whole table's, computed in plain Python."""
    source, results, quarantine = str(tmp_path / "orders"), str(tmp_path / "results"), str(tmp_path / "quarantine")
    contract = load_contract(UNIQUE_CONTRACT)
    days = {
        1: [(i, 10.0, 1) for i in range(1, 21)],
        # day 2 repeats id 5 of day 1 (another day: the (id, day) key stays unique) and id 30 within itself
        2: [(i, 10.0, 2) for i in range(21, 41)] + [(5, 11.0, 2), (30, 12.0, 2)],
        # day 3 repeats id 25 of day 2 and holds a NULL id
        3: [(i, 10.0, 3) for i in range(41, 61)] + [(25, 13.0, 3), (None, 14.0, 3)],
        4: [(i, 10.0, 4) for i in range(61, 66)] + [(61, 10.0, 4)],
    }
    table: list[tuple] = []
    for day, rows in days.items():
        spark.createDataFrame(rows, DDL).write.format("delta").mode("append").save(source)
        earlier_ids = {row[0] for row in table}
        table += rows
        if day == 4:
            # No earlier whole-table state for two checks: the earlier duplicates are counted from the keys,
            # the earlier sum summed from the earlier rows.
            total_id = next(c.check_id for c in contract.evaluated_checks() if c.name == "amount_total")
            gone = ("_table_/id_unique", "_table_/id_share", total_id)
            spark.sql(f"DELETE FROM delta.`{results}` WHERE check_id IN {gone}")
        lines: list[str] = []
        result = run_contract(
            spark,
            contract,
            input_path=source,
            incremental=True,
            run_id=f"u{day}",
            results_table=results,
            quarantine_table=quarantine,
            progress=lines.append,
        )
        assert result.row_count == len(rows)
        column, pair, single, share = (_check(result, n) for n in ("unique", "order_unique", "id_unique", "id_share"))
        assert column.metric_value == _duplicates(table, [0])
        assert pair.metric_value == _duplicates(table, [0, 2])
        assert single.metric_value == _duplicates(table, [0])
        assert column.passed is (_duplicates(table, [0]) == 0)
        assert share.metric_value == _duplicates(table, [0]) / len(table)
        assert share.passed is (_duplicates(table, [0]) / len(table) <= 0.05), share.message
        for record in (column, pair, single, share):
            assert record.message.endswith("(scope: whole table)"), record.message
            assert record.row_count == len(rows)
        # The quarantinable rows are the new rows' copies, as a run over the whole table finds them: NULL,
        # repeated among the new rows, or holding a value an earlier row holds (that row was written before).
        ids = [row[0] for row in rows]
        copies = sorted((repr(i), amount) for i, amount, _ in rows if i is None or ids.count(i) > 1 or i in earlier_ids)
        assert column.failed_rows == len(copies)
        set_aside = []
        if os.path.isdir(quarantine):  # created by the first run that sets a row aside
            set_aside = spark.read.format("delta").load(quarantine).where(f"_dq_run_id = 'u{day}'").collect()
        assert sorted((repr(r["order_id"]), r["amount"]) for r in set_aside) == copies
        assert _check(result, "rows").metric_value == len(table)
        # A sum from merged state: the previous run's whole-table sum plus the new rows' (amounts are whole
        # numbers: exact in floating point). The bound is crossed on day 4.
        total = _check(result, "amount_total")
        assert total.metric_value == sum(row[1] for row in table)
        assert total.passed is (sum(row[1] for row in table) <= 700)
        assert total.message.endswith("(scope: whole table)"), total.message
        if day > 1:
            assert any("repeat an earlier row's" in line for line in lines)
        if day > 1:
            assert ("summed from the earlier rows" in total.message) is (day == 4), total.message
        if day == 4:
            assert "counted from the earlier rows' keys" in single.message
            assert "counted from the earlier rows' keys" in share.message
        elif day > 1:
            assert "the previous run's whole-table count" in share.message
            assert "the previous run's whole-table count" in pair.message


# ------------------------------------------------------------------ the check task under retry (kill -9)

WORKER = Path(__file__).resolve().parent / "apps" / "check_attempt.py"  # one attempt, as a worker runs it
PAUSE_ENV = "DQ_CONTRACTS_TEST_PAUSE"  # engine/runner.py's test-only hook
PEOPLE = """\
name: people_daily
version: "1.0"
columns:
  - name: id
    type: long
    checks:
      - {name: ids are unique, type: duplicates, max: 0}
  - name: email
    type: string
    checks:
      - {name: email is valid, type: pattern, format: email, action: quarantine}
"""


def _people_day(day: int) -> list[dict]:
    """Day ``day``'s 20 people; every 7th email lacks its ``@`` (planted: quarantined)."""
    return [
        {"id": i, "email": f"p{i}.example.com" if i % 7 == 0 else f"p{i}@example.com"}
        for i in range(day * 100, day * 100 + 20)
    ]


def _attempt(root: Path, day: int, attempt: int, pause: str | None = None) -> subprocess.Popen[str]:
    """Start attempt ``attempt`` of day ``day``'s incremental check in a worker process of its own."""
    from airflow_dq_contracts.runspec import RunSpec

    spec = RunSpec(
        contract_text=PEOPLE,
        contract_origin="people_daily.yaml",
        input_path=str(root / "people"),
        input_format="delta",
        run_id=f"day-{day}",
        results_table=str(root / "wh" / "dq_results"),
        quarantine_table=str(root / "q"),
        valid_table=str(root / "valid"),
        incremental=True,
    )
    spec_file = root / f"spec-{day}.json"
    spec_file.write_text(spec.to_json(), encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(WORKER.parent.parent.parent), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env["DQ_CONTRACTS_JOB_CACHE"] = str(root / "host-a")
    env.pop(PAUSE_ENV, None)
    if pause:
        (root / f"pause-{pause}").write_text("hold", encoding="utf-8")
        env[PAUSE_ENV] = f"{pause}:{root / f'pause-{pause}'}"
    command = [sys.executable, str(WORKER), str(spec_file), str(attempt), "{}"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=root)


def _finished(worker: subprocess.Popen[str]) -> dict:
    out, _ = worker.communicate(timeout=300)
    for line in out.splitlines():
        if line.startswith("ATTEMPT_DONE "):
            return json.loads(line[len("ATTEMPT_DONE ") :])
    pytest.fail(f"the attempt did not finish (exit {worker.returncode}):\n{out[-4000:]}")


@pytest.mark.slow
def test_three_days_under_retry_each_days_rows_checked_once(tmp_path):
    """The check task of three daily appends, its day-2 worker SIGKILLed mid-job and retried on the same host
    (the retry stops the orphaned job): results, quarantine and valid rows per day exact, none twice."""
    from deltalake import DeltaTable, write_deltalake

    schema = pa.schema([("id", pa.int64()), ("email", pa.string())])
    payloads = {}
    for day in (1, 2, 3):
        write_deltalake(str(tmp_path / "people"), pa.Table.from_pylist(_people_day(day), schema=schema), mode="append")
        if day == 2:
            first = _attempt(tmp_path, day, 1, pause="write")
            reached = tmp_path / "pause-write.reached"
            deadline = time.monotonic() + 300
            while not (reached.exists() and reached.read_text(encoding="utf-8").strip()):
                assert first.poll() is None and time.monotonic() < deadline, "attempt 1 ended before its write"
                time.sleep(0.2)
            first.kill()  # SIGKILL: the worker is lost, its spark-submit lives on, held before its writes
            first.wait(timeout=30)
            assert first.returncode == -signal.SIGKILL
            payloads[day] = _finished(_attempt(tmp_path, day, 2))
        else:
            payloads[day] = _finished(_attempt(tmp_path, day, 1))

    def rows(table: str) -> list[dict]:
        return DeltaTable(str(tmp_path / table)).to_pyarrow_table().to_pylist()

    results, quarantine, valid = rows("wh/dq_results"), rows("q"), rows("valid")
    for day in (1, 2, 3):
        people = _people_day(day)
        bad = sorted(p["id"] for p in people if p["id"] % 7 == 0)
        mine = [r for r in results if r["run_id"] == f"day-{day}"]
        assert len(mine) == len({r["check_id"] for r in mine}) == payloads[day]["checks"]  # each check once
        assert {r["row_count"] for r in mine} == {len(people)}
        by_name = {r["check_name"]: r for r in mine}
        assert by_name["email is valid"]["failed_rows"] == len(bad)
        assert by_name["ids are unique"]["metric_value"] == 0
        assert {json.loads(r["source_range"])["to_version"] for r in mine} == {day - 1}
        assert sorted(r["id"] for r in quarantine if r["_dq_run_id"] == f"day-{day}") == bad
        assert sorted(r["id"] for r in valid if r["_dq_run_id"] == f"day-{day}") == sorted(
            p["id"] for p in people if p["id"] % 7
        )
    everyone = [p for day in (1, 2, 3) for p in _people_day(day)]
    assert sorted(r["id"] for r in quarantine) == sorted(p["id"] for p in everyone if p["id"] % 7 == 0)
    assert sorted(r["id"] for r in valid) == sorted(p["id"] for p in everyone if p["id"] % 7)
    assert DeltaTable(str(tmp_path / "q")).transaction_version("airflow-dq-contracts:day-2") == 2
