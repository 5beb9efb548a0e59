"""The importers on real public DataHub and Dataplex files (tests/interop/public, see SOURCES.md): imported
as they are, spot-checked against the source's meaning, round-tripped; --partial, multi-dataset files,
conflicting schema assertions, DataHub types, and a large generated file of plain rules.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from airflow_dq_contracts.cli.main import main as cli_main
from airflow_dq_contracts.contract import ContractValidationError, parse_contract
from airflow_dq_contracts.interop.common import Source
from airflow_dq_contracts.interop.datahub import import_datahub_each, import_datahub_texts
from airflow_dq_contracts.interop.datahub_export import export_datahub
from airflow_dq_contracts.interop.dataplex import import_dataplex_result, import_dataplex_texts

PUBLIC = os.path.join(os.path.dirname(__file__), "interop", "public")
DATAHUB = sorted(os.path.join(PUBLIC, "datahub", n) for n in os.listdir(os.path.join(PUBLIC, "datahub")))
DATAPLEX = sorted(os.path.join(PUBLIC, "dataplex", n) for n in os.listdir(os.path.join(PUBLIC, "dataplex")))
ALL_TIMES = "urn:li:dataset:(urn:li:dataPlatform:snowflake,test_db.public.test_assertions_all_times,PROD)"


def _checks(text: str) -> dict:
    return {c.check_id: c for c in parse_contract(text).all_checks()}


# --------------------------------------------------------------------------------------- DataHub


@pytest.mark.parametrize("path", DATAHUB, ids=os.path.basename)
def test_datahub_public_file_imports_as_it_is_one_contract_per_dataset(path):
    result = import_datahub_each([Source.read(path)])
    assert result.refused == []
    assert len(result.contracts) == 2  # the file covers two datasets (and has a top-level namespace)
    first = _checks(result.contracts[ALL_TIMES])
    fresh = first["_table_/col_timestamp_updated_within_1_hour"]
    assert (fresh.type, fresh.params["timestamp_column"], fresh.params["max_age_hours"]) == (
        "freshness",
        "col_timestamp",
        1,
    )
    rows = first["_table_/row_count_less_than_or_equal_to_1000"]
    assert (rows.type, rows.validator.kind, rows.validator.high) == ("num_rows", "max", 1000)
    nulls = first["col_date/col_date_null_count_equal_to_0"]
    assert (nulls.type, nulls.validator.kind, nulls.validator.low) == ("missing", "equals", 0)
    (other,) = [urn for urn in result.contracts if urn != ALL_TIMES]
    second = _checks(result.contracts[other])
    table = other.split(",")[1]
    (sql,) = [c for c in second.values() if c.type == "sql"]
    assert sql.params["query"].endswith("from {dataset}") and table not in sql.params["query"]
    bounds = sorted((c.type, c.validator.low, c.validator.high) for c in second.values() if c.type in ("min", "max"))
    assert bounds == [("max", None, 10), ("min", 0, None)]  # between 0 and 10, NULLs excluded


@pytest.mark.parametrize("path", DATAHUB, ids=os.path.basename)
def test_datahub_public_file_round_trips_per_dataset(path):
    for urn, text in import_datahub_each([Source.read(path)]).contracts.items():
        exported = export_datahub(parse_contract(text))
        assertions = yaml.safe_load(exported)["assertions"]
        assert sum(1 for a in assertions if a.get("condition", {}).get("type") == "between") == (
            1 if "between" in text else 0
        )  # the field between stays ONE assertion
        again = import_datahub_texts([(exported, "exported.yaml")])
        assert yaml.safe_load(again) == yaml.safe_load(text), urn


def test_datahub_dataset_selection_and_cli_directory(tmp_path, capsys):
    path = DATAHUB[0]
    only = import_datahub_each([Source.read(path)], dataset=ALL_TIMES)
    assert list(only.contracts) == [ALL_TIMES]
    with pytest.raises(ContractValidationError, match="2 datasets"):
        import_datahub_texts([(Path(path).read_text(encoding="utf-8"), "two.yaml")])
    assert cli_main(["import", "datahub", path]) == 1
    assert "give -o DIR" in capsys.readouterr().err
    assert cli_main(["import", "datahub", path, "-o", str(tmp_path)]) == 0
    written = sorted(os.listdir(tmp_path))
    assert len(written) == 2
    tables = {parse_contract((tmp_path / name).read_text()).dataset.table for name in written}
    assert tables == {"test_db.public.test_assertions_all_times", "test_db.public.purchase_event"}
    assert cli_main(["import", "datahub", path, "--dataset", ALL_TIMES]) == 0


URN = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"


def test_two_schema_assertions_on_one_dataset_are_refused_with_both_locations():
    text = f"""version: 1
assertions:
  - entity: {URN}
    type: schema
    condition: {{type: exact_match, columns: [{{name: a, type: decimal}}]}}
  - entity: {URN}
    type: schema
    condition: {{type: contains, columns: [{{name: a, type: string}}]}}
"""
    with pytest.raises(ContractValidationError) as err:
        import_datahub_texts([(text, "s.yaml")])
    (issue,) = err.value.issues
    assert (issue.line, issue.path) == (6, "assertions[1]")
    assert "s.yaml:3 assertions[0]" in issue.message


def test_datahub_types_admit_what_datahub_admits_and_schema_exports_back():
    text = f"""version: 1
assertions:
  - entity: {URN}
    type: schema
    condition: {{type: contains, columns: [{{name: n, type: NUMBER}}, {{name: i, type: INTEGER}}]}}
"""
    contract = parse_contract(import_datahub_texts([(text, "t.yaml")]))
    assert [(c.name, c.type.kind if c.type else None) for c in contract.columns] == [("n", None), ("i", "long")]
    exported = yaml.safe_load(export_datahub(contract))["assertions"]
    assert exported == [
        {
            "entity": URN,
            "type": "schema",
            "condition": {
                "type": "contains",
                "columns": [{"name": "n", "type": "number"}, {"name": "i", "type": "long"}],
            },
        }
    ]


def test_export_refuses_a_schema_it_cannot_say_loudly(tmp_path, capsys):
    contract = tmp_path / "c.yaml"
    contract.write_text("name: c\ndataset: db.c\ncolumns:\n  - {name: a, type: 'decimal(10,2)'}\n  - {name: b}\n")
    assert cli_main(["export", "datahub", str(contract)]) == 1
    err = capsys.readouterr().err
    assert "schema not exported" in err and "precision" in err


# --------------------------------------------------------------------------------------- Dataplex


@pytest.mark.parametrize("path", DATAPLEX, ids=os.path.basename)
def test_dataplex_public_file_imports_as_it_is(path):
    result = import_dataplex_result([Source.read(path)], table="shop.stations")
    assert result.refused == []
    checks = _checks(next(iter(result.contracts.values())))
    by_name = {c.name: c for c in checks.values()}
    # non_null_expectation threshold 0.99 under row_filter: at most 1 % NULL addresses among the filtered rows
    address = [c for c in checks.values() if c.column == "address" and c.type == "missing"][0]
    assert (address.validator.kind, address.validator.high, address.filter) == ("max", 0.01, "station_id > 1000")
    # strict_min_enabled on 1 (ignore_null: true, threshold 0.9): violations (non-null, not in (1, 10]) ≤ 10 %
    strict = [
        c for c in checks.values() if c.type == "row_condition" and "council_district > 1" in c.params["condition"]
    ]
    assert strict[0].params["null_passes"] is True and strict[0].validator.high == pytest.approx(0.1)
    # ignore_null unset (or null: "not set") is false: NULL districts fail the [3, 9] rule
    nulls_fail = [
        c for c in checks.values() if c.type == "row_condition" and "council_district >= 3" in c.params["condition"]
    ]
    if nulls_fail:  # with a threshold: one row condition
        assert nulls_fail[0].params["null_passes"] is False
    else:  # without: min, max and no NULLs
        assert {
            (c.type, c.validator.low, c.validator.high) for c in checks.values() if c.column == "council_district"
        } == {
            ("min", 3, None),
            ("max", None, 9),
            ("missing", None, 0),
        }
    # MEAN with strict bounds, and the table condition, over exactly the filtered rows
    mean = by_name["number_of_docks mean in range"]
    assert mean.params["query"] == (
        "SELECT CAST((AVG(number_of_docks) > 5 AND AVG(number_of_docks) < 15) AS INT) FROM {dataset} WHERE station_id > 1000"
    )
    table = [c for c in checks.values() if c.type == "sql" and "COUNT(*) > 0" in c.params["query"]][0]
    assert table.params["query"].endswith("WHERE station_id > 1000") and table.validator.low == 1


def test_dataplex_partial_imports_the_rest_and_lists_the_refusal(tmp_path, capsys):
    rules = {
        "samplingPercent": 20,
        "rules": [
            {"column": "a", "nonNullExpectation": {}},
            {"column": "a", "templateReference": {"name": "t"}},
        ],
    }
    path = tmp_path / "scan.json"
    path.write_text(json.dumps(rules, indent=1))
    with pytest.raises(ContractValidationError):
        import_dataplex_texts([(path.read_text(), "scan.json")], table="t")
    assert cli_main(["import", "dataplex", str(path), "--table", "t", "--partial"]) == 3
    out, err = capsys.readouterr()
    assert (
        f"{path}:2: samplingPercent" in err
        and "rules[1].templateReference: templateReference rules are resolved" in err
    )
    assert [c.type for c in parse_contract(out).all_checks()] == ["missing"]


@pytest.mark.slow
def test_a_large_file_of_plain_rules_is_not_an_alias_bomb(tmp_path):
    """36,620 plain rules (about 6.5 MB, no aliases) import whole; speed is in benchmarks/."""
    rules = [
        {
            "column": f"c{i % 50}",
            "name": f"r{i}",
            "rangeExpectation": {"minValue": str(i % 7), "maxValue": "100"},
            "threshold": 0.95,
            "ignoreNull": True,
            "dimension": "VALIDITY",
        }
        for i in range(36620)
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"rules": rules}, indent=1))
    assert os.path.getsize(path) > 6_000_000
    result = import_dataplex_result([Source.read(path)], table="t")
    text = next(iter(result.contracts.values()))
    # beyond COMPACT_AFTER checks in a scope, each is one JSON line (JSON is YAML)
    assert sum(1 for line in text.splitlines() if line.startswith('- {"name": "r')) == 36620
    last = json.loads(text.rstrip().splitlines()[-1][2:])  # the last rule, as its own JSON line
    assert (last["name"], last["condition"], last["max"]) == ("r36619", "c19 >= 2 AND c19 <= 100", 0.05)


def test_the_json_fast_path_reads_what_the_yaml_reader_reads():
    """Values and every line of a JSON source as the located YAML reader gives them (its slow path)."""
    from airflow_dq_contracts.contract.yamlsrc import load_yaml
    from airflow_dq_contracts.interop.common import _located_json

    seeds = sorted((Path(__file__).parent / "interop" / "dataplex").glob("*.json"))
    text = '{"a": {"b": [1, {"c": "x\\"y"}],\n "d": ""}, "e": [], "f": [[1, 2.5], [true, null]]}'
    for name, body in [("inline.json", text), *((p.name, p.read_text()) for p in seeds)]:
        fast = _located_json(body, name)
        data, smap, _ = load_yaml(body, name)
        assert fast is not None and (fast.data, fast.smap.lines) == (data, smap.lines), name
    # not plain JSON (a duplicate key): left to the YAML reader, which names it at its line
    assert _located_json('{"a": 1,\n "a": 2}', "dup.json") is None
    assert Source.parse('{"a": 1,\n "a": 2}', "dup.json").issues[0].line == 2


def test_dataplex_public_file_with_a_misspelt_key_is_refused_or_partially_imported():
    path = os.path.join(PUBLIC, "dataplex_refused", os.listdir(os.path.join(PUBLIC, "dataplex_refused"))[0])
    with pytest.raises(ContractValidationError) as err:
        import_dataplex_result([Source.read(path)], table="shop.orders")
    assert [(i.line, i.path) for i in err.value.issues] == [(19, "rules[0].decription")]
    result = import_dataplex_result([Source.read(path)], table="shop.orders", partial=True)
    (check,) = parse_contract(next(iter(result.contracts.values()))).all_checks()
    assert (check.name, check.type, check.params["condition"]) == ("MY RULE", "table_condition", "COUNT(*) > 0")


def test_datahub_partial_imports_what_maps_and_lists_the_rest(tmp_path, capsys):
    path = tmp_path / "a.yaml"
    path.write_text(
        f"version: 1\nassertions:\n"
        f"  - {{entity: '{URN}', type: volume, condition: {{type: greater_than, value: 10}}}}\n"
        f"  - {{entity: '{URN}', type: field, field: a, metric: modes, condition: {{type: equal_to, value: 1}}}}\n"
    )
    assert cli_main(["import", "datahub", str(path)]) == 1
    assert capsys.readouterr().out == ""
    assert cli_main(["import", "datahub", str(path), "--partial"]) == 3
    out, err = capsys.readouterr()
    assert f"refused: {path}:4: assertions[1].metric: unknown field metric 'modes'" in err
    (check,) = parse_contract(out).all_checks()
    assert (check.type, check.validator.low) == ("num_rows", 11)
