"""Nested data: checks on struct fields, array elements, array sizes and map values, against plain Python.

The same generated rows are written as JSON (objects inferred as structs, so ``attrs[color]`` reads a
struct field) and as Parquet (``attrs`` a real map); every expected number and every quarantined
row id is computed here in plain Python over those rows, NULL parents and empty arrays included.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.column_paths import format_path, parent, parse_path, top_name

pytestmark = pytest.mark.spark

SCHEMA = (
    "id long, address struct<city:string, zip:string, geo:struct<lat:double>>, "
    "items array<struct<sku:string, qty:long>>, tags array<string>, attrs map<string,string>, "
    "`a.b` long"
)
SKU = "^[A-Z][0-9]$"
TAGS = {"red", "blue"}
COLORS = {"red", "green"}


def generate(n: int = 80, seed: int = 37) -> list[dict[str, Any]]:
    """Rows with NULL parents, NULL leaves, empty arrays, NULL elements and absent map keys."""
    rnd = random.Random(seed)

    def maybe(value: Any, p: float = 0.2) -> Any:
        return None if rnd.random() < p else value

    rows = []
    for i in range(n):
        address = maybe(
            {
                "city": maybe(rnd.choice(["Paris", "Lyon", "Nice"])),
                "zip": maybe(rnd.choice(["75001", "69", "06000"])),
                "geo": maybe({"lat": maybe(rnd.uniform(-90, 95))}),
            }
        )
        items = maybe(
            [
                maybe({"sku": maybe(rnd.choice(["A1", "B2", "bad", "C33"])), "qty": maybe(rnd.randint(0, 14))}, 0.1)
                for _ in range(rnd.choice([0, 0, 1, 2, 3, 4]))
            ]
        )
        tags = maybe([maybe(rnd.choice(["red", "blue", "pink"]), 0.1) for _ in range(rnd.choice([0, 1, 2, 3]))])
        attrs = maybe(
            {
                k: maybe(rnd.choice(["red", "green", "blue"]))
                for k in rnd.sample(["color", "size"], 2)[: rnd.randint(0, 2)]
            }
        )
        rows.append({"id": i, "address": address, "items": items, "tags": tags, "attrs": attrs, "a.b": maybe(i)})
    return rows


CONTRACT_COLUMNS = [
    {"name": "id", "type": "long"},
    {"name": "address.city", "type": "string", "nullable": False},
    {"name": "address.geo.lat", "type": "double", "checks": [{"name": "lat range", "type": "max", "max": 90}]},
    {
        "name": "items[].sku",
        "type": "string",
        "nullable": False,
        "checks": [
            {"name": "sku form", "type": "pattern", "pattern": SKU, "return": "count"},
            {"name": "skus", "type": "count", "min": 0},
        ],
    },
    {
        "name": "items[].qty",
        "checks": [{"name": "qty cap", "type": "max", "max": 10}, {"name": "qty low", "type": "min"}],
    },
    {"name": "items", "checks": [{"name": "basket size", "type": "max_length", "max": 3}]},
    {
        "name": "tags[]",
        "nullable": False,
        "checks": [{"name": "known tags", "type": "whitelist", "values": sorted(TAGS), "return": "count"}],
    },
    {"name": "attrs[color]", "checks": [{"name": "colour", "type": "whitelist", "values": sorted(COLORS)}]},
    {"name": "attrs[size]", "nullable": False},
    {"name": "`a.b`", "type": "long", "nullable": False},
]


def _elements(row: dict[str, Any], field: str) -> list[Any]:
    """``items[].field``: the field of every non-NULL element (no values for a NULL array)."""
    return [e[field] for e in row["items"] or [] if e is not None]


def oracle(rows: list[dict[str, Any]]) -> dict[str, tuple[float | None, set[int]]]:
    """check_id → (metric, failing row ids), in plain Python."""
    out: dict[str, tuple[float | None, set[int]]] = {}

    def rows_where(pred: Any) -> set[int]:
        return {r["id"] for r in rows if pred(r)}

    city_null = rows_where(lambda r: r["address"] is not None and r["address"]["city"] is None)
    out["address.city/not_null"] = (len(city_null), city_null)
    lats = [
        r["address"]["geo"]["lat"]
        for r in rows
        if r["address"] and r["address"]["geo"] and r["address"]["geo"]["lat"] is not None
    ]
    high = rows_where(lambda r: bool(r["address"] and r["address"]["geo"] and (r["address"]["geo"]["lat"] or 0) > 90))
    out["address.geo.lat/lat_range"] = (max(lats), high)
    sku_null = rows_where(lambda r: any(s is None for s in _elements(r, "sku")))
    out["items[].sku/not_null"] = (len(sku_null), sku_null)
    bad_sku = rows_where(lambda r: any(s is not None and not re.search(SKU, s) for s in _elements(r, "sku")))
    with_sku = rows_where(lambda r: any(s is not None for s in _elements(r, "sku")))
    out["items[].sku/sku_form"] = (len(with_sku - bad_sku), bad_sku)
    out["items[].sku/skus"] = (sum(1 for r in rows for s in _elements(r, "sku") if s is not None), set())
    qtys = [q for r in rows for q in _elements(r, "qty") if q is not None]
    out["items[].qty/qty_cap"] = (
        max(qtys),
        rows_where(lambda r: any(q is not None and q > 10 for q in _elements(r, "qty"))),
    )
    out["items[].qty/qty_low"] = (min(qtys), set())
    sizes = [len(r["items"]) for r in rows if r["items"] is not None]
    out["items/basket_size"] = (max(sizes), rows_where(lambda r: r["items"] is not None and len(r["items"]) > 3))
    tag_null = rows_where(lambda r: r["tags"] is not None and None in r["tags"])
    out["tags[]/not_null"] = (len(tag_null), tag_null)
    bad_tag = rows_where(lambda r: any(t is not None and t not in TAGS for t in r["tags"] or []))
    with_tag = rows_where(lambda r: any(t is not None for t in r["tags"] or []))
    out["tags[]/known_tags"] = (len(with_tag - bad_tag), bad_tag)
    colours = [r["attrs"].get("color") for r in rows if r["attrs"] is not None]
    bad_colour = rows_where(lambda r: r["attrs"] is not None and r["attrs"].get("color") not in COLORS | {None})
    out["attrs[color]/colour"] = (sum(1 for c in colours if c in COLORS), bad_colour)
    size_null = rows_where(lambda r: r["attrs"] is not None and r["attrs"].get("size") is None)
    out["attrs[size]/not_null"] = (len(size_null), size_null)
    ab_null = rows_where(lambda r: r["a.b"] is None)
    out["`a.b`/not_null"] = (len(ab_null), ab_null)
    return out


def _write(spark: Any, rows: list[dict[str, Any]], tmp_path: Any, fmt: str) -> str:
    path = str(tmp_path / fmt)
    if fmt == "json":
        (tmp_path / fmt).mkdir()
        with open(tmp_path / fmt / "part.json", "w") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    else:
        spark.createDataFrame(rows, SCHEMA).write.parquet(path)
    return path


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_nested_checks_and_quarantine_match_plain_python(spark, tmp_path, fmt):
    from airflow_dq_contracts.engine.runner import run_contract

    rows = generate()
    path = _write(spark, rows, tmp_path, fmt)
    contract = load_contract({"name": "nested", "dataset": {"path": path, "format": fmt}, "columns": CONTRACT_COLUMNS})
    quarantine = str(tmp_path / "quarantine")
    result = run_contract(spark, contract, run_id="n1", quarantine_table=quarantine)
    checks = {c.check_id: c for c in result.checks}
    expected = oracle(rows)
    for check_id, (metric, failing) in expected.items():
        check = checks[check_id]
        assert check.status in ("passed", "failed"), (check_id, check.message)
        assert check.metric_value == pytest.approx(metric), (check_id, check.message)
        if failing or check.failed_rows:
            assert check.failed_rows == len(failing), (check_id, check.message)
    schema = {i: c for i, c in checks.items() if i.endswith("/schema")}
    assert {i: c.status for i, c in schema.items()} == {f"{c['name']}/schema": "passed" for c in CONTRACT_COLUMNS}

    # The quarantine keeps the whole row and names every nested path it broke.
    tagging = {i for i, c in checks.items() if c.status == "failed" and c.failed_rows}
    by_row: dict[int, set[str]] = {}
    for check_id, (_, failing) in expected.items():
        if check_id in tagging:
            for row_id in failing:
                by_row.setdefault(row_id, set()).add(check_id)
    quarantined = spark.read.format("delta").load(quarantine).collect()
    assert {r["id"]: {v["check_id"] for v in r["_dq_violations"]} for r in quarantined} == by_row
    kept = {r["id"]: r for r in quarantined}
    for row in rows:
        if row["id"] in kept:
            got = kept[row["id"]]
            assert (got["items"] is None) == (row["items"] is None)
            assert len(got["items"] or []) == len(row["items"] or [])
            assert (got["address"] is None) == (row["address"] is None)


def test_paths_that_do_not_resolve_say_why(spark, tmp_path):
    from airflow_dq_contracts.engine.runner import run_contract

    rows = generate(10)
    path = _write(spark, rows, tmp_path, "parquet")
    columns = [
        {"name": "address.town", "type": "string"},
        {"name": "tags[].x", "checks": [{"name": "m", "type": "missing", "max": 0}]},
        {"name": "items[].qty", "checks": [{"name": "m", "type": "mean", "max": 5}]},
    ]
    result = run_contract(
        spark, load_contract({"name": "bad", "dataset": {"path": path, "format": "parquet"}, "columns": columns})
    )
    checks = {c.check_id: c for c in result.checks}
    assert checks["address.town/schema"].status == "failed"
    assert checks["address.town/schema"].message.startswith(
        "missing column address.town: field 'town' not found in address (fields: city, zip, geo)"
    )
    assert checks["tags[].x/m"].status == "error"
    assert "tags[] is string, not a struct: it has no field 'x'" in checks["tags[].x/m"].message
    assert checks["items[].qty/m"].status == "error"
    assert "mean cannot read every element of an array (items[].qty)" in checks["items[].qty/m"].message


def test_path_syntax_round_trips():
    for text in ["address.city", "`a.b`", "items[].sku", "attrs[color]", "a.`b.c`[].d", "m['x]y']"]:
        assert format_path(parse_path(text)) == text
    assert parent("items[].sku") == "items" and parent("address.geo.lat") == "address.geo"
    assert top_name("`a.b`") == "a.b"
    for bad in ["a..b", "a.", "`a", "a[", ".a"]:
        with pytest.raises(ValueError):
            parse_path(bad)


def test_exact_schema_mode_names_undeclared_fields_of_the_structs_a_contract_opens(spark, tmp_path):
    from airflow_dq_contracts.engine.runner import run_contract

    path = _write(spark, generate(10), tmp_path, "parquet")

    def exact(names: list[str]) -> Any:
        contract = load_contract(
            {
                "name": "exact",
                "dataset": {"path": path, "format": "parquet"},
                "enforcement": {"schema": {"mode": "exact"}},
                "columns": [{"name": n} for n in names],
            }
        )
        return {c.check_id: c for c in run_contract(spark, contract).checks}["_table_/schema"]

    # address.city opens address (zip undeclared; geo declared whole), items[].sku opens the
    # elements of items (qty undeclared); a map key opens nothing
    partial = exact(["id", "address.city", "address.geo", "items[].sku", "tags", "attrs[color]", "`a.b`"])
    assert partial.status == "failed"
    assert partial.metric_value == 2
    assert "undeclared column(s) in the data: address.zip, items[].qty (enforcement.schema mode exact)" in (
        partial.message
    )
    # a top-level column left out is reported as before, beside the nested fields
    missing_top = exact(["id", "address.city", "address.zip", "address.geo.lat", "items", "tags[]", "attrs"])
    assert missing_top.status == "failed" and missing_top.metric_value == 1
    assert "undeclared column(s) in the data: a.b (" in missing_top.message
    # every field declared (a struct by its own name counts for all its fields)
    whole = exact(
        ["id", "address.city", "address.zip", "address.geo", "items[].sku", "items[].qty", "tags", "attrs", "`a.b`"]
    )
    assert whole.status == "passed" and whole.metric_value == 0
