"""The engine is the Spark world: it imports no Airflow, and the bare package does not even load PySpark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    "module",
    [
        "airflow_dq_contracts.engine.metrics",
        "airflow_dq_contracts.engine.evaluator",
        "airflow_dq_contracts.engine.runner",
    ],
)
def test_engine_modules_import_no_airflow(module):
    mods = _modules_after(f"import {module}")
    assert not any(m == "airflow" or m.startswith("airflow.") for m in mods)
    assert "pyspark" in mods


def test_engine_package_is_lazy():
    assert not any(
        m == "pyspark" or m.startswith("pyspark.") for m in _modules_after("import airflow_dq_contracts.engine")
    )
    assert "pyspark" in _modules_after("from airflow_dq_contracts.engine import evaluate")


def test_the_metrics_package_does_not_load_the_evaluator():
    mods = _modules_after("import airflow_dq_contracts.engine.metrics")
    assert "airflow_dq_contracts.engine.evaluator" not in mods


def test_every_check_type_has_exactly_one_metric_class():
    # Registration is one explicit table (engine/metrics/registry.py), checked against the contract's own.
    from airflow_dq_contracts.contract.checks import CHECK_TYPES
    from airflow_dq_contracts.engine.metrics import MEASURED_AS, METRIC_CLASSES, METRICS

    assert len(METRICS) == len(METRIC_CLASSES)
    assert set(METRICS) | set(MEASURED_AS) == set(CHECK_TYPES)
    assert not set(METRICS) & set(MEASURED_AS)
