"""The store's commits on S3 without Spark (delta-rs, conditional writes), and the s3a jars Spark gets.

Against the tests' SeaweedFS. Expected rows are written out here; tables are read back with
delta-rs directly.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from s3_fixtures import S3Place

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.results import CheckResult
from airflow_dq_contracts.runtime import jars
from airflow_dq_contracts.store.delta import StoreError
from airflow_dq_contracts.store.results import driver_commits as delta_commits
from airflow_dq_contracts.store.results import registry

UTC = dt.timezone.utc


def _record(run_id: str, check: str, metric: float) -> CheckResult:
    return CheckResult(
        run_id=run_id,
        contract_name="orders",
        contract_version="1",
        dataset="s3://lake/orders",
        check_id=f"_table_/{check}",
        check_name=check,
        check_type="num_rows",
        column=None,
        severity="P1",
        action="gate",
        validator="> 0",
        metric_value=metric,
        status="passed",
        passed=True,
        failed_rows=None,
        message="",
        row_count=int(metric),
        evaluated_at=dt.datetime(2024, 5, 2, tzinfo=UTC),
    )


def _rows(location: str, s3: S3Place) -> list[tuple]:
    from deltalake import DeltaTable

    table = DeltaTable(location, storage_options=s3.settings.delta_options()).to_pyarrow_table()
    return sorted((r["run_id"], r["check_id"], r["metric_value"]) for r in table.to_pylist())


def test_a_new_run_creates_then_appends_and_a_retry_replaces_only_its_rows(s3: S3Place, monkeypatch) -> None:
    from deltalake import DeltaTable

    for name, value in s3.settings.to_env().items():  # the standard environment, as in the job's driver
        monkeypatch.setenv(name, value)
    results = s3.url("dq/dq_results", scheme="s3a")  # Spark's name: delta-rs gets s3://
    v0 = delta_commits.commit_results(results, [_record("r1", "volume", 3), _record("r1", "rows", 3)], "r1")
    v1 = delta_commits.commit_results(results, [_record("r2", "volume", 5)], "r2")
    # the retry of r1 (other numbers): its two rows are replaced by one, r2 untouched
    v2 = delta_commits.commit_results(results, [_record("r1", "volume", 4)], "r1")
    assert (v0, v1, v2) == (0, 1, 2)
    location = s3.url("dq/dq_results")
    assert _rows(location, s3) == [("r1", "_table_/volume", 4.0), ("r2", "_table_/volume", 5.0)]
    table = DeltaTable(location, storage_options=s3.settings.delta_options())
    assert table.metadata().partition_columns == ["contract_name"]
    assert [json.loads(c["userMetadata"])["run_id"] for c in sorted(table.history(), key=lambda c: c["version"])] == [
        "r1",
        "r2",
        "r1",
    ]


def test_a_foreign_table_is_refused_with_its_location_and_left_alone(s3: S3Place) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    location = s3.url("dq/not_results")
    write_deltalake(location, pa.table({"x": [1]}), storage_options=s3.settings.delta_options())
    with pytest.raises(StoreError, match=r"not_results.*not of this release's results schema"):
        delta_commits.commit_results(
            location, [_record("r1", "volume", 1)], "r1", storage_options=s3.settings.delta_options()
        )
    from deltalake import DeltaTable

    assert DeltaTable(location, storage_options=s3.settings.delta_options()).version() == 0


def _registry_row(results_table: str, run_id: str, day: int) -> dict:
    """The registry row of a run of contract ``orders`` 1 on day ``day`` of May 2024."""
    contract = load_contract({"name": "orders", "version": "1", "columns": [{"name": "id", "type": "long"}]})
    return registry.registry_row(
        contract,
        contract_text="name: orders",
        run_id=run_id,
        run_at=dt.datetime(2024, 5, day, tzinfo=UTC),
        decision="pass",
        dataset="s3://lake/orders",
        results_table=results_table,
        quarantine_table=None,
        valid_table=None,
    )


def test_the_registry_is_created_and_upserted_on_s3(s3: S3Place) -> None:
    options = s3.settings.delta_options()
    location = registry.registry_table_for(s3.url("dq/dq_results"))

    def row(run_id: str, day: int) -> dict:
        return _registry_row(s3.url("dq/dq_results"), run_id, day)

    assert delta_commits.upsert_registry(location, row("r2", 2), storage_options=options)  # creates it
    assert delta_commits.upsert_registry(location, row("r1", 1), storage_options=options)  # an older run
    found = registry.read_registry(location, "orders", "1", storage_options=options)
    assert found is not None
    assert found["last_run_id"] == "r2" and found["first_run_at"] == dt.datetime(2024, 5, 1, tzinfo=UTC)


def test_first_runs_racing_to_create_the_registry_on_s3_all_register(s3: S3Place) -> None:
    """Eight first runs at once on a registry that does not exist yet: each one's upsert lands.

    A run that finds no table, then finds it created by another before its own creation, opens it
    and upserts (it used to give up, and its job failed). The folded row is the latest run's, with
    the earliest first run.
    """
    import threading

    options = s3.settings.delta_options()
    location = registry.registry_table_for(s3.url("dq/race_results"))
    runs = 8
    start = threading.Barrier(runs)
    landed: dict[int, bool | BaseException] = {}

    def upsert(day: int) -> None:
        row = _registry_row(s3.url("dq/race_results"), f"r{day}", day)
        start.wait()
        try:
            landed[day] = delta_commits.upsert_registry(location, row, storage_options=options)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            landed[day] = exc

    threads = [threading.Thread(target=upsert, args=(day,)) for day in range(1, runs + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert landed == {day: True for day in range(1, runs + 1)}
    found = registry.read_registry(location, "orders", "1", storage_options=options)
    assert found is not None
    assert found["last_run_id"] == f"r{runs}" and found["first_run_at"] == dt.datetime(2024, 5, 1, tzinfo=UTC)


def test_the_s3a_jars_match_sparks_hadoop_without_the_sdk_bundle() -> None:
    """Resolved like Delta's (``./dev`` prefetches them with ``jars fetch --with s3``)."""
    hadoop = jars.installed_hadoop_version()
    assert hadoop is not None
    found = [Path(p) for p in jars.s3_jars()]
    names = [p.name for p in found]
    assert f"org.apache.hadoop_hadoop-aws-{hadoop}.jar" in names
    sdk = jars.HADOOP_AWS_SDK[hadoop]
    for module in ("s3", "s3-transfer-manager", "sts", "auth", "apache-client"):
        assert f"software.amazon.awssdk_{module}-{sdk}.jar" in names
    assert not any("bundle" in n for n in names)
    assert not any(n.startswith("io.netty_") for n in names)  # Spark ships netty: never a second, older copy
    assert sum(os.path.getsize(p) for p in found) < 40_000_000  # vs ~600 MB for the SDK bundle
