"""Many contracts in one task: ``ContractCheckOperator(contract=[…])``, one Spark application.

* Engine (the session ``spark``): three contracts run as a suite, side by side in one session, write
  exactly what each writes when run alone (results rows, quarantine and valid rows, summary); a
  contract whose input is missing is that contract's error, the others are untouched; the job's one
  DONE marker lists each run.
* Airflow (``dag.test()``, real spark-submit, two submissions): a task with three contracts — one
  quarantines, one passes, one has no input — whose first attempt dies after the job wrote; the retry
  leaves one copy of every row; each contract's rows, quarantine and valid tables are what plain Python
  computes over the generated rows; the branch follows the combined decision (gate).
* Plain: the suite's JSON and its strictness, the operator's arguments, the branch's suite decision.

Expected values come from the generated rows (``engine_fixtures.expected_for`` / ``verdict``, plain
Python) and from the tables read with delta-rs, never from the code under test.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)
from airflow_fixtures import (  # noqa: F401  (airflow_db: fixture)
    airflow_db,
    install_dag,
    run_dag,
    use_cached_delta_jars,
    xcom_value,
)

import contextlib
import datetime as dt
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from engine_fixtures import expected_for, verdict
from pipeline_expectations import (
    assert_xcom_equals_results_table,
    asset_events,
    decision_by_hand,
    delta_rows,
    interval,
)

from airflow_dq_contracts.results import make_run_id
from airflow_dq_contracts.runspec import RunSpec, RunSpecError, SuiteSpec, read_document

UTC = dt.timezone.utc
STATUSES = ("new", "paid", "shipped", "bogus", "", None)


# --------------------------------------------------------------------------------------- data and contracts


def generate(seed: int, count: int = 120) -> list[dict[str, Any]]:
    """Seeded rows: duplicated and NULL ids, unknown statuses, negative amounts and quantities."""
    rng = random.Random(seed)
    rows = []
    for rid in range(count):
        ident = rng.randrange(rid) if rid > 5 and rng.random() < 0.05 else (None if rng.random() < 0.02 else rid)
        rows.append(
            {
                "rid": rid,
                "id": ident,
                "status": rng.choice(STATUSES),
                "amount": round(rng.uniform(-5, 100), 2),
                "qty": rng.randint(-2, 9),
            }
        )
    return rows


def write_table(path: Path, rows: list[dict[str, Any]]) -> str:
    """The rows as a Delta table written by delta-rs (not by the Spark code under test)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema(
        [
            ("rid", pa.int64()),
            ("id", pa.int64()),
            ("status", pa.string()),
            ("amount", pa.float64()),
            ("qty", pa.int64()),
        ]
    )
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=schema), mode="overwrite")
    return str(path)


# Check dicts in the contract's own words; engine_fixtures computes each one's outcome over the rows.
ORDERS_CHECKS = {
    None: [{"name": "rows", "type": "num_rows", "min": 1}],
    "id": [{"name": "unique_id", "type": "duplicates", "max": 0, "severity": "P1"}],
    "status": [{"name": "known_status", "type": "whitelist", "values": ["new", "paid", "shipped"], "severity": "P1"}],
}
PAYMENTS_CHECKS = {
    None: [{"name": "rows", "type": "num_rows", "min": 1}],
    "amount": [{"name": "not_too_negative", "type": "min", "min": -10, "severity": "P1"}],
    "qty": [{"name": "qty_present", "type": "missing", "max": 0, "severity": "P0"}],
}
# qty < 0 exists in every seed: a P0 row-level failure — gate, and its rows set aside.
STOCK_CHECKS = {"qty": [{"name": "qty_not_negative", "type": "min", "min": 0, "severity": "P0"}]}


def contract_doc(name: str, path: str, checks: dict[str | None, list[dict[str, Any]]]) -> dict[str, Any]:
    columns = [{"name": column, "checks": list(items)} for column, items in checks.items() if column is not None]
    columns += [{"name": c} for c in ("rid", "id", "status", "amount", "qty") if c not in checks]
    return {
        "name": name,
        "version": "1.0.0",
        "dataset": {"path": path, "format": "delta"},
        "checks": list(checks.get(None, [])),
        "columns": columns,
    }


def expectations(checks: dict[str | None, list[dict[str, Any]]], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """check_id → (metric, failed_rows, passed, violating rids), in plain Python."""
    out = {}
    for column, items in checks.items():
        for check in items:
            expected = expected_for(check, column, rows, column_kind="string" if column == "status" else "number")
            passed = verdict(check, expected.metric, expected.failed_rows)
            out[f"{column or '_table_'}/{check['name']}"] = (expected.metric, expected.failed_rows, passed, expected)
    return out


def quarantined_by_hand(checks: dict[str | None, list[dict[str, Any]]], rows: list[dict[str, Any]]) -> set[int]:
    """Rows breaking a row-level check that failed and whose severity sets rows aside (P0 gate, P1 quarantine)."""
    bad: set[int] = set()
    for check_id, (_, failed_rows, passed, expected) in expectations(checks, rows).items():
        check = next(c for items in checks.values() for c in items if check_id.endswith("/" + c["name"]))
        if not passed and failed_rows is not None and check.get("severity", "P1") in ("P0", "P1"):
            bad |= expected.violating or set()
    return bad


def without_run_identity(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("run_id", "evaluated_at", "started_at", "finished_at")}


def user_columns(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted((r["rid"], r["id"], r["status"], r["amount"], r["qty"]) for r in rows)


def violations(rows: list[dict[str, Any]]) -> dict[int, list[str]]:
    return {r["rid"]: sorted(v["check_id"] for v in r["_dq_violations"]) for r in rows}


# --------------------------------------------------------------------------------------- plain


def _spec(name: str, run_id: str, **fields: Any) -> RunSpec:
    return RunSpec(contract_text=f"name: {name}\n", input_path=f"/data/{name}", run_id=run_id, **fields)


def test_a_suite_document_round_trips_and_is_strict(tmp_path):
    from airflow_dq_contracts.jobs import run_contract as job

    suite = SuiteSpec((_spec("a", "r-a", filter="day = '2024-05-01'"), _spec("b", "r-b")))
    assert read_document(suite.to_json()) == suite
    assert json.loads(suite.to_json())["version"] == 1
    one = _spec("a", "r-a")
    assert read_document(one.to_json()) == one  # the one-spec path is unchanged
    # Through the job's command line, inline and as a shipped file (a large suite).
    arguments, files = suite.job_arguments()
    assert files == [] and job.read_spec(job.build_parser().parse_args(arguments)) == suite
    arguments, files = suite.job_arguments(folder=tmp_path, max_inline_bytes=16)
    assert arguments == [f"--spec-file={files[0]}"] and Path(files[0]).name.startswith("runsuite-")
    assert job.read_spec(job.build_parser().parse_args(arguments)) == suite

    with pytest.raises(RunSpecError, match="run id 'r' given to two runs"):
        SuiteSpec((_spec("a", "r"), _spec("b", "r")))
    with pytest.raises(RunSpecError, match="every run of a suite needs its own run_id"):
        SuiteSpec((RunSpec(contract_text="name: a\n", input_path="/a"),))
    with pytest.raises(RunSpecError, match="non-empty list"):
        SuiteSpec(())
    with pytest.raises(RunSpecError, match="suite: a suite is"):
        read_document('{"version": 2, "suite": []}')
    with pytest.raises(RunSpecError, match="unknown key"):
        read_document('{"version": 1, "suite": [{"version": 1, "maxx": 1}]}')


def test_the_operator_refuses_a_list_it_cannot_run_per_contract():
    from airflow_dq_contracts.operators import ContractCheckOperator

    with pytest.raises(ValueError, match="input_path= is refused"):
        ContractCheckOperator(task_id="t", contract=["a.yaml", "b.yaml"], input_path="/x")
    with pytest.raises(ValueError, match=r"valid_table= must contain \{contract\}"):
        ContractCheckOperator(task_id="t", contract=["a.yaml", "b.yaml"], valid_table="/wh/valid")
    with pytest.raises(ValueError, match="references= is refused"):
        ContractCheckOperator(task_id="t", contract=["a.yaml"], references={"dim": "/d"})
    with pytest.raises(ValueError, match=r"contract\[1\] must be a path"):
        ContractCheckOperator(task_id="t", contract=["a.yaml", 3])
    with pytest.raises(ValueError, match="empty list"):
        ContractCheckOperator(task_id="t", contract=[])
    op = ContractCheckOperator(task_id="t", contract=["a.yaml", "name: b\n"], valid_table="/wh/v/{contract}")
    assert op.contract_sources() == [("a.yaml", "a.yaml"), ("name: b\n", "<t.contract[1]>")]


def _record(check_id: str, action: str, status: str, failed_rows: int | None = None) -> dict[str, Any]:
    return {
        "run_id": "r",
        "contract_name": "c",
        "contract_version": "1",
        "dataset": "d",
        "check_id": check_id,
        "check_name": check_id,
        "check_type": "missing",
        "column": "a",
        "severity": "P1",
        "action": action,
        "validator": "max 0",
        "metric_value": 1.0,
        "status": status,
        "passed": status == "passed",
        "failed_rows": failed_rows,
        "message": "",
        "row_count": 3,
    }


def _summary(name: str, decision: str, *records: dict[str, Any]) -> dict[str, Any]:
    return {"contract": {"name": name}, "decision": decision, "checks": list(records), "counts": {}}


@pytest.mark.parametrize(
    "entries,expected",
    [
        ([("pass", [("a/x", "gate", "passed")]), ("pass", [])], "pass"),
        ([("pass", [("a/x", "gate", "passed")]), ("quarantine", [("a/y", "quarantine", "failed", 2)])], "quarantine"),
        ([("gate", [("a/x", "gate", "failed")]), ("quarantine", [("a/y", "quarantine", "failed", 2)])], "gate"),
        ([("pass", [("a/x", "gate", "passed")]), ("error", [])], "gate"),  # no results: fails closed
    ],
)
def test_the_branch_routes_a_suite_on_its_worst_decision(entries, expected):
    from airflow_dq_contracts.operators import ContractBranchOperator
    from airflow_dq_contracts.operators.contract_suite import suite_summary

    contracts = []
    for index, (decision, records) in enumerate(entries):
        summary = _summary(f"c{index}", "gate" if decision == "error" else decision, *(_record(*r) for r in records))
        summary.update(status="error" if decision == "error" else "passed", counts={"passed": 0})
        if decision == "error":
            summary["error"] = "run_failed: no input"
        contracts.append(summary)
    combined = suite_summary("dq-x", contracts, "2024-05-01T00:00:00Z", "2024-05-01T00:00:01Z")
    branch = ContractBranchOperator(task_id="route", check_task_id="check")
    assert combined["decision"] == expected
    assert branch.decide(combined)[0] == expected
    # A policy routes each contract's checks: P1 → gate makes a quarantining contract gate.
    strict = ContractBranchOperator(task_id="route2", check_task_id="check", policy={"P1": "gate"})
    has_quarantine = any(d == "quarantine" for d, _ in entries)
    assert strict.decide(combined)[0] == ("gate" if has_quarantine or expected == "gate" else expected)
    edited = {**combined, "decision": "pass"}
    if expected != "pass":
        with pytest.raises(Exception, match="but its contracts decide"):
            branch.decide(edited)


# --------------------------------------------------------------------------------------- engine


@pytest.mark.spark
def test_a_suite_writes_what_each_contract_writes_alone(spark, tmp_path):
    """Three contracts (quarantine, pass, gate) plus one without input, side by side in one session."""
    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.engine.runner import run_contract
    from airflow_dq_contracts.engine.suite import RUN_FAILED, run_suite

    plans = {
        "s_orders": (ORDERS_CHECKS, generate(1)),
        "s_payments": (PAYMENTS_CHECKS, generate(2)),
        "s_stock": (STOCK_CHECKS, generate(3)),
    }
    docs = {
        name: contract_doc(name, write_table(tmp_path / "in" / name, rows), checks)
        for name, (checks, rows) in plans.items()
    }
    docs["s_missing"] = contract_doc("s_missing", str(tmp_path / "in" / "nowhere"), PAYMENTS_CHECKS)

    def spec(name: str, mode: str) -> RunSpec:
        contract = load_contract(docs[name])
        return RunSpec.for_contract(
            contract,
            contract_text=yaml.safe_dump(docs[name]),
            run_id=f"{mode}-{name}",
            reference_time="2024-05-02T00:00:00Z",
            results_table=str(tmp_path / mode / "dq_results"),
            quarantine_table=str(tmp_path / mode / "quarantine" / name),
            valid_table=str(tmp_path / mode / "valid" / name),
        )

    alone = {name: run_contract(spark, load_contract(docs[name]), spec(name, "alone")) for name in plans}
    lines: list[str] = []
    outcomes = run_suite(
        spark, SuiteSpec(tuple(spec(name, "suite") for name in docs)), progress=lines.append, parallelism=3
    )

    assert [o.contract_name for o in outcomes] == list(docs)
    missing = outcomes[-1]
    assert missing.result is None and missing.error_kind == RUN_FAILED
    assert "nowhere" in str(missing.error)
    assert any(line.startswith("s_orders: ") for line in lines) and any(
        line.startswith("suite: 4 contracts") for line in lines
    )
    decisions = {}
    for outcome in outcomes[:-1]:
        name = outcome.contract_name
        assert outcome.error is None and outcome.result is not None
        mine, theirs = outcome.result.summary(), alone[name].summary()
        decisions[name] = mine["decision"]
        assert without_run_identity(mine) == {
            **without_run_identity(theirs),
            "results_table": str(tmp_path / "suite" / "dq_results"),
            "quarantine": mine["quarantine"]
            and {**theirs["quarantine"], "table": str(tmp_path / "suite" / "quarantine" / name)},
            "valid": {**theirs["valid"], "table": str(tmp_path / "suite" / "valid" / name)},
            "checks": mine["checks"],
        }
        assert [without_run_identity(c) for c in mine["checks"]] == [without_run_identity(c) for c in theirs["checks"]]
        # The rows, read with delta-rs: the suite's equal the run alone's, and plain Python's.
        checks, rows = plans[name]
        table_rows = {
            mode: delta_rows(tmp_path / mode / "dq_results", "run_id", f"{mode}-{name}") for mode in ("alone", "suite")
        }
        assert len(table_rows["suite"]) == len(mine["checks"])
        assert sorted(map(repr, map(without_run_identity, table_rows["suite"]))) == sorted(
            map(repr, map(without_run_identity, table_rows["alone"]))
        )
        expected = expectations(checks, rows)
        assert set(expected) <= {record["check_id"] for record in mine["checks"]}
        for record in mine["checks"]:
            if record["check_id"] in expected:  # (the implicit schema checks pass: every column is there)
                metric, failed_rows, passed, _ = expected[record["check_id"]]
                assert record["metric_value"] == pytest.approx(metric) and record["passed"] is passed
                assert record["failed_rows"] == failed_rows
            else:
                assert record["check_type"] == "schema" and record["passed"]
        bad = quarantined_by_hand(checks, rows)
        quarantined = {
            mode: delta_rows(tmp_path / mode / "quarantine" / name, "_dq_run_id", f"{mode}-{name}")
            for mode in ("alone", "suite")
        }
        valid = {
            mode: delta_rows(tmp_path / mode / "valid" / name, "_dq_run_id", f"{mode}-{name}")
            for mode in ("alone", "suite")
        }
        assert {r["rid"] for r in quarantined["suite"]} == bad
        assert {r["rid"] for r in valid["suite"]} == {r["rid"] for r in rows} - bad
        assert user_columns(quarantined["suite"]) == user_columns(quarantined["alone"])
        assert violations(quarantined["suite"]) == violations(quarantined["alone"])
        assert user_columns(valid["suite"]) == user_columns(valid["alone"])
    assert decisions == {"s_orders": "quarantine", "s_payments": "pass", "s_stock": "gate"}
    assert delta_rows(tmp_path / "suite" / "dq_results", "run_id", "suite-s_missing") == []


@pytest.mark.spark
def test_the_job_reports_each_run_of_a_suite_in_one_marker(spark, tmp_path):
    """The job's entry with a suite (in this process's session): one DONE line, a bad contract is its own error."""
    from airflow_dq_contracts.jobs import markers
    from airflow_dq_contracts.jobs import run_contract as job

    rows = generate(4, count=30)
    good = contract_doc("j_good", write_table(tmp_path / "good", rows), PAYMENTS_CHECKS)
    specs = (
        RunSpec(
            contract_text=yaml.safe_dump(good),
            run_id="j-1",
            results_table=str(tmp_path / "dq_results"),
            input_path=good["dataset"]["path"],
        ),
        RunSpec(
            contract_text="name: j_bad\ncolumns:\n  - name: a\n    checks: [{name: n, type: missing, maxx: 0}]\n",
            contract_origin="bad.yaml",
            input_path="/x",
            run_id="j-2",
        ),
        RunSpec(
            contract_text=yaml.safe_dump(good),
            run_id="j-3",
            input_path=str(tmp_path / "absent"),
            results_table=str(tmp_path / "dq_results"),
        ),
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = job.main(SuiteSpec(specs).job_arguments().arguments)
    assert code == job.EXIT_OK
    found = [m for m in map(markers.parse_marker, out.getvalue().splitlines()) if m]
    assert [marker for marker, _ in found] == [markers.DONE_MARKER]
    entries = found[0][1][markers.SUITE_KEY]
    assert [e["run_id"] for e in entries] == ["j-1", "j-2", "j-3"]
    assert "error" not in entries[0], entries[0]
    expected = expectations(PAYMENTS_CHECKS, rows)
    assert entries[0]["decision"] == ("pass" if all(p for _, _, p, _ in expected.values()) else "gate")
    written = delta_rows(tmp_path / "dq_results", "run_id", "j-1")
    assert entries[0]["checks"] == len(written) >= len(expected) and entries[0]["row_count"] == len(rows)
    assert entries[1]["error"]["kind"] == "invalid_contract" and "bad.yaml:4" in entries[1]["error"]["message"]
    assert entries[2]["error"]["kind"] == "run_failed" and "absent" in entries[2]["error"]["message"]
    assert {r["run_id"] for r in delta_rows(tmp_path / "dq_results", "contract_name", "j_good")} == {"j-1"}
    assert {r["check_id"]: r["passed"] for r in written if r["check_id"] in expected} == {
        check_id: passed for check_id, (_, _, passed, _) in expected.items()
    }


# --------------------------------------------------------------------------------------- Airflow end to end

DAG_SOURCE = """
import datetime as dt
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import Asset
from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
from airflow_dq_contracts.operators.assets import contract_asset

with DAG("dq_suite", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
    check = ContractCheckOperator(
        task_id="check_all",
        contract={contracts!r},
        valid_table={valid!r},
        fail_on_gate=False,
        # one contract's valid table (its own verdict) and an asset of the whole task (the combined one)
        outlets=[contract_asset({orders_valid!r}), Asset("x-dq-test://suite")],
    )
    route = ContractBranchOperator(
        task_id="route", check_task_id="check_all",
        pass_task_ids=["publish"], quarantine_task_ids=["quarantine_then_publish"], gate_task_ids=["alert"],
    )
    check >> route >> [EmptyOperator(task_id="publish"), EmptyOperator(task_id="quarantine_then_publish"),
                       EmptyOperator(task_id="alert")]
"""


@pytest.fixture(scope="module")
def suite_env(airflow_db, tmp_path_factory):  # noqa: F811 - airflow_db is the imported fixture
    root = tmp_path_factory.mktemp("suite")
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(root / "warehouse"))
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / "job-cache"))
    use_cached_delta_jars(patch, root)
    yield root
    patch.undo()


@pytest.mark.airflow
@pytest.mark.spark
@pytest.mark.slow
def test_three_contracts_in_one_task_retry_and_branch(suite_env, monkeypatch):
    from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
    from airflow_dq_contracts.version_compat import AirflowException

    warehouse = suite_env / "warehouse"
    plans = {"landing_orders": (ORDERS_CHECKS, generate(11)), "landing_payments": (PAYMENTS_CHECKS, generate(12))}
    texts = [
        yaml.safe_dump(contract_doc(n, write_table(suite_env / "in" / n, rows), checks))
        for n, (checks, rows) in plans.items()
    ]
    texts.append(yaml.safe_dump(contract_doc("landing_refunds", str(suite_env / "in" / "refunds"), PAYMENTS_CHECKS)))
    orders_valid = str(warehouse / "valid" / "landing_orders")
    dag = install_dag(
        DAG_SOURCE.format(contracts=texts, valid=str(warehouse / "valid" / "{contract}"), orders_valid=orders_valid)
    )

    calls: list[int] = []
    failures: list[str] = []  # what an attempt raised, to say why if the states are not the expected ones
    watched = ContractCheckOperator.execute

    def dies_after_the_job_on_first_try(self, context):
        calls.append(context["ti"].try_number)
        try:
            result = watched(self, context)
        except BaseException as exc:
            failures.append(f"try {context['ti'].try_number}: {type(exc).__name__}: {exc}")
            raise
        if context["ti"].try_number == 1:
            raise AirflowException("simulated worker loss after the Spark job wrote its results")
        return result

    monkeypatch.setattr(ContractCheckOperator, "execute", dies_after_the_job_on_first_try)
    monkeypatch.setattr(dag.task_dict["check_all"], "retries", 1)
    monkeypatch.setattr(dag.task_dict["check_all"], "retry_delay", dt.timedelta(0))
    states, dag_run = run_dag(dag, **interval(dt.date(2024, 5, 1)))
    assert calls == [1, 2], failures
    assert states == {
        "check_all": "success",
        "route": "success",
        "publish": "skipped",
        "quarantine_then_publish": "skipped",
        "alert": "success",  # one contract could not be evaluated: the combined decision gates
    }, failures

    suite = xcom_value(dag_run, "check_all")
    task_run_id = make_run_id("dq_suite", dag_run.run_id, "check_all")
    assert suite["suite"] == 1 and suite["run_id"] == task_run_id
    assert suite["decisions"] == {"landing_orders": "quarantine", "landing_payments": "pass", "landing_refunds": "gate"}
    assert suite["decision"] == "gate" and suite["status"] == "error"
    by_name = {entry["contract"]["name"]: entry for entry in suite["contracts"]}
    refunds = by_name["landing_refunds"]
    assert refunds["status"] == "error" and refunds["checks"] == [] and "refunds" in refunds["error"]
    assert delta_rows(warehouse / "dq_results", "contract_name", "landing_refunds") == []

    for name, (checks, rows) in plans.items():
        entry = by_name[name]
        assert entry["run_id"] == make_run_id(task_run_id, name)  # per contract, the same on the retry
        results = assert_xcom_equals_results_table(entry, warehouse)  # one row per check: the retry replaced
        assert entry["decision"] == decision_by_hand(results)
        expected = expectations(checks, rows)
        assert set(expected) <= {r["check_id"] for r in results}
        for row in results:
            if row["check_id"] in expected:
                metric, failed_rows, passed, _ = expected[row["check_id"]]
                assert row["metric_value"] == pytest.approx(metric) and row["passed"] is passed
                assert row["failed_rows"] == failed_rows
            assert row["row_count"] == len(rows) and row["dag_id"] == "dq_suite" and row["task_id"] == "check_all"
        bad = quarantined_by_hand(checks, rows)
        quarantined = delta_rows(warehouse / "dq_quarantine" / name, "_dq_run_id", entry["run_id"])
        valid = delta_rows(warehouse / "valid" / name, "_dq_run_id", entry["run_id"])
        assert sorted(r["rid"] for r in quarantined) == sorted(bad)  # each once: not twice after the retry
        assert sorted(r["rid"] for r in valid) == sorted(r["rid"] for r in rows if r["rid"] not in bad)
        assert entry["row_count"] == len(rows) and (entry["quarantine"] or {}).get("rows", 0) == len(bad)
    assert by_name["landing_orders"]["decision"] == "quarantine" and by_name["landing_payments"]["decision"] == "pass"

    # Every event of the task carries a verdict (#25): the orders' valid table its own contract's, the
    # task's asset the combined one with each contract's inside; one event each (the failed try recorded none).
    events = {e["uri"]: e["extra"] for e in asset_events("dq_suite", dag_run.run_id)}
    assert set(events) == {Path(orders_valid).as_uri(), "x-dq-test://suite"}
    own = events[Path(orders_valid).as_uri()]["airflow_dq_contracts.verdict"]
    orders_rows = delta_rows(warehouse / "dq_results", "run_id", by_name["landing_orders"]["run_id"])
    assert own["contract"]["name"] == "landing_orders" and own["decision"] == decision_by_hand(orders_rows)
    assert own["counts"]["failed"] == sum(1 for r in orders_rows if r["status"] == "failed")
    assert own["counts"]["total"] == len(orders_rows)
    combined = events["x-dq-test://suite"]["airflow_dq_contracts.verdict"]
    assert combined["decision"] == "gate" and combined["run_id"] == task_run_id
    assert [v["contract"]["name"] for v in combined["contracts"]] == [e["contract"]["name"] for e in suite["contracts"]]
    assert [v["decision"] for v in combined["contracts"]] == ["quarantine", "pass", "gate"]
    assert events["x-dq-test://suite"]["airflow.dataquality.result"]["ruleset"] == "+".join(suite["decisions"])

    # Without the contract that had no input, the same summary routes to quarantine.
    branch = ContractBranchOperator(task_id="route_rest", check_task_id="check_all")
    rest = {**suite, "contracts": [by_name["landing_orders"], by_name["landing_payments"]], "decision": "quarantine"}
    assert branch.decide(rest)[0] == "quarantine"
