"""An ODCS document describing several objects runs as one suite (#37): ``dq-contracts validate``, ``dq-contracts
run`` (in-process, on the tests' Spark session) and ``ContractCheckOperator(contract="shop.odcs.yaml")``
(one ``dag.test()``). Each object's location comes from the document's server (``path`` with ``{object}``);
expected per-object results are computed in plain Python from the rows written.
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

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from pipeline_expectations import assert_xcom_equals_results_table, decision_by_hand, delta_rows, interval

from airflow_dq_contracts.cli.main import main as cli_main
from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.odcs.objects import load_contracts, object_documents
from airflow_dq_contracts.results import make_run_id

PUBLIC = os.path.join(os.path.dirname(__file__), "interop", "public", "odcs")
FULL = os.path.join(PUBLIC, "all__full-example.odcs.yaml")  # ODCS v3.1 full example: objects tbl, receivers

SHOP = """\
apiVersion: v3.1.0
kind: DataContract
id: shop
name: shop
version: 2.0.0
status: active
servers:
  - server: lake
    type: local
    path: {root}/{{object}}
    format: parquet
schema:
  - name: orders
    properties:
      - {{name: id, physicalType: bigint, primaryKey: true}}
      - {{name: amount, physicalType: double, logicalTypeOptions: {{minimum: 0}}}}
      - name: status
        physicalType: string
        quality:
          - {{type: library, metric: invalidValues, arguments: {{validValues: [NEW, PAID]}}, mustBe: 0}}
  - name: customers
    properties:
      - {{name: cid, physicalType: bigint, required: true}}
    quality:
      - {{type: library, metric: rowCount, mustBeGreaterOrEqualTo: {min_customers}}}
"""
STATES = ["NEW", "PAID", "X", None, "PAID"]
ORDERS = [(i, float(i * 5 - 7), STATES[i % 5]) for i in range(23)]
CUSTOMERS = [(None if i % 4 == 0 else i, f"c{i}") for i in range(9)]


def expected_orders() -> dict[str, tuple[float | None, bool]]:
    """check id → (metric, passed), written out over the rows."""
    ids = [i for i, _, _ in ORDERS]
    invalid = sum(1 for _, _, s in ORDERS if s is not None and s not in ("NEW", "PAID"))
    lowest = min(a for _, a, _ in ORDERS)
    return {
        "id/not_null": (0, True),
        "id/unique": (len(ids) - len(set(ids)), len(ids) == len(set(ids))),
        "amount/amount_minimum_0": (lowest, lowest >= 0),
        "_table_/invalidvalues_mustbe_0": (invalid, invalid == 0),
    }


def expected_customers(min_customers: int) -> dict[str, tuple[float | None, bool]]:
    nulls = sum(1 for cid, _ in CUSTOMERS if cid is None)
    return {
        "cid/not_null": (nulls, nulls == 0),
        "_table_/rowcount_mustbegreaterorequalto_" + str(min_customers): (
            len(CUSTOMERS),
            len(CUSTOMERS) >= min_customers,
        ),
    }


def quarantined_by_hand() -> dict[str, set]:
    """The rows a run sets aside (every row-level check here is P1 → quarantine): ids / names."""
    orders = {i for i, a, s in ORDERS if a < 0 or (s is not None and s not in ("NEW", "PAID"))}
    return {"orders": orders, "customers": {name for cid, name in CUSTOMERS if cid is None}}


def write_shop(spark, root: Path, min_customers: int = 5) -> Path:
    spark.createDataFrame(ORDERS, "id bigint, amount double, status string").write.parquet(str(root / "orders"))
    spark.createDataFrame(CUSTOMERS, "cid bigint, name string").write.parquet(str(root / "customers"))
    document = root / "shop.odcs.yaml"
    document.write_text(SHOP.format(root=root, min_customers=min_customers))
    return document


# --------------------------------------------------------------------------------------- plain Python


def test_validate_takes_every_object_of_the_full_example(capsys):
    assert cli_main(["validate", FULL]) == 0
    out = capsys.readouterr().out
    assert f"{FULL}#tbl: ok (tbl 1.1.0," in out and f"{FULL}#receivers: ok (receivers 1.1.0," in out
    assert cli_main(["validate", f"{FULL}#receivers"]) == 0  # FILE#OBJECT still picks one
    out = capsys.readouterr().out
    assert out.startswith(f"{FULL}#receivers: ok (receivers") and "#tbl" not in out
    assert [(origin.rsplit("#", 1)[1], c.dataset.table) for origin, c in load_contracts(FULL)] == [
        ("tbl", "tbl_1"),
        ("receivers", "receivers_master"),
    ]
    with pytest.raises(ContractValidationError, match="describes 2 objects"):
        load_contract(FULL)  # one contract asked for: the way to the others said


def test_a_document_describing_nothing_is_refused_at_its_schema_line(tmp_path, capsys):
    empty = tmp_path / "empty.odcs.yaml"
    empty.write_text("apiVersion: v3.1.0\nkind: DataContract\nid: e\nversion: 1.0.0\nstatus: active\nschema: []\n")
    for command in (["validate", str(empty)], ["run", str(empty)]):
        assert cli_main(command) == 1
        assert f"{empty}:6: schema: the document describes no object" in capsys.readouterr().err
    with pytest.raises(ContractValidationError) as err:
        load_contracts(str(empty))
    assert [(i.file, i.line, i.path) for i in err.value.issues] == [(str(empty), 6, "schema")]


def test_each_object_is_read_where_the_server_says(tmp_path):
    text = SHOP.format(root="/lake", min_customers=1)
    assert [(n, d["dataset"]) for n, d in object_documents(text, "shop.odcs.yaml") or []] == [
        ("orders", {"path": "/lake/orders", "format": "parquet"}),
        ("customers", {"path": "/lake/customers", "format": "parquet"}),
    ]
    no_placeholder = text.replace("path: /lake/{object}", "path: /lake")
    contracts = load_contracts(no_placeholder, filename="shop.odcs.yaml")
    assert [c.dataset.path for _, c in contracts] == ["/lake/orders", "/lake/customers"]
    assert "each object is read at <path>/<physicalName>" in " ".join(contracts[0][1].metadata["odcs"]["notes"])
    bad = text.replace("format: parquet", "format: avro")
    with pytest.raises(ContractValidationError) as err:
        load_contracts(bad, filename="shop.odcs.yaml")
    assert [(i.line, i.path) for i in err.value.issues] == [(11, "servers[0].format")]
    assert "server format 'avro' cannot be read" in str(err.value)


def test_the_cli_refuses_one_dataset_or_one_table_for_several(tmp_path, capsys):
    document = tmp_path / "shop.odcs.yaml"
    document.write_text(SHOP.format(root=tmp_path, min_customers=1))
    for extra, message in (
        (["--input", "/x"], "--input names one dataset; the document describes 2"),
        (["--quarantine-table", "/q"], "--quarantine-table must contain {contract}"),
    ):
        assert cli_main(["run", str(document), *extra]) == 1
        assert message in capsys.readouterr().err


def test_the_operator_refuses_one_table_for_several_objects(tmp_path):
    from airflow_dq_contracts.operators import ContractCheckOperator
    from airflow_dq_contracts.version_compat import AirflowFailException

    document = tmp_path / "shop.odcs.yaml"
    document.write_text(SHOP.format(root=tmp_path, min_customers=1))
    op = ContractCheckOperator(task_id="check", contract=str(document), valid_table="/wh/valid")
    op.contract = document.read_text()  # as rendered
    with pytest.raises(AirflowFailException, match=r"valid_table= must contain \{contract\}.*describes 2 objects"):
        op._split_objects()
    op = ContractCheckOperator(task_id="check", contract=str(document), valid_table="/wh/valid/{contract}")
    op.contract = document.read_text()
    op._split_objects()
    assert [c["name"] for c in op.contract] == ["orders", "customers"]
    assert op.contract_sources()[1][1] == f"{document}#customers"


# --------------------------------------------------------------------------------------- Spark


def _assert_checks(checks: list[dict], expected: dict[str, tuple[float | None, bool]]) -> None:
    by_id = {c["check_id"]: c for c in checks}
    assert set(expected) <= set(by_id), sorted(by_id)
    for check_id, (metric, passed) in expected.items():
        assert (by_id[check_id]["metric_value"], by_id[check_id]["passed"]) == (pytest.approx(metric), passed), check_id


@pytest.mark.spark
def test_run_checks_every_object_as_one_suite(spark, tmp_path, capsys):
    document = write_shop(spark, tmp_path)
    out = tmp_path / "summary.json"
    results, quarantine = tmp_path / "dq_results", str(tmp_path / "q" / "{contract}")
    argv = ["run", str(document), "--results-table", str(results), "--quarantine-table", quarantine]
    code = cli_main([*argv, "--run-id", "r1", "--json-out", str(out), "--reference-time", "2026-01-01T00:00:00Z"])
    suite = json.loads(out.read_text())
    assert suite["suite"] == 1 and [c["contract"]["name"] for c in suite["contracts"]] == ["orders", "customers"]
    by_name = {c["contract"]["name"]: c for c in suite["contracts"]}
    _assert_checks(by_name["orders"]["checks"], expected_orders())
    _assert_checks(by_name["customers"]["checks"], expected_customers(5))
    for name, entry in by_name.items():
        assert entry["run_id"] == make_run_id("r1", name) and entry["dataset"] == str(tmp_path / name)
        assert entry["decision"] == decision_by_hand(entry["checks"])
        rows = delta_rows(results, "run_id", entry["run_id"])  # a results row set per object
        assert sorted(r["check_id"] for r in rows) == sorted(c["check_id"] for c in entry["checks"])
        key = "id" if name == "orders" else "name"
        set_aside = {r[key] for r in delta_rows(tmp_path / "q" / name, "_dq_run_id", entry["run_id"])}
        assert set_aside == quarantined_by_hand()[name]
    order = {"pass": 0, "quarantine": 1, "gate": 2}
    assert suite["decision"] == max((e["decision"] for e in by_name.values()), key=order.__getitem__)
    assert suite["decisions"] == {n: e["decision"] for n, e in by_name.items()}
    assert code == (3 if suite["decision"] == "gate" else 0)
    printed = capsys.readouterr().out
    assert "orders: decision" in printed and "customers: decision" in printed and "suite of 2 contracts" in printed


# --------------------------------------------------------------------------------------- Airflow end to end

DAG_SOURCE = """
import datetime as dt
from airflow.sdk import DAG
from airflow_dq_contracts.operators import ContractCheckOperator

with DAG("dq_odcs_multi", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
    ContractCheckOperator(task_id="check_shop", contract={contract!r}, valid_table={valid!r}, fail_on_gate=False)
"""


@pytest.fixture(scope="module")
def multi_env(airflow_db, tmp_path_factory):  # noqa: F811 - airflow_db is the imported fixture
    root = tmp_path_factory.mktemp("odcs_multi")
    patch = pytest.MonkeyPatch()
    patch.setenv("DQ_CONTRACTS_WAREHOUSE", str(root / "warehouse"))
    patch.setenv("DQ_CONTRACTS_JOB_CACHE", str(root / "job-cache"))
    use_cached_delta_jars(patch, root)
    yield root
    patch.undo()


@pytest.mark.airflow
@pytest.mark.spark
@pytest.mark.slow
def test_the_operator_runs_a_two_object_document_as_one_suite(spark, multi_env):
    document = write_shop(spark, multi_env / "lake", min_customers=50)  # customers: too few rows → gate
    warehouse = multi_env / "warehouse"
    dag = install_dag(DAG_SOURCE.format(contract=str(document), valid=str(warehouse / "valid" / "{contract}")))
    states, dag_run = run_dag(dag, **interval(dt.date(2024, 5, 1)))
    assert states == {"check_shop": "success"}
    suite = xcom_value(dag_run, "check_shop")
    task_run_id = make_run_id("dq_odcs_multi", dag_run.run_id, "check_shop")
    assert suite["suite"] == 1 and suite["run_id"] == task_run_id
    by_name = {entry["contract"]["name"]: entry for entry in suite["contracts"]}
    assert list(by_name) == ["orders", "customers"]
    _assert_checks(by_name["orders"]["checks"], expected_orders())
    _assert_checks(by_name["customers"]["checks"], expected_customers(50))
    for name, entry in by_name.items():
        assert entry["run_id"] == make_run_id(task_run_id, name)
        rows = assert_xcom_equals_results_table(entry, warehouse)  # a results row set per object
        assert entry["decision"] == decision_by_hand(rows)
        key = "id" if name == "orders" else "name"
        quarantined = {r[key] for r in delta_rows(warehouse / "dq_quarantine" / name, "_dq_run_id", entry["run_id"])}
        valid = {r[key] for r in delta_rows(warehouse / "valid" / name, "_dq_run_id", entry["run_id"])}
        assert quarantined == quarantined_by_hand()[name]
        if entry["decision"] == "quarantine":  # the remaining rows are the valid ones
            every = {row[0] if name == "orders" else row[1] for row in (ORDERS if name == "orders" else CUSTOMERS)}
            assert valid == every - quarantined
    assert by_name["customers"]["decision"] == "gate" and suite["decision"] == "gate"
