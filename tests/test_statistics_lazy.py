"""A Delta input read lazily (issue 37): a contract the log answers whole runs with no DataFrame and no Spark job.

``DeltaInput`` builds its DataFrame only when a check needs the scan. Every run here is compared with
the full scan (``spark.dqcontracts.statistics.enabled=false`` on an eager DataFrame): the results are
equal whether the DataFrame was built or not. "No DataFrame" is the input's build counter; "no Spark
job" is the status tracker's job ids, unchanged over the run (in no group and in the run's groups).
Expected values come from plain Python over the same rows.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.evaluator import Evaluator
from airflow_dq_contracts.engine.log_plan import DeltaInput
from airflow_dq_contracts.engine.runner import run_contract
from airflow_dq_contracts.engine.statistics_first import STATISTICS_CONF_KEY

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
REFERENCE = dt.datetime(2024, 3, 10, 12, 0, tzinfo=UTC)
FIELDS = ("check_id", "status", "metric_value", "failed_rows", "row_count", "message", "validator", "passed")

BOUNDS = {
    "name": "double_bounds",
    "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
    "columns": [
        {"name": "id", "type": "long", "checks": [{"name": "id_missing", "type": "missing", "max": 0}]},
        {"name": "amount", "type": "double", "checks": [{"name": "amount_min", "type": "min", "min": -1e9},
                                                         {"name": "amount_max", "type": "max", "max": 1e9}]},
        {"name": "label", "type": "string"},  # an int in the data: the schema check fails, from the schema
    ],
}  # fmt: skip


def _with_mean() -> dict:
    """BOUNDS and a ``mean`` of the amounts: a check only the scan answers."""
    columns = [dict(c) for c in BOUNDS["columns"]]
    columns[1]["checks"] = [*columns[1]["checks"], {"name": "amount_mean", "type": "mean"}]
    return dict(BOUNDS, columns=columns)


def _rows(count: int = 400, seed: int = 37) -> list[tuple]:
    rng = random.Random(seed)
    return [(i, None if i % 13 == 0 else rng.uniform(-500, 500), i % 5) for i in range(count)]


def _table(spark, path: str, rows: list[tuple]) -> None:
    spark.createDataFrame(rows, "id long, amount double, label int").repartition(5).write.format("delta").save(path)


def _scan(spark, contract, path: str):
    """The full scan of an eager DataFrame: the reference every lazy run is compared with."""
    spark.conf.set(STATISTICS_CONF_KEY, "false")
    try:
        return Evaluator(contract, spark.read.format("delta").load(path), REFERENCE, run_id="r").run()
    finally:
        spark.conf.unset(STATISTICS_CONF_KEY)


def _same(a, b) -> None:
    assert [tuple(getattr(r, f) for f in FIELDS) for r in a.checks] == [
        tuple(getattr(r, f) for f in FIELDS) for r in b.checks
    ]
    assert (a.row_count, a.decision) == (b.row_count, b.decision)


def _jobs(spark, run_id: str) -> list[int]:
    tracker = spark.sparkContext.statusTracker()
    groups = [None] + [f"dq-contracts:{run_id}:{phase}" for phase in ("scan", "group0")]
    return sorted(job for group in groups for job in tracker.getJobIdsForGroup(group))


def test_a_contract_the_log_answers_builds_no_dataframe_and_runs_no_job(spark, tmp_path):
    path = str(tmp_path / "bounds")
    rows = _rows()
    _table(spark, path, rows)
    contract = load_contract(BOUNDS)
    scanned = _scan(spark, contract, path)
    lazy = DeltaInput.at(spark, path)
    before = _jobs(spark, "lazy")
    ev = Evaluator(contract, lazy, REFERENCE, run_id="lazy", statistics=lazy.source)
    result = ev.run()
    assert _jobs(spark, "lazy") == before
    assert lazy.builds == 0 and not lazy.built
    assert {r.evaluated_from for r in result.checks} == {"statistics"}
    _same(result, scanned)
    by_name = {r.check_name: r for r in result.checks}
    amounts = [r[1] for r in rows if r[1] is not None]
    assert (by_name["amount_min"].metric_value, by_name["amount_max"].metric_value) == (min(amounts), max(amounts))
    assert by_name["rows"].metric_value == len(rows)
    assert [r.status for r in result.checks if r.column == "label"] == ["failed"]  # declared string, an int
    assert next(s for s in ev.stats if s.name == "scan").detail.endswith("no DataFrame, no scan")


def test_a_check_that_needs_the_scan_builds_the_dataframe(spark, tmp_path):
    path = str(tmp_path / "mixed")
    rows = _rows(seed=5)
    _table(spark, path, rows)
    contract = load_contract(_with_mean())
    lazy = DeltaInput.at(spark, path)
    result = Evaluator(contract, lazy, REFERENCE, run_id="mixed", statistics=lazy.source).run()
    assert lazy.builds == 1
    _same(result, _scan(spark, contract, path))
    sources = {r.check_name: r.evaluated_from for r in result.checks if r.check_type != "schema"}
    assert sources == {"rows": "statistics", "id_missing": "statistics", "amount_min": "statistics",
                       "amount_max": "statistics", "amount_mean": "scan"}  # fmt: skip
    amounts = [r[1] for r in rows if r[1] is not None]
    mean = next(r.metric_value for r in result.checks if r.check_name == "amount_mean")
    assert mean == pytest.approx(sum(amounts) / len(amounts), rel=1e-12)


def test_the_job_takes_the_lazy_path_for_a_delta_path(spark, tmp_path):
    """``run_contract`` on a Delta path: answered from the log without a DataFrame; a scan builds it."""
    path = str(tmp_path / "job")
    rows = _rows(seed=11)
    _table(spark, path, rows)
    contract = load_contract(BOUNDS)
    said: list[str] = []
    before = _jobs(spark, "job-lazy")
    result = run_contract(
        spark, contract, input_path=path, run_id="job-lazy", reference_time=REFERENCE, progress=said.append
    )
    assert _jobs(spark, "job-lazy") == before
    assert any("built only if a check needs the scan" in line for line in said)
    assert not any(line.startswith("read: ") for line in said)  # never read
    assert result.source_read is None
    assert {r.evaluated_from for r in result.checks} == {"statistics"}
    _same(result, _scan(spark, contract, path))

    mixed = load_contract(_with_mean())
    said.clear()
    result = run_contract(
        spark, mixed, input_path=path, run_id="job-scan", reference_time=REFERENCE, progress=said.append
    )
    assert len([line for line in said if line.startswith("read: ")]) == 1  # built for the scan, once
    _same(result, _scan(spark, mixed, path))
