"""Every YAML example of the check-language spec (``shared/seeds/000_*.txt``) loads as written.

The examples are written out under ``tests/spec_examples/`` (each wrapped in a minimal contract, with
the spec section it comes from in its first comment). The expectations below are transcribed by hand
from the spec text — check type, severity, validator kind and bounds, tolerance, parameters — and never
read back from the loader. Where DESIGN §4 fixes an ambiguity (no validator on whitelist/pattern =
"all conform"; length checks without ``return`` yield the length statistic) the expectation says so.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

import pytest
from ci_guard import require

from airflow_dq_contracts.contract import load_contract

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "spec_examples"
SPEC_GLOB = "000_*.txt"
SPEC_TOLERANCE = 1e-9  # "a float that defaults to 1e-9" (spec, Validators)


# ------------------------------------------------------------------ expectation helpers (hand-written)


def between(low: float, high: float, tol: float = SPEC_TOLERANCE) -> tuple:
    return ("between", low, high, tol)


def not_between(low: float, high: float, tol: float = SPEC_TOLERANCE) -> tuple:
    return ("not_between", low, high, tol)


def at_least(low: float, tol: float = SPEC_TOLERANCE) -> tuple:
    return ("min", low, None, tol)


def at_most(high: float, tol: float = SPEC_TOLERANCE) -> tuple:
    return ("max", None, high, tol)


def equals(value: float, tol: float = SPEC_TOLERANCE) -> tuple:
    return ("equals", value, None, tol)


ALL_CONFORM = ("all_conform", None, None, SPEC_TOLERANCE)  # DESIGN §4: whitelist/blacklist/pattern

# Defaults the spec's parameter tables give.
RETURN_COUNT = {"return": "count"}
VALUE_DEFAULTS = {"return": "count", "case_sensitive": True}
PATTERN_DEFAULTS = {"return": "count", "flags": []}
LENGTH_STAT = {"return": None}  # DESIGN §4: without `return` the length statistic itself is validated


def chk(column: str | None, name: str, type_: str, severity: str, validator: tuple, **params: Any) -> dict:
    return {
        "column": column,
        "name": name,
        "type": type_,
        "severity": severity,
        "validator": validator,
        "params": params,
    }


def col(name: str, kind: str | None, nullable: bool = True, **sub: str) -> dict:
    return {"name": name, "kind": kind, "nullable": nullable, **sub}


EMAIL_RE = r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$"
STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]

# file stem → (columns [(name, kind, nullable, value/key kinds)], checks in document order)
EXPECTED: dict[str, tuple[list[dict], list[dict]]] = {
    # ---- Validators section
    "validators__not_between": (
        [],
        [
            chk(None, "Order ID is not in reserved test range", "num_rows", "P1", not_between(9000000, 9999999)),
        ],
    ),
    "validators__equals": (
        [col("allocated_budget", None)],
        [
            chk("allocated_budget", "Total allocated budget is exactly $1M", "sum", "P0", equals(1000000.0, 0.01)),
        ],
    ),
    # ---- num_rows
    "num_rows__ex1": ([], [chk(None, "Daily volume within bounds", "num_rows", "P1", between(100, 1000000))]),
    "num_rows__ex2": ([], [chk(None, "At least 1000 transactions per day", "num_rows", "P0", at_least(1000))]),
    "num_rows__ex3": ([], [chk(None, "Partition has exactly 1000 records", "num_rows", "P1", equals(1000, 0))]),
    # ---- table-level duplicates
    "table_duplicates__ex1": (
        [],
        [chk(None, "No duplicate orders", "duplicates", "P0", at_most(0), columns=["order_id"], **RETURN_COUNT)],
    ),
    "table_duplicates__ex2": (
        [],
        [
            chk(
                None,
                "Few duplicate user-date combinations",
                "duplicates",
                "P1",
                at_most(10),
                columns=["user_id", "event_date"],
                **RETURN_COUNT,
            )
        ],
    ),
    "table_duplicates__ex3": (
        [],
        [
            chk(
                None,
                "Expected duplicate rate",
                "duplicates",
                "P2",
                equals(50, 5),
                columns=["transaction_id", "timestamp"],
                **RETURN_COUNT,
            )
        ],
    ),
    "table_duplicates__ex4": (
        [],
        [chk(None, "Low duplicate rate", "duplicates", "P1", at_most(0.01), columns=["order_id"], **{"return": "pct"})],
    ),
    # ---- freshness: "passes when age_hours <= max_age_hours"
    "freshness__ex1": (
        [],
        [
            chk(
                None,
                "Data is fresh",
                "freshness",
                "P0",
                at_most(24),
                max_age_hours=24,
                timestamp_column="created_at",
                aggregation="max",
            )
        ],
    ),
    "freshness__ex2": (
        [],
        [
            chk(
                None,
                "Latest partition is within 2 hours",
                "freshness",
                "P0",
                at_most(2.0),
                max_age_hours=2.0,
                timestamp_column="event_hour",
                aggregation="max",
            )
        ],
    ),
    "freshness__ex3": (
        [],
        [
            chk(
                None,
                "Oldest record within 7 days",
                "freshness",
                "P2",
                at_most(168.0),
                max_age_hours=168.0,
                timestamp_column="ingestion_time",
                aggregation="min",
            )
        ],
    ),
    # ---- completeness: "passes when gap_count <= max_gap_count"
    "completeness__ex1": (
        [],
        [
            chk(
                None,
                "No missing daily partitions in last 7 days",
                "completeness",
                "P1",
                at_most(0),
                partition_column="order_date",
                granularity="daily",
                lookback_days=7,
                allow_future_gaps=True,
                max_gap_count=0,
            )
        ],
    ),
    "completeness__ex2": (
        [],
        [
            chk(
                None,
                "Hourly partitions are complete",
                "completeness",
                "P0",
                at_most(0),
                partition_column="event_hour",
                granularity="hourly",
                lookback_days=1,
                allow_future_gaps=True,
                max_gap_count=0,
            )
        ],
    ),
    "completeness__ex3": (
        [],
        [
            chk(
                None,
                "Weekly partitions mostly complete",
                "completeness",
                "P2",
                at_most(2),
                partition_column="report_week",
                granularity="weekly",
                lookback_days=90,
                allow_future_gaps=True,
                max_gap_count=2,
            )
        ],
    ),
    # ---- missing
    "missing__ex1": (
        [col("notes", "string")],
        [chk("notes", "Most orders have notes", "missing", "P2", at_most(1000), **RETURN_COUNT)],
    ),
    "missing__ex2": (
        [col("deleted_at", "timestamp")],
        [chk("deleted_at", "Few deletions expected", "missing", "P1", between(0, 50), **RETURN_COUNT)],
    ),
    "missing__ex3": (
        [col("optional_metadata", "string")],
        [
            chk(
                "optional_metadata",
                "Exactly 100 records have metadata",
                "missing",
                "P2",
                equals(900, 0),
                **RETURN_COUNT,
            )
        ],
    ),
    "missing__ex4": (
        [col("email", "string")],
        [chk("email", "Low null percentage", "missing", "P1", at_most(0.10), **{"return": "pct"})],
    ),
    # ---- whitelist
    "whitelist__ex1": (
        [col("status", "string", False)],
        [chk("status", "Status is valid", "whitelist", "P0", ALL_CONFORM, values=STATUSES, **VALUE_DEFAULTS)],
    ),
    "whitelist__ex2": (
        [col("country_code", "string", False)],
        [
            chk(
                "country_code",
                "Country code is valid",
                "whitelist",
                "P1",
                ALL_CONFORM,
                values=["US", "CA", "MX", "GB", "DE", "FR"],
                case_sensitive=False,
                **RETURN_COUNT,
            )
        ],
    ),
    "whitelist__ex3": (
        [col("priority", "int", False)],
        [
            chk(
                "priority",
                "Priority is valid (1-5)",
                "whitelist",
                "P0",
                ALL_CONFORM,
                values=[1, 2, 3, 4, 5],
                **VALUE_DEFAULTS,
            )
        ],
    ),
    "whitelist__ex4": (
        [col("status", "string", False)],
        [
            chk(
                "status",
                "Most statuses are valid",
                "whitelist",
                "P1",
                at_least(0.95),
                values=STATUSES,
                case_sensitive=True,
                **{"return": "pct"},
            )
        ],
    ),
    # ---- blacklist
    "blacklist__ex1": (
        [col("username", "string", False)],
        [
            chk(
                "username",
                "Username is not reserved",
                "blacklist",
                "P0",
                ALL_CONFORM,
                values=["admin", "root", "system", "null", "undefined"],
                case_sensitive=False,
                **RETURN_COUNT,
            )
        ],
    ),
    "blacklist__ex2": (
        [col("email", "string", False)],
        [
            chk(
                "email",
                "Email is not test account",
                "blacklist",
                "P1",
                ALL_CONFORM,
                values=["test@example.com", "noreply@example.com", "admin@test.com"],
                **VALUE_DEFAULTS,
            )
        ],
    ),
    "blacklist__ex3": (
        [col("username", "string", False)],
        [
            chk(
                "username",
                "Almost all usernames are not reserved",
                "blacklist",
                "P1",
                at_least(0.99),
                values=["admin", "root", "system"],
                case_sensitive=True,
                **{"return": "pct"},
            )
        ],
    ),
    # ---- column-level duplicates
    "column_duplicates__ex1": (
        [col("order_id", "int", False)],
        [chk("order_id", "Order ID is unique", "duplicates", "P0", at_most(0), **RETURN_COUNT)],
    ),
    "column_duplicates__ex2": (
        [col("user_id", "int", False)],
        [chk("user_id", "User ID has reasonable duplicates", "duplicates", "P1", at_most(100), **RETURN_COUNT)],
    ),
    "column_duplicates__ex3": (
        [col("test_category", "string", False)],
        [chk("test_category", "Category has expected duplicates", "duplicates", "P2", equals(50, 0), **RETURN_COUNT)],
    ),
    "column_duplicates__ex4": (
        [col("order_id", "int", False)],
        [chk("order_id", "Low duplicate rate", "duplicates", "P1", at_most(0.01), **{"return": "pct"})],
    ),
    # ---- pattern (YAML "\\." is the regex "\.")
    "pattern__ex1": (
        [col("email", "string", False)],
        [
            chk(
                "email",
                "Email format is valid",
                "pattern",
                "P0",
                ALL_CONFORM,
                pattern=EMAIL_RE,
                format=None,
                **PATTERN_DEFAULTS,
            )
        ],
    ),
    "pattern__ex2": (
        [col("phone", "string")],
        [
            chk(
                "phone",
                "Phone number matches US format",
                "pattern",
                "P1",
                ALL_CONFORM,
                pattern=r"^\+1-\d{3}-\d{3}-\d{4}$",
                format=None,
                **PATTERN_DEFAULTS,
            )
        ],
    ),
    "pattern__ex3": (
        [col("sku", "string", False)],
        [
            chk(
                "sku",
                "SKU follows naming convention",
                "pattern",
                "P0",
                ALL_CONFORM,
                pattern=r"^[A-Z]{2}\d{6}[A-Z]$",
                format=None,
                **PATTERN_DEFAULTS,
            )
        ],
    ),
    "pattern__ex4": (
        [col("email", "string", False)],
        [
            chk(
                "email",
                "95% emails are valid",
                "pattern",
                "P1",
                at_least(0.95),
                pattern=r"^[^@]+@[^@]+\.[^@]+$",
                format=None,
                flags=[],
                **{"return": "pct"},
            )
        ],
    ),
    "pattern__ex5": (
        [col("email", "string", False)],
        [
            chk(
                "email",
                "All emails are valid",
                "pattern",
                "P1",
                at_least(0.95),
                format="email",
                pattern=None,
                flags=[],
                **{"return": "pct"},
            )
        ],
    ),
    "pattern__ex6": (
        [col("phone", "string")],
        [
            chk(
                "phone",
                "Phone numbers are valid",
                "pattern",
                "P2",
                at_least(1000),
                format="phone",
                pattern=None,
                **PATTERN_DEFAULTS,
            )
        ],
    ),
    "pattern__ex7": (
        [col("transaction_id", "string", False)],
        [
            chk(
                "transaction_id",
                "Transaction IDs are valid UUIDs",
                "pattern",
                "P0",
                equals(1.0),
                format="uuid",
                pattern=None,
                flags=[],
                **{"return": "pct"},
            )
        ],
    ),
    "pattern__ex8": (
        [col("website", "string")],
        [
            chk(
                "website",
                "Websites are valid URLs",
                "pattern",
                "P1",
                at_least(0.90),
                format="url",
                pattern=None,
                flags=[],
                **{"return": "pct"},
            )
        ],
    ),
    # ---- length checks
    "min_length__ex1": (
        [col("username", "string", False)],
        [chk("username", "Username is at least 3 characters", "min_length", "P1", at_least(3), **LENGTH_STAT)],
    ),
    "min_length__ex2": (
        [col("tags", "list", True, value="string")],
        [chk("tags", "Tags list has at least one element", "min_length", "P2", at_least(1), **LENGTH_STAT)],
    ),
    "max_length__ex1": (
        [col("description", "string")],
        [
            chk(
                "description",
                "Description does not exceed 500 characters",
                "max_length",
                "P2",
                at_most(500),
                **LENGTH_STAT,
            )
        ],
    ),
    "max_length__ex2": (
        [col("properties", "map", True, key="string", value="string")],
        [chk("properties", "Properties map has at most 50 entries", "max_length", "P2", at_most(50), **LENGTH_STAT)],
    ),
    "avg_length__ex1": (
        [col("product_name", "string", False)],
        [
            chk(
                "product_name",
                "Product names have reasonable average length",
                "avg_length",
                "P2",
                between(5, 100),
                **LENGTH_STAT,
            )
        ],
    ),
    "avg_length__ex2": (
        [col("tags", "list", True, value="string")],
        [chk("tags", "Tags list has reasonable average size", "avg_length", "P3", between(1, 10), **LENGTH_STAT)],
    ),
    "avg_length__ex3": (
        [col("description", "string")],
        [
            chk(
                "description",
                "Most descriptions have reasonable average length",
                "avg_length",
                "P2",
                at_least(0.90),
                **{"return": "pct"},
            )
        ],
    ),
    # ---- cardinality
    "cardinality__ex1": (
        [col("status", "string", False)],
        [chk("status", "Status is low-cardinality categorical", "cardinality", "P1", at_most(10))],
    ),
    "cardinality__ex2": (
        [col("priority", "int", False)],
        [chk("priority", "Priority has exactly 5 levels", "cardinality", "P0", equals(5))],
    ),
    "cardinality__ex3": (
        [col("customer_segment", "string", False)],
        [chk("customer_segment", "Segment cardinality is stable", "cardinality", "P1", between(3, 8))],
    ),
    # ---- min / max
    "min__ex1": (
        [col("price", "decimal", False)],
        [chk("price", "All prices are non-negative", "min", "P0", at_least(0.0))],
    ),
    "min__ex2": (
        [col("temperature", "float", False)],
        [chk("temperature", "Minimum temperature is reasonable", "min", "P1", between(-50.0, 0.0))],
    ),
    "max__ex1": ([col("age", "int", False)], [chk("age", "Maximum age is reasonable", "max", "P1", at_most(120))]),
    "max__ex2": ([col("priority", "int", False)], [chk("priority", "Maximum priority is 5", "max", "P0", equals(5))]),
    # ---- mean
    "mean__ex1": (
        [col("order_amount", "decimal", False)],
        [chk("order_amount", "Average order value is typical", "mean", "P2", between(50.0, 150.0))],
    ),
    "mean__ex2": (
        [col("response_time_ms", "int", False)],
        [chk("response_time_ms", "Response time is acceptable", "mean", "P1", at_most(500.0))],
    ),
    "mean__ex3": (
        [col("rating", "int", False)],
        [chk("rating", "Average rating matches target", "mean", "P2", equals(3.5, 0.1))],
    ),
    # ---- sum
    "sum__ex1": (
        [col("allocated_budget", "decimal", False)],
        [chk("allocated_budget", "Total allocated budget is exactly $1M", "sum", "P0", equals(1000000.0, 0.01))],
    ),
    "sum__ex2": (
        [col("daily_sales", "decimal", False)],
        [chk("daily_sales", "Daily sales within expected range", "sum", "P1", between(10000.0, 100000.0))],
    ),
    "sum__ex3": (
        [col("quantity", "int", False)],
        [chk("quantity", "Total quantity is positive", "sum", "P0", at_least(0, 0))],
    ),
    # ---- count
    "count__ex1": (
        [col("employee_id", "int", False)],
        [chk("employee_id", "Exactly 500 active employees", "count", "P1", equals(500, 0))],
    ),
    "count__ex2": (
        [col("transaction_id", "int", False)],
        [chk("transaction_id", "At least 1000 transactions daily", "count", "P2", at_least(1000))],
    ),
    "count__ex3": (
        [col("order_id", "int", False)],
        [chk("order_id", "Daily order count is stable", "count", "P1", between(100, 1000))],
    ),
    # ---- variance / stddev
    "variance__ex1": (
        [col("temperature", "float", False)],
        [chk("temperature", "Temperature variance is stable", "variance", "P2", at_most(10.0))],
    ),
    "variance__ex2": (
        [col("daily_sales", "decimal", False)],
        [chk("daily_sales", "Sales variance is within expected range", "variance", "P2", between(1000.0, 10000.0))],
    ),
    "variance__ex3": (
        [col("transaction_amount", "decimal", False)],
        [
            chk(
                "transaction_amount",
                "Transaction variance matches expectation",
                "variance",
                "P1",
                equals(50000.0, 100.0),
            )
        ],
    ),
    "stddev__ex1": (
        [col("response_time_ms", "float", False)],
        [chk("response_time_ms", "Response time is not too volatile", "stddev", "P1", at_most(500.0))],
    ),
    "stddev__ex2": (
        [col("daily_revenue", "decimal", False)],
        [
            chk(
                "daily_revenue",
                "Revenue standard deviation is within expected range",
                "stddev",
                "P2",
                between(100.0, 50000.0),
            )
        ],
    ),
    # ---- percentile
    "percentile__ex1": (
        [col("response_time_ms", "int", False)],
        [
            chk(
                "response_time_ms",
                "P95 response time is acceptable",
                "percentile",
                "P1",
                at_most(1000.0),
                percentile=0.95,
            )
        ],
    ),
    "percentile__ex2": (
        [col("order_amount", "decimal", False)],
        [
            chk(
                "order_amount",
                "Median order value is typical",
                "percentile",
                "P2",
                between(30.0, 100.0),
                percentile=0.5,
            )
        ],
    ),
    "percentile__ex3": (
        [col("processing_time_sec", "float", False)],
        [
            chk(
                "processing_time_sec",
                "P99 processing time matches SLA",
                "percentile",
                "P0",
                equals(300.0, 5.0),
                percentile=0.99,
            )
        ],
    ),
    # ---- composition patterns
    "patterns__p1_layered": (
        [col("email", "string", False)],
        [
            chk(
                "email",
                "Email format is valid",
                "pattern",
                "P0",
                ALL_CONFORM,
                format="email",
                pattern=None,
                **PATTERN_DEFAULTS,
            ),
            chk("email", "Email domains are diverse", "cardinality", "P2", at_least(10)),
        ],
    ),
    "patterns__p2_range_context": (
        [col("order_amount", "decimal", False)],
        [
            chk("order_amount", "Minimum order amount is non-negative", "min", "P0", at_least(0.0)),
            chk("order_amount", "Maximum order amount is reasonable", "max", "P1", at_most(1000000.0)),
            chk("order_amount", "Average order value is typical", "mean", "P2", between(50.0, 500.0)),
        ],
    ),
    "patterns__p3_multi_level": (
        [col("phone_number", "string")],
        [
            chk(
                "phone_number",
                "Most customers provide phone number",
                "missing",
                "P1",
                at_most(0.20),
                **{"return": "pct"},
            ),
            chk(
                "phone_number",
                "Phone number format is valid",
                "pattern",
                "P0",
                ALL_CONFORM,
                pattern=r"^\+?[1-9]\d{1,14}$",
                format=None,
                **PATTERN_DEFAULTS,
            ),
            chk("phone_number", "Phone number length is reasonable", "min_length", "P1", at_least(10), **LENGTH_STAT),
        ],
    ),
    "patterns__p4_table_reconciliation": (
        [],
        [
            chk(None, "Daily volume within bounds", "num_rows", "P1", between(1000, 100000)),
            chk(
                None,
                "Data arrived within SLA",
                "freshness",
                "P0",
                at_most(25.0),
                max_age_hours=25.0,
                timestamp_column="order_date",
                aggregation="max",
            ),
            chk(
                None,
                "No missing daily partitions",
                "completeness",
                "P1",
                at_most(0),
                partition_column="order_date",
                granularity="daily",
                lookback_days=7,
                allow_future_gaps=True,
                max_gap_count=0,
            ),
        ],
    ),
    "patterns__p5_categorical": (
        [col("status", "string", False)],
        [
            chk("status", "Status is valid", "whitelist", "P0", ALL_CONFORM, values=STATUSES, **VALUE_DEFAULTS),
            chk("status", "Status is low-cardinality", "cardinality", "P1", at_most(10)),
        ],
    ),
}


def _files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


def _normalise(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# shared/ sits beside the repository (CI clones the repository with shared/ next to it).
SEEDS = HERE.parent.parent / "shared" / "seeds"


def _spec_text() -> str | None:
    found = sorted(SEEDS.glob(SPEC_GLOB)) if SEEDS.is_dir() else []
    return found[0].read_text(encoding="utf-8") if found else None


# ------------------------------------------------------------------------------------------- tests


def test_every_fixture_has_an_expectation_and_back() -> None:
    assert {p.stem for p in _files()} == set(EXPECTED)
    assert len(EXPECTED) == 74  # 67 "Example N:" + 5 composition patterns + 2 validator snippets


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_spec_example_loads_as_the_spec_says(stem: str) -> None:
    path = EXAMPLES / f"{stem}.yaml"
    assert path.read_text(encoding="utf-8").startswith("# Spec 000"), "first comment names the spec section"
    contract = load_contract(path)
    want_columns, want_checks = EXPECTED[stem]

    got_columns = [(c.name, c.type.kind if c.type else None, c.nullable) for c in contract.columns]
    assert got_columns == [(c["name"], c["kind"], c["nullable"]) for c in want_columns]
    for column, want in zip(contract.columns, want_columns):
        if "value" in want:
            assert column.type.value_type is not None and column.type.value_type.kind == want["value"]
        if "key" in want:
            assert column.type.key_type is not None and column.type.key_type.kind == want["key"]

    checks = list(contract.all_checks())
    assert [(c.column, c.name) for c in checks] == [(w["column"], w["name"]) for w in want_checks]
    for check, want in zip(checks, want_checks):
        where = f"{stem}: {check.name}"
        assert check.type == want["type"], where
        assert check.severity == want["severity"], where
        kind, low, high, tol = want["validator"]
        validator = check.validator
        assert validator.kind == kind, where
        assert validator.tolerance == pytest.approx(tol, rel=0, abs=1e-15), where
        if kind in ("between", "not_between"):
            assert (validator.low, validator.high) == (low, high), where
        elif kind in ("min", "equals"):
            assert validator.low == low, where
        elif kind == "max":
            assert validator.high == high, where
        for key, value in want["params"].items():
            assert _normalise(check.params.get(key)) == value, f"{where}: param {key}"


def test_default_severity_is_p1_when_omitted() -> None:
    # The spec: "Omitting severity defaults to P1". No spec example omits it, so this one is ours.
    contract = load_contract("name: t\nchecks:\n  - {name: rows, type: num_rows, min: 1}\n")
    assert next(contract.all_checks()).severity == "P1"


def test_format_shortcuts_are_the_spec_table() -> None:
    from airflow_dq_contracts.contract.checks import FORMAT_PATTERNS

    # Transcribed from the spec's "Supported Format Shortcuts" table (YAML-unescaped: "\\." is "\.").
    spec_table = {
        "email": r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
        "phone": r"^\+?[1-9]\d{1,14}$",
        "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        "url": r"^https?://[^\s/$.?#].[^\s]*$",
        "ipv4": r"^(?:[0-9]{1,3}\.){3}[0-9]{1,3}$",
        "ipv6": r"^(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$",
        "date": r"^\d{4}-\d{2}-\d{2}$",
        "datetime": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}",
    }
    assert spec_table == FORMAT_PATTERNS


def test_fixtures_cover_every_check_named_in_the_spec() -> None:
    """Cross-check against the spec text itself: every quoted check name there is in a fixture."""
    text = _spec_text()
    if text is None:
        require(False, f"{SEEDS}/{SPEC_GLOB}", "CI has the shared seeds beside the clone")
    quoted = re.findall(r'^- name: "([^"]+)"', text, flags=re.MULTILINE)
    quoted.remove("Descriptive business name")  # the "Check Structure" template, not an example
    in_fixtures = [c["name"] for _, checks in EXPECTED.values() for c in checks]
    assert collections.Counter(in_fixtures) == collections.Counter(quoted)
    headings = len(re.findall(r"^Example \d+:", text, flags=re.MULTILINE))
    patterns = len(re.findall(r"^Pattern \d+:", text, flags=re.MULTILINE))
    assert headings + patterns + 2 == len(_files())
