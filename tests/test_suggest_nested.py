"""``suggest`` on nested data: struct fields, arrays of structs and of scalars, maps (issue 37, deliverable 1).

Generated rows with NULL parents, NULL leaves, NULL arrays, empty arrays and NULL elements are
written as JSON (objects read as structs) and as Parquet (``attrs`` a real map). The draft is
suggested from the files, loaded, and run on the same files through the real engine: every check
passes. Its paths, types, ``nullable`` evidence, allowed values, ranges and lengths are computed
here in plain Python over the same rows, by the documented rules (a NULL parent is not a NULL child).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.column_paths import ELEMENTS, parse_path
from airflow_dq_contracts.engine.suggest.rules import length_bounds, widened_range
from airflow_dq_contracts.interop.odcs import export_odcs

pytestmark = pytest.mark.spark

SCHEMA = (
    "id long, address struct<city:string, geo:struct<lat:double>, zip:string>, "
    "items array<struct<qty:bigint, sku:string>>, tags array<string>, attrs map<string,string>"
)
CITIES = ("Lyon", "Nice", "Paris")


def generate(n: int = 120, seed: int = 37) -> list[dict[str, Any]]:
    """Rows: ``address.zip`` and ``items[].qty`` are never NULL under a present parent; the rest sometimes are."""
    rnd = random.Random(seed)

    def maybe(value: Any, p: float = 0.15) -> Any:
        return None if rnd.random() < p else value

    rows = []
    for i in range(n):
        address = maybe(
            {
                "city": maybe(CITIES[i % 3]),
                "geo": maybe({"lat": maybe(round(rnd.uniform(40.5, 51.0), 4))}),
                "zip": f"{rnd.randint(1000, 99999):05d}",
            }
        )
        items = maybe(
            [
                maybe({"qty": rnd.randint(1, 9), "sku": maybe(f"S{rnd.randint(10, 999)}")}, 0.1)
                for _ in range(rnd.choice([0, 1, 2, 3, 5]))
            ]
        )
        tags = maybe([rnd.choice(["red", "blue", "green", "teal"]) for _ in range(rnd.choice([0, 1, 2]))])
        attrs = {"color": rnd.choice(["red", "blue"]), "size": rnd.choice(["s", "m", "l"])}
        rows.append({"id": i, "address": address, "items": items, "tags": tags, "attrs": attrs})
    return rows


def _write(spark: Any, rows: list[dict[str, Any]], root: Path, fmt: str) -> str:
    path = root / fmt
    if fmt == "json":
        path.mkdir()
        (path / "part.json").write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        spark.createDataFrame(rows, SCHEMA).write.parquet(str(path))
    return str(path)


def readings(rows: list[dict[str, Any]], text: str) -> list[tuple[str, list[Any]]]:
    """Per row, plain Python: ``("absent", [])`` (NULL parent, NULL or empty array) or ``("values", [...])``."""
    out = []
    for row in rows:
        current: list[Any] = [row]
        absent = False
        for step in parse_path(text):
            if step.kind == ELEMENTS:
                current = [v for array in current if array is not None for v in array]
            else:
                if any(v is None for v in current) and len(current) == 1:
                    absent = True
                    break
                current = [v[step.name] for v in current if v is not None]
        out.append(("absent", []) if absent or not current else ("values", current))
    return out


def expected_column(rows: list[dict[str, Any]], text: str) -> dict[str, Any]:
    """What the rules must draft for a nested path, from plain Python over ``rows``."""
    read = readings(rows, text)
    nulls = sum(1 for state, values in read if state == "values" and any(v is None for v in values))
    values = [v for state, vs in read if state == "values" for v in vs if v is not None]
    out: dict[str, Any] = {"nulls": nulls, "values": values}
    return out


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_suggest_profiles_nested_fields_and_the_draft_passes_on_its_data(spark, tmp_path, fmt):
    from airflow_dq_contracts.engine.runner import run_contract
    from airflow_dq_contracts.engine.suggest import suggest_input

    rows = generate()
    path = _write(spark, rows, tmp_path, fmt)
    suggestion = suggest_input(
        spark, path=path, input_format=fmt, name="nested_suggested", reference_time="2024-05-02T00:00:00Z"
    )
    scan = [p for p, _ in suggestion.profile.passes if p == "scan"]
    assert scan == ["scan"], suggestion.profile.passes  # ONE aggregate scan, nested fields included
    columns = {c["name"]: c for c in suggestion.document["columns"]}

    nested = {
        "address.city": "string",
        "address.geo": {"kind": "struct"},
        "address.geo.lat": "double",
        "address.zip": "string",
        "items[].qty": "long",
        "items[].sku": "string",
        "tags[]": "string",
    }
    if fmt == "json":  # a JSON object is a struct: its fields are paths
        nested |= {"attrs.color": "string", "attrs.size": "string"}
        attrs_type: Any = {"kind": "struct"}
    else:  # a map is declared as a whole
        attrs_type = {"kind": "map", "key_type": "string", "value_type": "string"}
    assert {name: columns[name]["type"] for name in nested} == nested
    assert set(columns) == {"id", "address", "items", "tags", "attrs", *nested}
    assert columns["attrs"]["type"] == attrs_type
    assert columns["items"]["type"] == {"kind": "list", "value_type": {"kind": "struct"}}
    assert columns["tags"]["type"] == {"kind": "list", "value_type": "string"}

    for name in nested:
        truth = expected_column(rows, name)
        assert (columns[name].get("nullable") is False) == (truth["nulls"] == 0), name
    # the evidence behind the not-NULL fields: a NULL parent is not a NULL child
    assert expected_column(rows, "address.zip")["nulls"] == 0
    assert any(r["address"] is None for r in rows)
    assert expected_column(rows, "address.city")["nulls"] > 0

    # allowed values of a struct leaf, as for any column
    assert columns["address.city"]["allowed_values"] == sorted(set(expected_column(rows, "address.city")["values"]))
    # ranges over every value: a struct leaf and the elements of an array of structs
    lats = expected_column(rows, "address.geo.lat")["values"]
    assert (columns["address.geo.lat"]["min_value"], columns["address.geo.lat"]["max_value"]) == widened_range(
        min(lats), max(lats), False
    )
    qtys = expected_column(rows, "items[].qty")["values"]
    assert (columns["items[].qty"]["min_value"], columns["items[].qty"]["max_value"]) == widened_range(
        min(qtys), max(qtys), True
    )

    def lengths(spec: dict[str, Any]) -> tuple[int | None, int | None]:
        by_type = {c["type"]: c for c in spec.get("checks", [])}
        low = by_type.get("min_length", {}).get("min")
        return (low if low is not None else 0), by_type.get("max_length", {}).get("max")

    # the array size range counts elements (empty arrays included, NULL arrays not)
    sizes = [len(r["items"]) for r in rows if r["items"] is not None]
    assert lengths(columns["items"]) == length_bounds(min(sizes), max(sizes))
    # the string lengths of every element of tags[] (no allowed values on elements)
    tag_lengths = [len(t) for t in expected_column(rows, "tags[]")["values"]]
    assert "allowed_values" not in columns["tags[]"]
    assert lengths(columns["tags[]"]) == length_bounds(min(tag_lengths), max(tag_lengths))
    # nested fields are never keys
    assert [c["name"] for c in columns.values() if c.get("primary_key") or c.get("unique")] == ["id"]

    # the draft validates and passes on the data it was suggested from
    contract = load_contract(suggestion.yaml)
    # and exports to ODCS with its nested fields as nested properties (--format odcs)
    (table,) = yaml.safe_load(export_odcs(contract))["schema"]
    properties = {p["name"]: p for p in table["properties"]}
    assert [p["name"] for p in properties["address"]["properties"]] == ["city", "geo", "zip"]
    assert [p["name"] for p in properties["items"]["items"]["properties"]] == ["qty", "sku"]
    result = run_contract(spark, contract, run_id=f"suggest-nested-{fmt}")
    bad = {c.check_id: (c.status, c.message) for c in result.checks if c.status != "passed"}
    assert bad == {}
    ids = {c.check_id for c in result.checks}
    assert {"address.zip/not_null", "items[].qty/not_null", "items[].qty/min_value", "tags[]/schema"} <= ids
