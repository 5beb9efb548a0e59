"""The one place where Airflow import paths that differ between releases are resolved.

Operators, sensors, triggers and hooks import Airflow names from here, never directly, so a new
Airflow release means changing this file only. Supported: Airflow 3.x (``airflow.sdk``).

* ``BaseOperator``, ``BaseSensorOperator``, ``PokeReturnValue``, ``Context``: ``airflow.sdk``.
* ``BaseBranchOperator``: ``airflow.sdk`` from 3.2, ``airflow.providers.standard`` before.
* Exceptions: ``airflow.sdk.exceptions`` where a release has them there, else ``airflow.exceptions``.
* ``BaseTrigger``, ``BaseEventTrigger`` (an ``AssetWatcher``'s), ``TriggerEvent``: ``airflow.triggers.base`` (3.0,
  3.1), ``airflow.sdk`` later.
* ``BaseNotifier``, ``BaseOperatorLink``, ``Connection``: ``airflow.sdk``; ``XCom``: ``airflow.sdk`` where exported, else
  ``airflow.sdk.execution_time.xcom`` (3.0, 3.1).
* :func:`default_deferrable`: ``[operators] default_deferrable`` read when an operator is built.
* ``Asset``, ``AssetAlias``: ``airflow.sdk`` (3.0, 3.1). A task reads ``context["outlet_events"]`` (annotate its
  asset events) and ``context["triggering_asset_events"]`` / ``context["inlet_events"]`` (a consumer's view)
  under the same names in 3.0 and 3.1.
* ``reap_process_group`` (SIGTERM a process group, SIGKILL what outlives the timeout):
  ``airflow.utils.process_utils`` — same place and signature in 3.0.2 and 3.1.8.
* ``mask_secret``: ``airflow.sdk.log`` (3.1: masks in the task process *and* tells the supervisor),
  ``airflow.sdk.execution_time.secrets_masker`` before. ``BaseHook``: ``airflow.sdk`` where exported,
  else ``airflow.hooks.base``. :func:`aget_connection`: ``BaseHook.aget_connection`` (3.1), else the
  blocking lookup in a thread (``asgiref``'s ``sync_to_async``, as the providers' triggers do).

Example::

    from airflow_dq_contracts.version_compat import BaseSensorOperator, PokeReturnValue
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import Any

from packaging.version import Version


def _airflow_version() -> Version:
    try:
        return Version(Version(_dist_version("apache-airflow")).base_version)
    except PackageNotFoundError:  # e.g. only apache-airflow-core installed
        from airflow import __version__

        return Version(Version(__version__).base_version)


AIRFLOW_VERSION = _airflow_version()
AIRFLOW_V_3_0_PLUS = Version("3.0.0") <= AIRFLOW_VERSION
#: Plugins' ``external_views`` (a provider's pages in the UI's navigation and task-instance tabs) came in 3.1.
AIRFLOW_V_3_1_PLUS = Version("3.1.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_2_PLUS = Version("3.2.0") <= AIRFLOW_VERSION

if not AIRFLOW_V_3_0_PLUS:  # pragma: no cover - guarded by the pinned dependency
    raise ImportError(f"airflow-dq-contracts needs Airflow 3.x, found {AIRFLOW_VERSION}")

from airflow.sdk import BaseOperator, BaseSensorOperator, Context, PokeReturnValue  # noqa: E402

if AIRFLOW_V_3_2_PLUS:
    from airflow.sdk import BaseBranchOperator  # type: ignore[attr-defined]  # noqa: E402
else:  # asking airflow.sdk for it before 3.2 goes through a deprecation shim
    from airflow.providers.standard.operators.branch import BaseBranchOperator  # noqa: E402

try:  # where a release moved the task exceptions to the SDK
    from airflow.sdk.exceptions import (  # type: ignore[attr-defined]  # noqa: E402
        AirflowException,
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )
except ImportError:
    from airflow.exceptions import (  # noqa: E402
        AirflowException,
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )

from airflow.exceptions import AirflowNotFoundException as _CoreNotFound  # noqa: E402

try:  # the Task SDK raises its own "not found" from some release on; catch either
    from airflow.sdk.exceptions import AirflowNotFoundException as _SdkNotFound  # type: ignore[attr-defined]  # noqa: E402

    #: What looking up a connection that is not defined raises (core's, and the Task SDK's where it has one).
    CONNECTION_NOT_FOUND: tuple[type[BaseException], ...] = tuple({_CoreNotFound, _SdkNotFound})
except ImportError:
    CONNECTION_NOT_FOUND = (_CoreNotFound,)

from airflow.sdk import Asset, AssetAlias, BaseNotifier, BaseOperatorLink, Connection  # noqa: E402

try:  # the XCom class tasks and operator links read through (not exported by airflow.sdk in 3.0/3.1)
    from airflow.sdk import XCom  # type: ignore[attr-defined]  # noqa: E402
except ImportError:
    from airflow.sdk.execution_time.xcom import XCom  # noqa: E402

# Checked identical (place, signature, body) in apache-airflow-core 3.0.2 and 3.1.8.
from airflow.utils.process_utils import reap_process_group  # noqa: E402

try:  # 3.1: masks in the task process and tells the supervisor, which writes the log
    from airflow.sdk.log import mask_secret  # type: ignore[attr-defined,unused-ignore]  # noqa: E402
except ImportError:  # pragma: no cover - 3.0
    from airflow.sdk.execution_time.secrets_masker import mask_secret  # type: ignore[no-redef,unused-ignore]  # noqa: E402

try:
    from airflow.sdk import BaseHook  # noqa: E402
except ImportError:  # pragma: no cover - releases that do not export it there
    from airflow.hooks.base import BaseHook  # type: ignore[attr-defined,no-redef,unused-ignore]  # noqa: E402

try:
    from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent  # noqa: E402
except ImportError:  # pragma: no cover - future releases
    from airflow.sdk import BaseEventTrigger, BaseTrigger, TriggerEvent  # type: ignore[attr-defined,no-redef]  # noqa: E402


def default_deferrable() -> bool:
    """``[operators] default_deferrable`` (False when unset), read now — not at import time.

    >>> isinstance(default_deferrable(), bool)
    True
    """
    try:
        from airflow.sdk.configuration import conf  # type: ignore[import-not-found,unused-ignore]  # not in 3.0
    except ImportError:
        from airflow.configuration import conf
    return conf.getboolean("operators", "default_deferrable", fallback=False)


async def aget_connection(conn_id: str) -> Any:
    """The connection ``conn_id``, looked up without blocking the event loop (a triggerer's)."""
    lookup = getattr(BaseHook, "aget_connection", None)
    if lookup is not None:
        return await lookup(conn_id)
    from asgiref.sync import sync_to_async

    return await sync_to_async(BaseHook.get_connection)(conn_id)


__all__ = [
    "AIRFLOW_V_3_0_PLUS",
    "AIRFLOW_V_3_1_PLUS",
    "AIRFLOW_V_3_2_PLUS",
    "AIRFLOW_VERSION",
    "AirflowException",
    "CONNECTION_NOT_FOUND",
    "Connection",
    "Asset",
    "AssetAlias",
    "AirflowFailException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "BaseBranchOperator",
    "BaseEventTrigger",
    "BaseHook",
    "BaseNotifier",
    "BaseOperator",
    "BaseOperatorLink",
    "BaseSensorOperator",
    "BaseTrigger",
    "Context",
    "PokeReturnValue",
    "TriggerEvent",
    "XCom",
    "aget_connection",
    "default_deferrable",
    "mask_secret",
    "reap_process_group",
]
