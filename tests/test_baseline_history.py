"""Baselines learned from a real Delta results table, built by real runs over simulated days.

Most days run in-process (``evaluate`` + ``sinks.write_results`` on the shared session, a few
hundred rows each) to keep the suite affordable; one day of the volume scenario goes through the
real ``dq-contracts run`` CLI, and ``dq-contracts history`` reads the table the days built.
Every expected band is computed here by hand (plain Python over the same generated values).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import statistics
import subprocess
import sys

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import evaluate
from airflow_dq_contracts.results import format_time
from airflow_dq_contracts.store import sinks

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
VOLUME_CONTRACT = """
name: baseline_orders
version: 1.0.0
checks:
  - name: Daily volume within the seasonal band
    type: num_rows
    severity: P1
    baseline: {lookback_days: 28, min_history: 3, band: [0.5, 2.5]}
columns:
  - name: id
  - name: amount
"""
VOLUME_ID = "_table_/daily_volume_within_the_seasonal_band"
DRIFT_CONTRACT = """
name: baseline_payments
checks:
  - {name: rows, type: num_rows, min: 1, severity: P3}
columns:
  - name: amount
    checks:
      - name: Amount drift
        type: drift
        metrics: [mean, p95]
        min_history: 3
        max_sigma: 3
"""


def day(n: int) -> dt.datetime:
    return dt.datetime(2024, 6, 1, tzinfo=UTC) + dt.timedelta(days=n - 1)


def frame(spark, amounts):
    return spark.createDataFrame([(i, float(a)) for i, a in enumerate(amounts)], "id long, amount double")


def run_day(spark, contract, amounts, n, results, run_id=None, write=True, history=None, dataset="orders"):
    """One simulated day: evaluate with the table as history, then append the day's results."""
    run_id = run_id or f"{contract.name}-day-{n}"
    result = evaluate(
        contract,
        frame(spark, amounts),
        day(n),
        run_id=run_id,
        dataset=dataset,
        history=results if history is None else history,
    )
    if write:
        sinks.write_results(spark, result.checks, results, run_id=run_id)
    return result


def check(result, check_id):
    return next(c for c in result.checks if c.check_id == check_id)


def band(values, low=0.5, high=2.5):
    mean = sum(values) / len(values)
    return low * mean, high * mean


VOLUMES = {1: 100, 2: 90, 3: 110, 4: 100, 5: 40, 6: 400, 7: 120}


@pytest.fixture(scope="module")
def volume_days(spark, tmp_path_factory):
    """Days 1–7 of the volume scenario (in-process), plus a retry of day 7 with another run id."""
    folder = tmp_path_factory.mktemp("volume")
    contract = load_contract(VOLUME_CONTRACT)
    results = str(folder / "dq_results")
    # History is per dataset: the CLI day names its dataset by its --input path, so these do too.
    data = str(folder / "orders")
    outcome = {n: run_day(spark, contract, [1.0] * v, n, results, dataset=data) for n, v in VOLUMES.items()}
    retry = run_day(spark, contract, [1.0] * 120, 7, results, run_id="baseline_orders-day-7-retry", dataset=data)
    return folder, contract, results, outcome, retry


def test_volume_band_learns_excludes_gated_days_and_retries(volume_days):
    _, _, _, outcome, retry = volume_days
    volumes = VOLUMES

    # Learning period: passed, metric recorded, no bounds, "learning: N of 3 runs".
    for n in (1, 2, 3):
        record = check(outcome[n], VOLUME_ID)
        assert (record.status, record.metric_value) == ("passed", float(volumes[n]))
        assert record.message == f"learning: {n - 1} of 3 runs"
        assert (record.expected_min, record.expected_max) == (None, None)
    steady = band([100, 90, 110])  # (50, 250)
    record = check(outcome[4], VOLUME_ID)
    assert record.status == "passed" and (record.expected_min, record.expected_max) == steady
    assert record.message == "baseline mean 100, σ 10, N 3 → between [50, 250]"

    # Day 5, a 0.4× day, fails and gates; day 6, a 4× festival day, fails too — and its band
    # is computed WITHOUT day 5 (a gated run is not history): days 1–4 only.
    days_1_to_4 = band([100, 90, 110, 100])
    for n in (5, 6):
        record = check(outcome[n], VOLUME_ID)
        assert record.status == "failed" and outcome[n].decision == "gate"
        assert (record.expected_min, record.expected_max) == days_1_to_4
        assert "N 4" in record.message and "outside between [50, 250]" in record.message
    assert band([100, 90, 110, 100, 40]) != days_1_to_4  # including day 5 would have shown
    record = check(outcome[7], VOLUME_ID)  # 1.2× passes; 5 and 6 excluded
    assert record.status == "passed" and (record.expected_min, record.expected_max) == days_1_to_4

    # A retry of day 7 (another run id) does not count day 7's first run as its history.
    assert (check(retry, VOLUME_ID).expected_min, check(retry, VOLUME_ID).expected_max) == days_1_to_4


def test_volume_day_through_the_cli_then_backfill_and_history_report(spark, volume_days):
    tmp_path, contract, results, _, _ = volume_days
    days_1_to_4 = band([100, 90, 110, 100])
    # Day 8 through the real CLI: history = days 1–4 and 7 (the retry speaks for day 7).
    contract_file = tmp_path / "orders.yaml"
    contract_file.write_text(VOLUME_CONTRACT)
    data = str(tmp_path / "orders")
    frame(spark, [1.0] * 100).write.parquet(data)
    summary_file = tmp_path / "day8.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_dq_contracts.cli.main",
            "run",
            str(contract_file),
            "--input",
            data,
            "--input-format",
            "parquet",
            "--reference-time",
            format_time(day(8)),
            "--run-id",
            "cli-day-8",
            "--results-table",
            results,
            "--json-out",
            str(summary_file),
            "--master",
            "local[1]",
        ],
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(summary_file.read_text())
    cli_record = next(c for c in summary["checks"] if c["check_id"] == VOLUME_ID)
    expected = band([100, 90, 110, 100, 120])
    assert cli_record["status"] == "passed"
    assert (cli_record["expected_min"], cli_record["expected_max"]) == pytest.approx(expected, abs=1e-9)
    assert "N 5" in cli_record["message"], cli_record["message"]

    # Backfill: day 5 re-run after day 8 uses only the days before 5 (not 7 or 8).
    backfill = run_day(spark, contract, [1.0] * 40, 5, results, run_id="backfill-5", write=False, dataset=data)
    record = check(backfill, VOLUME_ID)
    assert record.status == "failed" and (record.expected_min, record.expected_max) == days_1_to_4

    # The results table itself holds the bounds (rows read back with Spark).
    stored = {r.run_id: r for r in sinks.read_results(spark, results) if r.check_id == VOLUME_ID}
    assert (stored["baseline_orders-day-6"].expected_min, stored["baseline_orders-day-6"].expected_max) == days_1_to_4
    assert stored["baseline_orders-day-1"].expected_min is None

    # dq-contracts history over the same table, compared with counts made by hand: 8 reference
    # times (day 7 retried: once), failures on days 5 and 6, current baseline from days 1–4, 7, 8.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_dq_contracts.cli.main",
            "history",
            str(contract_file),
            "--results-table",
            results,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # the volume check (the declared columns' schema checks are reported beside it)
    (item,) = [c for c in report["checks"] if c["check_id"] == VOLUME_ID]
    assert (item["check_id"], item["runs"], item["failures"], item["errors"]) == (VOLUME_ID, 8, 2, 0)
    assert item["last_failure"] == format_time(day(6)) and item["never_fired_days"] is None
    assert (item["baseline_min"], item["baseline_max"]) == pytest.approx(band([100, 90, 110, 100, 120, 100]))
    text = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_dq_contracts.cli.main",
            "history",
            "baseline_orders",
            "--results-table",
            results,
            "--days",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert text.returncode == 0, text.stderr
    # Days 7 and 8 in a one-day window: no failure, "never fired in 1 days"; bounds of the newest run.
    assert "runs    2" in text.stdout and "never fired in 1 days" in text.stdout
    assert f"baseline [{expected[0]:g}, {expected[1]:g}]" in text.stdout


def _p95(values):
    """numpy's default percentile: linear interpolation between closest ranks."""
    ordered = sorted(values)
    position = 0.95 * (len(ordered) - 1)
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def test_drift_on_p95_after_a_shifted_distribution(spark, tmp_path):
    contract = load_contract(DRIFT_CONTRACT)
    results = str(tmp_path / "dq_results")
    rng = random.Random(12)
    days = {n: [rng.gauss(100, 10) for _ in range(200)] for n in range(1, 6)}
    # Day 6: the same body, but the top tail moved far out (a new, larger kind of payment).
    shifted = sorted(rng.gauss(100, 10) for _ in range(200))
    days[6] = shifted[:180] + [value * 3 for value in shifted[180:]]
    outcome = {n: run_day(spark, contract, amounts, n, results) for n, amounts in days.items()}

    # the schema check of the declared column comes first, then the written checks in document order
    ids = [c.check_id for c in outcome[6].checks]
    assert ids == ["amount/schema", "_table_/rows", "amount/amount_drift/mean", "amount/amount_drift/p95"]
    assert {c.check_type for c in outcome[6].checks[2:]} == {"drift"}
    for n in (1, 2, 3):
        assert check(outcome[n], "amount/amount_drift/p95").message == f"learning: {n - 1} of 3 runs"

    history = [_p95(days[n]) for n in range(1, 6)]
    mean, sigma = statistics.fmean(history), statistics.stdev(history)
    p95 = check(outcome[6], "amount/amount_drift/p95")
    assert p95.metric_value == pytest.approx(_p95(days[6]), rel=1e-12)
    assert p95.status == "failed" and outcome[6].decision == "gate"
    assert p95.expected_min == pytest.approx(mean - 3 * sigma, rel=1e-9)
    assert p95.expected_max == pytest.approx(mean + 3 * sigma, rel=1e-9)
    assert "N 5" in p95.message
    mean_check = check(outcome[6], "amount/amount_drift/mean")
    mean_history = [statistics.fmean(days[n]) for n in range(1, 6)]
    assert mean_check.expected_max == pytest.approx(
        statistics.fmean(mean_history) + 3 * statistics.stdev(mean_history), rel=1e-9
    )
    # Before the shift, each day's p95 was inside the band learned from the days before it.
    for n in (4, 5):
        record = check(outcome[n], "amount/amount_drift/p95")
        earlier = [_p95(days[k]) for k in range(1, n)]
        assert record.status == "passed"
        assert record.expected_min == pytest.approx(statistics.fmean(earlier) - 3 * statistics.stdev(earlier))

    # The Python API takes the history as records too (e.g. kept elsewhere): the same band.
    records = [c for n in range(1, 6) for c in outcome[n].checks]
    again = evaluate(contract, frame(spark, days[6]), day(6), run_id="from-records", dataset="orders", history=records)
    assert check(again, "amount/amount_drift/p95").expected_max == pytest.approx(p95.expected_max, rel=1e-12)


def test_unreadable_history_fails_baseline_checks_closed(spark, tmp_path):
    contract = load_contract(VOLUME_CONTRACT)
    not_delta = tmp_path / "not_a_table"
    not_delta.mkdir()
    (not_delta / "_delta_log").mkdir()
    (not_delta / "_delta_log" / "00000000000000000000.json").write_text("garbage\n")
    result = evaluate(contract, frame(spark, [1.0] * 5), day(1), history=str(not_delta))
    record = check(result, VOLUME_ID)
    assert record.status == "error" and "cannot read the history" in record.message
    assert result.decision == "gate"
    # No table yet is simply the first run: learning.
    first = evaluate(contract, frame(spark, [1.0] * 5), day(1), history=str(tmp_path / "missing"))
    assert check(first, VOLUME_ID).message == "learning: 0 of 3 runs"
