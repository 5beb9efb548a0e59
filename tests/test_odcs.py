"""ODCS v3 as a contract format: the compiler's mapping, its refusals located in the ODCS file, the public
examples of the ODCS repository (tests/interop/public/odcs, see SOURCES.md), round trips and one real run.
"""

from __future__ import annotations

import datetime as dt
import glob
import os

import pytest

from airflow_dq_contracts.cli.main import main as cli_main
from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.odcs import compile_odcs
from airflow_dq_contracts.contract.yamlsrc import load_yaml
from airflow_dq_contracts.interop.odcs import export_odcs, import_odcs

PUBLIC = os.path.join(os.path.dirname(__file__), "interop", "public", "odcs")
HEAD = "apiVersion: v3.1.0\nkind: DataContract\nid: t-1\nversion: 1.0.0\nstatus: active\n"


def _file(name: str) -> str:
    return os.path.join(PUBLIC, name)


def _compile(path: str):
    with open(path, encoding="utf-8") as handle:
        data, smap, _ = load_yaml(handle.read(), path)
    return compile_odcs(data, smap)


def _checks(contract) -> dict:
    return {c.check_id: c for c in contract.evaluated_checks()}


def _one(body: str):
    return load_contract(HEAD + body)


def _refusal(body: str) -> list[str]:
    with pytest.raises(ContractValidationError) as err:
        load_contract(HEAD + body, filename="x.odcs.yaml")
    return [str(issue) for issue in err.value.issues]


# --------------------------------------------------------------------------------------- public examples

# Files whose rules genuinely cannot map: (ODCS path of each refused element) — --partial imports the rest.
REFUSED = {
    "data-types__all-data-types.odcs.yaml": [
        "schema[0].properties[4].logicalTypeOptions.minimum",  # a time of day: Spark has no time type
        "schema[0].properties[4].logicalTypeOptions.maximum",
        "schema[0].properties[8].logicalTypeOptions.uniqueItems",
        "schema[0].properties[9].logicalTypeOptions.maxProperties",
        "schema[0].properties[9].logicalTypeOptions.required",
    ],
    "schema__map.odcs.yaml": [  # v3.2: constraints on a map's values / a nested field
        "schema[0].properties[2].map.value.logicalTypeOptions",
        "schema[0].properties[3].map.value.properties[0].required",
    ],
    "all__full-example-v3.0.0.odcs.yaml": ["schema[0].quality[0].rule"],  # countCheck: no bound to check
    "quality__column-custom.odcs.yaml": [  # engine: soda
        "schema[0].properties[0].quality[0].engine",
        "schema[0].properties[0].quality[1].engine",
    ],
}
EMPTY = {  # valid ODCS documents that describe no dataset (servers, roles, stakeholders, SLA only)
    "roles__service-and-operational-roles.odcs.yaml",
    "server__azure-server.odcs.yaml",
    "sla__database-table-sla.odcs.yaml",
    "stakeholders__basic-four-dpo.odcs.yaml",
}


@pytest.mark.parametrize("name", sorted(os.path.basename(p) for p in glob.glob(os.path.join(PUBLIC, "*.yaml"))))
def test_every_public_example_compiles_or_refuses_located(name):
    path = _file(name)
    compilation = _compile(path)
    assert sorted(i.path for i in compilation.issues) == sorted(REFUSED.get(name, []))
    assert all(i.line is not None and i.file == path for i in compilation.issues)
    if name in EMPTY:
        assert compilation.objects == []
        with pytest.raises(ContractValidationError, match="no object"):
            load_contract(path)
        return
    assert compilation.objects
    if name in REFUSED:
        with pytest.raises(ContractValidationError):
            load_contract(f"{path}#{compilation.objects[0].name}")
        result = import_odcs(path, partial=True)
        assert sorted(i.path for i in result.refused) == sorted(REFUSED[name])
        assert set(result.contracts) == {o.name for o in compilation.objects}
        return
    first = compilation.objects[0]
    assert load_contract(f"{path}#{first.name}").metadata["odcs"]["object"] == first.name
    for obj in compilation.objects:  # every object is a valid contract as it is (one parse of the file)
        assert load_contract(obj.document).metadata["odcs"]["object"] == obj.name


def test_full_example_means_what_the_odcs_file_says():
    path = _file("all__full-example.odcs.yaml")
    tbl = load_contract(f"{path}#tbl")
    assert (tbl.name, tbl.version, tbl.owner, tbl.domain, tbl.dataset.table) == (
        "tbl",
        "1.1.0",
        "my-team",
        "seller",
        "tbl_1",
    )
    checks = _checks(tbl)
    rows = checks["_table_/rowcount_mustbegreaterthan_1000000"]  # mustBeGreaterThan 1000000 on an integer count
    assert (rows.type, rows.validator.kind, rows.validator.low) == ("num_rows", "min", 1_000_001)
    nulls = checks["rcvr_cntry_code/nullvalues_mustbe_0"]
    assert (nulls.type, nulls.validator.kind, nulls.validator.low, nulls.severity) == ("missing", "equals", 0, "P1")
    assert nulls.tags == ("completeness",)
    assert {"rcvr_id/not_null", "rcvr_id/unique"} <= set(checks)  # a single primaryKey
    assert (tbl.sla.freshness_hours, tbl.sla.timestamp_column) == (96.0, "txn_ref_dt")  # latency 4 d on txn_ref_dt
    assert checks["_table_/sla_freshness"].validator.high == 96.0
    assert nulls.line == 136  # located in the ODCS file
    receivers = load_contract(f"{path}#receivers")
    key = [c for c in receivers.checks if c.type == "duplicates"]
    assert [tuple(c.params["columns"]) for c in key] == [("id", "country_code")]  # composite, by primaryKeyPosition
    assert not receivers.column("id").nullable and not receivers.column("country_code").nullable
    assert receivers.sla.freshness_hours is None  # the latency element is a column of tbl only


def test_v3_2_enum_and_semantic_types():
    enum = load_contract(_file("schema__enum.odcs.yaml"))
    allowed = {c.check_id: list(c.params["values"]) for c in enum.evaluated_checks() if c.type == "whitelist"}
    assert allowed == {
        "status/allowed_values": ["pending", "processing", "shipped", "cancelled"],
        "priority/allowed_values": [1, 2, 3],
        "country_code/allowed_values": ["US", "FR", "CA", "MX"],
    }
    deprecated = load_contract(_file("schema__deprecated.odcs.yaml"))
    # the nested legacy_code is a column path since nested properties import (#37)
    assert [c.name for c in deprecated.columns if c.deprecated] == ["category_id", "category.legacy_code"]
    assert deprecated.metadata["odcs"]["deprecated"] is True
    assert load_contract(export_odcs(deprecated)).column("category_id").deprecated
    measures = load_contract(_file("schema__measures-and-dimensions.odcs.yaml"))
    # dimensions and measures are computed by transformLogic: not columns of the data
    assert [c.name for c in measures.columns] == ["turnover_ts", "order_id", "turnover_euros", "country_code"]
    assert sum("semanticType measure" in n for n in measures.metadata["odcs"]["notes"]) == 3


def test_v3_0_full_example_partial():
    result = import_odcs(_file("all__full-example-v3.0.0.odcs.yaml"), partial=True)
    contract = load_contract(result.contracts["tbl"])
    assert contract.owner == "daustin"  # v3.0 team: the member whose role is Owner
    nulls = contract.column("rcvr_cntry_code").checks[0]  # rule: nullCheck, no operator → no NULL
    assert (nulls.type, nulls.validator.kind, nulls.validator.low) == ("missing", "equals", 0)
    assert any("nullCheck" in note for note in result.notes)


def test_quality_examples_spot_checks():
    validity = _checks(load_contract(_file("quality__column-validity.odcs.yaml")))
    (check,) = [c for c in validity.values() if c.type == "row_condition"]
    # validValues ["", null, "n/a"], mustBeLessOrEqualTo 5 percent: invalid (non-null, not listed) ≤ 5 % of rows
    assert check.params["condition"] == "air_quality_status IN ('', 'n/a')"
    assert (check.params["null_passes"], check.params["return"], check.validator.kind, check.validator.high) == (
        True,
        "pct",
        "max",
        0.05,
    )
    accuracy = load_contract(_file("quality__column-accuracy.odcs.yaml"))
    (sql,) = [c for c in accuracy.checks if c.type == "sql"]
    assert sql.params["query"] == "select count(*) from {dataset} where DataValue <= 0 or DataValue >= 500"
    assert (sql.validator.kind, sql.validator.low, sql.validator.tolerance) == ("equals", 0, 0)
    notes = accuracy.metadata["odcs"]["notes"]
    assert any("Air_Quality read as the checked dataset" in n for n in notes)
    works = _compile(_file("all__postgresql-adventureworks-contract.odcs.yaml"))
    assert len(works.objects) == 68


# --------------------------------------------------------------------------------------- the mapping

PROPS = """schema:
  - name: orders
    physicalName: shop.orders
    properties:
      - name: id
        physicalType: bigint
        primaryKey: true
"""


def test_operators_units_and_strict_bounds_map_exactly():
    contract = _one(
        PROPS
        + """        quality:
          - {metric: nullValues, mustBeLessThan: 5, unit: percent}
          - {metric: nullValues, mustBeGreaterThan: 2.5}
          - {metric: duplicateValues, mustBeBetween: [0, 3]}
          - {metric: nullValues, mustNotBeBetween: [1, 4]}
    quality:
      - {metric: rowCount, mustBeGreaterOrEqualTo: 10, mustBeLessOrEqualTo: 20, severity: warning, dimension: completeness}
      - {type: sql, query: "SELECT max(id) FROM {object}", mustBeLessThan: 100.5}
"""
    )
    by_name = {c.name: c for c in contract.all_checks()}
    pct = by_name["nullValues mustBeLessThan 5"]
    assert (pct.params["return"], pct.validator.kind, pct.validator.low, pct.validator.high) == (
        "pct",
        "not_between",
        0.05,
        1,
    )
    assert by_name["nullValues mustBeGreaterThan 2.5"].validator.low == 3  # integer count > 2.5 ⇔ ≥ 3
    between = by_name["duplicateValues mustBeBetween [0, 3]"]
    assert (between.validator.kind, between.validator.low, between.validator.high) == ("between", 0, 3)
    assert by_name["nullValues mustNotBeBetween [1, 4]"].validator.kind == "not_between"
    rows = [c for c in contract.checks if c.type == "num_rows"][0]
    assert (rows.validator.kind, rows.validator.low, rows.validator.high, rows.severity, rows.tags) == (
        "between",
        10,
        20,
        "P2",
        ("completeness",),
    )
    sql = [c for c in contract.checks if c.type == "sql"][0]
    assert sql.params["query"] == "SELECT CAST((SELECT max(id) FROM {dataset}) < 100.5 AS INT)"
    assert (sql.validator.kind, sql.validator.low) == ("equals", 1)
    notes = contract.metadata["odcs"]["notes"]
    assert any("inclusive" in n for n in notes) and any("COUNT(*) − COUNT(DISTINCT" in n for n in notes)


def test_library_arguments_custom_and_text():
    contract = _one(
        """schema:
  - name: orders
    properties:
      - name: id
        physicalType: bigint
      - name: state
        logicalType: string
        quality:
          - {metric: missingValues, arguments: {missingValues: [null, '', 'N/A']}, mustBe: 0}
          - {metric: invalidValues, arguments: {pattern: '^[A-Z]+$'}, mustBeLessOrEqualTo: 2}
          - type: custom
            engine: airflow-dq-contracts
            implementation: {name: known states, type: whitelist, values: [NEW, PAID], severity: P0}
          - {type: text, description: states come from the order service}
    quality:
      - {metric: duplicateValues, arguments: {properties: [id, state]}, mustBe: 0}
      - type: custom
        engine: airflow-dq-contracts
        implementation: "{name: paid, type: row_condition, condition: \\"state <> 'X'\\"}"
"""
    )
    by_name = {c.name: c for c in contract.all_checks()}
    missing = by_name["missingValues mustBe 0"]
    assert missing.params["condition"] == "state IS NOT NULL AND state NOT IN ('', 'N/A')"
    assert missing.params["null_passes"] is False
    invalid = by_name["invalidValues mustBeLessOrEqualTo 2"]
    assert (invalid.params["condition"], invalid.params["null_passes"]) == ("state RLIKE '^[A-Z]+$'", True)
    known = by_name["known states"]  # our check, unchanged, on its property
    assert (known.column, known.type, list(known.params["values"]), known.severity) == (
        "state",
        "whitelist",
        ["NEW", "PAID"],
        "P0",
    )
    assert by_name["paid"].column is None  # a table-level type of ours sits on the table
    assert list(by_name["duplicateValues mustBe 0"].params["columns"]) == ["id", "state"]
    assert contract.metadata["odcs"]["text_rules"][0]["text"] == "states come from the order service"


def test_types_and_logical_type_options():
    contract = _one(
        """schema:
  - name: t
    properties:
      - {name: a, physicalType: varchar(18), logicalTypeOptions: {minLength: 2, maxLength: 18, pattern: '^A', format: email}}
      - {name: b, physicalType: 'DECIMAL(10, 2)', logicalTypeOptions: {minimum: 0}}
      - {name: c, logicalType: integer, logicalTypeOptions: {exclusiveMaximum: 100, minimum: 18}}
      - {name: d, logicalType: number, logicalTypeOptions: {exclusiveMinimum: 0.5}}
      - {name: e, logicalType: date, logicalTypeOptions: {minimum: '2020-01-01', format: yyyy-MM-dd}}
      - {name: f, physicalType: 'float(3,2)', logicalType: number, required: true, unique: true}
"""
    )
    types = {c.name: c.type.describe() if c.type else None for c in contract.columns}
    assert types == {"a": "string", "b": "decimal(10,2)", "c": "long", "d": None, "e": "date", "f": None}
    checks = _checks(contract)
    assert checks["c/c_exclusivemaximum_100"].validator.high == 99  # integer < 100 ⇔ ≤ 99
    assert checks["c/c_minimum_18"].validator.low == 18
    conditions = {c.params["condition"] for c in contract.checks if c.type == "row_condition"}
    assert conditions == {"d > 0.5", "e >= DATE '2020-01-01'"}
    assert {"a/pattern", "f/not_null", "f/unique", "a/a_minlength_2", "a/a_maxlength_18"} <= set(checks)
    assert any("declared without one" in n for n in contract.metadata["odcs"]["notes"])


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "schema: [{name: t, properties: [{name: a, quality: [{metric: nullValues, mustBe: 0, severity: urgent}]}]}]",
            "x.odcs.yaml:6: schema[0].properties[0].quality[0].severity: unknown severity",
        ),
        (
            "schema: [{name: t, quality: [{metric: nullValues, mustBe: 0}]}]",
            "x.odcs.yaml:6: schema[0].quality[0].metric: nullValues counts values of a property",
        ),
        (
            "schema: [{name: t, quality: [{metric: rowCount, mustBe: 1, mustNotBe: 2}]}]",
            "x.odcs.yaml:6: schema[0].quality[0]: a rule needs exactly one operator",
        ),
        (
            "schema: [{name: t, quality: [{metric: rowCount, mustBeBetween: [5, 1]}]}]",
            "x.odcs.yaml:6: schema[0].quality[0].mustBeBetween: low 5 is greater than high 1",
        ),
        (
            "schema: [{name: t, quality: [{metric: rowCount, mustBe: 1, unit: percent}]}]",
            "schema[0].quality[0].unit: a row count has no percentage",
        ),
        ("schema: [{name: t, quality: [{metric: rowCount, mustBee: 1}]}]", "schema[0].quality[0].mustBee: unknown key"),
        # found by the contract language itself, said at the ODCS rule
        (
            "schema: [{name: t, quality: [{type: custom, engine: airflow-dq-contracts, implementation: {type: num_rows, min: x}}]}]",
            "x.odcs.yaml:6: schema[0].quality[0]: 'min' must be a number",
        ),
    ],
)
def test_refusals_are_located_in_the_odcs_file(body, where):
    assert any(where in issue for issue in _refusal(body)), _refusal(body)


def test_unsupported_api_version_and_object_selection(tmp_path):
    with pytest.raises(ContractValidationError, match="apiVersion 'v2.2.2' is not supported"):
        load_contract("apiVersion: v2.2.2\nkind: DataContract\nschema: []\n")
    for version in ("v3.0.0", "v3.0.2", "v3.1.0"):
        assert load_contract(f"apiVersion: {version}\nkind: DataContract\nschema: [{{name: t}}]\n").name == "t"
    native = tmp_path / "native.yaml"
    native.write_text("name: t\n")
    with pytest.raises(ContractValidationError, match="#t selects an object of an ODCS document"):
        load_contract(f"{native}#t")
    with pytest.raises(ContractValidationError, match="no object 'nope'; objects: tbl, receivers"):
        load_contract(_file("all__full-example.odcs.yaml") + "#nope")


# --------------------------------------------------------------------------------------- round trips


def _meaning(contract) -> list[tuple]:
    return sorted(
        (c.check_id, c.type, sorted(c.params.items()), c.validator, c.severity, c.action, c.tags, c.filter, c.enabled)
        for c in contract.evaluated_checks()
    )


NATIVE = """
name: orders
version: 2.1.0
owner: checkout
dataset: {table: shop.orders}
sla: {freshness_hours: 6, timestamp_column: created_at}
columns:
  - {name: order_id, type: long, primary_key: true}
  - name: amount
    type: decimal(10,2)
    min_value: 0
    checks:
      - {name: mean amount, type: mean, between: [10, 500], severity: P2}
      - {name: few nulls, type: missing, return: pct, max: 0.05, tolerance: 0}
  - {name: status, type: string, allowed_values: [NEW, PAID], pattern: '^[A-Z]+$'}
  - {name: created_at, type: timestamp, nullable: false}
checks:
  - {name: rows, type: num_rows, min: 1, tags: [volume]}
  - {name: paid rows, type: row_condition, condition: "status <> 'X'", filter: "amount > 0", action: flag}
  - {name: sums, type: sql, query: "SELECT sum(amount) FROM {dataset}", max: 1000000}
"""


def test_round_trip_native_to_odcs_to_native_keeps_every_check(tmp_path):
    original = load_contract(NATIVE)
    odcs_text = export_odcs(original)
    again = load_contract(odcs_text)
    assert _meaning(again) == _meaning(original)
    assert "engine: airflow-dq-contracts" in odcs_text and "metric: rowCount" in odcs_text
    assert export_odcs(again) == odcs_text  # stable


@pytest.mark.parametrize("obj", ["tbl", "receivers"])
def test_round_trip_odcs_import_export_import(obj):
    first = load_contract(_file("all__full-example.odcs.yaml") + f"#{obj}")
    second = load_contract(export_odcs(first))
    assert _meaning(second) == _meaning(first)
    assert (second.sla, second.owner, second.version) == (first.sla, first.owner, first.version)
    if obj == "tbl":  # the ODCS dimension goes back as the rule's dimension
        assert "dimension: completeness" in export_odcs(first)


def test_export_refuses_what_odcs_cannot_carry():
    contract = load_contract(
        "name: t\nreferences: {c: {path: /tmp/c}}\nchecks: [{name: r, type: referential, columns: [a], reference: c}]\n"
    )
    with pytest.raises(ContractValidationError, match="references"):
        export_odcs(contract)


def test_cli_import_into_directory_partial_and_export(tmp_path, capsys):
    out = tmp_path / "contracts"
    out.mkdir()
    assert cli_main(["import", "odcs", _file("all__full-example.odcs.yaml"), "-o", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["receivers.yaml", "tbl.yaml"]
    assert load_contract(str(out / "tbl.yaml")).dataset.table == "tbl_1"
    capsys.readouterr()
    assert cli_main(["import", "odcs", _file("quality__column-custom.odcs.yaml"), "--partial"]) == 3
    stdout, stderr = capsys.readouterr()
    assert "quality__column-custom.odcs.yaml:27: schema[0].properties[0].quality[0].engine" in stderr
    assert load_contract(stdout).name == "my_table"
    assert cli_main(["import", "odcs", _file("quality__column-custom.odcs.yaml")]) == 1
    assert capsys.readouterr().out == ""
    assert cli_main(["export", "odcs", str(out / "tbl.yaml")]) == 0
    assert "kind: DataContract" in capsys.readouterr().out
    assert cli_main(["validate", _file("all__full-example.odcs.yaml") + "#tbl"]) == 0
    capsys.readouterr()
    assert cli_main(["validate", _file("quality__column-validity.odcs.yaml")]) == 0
    assert "note: schema[0].properties[0].quality[0]: invalidValues does not count NULL" in capsys.readouterr().out
    assert cli_main(["import", "odcs", _file("all__full-example.odcs.yaml")]) == 1  # two objects, no -o DIR
    assert "give -o DIR" in capsys.readouterr().err


def test_odcs_papercuts_partial_hint_new_output_directory_and_the_primary_key_note(tmp_path, capsys):
    document = tmp_path / "orders.odcs.yaml"
    document.write_text(
        "apiVersion: v3.0.0\nkind: DataContract\nid: orders\nname: orders\nversion: 1.0.0\nstatus: active\n"
        "schema:\n  - name: orders\n    properties:\n"
        "      - {name: order_id, logicalType: string, primaryKey: true}\n"
        "      - {name: customer_id, logicalType: string, required: true}\n"
        "      - name: amount\n        logicalType: number\n        quality:\n"
        "          - {type: library, rule: valueInRange, mustBeGreaterThan: 0}\n",
        encoding="utf-8",
    )
    hint = f"dq-contracts import odcs {document} --partial"
    # Refused as a whole: the refusal names the unknown metric, then the way past it.
    assert cli_main(["validate", str(document)]) == 1
    err = capsys.readouterr().err
    assert f"{document}:15: schema[0].properties[2].quality[0].rule: unknown library metric 'valueInRange'" in err
    assert hint in err
    assert cli_main(["import", "odcs", str(document), "-o", str(tmp_path / "x.yaml")]) == 1
    assert hint in capsys.readouterr().err and not (tmp_path / "x.yaml").exists()
    # --partial into a directory that does not exist yet: created, the contract written there.
    out = tmp_path / "compiled" / "odcs"
    assert cli_main(["import", "odcs", str(document), "--partial", "-o", f"{out}/"]) == 3
    err = capsys.readouterr().err
    assert sorted(os.listdir(out)) == ["orders.yaml"]
    contract = load_contract(str(out / "orders.yaml"))
    assert [c.name for c in contract.columns] == ["order_id", "customer_id", "amount"]
    assert [k.check_id for k in contract.column("order_id").constraints] == ["order_id/not_null", "order_id/unique"]
    # The reading docs/interop.md promises is said where it applies (a single primaryKey without required).
    assert "note: orders: schema[0].properties[0].primaryKey: a single primaryKey implies not null" in err
    assert "properties[1].primaryKey" not in err
    assert f"refused: {document}:15:" in err and "--partial)" not in err.split("refused:")[1]


# --------------------------------------------------------------------------------------- a real run

RUN = (
    HEAD
    + """name: orders
schema:
  - name: orders
    properties:
      - {name: id, physicalType: bigint, primaryKey: true}
      - name: state
        physicalType: string
        quality:
          - {metric: invalidValues, arguments: {validValues: [NEW, PAID]}, mustBeLessOrEqualTo: 10, unit: percent}
          - {metric: missingValues, arguments: {missingValues: [null, '']}, mustBe: 0}
      - name: amount
        physicalType: double
        logicalTypeOptions: {minimum: 0}
        quality:
          - {metric: nullValues, mustBeLessThan: 3}
    quality:
      - {metric: rowCount, mustBeBetween: [10, 100]}
      - {type: sql, query: "SELECT avg(amount) FROM orders", mustBeGreaterThan: 50}
      - {metric: duplicateValues, arguments: {properties: [state]}, mustBeGreaterThan: 0}
"""
)


@pytest.mark.spark
def test_an_odcs_contract_runs_on_spark(spark):
    from airflow_dq_contracts.engine import evaluate

    states = ["NEW", "PAID", "X", None, ""]
    rows = [(i, states[i % 5], None if i % 7 == 0 else float(i * 3)) for i in range(40)]
    df = spark.createDataFrame(rows, "id bigint, state string, amount double")
    result = evaluate(load_contract(RUN), df, dt.datetime(2026, 1, 1), progress=lambda message: None)
    records = {r.check_name: r for r in result.checks}
    # independent expectations over the same rows
    invalid = sum(1 for _, s, _ in rows if s is not None and s not in ("NEW", "PAID"))
    missing = sum(1 for _, s, _ in rows if s is None or s == "")
    nulls = sum(1 for _, _, a in rows if a is None)
    amounts = [a for _, _, a in rows if a is not None]
    # COUNT(*) − COUNT(DISTINCT state): SQL's COUNT(DISTINCT) skips NULL, so NULL rows count as duplicates
    state_dups = len(rows) - len({s for _, s, _ in rows if s is not None})
    invalid_rec = records["invalidValues mustBeLessOrEqualTo 10"]
    assert (invalid_rec.failed_rows, invalid_rec.status) == (
        invalid,
        "failed" if invalid / len(rows) > 0.10 else "passed",
    )
    missing_rec = records["missingValues mustBe 0"]
    assert (missing_rec.metric_value, missing_rec.status) == (missing, "failed")
    null_rec = records["nullValues mustBeLessThan 3"]
    assert (null_rec.metric_value, null_rec.status) == (nulls, "passed" if nulls < 3 else "failed")
    assert records["rowCount mustBeBetween [10, 100]"].status == "passed"
    avg = records["sql mustBeGreaterThan 50"]
    above = sum(amounts) / len(amounts) > 50
    assert (avg.metric_value, avg.status) == (1.0 if above else 0.0, "passed" if above else "failed")
    dups = records["duplicateValues mustBeGreaterThan 0"]
    assert (dups.metric_value, dups.status) == (state_dups, "passed")
    by_id = {r.check_id: r for r in result.checks}
    assert by_id["id/unique"].status == "passed" and by_id["amount/amount_minimum_0"].status == "passed"
