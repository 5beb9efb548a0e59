"""Issue 34: text formats are read as declared.

A CSV or JSON input (and a text reference) is read with the contract's declared column types; the
``dataset.null_values`` key and the reader's ``nullValue`` option both read their tokens as NULL; a
value that does not parse as its declared type is counted by its column's ``<column>/schema`` check
(its failing rows, quarantined per its action), never silently NULL; a declared numeric column that
arrives as strings is named with its likely null token.

Contract-side tests are plain Python. Engine tests run real Spark (the session fixture) on files
generated here; every expected count and every quarantined row is computed in plain Python from the
same rows, by the parsing rules the docs state (docs/contracts.md, "Text inputs").
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.runspec import DatasetSource

REFERENCE = "2026-03-01T12:00:00Z"
COLUMNS = [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": "double"},
    {"name": "qty", "type": "int", "nullable": False},
    {"name": "day", "type": "date"},
]
TYPES = {"amount": "double", "qty": "int", "day": "date"}

# --------------------------------------------------------------------------------------- contract side


def test_null_values_key_is_validated_and_located():
    text = """name: t
dataset:
  path: /d/t.csv
  format: csv
  null_values: [NA, null, NA]
references:
  dim:
    path: /d/dim.csv
    format: csv
    null_value: [NA]
"""
    with pytest.raises(ContractValidationError) as caught:
        load_contract(text, filename="t.yaml")
    issues = {(issue.path, issue.line): issue.message for issue in caught.value.issues}
    assert issues == {
        ("dataset.null_values[1]", 5): "'null_values' entries are strings; got None (write it quoted: \"null\")",
        ("dataset.null_values[2]", 5): "'NA' is listed twice in 'null_values'",
        ("references.dim.null_value", 10): "unknown key 'null_value' in a reference (did you mean 'null_values'?); "
        "allowed: table, path, format, filter, options, null_values",
    }
    hint = r"unknown key 'nul_values' in 'dataset' \(did you mean 'null_values'\?\)"
    with pytest.raises(ContractValidationError, match=hint):
        load_contract({"name": "t", "dataset": {"path": "/d", "nul_values": ["NA"]}})
    with pytest.raises(ContractValidationError, match=r"must be a list of strings"):
        load_contract({"name": "t", "dataset": {"path": "/d", "null_values": "NA"}})


def test_declared_columns_decide_how_text_is_read():
    declared = load_contract(
        {"name": "t", "dataset": {"path": "/d", "format": "csv", "options": {"nullValue": "-"}}, "columns": COLUMNS}
    )
    source = DatasetSource.resolve(declared)
    # Declared columns: read as text (no inference) and parsed; the option's token is a null token too.
    assert (dict(source.options), source.read_as_declared, source.null_tokens) == (
        {"header": "true", "nullValue": "-"},
        True,
        ("-",),
    )
    undeclared = load_contract({"name": "t", "dataset": {"path": "/d", "format": "csv"}})
    assert dict(DatasetSource.resolve(undeclared).options) == {"header": "true", "inferSchema": "true"}
    # Parquet is typed: read as declared only when null tokens are given.
    typed = load_contract({"name": "t", "dataset": {"path": "/d", "format": "parquet"}, "columns": COLUMNS})
    assert not DatasetSource.resolve(typed).read_as_declared


# --------------------------------------------------------------------------------------- the rules, in Python


def parses(kind: str, text: str) -> bool:
    """Whether ``text`` parses as ``kind`` (the documented rules, for the values generated here)."""
    if kind in ("int", "long"):
        return re.fullmatch(r"\s*[+-]?\d+(\.0*)?\s*", text) is not None
    if kind == "double":
        try:
            float(text)
        except ValueError:
            return False
        return True
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


VALUES = {
    "amount": ["1.5", "-3.25", "12", "0.001", "abc", "1,5", "NA", ""],
    "qty": ["3", "12.0", "-7", "2.5", "x", "NA", ""],
    "day": ["2024-05-01", "2023-12-31", "2024-13-45", "yesterday", "NA", ""],
}


def make_rows(count: int = 60, seed: int = 34) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [
        {"id": str(i), **{name: rng.choice(values) for name, values in VALUES.items()}, "note": rng.choice("abc")}
        for i in range(count)
    ]


def expected(rows: list[dict[str, str]], tokens: set[str]) -> tuple[dict[str, set[int]], dict[int, set[str]]]:
    """Per column, the ids whose value does not parse; per quarantined id, the checks it breaks."""
    unparsed = {
        name: {int(r["id"]) for r in rows if r[name] not in tokens | {""} and not parses(kind, r[name])}
        for name, kind in TYPES.items()
    }
    broken: dict[int, set[str]] = {}
    for name, ids in unparsed.items():
        for row_id in ids:
            broken.setdefault(row_id, set()).add(f"{name}/schema")
    for r in rows:
        # qty is NOT NULL: a token, an empty value and an unparseable value are all missing once typed.
        if r["qty"] in tokens | {""} or not parses("int", r["qty"]):
            broken.setdefault(int(r["id"]), set()).add("qty/not_null")
    return unparsed, broken


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def run(spark: Any, tmp_path: Path, dataset: dict[str, Any], run_id: str, **contract: Any) -> tuple[Any, list[Any]]:
    from airflow_dq_contracts.engine.runner import run_contract

    document = {"name": "readings", "dataset": dataset, "columns": COLUMNS, **contract}
    quarantine = tmp_path / f"quarantine_{run_id}"
    result = run_contract(
        spark, load_contract(document), run_id=run_id, reference_time=REFERENCE, quarantine_table=str(quarantine)
    )
    rows = spark.read.format("delta").load(str(quarantine)).collect() if result.quarantine_rows else []
    return result, rows


def assert_counted(result: Any, quarantined: list[Any], unparsed: dict[str, set[int]], broken: dict) -> None:
    checks = {c.check_id: c for c in result.checks}
    for name, ids in unparsed.items():
        check = checks[f"{name}/schema"]
        assert (check.status, check.metric_value, check.failed_rows) == ("failed", len(ids), len(ids)), check.message
        assert f"{len(ids)} values of column {name} do not parse as {TYPES[name]}" in check.message
    assert checks["id/schema"].status == "passed"
    assert {row["id"]: {v["check_id"] for v in row["_dq_violations"]} for row in quarantined} == broken
    # The markers are the run's own: the written rows have the data's columns only.
    assert not [name for name in quarantined[0].asDict() if name.startswith("__dq")]


# --------------------------------------------------------------------------------------- engine side


@pytest.mark.parametrize("route", ["null_values", "nullValue"])
def test_csv_read_as_declared_counts_unparseable_values(spark, tmp_path, route):
    rows = make_rows()
    path = tmp_path / "readings.csv"
    write_csv(path, rows)
    dataset: dict[str, Any] = {"path": str(path), "format": "csv"}
    if route == "null_values":
        dataset["null_values"] = ["NA"]
    else:
        dataset["options"] = {"nullValue": "NA"}
    # exact mode: the undeclared column of the file is still seen (and the markers are not).
    result, quarantined = run(spark, tmp_path, dataset, route, enforcement={"schema": {"mode": "exact"}})
    unparsed, broken = expected(rows, {"NA"})
    assert_counted(result, quarantined, unparsed, broken)
    table = next(c for c in result.checks if c.check_id == "_table_/schema")
    assert (table.metric_value, table.message) == (
        1.0,
        "undeclared column(s) in the data: note (enforcement.schema mode exact)",
    )
    missing = next(c for c in result.checks if c.check_id == "qty/not_null")
    assert missing.failed_rows == sum(1 for ids in broken.values() if "qty/not_null" in ids)
    assert result.decision == "gate" and result.quarantine_rows == len(broken)


def test_csv_without_null_tokens_names_the_likely_token(spark, tmp_path):
    rows = make_rows(seed=7)
    path = tmp_path / "readings.csv"
    write_csv(path, rows)
    result, _ = run(spark, tmp_path, {"path": str(path), "format": "csv"}, "no_tokens")
    unparsed, _ = expected(rows, set())
    amount = next(c for c in result.checks if c.check_id == "amount/schema")
    tokens = sum(1 for r in rows if r["amount"] == "NA")
    assert amount.failed_rows == len(unparsed["amount"])
    noun = "values are" if tokens != 1 else "value is"
    assert amount.message.endswith(f"; {tokens} {noun} 'NA' — set dataset.null_values: [NA]"), amount.message


def test_json_read_as_declared(spark, tmp_path):
    rng = random.Random(5)
    amounts: list[Any] = [1.5, 12, -0.5, "NA", "abc", None, "7.25"]
    quantities: list[Any] = [3, 4.0, 2.5, "NA", "x", None, "8"]
    records = [
        {"id": i, "amount": rng.choice(amounts), "qty": rng.choice(quantities), "day": rng.choice(VALUES["day"])}
        for i in range(40)
    ]
    path = tmp_path / "readings.json"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    result, quarantined = run(spark, tmp_path, {"path": str(path), "format": "json", "null_values": ["NA", ""]}, "js")

    # JSON numbers are their text: 4.0 is a whole number, 2.5 is not an int.
    def text(value: Any) -> str:
        return "" if value is None else str(value)

    rows = [{name: text(record[name]) for name in ("id", "amount", "qty", "day")} for record in records]
    unparsed, broken = expected(rows, {"NA"})
    assert_counted(result, quarantined, unparsed, broken)


def test_text_reference_read_as_declared(spark, tmp_path):
    from airflow_dq_contracts.engine.runner import run_contract

    orders = tmp_path / "orders.csv"
    customers = tmp_path / "customers.csv"
    order_rows = [{"order_id": str(i), "customer_id": str(i % 9)} for i in range(30)]
    write_csv(orders, order_rows)
    # The key as written by an export: zero-padded, a null token, one unparseable; plus a wide column.
    known = {0: "000", 1: "1", 2: "02", 4: "4", 5: "N/A", 6: "six", 7: "7.0"}
    write_csv(customers, [{"id": text, "segment": "x"} for text in known.values()])
    contract = load_contract(
        {
            "name": "orders",
            "dataset": {"path": str(orders), "format": "csv"},
            "columns": [{"name": "order_id", "type": "long"}, {"name": "customer_id", "type": "long"}],
            "references": {"customers": {"path": str(customers), "format": "csv", "null_values": ["N/A"]}},
            "checks": [
                {
                    "name": "known customer",
                    "type": "referential",
                    "columns": ["customer_id"],
                    "reference": "customers",
                    "reference_columns": ["id"],
                    "severity": "P2",
                }
            ],
        }
    )
    result = run_contract(spark, contract, run_id="ref", reference_time=REFERENCE)
    matched = {key for key, text in known.items() if parses("long", text)}  # 000 is 0, 7.0 is 7
    orphans = sum(1 for r in order_rows if int(r["customer_id"]) not in matched)
    check = next(c for c in result.checks if c.check_id == "_table_/known_customer")
    assert (check.metric_value, check.failed_rows) == (orphans, orphans), check.message


def test_parquet_strings_name_the_null_token_and_null_values_parse_them(spark, tmp_path):
    values = ["1.5", "NA", "2", "NA", "N/A", "3.25", None, "NA"]
    path = str(tmp_path / "amounts")
    spark.createDataFrame([(i, v) for i, v in enumerate(values)], "id long, amount string").write.parquet(path)
    columns = [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"}]
    from airflow_dq_contracts.engine.runner import run_contract

    stored = load_contract({"name": "p", "dataset": {"path": path, "format": "parquet"}, "columns": columns})
    amount = next(
        c for c in run_contract(spark, stored, reference_time=REFERENCE).checks if c.check_id == "amount/schema"
    )
    nas, slashes = values.count("NA"), values.count("N/A")
    assert amount.message == (
        "column amount is string in the data but declared double (not the same type or a lossless widening of it)"
        f"; {nas + slashes} values are 'NA' or 'N/A' — set dataset.null_values: [NA, N/A]"
    )
    tokens = {"name": "p", "dataset": {"path": path, "format": "parquet", "null_values": ["NA", "N/A"]}}
    parsed = run_contract(spark, load_contract({**tokens, "columns": columns}), reference_time=REFERENCE)
    assert {c.check_id: (c.status, c.metric_value) for c in parsed.checks} == {
        "id/schema": ("passed", 0.0),
        "amount/schema": ("passed", 0.0),
    }
