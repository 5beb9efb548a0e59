"""A real auth manager for the UI tests: Airflow's SimpleAuthManager with per-DAG denials.

SimpleAuthManager knows roles, not DAGs; this subclass (configured with ``[core] auth_manager =
ui_auth_manager.DagDenyingAuthManager`` in the API server of ``tests/test_ui.py``) refuses:

* user ``restricted`` — every access to the DAG :data:`DENIED_DAG`;
* user ``nologs`` — task logs of every DAG (the quarantined samples need them).

Everything else is SimpleAuthManager's own answer (a viewer may read DAGs).
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

DENIED_DAG = "payments_restricted"


class DagDenyingAuthManager(SimpleAuthManager):
    """SimpleAuthManager, except for the two denials above."""

    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        name = user.get_name()
        if name == "restricted" and details is not None and details.id == DENIED_DAG:
            return False
        if name == "nologs" and access_entity == DagAccessEntity.TASK_LOGS:
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)
