"""Expectations of the example pipeline, shared by the DAG tests on local[*] and on a standalone cluster.

Computed independently of the code under test: the rows come from ``dags_examples/orders_data.py`` (the
generator the DAGs themselves use), the results table is read with delta-rs directly, and the decision
rule of DESIGN §6 is written out again here.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "dags_examples"
UTC = dt.timezone.utc

sys.path.insert(0, str(EXAMPLES))
import orders_data  # noqa: E402  (the generator the DAGs use; expectations are computed from its rows)

sys.path.remove(str(EXAMPLES))

__all__ = [
    "assert_xcom_equals_results_table",
    "decision_by_hand",
    "delta_rows",
    "expected_day",
    "interval",
    "iso_z",
    "orders_data",
]


def interval(day: dt.date) -> dict[str, dt.datetime]:
    """dag.test kwargs for the data interval [day, day + 1): a manual run at its end."""
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=UTC)
    return {"logical_date": end, "run_after": end}


def delta_rows(path: Path, column: str, value: Any) -> list[dict[str, Any]]:
    """The rows of the Delta table at ``path`` whose ``column`` equals ``value`` (none when there is no table)."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return []
    table = DeltaTable(str(path)).to_pyarrow_table()
    return table.filter(pc.equal(table[column], value)).to_pylist()


def iso_z(value: dt.datetime | None) -> str | None:
    """ISO-8601 in UTC with a ``Z``, as the summary writes instants (written out here, not imported)."""
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def assert_xcom_equals_results_table(summary: dict[str, Any], warehouse: Path) -> list[dict[str, Any]]:
    """Every check record in XCom is exactly one row of the results table for the run, and nothing more."""
    rows = delta_rows(warehouse / "dq_results", "run_id", summary["run_id"])
    assert rows, f"no results rows for run {summary['run_id']}"
    for row in rows:
        row["evaluated_at"] = iso_z(row["evaluated_at"])
        row["reference_time"] = iso_z(row["reference_time"])
    by_id = {row["check_id"]: row for row in rows}
    assert len(by_id) == len(rows), "a check has two rows: a retry added a copy"
    assert sorted(c["check_id"] for c in summary["checks"]) == sorted(by_id)
    for record in summary["checks"]:
        assert record == by_id[record["check_id"]]
    return rows


def decision_by_hand(rows: list[dict[str, Any]]) -> str:
    """DESIGN §6, written out again from the rows (not through the code under test)."""
    if any(r["action"] == "gate" and r["status"] != "passed" for r in rows):
        return "gate"
    if any(r["action"] == "quarantine" and r["status"] != "passed" and not (r["failed_rows"] or 0) > 0 for r in rows):
        return "gate"  # errored, or failed with no row to set aside: fails closed
    if any(r["action"] == "quarantine" and r["status"] != "passed" and (r["failed_rows"] or 0) > 0 for r in rows):
        return "quarantine"
    return "pass"


def expected_day(outcome: str, day: dt.date) -> list[dict[str, Any]]:
    """The rows of ``day`` that the example producer writes for ``outcome`` (pass, quarantine, gate)."""
    rows = orders_data.generate_orders(orders_data.spec_for(outcome, day))
    return [r for r in rows if r["order_date"] == day]


def asset_events(dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """The asset events a DAG run recorded, as Airflow's metadata database holds them (oldest first)."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetEvent, AssetModel.uri)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetEvent.source_dag_id == dag_id, AssetEvent.source_run_id == run_id)
            .order_by(AssetEvent.source_map_index, AssetEvent.id)
        ).all()
        return [
            {"uri": uri, "task_id": e.source_task_id, "map_index": e.source_map_index, "extra": dict(e.extra)}
            for e, uri in rows
        ]
