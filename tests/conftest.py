"""Shared fixtures. Spark tests share one real local SparkSession with Delta (session scope)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
# spark-submit and the CLI must come from this environment, whatever the caller's PATH.
os.environ["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.pop("SPARK_HOME", None)

# Airflow reads AIRFLOW_HOME and its database URL once, at first import: the throw-away test
# environment must be in place before any test module (or plugin) imports airflow.
pytest_plugins = ["ci_guard", "airflow_fixtures", "s3_fixtures", "pg_fixtures", "kafka_fixtures"]


@pytest.fixture(scope="session")
def spark():
    """A real local SparkSession with Delta and Spark's Kafka source, shared by the whole test session."""
    from airflow_dq_contracts.engine.session import get_spark

    session = get_spark(app_name="dq-contracts-tests", master="local[2]", kafka=True)
    yield session
    session.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that asks for the ``spark`` fixture is a Spark test, marked or not.

    ``-m "not spark"`` (the compatibility matrix's plain-Python step, a quick local run) must never
    start a JVM because one test forgot its marker (test_enforcement's Spark tests had none).
    """
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(autouse=True)
def _working_directory_kept() -> Iterator[None]:
    """A test that leaves the process in another directory fails, and the directory is put back.

    A passed test's ``tmp_path`` is removed at its teardown (``tmp_path_retention_policy``): a bare
    ``os.chdir(tmp_path)`` would leave every later test — and every ``spark-submit`` it starts — in a
    folder that no longer exists (``monkeypatch.chdir`` restores it).
    """
    before = os.getcwd()
    yield
    try:
        now: str | None = os.getcwd()
    except FileNotFoundError:
        now = None  # the directory it moved to is already gone
    if now != before:
        os.chdir(before)
        pytest.fail(f"the test left the working directory at {now or 'a removed folder'} (use monkeypatch.chdir)")
