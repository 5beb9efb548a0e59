"""``run_contract``: read a Delta input (with a run filter), evaluate, write quarantine / valid / results.

Checks the wiring the spark-submit job relies on: row conservation (valid + quarantined = input
rows in scope), each quarantined row listing exactly the failed row-level checks it breaks
(computed here in plain Python), one results row per check, and a second run with the same run id
replacing — never duplicating — its rows.
"""

from __future__ import annotations

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.runner import DatasetError, RunArgumentError, run_contract
from airflow_dq_contracts.store import sinks

pytestmark = pytest.mark.spark

CONTRACT = {
    "name": "runner_orders",
    "version": "1.0.0",
    "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
    "columns": [
        {"name": "order_id", "checks": [{"name": "unique", "type": "duplicates", "max": 0, "severity": "P1"}]},
        {
            "name": "status",
            "checks": [
                {"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"},
                {"name": "informative", "type": "missing", "max": 0, "severity": "P2"},  # flag: stays valid
            ],
        },
        {"name": "amount", "checks": [{"name": "positive", "type": "min", "min": 0, "severity": "P1"}]},
        {"name": "day"},
    ],
}

ROWS = [  # order_id, status, amount, day
    (1, "new", 10.0, "2024-05-01"),
    (2, "paid", 5.0, "2024-05-01"),
    (2, "paid", 7.0, "2024-05-01"),
    (3, "lost", 1.0, "2024-05-01"),
    (4, None, -2.0, "2024-05-01"),
    (5, "new", 3.0, "2024-05-01"),
    (6, "bogus", -1.0, "2024-05-02"),
    (7, "new", 1.0, "2024-05-02"),  # outside the run filter
]


def _expected_violations(rows):
    """Plain Python: per order_id (unique within the scope except 2), the quarantining checks broken."""
    ids = [r[0] for r in rows]
    out = {}
    for order_id, status, amount, _ in rows:
        broken = set()
        if ids.count(order_id) > 1:
            broken.add("order_id/unique")
        if status is not None and status not in ("new", "paid"):
            broken.add("status/known")
        if amount < 0:
            broken.add("amount/positive")
        if status is None:
            broken.add("status/informative")  # P2 → flag: listed, but never quarantines on its own
        out.setdefault(order_id, []).append(broken)
    return out


def _quarantines(broken: set[str]) -> bool:
    return bool(broken - {"status/informative"})


def test_run_contract_writes_conserving_rows_and_replaces_on_rerun(spark, tmp_path):
    source = str(tmp_path / "orders")
    spark.createDataFrame(ROWS, "order_id long, status string, amount double, day string").write.format(
        "delta"
    ).partitionBy("day").save(source)
    targets = {
        "results_table": str(tmp_path / "results"),
        "quarantine_table": str(tmp_path / "quarantine"),
        "valid_table": str(tmp_path / "valid"),
    }
    contract = load_contract(CONTRACT)
    lines: list[str] = []
    scope = [r for r in ROWS if r[3] == "2024-05-01"]

    for _attempt in range(2):  # the same run id twice: the second replaces the first
        result = run_contract(
            spark,
            contract,
            input_path=source,
            input_format="delta",
            filter="day = '2024-05-01'",
            reference_time="2024-05-02T00:00:00Z",
            run_id="run-1",
            progress=lines.append,
            **targets,
        )
        assert result.row_count == len(scope)
        assert result.quarantine_rows + result.valid_rows == len(scope)

    assert result.decision == "quarantine"
    summary = result.summary()
    assert summary["quarantine"] == {"table": targets["quarantine_table"], "rows": result.quarantine_rows}
    assert summary["results_table"] == targets["results_table"]
    assert any(line.startswith("scan:") for line in lines) and any(line.startswith("rows:") for line in lines)

    quarantine = spark.read.format("delta").load(targets["quarantine_table"])
    valid = spark.read.format("delta").load(targets["valid_table"])
    assert quarantine.count() == result.quarantine_rows and valid.count() == result.valid_rows  # no duplicates
    expected = _expected_violations(scope)
    got: dict[int, list[set[str]]] = {}
    for row in quarantine.collect():
        assert row["_dq_run_id"] == "run-1"
        got.setdefault(row["order_id"], []).append({v["check_id"] for v in row["_dq_violations"]})
    want = {k: sorted(sorted(b) for b in v if _quarantines(b)) for k, v in expected.items()}
    assert {k: sorted(map(sorted, v)) for k, v in got.items()} == {k: v for k, v in want.items() if v}
    assert sorted(r["order_id"] for r in valid.collect()) == sorted(
        k for k, v in expected.items() for b in v if not _quarantines(b)
    )

    records = sinks.read_results(spark, targets["results_table"], run_id="run-1")
    assert sorted(r.check_id for r in records) == sorted(c.check_id for c in contract.evaluated_checks())
    assert {r.filter for r in records} == {"day = '2024-05-01'"}


def test_run_contract_reports_bad_inputs_clearly(spark, tmp_path):
    contract = load_contract(CONTRACT)
    with pytest.raises(DatasetError, match="cannot read delta dataset"):
        run_contract(spark, contract, input_path=str(tmp_path / "nothing-here"))
    with pytest.raises(RunArgumentError, match="declares no dataset"):
        run_contract(spark, contract)
    df_path = str(tmp_path / "p")
    spark.createDataFrame(ROWS, "order_id long, status string, amount double, day string").write.parquet(df_path)
    with pytest.raises(RunArgumentError, match="invalid filter"):
        run_contract(spark, contract, input_path=df_path, input_format="parquet", filter="day ==== 1")
