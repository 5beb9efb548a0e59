"""The Airflow plugin of the provider (entry point group ``airflow.plugins``): the UI app and its views.

* ``fastapi_apps`` — :func:`airflow_dq_contracts.ui.app.create_app` mounted at ``/dq-contracts``;
* ``fastapi_root_middlewares`` — :class:`WarmAtStart`, which changes no request: built by the API server alone,
  at its start, it reads the configured results table in the background (the first page finds it summarised);
* ``external_views`` (Airflow 3.1) — "Data quality" in the navigation (opened in the UI), and a
  "Data quality" tab on task-instance pages that shows the contracts of that DAG run's task.
  On Airflow 3.0 (no external views) the pages work at their URL and the check task's extra link opens them.

Loaded by Airflow from the installed distribution's entry point — nothing is copied into ``plugins/``::

    [project.entry-points."airflow.plugins"]
    dq_contracts = "airflow_dq_contracts.ui.plugin:DataQualityPlugin"
"""

from __future__ import annotations

import threading
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_dq_contracts.ui.settings import URL_PREFIX
from airflow_dq_contracts.version_compat import AIRFLOW_V_3_1_PLUS

__all__ = ["DataQualityPlugin", "LazyApp", "WarmAtStart"]


class LazyApp:
    """The UI's ASGI app, built at its first request.

    Airflow loads plugins in every component (scheduler, DAG processor, task processes), and only the API
    server serves ``fastapi_apps``: the app, and the API server modules it imports, are not imported elsewhere.
    """

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = threading.Lock()

    def build(self) -> Any:
        """The app, built once."""
        if self._app is None:
            with self._lock:
                if self._app is None:
                    from airflow_dq_contracts.ui.app import create_app

                    self._app = create_app()
        return self._app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """ASGI entry: build the app once, then hand it the request."""
        await self.build()(scope, receive, send)


class WarmAtStart:
    """An ASGI middleware around Airflow's API server that passes everything through unchanged.

    Airflow adds plugins' ``fastapi_root_middlewares`` in the API server only, and Starlette builds them when the
    server starts (its lifespan event): there it starts a background thread that builds the UI app and the
    summary of the configured results table (:func:`airflow_dq_contracts.ui.app.warm_up`), so the first page
    does not wait for the table to be read — a page asked before that is done waits for it, not for a second read.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        threading.Thread(target=_warm_up, name="dq-contracts-ui-warm-up", daemon=True).start()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """ASGI entry: the request, unchanged."""
        await self.app(scope, receive, send)


def _warm_up() -> None:
    from airflow_dq_contracts.ui.app import warm_up

    warm_up(UI_APP.build)


UI_APP = LazyApp()


class DataQualityPlugin(AirflowPlugin):
    """Data quality contracts in the Airflow UI (see the module docstring)."""

    name = "dq_contracts"
    fastapi_apps = [{"app": UI_APP, "url_prefix": URL_PREFIX, "name": "Data quality contracts"}]
    fastapi_root_middlewares = [{"middleware": WarmAtStart, "name": "Data quality contracts: summary read at start"}]
    if AIRFLOW_V_3_1_PLUS:  # 3.0 has no external views: the plugin declares none there (the pages keep their URL)
        external_views = [
            {
                "name": "Data quality",
                "href": f"{URL_PREFIX}/",
                "destination": "nav",
                "category": "browse",
                "url_route": "dq-contracts",
            },
            {
                "name": "Data quality",
                "href": f"{URL_PREFIX}/task-instance/{{DAG_ID}}/{{RUN_ID}}/{{TASK_ID}}",
                "destination": "task_instance",
                "url_route": "dq-contracts-task",
            },
        ]
