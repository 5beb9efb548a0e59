"""What the two metadata sensors share: where the table is, contract glue, errors, deferral.

No pyspark here or below: the sensors read Delta metadata with delta-rs.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from airflow_dq_contracts.hooks.storage import check_access, get_storage_credentials, table_location
from airflow_dq_contracts.storage.locations import TableLocation
from airflow_dq_contracts.store.tablemeta import DeltaMetadataError, TableNotFoundError
from airflow_dq_contracts.timeutil import TimeValueError, format_time, to_utc, utcnow
from airflow_dq_contracts.triggers.delta_metadata import MetadataPollTrigger, MetadataQuery, MetadataResult
from airflow_dq_contracts.version_compat import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    BaseSensorOperator,
    Context,
    PokeReturnValue,
    default_deferrable,
)

SUPPORTED_FORMATS = ("delta", "parquet")
#: The templated arguments every metadata sensor takes (a sensor adds its own column's name).
LOCATION_TEMPLATE_FIELDS = ("path", "table", "warehouse", "contract", "check", "reference_time")


class SensorConfigError(ValueError):
    """A sensor built with arguments that cannot work (raised when the DAG is parsed)."""


def reference_text(value: Any) -> str | None:
    """Normalise a (rendered) reference time to an ISO-8601 UTC string, or None for "now".

    Templates render a missing value as ``"None"`` (e.g. ``{{ data_interval_end }}`` of a manual
    run without a data interval): that also means "now".

    >>> reference_text("2024-01-10T02:00:00+02:00")
    '2024-01-10T00:00:00Z'
    >>> reference_text("None") is None
    True
    """
    if value is None or (isinstance(value, str) and value.strip() in ("", "None", "null")):
        return None
    try:
        moment = to_utc(value if isinstance(value, (str, dt.date)) else str(value))
    except TimeValueError as exc:
        raise AirflowFailException(f"reference_time: {exc}") from None
    return format_time(moment)


class DeltaMetadataSensorBase(BaseSensorOperator):
    """Base of :class:`FreshnessSensor` and :class:`CompletenessSensor` (not used directly).

    Locating the table: ``path=`` (a Delta table or a Hive-partitioned Parquet folder, local or
    object store), or ``table=`` (``db.table``) mapped to ``<warehouse>/<db>.db/<table>`` with
    ``warehouse=`` or ``$DQ_CONTRACTS_WAREHOUSE`` — Spark's default layout; or, with
    ``contract=``, the contract's ``dataset``. An explicit ``path``/``table`` wins over the
    contract's dataset.

    Credentials for object storage: ``storage_conn_id`` names an Airflow connection (``aws``,
    ``google_cloud_platform``, ``wasb``/``adls``; fields: :mod:`airflow_dq_contracts.storage.connections`)
    — the way to give them: looked up in the worker (or, deferred, in the triggerer), its secrets
    masked, never in the DAG file nor the trigger table. ``storage_options`` (a raw delta-rs dict)
    still works and overrides the connection's keys, but it sits in the DAG file and, deferred, in
    the trigger table: put no secret in it. Without either, delta-rs reads the worker's environment.

    Modes: ``poke`` and ``reschedule`` as for every sensor; ``deferrable=True`` (default from
    ``[operators] default_deferrable``) checks once in the worker, then hands polling to a trigger.

    Failures that waiting cannot fix (missing column, wrong type, unpartitioned table, invalid
    contract) fail the task at once, without retries (``AirflowFailException``); a missing table
    too, unless ``fail_on_missing_table=False``, in which case the sensor waits for it.
    """

    check_type: str = ""
    ui_color = "#d9f0e3"
    #: The trigger a deferred sensor hands its query to (``DeltaFreshnessTrigger`` …).
    trigger_class: ClassVar[type[MetadataPollTrigger]]

    def __init__(
        self,
        *,
        path: str | None = None,
        table: str | None = None,
        warehouse: str | None = None,
        contract: str | Mapping[str, Any] | None = None,
        check: str | None = None,
        reference_time: str | dt.datetime | None = None,
        storage_options: Mapping[str, str] | None = None,
        storage_conn_id: str | None = None,
        fail_on_missing_table: bool = True,
        deferrable: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if path and table:
            raise self.refuse("pass path= or table=, not both")
        if not (path or table or contract is not None):
            raise self.refuse("pass path=, table= or contract= to say which table to watch")
        if check is not None and contract is None:
            raise self.refuse(f"check={check!r} needs contract=")
        if contract is not None and not isinstance(contract, (str, dict)):
            raise self.refuse("contract= must be a file path or a dict")
        self.path = path
        self.table = table
        self.warehouse = warehouse
        self.contract = dict(contract) if isinstance(contract, Mapping) else contract
        self.check = check
        self.reference_time = reference_time
        self.storage_options = dict(storage_options) if storage_options else None
        self.storage_conn_id = storage_conn_id or None
        self.fail_on_missing_table = bool(fail_on_missing_table)
        self.deferrable = default_deferrable() if deferrable is None else bool(deferrable)

    # ------------------------------------------------------------------ arguments

    def refuse(self, message: str) -> SensorConfigError:
        """The error for an argument that cannot work, naming the task (raise it)."""
        return SensorConfigError(f"{self.task_id}: {message}")

    def check_choice(self, name: str, value: Any, choices: Sequence[str]) -> None:
        """Raise :meth:`refuse` unless ``value`` is None or one of ``choices``."""
        if value is not None and value not in choices:
            raise self.refuse(f"{name}={value!r} is not one of {', '.join(choices)}")

    def missing_required(self, names: Sequence[str]) -> SensorConfigError:
        """The error for arguments a sensor needs when no contract check gives them."""
        return self.refuse(f"missing {', '.join(names)} (or pass contract= and check=)")

    def check_number(self, name: str, value: Any, *, integer: bool = False) -> None:
        """Raise :meth:`refuse` unless ``value`` is a finite number ≥ 0 (or None)."""
        if value is None:
            return
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) or value < 0:
            what = "an integer" if integer else "a number"
            raise self.refuse(f"{name} must be {what} ≥ 0, got {value!r}")

    # ------------------------------------------------------------------ contract and location

    def _contract_check(self) -> tuple[dict[str, Any], Any]:
        """(params of the chosen check, the contract's dataset) — or ({}, None) without contract."""
        if self.contract is None:
            return {}, None
        from airflow_dq_contracts.contract import ContractValidationError, load_contract

        try:
            contract = load_contract(self.contract)
        except ContractValidationError as err:
            raise AirflowFailException(f"{self.task_id}: invalid contract:\n{err}") from None
        candidates = [c for c in contract.checks if c.type == self.check_type]
        if self.check is not None:
            named = [c for c in contract.all_checks() if c.name == self.check]
            if not named:
                known = ", ".join(repr(c.name) for c in contract.checks) or "none"
                raise AirflowFailException(
                    f"{self.task_id}: contract {contract.name!r} has no check named {self.check!r} "
                    f"(table-level checks: {known})"
                )
            chosen = named[0]
            if chosen.type != self.check_type:
                raise AirflowFailException(
                    f"{self.task_id}: check {self.check!r} of contract {contract.name!r} is a "
                    f"{chosen.type!r} check, not {self.check_type!r}"
                )
        elif len(candidates) == 1:
            chosen = candidates[0]
        elif not candidates:
            raise AirflowFailException(f"{self.task_id}: contract {contract.name!r} has no {self.check_type} check")
        else:
            listed = ", ".join(repr(c.name) for c in candidates)
            raise AirflowFailException(
                f"{self.task_id}: contract {contract.name!r} has {len(candidates)} "
                f"{self.check_type} checks ({listed}); pass check='<name>'"
            )
        return dict(chosen.params), contract.dataset

    def _location(self, dataset: Any) -> str:
        """The table's path, from ``path``, ``table`` or the contract's dataset (a name resolved here, once)."""
        try:
            if self.path:
                return str(self.path)
            if self.table:
                return TableLocation.resolve(str(self.table), self.warehouse).uri
            if dataset is not None:
                fmt = (getattr(dataset, "format", None) or "delta").lower()
                if fmt not in SUPPORTED_FORMATS:
                    raise AirflowFailException(
                        f"{self.task_id}: the contract's dataset is {fmt}; this sensor reads Delta "
                        f"or Hive-partitioned Parquet metadata ({', '.join(SUPPORTED_FORMATS)})"
                    )
                if getattr(dataset, "path", None):
                    return str(dataset.path)
                if getattr(dataset, "table", None):
                    return TableLocation.resolve(str(dataset.table), self.warehouse).uri
        except DeltaMetadataError as exc:
            raise AirflowFailException(f"{self.task_id}: {exc}") from None
        raise AirflowFailException(f"{self.task_id}: no path or table to watch")

    # ------------------------------------------------------------------ evaluation

    def _query(self) -> MetadataQuery:  # pragma: no cover - abstract
        """The question, with explicit > contract check > default resolved (fails the task when incomplete)."""
        raise NotImplementedError

    def _evaluate(self, context: Context) -> MetadataResult:
        query = self._query()
        # At each poke: a rotated secret is picked up. The table resolved once, with the connection's options.
        creds = get_storage_credentials(self.storage_conn_id) if self.storage_conn_id else None
        where = table_location(query.path, creds, query.storage_options)
        try:
            return query.evaluate(where)
        except DeltaMetadataError:
            if creds is not None:
                # "No table there" or an unreadable log may be a refused secret: say so, naming the connection.
                check_access(creds, where)
            raise

    def _trigger(self, context: Context, end_time: str | None) -> MetadataPollTrigger:
        # The query carries the raw storage_options only; the connection travels by name.
        return self.trigger_class.for_query(
            self._query(),
            poke_interval=self.poke_interval,
            fail_on_missing_table=self.fail_on_missing_table,
            end_time=end_time,
            storage_conn_id=self.storage_conn_id,
        )

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the table's metadata; logs what it measured."""
        try:
            result = self._evaluate(context)
        except TableNotFoundError as exc:
            if self.fail_on_missing_table:
                raise AirflowFailException(f"{self.task_id}: {exc}") from None
            self.log.info("table not there yet: %s", exc)
            return PokeReturnValue(is_done=False)
        except DeltaMetadataError as exc:
            raise AirflowFailException(f"{self.task_id}: {exc}") from None
        self.log.info("%s", result.message)
        return PokeReturnValue(is_done=result.passed, xcom_value=result.to_dict())

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        try:
            first = self.poke(context)
        except AirflowFailException:
            if self.soft_fail or getattr(self, "never_fail", False):
                raise AirflowSkipException(f"{self.task_id}: skipped (soft_fail)") from None
            raise
        if first.is_done:
            return first.xcom_value
        end_text = format_time(utcnow() + dt.timedelta(seconds=self.timeout))
        self.log.info(
            "condition not met; deferring to the triggerer, polling every %gs until %s",
            self.poke_interval,
            end_text,
        )
        self.defer(
            trigger=self._trigger(context, end_text),
            method_name="execute_complete",
            timeout=dt.timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: return the result (XCom) or fail with its message."""
        if not event:
            raise AirflowException(f"{self.task_id}: the trigger ended without an event")
        if event.get("status") == "success":
            result = event.get("result") or {}
            self.log.info("%s", result.get("message", "condition met"))
            return result
        message = event.get("message") or str(event)
        if event.get("status") == "timeout":
            raise AirflowSensorTimeout(f"{self.task_id}: sensor {message}")
        raise AirflowFailException(f"{self.task_id}: {event.get('error', 'error')}: {message}")


def pick(explicit: Any, params: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """Explicit sensor argument > the contract check's parameter > default."""
    if explicit is not None:
        return explicit
    value = params.get(key)
    return default if value is None else value
