"""Every YAML example of the check-language spec evaluates as written (DESIGN §4) — no check errors.

The examples under ``tests/spec_examples/`` are merged into one contract (each example's columns
and check names prefixed by its file stem, so they cannot collide) and evaluated once on generated
rows whose types follow each example's declared column types (columns that only table-level checks
name get a type that fits the check). Metric values are covered by ``test_engine_checks``; here
every check of every example must be computable: status ``passed`` or ``failed``, never ``error``.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import evaluate

pytestmark = pytest.mark.spark

EXAMPLES = sorted((Path(__file__).resolve().parent / "spec_examples").glob("*.yaml"))
ROWS = 60
# Spark DDL type of each declared kind (an untyped column holds numbers).
DDL = {
    "string": "string",
    "long": "bigint",
    "int": "int",
    "short": "smallint",
    "byte": "tinyint",
    "double": "double",
    "float": "float",
    "decimal": "decimal(12,2)",
    "boolean": "boolean",
    "timestamp": "timestamp",
    "date": "date",
    "list": "array<string>",
    "map": "map<string,string>",
    None: "double",
}


def _kind(raw: Any) -> str | None:
    if raw is None:
        return None
    kind = raw["kind"] if isinstance(raw, dict) else str(raw)
    return {"integer": "int", "bigint": "long", "float64": "double", "array": "list"}.get(kind, kind)


def _value(kind: str | None, rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return None
    if kind == "string":
        return rng.choice(["pending", "shipped", "a@b.com", "+15551234567", "AB123456C", "x", ""])
    if kind in ("long", "int", "short", "byte"):
        return rng.randint(1, 100)
    if kind == "decimal":
        return Decimal(f"{rng.uniform(0, 500):.2f}")
    if kind in ("double", "float", None):
        return rng.uniform(-10, 500)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "timestamp":
        return dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc) - dt.timedelta(hours=rng.randint(0, 200))
    if kind == "date":
        return dt.date(2024, 1, 10) - dt.timedelta(days=rng.randint(0, 10))
    if kind == "list":
        return ["t"] * rng.randint(0, 4)
    if kind == "map":
        return {f"k{i}": "v" for i in range(rng.randint(0, 3))}
    raise AssertionError(kind)


def _merged() -> tuple[dict[str, Any], dict[str, str | None], int]:
    columns: dict[str, dict[str, Any]] = {}
    kinds: dict[str, str | None] = {}
    table_checks: list[dict[str, Any]] = []
    total = 0
    for path in EXAMPLES:
        stem = path.stem
        load_contract(path)  # as written
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for column in doc.get("columns") or []:
            name = f"{stem}__{column['name']}"
            kinds[name] = _kind(column.get("type"))
            checks = [{**c, "name": f"{stem}: {c['name']}"} for c in column.get("checks") or []]
            total += len(checks)
            columns[name] = {**column, "name": name, "checks": checks}
        for check in doc.get("checks") or []:
            check = {**check, "name": f"{stem}: {check['name']}"}
            total += 1
            if check["type"] == "duplicates":
                check["columns"] = [f"{stem}__{c}" for c in check["columns"]]
                for c in check["columns"]:
                    kinds.setdefault(c, "long")
            for key, kind in (("timestamp_column", "timestamp"), ("partition_column", "date")):
                if key in check:
                    check[key] = f"{stem}__{check[key]}"
                    # A date serves both freshness and completeness (p4 uses one column for both).
                    kinds[check[key]] = "date" if kinds.get(check[key]) in (None, "date") or kind == "date" else kind
            table_checks.append(check)
    for name in kinds:
        columns.setdefault(name, {"name": name})
    return {"name": "all_spec_examples", "columns": list(columns.values()), "checks": table_checks}, kinds, total


def test_every_spec_example_evaluates_without_errors(spark):
    contract_doc, kinds, total = _merged()
    assert len(EXAMPLES) >= 70 and total >= 80
    contract = load_contract(contract_doc)
    names = sorted(kinds)
    rng = random.Random(5)
    rows = [tuple(_value(kinds[n], rng) for n in names) for _ in range(ROWS)]
    ddl = ", ".join(f"`{n}` {DDL[kinds[n]]}" for n in names)
    result = evaluate(contract, spark.createDataFrame(rows, ddl), "2024-01-10T12:00:00Z")
    written = {c.check_id for c in contract.all_checks()}
    assert len([r for r in result.checks if r.check_id in written]) == total
    # The rest is what the examples declare (schema conformance, nullable: false …): no errors either.
    assert len(result.checks) == sum(1 for _ in contract.evaluated_checks())
    errors = [(r.check_name, r.message) for r in result.checks if r.status == "error"]
    assert not errors, errors
    assert {r.status for r in result.checks} == {"passed", "failed"}
