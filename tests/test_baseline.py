"""Baselines and drift on the contract side (plain Python): parsing, band arithmetic, which history counts."""

from __future__ import annotations

import datetime as dt
import statistics

import pytest

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.baseline import Baseline, gated_runs, judge, select_points
from airflow_dq_contracts.store.results.history import check_histories

UTC = dt.timezone.utc


def day(n: int) -> dt.datetime:
    return dt.datetime(2024, 3, 1, tzinfo=UTC) + dt.timedelta(days=n - 1)


def row(
    n: int,
    value: float | None,
    *,
    check_id: str = "_table_/volume",
    status: str = "passed",
    action: str = "gate",
    run_id: str | None = None,
    dataset: str = "orders",
    hours: int = 0,
    failed_rows: int | None = None,
) -> dict:
    return {
        "run_id": run_id or f"run-{n}",
        "dataset": dataset,
        "check_id": check_id,
        "action": action,
        "status": status,
        "failed_rows": failed_rows,
        "metric_value": value,
        "reference_time": day(n),
        "evaluated_at": day(n) + dt.timedelta(hours=1 + hours),
    }


# --------------------------------------------------------------------------------------- parsing


def test_baseline_and_drift_load():
    contract = load_contract("""
name: orders
checks:
  - name: Daily volume within the seasonal band
    type: num_rows
    baseline: {lookback_days: 28, min_history: 7, band: [0.5, 2.5]}
columns:
  - name: amount
    type: double
    checks:
      - name: Amount mean does not drift
        type: mean
        baseline: {lookback_days: 14, min_history: 3, max_sigma: 3}
      - name: Amount drift
        type: drift
        metrics: [mean, p95, cardinality]
        max_sigma: 4
""")
    checks = {c.check_id: c for c in contract.all_checks()}
    assert list(checks) == [
        "_table_/daily_volume_within_the_seasonal_band",
        "amount/amount_mean_does_not_drift",
        "amount/amount_drift/mean",
        "amount/amount_drift/p95",
        "amount/amount_drift/cardinality",
    ]
    assert checks["_table_/daily_volume_within_the_seasonal_band"].baseline == Baseline(28, 7, band=(0.5, 2.5))
    assert checks["amount/amount_mean_does_not_drift"].baseline == Baseline(14, 3, max_sigma=3.0)
    p95 = checks["amount/amount_drift/p95"]
    assert p95.type == "drift" and p95.params["percentile"] == 0.95 and p95.params["metric"] == "p95"
    assert p95.baseline == Baseline(28, 7, max_sigma=4.0)
    # A learned bound is about the whole run: it never quarantines rows.
    assert not p95.row_level and p95.action == "gate"


def test_drift_defaults_to_all_five_metrics():
    contract = load_contract({"name": "t", "columns": [{"name": "x", "checks": [{"name": "X", "type": "drift"}]}]})
    assert [c.check_id for c in contract.all_checks()] == [
        f"x/x/{m}" for m in ("mean", "p50", "p95", "p99", "cardinality")
    ]
    assert {c.baseline for c in contract.all_checks()} == {Baseline(28, 7, max_sigma=3.0)}


def test_bad_baselines_are_located_all_at_once():
    text = """name: t
checks:
  - name: a
    type: num_rows
    min: 3
    baseline: {band: [0.5, 2]}
  - name: b
    type: num_rows
    baseline: {lookback_days: 0, band: [3, 1], maxx: 1}
  - name: c
    type: num_rows
    baseline: {band: [1, 2], max_sigma: 3}
  - name: d
    type: num_rows
    baseline: 5
columns:
  - name: x
    checks:
      - {name: e, type: drift, metrics: [mean, p97, mean]}
      - {name: f, type: drift, min: 3}
      - {name: g, type: mean, baseline: {max_sigma: -1, min_history: true}}
      - {name: h, type: drift, max_sigma: 0}
"""
    with pytest.raises(ContractValidationError) as err:
        load_contract(text, filename="bad.yaml")
    found = {(i.path, i.line) for i in err.value.issues}
    messages = " | ".join(str(i) for i in err.value.issues)
    assert ("checks[0].min", 5) in found and "remove the static validator 'min'" in messages
    assert ("checks[1].baseline.lookback_days", 9) in found
    assert ("checks[1].baseline.band", 9) in found
    assert ("checks[1].baseline.maxx", 9) in found
    assert ("checks[2].baseline.band", 12) in found and "exactly one of" in messages
    assert ("checks[3].baseline", 15) in found
    assert ("columns[0].checks[0].metrics[1]", 19) in found and "p97" in messages
    assert ("columns[0].checks[0].metrics[2]", 19) in found and "listed twice" in messages
    assert ("columns[0].checks[3].max_sigma", 22) in found
    assert ("columns[0].checks[1].min", 20) in found and "validated by 'max_sigma'" in messages
    assert ("columns[0].checks[2].baseline.max_sigma", 21) in found
    assert ("columns[0].checks[2].baseline.min_history", 21) in found
    assert all(i.file == "bad.yaml" for i in err.value.issues)


def test_baseline_not_allowed_on_freshness():
    with pytest.raises(ContractValidationError, match=r"unknown key 'baseline'"):
        load_contract(
            {
                "name": "t",
                "checks": [
                    {
                        "name": "f",
                        "type": "freshness",
                        "timestamp_column": "ts",
                        "max_age_hours": 1,
                        "baseline": {"max_sigma": 3},
                    }
                ],
            }
        )


# --------------------------------------------------------------------------------------- judging


def test_band_is_a_multiple_of_the_trailing_mean():
    outcome = judge(Baseline(min_history=3, band=(0.5, 2.5)), [900.0, 1000.0, 1100.0])
    assert (outcome.expected_min, outcome.expected_max) == (500.0, 2500.0)
    assert outcome.validator is not None
    assert outcome.validator.passes(500.0) and outcome.validator.passes(2500.0)
    assert not outcome.validator.passes(400.0) and not outcome.validator.passes(4000.0)
    assert outcome.message == "baseline mean 1000, σ 100, N 3 → between [500, 2500]"


def test_sigma_band_uses_the_sample_standard_deviation():
    values = [10.0, 12.0, 11.0, 13.0, 9.0]
    mean, sigma = sum(values) / 5, statistics.stdev(values)  # 11, sqrt(2.5)
    outcome = judge(Baseline(min_history=5, max_sigma=3), values)
    assert outcome.expected_min == pytest.approx(mean - 3 * sigma, abs=1e-12)
    assert outcome.expected_max == pytest.approx(mean + 3 * sigma, abs=1e-12)
    assert "mean 11, σ 1.58113883, N 5" in outcome.message


def test_learning_period():
    outcome = judge(Baseline(min_history=7, band=(0.5, 2.5)), [1.0] * 6)
    assert outcome.learning and outcome.validator is None and outcome.expected_min is None
    assert outcome.message == "learning: 6 of 7 runs"


# --------------------------------------------------------------------------------------- history


def test_window_is_lookback_days_before_the_reference_time():
    rows = [row(n, float(n)) for n in range(1, 41)]
    points = select_points(
        rows, check_id="_table_/volume", dataset="orders", reference_time=day(40), baseline=Baseline(lookback_days=28)
    )
    assert points == [float(n) for n in range(12, 40)]  # days 12..39: [40 − 28, 40)


def test_backfill_uses_only_earlier_reference_times():
    rows = [row(n, float(n)) for n in range(1, 21)]
    points = select_points(
        rows, check_id="_table_/volume", dataset="orders", reference_time=day(5), baseline=Baseline()
    )
    assert points == [1.0, 2.0, 3.0, 4.0]


def test_gated_runs_failed_checks_and_other_datasets_are_excluded():
    rows = [row(n, 100.0) for n in range(1, 6)]
    # Day 2 was gated by ANOTHER check of the same run: its volume point is not history.
    rows.append(row(2, None, check_id="_table_/other", status="failed", action="gate"))
    # Day 3: the check itself failed as a flag (the run was not gated), still excluded.
    rows[2] = row(3, 5.0, status="failed", action="flag")
    # Day 4: a quarantine check failed WITH rows to set aside: decision quarantine, not gate — kept.
    rows.append(row(4, 7.0, check_id="x/valid", status="failed", action="quarantine", failed_rows=3))
    rows.append(row(4, 1e6, dataset="other_table"))
    assert gated_runs(rows) == {"run-2"}
    points = select_points(
        rows, check_id="_table_/volume", dataset="orders", reference_time=day(6), baseline=Baseline()
    )
    assert points == [100.0, 100.0, 100.0]  # days 1, 4, 5


def test_retries_count_once_and_never_for_their_own_reference_time():
    rows = [row(n, 100.0) for n in range(1, 4)]
    rows.append(row(2, 300.0, run_id="run-2-retry", hours=5))  # newer evaluation of day 2 speaks for it
    rows.append(row(4, 999.0, run_id="run-4-first"))  # an earlier attempt of the day evaluated
    baseline = Baseline()
    points = select_points(rows, check_id="_table_/volume", dataset="orders", reference_time=day(4), baseline=baseline)
    assert points == [100.0, 300.0, 100.0]
    included = Baseline(include_same_reference_time=True)
    assert select_points(
        rows, check_id="_table_/volume", dataset="orders", reference_time=day(4), baseline=included
    ) == [100.0, 300.0, 100.0, 999.0]
    assert select_points(
        rows,
        check_id="_table_/volume",
        dataset="orders",
        reference_time=day(4),
        baseline=included,
        exclude_run_id="run-4-first",
    ) == [100.0, 300.0, 100.0]


def test_check_histories_counts_by_hand():
    rows = []
    for n in range(1, 11):
        rows.append(row(n, 100.0, status="failed" if n in (3, 7) else "passed"))
        rows.append(row(n, 0.0, check_id="id/unique", status="error" if n == 9 else "passed"))
        rows.append(row(n, 0.0, check_id="id/present"))
    rows.append(row(7, 100.0, run_id="run-7-retry", hours=3))  # day 7 retried and passed: not a failure
    rows.append(row(3, 0.0, check_id="id/present", dataset="elsewhere"))
    histories = {(h.check_id, h.dataset): h for h in check_histories(rows, days=90)}
    volume = histories[("_table_/volume", "orders")]
    assert (volume.runs, volume.failures, volume.errors, volume.last_failure) == (10, 1, 0, day(3))
    assert volume.never_fired_days is None
    unique = histories[("id/unique", "orders")]
    assert (unique.runs, unique.failures, unique.errors, unique.last_failure) == (10, 1, 1, day(9))
    present = histories[("id/present", "orders")]
    assert (present.runs, present.failures, present.never_fired_days) == (10, 0, 9)
    assert histories[("id/present", "elsewhere")].runs == 1
    # A shorter window: days 6..10 only.
    short = {(h.check_id, h.dataset): h for h in check_histories(rows, days=4)}
    assert (short[("_table_/volume", "orders")].runs, short[("_table_/volume", "orders")].failures) == (5, 0)
    assert short[("_table_/volume", "orders")].never_fired_days == 4


def test_history_modules_load_neither_spark_nor_airflow():
    """``dq-contracts history`` reads the table with delta-rs: no JVM, no Airflow."""
    import subprocess
    import sys

    code = (
        "import sys, airflow_dq_contracts.store.results.history, airflow_dq_contracts.cli.history, "
        "airflow_dq_contracts.contract.baseline; print('\\n'.join(sys.modules))"
    )
    modules = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert not {m.split(".")[0] for m in modules} & {"pyspark", "airflow"}


def test_datahub_export_refuses_learned_bounds_with_their_location():
    from airflow_dq_contracts.interop.datahub_export import export_datahub_report

    contract = load_contract(
        """name: t
dataset: {table: s.t}
checks:
  - {name: fixed, type: num_rows, min: 1}
  - {name: learned, type: num_rows, baseline: {band: [0.5, 2.5]}}
""",
        filename="t.yaml",
    )
    text, refused = export_datahub_report(contract)
    assert [(r.path, r.line) for r in refused] == [("checks[1]", 5)]
    assert "baseline" in refused[0].message and "fixed" in text
