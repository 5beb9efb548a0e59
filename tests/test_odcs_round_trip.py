"""Round trips are identities (#37): for every public ODCS example and every DataHub / Dataplex file of the test
set (tests/interop/), import → export → import gives the same contract, and export → import → export gives
the same ODCS document up to key order. Plain Python: no Spark.

"The same contract" is the whole validated model (every column, constraint, check, validator, the dataset,
SLA, enforcement, metadata) except where the text was read from (file, line, path) and the ODCS provenance
an import records of the *document it read* (``metadata.odcs.apiVersion`` and the readings it noted,
``metadata.odcs.notes``): docs/interop.md, "Round trips".
"""

from __future__ import annotations

import dataclasses
import glob
import os
from typing import Any

import pytest
import yaml

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.loader import parse_contract
from airflow_dq_contracts.interop.common import Source
from airflow_dq_contracts.interop.datahub import import_datahub_each, import_datahub_texts
from airflow_dq_contracts.interop.datahub_export import export_datahub
from airflow_dq_contracts.interop.dataplex import import_dataplex_result
from airflow_dq_contracts.interop.odcs import export_odcs, import_odcs

HERE = os.path.join(os.path.dirname(__file__), "interop")
LOCATION = ("path", "line", "source", "raw")  # where the text was read from, not what it says
PROVENANCE = ("apiVersion", "notes")  # of the ODCS document an import read


def _files(*patterns: str) -> list[str]:
    return sorted(p for pattern in patterns for p in glob.glob(os.path.join(HERE, pattern)))


ODCS = _files("public/odcs/*.yaml")
DATAHUB = _files("datahub/*.yaml", "public/datahub/*.yml")
DATAPLEX = _files("dataplex/*", "public/dataplex/*")
NO_DATASET = {"server__azure-server", "roles__service-and-operational-roles", "sla__database-table-sla"}
NO_DATASET |= {"stakeholders__basic-four-dpo"}  # describe no object: nothing to round-trip (refused, located)
TEMPLATE = "11_template_reference.json"  # a rule Dataplex resolves from a catalog template: refused whole


def same(value: Any) -> Any:
    """The contract as plain data, without locations and ODCS provenance (the module docs)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: same(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in LOCATION}
        odcs = out.get("metadata", {}).get("odcs") if hasattr(value, "columns") and hasattr(value, "sla") else None
        for key in PROVENANCE if isinstance(odcs, dict) else ():
            odcs.pop(key, None)
        return out
    if isinstance(value, dict):
        return {str(k): same(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [same(v) for v in value]
    return value


def imported(path: str) -> list[tuple[str, str]]:
    """(label, contract YAML) of each contract a test-set file imports to (with --partial: what maps)."""
    name = os.path.basename(path)
    if path in ODCS:
        return [(f"{name}#{obj}", text) for obj, text in import_odcs(path, partial=True).contracts.items()]
    if path in DATAHUB:
        return [(f"{name}:{urn}", text) for urn, text in import_datahub_each([Source.read(path)]).contracts.items()]
    contracts = {}
    for where in ({}, {"path": "/data/landing/x", "fmt": "parquet"}, {"table": "shop.orders"}):
        result = import_dataplex_result([Source.read(path)], partial=True, **where)  # type: ignore[arg-type]
        contracts.update({f"{name}{sorted(where.items())}": text for text in result.contracts.values()})
    return list(contracts.items())


ROUND_TRIPPED = [
    p
    for p in ODCS + DATAHUB + DATAPLEX
    if os.path.basename(p).split(".")[0] not in NO_DATASET and os.path.basename(p) != TEMPLATE
]


@pytest.mark.parametrize("path", ROUND_TRIPPED, ids=lambda p: os.path.relpath(p, HERE))
def test_import_export_import_is_the_same_contract_and_export_import_export_the_same_document(path):
    contracts = imported(path)
    assert contracts
    for label, text in contracts:
        first = parse_contract(text, filename=label)
        exported = export_odcs(first)
        second = load_contract(exported)
        assert same(second) == same(first), label
        again = export_odcs(second)
        assert yaml.safe_load(again) == yaml.safe_load(exported), label  # up to key order
        assert same(load_contract(again)) == same(second), label


@pytest.mark.parametrize("path", DATAHUB, ids=os.path.basename)
def test_datahub_import_export_import_is_the_same_contract(path):
    for urn, text in import_datahub_each([Source.read(path)]).contracts.items():
        first = parse_contract(text)
        exported = export_datahub(first)
        second = parse_contract(import_datahub_texts([(exported, "exported.yaml")]))
        assert same(second) == same(first), urn
        assert yaml.safe_load(export_datahub(second)) == yaml.safe_load(exported), urn


def test_files_describing_nothing_and_template_rules_are_refused_not_skipped():
    for path in ODCS:
        if os.path.basename(path).split(".")[0] in NO_DATASET:
            with pytest.raises(ContractValidationError, match="describes no object"):
                import_odcs(path)
    with pytest.raises(ContractValidationError, match="templateReference"):
        import_dataplex_result([Source.read(os.path.join(HERE, "dataplex", TEMPLATE))], partial=True)


HEAD = "apiVersion: v3.1.0\nkind: DataContract\nid: t\nversion: 1.0.0\nstatus: active\n"


def test_the_four_breaks_of_the_issue_stay_fixed():
    # A primary key: one spelling (primary_key) whether or not the document also says required.
    for required in ("", ", required: true"):
        first = load_contract(HEAD + f"schema: [{{name: t, properties: [{{name: id, primaryKey: true{required}}}]}}]\n")
        second = load_contract(export_odcs(first))
        assert same(second.columns) == same(first.columns)
        assert [c.description for c in second.columns[0].constraints] == [
            "constraint from the column's 'primary_key'"
        ] * 2
    # logicalTypeOptions.pattern stays the column's pattern constraint (not a separate pattern check).
    first = load_contract(
        HEAD + "schema: [{name: t, properties: [{name: code, logicalType: string, "
        "logicalTypeOptions: {pattern: '^[A-Z]{3}$', maxLength: 3}}]}]\n"
    )
    exported = export_odcs(first)
    assert yaml.safe_load(exported)["schema"][0]["properties"][0]["logicalTypeOptions"]["pattern"] == "^[A-Z]{3}$"
    second = load_contract(exported)
    assert [c.check_id for c in second.columns[0].constraints] == ["code/pattern"]
    assert same(second) == same(first)
    # return: value on a SQL check survives.
    first = load_contract(
        HEAD + "schema: [{name: t, quality: [{type: sql, query: 'SELECT max(a) FROM t', mustBeLessThan: 9}]}]\n"
    )
    second = load_contract(export_odcs(first))
    assert second.checks[0].params["return"] == first.checks[0].params["return"] == "value"
    assert same(second) == same(first)
    # A path dataset keeps its format (the document's one server).
    native = load_contract({"name": "t", "dataset": {"path": "s3://lake/t", "format": "parquet"}})
    exported = export_odcs(native)
    assert yaml.safe_load(exported)["servers"] == [
        {"server": "t", "type": "s3", "location": "s3://lake/t", "format": "parquet"}
    ]
    assert load_contract(exported).dataset == native.dataset
    assert same(load_contract(exported)) == same(native)


def test_what_odcs_has_no_field_for_travels_in_the_custom_property():
    native = load_contract(
        {
            "name": "t",
            "dataset": {"path": "/d/t.csv", "format": "csv", "options": {"header": "true"}, "null_values": ["NA"]},
            "enforcement": {"schema": "exact", "sla": "off"},
            "metadata": {"team_channel": "#data"},
            "columns": [{"name": "a", "type": "map"}, {"name": "s", "type": "string", "allowed_values": ["x", "y"]}],
        }
    )
    exported = export_odcs(native)
    document = yaml.safe_load(exported)
    carrier = document["schema"][0]["customProperties"][0]
    assert carrier["property"] == "airflow-dq-contracts" and carrier["value"]["unversioned"] is True
    assert document["apiVersion"] == "v3.2.0"  # enum is v3.2
    assert document["schema"][0]["properties"][1]["enum"] == ["x", "y"]
    again = load_contract(exported)
    assert same(again) == same(native)
    assert (again.version, again.dataset.options, again.enforcement.schema_mode) == (None, {"header": "true"}, "exact")
