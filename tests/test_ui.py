"""The UI plugin in a real Airflow API server, browsed over HTTP and with a real headless Chromium.

One API server for the module (``scripts/ui_demo.py``): the provider is *installed* from this checkout into a
folder (its ``airflow.plugins`` entry point is what Airflow loads — nothing is copied into ``plugins/``), the
auth manager is SimpleAuthManager with per-DAG denials (``tests/ui_auth_manager.py``), and the results tables
are the report demo's plus contracts written through the results port. Expected numbers come from an
independent read of the results table with delta-rs and plain Python (:func:`expected_contracts`).
"""

from __future__ import annotations

import datetime as dt
import html
import html.parser
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import report_demo  # noqa: E402
import ui_demo  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))

ARTIFACTS = Path(os.environ.get("DQ_TEST_ARTIFACTS", ROOT / ".work" / "test-artifacts"))
PREFIX = "/dq-contracts"
WEIGHTS = {"P0": 8, "P1": 4, "P2": 2, "P3": 1}

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """(server, tables) — the API server is stopped when the module's tests are done."""
    folder = tmp_path_factory.mktemp("ui")
    tables = ui_demo.write_ui_tables(folder / "tables")
    site = ui_demo.install_provider(folder / "site")
    # The warehouse: the pages name the results table relative to it (no temporary folder in the screenshot).
    settings = {
        "AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE": tables.results,
        "AIRFLOW__DQ_CONTRACTS__WAREHOUSE": str(folder / "tables"),
    }
    pythonpath = [str(site), str(ROOT / "tests")]  # the installed provider; the test's auth manager module
    with ui_demo.api_server(
        folder / "home", pythonpath=pythonpath, settings=settings, auth_manager="ui_auth_manager.DagDenyingAuthManager"
    ) as server:
        server.tokens = {user: server.token(user) for user in ui_demo.PASSWORDS}  # type: ignore[attr-defined]
        yield server, tables, site


def get(server: Any, path: str, user: str | None = None, token: str | None = None) -> tuple[int, str]:
    headers = {}
    if user is not None:
        token = server.tokens[user]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(server.url + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def quoted(value: str) -> str:
    return urllib.parse.quote(value, safe="")


# ------------------------------------------------------------------ the independent reading (delta-rs)


def assert_contract_rows(by_name: dict[str, Any], expected: dict[str, Any]) -> None:
    """The JSON API's contract rows (by name) say what the independent reading of the tables expects."""
    for name, want in expected.items():
        row = by_name[name]
        assert (row["last_run_id"], row["last_decision"], row["last_score"], row["runs"]) == (
            want["run_id"],
            want["decision"],
            want["score"],
            want["runs"],
        ), name
        assert dt.datetime.fromisoformat(row["last_run_at"]) == want["at"]


def expected_contracts(
    results: str, readable: Any = lambda dag: True, storage_options: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per contract, from the results table read with delta-rs: runs visible, last run id/decision/score."""
    from deltalake import DeltaTable

    from airflow_dq_contracts.results import CheckResult, decide

    rows = DeltaTable(results, storage_options=storage_options).to_pyarrow_table().to_pylist()
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if readable(row["dag_id"]):
            runs[(row["contract_name"], row["run_id"])].append(row)
    out: dict[str, dict[str, Any]] = {}
    for (contract, run_id), checks in runs.items():
        at = min(c["evaluated_at"] for c in checks)
        entry = out.setdefault(contract, {"runs": 0, "at": None})
        entry["runs"] += 1
        if entry["at"] is None or at > entry["at"]:
            total = sum(WEIGHTS.get(c["severity"], 1) for c in checks)
            passed = sum(WEIGHTS.get(c["severity"], 1) for c in checks if c["status"] == "passed")
            entry.update(
                at=at,
                run_id=run_id,
                decision=decide(CheckResult.from_dict(c) for c in checks),
                score=round(passed / total, 4),
                failed=sorted(c["check_id"] for c in checks if c["status"] != "passed"),
            )
    return out


class ContractRows(html.parser.HTMLParser):
    """The contracts page's table rows: contract name (data attribute), decision, score and runs cells."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self._row: dict[str, str] | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "tr" and values.get("data-contract") is not None:
            self._row = {"decision": values.get("data-decision") or ""}
            self.rows[values["data-contract"] or ""] = self._row
        elif tag == "td" and self._row is not None:
            classes = (values.get("class") or "").split()
            self._cell = next((c for c in ("score", "runs", "never-fired") if c in classes), None)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._cell:
            self._row[self._cell] = self._row.get(self._cell, "") + data


def page_rows(text: str) -> dict[str, dict[str, str]]:
    parser = ContractRows()
    parser.feed(text)
    return parser.rows


# ------------------------------------------------------------------ tests


def test_the_plugin_is_loaded_from_the_installed_distributions_entry_point(ui):
    server, _tables, site = ui
    status, body = get(server, "/api/v2/plugins", "admin")
    assert status == 200
    (plugin,) = [p for p in json.loads(body)["plugins"] if p["name"] == "dq_contracts"]
    assert plugin["source"].startswith("airflow-dq-contracts==")
    assert "group='airflow.plugins'" in plugin["source"]
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == [PREFIX]
    assert {view["destination"] for view in plugin["external_views"]} == {"nav", "task_instance"}
    # The server imports the installed copy, which is this checkout's code (not a stale build).
    for module in ("ui/app.py", "ui/views.py", "ui/summary.py", "ui/pages.py", "store/results/delta_store.py"):
        assert (site / "airflow_dq_contracts" / module).read_text() == (
            ROOT / "airflow_dq_contracts" / module
        ).read_text()
    # The section is Airflow configuration: the provider declares it.
    from airflow_dq_contracts.get_provider_info import get_provider_info

    assert set(get_provider_info()["config"]["dq_contracts"]["options"]) == {
        "results_table",
        "warehouse",
        "storage_conn_id",
    }


def test_every_route_refuses_a_request_without_a_login(ui):
    server, tables, _site = ui
    routes = [
        f"{PREFIX}/",
        f"{PREFIX}/?q=orders&sort=last_score&order=desc",
        f"{PREFIX}/contracts/orders",
        f"{PREFIX}/runs/{tables.orders_last_run}",
        f"{PREFIX}/task-instance/{ui_demo.ALLOWED_DAG}/x/y",
        f"{PREFIX}/api/v1/contracts",
        f"{PREFIX}/api/v1/contracts/orders",
        f"{PREFIX}/api/v1/runs/{tables.orders_last_run}",
        f"{PREFIX}/docs",
        f"{PREFIX}/openapi.json",
    ]
    for route in routes:
        status, body = get(server, route)
        assert status in (401, 404), route
        assert status == 401 or route.endswith(("/docs", "/openapi.json")), route  # no OpenAPI pages at all
        assert "checkout-team" not in body and "payments" not in body and tables.orders_last_run not in body, route
        status, body = get(server, route, token="not-a-token")
        assert status in (401, 403, 404) and "checkout-team" not in body, route


def test_contracts_page_and_json_show_what_the_results_table_holds(ui):
    server, tables, _site = ui
    expected = expected_contracts(tables.results)
    status, body = get(server, f"{PREFIX}/api/v1/contracts", "admin")
    assert status == 200
    data = json.loads(body)
    assert data["api_version"] == "v1" and data["count"] == len(expected) == 4
    by_name = {row["name"]: row for row in data["contracts"]}
    assert set(by_name) == set(expected)
    assert_contract_rows(by_name, expected)
    assert by_name["orders"]["owner"] == "checkout-team@example.com" and by_name["orders"]["version"] == "2.2.0"

    status, page = get(server, f"{PREFIX}/", "admin")
    assert status == 200
    assert "results table dq_results<" in page and tables.results not in page  # named inside its warehouse
    rows = page_rows(page)
    assert set(rows) == set(expected)
    for name, want in expected.items():
        assert rows[name]["decision"] == want["decision"]
        assert rows[name]["score"].strip() == f"{want['score'] * 100:.1f}%"
        assert int(rows[name]["runs"]) == want["runs"]

    # Filter and sort are query parameters.
    _status, page = get(server, f"{PREFIX}/?decision=gate&sort=last_score&order=desc", "admin")
    gates = sorted((w["score"], n) for n, w in expected.items() if w["decision"] == "gate")
    assert list(page_rows(page)) == [name for _score, name in reversed(gates)]
    _status, body = get(server, f"{PREFIX}/api/v1/contracts?q=CHECKOUT-team", "admin")
    assert [row["name"] for row in json.loads(body)["contracts"]] == ["orders"]


def test_contract_page_timeline_failing_checks_and_version_diff(ui):
    server, tables, _site = ui
    status, body = get(server, f"{PREFIX}/api/v1/contracts/orders?days=3650", "admin")
    assert status == 200
    detail = json.loads(body)
    expected = expected_contracts(tables.results)["orders"]
    assert len(detail["runs"]) == expected["runs"] and detail["runs"][-1]["run_id"] == expected["run_id"]
    assert [v["version"] for v in detail["versions"]] == ["2.1.0", "2.2.0"]
    descriptions = [c["description"] for c in detail["diff"]["changes"]]
    assert "column 'tags' removed" in descriptions and detail["diff"]["old"] == "2.1.0"
    assert any(line.startswith("+version: 2.2.0") for line in detail["diff"]["text_diff"])
    # Checks failing most, counted by hand from the table.
    from deltalake import DeltaTable

    rows = [r for r in DeltaTable(tables.results).to_pyarrow_table().to_pylist() if r["contract_name"] == "orders"]
    failures: dict[str, int] = defaultdict(int)
    for row in rows:
        failures[row["check_id"]] += row["status"] != "passed"
    assert {f["check_id"]: f["failed"] for f in detail["failing_checks"]} == {k: v for k, v in failures.items() if v}
    status, page = get(server, f"{PREFIX}/contracts/orders?from=2.1.0&to=2.2.0", "admin")
    assert status == 200 and 'id="timeline"' in page and "column &#x27;tags&#x27; removed" in page
    assert get(server, f"{PREFIX}/contracts/no-such-contract", "admin")[0] == 404


def test_run_page_lists_the_failed_checks_with_quarantined_samples(ui):
    server, tables, _site = ui
    from deltalake import DeltaTable

    demo_last = DeltaTable(tables.registry).to_pyarrow_table().to_pylist()
    (orders_v1,) = [r for r in demo_last if r["contract_name"] == "orders" and r["contract_version"] == "2.1.0"]
    run_id = orders_v1["last_run_id"]
    rows = [r for r in DeltaTable(tables.results).to_pyarrow_table().to_pylist() if r["run_id"] == run_id]
    failed = sorted(r["check_id"] for r in rows if r["status"] != "passed")
    status, page = get(server, f"{PREFIX}/runs/{run_id}", "admin")
    assert status == 200
    assert 'data-status="failed"' in page
    for check_id in failed:
        assert html.escape(check_id) in page
    assert "Quarantined rows" in page
    status, body = get(server, f"{PREFIX}/api/v1/runs/{run_id}", "admin")
    data = json.loads(body)
    assert sorted(c["check_id"] for c in data["run"]["checks"] if c["status"] != "passed") == failed
    assert data["samples_shown"] is True and any(data["samples"].values())
    # Without task-log permission: the run, not its quarantined rows.
    status, page = get(server, f"{PREFIX}/runs/{run_id}", "nologs")
    assert status == 200 and "need permission to read this DAG" in page and 'class="sample"' not in page
    data = json.loads(get(server, f"{PREFIX}/api/v1/runs/{run_id}", "nologs")[1])
    assert data["samples_shown"] is False and data["samples"] == {}


def test_masked_values_never_reach_a_page(ui):
    server, tables, _site = ui
    run_id = tables.payments_runs[-1]
    status, page = get(server, f"{PREFIX}/runs/{run_id}", "admin")
    assert status == 200 and 'class="sample"' in page  # the quarantined rows are shown …
    assert ui_demo.SECRET_VALUE not in page and "***" in page  # … their password column masked by Airflow
    status, body = get(server, f"{PREFIX}/api/v1/runs/{run_id}", "admin")
    samples = json.loads(body)["samples"]["amount/positive"]
    assert len(samples) == 7 and {row["password"] for row in samples} == {"***"}
    assert ui_demo.SECRET_VALUE not in body


def test_a_user_denied_a_dag_sees_none_of_its_contracts_runs_or_rows(ui):
    server, tables, _site = ui
    readable = lambda dag: dag != ui_demo.DENIED_DAG  # noqa: E731
    expected = expected_contracts(tables.results, readable)
    assert "payments" not in expected and expected["customers"]["decision"] == "pass"
    data = json.loads(get(server, f"{PREFIX}/api/v1/contracts", "restricted")[1])
    by_name = {row["name"]: row for row in data["contracts"]}
    assert set(by_name) == set(expected)
    for name, want in expected.items():
        assert (by_name[name]["last_decision"], by_name[name]["last_score"], by_name[name]["runs"]) == (
            want["decision"],
            want["score"],
            want["runs"],
        )
    status, page = get(server, f"{PREFIX}/", "restricted")
    assert status == 200 and "payments" not in page and set(page_rows(page)) == set(expected)
    detail = json.loads(get(server, f"{PREFIX}/api/v1/contracts/customers", "restricted")[1])
    assert {run["dag_id"] for run in detail["runs"]} == {ui_demo.ALLOWED_DAG}
    for route in (
        f"{PREFIX}/contracts/payments",
        f"{PREFIX}/api/v1/contracts/payments",
        f"{PREFIX}/runs/{tables.payments_runs[-1]}",
        f"{PREFIX}/api/v1/runs/{tables.payments_runs[-1]}",
        f"{PREFIX}/task-instance/{ui_demo.DENIED_DAG}/any/any",
    ):
        status, body = get(server, route, "restricted")
        assert status == 403, route
        assert "payments" not in body.replace(ui_demo.DENIED_DAG, "") and "amount" not in body, route
        assert get(server, route, "admin")[0] in (200, 303), route


def test_every_page_in_chromium_no_errors_no_external_requests_hostile_names_inert(ui):
    if report_demo.chromium_path() is None:
        pytest.fail("chromium is not installed (./dev setup installs it)")
    from playwright.sync_api import sync_playwright

    server, tables, _site = ui
    expected = expected_contracts(tables.results)
    pages = [
        f"{PREFIX}/",
        f"{PREFIX}/?decision=gate&sort=last_score&order=desc",
        f"{PREFIX}/contracts/orders",
        f"{PREFIX}/contracts/orders?from=2.1.0&to=2.2.0&days=3650",
        f"{PREFIX}/contracts/{quoted(ui_demo.HOSTILE_NAME)}",
        f"{PREFIX}/runs/{expected['orders']['run_id']}",
        f"{PREFIX}/runs/{tables.hostile_runs[-1]}",
        f"{PREFIX}/task-instance/{ui_demo.DENIED_DAG}/x/y",
        f"{PREFIX}/api/v1/contracts",
    ]
    requests: list[str] = []
    console: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=report_demo.chromium_path(),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_cookies([{"name": "_token", "value": server.tokens["admin"], "url": server.url}])
            page = context.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: console.append(str(exc)))
            for path in pages:
                response = page.goto(server.url + path, wait_until="load")
                assert response is not None and response.status == 200, path
                assert page.evaluate("() => window.__pwned === undefined"), path
                if path == f"{PREFIX}/":
                    # The contracts the table holds, with its verdicts; the hostile name shown as text.
                    shown = page.eval_on_selector_all(
                        "#contracts tbody tr", "rows => rows.map(r => [r.dataset.contract, r.dataset.decision])"
                    )
                    assert dict(shown) == {name: want["decision"] for name, want in expected.items()}
                    assert page.get_by_text(ui_demo.HOSTILE_NAME, exact=True).count() == 1
                if path.startswith(f"{PREFIX}/runs/{expected['orders']['run_id']}"):
                    failed = page.eval_on_selector_all(
                        '#checks tbody tr[data-status="failed"], #checks tbody tr[data-status="error"]',
                        "rows => rows.length",
                    )
                    assert failed == len(expected["orders"]["failed"])
            seen_errors = list(console)
            # Inside Airflow's own UI: the navigation entry's view frames the contracts page (same login).
            page.goto(server.url + "/plugin/dq-contracts", wait_until="load")
            framed = page.frame_locator("iframe").locator("#contracts tbody tr")
            framed.first.wait_for(timeout=60_000)
            assert framed.count() == len(expected)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "ui-contracts.png"))
            # The same pages, another user: the denied DAG's contract is not there.
            context.clear_cookies()
            context.add_cookies([{"name": "_token", "value": server.tokens["restricted"], "url": server.url}])
            page.goto(server.url + f"{PREFIX}/", wait_until="load")
            names = page.eval_on_selector_all("#contracts tbody tr", "rows => rows.map(r => r.dataset.contract)")
            assert "payments" not in names and "orders" in names
            assert page.goto(server.url + f"{PREFIX}/contracts/payments").status == 403
            context.clear_cookies()
            assert page.goto(server.url + f"{PREFIX}/").status == 401
        finally:
            browser.close()
    assert seen_errors == []
    assert requests and all(url.startswith(server.url + "/") for url in requests), sorted(set(requests))


def test_the_check_tasks_link_opens_the_run_page_when_the_plugin_serves_its_results_table(monkeypatch, tmp_path):
    from airflow_dq_contracts.operators.report_link import ui_run_url
    from airflow_dq_contracts.storage.locations import TableLocation

    results = TableLocation.resolve(str(tmp_path / "dq_results"))
    monkeypatch.delenv("AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE", raising=False)
    assert ui_run_url("dq-1", results) is None  # no plugin configured: the report's own link
    monkeypatch.setenv("AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE", str(tmp_path / "dq_results") + "/")
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/")
    assert ui_run_url("dq-1/x", results) == "https://airflow.example.com/dq-contracts/runs/dq-1%2Fx"
    monkeypatch.setenv("AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE", str(tmp_path / "other_results"))
    assert ui_run_url("dq-1", results) is None  # another results table: the UI cannot show this run


def test_a_run_committed_after_the_summary_is_found_and_the_overview_catches_up(tmp_path):
    import time

    from airflow_dq_contracts.results import make_run_id
    from airflow_dq_contracts.store.results import open_results_store
    from airflow_dq_contracts.ui.views import Access, ResultsView

    demo = report_demo.write_demo_tables(tmp_path, runs=3)
    store = open_results_store(demo.results)
    view = ResultsView(store)
    everything = Access.everything()
    assert [row.runs for row in view.contracts(everything)] == [3]
    at = dt.datetime(2024, 7, 1, tzinfo=dt.timezone.utc)
    run_id = make_run_id("late", at.isoformat())
    store.write_run(
        ui_demo.records("orders", "2.1.0", run_id, at, ui_demo.ALLOWED_DAG, [("x", "P1", "gate", "failed", None)], 5),
        run_id,
    )
    # The task's link is opened right after its run: the run page finds it at once.
    data, _samples = view.run(run_id, everything)
    assert data.result.run_id == run_id and data.result.decision == "gate"
    deadline = time.monotonic() + 30
    while view.contracts(everything)[0].runs != 4:  # the overview: within the version check and a rebuild
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert view.contracts(everything)[0].last_decision == "gate"


def test_a_contract_or_run_page_asked_first_reads_only_its_contract_and_agrees_with_the_overview(tmp_path):
    from airflow_dq_contracts.store.results import open_results_store
    from airflow_dq_contracts.ui.views import Access, NotFound, NotVisible, ResultsView

    tables = ui_demo.write_ui_tables(tmp_path / "tables")
    everything = Access.everything()
    restricted = Access(lambda dag: dag != ui_demo.DENIED_DAG, lambda dag: dag != ui_demo.DENIED_DAG)
    overview = ResultsView(open_results_store(tables.results))
    overview.contracts(everything)  # the whole-table summary is built
    first = ResultsView(open_results_store(tables.results))  # nothing read yet: one contract's partition
    for name in ("orders", "customers", ui_demo.HOSTILE_NAME):
        for access in (everything, restricted):
            alone, full = first.contract(name, access, days=3650), overview.contract(name, access, days=3650)
            assert (alone.runs, alone.failing, alone.never_fired) == (full.runs, full.failing, full.never_fired)
            assert [v["contract_version"] for v in alone.versions] == [v["contract_version"] for v in full.versions]
    assert first._summary is None  # no page above read the whole table
    data, samples = ResultsView(open_results_store(tables.results)).run(tables.payments_runs[-1], everything)
    assert data.result.decision == "quarantine" and samples is True
    with pytest.raises(NotVisible):
        ResultsView(open_results_store(tables.results)).run(tables.payments_runs[-1], restricted)
    with pytest.raises(NotFound):
        ResultsView(open_results_store(tables.results)).run("dq-no-such-run", everything)
    with pytest.raises(NotFound):
        ResultsView(open_results_store(tables.results)).contract("no-such-contract", everything)


def test_the_sql_summary_and_the_streamed_arrow_summary_agree(tmp_path):
    """The summary computed by delta-rs's SQL engine (one scan, grouping sets) and the one streamed and aggregated
    in Arrow (the fallback of a store that runs no SQL) give the same pages, hostile names and denied DAGs included."""
    from airflow_dq_contracts.store.results import open_results_store
    from airflow_dq_contracts.store.results.delta_store import DeltaResultsStore
    from airflow_dq_contracts.ui.summary import summarise_with_sql
    from airflow_dq_contracts.ui.views import Access, ResultsView

    class NoSQLStore(DeltaResultsStore):
        def query_results_table(self, queries: Any) -> None:
            return None

    tables = ui_demo.write_ui_tables(tmp_path / "tables")
    by_sql = ResultsView(open_results_store(tables.results))
    streamed = ResultsView(NoSQLStore(tables.results))
    assert summarise_with_sql(by_sql.store) is not None and summarise_with_sql(streamed.store) is None
    restricted = Access(lambda dag: dag != ui_demo.DENIED_DAG, lambda dag: dag != ui_demo.DENIED_DAG)
    for access in (Access.everything(), restricted):
        rows = by_sql.contracts(access, sort="last_score", descending=True)
        assert [row.to_dict() for row in rows] == [
            row.to_dict() for row in streamed.contracts(access, sort="last_score", descending=True)
        ]
        for row in rows:
            ours, theirs = by_sql.contract(row.name, access, days=3650), streamed.contract(row.name, access, days=3650)
            assert (ours.runs, ours.failing, ours.never_fired) == (theirs.runs, theirs.failing, theirs.never_fired)
    expected = expected_contracts(tables.results, lambda dag: dag != ui_demo.DENIED_DAG)  # the last access above
    assert {row.name: (row.last_run_id, row.last_decision, row.last_score, row.runs) for row in rows} == {
        name: (want["run_id"], want["decision"], want["score"], want["runs"]) for name, want in expected.items()
    }


def test_a_restarted_server_answers_from_the_saved_summary_and_catches_up_with_later_commits(tmp_path):
    """The summary saved after a build is what the next server start answers from (no scan of the table: only a
    row count), equal to the first server's and to an independent delta-rs reading; a run committed while the
    server was down appears once the restored summary is rebuilt, and the rebuilt one is saved in its turn."""
    import time

    from airflow_dq_contracts.results import make_run_id
    from airflow_dq_contracts.store.results.delta_store import DeltaResultsStore
    from airflow_dq_contracts.ui.views import Access, ResultsView

    class CountingStore(DeltaResultsStore):
        queries: list[str] = []

        def query_results_table(self, queries: Any) -> Any:
            self.queries.extend(queries(["contract_name", "run_id", "check_id", "severity", "action", "status",
                                         "row_count", "evaluated_at"]))  # fmt: skip
            return super().query_results_table(queries)

    tables = ui_demo.write_ui_tables(tmp_path / "tables")
    saved = tmp_path / "home" / "dq_contracts" / "ui-summary.arrow"
    everything = Access.everything()
    restricted = Access(lambda dag: dag != ui_demo.DENIED_DAG, lambda dag: dag != ui_demo.DENIED_DAG)
    first = ResultsView(CountingStore(tables.results), saved=saved)
    assert first.restore() is False  # nothing saved yet
    before = {access: [row.to_dict() for row in first.contracts(access)] for access in (everything, restricted)}
    deadline = time.monotonic() + 30
    while not saved.exists():  # saved in the background
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert saved.stat().st_mode & 0o077 == 0  # the server's user alone reads it

    CountingStore.queries = []
    restarted = ResultsView(CountingStore(tables.results), saved=saved)
    assert restarted.restore() is True
    for access in (everything, restricted):
        assert [row.to_dict() for row in restarted.contracts(access)] == before[access]
    assert CountingStore.queries == ["SELECT COUNT(*) AS n FROM results"]  # the table was not scanned
    expected = expected_contracts(tables.results, lambda dag: dag != ui_demo.DENIED_DAG)
    assert {row.name: (row.last_run_id, row.last_decision, row.last_score, row.runs) for row in
            restarted.contracts(restricted)} == {
        name: (want["run_id"], want["decision"], want["score"], want["runs"]) for name, want in expected.items()
    }  # fmt: skip

    # A run committed while no server ran: the restored summary answers, then the rebuilt one shows the run.
    at = dt.datetime(2024, 7, 1, tzinfo=dt.timezone.utc)
    run_id = make_run_id("late", at.isoformat())
    store = CountingStore(tables.results)
    store.write_run(
        ui_demo.records("orders", "2.2.0", run_id, at, ui_demo.ALLOWED_DAG, [("x", "P1", "gate", "failed", None)], 5),
        run_id,
    )
    later = ResultsView(store, saved=saved)
    assert later.restore() is True
    orders_runs = {row.name: row.runs for row in later.contracts(everything)}["orders"]
    deadline = time.monotonic() + 30
    while (row := {r.name: r for r in later.contracts(everything)}["orders"]).last_run_id != run_id:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert (row.runs, row.last_decision) == (orders_runs + 1, "gate")
    deadline = time.monotonic() + 30
    while True:  # the rebuilt summary replaces the saved one
        again = ResultsView(CountingStore(tables.results), saved=saved)
        if again.restore() and {r.name: r.last_run_id for r in again.contracts(everything)}["orders"] == run_id:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
