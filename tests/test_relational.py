"""The third family on real Spark + Delta: referential (plain and SCD-2 as of), reconciliation,
row/table conditions and sql checks; expected values from plain Python (tests/relational_fixtures.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from relational_fixtures import (
    DIM_DDL,
    FACT_DDL,
    day,
    make_dimension,
    make_facts,
    orphans,
    row_condition_violations,
)
from test_engine_scan import _plan

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.engine import Evaluator, annotate, evaluate
from airflow_dq_contracts.engine.relational import UnsafeQuery, safe_query
from airflow_dq_contracts.engine.runner import run_contract

pytestmark = pytest.mark.spark

FACTS = make_facts()
DIM = make_dimension()
AS_OF = {"column": "event_time", "valid_from": "valid_from", "valid_to": "valid_to"}


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """The facts, the dimension and a 'source' copy of the facts as real Delta tables."""
    root = tmp_path_factory.mktemp("relational")
    paths = {name: str(root / name) for name in ("orders", "customers", "source")}
    spark.createDataFrame(FACTS, FACT_DDL).write.format("delta").save(paths["orders"])
    spark.createDataFrame(DIM, DIM_DDL).write.format("delta").save(paths["customers"])
    # The source system lost the orders with an id divisible by 50 (a silent partition drop).
    spark.createDataFrame([r for r in FACTS if r["order_id"] % 50], FACT_DDL).write.format("delta").save(
        paths["source"]
    )
    return paths


@pytest.fixture(scope="module")
def frames(spark, tables):
    return {name: spark.read.format("delta").load(path) for name, path in tables.items()}


def _contract(checks: list[dict[str, Any]], **references: Any) -> Any:
    refs = references or {"customers": {"path": "/unused", "format": "delta"}}
    return load_contract({"name": "orders", "references": refs, "checks": checks})


def _by_name(result) -> dict[str, Any]:
    return {r.check_name: r for r in result.checks}


def _tagged_ids(contract, df, result, references) -> dict[str, set[int]]:
    rows = annotate(contract, df, result, references).select("order_id", "_dq_violations").collect()
    out: dict[str, set[int]] = {}
    for row in rows:
        for violation in row["_dq_violations"]:
            out.setdefault(violation["check_name"], set()).add(row["order_id"])
    return out


# ---------------------------------------------------------------------------------- referential


def test_referential_orphans_plain_as_of_composite_and_nulls(frames):
    checks = [
        {"name": "plain", "type": "referential", "columns": ["customer_id"], "reference": "customers"},
        {
            "name": "plain pct",
            "type": "referential",
            "columns": ["customer_id"],
            "reference": "customers",
            "return": "pct",
            "max": 0.5,
        },
        {
            "name": "nulls fail",
            "type": "referential",
            "columns": ["customer_id"],
            "reference": "customers",
            "nulls": "fail",
        },
        {"name": "as of", "type": "referential", "columns": ["customer_id"], "reference": "customers", "as_of": AS_OF},
        {
            "name": "composite",
            "type": "referential",
            "columns": ["customer_id", "region"],
            "reference": "customers",
            "reference_columns": ["customer_id", "region"],
        },
        {
            "name": "eu only",
            "type": "referential",
            "columns": ["customer_id"],
            "reference": "customers",
            "filter": "region = 'eu'",
        },
    ]
    contract = _contract(checks)
    refs = {"customers": frames["customers"]}
    result = evaluate(contract, frames["orders"], references=refs)
    got = _by_name(result)

    expected = {
        "plain": orphans(FACTS, DIM, ["customer_id"]),
        "nulls fail": orphans(FACTS, DIM, ["customer_id"], nulls_fail=True),
        "as of": orphans(FACTS, DIM, ["customer_id"], as_of=True),
        "composite": orphans(FACTS, DIM, ["customer_id", "region"]),
        "eu only": orphans([r for r in FACTS if r["region"] == "eu"], DIM, ["customer_id"]),
    }
    # The data exercises what it claims to: NULL keys, gaps, boundaries, overlaps.
    assert expected["as of"] - expected["plain"] and expected["plain"] < expected["nulls fail"]
    assert expected["composite"] - expected["plain"]
    for name, ids in expected.items():
        record = got[name]
        assert record.status == "failed", (name, record.message)
        assert record.metric_value == len(ids), name
        assert record.failed_rows == len(ids), name
    assert got["plain pct"].metric_value == pytest.approx(len(expected["plain"]) / len(FACTS))
    assert got["plain pct"].status == "passed"
    assert "NULL key" in got["plain"].message

    tagged = _tagged_ids(contract, frames["orders"], result, refs)
    for name, ids in expected.items():
        assert tagged.get(name, set()) == ids, name
    assert "plain pct" not in tagged  # passed: tags nothing


def test_as_of_interval_convention_at_the_bounds(frames):
    """valid_from is inclusive, valid_to exclusive, NULL valid_to open, gaps orphan, overlaps match."""
    contract = _contract(
        [{"name": "as of", "type": "referential", "columns": ["customer_id"], "reference": "customers", "as_of": AS_OF}]
    )
    refs = {"customers": frames["customers"]}
    result = evaluate(contract, frames["orders"], references=refs)
    tagged = _tagged_ids(contract, frames["orders"], result, refs).get("as of", set())
    # Hand-written, from the dimension's shapes: customer 1 (kind 1) has a gap [day 20, day 25).
    cases = {
        (1, 20): True,
        (1, 25): False,
        (1, 10): False,
        (1, 45): False,  # gap start orphan, 25 open again
        (3, 40): True,
        (3, 30): False,  # valid_to exclusive
        (5, 10): False,
        (2, 30): False,
        (2, 45): True,
    }  # 5: open from day 10; 2: overlap
    seen = 0
    for row in FACTS:
        for (cid, n), orphan in cases.items():
            if row["customer_id"] == cid and row["event_time"] == day(n):
                assert (row["order_id"] in tagged) is orphan, (cid, n)
                seen += 1
    assert seen == len(cases)


def test_referential_reference_missing_or_wrong_is_a_check_error(frames):
    contract = _contract(
        [
            {"name": "no ref", "type": "referential", "columns": ["customer_id"], "reference": "customers"},
            {"name": "rows", "type": "num_rows", "min": 1},
        ]
    )
    got = _by_name(evaluate(contract, frames["orders"]))
    assert got["no ref"].status == "error" and "not given" in got["no ref"].message
    assert got["rows"].status == "passed"
    wrong = _contract(
        [
            {
                "name": "bad col",
                "type": "referential",
                "columns": ["customer_id"],
                "reference": "customers",
                "reference_columns": ["nope"],
            }
        ]
    )
    record = _by_name(evaluate(wrong, frames["orders"], references={"customers": frames["customers"]}))["bad col"]
    assert record.status == "error" and "'nope' not found in reference 'customers'" in record.message


def test_reference_filter_applies(frames):
    contract = _contract(
        [{"name": "current", "type": "referential", "columns": ["customer_id"], "reference": "customers"}],
        customers={"path": "/unused", "filter": "valid_to IS NULL"},
    )
    current = [d for d in DIM if d["valid_to"] is None]
    record = _by_name(evaluate(contract, frames["orders"], references={"customers": frames["customers"]}))["current"]
    assert record.metric_value == len(orphans(FACTS, current, ["customer_id"]))


def test_p1_orphans_are_quarantined_exactly_and_rows_are_conserved(spark, tables, tmp_path):
    contract = load_contract(
        {
            "name": "orders",
            "dataset": {"path": tables["orders"], "format": "delta"},
            "references": {"customers": {"path": tables["customers"], "format": "delta"}},
            "checks": [
                {
                    "name": "known customer",
                    "type": "referential",
                    "columns": ["customer_id"],
                    "reference": "customers",
                    "as_of": AS_OF,
                    "severity": "P1",
                },
                {
                    "name": "positive paid",
                    "type": "row_condition",
                    "condition": "amount > 0 AND status <> 'x'",
                    "null_passes": True,
                    "severity": "P2",
                },
            ],
        }
    )
    quarantine, valid = str(tmp_path / "q"), str(tmp_path / "v")
    for _ in range(2):  # the same run id twice replaces its rows
        result = run_contract(spark, contract, run_id="rel-1", quarantine_table=quarantine, valid_table=valid)
    assert result.decision == "quarantine"
    expected = orphans(FACTS, DIM, ["customer_id"], as_of=True)
    q = spark.read.format("delta").load(quarantine)
    v = spark.read.format("delta").load(valid)
    assert {r["order_id"] for r in q.collect()} == expected
    assert q.count() == len(expected) and q.count() + v.count() == len(FACTS)


def test_cli_reference_override_and_no_abbreviations(spark, tables, tmp_path, capsys):
    from airflow_dq_contracts.cli.main import build_parser, main
    from airflow_dq_contracts.runspec import parse_reference_override

    assert parse_reference_override("customers=s3://b/dim:delta") == ("customers", "s3://b/dim", "delta")
    assert parse_reference_override("customers=s3://b/dim") == ("customers", "s3://b/dim", None)
    assert parse_reference_override("c=/data/x:y") == ("c", "/data/x:y", None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "c.yaml", "--reference-t", "2024-01-01"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "c.yaml", "--ref", "x=y"])
    args = build_parser().parse_args(["run", "c.yaml", "--reference", "customers=/x", "--reference-time", "2024"])
    assert args.reference == ["customers=/x"] and args.reference_time == "2024"

    contract_path = tmp_path / "c.yaml"
    contract_path.write_text(
        "name: orders\n"
        "references: {customers: {path: /does/not/exist, format: parquet}}\n"
        "checks:\n"
        "  - {name: known, type: referential, columns: [customer_id], reference: customers, severity: P2}\n"
    )
    out = tmp_path / "summary.json"
    code = main(
        [
            "run",
            str(contract_path),
            "--input",
            tables["orders"],
            "--input-format",
            "delta",
            "--reference",
            f"customers={tables['customers']}:delta",
            "--json-out",
            str(out),
            "-q",
        ]
    )
    import json

    summary = json.loads(out.read_text())
    assert code == 0, capsys.readouterr().err
    assert summary["checks"][0]["metric_value"] == len(orphans(FACTS, DIM, ["customer_id"]))
    # Without the override the declared (missing) path is read: the check errors, the run does not crash.
    code = main(["run", str(contract_path), "--input", tables["orders"], "--json-out", str(out), "-q"])
    summary = json.loads(out.read_text())
    assert code == 0 and summary["checks"][0]["status"] == "error"
    assert "cannot read" in summary["checks"][0]["message"]
    assert main(["run", str(contract_path), "--input", tables["orders"], "--reference", "nope=/x", "-q"]) == 1


# ---------------------------------------------------------------------------------- reconciliation


def test_reconciliation_in_and_out_of_tolerance(frames):
    source = [r for r in FACTS if r["order_id"] % 50]
    ours_sum = sum(r["amount"] for r in FACTS if r["amount"] is not None)
    theirs_sum = sum(r["amount"] for r in source if r["amount"] is not None)
    checks = [
        {"name": "count diff", "type": "reconciliation", "reference": "source", "measure": "count"},
        {
            "name": "count pct loose",
            "type": "reconciliation",
            "reference": "source",
            "measure": "count",
            "return": "pct_diff",
            "between": [-0.05, 0.05],
        },
        {
            "name": "count pct tight",
            "type": "reconciliation",
            "reference": "source",
            "measure": "count",
            "return": "pct_diff",
            "between": [-0.005, 0.005],
        },
        {
            "name": "sum",
            "type": "reconciliation",
            "reference": "source",
            "measure": "sum",
            "column": "amount",
            "equals": 0,
            "tolerance": 1e-6,
        },
        {
            "name": "distinct customers",
            "type": "reconciliation",
            "reference": "source",
            "measure": "count_distinct",
            "column": "customer_id",
        },
        {
            "name": "paid only",
            "type": "reconciliation",
            "reference": "paid",
            "measure": "count",
            "filter": "status = 'paid'",
        },
    ]
    contract = _contract(checks, source={"path": "/s"}, paid={"path": "/s", "filter": "status = 'paid'"})
    got = _by_name(
        evaluate(contract, frames["orders"], references={"source": frames["source"], "paid": frames["source"]})
    )
    dropped = len(FACTS) - len(source)
    assert got["count diff"].metric_value == dropped and got["count diff"].status == "failed"
    assert got["count pct loose"].metric_value == pytest.approx(dropped / len(source))
    assert got["count pct loose"].status == "passed"
    assert got["count pct tight"].status == "failed"
    assert got["sum"].metric_value == pytest.approx(ours_sum - theirs_sum)
    assert ("failed" if abs(ours_sum - theirs_sum) > 1e-6 else "passed") == got["sum"].status
    distinct = lambda rows: len({r["customer_id"] for r in rows} - {None})  # noqa: E731
    assert got["distinct customers"].metric_value == distinct(FACTS) - distinct(source)
    paid_ours = sum(1 for r in FACTS if r["status"] == "paid")
    paid_theirs = sum(1 for r in source if r["status"] == "paid")
    assert got["paid only"].metric_value == paid_ours - paid_theirs
    assert "ours" in got["count diff"].message and "theirs" in got["count diff"].message


def test_reconciliation_equal_sides_pass(frames):
    contract = _contract(
        [
            {
                "name": "same",
                "type": "reconciliation",
                "reference": "copy",
                "measure": "sum",
                "column": "amount",
                "return": "pct_diff",
                "between": [-0.005, 0.005],
            }
        ],
        copy={"path": "/c"},
    )
    record = _by_name(evaluate(contract, frames["orders"], references={"copy": frames["orders"]}))["same"]
    assert record.status == "passed" and record.metric_value == pytest.approx(0.0)


# ---------------------------------------------------------------------------------- conditions


def test_row_and_table_conditions_with_nulls(frames):
    n = len(FACTS)
    amounts = [r["amount"] for r in FACTS if r["amount"] is not None]
    checks = [
        {"name": "strict", "type": "row_condition", "condition": "amount > 0 AND status <> 'x'"},
        {
            "name": "lenient",
            "type": "row_condition",
            "condition": "amount > 0 AND status <> 'x'",
            "null_passes": True,
            "return": "pct",
            "max": 1,
        },
        {"name": "avg and count", "type": "table_condition", "condition": "avg(amount) < 1000 AND count(*) > 10"},
        {"name": "impossible", "type": "table_condition", "condition": f"count(*) > {n}"},
        {"name": "null cond", "type": "table_condition", "condition": "max(CASE WHEN false THEN 1 END) > 0"},
        {"name": "not boolean", "type": "table_condition", "condition": "avg(amount)"},
        {"name": "not aggregate", "type": "table_condition", "condition": "amount > 0"},
        {"name": "aggregate per row", "type": "row_condition", "condition": "count(*) > 0"},
        {"name": "bad column", "type": "row_condition", "condition": "nope > 0"},
    ]
    contract = _contract(checks)
    result = evaluate(contract, frames["orders"])
    got = _by_name(result)
    strict, lenient = row_condition_violations(FACTS, False), row_condition_violations(FACTS, True)
    assert lenient < strict
    assert got["strict"].metric_value == len(strict) and got["strict"].status == "failed"
    assert got["lenient"].metric_value == pytest.approx(len(lenient) / n) and got["lenient"].status == "passed"
    assert got["avg and count"].status == ("passed" if sum(amounts) / len(amounts) < 1000 and n > 10 else "failed")
    assert got["impossible"].status == "failed" and got["impossible"].metric_value == 0
    assert got["null cond"].status == "failed" and "NULL" in got["null cond"].message
    for name in ("not boolean", "not aggregate", "aggregate per row", "bad column"):
        assert got[name].status == "error", (name, got[name].message)
    tagged = _tagged_ids(contract, frames["orders"], result, {})
    assert tagged["strict"] == strict and "lenient" not in tagged


# ---------------------------------------------------------------------------------- sql


def test_sql_value_and_rows(frames):
    negative = sum(1 for r in FACTS if r["amount"] is not None and r["amount"] < 0)
    plain = orphans(FACTS, DIM, ["customer_id"])
    checks = [
        {"name": "negatives", "type": "sql", "query": "SELECT count(*) FROM {dataset} WHERE amount < 0", "max": 0},
        {
            "name": "negatives ok",
            "type": "sql",
            "query": "SELECT count(*) FROM {dataset} WHERE amount < 0;",
            "max": len(FACTS),
        },
        {
            "name": "orphans",
            "type": "sql",
            "return": "rows",
            "query": "WITH o AS (SELECT * FROM {dataset} WHERE customer_id IS NOT NULL)\n"
            "SELECT o.order_id FROM o LEFT ANTI JOIN {customers} c ON o.customer_id = c.customer_id -- orphans",
        },
        {"name": "two rows", "type": "sql", "query": "SELECT 1 AS v UNION ALL SELECT 2", "min": 0},
        {"name": "text", "type": "sql", "query": "SELECT 'a' AS v", "min": 0},
    ]
    contract = _contract(checks)
    got = _by_name(evaluate(contract, frames["orders"], references={"customers": frames["customers"]}))
    assert got["negatives"].metric_value == negative and got["negatives"].status == "failed"
    assert got["negatives ok"].status == "passed"
    assert got["orphans"].metric_value == len(plain) and got["orphans"].status == "failed"
    assert "order_id=" in got["orphans"].message
    assert got["two rows"].status == "error" and "exactly one row" in got["two rows"].message
    assert got["text"].status == "error" and "numeric" in got["text"].message
    spark = frames["orders"].sparkSession
    assert not [t.name for t in spark.catalog.listTables() if t.name.startswith("_dq_")]  # views dropped


HOSTILE = [
    "SELECT 1; DROP TABLE canary",
    "SELECT 1 AS v) AS a; DROP TABLE canary; SELECT * FROM (SELECT 1",
    "WITH x AS (SELECT 1 AS v) INSERT INTO canary SELECT * FROM x",
    "SELECT * FROM does_not_exist",
    "SELECT count(* FROM {dataset}",
    "SELECT reflect('java.lang.System', 'exit', '1')",
    "SELECT 1 -- ) AS a; DROP TABLE canary",
]


def test_hostile_sql_is_refused_cleanly(spark, frames):
    spark.createDataFrame([(1,)], "v int").write.format("delta").saveAsTable("canary")
    try:
        checks = [{"name": f"q{i}", "type": "sql", "query": q, "max": 0} for i, q in enumerate(HOSTILE)]
        got = _by_name(evaluate(_contract(checks), frames["orders"]))
        for i, query in enumerate(HOSTILE[:-1]):
            assert got[f"q{i}"].status == "error", (query, got[f"q{i}"].message)
            assert got[f"q{i}"].message.startswith("query refused"), got[f"q{i}"].message
        # The comment swallows the rest: a harmless 'SELECT 1', which fails max: 0 (no crash, no DROP).
        assert got[f"q{len(HOSTILE) - 1}"].status == "failed"
        assert spark.table("canary").count() == 1
        for statement in (
            "DROP TABLE canary",
            "CREATE TABLE c2 (v int)",
            "INSERT INTO canary VALUES (2)",
            "SET spark.sql.ansi.enabled=false",
            "DELETE FROM canary",
        ):
            with pytest.raises(UnsafeQuery):
                safe_query(spark, statement)
        assert spark.table("canary").count() == 1
    finally:
        spark.sql("DROP TABLE IF EXISTS canary")


# ---------------------------------------------------------------------------------- contract errors


def test_contract_errors_are_located_and_reported_together():
    text = (
        "name: orders\n"
        "references:\n"
        "  customers: {path: /dim/c, format: parquet}\n"
        "  both: {table: t, path: /p}\n"
        "  dataset: {table: t}\n"
        "checks:\n"
        "  - {name: a, type: referential, columns: [customer_id], reference: customerz}\n"
        "  - {name: b, type: referential, columns: [a, b], reference_columns: [x], reference: customers,\n"
        "     as_of: {column: t, valid_from: f, bogus: 1}}\n"
        "  - {name: c, type: reconciliation, reference: customers, measure: sum}\n"
        "  - {name: d, type: table_condition, condition: 'count(*) > 0', max: 3}\n"
        "  - {name: e, type: sql, query: DROP TABLE x}\n"
        "  - {name: f, type: sql, query: 'SELECT count(*) FROM {dataset} JOIN {nope}', max: 0}\n"
        "  - {name: g, type: sql, query: 'SELECT 1'}\n"
        "  - {name: h, type: sql, query: 'SELECT 1', return: rows, action: quarantine}\n"
        "  - {name: i, type: table_condition, condition: 'count(*) > 0', filter: 'a > 1'}\n"
    )
    with pytest.raises(ContractValidationError) as info:
        load_contract(text, filename="c.yaml")
    issues = {(i.path, i.line) for i in info.value.issues}
    paths = {p for p, _ in issues}
    for path in (
        "references.both",
        "references.dataset",
        "checks[0].reference",
        "checks[1].reference_columns",
        "checks[1].as_of.bogus",
        "checks[1].as_of",
        "checks[2].measure",
        "checks[3].max",
        "checks[4].query",
        "checks[5].query",
        "checks[6]",
        "checks[7].action",
        "checks[8].filter",
    ):
        assert path in paths, (path, sorted(paths))
    assert ("checks[0].reference", 7) in issues
    ok = load_contract(
        {
            "name": "o",
            "references": {"c": "dim.customers"},
            "checks": [
                {"name": "r", "type": "referential", "columns": ["k"], "reference": "c", "severity": "P1"},
                {"name": "rc", "type": "row_condition", "condition": "k > 0", "action": "quarantine"},
            ],
        }
    )
    assert [c.action for c in ok.checks] == ["quarantine", "quarantine"]
    assert ok.references["c"].table == "dim.customers"


def test_diff_knows_references_and_conditions():
    from airflow_dq_contracts.contract.diff import diff_contracts

    def contract(path: str, condition: str) -> Any:
        return load_contract(
            {
                "name": "o",
                "version": "1.0.0",
                "references": {"c": {"path": path}},
                "checks": [{"name": "r", "type": "row_condition", "condition": condition}],
            }
        )

    same = diff_contracts(contract("/a", "x > 0"), contract("/a", "x > 0"))
    assert [c for c in same if c.kind != "note"] == []
    changes = diff_contracts(contract("/a", "x > 0"), contract("/b", "x > 1"))
    assert {(c.category, c.breaking) for c in changes if c.kind != "note"} == {
        ("reference_changed", True),
        ("check_definition_changed", True),
    }


# ---------------------------------------------------------------------------------- plans


def test_plan_one_scan_one_join_per_key_set_each_reference_read_once(spark):
    import pathlib
    import shutil
    import tempfile

    # A short folder: Spark abbreviates long locations in plan text, and the test reads them.
    root = pathlib.Path(tempfile.mkdtemp(prefix="dqr"))
    try:
        _check_plans(spark, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_plans(spark, root) -> None:
    spark.createDataFrame(FACTS, FACT_DDL).write.parquet(str(root / "orders_p"))
    spark.createDataFrame(DIM, DIM_DDL).write.parquet(str(root / "customers_p"))
    fact, dim = spark.read.parquet(str(root / "orders_p")), spark.read.parquet(str(root / "customers_p"))
    contract = _contract(
        [
            {"name": "plain", "type": "referential", "columns": ["customer_id"], "reference": "customers"},
            {
                "name": "plain eu",
                "type": "referential",
                "columns": ["customer_id"],
                "reference": "customers",
                "filter": "region = 'eu'",
                "return": "pct",
                "max": 1,
            },
            {
                "name": "plain nulls",
                "type": "referential",
                "columns": ["customer_id"],
                "reference": "customers",
                "nulls": "fail",
            },
            {
                "name": "as of",
                "type": "referential",
                "columns": ["customer_id"],
                "reference": "customers",
                "as_of": AS_OF,
            },
            {
                "name": "composite",
                "type": "referential",
                "columns": ["customer_id", "region"],
                "reference": "customers",
            },
            {"name": "rows", "type": "num_rows", "min": 1},
            {"name": "positive", "type": "row_condition", "condition": "amount > 0"},
            {"name": "avg", "type": "table_condition", "condition": "avg(amount) < 1000"},
            {"name": "rec", "type": "reconciliation", "reference": "paid", "measure": "sum", "column": "amount"},
            {"name": "rec n", "type": "reconciliation", "reference": "paid", "measure": "count"},
        ],
        customers={"path": "/c"},
        paid={"path": "/o", "filter": "status = 'paid'"},
    )
    evaluator = Evaluator(contract, fact, references={"customers": dim, "paid": fact})
    result = evaluator.run()
    assert result.counts()["error"] == 0, [r.message for r in result.checks if r.status == "error"]

    phases = [s.name for s in evaluator.stats]
    assert phases.count("scan") == 1
    # Three distinct (reference, keys, as_of): plain (3 checks share it), as of, composite.
    assert sorted(p for p in phases if p.startswith("join")) == ["join0", "join1", "join2"]
    assert len(evaluator.join_frames) == 3
    assert phases.count("reference:paid") == 1  # both reconciliations: one aggregate of the reference
    assert not [p for p in phases if p.startswith("group")]

    scan = _plan(evaluator.scan_frame)
    assert scan.count("FileScan parquet") == 1 and "orders_p" in scan and "customers_p" not in scan
    for frame in evaluator.join_frames.values():
        plan = _plan(frame)
        # The main data once, the reference once, joined by broadcast (the reduced side is small).
        assert plan.count("orders_p]") == 1 and plan.count("customers_p]") == 1, plan
        assert "BroadcastHashJoin" in plan or "BroadcastNestedLoopJoin" in plan, plan
    plain = _plan(evaluator.join_frames[("customers", ("customer_id",), ("customer_id",), None)])
    assert "ReadSchema: struct<customer_id:bigint>" in plain  # column pruning of the reference
    paid = _plan(evaluator.references["paid"])
    assert "PushedFilters: [IsNotNull(status), EqualTo(status,paid)]" in paid  # the reference filter pushed down


def test_job_carries_references_unchanged():
    # References travel inside the run's spec (one JSON argument), not as NAME=PATH[:FORMAT] strings.
    from airflow_dq_contracts.jobs.run_contract import build_parser, read_spec
    from airflow_dq_contracts.runspec import ReferenceOverride, RunSpec

    given = {"customers": ReferenceOverride("s3://b/dim", "delta"), "src": ReferenceOverride("/raw")}
    arguments, files = RunSpec(contract_text="x\n", references=given).job_arguments()
    assert files == [] and len(arguments) == 1
    assert dict(read_spec(build_parser().parse_args(arguments)).references) == given
    with pytest.raises(SystemExit):
        build_parser().parse_args([*arguments, "--ref=x=y"])
    with pytest.raises(SystemExit):  # no abbreviations
        build_parser().parse_args(["--spec-f=/x"])


def test_references_are_prepared_once_per_run():
    # The evaluator prepares them (each filter analysed once); annotate given them reuses them as they are.
    from airflow_dq_contracts.engine.relational import prepare_references

    document = {"name": "orders", "references": {"customers": {"path": "/x", "filter": "active"}}}
    contract = load_contract(document)
    prepared = prepare_references(contract, {"customers": "cannot read /x"})
    assert prepared == {"customers": "cannot read /x"}
    assert prepare_references(contract, prepared) is prepared
    assert prepare_references(load_contract(document), prepared) is not prepared  # another contract: prepared anew


def test_row_tagger_split_equals_the_annotated_split_and_the_oracle(frames):
    """The stream's split (RowTagger.mark + split) gives the rows and lists annotate + split_annotated give,
    and the expression plan built for the first frame serves a second frame of the same schema."""
    from airflow_dq_contracts.engine.row_verdicts import RowTagger
    from airflow_dq_contracts.store.sinks import split_annotated

    contract = load_contract(
        {
            "name": "orders",
            "references": {"customers": {"path": "/unused", "format": "delta"}},
            # a column duplicates check tags rows through a window over the frame
            "columns": [
                {
                    "name": "customer_id",
                    "type": "long",
                    "checks": [{"name": "customer repeats", "type": "duplicates", "max": 0, "severity": "P3"}],
                }
            ],
            "checks": [
                {
                    "name": "known customer",
                    "type": "referential",
                    "columns": ["customer_id"],
                    "reference": "customers",
                    "as_of": AS_OF,
                    "severity": "P1",  # quarantine
                },
                {
                    "name": "positive paid",
                    "type": "row_condition",
                    "condition": "amount > 0 AND status <> 'x'",
                    "null_passes": True,
                    "severity": "P3",  # flag: the row stays valid
                },
            ],
        }
    )
    references = {"customers": frames["customers"]}
    result = evaluate(contract, frames["orders"], references=references)
    tagger = RowTagger(contract, result)

    def sides(valid, quarantined):
        def rows(frame, column):
            return {
                r["order_id"]: tuple(sorted(v["check_name"] for v in r[column]))
                for r in frame.select("order_id", column).collect()
            }

        assert "__dq_quarantined" not in valid.columns + quarantined.columns
        return rows(valid, "_dq_flags"), rows(quarantined, "_dq_violations")

    old = sides(*split_annotated(annotate(contract, frames["orders"], result, references)))
    for frame in (frames["orders"], frames["orders"].where("order_id % 2 = 0")):  # same schema: one plan
        valid, quarantined = sides(*tagger.split(tagger.mark(frame, references)))
        ids = {r["order_id"] for r in frame.select("order_id").collect()}
        rows = [r for r in FACTS if r["order_id"] in ids]
        expected_q = orphans(rows, DIM, ["customer_id"], as_of=True)
        condition = row_condition_violations(FACTS, null_passes=True) & ids
        copies = Counter(r["customer_id"] for r in rows)  # duplicates: a NULL key or a key seen twice in the frame
        repeated = {r["order_id"] for r in rows if r["customer_id"] is None or copies[r["customer_id"]] > 1}
        assert condition and repeated and expected_q  # every kind of violation is present

        def expected(order_ids: set[int], quarantines: bool, condition: set[int], repeated: set[int]) -> dict:
            out = {}
            for order_id in order_ids:
                names = ["known customer"] if quarantines else []
                names += ["positive paid"] if order_id in condition else []
                names += ["customer repeats"] if order_id in repeated else []
                out[order_id] = tuple(sorted(names))
            return out

        assert quarantined == expected(expected_q, True, condition, repeated)
        assert valid == expected(ids - expected_q, False, condition, repeated)
        if frame is frames["orders"]:
            assert (valid, quarantined) == old
    assert len(tagger._plans) == 1
