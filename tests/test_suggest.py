"""``suggest``: the draft is right on good data and useful on bad (issue 28, deliverables 1–3).

One generator of daily order batches (plain Python, seeded) makes clean days and one faulty day
per fault class. The contract is suggested on ONE clean day; then, through the real engine
(``engine.runner.run_contract`` on Parquet files written by pyarrow):

* every suggestion is checked against plain-Python statistics of the same rows (NULL-free columns,
  the key, the distinct values, the formats, the ranges and lengths by the documented rules);
* every clean day passes with no failed and no errored check (zero false alarms);
* every faulty day is caught (some check fails), and none errors except where the data lost a
  column (a renamed column's own checks have nothing to measure).

Spark work is batched: one profiling run, then one ``run_contract`` per day on small files.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.checks import FORMAT_PATTERNS
from airflow_dq_contracts.engine.runner import run_contract

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
FIRST_DAY = dt.date(2024, 3, 1)
STATUSES = ("pending", "paid", "shipped", "delivered", "cancelled")
STATUS_WEIGHTS = (0.2, 0.3, 0.25, 0.2, 0.05)
CURRENCIES = ("USD", "EUR", "GBP", "CAD")
NOTES = ("gift", "rush", "fragile")
TAGS = ("promo", "b2b", "express", "first-order")
CLEAN_DAYS = 6
FAULTS = (
    "nulls_in_required",
    "duplicated_key",
    "out_of_range",
    "new_category",
    "format_break",
    "renamed_column",
    "retyped_column",
    "volume_drop",
    "stale_data",
)


def make_day(index: int, fault: str | None = None, seed: int = 28) -> list[dict[str, Any]]:
    """One day's orders (900–1,100 rows), deterministic for (index, fault); ``fault`` breaks one thing."""
    rng = random.Random(seed * 1000 + index)
    day = FIRST_DAY + dt.timedelta(days=index)
    start = dt.datetime.combine(day, dt.time(), UTC)
    count = rng.randint(900, 1100)
    rows = []
    for i in range(count):
        customer = rng.randint(1, 5000)
        rows.append(
            {
                "order_id": index * 100_000 + i + 1,
                "customer_id": customer,
                "status": rng.choices(STATUSES, STATUS_WEIGHTS)[0],
                "amount": round(rng.lognormvariate(3.5, 0.5), 2),
                "qty": rng.randint(1, 10),
                "currency": rng.choice(CURRENCIES),
                "email": f"user{customer}@example.com",
                "sku": f"SKU-{rng.randint(0, 99999):05d}",
                "note": rng.choice(NOTES) if rng.random() < 0.7 else None,
                "tags": rng.sample(TAGS, rng.randint(0, 3)),
                "created_at": start + dt.timedelta(seconds=rng.uniform(0, 86_399)),
                "order_date": day,
            }
        )
    if fault == "nulls_in_required":
        for row in rng.sample(rows, 5):
            row["customer_id"] = None
    elif fault == "duplicated_key":
        for row in rng.sample(rows, 3):
            row["order_id"] = rows[0]["order_id"]
    elif fault == "out_of_range":
        rows[7]["amount"] = 25_000.0
    elif fault == "new_category":
        for row in rng.sample(rows, 5):
            row["status"] = "refunded"
    elif fault == "format_break":
        for row in rng.sample(rows, 5):
            row["email"] = row["email"].replace("@", " at ")
    elif fault == "renamed_column":
        for row in rows:
            row["currency_code"] = row.pop("currency")
    elif fault == "retyped_column":
        for row in rows:
            row["qty"] = str(row["qty"])
    elif fault == "volume_drop":
        rows = rows[: len(rows) * 3 // 10]
    elif fault == "stale_data":
        for row in rows:
            row["created_at"] -= dt.timedelta(days=3)
            row["order_date"] -= dt.timedelta(days=3)
    elif fault is not None:
        raise ValueError(fault)
    return rows


def reference_time(index: int) -> dt.datetime:
    """When day ``index`` is checked: 02:00 UTC the next day (the end of its data interval, plus 2 h)."""
    return dt.datetime.combine(FIRST_DAY + dt.timedelta(days=index + 1), dt.time(2), UTC)


_TYPES = {
    "order_id": pa.int64(),
    "customer_id": pa.int64(),
    "status": pa.string(),
    "amount": pa.float64(),
    "qty": pa.int32(),
    "currency": pa.string(),
    "currency_code": pa.string(),
    "email": pa.string(),
    "sku": pa.string(),
    "note": pa.string(),
    "tags": pa.list_(pa.string()),
    "created_at": pa.timestamp("us", tz="UTC"),
    "order_date": pa.date32(),
}


def write_day(rows: list[dict[str, Any]], path: Path) -> str:
    """The rows as one Parquet file (pyarrow: no Spark job); a retyped ``qty`` is written as strings."""
    names = list(rows[0])
    fields = [pa.field(n, pa.string() if isinstance(rows[0][n], str) and n == "qty" else _TYPES[n]) for n in names]
    table = pa.Table.from_pylist(rows, schema=pa.schema(fields))
    path.mkdir(parents=True)
    pq.write_table(table, path / "part-0.parquet")
    return str(path)


# ------------------------------------------------------------------------------------ expectations


def expected_range(low: float, high: float, integral: bool) -> tuple[float, float]:
    """The documented range rule, written out again: widen by the spread on each side, keep the sign."""
    spread = high - low
    margin = spread if spread > 0 else max(abs(low) / 2, 1.0)
    lo, hi = low - margin, high + margin
    if low >= 0:
        lo = max(0.0, lo)
    if high <= 0:
        hi = min(0.0, hi)
    if integral:
        return math.floor(lo), math.ceil(hi)
    return lo, hi


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {column["name"]: column for column in document["columns"]}


def check_of(column: dict[str, Any], check_type: str) -> dict[str, Any] | None:
    return next((c for c in column.get("checks", []) if c["type"] == check_type), None)


# ------------------------------------------------------------------------------------ the tests


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Clean days 0…5 and one faulty day per fault class (day 6+k), as Parquet paths and rows."""
    root = tmp_path_factory.mktemp("suggest_days")
    out: dict[str, Any] = {"clean": [], "faulty": {}}
    for index in range(CLEAN_DAYS):
        rows = make_day(index)
        out["clean"].append((index, rows, write_day(rows, root / f"clean{index}")))
    for offset, fault in enumerate(FAULTS):
        index = CLEAN_DAYS + offset
        rows = make_day(index, fault)
        out["faulty"][fault] = (index, rows, write_day(rows, root / fault))
    return out


@pytest.fixture(scope="module")
def suggestion(spark: Any, days: dict[str, Any]) -> Any:
    from airflow_dq_contracts.engine.suggest import suggest

    _, _, path = days["clean"][0]
    df = spark.read.parquet(path)
    return suggest(df, name="orders_suggested", partition_by=["order_date"], source=path)


def test_each_suggestion_matches_plain_python(suggestion: Any, days: dict[str, Any]) -> None:
    _, rows, _ = days["clean"][0]
    document = suggestion.document
    columns = by_name(document)
    n = len(rows)
    names = list(rows[0])
    # every column in order, the elements of the list column right after it (a nested field, issue 37)
    position = names.index("tags") + 1
    assert [c["name"] for c in document["columns"]] == [*names[:position], "tags[]", *names[position:]]
    assert columns["tags[]"]["type"] == "string" and columns["tags[]"]["nullable"] is False
    # types
    expected_types = {
        "order_id": "long",
        "customer_id": "long",
        "status": "string",
        "amount": "double",
        "qty": "int",
        "tags": {"kind": "list", "value_type": "string"},
        "created_at": "timestamp",
        "order_date": "date",
    }
    for name, declared in expected_types.items():
        assert columns[name]["type"] == declared, name
    # nullable: false exactly where plain Python sees no NULL (keys say it through primary_key)
    for name in names:
        has_null = any(r[name] is None for r in rows)
        declared_required = columns[name].get("nullable") is False or columns[name].get("primary_key") is True
        assert declared_required == (not has_null), name
    # the key: order_id is duplicate-free (plain Python), dense, and the only primary key
    assert len({r["order_id"] for r in rows}) == n
    assert columns["order_id"].get("primary_key") is True
    assert [c["name"] for c in document["columns"] if c.get("primary_key")] == ["order_id"]
    key_checks = {(c["type"], c.get("max"), c["severity"]) for c in columns["order_id"]["checks"]}
    assert {("missing", 0, "P0"), ("duplicates", 0, "P0")} <= key_checks
    # customer ids repeat in plain Python: never suggested unique
    assert len({r["customer_id"] for r in rows}) < n
    assert not columns["customer_id"].get("unique") and not columns["customer_id"].get("primary_key")
    # allowed values: the distinct values plain Python sees (low cardinality, none seen once)
    for name in ("status", "currency", "note"):
        seen = sorted({r[name] for r in rows if r[name] is not None})
        assert columns[name]["allowed_values"] == seen, name
    # formats: every email matches the email format; every sku one code shape
    email = re.compile(FORMAT_PATTERNS["email"])
    assert all(email.search(r["email"]) for r in rows)
    assert columns["email"]["format"] == "email"
    sku_pattern = re.compile(columns["sku"]["pattern"])
    assert all(sku_pattern.search(r["sku"]) for r in rows)
    assert not sku_pattern.search("SKU-1234") and not sku_pattern.search("sku-12345")
    # ranges: the documented rule over plain-Python extremes, never tighter than the data
    for name, integral in (("amount", False), ("qty", True), ("customer_id", True)):
        values = [r[name] for r in rows]
        low, high = expected_range(min(values), max(values), integral)
        assert columns[name]["min_value"] <= min(values) and columns[name]["max_value"] >= max(values)
        # rounded outwards to a tenth of the margin's order of magnitude (1 for integers)
        step = 1 if integral else 10 ** (math.floor(math.log10(max(values) - min(values))) - 1)
        assert low - step <= columns[name]["min_value"] <= low and high <= columns[name]["max_value"] <= high + step
    assert "min_value" not in columns["order_id"] and "min_value" not in columns["created_at"]
    # lengths of the list column: elements, widened by half the spread
    sizes = [len(r["tags"]) for r in rows]
    spread = max(sizes) - min(sizes)
    assert check_of(columns["tags"], "max_length")["max"] == max(sizes) + max(1, math.ceil(spread / 2))
    # a nullable column gets a NULL-share ceiling above what plain Python sees
    share = sum(r["note"] is None for r in rows) / n
    assert share < check_of(columns["note"], "missing")["max"] <= share + 0.1
    # volume: the static band around plain Python's row count
    (volume,) = [c for c in document["checks"] if c["type"] == "num_rows"]
    assert volume["between"] == [math.floor(0.6 * n), math.ceil(2 * n)]
    # freshness from the newest timestamp: 1.5 × the hours the day spans, rounded up
    times = [r["created_at"] for r in rows]
    span = (max(times) - min(times)).total_seconds() / 3600
    assert document["sla"] == {"freshness_hours": max(36, math.ceil(1.5 * span)), "timestamp_column": "created_at"}
    # completeness of the one partition seen
    (complete,) = [c for c in document["checks"] if c["type"] == "completeness"]
    assert complete["partition_column"] == "order_date" and complete["lookback_days"] == 1
    # evidence in comments
    assert f"0 NULLs in {n:,} rows" in suggestion.yaml
    assert f"{len(STATUSES)} distinct values" in suggestion.yaml
    assert load_contract(suggestion.yaml).name == "orders_suggested"


@pytest.fixture(scope="module")
def clean_runs(spark: Any, suggestion: Any, days: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The suggested contract run on every clean day, its results written to one results table (history)."""
    results = str(tmp_path_factory.mktemp("suggest_results") / "results")
    runs = []
    for index, _, path in days["clean"]:
        result = run_contract(
            spark,
            suggestion.contract,
            input_path=path,
            input_format="parquet",
            reference_time=reference_time(index),
            results_table=results,
        )
        runs.append((index, result))
    return results, runs


def test_clean_days_pass_and_every_fault_is_caught(
    spark: Any, suggestion: Any, days: dict[str, Any], clean_runs: Any
) -> None:
    contract = suggestion.contract
    for index, result in clean_runs[1]:
        bad = [(r.check_id, r.status, r.message) for r in result.checks if r.status != "passed"]
        assert not bad, f"clean day {index}: {bad}"
        assert result.decision == "pass"
    caught = {}
    for fault, (index, _, path) in days["faulty"].items():
        result = run_contract(
            spark, contract, input_path=path, input_format="parquet", reference_time=reference_time(index)
        )
        failed = {r.check_id for r in result.checks if r.status == "failed"}
        errors = {r.check_id for r in result.checks if r.status == "error"}
        caught[fault] = failed
        # a column that is gone or has another type leaves its own checks nothing to measure (error,
        # which routes as failed); every other check still computes
        lost = {"renamed_column": "currency/", "retyped_column": "qty/"}.get(fault)
        assert all(lost and check_id.startswith(lost) for check_id in errors), f"{fault}: errors {errors}"
        assert failed, f"{fault} was not caught"
    # each fault is caught by the check meant for it
    assert "customer_id/not_null" in caught["nulls_in_required"]
    assert "order_id/key_is_unique" in caught["duplicated_key"]
    assert "amount/max_value" in caught["out_of_range"]
    assert "status/allowed_values" in caught["new_category"]
    assert "email/pattern" in caught["format_break"]
    assert "currency/schema" in caught["renamed_column"]
    assert "qty/schema" in caught["retyped_column"]
    assert "_table_/row_count_within_its_band" in caught["volume_drop"]
    assert "_table_/sla_freshness" in caught["stale_data"]


def test_cli_suggests_from_a_delta_table_with_history(
    spark: Any, days: dict[str, Any], clean_runs: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dq-contracts suggest`` end to end: a partitioned Delta input, a filter, history → a file validate accepts."""
    from deltalake import write_deltalake

    from airflow_dq_contracts.cli.main import main

    results, runs = clean_runs
    table = tmp_path / "orders"
    rows = [row for _, day_rows, _ in days["clean"] for row in day_rows]
    write_deltalake(
        str(table),
        pa.Table.from_pylist(rows, schema=pa.schema([(n, _TYPES[n]) for n in rows[0]])),
        partition_by=["order_date"],
    )
    out = tmp_path / "orders.yaml"
    last = CLEAN_DAYS - 1
    day = (FIRST_DAY + dt.timedelta(days=last)).isoformat()
    code = main(
        [
            "suggest",
            "--input",
            str(table),
            "--filter",
            f"order_date = '{day}'",
            "--results-table",
            results,
            "--name",
            "orders_suggested",
            "--reference-time",
            reference_time(last).isoformat(),
            "-o",
            str(out),
            "-q",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert main(["validate", str(out)]) == 0
    text = out.read_text()
    document = load_contract(str(out))
    assert document.dataset.path == str(table) and document.metadata["partitioned_by"] == ["order_date"]
    # the volume band comes from the history of the earlier clean runs (plain Python over their rows)
    earlier = [len(r) for i, r, _ in days["clean"] if i < last]
    mean = sum(earlier) / len(earlier)
    (volume,) = [c for c in document.checks if c.type == "num_rows"]
    assert volume.baseline is not None and volume.name == "Row count within its band"
    assert volume.baseline.band == (
        min(0.8, math.floor(0.8 * min(earlier) / mean * 100) / 100),
        max(1.25, math.ceil(1.25 * max(earlier) / mean * 100) / 100),
    )
    assert f"{len(earlier)} runs" in text
    # the filter scoped the profile to one day: its row count is the evidence
    day_rows = len(days["clean"][last][1])
    assert f"today {day_rows:,} rows" in text
    # --format odcs (on a half sample) writes an ODCS v3 document validate accepts
    odcs = tmp_path / "orders.odcs.yaml"
    _, _, first_path = days["clean"][0]
    code = main(
        ["suggest", "--input", first_path, "--input-format", "parquet", "--sample", "0.5"]
        + ["--format", "odcs", "-o", str(odcs), "-q"]
    )
    assert code == 0, capsys.readouterr().err
    assert "kind: DataContract" in odcs.read_text()
    assert main(["validate", str(odcs)]) == 0
    assert main(["suggest", "--input", str(table), "--sample", "0"]) == 1
