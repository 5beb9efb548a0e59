"""Every check type, every return mode and per-check filters, against plain-Python references.

One contract of ~80 checks over generated rows (nulls, duplicates, case variants, empty strings,
unicode, lists, maps, negative numbers, timestamps in three zones, naive timestamps, timestamp
text, dates) is evaluated once; each check's metric, failed_rows, row_count and verdict is
compared with :mod:`engine_fixtures`' plain-Python computation over the same rows, and
``annotate`` must tag exactly the rows the reference says break each failed row-level check.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from engine_fixtures import (
    REFERENCE_TEXT,
    Expected,
    close,
    expected_for,
    in_scope,
    make_rows,
    to_df,
    verdict,
)

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import annotate, evaluate

pytestmark = pytest.mark.spark

# (column or None, column kind for value conversions, check without a name, hand-computed metric or None)
# Completeness metrics are hand-computed from how make_rows lays out partitions (see its constants):
#  * day: 2024-01-05 … 01-20 present except 01-13 and 01-15; reference 2024-01-20T06:00Z.
#    daily, lookback 10 → expected 01-10 … 01-20, missing 13 and 15 → 2.
#    weekly, lookback 21 → ISO weeks of 12-25, 01-01, 01-08, 01-15; 12-25 missing → 1.
#    monthly, lookback 40 → Dec 2023 and Jan 2024; Dec missing → 1.
#  * event_hour: whole hours 0…29 back except 3 and 7 (hour = rid % 30).
#    hourly, lookback 1 → 25 hours (06:00 the day before … 06:00); 3 and 7 missing → 2.
#    with filter rid % 2 = 0 only even offsets remain: the 12 odd offsets 1…23 are missing → 12.
CASES: list[tuple[str | None, str, dict[str, Any], float | None]] = [
    # ---- table level
    (None, "", {"type": "num_rows", "between": [100, 1000]}, None),
    (None, "", {"type": "num_rows", "min": 500, "filter": "qty > 2"}, None),
    (None, "", {"type": "duplicates", "columns": ["user", "region"], "max": 10}, None),
    (
        None,
        "",
        {"type": "duplicates", "columns": ["user", "region"], "return": "pct", "max": 0.5, "filter": "region = 'eu'"},
        None,
    ),
    (None, "", {"type": "duplicates", "columns": ["id"], "max": 0, "severity": "P0"}, None),
    (None, "", {"type": "freshness", "timestamp_column": "created_at", "max_age_hours": 1}, None),
    (
        None,
        "",
        {"type": "freshness", "timestamp_column": "created_at", "max_age_hours": 300, "aggregation": "min"},
        None,
    ),
    (None, "", {"type": "freshness", "timestamp_column": "local_ts", "max_age_hours": 0.5}, None),
    (None, "", {"type": "freshness", "timestamp_column": "ts_text", "max_age_hours": 24}, None),
    (None, "", {"type": "freshness", "timestamp_column": "day", "max_age_hours": 12}, None),
    (
        None,
        "",
        {"type": "freshness", "timestamp_column": "created_at", "max_age_hours": 5, "filter": "region = 'eu'"},
        None,
    ),
    (None, "", {"type": "completeness", "partition_column": "day", "granularity": "daily", "lookback_days": 10}, 2.0),
    (
        None,
        "",
        {
            "type": "completeness",
            "partition_column": "day",
            "granularity": "weekly",
            "lookback_days": 21,
            "max_gap_count": 1,
        },
        1.0,
    ),
    (None, "", {"type": "completeness", "partition_column": "day", "granularity": "monthly", "lookback_days": 40}, 1.0),
    (
        None,
        "",
        {
            "type": "completeness",
            "partition_column": "day_text",
            "granularity": "daily",
            "lookback_days": 10,
            "allow_future_gaps": False,
            "max_gap_count": 2,
        },
        2.0,
    ),
    (
        None,
        "",
        {"type": "completeness", "partition_column": "event_hour", "granularity": "hourly", "lookback_days": 1},
        2.0,
    ),
    (
        None,
        "",
        {
            "type": "completeness",
            "partition_column": "event_hour",
            "granularity": "hourly",
            "lookback_days": 1,
            "filter": "rid % 2 = 0",
        },
        12.0,
    ),
    # ---- id (bigint with duplicates and NULLs)
    ("id", "number", {"type": "duplicates", "max": 0}, None),
    ("id", "number", {"type": "duplicates", "return": "pct", "max": 0.01, "filter": "region = 'eu'"}, None),
    ("id", "number", {"type": "cardinality", "min": 10}, None),
    ("id", "number", {"type": "cardinality", "max": 50, "filter": "qty > 2"}, None),
    ("id", "number", {"type": "count", "between": [380, 400]}, None),
    ("id", "number", {"type": "min", "min": 1005}, None),
    ("id", "number", {"type": "sum"}, None),
    ("id", "number", {"type": "missing", "equals": 0, "tolerance": 0}, None),
    # ---- status (strings: case variants, empty string, unicode, NULL)
    ("status", "string", {"type": "whitelist", "values": ["pending", "shipped", "cancelled"]}, None),
    (
        "status",
        "string",
        {
            "type": "whitelist",
            "values": ["PENDING", "shipped", "Cancelled", "ÜNÏCODE"],
            "case_sensitive": False,
            "return": "pct",
            "min": 0.9,
        },
        None,
    ),
    ("status", "string", {"type": "blacklist", "values": ["bogus", ""], "return": "count", "min": 10}, None),
    ("status", "string", {"type": "blacklist", "values": ["BOGUS"], "case_sensitive": False, "severity": "P2"}, None),
    ("status", "string", {"type": "missing", "return": "pct", "max": 0.05}, None),
    ("status", "string", {"type": "missing", "filter": "qty > 2", "max": 1000}, None),
    ("status", "string", {"type": "min_length", "return": "count", "length_min": 1, "min": 300}, None),
    ("status", "string", {"type": "cardinality", "equals": 8, "tolerance": 0}, None),
    ("status", "string", {"type": "duplicates", "return": "count", "filter": "region = 'eu'"}, None),
    # ---- qty (int with negatives)
    ("qty", "number", {"type": "whitelist", "values": [1, 2, 3, "4"], "return": "pct", "min": 0.5}, None),
    ("qty", "number", {"type": "blacklist", "values": [-3, -2, -1], "severity": "P3"}, None),
    ("qty", "number", {"type": "blacklist", "values": ["0", 10], "return": "pct", "max": 0.1}, None),
    ("qty", "number", {"type": "mean", "between": [0, 10]}, None),
    ("qty", "number", {"type": "variance", "max": 5}, None),
    ("qty", "number", {"type": "stddev", "min": 1}, None),
    ("qty", "number", {"type": "percentile", "percentile": 0.5, "between": [2, 6]}, None),
    ("qty", "number", {"type": "percentile", "percentile": 0.9}, None),
    ("qty", "number", {"type": "max", "max": 9}, None),
    ("qty", "number", {"type": "sum", "filter": "amount < 0", "max": 0}, None),
    ("qty", "number", {"type": "count", "filter": "region = 'eu'"}, None),
    # ---- amount (double with negatives)
    ("amount", "number", {"type": "mean", "not_between": [0, 100]}, None),
    ("amount", "number", {"type": "mean", "equals": 200, "tolerance": 1000}, None),
    ("amount", "number", {"type": "sum", "min": 0}, None),
    ("amount", "number", {"type": "min", "min": -50}, None),
    ("amount", "number", {"type": "max", "between": [0, 400]}, None),
    ("amount", "number", {"type": "variance"}, None),
    ("amount", "number", {"type": "stddev", "filter": "region = 'eu'"}, None),
    ("amount", "number", {"type": "percentile", "percentile": 0.25}, None),
    ("amount", "number", {"type": "percentile", "percentile": 1.0, "max": 600}, None),
    ("amount", "number", {"type": "percentile", "percentile": 0.0, "filter": "qty > 2"}, None),
    # ---- price (decimal)
    ("price", "number", {"type": "sum"}, None),
    ("price", "number", {"type": "mean", "between": [400, 600]}, None),
    ("price", "number", {"type": "min", "min": 0}, None),
    ("price", "number", {"type": "max", "max": 990}, None),
    ("price", "number", {"type": "percentile", "percentile": 0.75}, None),
    # ---- email (patterns: format shortcut, explicit regex with a flag, implicit all-conform)
    ("email", "string", {"type": "pattern", "format": "email", "return": "pct", "min": 0.5}, None),
    (
        "email",
        "string",
        {"type": "pattern", "pattern": "^[a-z0-9]+@example\\.(com|org)$", "flags": ["IGNORECASE"], "return": "count"},
        None,
    ),
    ("email", "string", {"type": "pattern", "pattern": "@"}, None),
    ("email", "string", {"type": "pattern", "pattern": "^user", "filter": "qty > 2", "return": "pct"}, None),
    # ---- name (unicode: accents, CJK, emoji, spaces, empty strings)
    ("name", "string", {"type": "min_length", "min": 1}, None),
    ("name", "string", {"type": "max_length", "max": 10}, None),
    ("name", "string", {"type": "avg_length", "between": [3, 9]}, None),
    ("name", "string", {"type": "max_length", "return": "pct", "length_max": 8, "min": 0.5}, None),
    ("name", "string", {"type": "avg_length", "return": "count", "length_min": 2, "length_max": 5}, None),
    ("name", "string", {"type": "min_length", "return": "count"}, None),
    ("name", "string", {"type": "avg_length", "return": "pct", "length_min": 1, "filter": "qty > 2"}, None),
    ("name", "string", {"type": "whitelist", "values": [""], "return": "count"}, None),
    # ---- tags (list) and props (map)
    ("tags", "list", {"type": "avg_length", "max": 1}, None),
    ("tags", "list", {"type": "max_length", "max": 3}, None),
    ("tags", "list", {"type": "min_length", "return": "pct", "length_min": 1, "min": 0.9}, None),
    ("tags", "list", {"type": "missing", "return": "pct"}, None),
    ("props", "map", {"type": "max_length", "equals": 3}, None),
    ("props", "map", {"type": "min_length", "min": 1}, None),
    ("props", "map", {"type": "avg_length", "filter": "region = 'eu'"}, None),
    # ---- times: min/max are epoch seconds (UTC)
    ("created_at", "time", {"type": "min"}, None),
    ("created_at", "time", {"type": "max", "max": 1705708800}, None),  # 2024-01-20T00:00Z
    ("local_ts", "time", {"type": "max"}, None),
    ("day", "time", {"type": "min", "min": 1704499200}, None),  # 2024-01-06 → the 01-05 rows violate
    ("day", "time", {"type": "max"}, None),
    ("ts_text", "string", {"type": "missing"}, None),
    ("ts_text", "string", {"type": "pattern", "format": "date", "return": "count"}, None),
]


def _named(cases: list) -> list[tuple[str | None, str, dict[str, Any], float | None]]:
    out = []
    for index, (column, kind, check, hand) in enumerate(cases):
        out.append((column, kind, {"name": f"{check['type']} case {index}", **check}, hand))
    return out


NAMED = _named(CASES)
TABLE_TYPES_SEEN = {c[2]["type"] for c in NAMED if c[0] is None}
COLUMN_TYPES_SEEN = {c[2]["type"] for c in NAMED if c[0] is not None}


def contract_dict() -> dict[str, Any]:
    columns: dict[str, list[dict[str, Any]]] = {}
    table: list[dict[str, Any]] = []
    for column, _, check, _ in NAMED:
        if column is None:
            table.append(check)
        else:
            columns.setdefault(column, []).append(check)
    declared = [
        "rid",
        "id",
        "user",
        "region",
        "status",
        "qty",
        "amount",
        "price",
        "email",
        "name",
        "tags",
        "props",
        "created_at",
        "local_ts",
        "ts_text",
        "day",
        "day_text",
        "event_hour",
    ]
    return {
        "name": "engine_conformance",
        "version": "1.0.0",
        "checks": table,
        "columns": [{"name": name, "checks": columns.get(name, [])} for name in declared],
    }


def _expected(case: tuple, rows: list[dict[str, Any]]) -> Expected:
    column, kind, check, hand = case
    if hand is not None:  # completeness: hand-computed from the partition layout
        return Expected(hand, None, len(in_scope(rows, check)))
    return expected_for(check, column, rows, kind)


@pytest.fixture(scope="module")
def evaluation(spark):
    rows = make_rows()
    df = to_df(spark, rows)
    contract = load_contract(contract_dict())
    result = evaluate(contract, df, REFERENCE_TEXT)
    tagged = {
        row["rid"]: row["_dq_violations"]
        for row in annotate(contract, df, result).select("rid", "_dq_violations").collect()
    }
    by_name = {(r.column, r.check_name): r for r in result.checks}
    return rows, contract, result, by_name, tagged


def test_every_check_type_and_return_mode_is_covered():
    assert {"num_rows", "duplicates", "freshness", "completeness"} == TABLE_TYPES_SEEN
    assert {
        "cardinality",
        "min",
        "max",
        "mean",
        "sum",
        "count",
        "variance",
        "stddev",
        "percentile",
        "missing",
        "duplicates",
        "whitelist",
        "blacklist",
        "pattern",
        "min_length",
        "max_length",
        "avg_length",
    } == COLUMN_TYPES_SEEN
    for kind in (
        "missing",
        "duplicates",
        "whitelist",
        "blacklist",
        "pattern",
        "min_length",
        "max_length",
        "avg_length",
    ):
        modes = {c[2].get("return") for c in NAMED if c[2]["type"] == kind and c[0] is not None}
        assert {"pct"} & modes and ({"count", None} & modes), (kind, modes)


@pytest.mark.parametrize("case", NAMED, ids=[f"{c[0] or 'table'}-{c[2]['name']}" for c in NAMED])
def test_check_matches_plain_python(evaluation, case):
    rows, _, _, by_name, _ = evaluation
    column, kind, check, hand = case
    record = by_name[(column, check["name"])]
    want = _expected(case, rows)
    assert record.row_count == want.row_count
    if want.error:
        assert record.status == "error", record
        assert record.metric_value is None and record.message
        return
    assert record.status in ("passed", "failed"), record.message
    if check["type"] == "percentile" and check.get("approximate"):
        raise AssertionError("approximate percentiles are tested separately")
    assert close(record.metric_value, want.metric), (record.metric_value, want.metric)
    assert record.failed_rows == want.failed_rows
    expected_pass = verdict(check, want.metric, want.failed_rows)
    assert record.passed is expected_pass, record.message
    assert record.status == ("passed" if expected_pass else "failed")
    if not expected_pass:
        assert record.message


def test_annotate_tags_exactly_the_violating_rows_of_failed_checks(evaluation):
    rows, contract, result, by_name, tagged = evaluation
    assert set(tagged) == {r["rid"] for r in rows}  # one output row per input row
    expected: dict[int, set[str]] = {r["rid"]: set() for r in rows}
    row_level_failed = 0
    for column, kind, check, hand in NAMED:
        record = by_name[(column, check["name"])]
        want = _expected((column, kind, check, hand), rows)
        if want.violating is None or record.status != "failed":
            continue
        row_level_failed += 1
        for rid in want.violating:
            expected[rid].add(record.check_id)
    assert row_level_failed >= 10  # the data is built so that many row-level checks fail
    actions = {c.check_id: (c.name, c.type, c.severity, c.action) for c in contract.all_checks()}
    for rid, violations in tagged.items():
        assert {v["check_id"] for v in violations} == expected[rid], rid
        for v in violations:
            assert (v["check_name"], v["check_type"], v["severity"], v["action"]) == actions[v["check_id"]]


def test_failed_rows_of_row_level_checks_match_the_tagged_rows(evaluation):
    _, _, result, _, tagged = evaluation
    per_check: dict[str, int] = {}
    for violations in tagged.values():
        for v in violations:
            per_check[v["check_id"]] = per_check.get(v["check_id"], 0) + 1
    for record in result.checks:
        if record.status == "failed" and record.check_id in per_check:
            assert per_check[record.check_id] == record.failed_rows, record.check_id


def test_table_level_failures_never_tag_rows(evaluation):
    _, _, result, _, tagged = evaluation
    table_ids = {r.check_id for r in result.checks if r.column is None}
    assert any(r.status == "failed" for r in result.checks if r.column is None)
    assert not {v["check_id"] for vs in tagged.values() for v in vs} & table_ids


def test_summary_is_strict_json_with_one_record_per_check(evaluation):
    _, contract, result, _, _ = evaluation
    summary = result.summary()
    text = json.dumps(summary, allow_nan=False)
    assert len(json.loads(text)["checks"]) == sum(1 for _ in contract.evaluated_checks())
    assert summary["row_count"] == 400
    assert {c["check_id"] for c in summary["checks"]} == {c.check_id for c in contract.evaluated_checks()}
    for record in summary["checks"]:
        value = record["metric_value"]
        assert value is None or math.isfinite(value)
    counts = summary["counts"]
    assert counts["passed"] + counts["failed"] + counts["error"] == len(summary["checks"])
    assert summary["decision"] == "gate"  # a P0 table-level duplicates check fails


def test_approximate_percentile_returns_a_value_of_the_column_near_the_rank(spark):
    values = [float(v) for v in range(1, 1001)]
    df = spark.createDataFrame([(v,) for v in values], "x double")
    contract = load_contract(
        {
            "name": "approx",
            "columns": [
                {
                    "name": "x",
                    "checks": [
                        {"name": "p90 approx", "type": "percentile", "percentile": 0.9, "approximate": True},
                        {"name": "p90 exact", "type": "percentile", "percentile": 0.9},
                    ],
                }
            ],
        }
    )
    result = evaluate(contract, df)
    approx, exact = [r for r in result.checks if r.check_type == "percentile"]  # (x/schema first)
    assert exact.metric_value == pytest.approx(900.1)  # 1 + 0.9 * 999
    assert approx.metric_value in values and abs(approx.metric_value - 900) <= 1
