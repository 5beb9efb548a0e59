"""Asset events that carry a contract run's verdict: what a check task tells Airflow's data-aware scheduling.

Airflow 3 records an asset event for every asset in a task's ``outlets`` when the task *succeeds* (a
failed or skipped task records none), and lets the task annotate each event before it ends through
``context["outlet_events"][asset].extra`` — the same accessor ``yield Metadata(asset, extra)`` writes to.
:class:`~airflow_dq_contracts.operators.ContractCheckOperator` fills that ``extra`` for **every** asset
outlet it has (declared with ``outlets=[Asset(...)]``, or derived from the dataset with
``emit_asset=True``), so no event of a check task leaves without the verdict:

* ``extra["airflow_dq_contracts.verdict"]`` — ours, versioned (:data:`SCHEMA_VERSION`; see
  ``docs/contracts.md`` "Asset event extra"): decision, counts, score, failed check ids (capped at
  :data:`MAX_CHECK_IDS`, with the total), contract, run ids, reference time, results table and the
  Delta version of the run's commit, quarantine/valid tables and rows, report link;
* ``extra["airflow.dataquality.result"]`` — the same run in the shape of Airflow's data-quality provider
  (``score``, ``passed``/``warned``/``failed``/``errored``, ``failed_rules``/``warned_rules``), so tools
  reading that convention (e.g. its ``require_quality(asset, min_score=…)``) understand our events.

The quality score is the share of checks that passed, weighted by severity (P0 counts 8, P1 4, P2 2,
P3 1), in [0, 1], rounded to 4 decimals — see :func:`quality_score`.

Which asset ``emit_asset=True`` derives: the **valid table**'s when ``valid_table`` is given (what
consumers should read: the rows that passed, for every decision — with a quarantine decision the bad
rows are not in it), else the **checked dataset**'s (``input_path``, ``table``, else the contract's
``dataset``). URIs follow OpenLineage's naming, as our lineage facets do: ``s3://bucket/key``
(``s3a``/``s3n`` → ``s3``), ``gs://…``, ``file:///absolute/path`` for local paths, and a catalog table is
its location in the warehouse layout (``file:///wh/silver.db/orders``). The asset must be known when the
DAG is parsed (Airflow only records events for assets it registered then), so the location must not be
templated; otherwise give ``outlets=[Asset(...)]`` yourself. Build the same asset in a consumer DAG with
:func:`contract_asset`.

Example::

    orders_valid = contract_asset("/data/valid/orders")      # Asset('file:///data/valid/orders')
    ContractCheckOperator(task_id="check_orders", contract="contracts/orders.yaml",
                          input_path="/data/silver/orders", valid_table="/data/valid/orders",
                          emit_asset=True, fail_on_gate=False)
    # a consumer DAG: schedule=[orders_valid], first task require_contract(orders_valid, accept="quarantine")
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from airflow_dq_contracts.interop.lineage import dataset_id

# The verdict is plain Python (runs/verdict.py: the results watcher's trigger builds it too), named here as before.
from airflow_dq_contracts.runs.verdict import (
    AIRFLOW_DQ_RESULT_KEY,
    DECISION_ORDER,
    MAX_CHECK_IDS,
    SCHEMA_VERSION,
    SEVERITY_WEIGHTS,
    VERDICT_KEY,
    airflow_dq_result,
    build_verdict,
    quality_score,
    verdict_extra,
)
from airflow_dq_contracts.storage.locations import StoreError, is_path, resolve_location
from airflow_dq_contracts.version_compat import Asset, AssetAlias, BaseOperator, Context

# --------------------------------------------------------------------------------------- assets


def asset_uri(location: str, warehouse: str | None = None) -> str:
    """The asset URI of a dataset location, named as OpenLineage names it (see the module docs).

    >>> asset_uri("s3a://lake/silver/orders/"), asset_uri("/data/orders")
    ('s3://lake/silver/orders', 'file:///data/orders')
    >>> asset_uri("silver.orders", "/wh")
    'file:///wh/silver.db/orders'
    """
    target = location if is_path(location) else resolve_location(location, warehouse)
    namespace, name = dataset_id(target)
    if namespace == "file":
        return Path(name).as_uri()
    return f"{namespace}/{name}" if name else namespace


def contract_asset(location: str | None = None, *, table: str | None = None, warehouse: str | None = None) -> Asset:
    """The :class:`Asset` a check task with ``emit_asset=True`` updates for ``location`` (or catalog ``table``).

    Use it in the consumer DAG so both sides name the same asset. A table name is placed in the
    warehouse (default ``$DQ_CONTRACTS_WAREHOUSE``, as the operator reads tables back).

    >>> contract_asset("/data/valid/orders").uri
    'file:///data/valid/orders'
    """
    target = table or location
    if not target:
        raise ValueError("contract_asset: give a location or table=")
    try:
        uri = asset_uri(target, warehouse)
    except StoreError as exc:
        raise ValueError(f"contract_asset: {exc}") from None
    return Asset(name=uri, uri=uri)


def _contract_dataset(contract: Any, folders: Sequence[Path]) -> str | None:
    """The ``dataset`` location a contract declares (path or table), read without validating it."""
    if isinstance(contract, str) and "\n" not in contract and not contract.lstrip().startswith("{"):
        candidate = Path(contract).expanduser()
        found = next(
            (p for p in ([candidate] if candidate.is_absolute() else [f / candidate for f in folders]) if p.is_file()),
            None,
        )
        if found is None:
            raise ValueError(f"contract file {contract} not found (looked in {', '.join(map(str, folders))})")
        contract = found.read_text(encoding="utf-8")
    if isinstance(contract, str):
        try:
            contract = yaml.safe_load(contract)
        except yaml.YAMLError as exc:
            raise ValueError(f"cannot read the contract's dataset: {exc}") from None
    dataset = contract.get("dataset") if isinstance(contract, Mapping) else None
    if not isinstance(dataset, Mapping):
        return None
    location = dataset.get("path") or dataset.get("table")
    return str(location) if location else None


def derived_asset(settings: Mapping[str, Any], folders: Sequence[Path] = ()) -> Asset:
    """The asset ``emit_asset=True`` derives from an operator's arguments (``valid_table``, ``table``,
    ``input_path``, ``contract``, ``warehouse``); ValueError, saying what to give instead, when it cannot.
    """
    location = settings.get("valid_table") or settings.get("table") or settings.get("input_path")
    origin = "valid_table" if settings.get("valid_table") else "table" if settings.get("table") else "input_path"
    if not location:
        contract = settings.get("contract")
        if contract is None or not isinstance(contract, (str, dict)):
            location = None
        else:
            location = _contract_dataset(contract, folders)
        origin = "the contract's dataset"
    if not isinstance(location, str) or not location.strip():
        raise ValueError(
            "emit_asset=True needs the dataset's location when the DAG is parsed: give valid_table=, table= or "
            "input_path= (not mapped), a contract with a dataset, or outlets=[Asset(...)] instead"
        )
    if "{{" in location or "{%" in location:
        raise ValueError(
            f"emit_asset=True cannot derive an asset from a templated {origin} ({location!r}): Airflow registers "
            "assets when the DAG is parsed; give outlets=[Asset(...)] instead"
        )
    warehouse = settings.get("warehouse")
    return contract_asset(location, warehouse=warehouse if isinstance(warehouse, str) else None)


def with_derived_outlet(outlets: Any, asset: Asset) -> list[Any]:
    """``outlets`` (None, one, or a list) with ``asset`` added once."""
    current = [] if outlets is None else list(outlets) if isinstance(outlets, (list, tuple, set)) else [outlets]
    return current if asset in current else [*current, asset]


class ContractAssetsMixin:
    """What :class:`~airflow_dq_contracts.operators.ContractCheckOperator` does with assets (see module docs).

    ``emit_asset=True`` adds the derived asset to ``outlets`` when the operator is built — and, for a
    mapped task, in ``partial()`` (a mapped task's outlets are read when the DAG is parsed, before any
    map index exists). After the run, :meth:`emit_verdict` annotates every asset outlet's event.
    """

    emit_asset: bool = False
    outlets: list[Any]

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """``BaseOperator.partial``, with the derived asset among the outlets when ``emit_asset=True``."""
        if kwargs.get("emit_asset"):
            kwargs["outlets"] = with_derived_outlet(kwargs.get("outlets"), derived_asset(kwargs))
        return super().partial(**kwargs)  # type: ignore[misc]

    def add_contract_asset(self, emit_asset: bool, folders: Sequence[Path]) -> None:
        """Remember ``emit_asset``; when set, add the derived asset to ``outlets`` (ValueError if none can be)."""
        self.emit_asset = bool(emit_asset)
        if self.emit_asset:
            self.outlets = with_derived_outlet(self.outlets, derived_asset(vars(self), folders))

    def emit_verdict(
        self, context: Context, summary: Mapping[str, Any], reference_time: str | None, reported: Any
    ) -> None:
        """Put the verdict in the ``extra`` of every asset event this task will record (nothing without outlets)."""
        targets = [o for o in (self.outlets or []) if not isinstance(o, AssetAlias)]
        if not targets:
            return
        ti = context["ti"]
        version = (reported or {}).get("results_version") if isinstance(reported, Mapping) else None
        extra = verdict_extra(
            summary,
            reference_time=reference_time,
            results_version=version if isinstance(version, int) else None,
            airflow={
                "dag_id": ti.dag_id,
                "run_id": ti.run_id,
                "task_id": ti.task_id,
                "map_index": getattr(ti, "map_index", -1),
            },
        )
        events = context["outlet_events"]
        for outlet in targets:
            events[outlet].extra.update(extra)
        log = getattr(self, "log", None)
        if log is not None:
            log.info(
                "Asset events carry the verdict %s (score %s) for %s",
                str(summary.get("decision")).upper(),
                extra[VERDICT_KEY]["score"],
                ", ".join(getattr(o, "uri", None) or getattr(o, "name", None) or str(o) for o in targets),
            )

    def emit_suite_verdict(
        self, context: Context, combined: Mapping[str, Any], reported: Mapping[Any, Any], warehouse: str | None = None
    ) -> None:
        """For a task given several contracts: every outlet's event carries a verdict too. An outlet that is
        one contract's valid table or dataset gets that contract's verdict; any other gets the combined one
        (:func:`suite_verdict_summary`; each contract's own verdict under ``contracts``)."""
        targets = [o for o in (self.outlets or []) if not isinstance(o, AssetAlias)]
        if not targets:
            return
        ti = context["ti"]
        airflow = {
            "dag_id": ti.dag_id,
            "run_id": ti.run_id,
            "task_id": ti.task_id,
            "map_index": getattr(ti, "map_index", -1),
        }
        members = [m for m in combined.get("contracts") or [] if isinstance(m, Mapping)]

        def extra_of(summary: Mapping[str, Any]) -> dict[str, Any]:
            version = (reported.get(str(summary.get("run_id"))) or {}).get("results_version")
            return verdict_extra(
                summary, results_version=version if isinstance(version, int) else None, airflow=airflow
            )

        own: dict[str, dict[str, Any]] = {}
        for member in members:
            for place in ((member.get("valid") or {}).get("table"), member.get("dataset")):
                if isinstance(place, str) and place:
                    try:
                        own.setdefault(asset_uri(place, warehouse), extra_of(member))
                    except StoreError:
                        continue
        suite_extra = verdict_extra(suite_verdict_summary(combined), airflow=airflow)
        suite_extra[VERDICT_KEY]["contracts"] = [extra_of(m)[VERDICT_KEY] for m in members]
        json.dumps(suite_extra, allow_nan=False)
        events = context["outlet_events"]
        for outlet in targets:
            events[outlet].extra.update(own.get(str(getattr(outlet, "uri", "") or ""), suite_extra))
        log = getattr(self, "log", None)
        if log is not None:
            log.info(
                "Asset events carry the verdicts of %d contracts (combined %s) for %s",
                len(members),
                str(combined.get("decision")).upper(),
                ", ".join(getattr(o, "uri", None) or getattr(o, "name", None) or str(o) for o in targets),
            )


def suite_verdict_summary(combined: Mapping[str, Any]) -> dict[str, Any]:
    """A summary-shaped view of a several-contract task (its XCom value) for :func:`build_verdict`: the
    combined decision and counts; every contract's checks, their ids prefixed ``<contract>:``.

    >>> combined = {"run_id": "dq-1", "decision": "quarantine", "status": "failed",
    ...     "counts": {"passed": 1, "failed": 1, "error": 0}, "contracts": [
    ...     {"contract": {"name": "a"}, "checks": [{"check_id": "x/min", "status": "failed", "severity": "P1"}]},
    ...     {"contract": {"name": "b"}, "checks": [{"check_id": "y/max", "status": "passed", "severity": "P1"}]}]}
    >>> v = build_verdict(suite_verdict_summary(combined))
    >>> v["decision"], v["failed_checks"], v["contract"]["name"], v["counts"]["total"]
    ('quarantine', ['a:x/min'], 'a+b', 2)
    """
    members = [m for m in combined.get("contracts") or [] if isinstance(m, Mapping)]
    names = [str((m.get("contract") or {}).get("name")) for m in members]
    checks = [
        {**check, "check_id": f"{name}:{check.get('check_id')}"}
        for name, member in zip(names, members)
        for check in member.get("checks") or []
        if isinstance(check, Mapping)
    ]
    return {
        "run_id": combined.get("run_id"),
        "decision": combined.get("decision"),
        "status": combined.get("status"),
        "counts": combined.get("counts"),
        "checks": checks,
        "contract": {"name": "+".join(names)},
    }


def search_folders(operator: BaseOperator) -> list[Path]:
    """Where a relative contract path is looked up at parse time: the DAG's folder, its template path, cwd."""
    folders: list[Path] = []
    dag = operator.dag if operator.has_dag() else None
    if dag is not None:
        folders.append(Path(dag.folder))
        folders.extend(Path(extra) for extra in (dag.template_searchpath or ()))
    folders.append(Path(os.getcwd()))
    return folders


__all__ = [
    "AIRFLOW_DQ_RESULT_KEY",
    "DECISION_ORDER",
    "MAX_CHECK_IDS",
    "SCHEMA_VERSION",
    "SEVERITY_WEIGHTS",
    "VERDICT_KEY",
    "ContractAssetsMixin",
    "airflow_dq_result",
    "asset_uri",
    "build_verdict",
    "contract_asset",
    "derived_asset",
    "quality_score",
    "verdict_extra",
]
