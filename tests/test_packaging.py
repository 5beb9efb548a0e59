"""Packaging: pinned Spark is coherent, the provider is registered, the three worlds stay apart."""

from __future__ import annotations

import contextlib
import glob
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_dq_contracts.runtime import jars, spark_config

ROOT = Path(__file__).resolve().parent.parent


def test_pyspark_python_matches_its_jars_and_spark_submit_is_found():
    """pyspark-client must not have overwritten PySpark's Python files with another version's."""
    import pyspark

    installed = importlib.metadata.version("pyspark")
    assert pyspark.__version__ == installed
    # the Spark provider pulls pyspark-client (6.x); older providers do not
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        assert importlib.metadata.version("pyspark-client") == installed
    assert spark_config.pyspark_distribution_problem() is None
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-core_*.jar"))
    assert jars, "pyspark wheel ships no spark-core jar"
    assert all(f"-{installed}.jar" in Path(j).name for j in jars), jars
    assert spark_config.installed_spark_version() == installed
    assert shutil.which("spark-submit"), "spark-submit is not on PATH"


def test_delta_python_package_and_maven_coordinate_follow_the_installed_spark():
    assert importlib.metadata.version("delta-spark") == spark_config.DELTA_VERSION
    minor = ".".join(importlib.metadata.version("pyspark").split(".")[:2])
    assert spark_config.delta_package() == f"io.delta:delta-spark_{minor}_2.13:{spark_config.DELTA_VERSION}"


@pytest.mark.parametrize(
    "spark_version,artifact",
    [
        ("4.0.1", "delta-spark_4.0_2.13"),
        ("4.0.3", "delta-spark_4.0_2.13"),
        ("4.1.0", "delta-spark_4.1_2.13"),
        ("4.1.1", "delta-spark_4.1_2.13"),
    ],
)
def test_delta_package_per_spark_minor(monkeypatch, spark_version, artifact):
    monkeypatch.delenv(spark_config.DELTA_PACKAGE_ENV, raising=False)
    assert spark_config.delta_package(spark_version) == f"io.delta:{artifact}:4.4.0"


def test_delta_package_override_and_unknown_spark(monkeypatch, tmp_path):
    from airflow_dq_contracts.runtime.jars import JarResolutionError

    monkeypatch.delenv(spark_config.DELTA_PACKAGE_ENV, raising=False)
    with pytest.raises(ValueError, match="DQ_CONTRACTS_DELTA_PACKAGE"):
        spark_config.delta_package("3.5.1")
    monkeypatch.setenv(spark_config.DELTA_PACKAGE_ENV, "io.delta:delta-spark_4.2_2.13:4.5.0")
    assert spark_config.delta_package("3.5.1") == "io.delta:delta-spark_4.2_2.13:4.5.0"
    # The override is what gets resolved into local jars (never --packages): this coordinate does not
    # exist, so resolution fails with one message naming it and the offline route.
    monkeypatch.delenv(spark_config.DELTA_JARS_ENV, raising=False)
    monkeypatch.setenv("DQ_CONTRACTS_JARS_DIR", str(tmp_path / "jars"))
    with pytest.raises(JarResolutionError, match=r"delta-spark_4\.2_2\.13:4\.5\.0(.|\n)*Offline route"):
        jars.delta_dependency_conf(ivy_home=str(tmp_path / "ivy"))


def test_spark_home_decides_the_spark_version(monkeypatch, tmp_path):
    """An existing Spark install (SPARK_HOME) is what spark-submit runs, whatever pip installed."""
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "spark-core_2.13-4.0.2.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    monkeypatch.delenv(spark_config.DELTA_PACKAGE_ENV, raising=False)
    assert spark_config.installed_spark_version() == "4.0.2"
    assert spark_config.delta_package() == "io.delta:delta-spark_4.0_2.13:4.4.0"


def test_mismatched_pyspark_client_is_named(monkeypatch):
    versions = {"pyspark": "4.1.1", "pyspark-client": "4.2.0"}
    monkeypatch.setattr(spark_config, "_dist_version", versions.__getitem__)
    problem = spark_config.pyspark_distribution_problem()
    assert problem and "pyspark 4.1.1" in problem and "pyspark-client 4.2.0" in problem
    versions["pyspark-client"] = "4.1.1"
    assert spark_config.pyspark_distribution_problem() is None


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
    mods = _imports_after(
        "import airflow_dq_contracts.contract, airflow_dq_contracts.results, airflow_dq_contracts.cli.main"
    )
    assert not any(m == "pyspark" or m.startswith("pyspark.") for m in mods)
    assert not any(m == "airflow" or m.startswith("airflow.") for m in mods)


def test_cli_validate_is_plain_python(tmp_path):
    """`dq-contracts validate` must answer without starting a JVM or importing Airflow."""
    contract = tmp_path / "c.yaml"
    contract.write_text("name: t\ncolumns:\n  - name: a\n    checks:\n      - {name: n, type: missing, max: 0}\n")
    code = (
        "import sys; from airflow_dq_contracts.cli.main import main; rc = main(['validate', sys.argv[1]]); "
        "assert 'pyspark' not in sys.modules and 'airflow' not in sys.modules; sys.exit(rc)"
    )
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
