"""The UI plugin on the Airflow that is installed — the compatibility matrix runs this file in its oldest environment
(Airflow 3.0, which has no external views) as well as in the development set (3.1+).

One real ``airflow api-server`` with the installed provider: the plugin's pages answer at their URL (200 with a
login, 401 without), the summary is read at the server's start on this Airflow too (its root middleware is
honoured), the check task's link points at the run page that the server serves, and on 3.0 nothing declares or
lists external views (3.1+ lists both).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import ui_demo  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))

PREFIX = "/dq-contracts"

pytestmark = pytest.mark.airflow


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def _provider_path(folder: Path) -> list[str]:
    """Where the API server imports the provider from: the installed distribution when this process imports it
    from there (the matrix installs the wheel), else this checkout installed into ``folder``."""
    import importlib.metadata

    import airflow_dq_contracts

    here = Path(airflow_dq_contracts.__file__).resolve().parent
    try:
        dist = importlib.metadata.distribution("airflow-dq-contracts")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        root = Path(str(dist.locate_file(""))).resolve()
        if (root / "airflow_dq_contracts").resolve() == here and any(
            entry.group == "airflow.plugins" for entry in dist.entry_points
        ):
            return [str(root)]
    return [str(ui_demo.install_provider(folder / "site"))]


def test_the_pages_answer_at_their_url_and_external_views_only_where_airflow_has_them(tmp_path, monkeypatch):
    from airflow_dq_contracts.operators.report_link import ui_run_url
    from airflow_dq_contracts.storage.locations import TableLocation
    from airflow_dq_contracts.ui.plugin import DataQualityPlugin
    from airflow_dq_contracts.version_compat import AIRFLOW_V_3_1_PLUS

    tables = ui_demo.write_ui_tables(tmp_path / "tables")
    settings = {
        "AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE": tables.results,
        # Airflow 3.0.2 signs its tokens with no issuer, which PyJWT's later releases refuse: name one.
        "AIRFLOW__API_AUTH__JWT_ISSUER": "dq-contracts-tests",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",  # the plugin logs when its summary read at start is ready
    }
    with ui_demo.api_server(tmp_path / "home", pythonpath=_provider_path(tmp_path), settings=settings) as server:
        token = server.token("admin")

        status, body = _get(f"{server.url}/api/v2/plugins", token)
        assert status == 200
        (plugin,) = [p for p in json.loads(body)["plugins"] if p["name"] == "dq_contracts"]
        assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == [PREFIX]
        assert [m["middleware"] for m in plugin["fastapi_root_middlewares"]] == [
            "airflow_dq_contracts.ui.plugin.WarmAtStart"
        ]
        views: list[Any] = plugin.get("external_views") or []
        if AIRFLOW_V_3_1_PLUS:
            assert {view["destination"] for view in views} == {"nav", "task_instance"}
        else:
            assert views == [] and "external_views" not in body
            assert not hasattr(DataQualityPlugin, "external_views")

        expected = {"orders", "customers", "payments"}
        for path in (f"{PREFIX}/", f"{PREFIX}/api/v1/contracts", f"{PREFIX}/runs/{tables.orders_last_run}"):
            status, body = _get(server.url + path)
            assert status == 401, path
            assert "checkout-team" not in body and "payments" not in body, path
            status, body = _get(server.url + path, token)
            assert status == 200, (path, body[:500])
        status, body = _get(f"{server.url}{PREFIX}/api/v1/contracts", token)
        names = {row["name"] for row in json.loads(body)["contracts"]}
        assert expected <= names
        status, body = _get(f"{server.url}{PREFIX}/", token)
        assert all(name in body for name in expected)

        # The check task's link (the operator's, read with this Airflow's configuration) opens the run page here.
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AIRFLOW__API__BASE_URL", server.url)
        link = ui_run_url(tables.orders_last_run, TableLocation.resolve(tables.results))
        assert link == f"{server.url}{PREFIX}/runs/{tables.orders_last_run}"
        status, body = _get(link, token)
        assert status == 200 and tables.orders_last_run in body

        # The root middleware ran on this Airflow: the summary was read when the server started (logged once done).
        deadline = time.monotonic() + 60
        while "Data quality UI: the summary of" not in server.log.read_text(errors="replace"):
            assert time.monotonic() < deadline, server.log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
