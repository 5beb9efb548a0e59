"""The UI plugin reading results tables on S3 through ``[dq_contracts] storage_conn_id`` (a real API server).

The results table and the registry are written to the session's S3 server (SeaweedFS, ``tests/s3_fixtures.py``)
through the results port; the API server knows the location as ``AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE`` and the
credentials only as an ``aws`` Airflow connection (``AIRFLOW_CONN_LAKE_S3``; no ``AWS_*`` variable in its
environment). Expected numbers come from an independent delta-rs read with the same storage options; the
connection's secret key appears in no page. One API server (``scripts/ui_demo.py``), started once here.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import ui_demo  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))
from test_ui import PREFIX, assert_contract_rows, expected_contracts, get, page_rows  # noqa: E402

pytestmark = pytest.mark.airflow
UTC = dt.timezone.utc
CONN_ID = "lake_s3"


def write_s3_tables(results: str, options: dict[str, str]) -> dict[str, list[str]]:
    """Two contracts' runs written through the results port, and their registry rows; run ids per contract."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from airflow_dq_contracts.results import make_run_id
    from airflow_dq_contracts.storage.locations import TableLocation
    from airflow_dq_contracts.store.results import open_results_store
    from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS

    sys.path.insert(0, str(ROOT / "scripts"))
    import report_demo

    sys.path.remove(str(ROOT / "scripts"))
    store = open_results_store(TableLocation.resolve(results, storage_options=options))
    start = dt.datetime(2024, 6, 1, tzinfo=UTC)
    runs: dict[str, list[str]] = {"lake_orders": [], "lake_events": []}
    for day in range(3):
        at = start + dt.timedelta(days=day)
        run_id = make_run_id("lake_orders", at.isoformat())
        failing = day == 2
        checks = [
            ("_table_/row_count", "P1", "gate", "passed", None),
            ("order_id/not_null", "P0", "gate", "failed" if failing else "passed", 5 if failing else 0),
            ("email/format", "P2", "flag", "failed", 2),
        ]
        store.write_run(ui_demo.records("lake_orders", "1.0.0", run_id, at, ui_demo.ALLOWED_DAG, checks, 100), run_id)
        runs["lake_orders"].append(run_id)
    for day in range(2):
        at = start + dt.timedelta(days=day, hours=5)
        run_id = make_run_id("lake_events", at.isoformat())
        checks = [("event_id/unique", "P1", "quarantine", "passed", 0), ("_table_/fresh", "P3", "flag", "passed", None)]
        store.write_run(ui_demo.records("lake_events", "2.0.0", run_id, at, ui_demo.ALLOWED_DAG, checks, 40), run_id)
        runs["lake_events"].append(run_id)
    registry = [
        {name: None for name, _ in REGISTRY_COLUMNS}
        | {
            "contract_name": name,
            "contract_version": version,
            "owner": f"{name}-team@example.com",
            "dataset": f"silver.{name}",
            "contract_text": f"name: {name}\nversion: {version}\n",
            "consumers": [],
            "tags": [],
            "last_run_id": runs[name][-1],
        }
        for name, version in (("lake_orders", "1.0.0"), ("lake_events", "2.0.0"))
    ]
    write_deltalake(
        store.registry_location,
        pa.Table.from_pylist(registry, schema=report_demo.arrow_schema(REGISTRY_COLUMNS)),
        storage_options=options,
    )
    return runs


def test_pages_read_results_on_s3_through_the_storage_connection(s3, tmp_path, monkeypatch):
    from airflow_dq_contracts.storage.s3 import S3_ENV_NAMES

    settings = s3.settings
    options = settings.delta_options()
    results = s3.url("dq/dq_results")
    runs = write_s3_tables(results, options)
    secret = str(settings.secret_access_key)
    conn = {
        "conn_type": "aws",
        "login": settings.access_key_id,
        "password": secret,
        "extra": {"endpoint_url": settings.endpoint_url, "region_name": settings.region or "us-east-1"},
    }
    site = ui_demo.install_provider(tmp_path / "site")
    for name in S3_ENV_NAMES:  # the API server's environment (a copy of this one) names no S3 credentials
        monkeypatch.delenv(name, raising=False)
    server_settings = {
        "AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE": results,
        "AIRFLOW__DQ_CONTRACTS__STORAGE_CONN_ID": CONN_ID,
        f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(conn),
    }
    with ui_demo.api_server(
        tmp_path / "home",
        pythonpath=[str(site), str(ROOT / "tests")],
        settings=server_settings,
        auth_manager="ui_auth_manager.DagDenyingAuthManager",
    ) as server:
        # The server reaches S3 only through the connection: no AWS_* variable of this process went along.
        assert not any(name in server.env for name in S3_ENV_NAMES)
        server.tokens = {"admin": server.token("admin")}  # type: ignore[attr-defined]
        bodies: list[str] = []

        def fetch(path: str) -> str:
            status, body = get(server, path, "admin")
            assert status == 200, (path, body[:500])
            bodies.append(body)
            return body

        expected = expected_contracts(results, storage_options=options)
        assert set(expected) == {"lake_orders", "lake_events"}
        data = json.loads(fetch(f"{PREFIX}/api/v1/contracts"))
        assert data["results_table"] == results and data["count"] == 2
        by_name = {row["name"]: row for row in data["contracts"]}
        assert_contract_rows(by_name, expected)
        for name in expected:
            assert by_name[name]["owner"] == f"{name}-team@example.com"
        assert by_name["lake_orders"]["last_decision"] == "gate"  # the independent reading agrees on a gate

        rows = page_rows(fetch(f"{PREFIX}/"))
        assert set(rows) == set(expected)
        for name, want in expected.items():
            assert rows[name]["decision"] == want["decision"]
            assert rows[name]["score"].strip() == f"{want['score'] * 100:.1f}%"
            assert int(rows[name]["runs"]) == want["runs"]

        detail = json.loads(fetch(f"{PREFIX}/api/v1/contracts/lake_orders?days=3650"))
        assert [run["run_id"] for run in detail["runs"]] == runs["lake_orders"]
        assert {f["check_id"]: f["failed"] for f in detail["failing_checks"]} == {
            "email/format": 3,
            "order_id/not_null": 1,
        }
        fetch(f"{PREFIX}/contracts/lake_orders")

        last = runs["lake_orders"][-1]
        page = fetch(f"{PREFIX}/runs/{last}")
        assert 'data-status="failed"' in page
        for check_id in expected["lake_orders"]["failed"]:
            assert check_id in page
        run = json.loads(fetch(f"{PREFIX}/api/v1/runs/{last}"))["run"]
        assert run["decision"] == "gate"
        assert (
            sorted(c["check_id"] for c in run["checks"] if c["status"] != "passed") == expected["lake_orders"]["failed"]
        )

        # The connection's secret is in no page and no JSON answer.
        assert bodies and not any(secret in body for body in bodies)
