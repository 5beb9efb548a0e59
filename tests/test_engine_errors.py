"""Never crash on data: every unusable input gives the affected check status ``error`` with a reason,
and every other check of the same run is still computed correctly.

Covers a missing column, wrong types, an empty table, an all-NULL column, NaN, ±Infinity, a
one-value sample, integer and decimal overflow, a very long string, a Python-valid regex Java
rejects, invalid / non-boolean / failing-at-run-time filters, maps where grouping is impossible,
and a session time zone other than UTC. Expected values are computed here by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import Evaluator, evaluate

pytestmark = pytest.mark.spark

LONG = "a" * 1_000_000
BIG = 2**62
HUGE = Decimal("9" * 38)  # the largest decimal(38,0): four of them overflow the sum

EDGE_DDL = (
    "rid long, s string, nothing double, f double, g double, h double, big long, dec decimal(38,0), "
    "flag boolean, m map<string,int>, one int, ts_bad string"
)
EDGE_ROWS = [
    (0, LONG, None, 1.0, 1.0, -1.0, BIG, HUGE, True, {"a": 1}, 7, "yesterday"),
    (1, "abc", None, float("nan"), float("inf"), float("-inf"), BIG, HUGE, False, {}, None, "not a time"),
    (2, None, None, 3.0, 2.0, 5.0, BIG, HUGE, None, None, None, None),
    (3, "x7", None, -2.0, 3.0, 0.0, None, HUGE, True, {"b": 2}, None, "31/12/2024"),
]


def _col(name: str, *checks: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "checks": list(checks)}


EDGE_CONTRACT = {
    "name": "edges",
    "checks": [
        {"name": "rows", "type": "num_rows", "equals": 4, "tolerance": 0},
        {"name": "fresh bad text", "type": "freshness", "timestamp_column": "ts_bad", "max_age_hours": 1},
        {"name": "fresh long", "type": "freshness", "timestamp_column": "rid", "max_age_hours": 1},
        {"name": "dups over map", "type": "duplicates", "columns": ["rid", "m"]},
        {
            "name": "gaps of a missing column",
            "type": "completeness",
            "partition_column": "nope",
            "granularity": "daily",
        },
    ],
    "columns": [
        _col("nope", {"name": "count missing column", "type": "count"}),
        _col("ts_bad"),
        _col(
            "s",
            {"name": "mean of text", "type": "mean"},
            {"name": "min of text", "type": "min", "min": 0},
            {"name": "longest", "type": "max_length", "max": 10},
            {"name": "only letters", "type": "pattern", "pattern": "^[a-z]+$", "return": "count"},
            {"name": "python named group", "type": "pattern", "pattern": "(?P<word>[a-z]+)"},
            {"name": "bad filter", "type": "count", "filter": "rid >>> 1"},
            {"name": "numeric filter", "type": "count", "filter": "rid + 1"},
            {"name": "count in empty scope", "type": "count", "filter": "rid < 0"},
            {"name": "pct in empty scope", "type": "missing", "return": "pct", "filter": "rid < 0"},
        ),
        _col(
            "nothing",
            {"name": "mean of nulls", "type": "mean"},
            {"name": "all missing", "type": "missing", "return": "pct", "equals": 1, "tolerance": 0},
            {"name": "whitelist of nulls", "type": "whitelist", "values": [1.5]},
            {"name": "cardinality of nulls", "type": "cardinality", "equals": 0, "tolerance": 0},
        ),
        _col(
            "f",
            {"name": "mean with nan", "type": "mean"},
            {"name": "max with nan", "type": "max"},
            {"name": "min with nan", "type": "min", "min": -5},
        ),
        _col(
            "g",
            {"name": "sum to +inf, bounded", "type": "sum", "max": 10},
            {"name": "sum to +inf, open", "type": "sum", "min": 0},
        ),
        _col("h", {"name": "min is -inf", "type": "min", "min": 0}),
        _col("big", {"name": "sum beyond 2^63", "type": "sum"}),
        _col("dec", {"name": "decimal overflow", "type": "sum"}),
        _col("flag", {"name": "percentile of booleans", "type": "percentile", "percentile": 0.5}),
        _col(
            "m",
            {"name": "map duplicates", "type": "duplicates"},
            {"name": "map entries", "type": "max_length", "max": 1},
        ),
        _col("one", {"name": "variance of one value", "type": "variance"}),
        _col(
            "rid",
            {"name": "length of a number", "type": "max_length"},
            {"name": "text values on a number", "type": "whitelist", "values": [1, "abc"]},
            {"name": "row count", "type": "count", "equals": 4, "tolerance": 0},
        ),
    ],
}

# check name → (status, metric_value, failed_rows, words the message must contain)
EXPECTED: dict[str, tuple[str, float | None, int | None, tuple[str, ...]]] = {
    "rows": ("passed", 4.0, None, ()),
    "fresh bad text": ("error", None, None, ("could be read as a time",)),
    "fresh long": ("error", None, None, ("bigint", "date, timestamp")),
    "dups over map": ("error", None, None, ("map",)),
    "gaps of a missing column": ("error", None, None, ("'nope'", "not found")),
    "count missing column": ("error", None, None, ("'nope'", "not found")),
    "mean of text": ("error", None, None, ("string", "numeric")),
    "min of text": ("error", None, None, ("string",)),
    "longest": ("failed", 1_000_000.0, 1, ()),
    "only letters": ("failed", 2.0, 1, ("1 non-null value(s) do not conform",)),
    "python named group": ("error", None, None, ("Java regular expression",)),
    "bad filter": ("error", None, None, ("invalid filter",)),
    "numeric filter": ("error", None, None, ("invalid filter",)),
    "count in empty scope": ("passed", 0.0, None, ()),
    "pct in empty scope": ("error", None, 0, ("no rows",)),  # no NULL rows, but no denominator
    "mean of nulls": ("error", None, None, ("no non-null",)),
    "all missing": ("passed", 1.0, 4, ()),
    "whitelist of nulls": ("passed", 0.0, 0, ()),
    "cardinality of nulls": ("passed", 0.0, None, ()),
    "mean with nan": ("error", None, None, ("NaN",)),
    "max with nan": ("error", None, None, ("NaN",)),
    "min with nan": ("passed", -2.0, 0, ()),
    "sum to +inf, bounded": ("failed", None, None, ("+Infinity",)),
    "sum to +inf, open": ("passed", None, None, ("+Infinity",)),
    "min is -inf": ("failed", None, 2, ("-Infinity",)),
    "sum beyond 2^63": ("passed", float(3 * BIG), None, ("64-bit",)),
    "decimal overflow": ("error", None, None, ("overflow",)),
    "percentile of booleans": ("error", None, None, ("boolean", "numeric")),
    "map duplicates": ("error", None, None, ("map",)),
    "map entries": ("passed", 1.0, 0, ()),  # sizes 1, 0, NULL, 1
    "variance of one value": ("error", None, None, ("at least 2",)),
    "length of a number": ("error", None, None, ("bigint", "string, list or map")),
    "text values on a number": ("error", None, None, ("'abc'",)),
    "row count": ("passed", 4.0, None, ()),
}


@pytest.fixture(scope="module")
def edge_result(spark):
    df = spark.createDataFrame(EDGE_ROWS, EDGE_DDL)
    return evaluate(load_contract(EDGE_CONTRACT), df, "2024-06-01T00:00:00Z")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_edge_case(edge_result, name):
    record = next(r for r in edge_result.checks if r.check_name == name)
    status, metric, failed_rows, words = EXPECTED[name]
    assert record.status == status, record.message
    assert record.passed is (status == "passed")
    if metric is None:
        assert record.metric_value is None
    else:
        assert record.metric_value == pytest.approx(metric, rel=1e-12)
    assert record.failed_rows == failed_rows, record
    for word in words:
        assert word in record.message, record.message
    if status == "error":
        assert record.message


def test_every_check_of_the_edge_contract_has_an_expectation(edge_result):
    # (schema conformance adds one <column>/schema record per declared column; see test_enforcement)
    assert {r.check_name for r in edge_result.checks if r.check_type != "schema"} == set(EXPECTED)


def test_results_are_strict_json_even_with_infinities(edge_result):
    text = json.dumps(edge_result.summary(), allow_nan=False)
    assert "Infinity" not in text.replace("+Infinity", "").replace("-Infinity", "")
    assert edge_result.decision == "gate"  # errors fail closed


def test_empty_table(spark):
    df = spark.createDataFrame([], "k long, s string, x double, t timestamp, d date")
    contract = load_contract(
        {
            "name": "empty",
            "checks": [
                {"name": "no rows ok", "type": "num_rows", "min": 0},
                {"name": "rows needed", "type": "num_rows", "min": 1},
                {"name": "table dups", "type": "duplicates", "columns": ["k"]},
                {"name": "table dups pct", "type": "duplicates", "columns": ["k"], "return": "pct"},
                {"name": "fresh", "type": "freshness", "timestamp_column": "t", "max_age_hours": 1},
                {
                    "name": "gaps",
                    "type": "completeness",
                    "partition_column": "d",
                    "granularity": "daily",
                    "lookback_days": 2,
                },
            ],
            "columns": [
                _col(
                    "k",
                    {"name": "dups", "type": "duplicates", "max": 0},
                    {"name": "card", "type": "cardinality"},
                    {"name": "count", "type": "count"},
                    {"name": "mean", "type": "mean"},
                    {"name": "sum", "type": "sum"},
                    {"name": "min", "type": "min"},
                    {"name": "p50", "type": "percentile", "percentile": 0.5},
                    {"name": "var", "type": "variance"},
                ),
                _col(
                    "s",
                    {"name": "nulls", "type": "missing"},
                    {"name": "nulls pct", "type": "missing", "return": "pct"},
                    {"name": "allowed", "type": "whitelist", "values": ["a"]},
                    {"name": "allowed pct", "type": "whitelist", "values": ["a"], "return": "pct"},
                    {"name": "avg len", "type": "avg_length"},
                ),
                _col("t"),
                _col("d"),
            ],
        }
    )
    result = evaluate(contract, df, "2024-01-10T12:00:00Z")
    by_name = {r.check_name: r for r in result.checks}
    zero = ("no rows ok", "table dups", "dups", "card", "count", "nulls", "allowed")
    for name in zero:
        assert (by_name[name].status, by_name[name].metric_value) == ("passed", 0.0), name
    assert by_name["rows needed"].status == "failed"
    for name in ("table dups pct", "nulls pct", "allowed pct", "fresh", "mean", "sum", "min", "p50", "var", "avg len"):
        assert by_name[name].status == "error", name
        assert by_name[name].metric_value is None and by_name[name].message
    # daily, lookback 2, reference 01-10 12:00 → 01-08, 01-09, 01-10 expected; nothing arrived → 3 gaps
    assert (by_name["gaps"].status, by_name["gaps"].metric_value) == ("failed", 3.0)
    assert result.row_count == 0 and all(r.row_count == 0 for r in result.checks)


def test_run_level_filter_restricts_the_data_and_is_recorded(spark):
    df = spark.createDataFrame([(i, i % 3) for i in range(30)], "k long, g int")
    contract = load_contract(
        {
            "name": "scoped",
            "checks": [{"name": "rows", "type": "num_rows"}],
            "columns": [_col("k", {"name": "top", "type": "max"})],
        }
    )
    result = evaluate(contract, df, filter="g = 1")
    rows, top = [r for r in result.checks if r.check_type != "schema"]
    assert (rows.metric_value, top.metric_value) == (10.0, 28.0)  # k = 1, 4, …, 28
    assert result.filter == "g = 1" and {r.filter for r in result.checks} == {"g = 1"}
    assert result.summary()["filter"] == "g = 1"
    with pytest.raises(ValueError, match="invalid filter"):
        evaluate(contract, df, filter="g = = 1")
    with pytest.raises(ValueError, match="reference_time"):
        evaluate(contract, df, reference_time="yesterday-ish")


def test_time_is_utc_whatever_the_session_time_zone(spark):
    """Naive timestamps (timestamp_ntz, zone-less text) are UTC; aware ones keep their instant."""
    reference = "2024-03-10T12:00:00Z"
    rows = [
        (
            dt.datetime(2024, 3, 10, 10, 0),  # ntz 10:00 = 10:00Z → 2 h
            dt.datetime(2024, 3, 10, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=5))),  # 09:00Z → 3 h
            "2024-03-10 08:00:00",  # naive text = 08:00Z → 4 h
            "2024-03-10T12:30:00+05:00",  # 07:30Z
            dt.date(2024, 3, 9),
        ),  # 2024-03-09T00:00Z → 36 h
    ]
    df = spark.createDataFrame(rows, "ntz timestamp_ntz, aware timestamp, naive_text string, zoned_text string, d date")
    contract = load_contract(
        {
            "name": "zones",
            "checks": [
                {"name": "ntz", "type": "freshness", "timestamp_column": "ntz", "max_age_hours": 24},
                {"name": "aware", "type": "freshness", "timestamp_column": "aware", "max_age_hours": 24},
                {"name": "naive text", "type": "freshness", "timestamp_column": "naive_text", "max_age_hours": 24},
                {"name": "zoned text", "type": "freshness", "timestamp_column": "zoned_text", "max_age_hours": 24},
                {"name": "date", "type": "freshness", "timestamp_column": "d", "max_age_hours": 24},
            ],
            "columns": [
                _col("ntz", {"name": "ntz max", "type": "max"}),
                _col("d", {"name": "d min", "type": "min"}),
                _col("aware"),
                _col("naive_text"),
                _col("zoned_text"),
            ],
        }
    )
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        result = evaluate(contract, df, reference)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    ages = {r.check_name: r.metric_value for r in result.checks}
    assert ages["ntz"] == pytest.approx(2.0)
    assert ages["aware"] == pytest.approx(3.0)
    assert ages["naive text"] == pytest.approx(4.0)
    assert ages["zoned text"] == pytest.approx(4.5)
    assert ages["date"] == pytest.approx(36.0)
    assert next(r for r in result.checks if r.check_name == "date").status == "failed"  # 36 h > 24 h
    assert ages["ntz max"] == dt.datetime(2024, 3, 10, 10, tzinfo=dt.timezone.utc).timestamp()
    assert ages["d min"] == dt.datetime(2024, 3, 9, tzinfo=dt.timezone.utc).timestamp()


def test_data_newer_than_the_reference_time_is_an_error_naming_both_times(spark):
    """A reference before the newest data (``airflow dags test`` and ``{{ data_interval_end }}``) cannot be right:
    beyond the 5-minute clock skew the check is an error, never a pass on a negative age; within it, age 0."""
    reference = "2024-01-10T00:00:00Z"
    rows = [
        (dt.datetime(2024, 1, 10, 23, 20, tzinfo=dt.timezone.utc), dt.datetime(2024, 1, 10, 0, 3)),
        (dt.datetime(2024, 1, 9, 22, 0, tzinfo=dt.timezone.utc), dt.datetime(2024, 1, 9, 18, 0)),
    ]
    df = spark.createDataFrame(rows, "created_at timestamp, landed_at timestamp_ntz")
    contract = load_contract(
        {
            "name": "ahead",
            "checks": [
                {"name": "ahead", "type": "freshness", "timestamp_column": "created_at", "max_age_hours": 6},
                {"name": "skewed", "type": "freshness", "timestamp_column": "landed_at", "max_age_hours": 6},
            ],
        }
    )
    checks = {r.check_name: r for r in evaluate(contract, df, reference).checks}
    ahead = checks["ahead"]
    assert ahead.status == "error" and not ahead.passed
    assert "max(created_at) = 2024-01-10T23:20:00Z is 23.333 h after the reference time 2024-01-10T00:00:00Z" in (
        ahead.message
    )
    assert "airflow dags test" in ahead.message and "reference_time" in ahead.message
    skewed = checks["skewed"]  # 3 minutes after the reference: clock skew, the age is 0
    assert skewed.status == "passed" and skewed.metric_value == 0.0


def test_scan_fallback_keeps_the_other_metrics(spark):
    """A filter that only fails while running (ANSI cast) breaks the shared scan: the evaluator
    re-runs metric by metric and errors just that check."""
    df = spark.createDataFrame([("1",), ("x",), (None,)], "s string")
    contract = load_contract(
        {
            "name": "fallback",
            "columns": [
                _col(
                    "s",
                    {"name": "casting filter", "type": "count", "filter": "cast(s as int) > 0"},
                    {"name": "nulls", "type": "missing"},
                    {"name": "count", "type": "count"},
                )
            ],
        }
    )
    evaluator = Evaluator(contract, df)
    result = evaluator.run()
    by_name = {r.check_name: r for r in result.checks}
    assert by_name["casting filter"].status == "error"
    assert (by_name["nulls"].metric_value, by_name["count"].metric_value) == (1.0, 2.0)
    assert "fallback" in next(s for s in evaluator.stats if s.name == "scan").detail
    assert not math.isnan(result.row_count)
