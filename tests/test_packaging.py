"""Packaging: pinned Spark is coherent, the provider is registered, the three worlds stay apart."""

from __future__ import annotations

import glob
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_dq_contracts import spark_config

ROOT = Path(__file__).resolve().parent.parent


def test_pyspark_python_matches_its_jars_and_spark_submit_is_found():
    """pyspark-client must not have overwritten PySpark's Python files with another version's."""
    import pyspark

    assert pyspark.__version__ == spark_config.SPARK_VERSION
    assert importlib.metadata.version("pyspark") == spark_config.SPARK_VERSION
    assert importlib.metadata.version("pyspark-client") == spark_config.SPARK_VERSION
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-core_*.jar"))
    assert jars, "pyspark wheel ships no spark-core jar"
    assert all(spark_config.SPARK_VERSION in Path(j).name for j in jars), jars
    assert shutil.which("spark-submit"), "spark-submit is not on PATH"


def test_delta_python_package_matches_the_maven_coordinate():
    assert importlib.metadata.version("delta-spark") == spark_config.DELTA_VERSION
    assert spark_config.DELTA_PACKAGE.endswith(":" + spark_config.DELTA_VERSION)


def test_provider_entry_point_and_package_name():
    eps = importlib.metadata.entry_points(group="apache_airflow_provider")
    ours = [ep for ep in eps if ep.value.startswith("airflow_dq_contracts")]
    assert len(ours) == 1
    info = ours[0].load()()
    assert info["package-name"] == "airflow-dq-contracts"
    assert info["package-name"] == importlib.metadata.metadata("airflow-dq-contracts")["Name"]
    for group in ("operators", "sensors", "triggers"):
        for entry in info.get(group, []):
            for module in entry["python-modules"]:
                assert (ROOT / (module.replace(".", "/") + ".py")).exists(), module


def _imports_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(out.stdout.split())


def test_contract_world_imports_neither_airflow_nor_spark():
    mods = _imports_after("import airflow_dq_contracts.contract, airflow_dq_contracts.results, "
                          "airflow_dq_contracts.cli")
    assert not any(m == "pyspark" or m.startswith("pyspark.") for m in mods)
    assert not any(m == "airflow" or m.startswith("airflow.") for m in mods)


def test_cli_validate_is_plain_python(tmp_path):
    """`dq-contracts validate` must answer without starting a JVM or importing Airflow."""
    contract = tmp_path / "c.yaml"
    contract.write_text("name: t\ncolumns:\n  - name: a\n    checks:\n      - {name: n, type: missing, max: 0}\n")
    code = ("import sys; from airflow_dq_contracts.cli import main; rc = main(['validate', sys.argv[1]]); "
            "assert 'pyspark' not in sys.modules and 'airflow' not in sys.modules; sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, str(contract)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("module", ["airflow_dq_contracts.engine.session"])
def test_spark_world_imports_no_airflow(module):
    mods = _imports_after(f"import {module}")
    assert not any(m == "airflow" or m.startswith("airflow.") for m in mods)


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./dev test" in readme.split("\n## ")[0]
    assert "./dev demo" in readme.split("\n## ")[0]
    assert ci.strip().splitlines()[-1] == "exec ./dev test"
