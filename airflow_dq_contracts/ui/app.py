"""The FastAPI app the plugin mounts under ``/dq-contracts`` in Airflow's API server: pages and a JSON API.

Routes (``{name}`` and ``{run_id}`` percent-encoded; every one needs a logged-in Airflow user)::

    GET /dq-contracts/                              contracts (q, decision, sort, order)
    GET /dq-contracts/contracts/{name}              one contract (days, from, to)
    GET /dq-contracts/runs/{run_id}                 one run's report, with quarantined samples
    GET /dq-contracts/task-instance/{dag}/{run}/{task}  the runs of a task instance (its UI tab)
    GET /dq-contracts/api/v1/contracts              the same data as JSON (docs/ui.md)
    GET /dq-contracts/api/v1/contracts/{name}
    GET /dq-contracts/api/v1/runs/{run_id}

Auth: Airflow's own — the user comes from the API server's token (cookie ``_token`` of the UI's login, or
``Authorization: Bearer``) through :func:`airflow.api_fastapi.core_api.security.get_user` (401 without one);
what they see is decided by the configured auth manager: a run is shown only when
``is_authorized_dag(GET, DagDetails(id=<the run's dag_id>))`` (runs without a DAG: reading DAGs at all),
its quarantined rows only with ``DagAccessEntity.TASK_LOGS`` on that DAG. A contract or run the user may not
see is 403 with no data. Plugin routes are not protected by Airflow by themselves: every route here
declares the dependency, and the app has no unauthenticated route (no OpenAPI page either).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote

from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from airflow_dq_contracts.ui.pages import (
    HEADER_POLICY,
    Listing,
    contract_page,
    contracts_page,
    message_page,
    run_page,
    task_page,
)
from airflow_dq_contracts.ui.settings import UISettings, ui_settings
from airflow_dq_contracts.ui.views import Access, NotFound, NotVisible, ResultsView

__all__ = ["API_VERSION", "create_app", "warm_up"]

log = logging.getLogger(__name__)

API_VERSION = "v1"
_VIEWS: dict[UISettings, ResultsView] = {}
_VIEWS_LOCK = threading.Lock()
#: Airflow's authenticated user: 401 without a token, 403 for an invalid one (Airflow's own dependency).
User = Annotated[Any, Depends(get_user)]


def _redact(value: Any, name: str | None = None) -> Any:
    """``value`` with every secret Airflow knows in this process masked (connection passwords, …) and, under a
    sensitive ``name`` (``password``, ``token``…), masked whole — Airflow's own masker."""
    try:
        from airflow.sdk.execution_time.secrets_masker import redact
    except ImportError:  # Airflow 3.0
        from airflow.utils.log.secrets_masker import redact  # type: ignore[no-redef,unused-ignore]
    return redact(value, name)


def _masked(data: Any) -> Any:
    """The report data with its quarantined sample values passed through the masker, column by column."""
    samples = {
        check: [{column: _redact(value, column) for column, value in row.items()} for row in rows]
        for check, rows in data.samples.items()
    }
    return dataclasses.replace(data, samples=samples)


def _view(settings: UISettings) -> ResultsView:
    """One cached :class:`ResultsView` per configuration (it keeps the per-run summary between requests)."""
    with _VIEWS_LOCK:
        view = _VIEWS.get(settings)
        if view is None:
            from airflow_dq_contracts.hooks.storage import get_storage_credentials
            from airflow_dq_contracts.storage.locations import TableLocation
            from airflow_dq_contracts.store.results import open_results_store

            options = None
            if settings.storage_conn_id:
                options = get_storage_credentials(settings.storage_conn_id).storage_options()
            location = TableLocation.resolve(str(settings.results_table), settings.warehouse, storage_options=options)
            view = ResultsView(open_results_store(location, warehouse=settings.warehouse), saved=_saved_path(location))
            _VIEWS[settings] = view
        return view


def _saved_path(location: Any) -> Any:
    """Where the API server keeps the summary of the table at ``location`` between its starts: a file under
    ``$AIRFLOW_HOME/dq_contracts/`` named by a hash of the table's URI (only the server's user may read it)."""
    import hashlib
    from pathlib import Path

    from airflow.configuration import AIRFLOW_HOME

    digest = hashlib.sha256(str(location.uri).encode()).hexdigest()[:24]
    return Path(AIRFLOW_HOME) / "dq_contracts" / f"ui-summary-{digest}.arrow"


def warm_up(build_app: Callable[[], Any]) -> float | None:
    """At the API server's start (:class:`~airflow_dq_contracts.ui.plugin.WarmAtStart`, in a background thread):
    ``build_app()``, then the summary of the configured results table; logged with the seconds it took. Returns
    them (None: no results table configured, or it could not be read — the first page then says why)."""
    began = time.perf_counter()
    try:
        build_app()
        settings = ui_settings()
        if not settings.configured:
            return None
        view = _view(settings)
        if view.restore():  # the summary an earlier start saved answers at once; a newer table is read below
            log.info(
                "Data quality UI: the saved summary of %s is ready, %.2f s after the API server's start",
                settings.table_label,
                time.perf_counter() - began,
            )
        view.summary(wait=True)
    except Exception as exc:  # noqa: BLE001 - the first page reads the table again and shows the error
        log.warning("Data quality UI: the results table could not be summarised at start: %s", _redact(str(exc)))
        return None
    took = time.perf_counter() - began
    log.info(
        "Data quality UI: the summary of %s is ready, %.2f s after the API server's start", settings.table_label, took
    )
    return took


def _contract_rows(settings: Any, user: Any, chosen: Any) -> Any:
    """The contracts the ``user`` may see, filtered and sorted as ``chosen`` (a :func:`listing`)."""
    return _view(settings).contracts(
        _access(user), query=chosen.query, decision=chosen.decision, sort=chosen.sort, descending=chosen.descending
    )


def _access(user: Any) -> Access:
    """What the auth manager lets ``user`` read, asked once per DAG and request."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

    manager = get_auth_manager()

    def can_read(dag_id: str | None) -> bool:
        details = DagDetails(id=dag_id) if dag_id else None
        return bool(manager.is_authorized_dag(method="GET", details=details, user=user))

    def can_read_logs(dag_id: str | None) -> bool:
        details = DagDetails(id=dag_id) if dag_id else None
        return bool(
            manager.is_authorized_dag(method="GET", access_entity=DagAccessEntity.TASK_LOGS, details=details, user=user)
        )

    return Access(can_read, can_read_logs).cached()


def _prefix(request: Request) -> str:
    return str(request.scope.get("root_path") or "").rstrip("/")


def _html(text: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status_code, headers={"Content-Security-Policy": HEADER_POLICY})


def create_app() -> FastAPI:
    """The app (see the module docstring); the plugin mounts it at :data:`~.settings.URL_PREFIX`."""
    app = FastAPI(
        title="Data quality contracts",
        description="Contracts, runs and reports of airflow-dq-contracts, behind Airflow's login.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        dependencies=[Depends(get_user)],
    )

    @app.middleware("http")
    async def server_timing(request: Request, call_next: Any) -> Response:
        # How long the server took (reading, aggregating, rendering), and the process's CPU time meanwhile (on a
        # busy machine the wall time mostly measures the others): the benchmark prints both.
        began, began_cpu = time.perf_counter(), time.process_time()
        response: Response = await call_next(request)
        response.headers["Server-Timing"] = (
            f"app;dur={(time.perf_counter() - began) * 1000:.1f}, cpu;dur={(time.process_time() - began_cpu) * 1000:.1f}"
        )
        return response

    def refusal(request: Request, status_code: int, detail: str) -> Response:
        if "/api/" in request.url.path:
            return JSONResponse({"detail": detail}, status_code=status_code)
        return _html(message_page(detail, detail, _prefix(request)), status_code)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        # Airflow's dependency raises 401/403 with a fixed text; nothing else travels in the body.
        return refusal(request, exc.status_code, str(exc.detail))

    def configured() -> UISettings:
        settings = ui_settings()
        if not settings.configured:
            raise HTTPException(
                503,
                "The UI has no results table: set [dq_contracts] results_table (AIRFLOW__DQ_CONTRACTS__RESULTS_TABLE)",
            )
        return settings

    def guarded(call: Any) -> Any:
        try:
            return call()
        except NotVisible:
            raise HTTPException(403, "Forbidden") from None
        except NotFound as exc:
            raise HTTPException(404, str(exc)) from None
        except HTTPException:
            raise
        except Exception as exc:  # noqa: BLE001 - a table that cannot be read: say so, secrets masked
            raise HTTPException(
                502, str(_redact(f"the results tables cannot be read: {type(exc).__name__}: {exc}"))
            ) from None

    def listing(q: str, decision: str, sort: str, order: str) -> Listing:
        return Listing(query=q[:200], decision=decision, sort=sort, descending=order == "desc")

    # ------------------------------------------------------------------ pages

    @app.get("/", response_class=HTMLResponse)
    def contracts(
        request: Request,
        user: User,
        q: str = "",
        decision: str = "",
        sort: str = "name",
        order: str = "asc",
    ) -> Response:
        settings = configured()
        chosen = listing(q, decision, sort, order)
        rows = guarded(lambda: _contract_rows(settings, user, chosen))
        return _html(contracts_page(rows, chosen, prefix=_prefix(request), source=settings.table_label))

    @app.get("/contracts/{name:path}", response_class=HTMLResponse)
    def contract(
        request: Request,
        name: str,
        user: User,
        days: int = Query(30, ge=1, le=3650),
        old: str | None = Query(None, alias="from"),
        new: str | None = Query(None, alias="to"),
    ) -> Response:
        settings = configured()
        pair = (old, new) if old is not None and new is not None else None
        detail = guarded(lambda: _view(settings).contract(name, _access(user), days=days, diff=pair))
        return _html(contract_page(detail, prefix=_prefix(request)))

    @app.get("/runs/{run_id:path}", response_class=HTMLResponse)
    def run(request: Request, run_id: str, user: User, days: int = Query(30, ge=1, le=3650)) -> Response:
        from airflow_dq_contracts.report import render_report

        settings = configured()
        data, samples = guarded(lambda: _view(settings).run(run_id, _access(user), days=days))
        data = _masked(data)
        page = render_report(data, report_link=str(request.url))
        # The report carries its own policy (its one script by hash): no second header policy here.
        return HTMLResponse(
            run_page(page, prefix=_prefix(request), contract_name=data.result.contract_name, samples_hidden=not samples)
        )

    @app.get("/task-instance/{dag_id}/{airflow_run_id}/{task_id}", response_class=HTMLResponse)
    def task_instance(request: Request, dag_id: str, airflow_run_id: str, task_id: str, user: User) -> Response:
        settings = configured()
        runs = guarded(lambda: _view(settings).task_runs(dag_id, airflow_run_id, task_id, _access(user)))
        prefix = _prefix(request)
        if len(runs) == 1:
            return RedirectResponse(f"{prefix}/runs/{quote(runs[0].run_id, safe='')}", status_code=303)
        return _html(task_page(runs, prefix=prefix, task=f"{dag_id} · {airflow_run_id} · {task_id}"))

    # ------------------------------------------------------------------ JSON API (docs/ui.md)

    @app.get(f"/api/{API_VERSION}/contracts", response_class=JSONResponse)
    def api_contracts(user: User, q: str = "", decision: str = "", sort: str = "name", order: str = "asc") -> Response:
        settings = configured()
        chosen = listing(q, decision, sort, order)
        rows = guarded(lambda: _contract_rows(settings, user, chosen))
        # Serialised here: FastAPI's encoder walks every value again (1,000 contracts: most of the time).
        payload = {
            "api_version": API_VERSION,
            "results_table": settings.results_table,
            "count": len(rows),
            "contracts": [row.to_dict() for row in rows],
        }
        return Response(json.dumps(payload), media_type="application/json")

    @app.get(f"/api/{API_VERSION}/contracts/{{name:path}}")
    def api_contract(
        name: str,
        user: User,
        days: int = Query(30, ge=1, le=3650),
        old: str | None = Query(None, alias="from"),
        new: str | None = Query(None, alias="to"),
    ) -> dict[str, Any]:
        settings = configured()
        pair = (old, new) if old is not None and new is not None else None
        detail = guarded(lambda: _view(settings).contract(name, _access(user), days=days, diff=pair))
        registry = detail.registry or {}
        return {
            "api_version": API_VERSION,
            "name": detail.name,
            "owner": registry.get("owner"),
            "description": registry.get("description"),
            "days": detail.days,
            "runs": [run.to_dict() for run in detail.runs],
            "failing_checks": [dataclasses.asdict(f) for f in detail.failing],
            "drift": detail.drift,
            "never_fired": detail.never_fired,
            "versions": [
                {
                    "version": v.get("contract_version"),
                    "hash": v.get("contract_hash"),
                    "first_run_at": v["first_run_at"].isoformat() if v.get("first_run_at") else None,
                    "last_run_at": v["last_run_at"].isoformat() if v.get("last_run_at") else None,
                    "text": v.get("contract_text"),
                }
                for v in detail.versions
            ],
            "diff": None if detail.diff is None else dataclasses.asdict(detail.diff),
        }

    @app.get(f"/api/{API_VERSION}/runs/{{run_id:path}}")
    def api_run(run_id: str, user: User) -> dict[str, Any]:
        settings = configured()
        data, samples = guarded(lambda: _view(settings).run(run_id, _access(user)))
        data = _masked(data)
        summary = data.result.summary()
        return {
            "api_version": API_VERSION,
            "run": summary,
            "quarantine_rows": data.quarantine_rows,
            "samples_shown": samples,
            "samples": {check: [_plain(row) for row in rows] for check, rows in data.samples.items()}
            if samples
            else {},
        }

    return app


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A quarantined row JSON-ready: values that are not JSON types as text."""
    return {
        key: value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        for key, value in row.items()
    }
