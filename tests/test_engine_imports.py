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


@pytest.mark.parametrize("module", ["airflow_dq_contracts.engine.metrics", "airflow_dq_contracts.engine.evaluator",
                                    "airflow_dq_contracts.engine.runner"])
def test_engine_modules_import_no_airflow(module):
    mods = _modules_after(f"import {module}")
    assert not any(m == "airflow" or m.startswith("airflow.") for m in mods)
    assert "pyspark" in mods


def test_engine_package_is_lazy():
    assert not any(m == "pyspark" or m.startswith("pyspark.") for m in _modules_after("import airflow_dq_contracts.engine"))
    assert "pyspark" in _modules_after("from airflow_dq_contracts.engine import evaluate")
