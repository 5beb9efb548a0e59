"""The contract registry: one row per contract version in a Delta table ``dq_contracts`` beside the results.

Plain Python plus (lazily) ``deltalake``: the layout, the row built from a contract and its run,
and a delta-rs reader. The Spark job writes the rows (:mod:`airflow_dq_contracts.store.results.spark_registry`);
the report, the alert notifier or a catalog read them here, without a JVM.

Why a registry: the results table says *what* each check found; it does not say who owns the
contract, what its SLA is, or where a run put its quarantined and valid rows. Every run upserts
its contract version's row (``contract_name`` + ``contract_version``), so from any results row a
reader finds the owner, the SLA, the contract text, and the tables of the newest run of that version.

Where it lives: next to the results table — ``/wh/dq_results`` → ``/wh/dq_contracts``,
``s3a://b/dq/results`` → ``s3a://b/dq/dq_contracts``, catalog ``dq.results`` → ``dq.dq_contracts``.

Example::

    >>> registry_table_for("/wh/dq_results"), registry_table_for("dq.results")
    ('/wh/dq_contracts', 'dq.dq_contracts')
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_dq_contracts.store.delta import (
    TableNotFoundError,
    is_path,
    open_table,
    plain_rows,
    scan_table,
    sql_string,
)
from airflow_dq_contracts.timeutil import EPOCH, parse_time

__all__ = [
    "REGISTRY_COLUMNS",
    "REGISTRY_KEY",
    "REGISTRY_TABLE_NAME",
    "contract_text_hash",
    "fold_registry_rows",
    "folded_by_key",
    "merge_registry_rows",
    "read_registry",
    "read_registry_rows",
    "registry_row",
    "registry_table_for",
]

REGISTRY_TABLE_NAME = "dq_contracts"

#: Ordered (name, Spark SQL type) of the registry table.
REGISTRY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("contract_name", "string"),
    ("contract_version", "string"),
    ("owner", "string"),
    ("domain", "string"),
    ("description", "string"),
    ("consumers", "array<string>"),
    ("tags", "array<string>"),
    ("dataset", "string"),
    ("sla_freshness_hours", "double"),
    ("sla_max_latency_minutes", "double"),
    ("sla_availability_target", "double"),
    ("sla_delivery_deadline_utc", "string"),
    ("sla_support_contact", "string"),
    ("sla_escalation_policy", "string"),
    ("contract_hash", "string"),
    ("contract_text", "string"),
    ("first_run_at", "timestamp"),
    ("last_run_at", "timestamp"),
    ("last_run_id", "string"),
    ("last_decision", "string"),
    ("results_table", "string"),
    ("quarantine_table", "string"),
    ("valid_table", "string"),
)
#: A contract version is one row. ``contract_version`` may be NULL (compared NULL-safely).
REGISTRY_KEY: tuple[str, ...] = ("contract_name", "contract_version")
REGISTRY_TIME_COLUMNS: tuple[str, ...] = ("first_run_at", "last_run_at")


def registry_table_for(results_table: str) -> str:
    """The registry table beside ``results_table``: same folder (or database), named ``dq_contracts``.

    >>> registry_table_for("s3a://bucket/dq/results"), registry_table_for("results")
    ('s3a://bucket/dq/dq_contracts', 'dq_contracts')
    """
    text = results_table.strip().rstrip("/")
    if is_path(text):
        if "://" in text:
            return text.rsplit("/", 1)[0] + "/" + REGISTRY_TABLE_NAME
        return os.path.join(os.path.dirname(text), REGISTRY_TABLE_NAME)
    database, _, _ = text.rpartition(".")
    return f"{database}.{REGISTRY_TABLE_NAME}" if database else REGISTRY_TABLE_NAME


def contract_text_hash(text: str) -> str:
    """``sha256:<hex>`` of the contract text as shipped (UTF-8), so a reader sees when a version's text changed.

    >>> contract_text_hash("name: orders\\n").startswith("sha256:"), len(contract_text_hash("x"))
    (True, 71)
    """
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def contract_source_text(contract: Any) -> str:
    """The contract's text when only the model is at hand: its file if readable, else a JSON rendering."""
    source = getattr(contract, "source", None)
    if isinstance(source, str) and os.path.isfile(source):
        try:
            with open(source, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError):
            pass
    import dataclasses

    return json.dumps(dataclasses.asdict(contract), default=str, sort_keys=True)


def registry_row(
    contract: Any,
    *,
    contract_text: str,
    run_id: str,
    run_at: dt.datetime,
    decision: str,
    dataset: str,
    results_table: str | None,
    quarantine_table: str | None,
    valid_table: str | None,
) -> dict[str, Any]:
    """The registry row of one run of ``contract`` (a :class:`~airflow_dq_contracts.contract.model.Contract`).

    ``first_run_at`` and ``last_run_at`` are both this run's time; the upsert keeps the earliest
    first and the newest last.

    Example::

        row = registry_row(contract, contract_text=text, run_id=result.run_id, run_at=result.started_at,
                           decision=result.decision, dataset=result.dataset,
                           results_table="/wh/dq_results", quarantine_table="/wh/q/orders", valid_table=None)
    """
    sla = contract.sla
    return {
        "contract_name": contract.name,
        "contract_version": contract.version,
        "owner": contract.owner,
        "domain": contract.domain,
        "description": contract.description,
        "consumers": list(contract.consumers),
        "tags": list(contract.tags),
        "dataset": dataset,
        "sla_freshness_hours": _float(sla.freshness_hours),
        "sla_max_latency_minutes": _float(sla.max_latency_minutes),
        "sla_availability_target": _float(sla.availability_target),
        "sla_delivery_deadline_utc": None if sla.delivery_deadline_utc is None else str(sla.delivery_deadline_utc),
        "sla_support_contact": sla.support_contact,
        "sla_escalation_policy": sla.escalation_policy,
        "contract_hash": contract_text_hash(contract_text),
        "contract_text": contract_text,
        "first_run_at": run_at,
        "last_run_at": run_at,
        "last_run_id": run_id,
        "last_decision": decision,
        "results_table": results_table,
        "quarantine_table": quarantine_table,
        "valid_table": valid_table,
    }


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def read_registry(
    path: str,
    contract_name: str,
    contract_version: str | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The registry row of a contract (one version, or the most recently run one) with delta-rs; None if absent.

    A missing registry table is ``None`` too (runs written before the registry existed); a table that
    cannot be read raises :class:`~airflow_dq_contracts.store.delta.StoreError`.

    Example::

        row = read_registry("/wh/dq_contracts", "orders")
        print(row["owner"], row["sla_support_contact"], row["quarantine_table"])
    """
    try:
        table = open_table(path, storage_options=storage_options, what="registry")
    except TableNotFoundError:
        return None
    predicate = f"contract_name = {sql_string(contract_name)}"
    if contract_version is not None:
        predicate += f" AND contract_version = {sql_string(contract_version)}"
    rows = folded_by_key(plain_rows(scan_table(table, path, "registry", None, predicate)))
    if not rows:
        return None
    return max(rows, key=lambda r: r.get("last_run_at") or EPOCH)


def merge_registry_rows(existing: Mapping[str, Any] | None, incoming: Mapping[str, Any]) -> dict[str, Any]:
    """The registry row after ``incoming`` (one run's row) is upserted onto ``existing`` (or None).

    The newer run (by ``last_run_at``; a row without one counts as older) supplies every field;
    ``first_run_at`` is the earliest of the two whatever their order.

    >>> import datetime as dt
    >>> day = lambda d: dt.datetime(2024, 5, d)
    >>> old = {"owner": "a", "first_run_at": day(2), "last_run_at": day(2), "last_run_id": "r2"}
    >>> late = merge_registry_rows(old, {"owner": "b", "first_run_at": day(3), "last_run_at": day(3), "last_run_id": "r3"})
    >>> late["owner"], late["first_run_at"].day, late["last_run_id"]
    ('b', 2, 'r3')
    >>> early = merge_registry_rows(old, {"owner": "c", "first_run_at": day(1), "last_run_at": day(1), "last_run_id": "r1"})
    >>> early["owner"], early["first_run_at"].day, early["last_run_id"]
    ('a', 1, 'r2')
    """
    if existing is None:
        return dict(incoming)
    newer = existing.get("last_run_at") is None or (
        incoming.get("last_run_at") is not None and incoming["last_run_at"] >= existing["last_run_at"]
    )
    merged = {name: (incoming if newer else existing).get(name) for name, _ in REGISTRY_COLUMNS}
    firsts = [t for t in (existing.get("first_run_at"), incoming.get("first_run_at")) if t is not None]
    merged["first_run_at"] = min(firsts) if firsts else None
    return merged


def fold_registry_rows(found: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> dict[str, Any]:
    """The key's stored rows (normally one) folded oldest first, then ``row`` upserted onto them.

    >>> import datetime as dt
    >>> fold_registry_rows([], {"owner": "a", "last_run_at": dt.datetime(2024, 5, 1)})["owner"]
    'a'
    """
    existing: dict[str, Any] | None = None
    for other in sorted(found, key=lambda r: r["last_run_at"] or EPOCH):
        existing = merge_registry_rows(existing, other)
    return merge_registry_rows(existing, row)


def folded_by_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored registry rows (times parsed) with one row per key: the newest run's, with the key's earliest
    ``first_run_at``. A key holds two rows when two first runs on object storage both appended it.

    >>> import datetime as dt
    >>> rows = [{"contract_name": "o", "contract_version": "1", "first_run_at": dt.datetime(2024, 5, d),
    ...          "last_run_at": dt.datetime(2024, 5, d), "last_run_id": f"r{d}"} for d in (2, 1)]
    >>> [(r["last_run_id"], r["first_run_at"].day) for r in folded_by_key(rows)]
    [('r2', 1)]
    """
    keyed: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        for name in REGISTRY_TIME_COLUMNS:
            row[name] = parse_time(row.get(name))
        key = tuple(row.get(name) for name in REGISTRY_KEY)
        keyed[key] = merge_registry_rows(keyed.get(key), row)
    return list(keyed.values())


def read_registry_rows(
    path: str, contract_name: str | None = None, *, storage_options: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every registry row (one per contract version, :func:`folded_by_key`), or ``contract_name``'s; [] when no table.

    Example::

        versions = read_registry_rows("/wh/dq_contracts", "orders")
        print(sorted(row["contract_version"] for row in versions))
    """
    try:
        table = open_table(path, storage_options=storage_options, what="registry")
    except TableNotFoundError:
        return []
    predicate = None if contract_name is None else f"contract_name = {sql_string(contract_name)}"
    return folded_by_key(plain_rows(scan_table(table, path, "registry", None, predicate)))
