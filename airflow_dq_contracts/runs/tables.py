"""A run's output tables as values, resolved once — after the job said where its catalog put them.

A catalog table name resolves where the job's catalog placed it: the job reports ``{name: location}``
(its completion payload's ``locations``), recorded here in the warehouse
(:mod:`airflow_dq_contracts.storage.catalog_names`) for the sensors, the report and the CLI, then each
table is resolved into a :class:`~airflow_dq_contracts.storage.locations.TableLocation` carrying the
task's storage options. The read-back, the report and lineage use those values as they are.

>>> tables = RunTables.of("/wh/dq_results", "dq.quarantine", None, warehouse="/wh")
>>> tables.results.uri, tables.quarantine.uri, tables.valid, [t.target for t in tables.outputs]
('/wh/dq_results', '/wh/dq.db/quarantine', None, ['/wh/dq_results', 'dq.quarantine'])
>>> lineage_locations("silver.orders", None, [tables.results, "dq.results"], "/wh")
('/wh/silver.db/orders', [('/wh/dq_results', None), ('/wh/dq.db/results', 'dq.results')])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_dq_contracts.runspec import RunSpec
from airflow_dq_contracts.storage import catalog_names
from airflow_dq_contracts.storage.locations import TableLocation

__all__ = ["RunTables", "lineage_locations", "reported_locations"]


def reported_locations(reported: Mapping[str, Any] | None) -> dict[str, str]:
    """``{catalog name: location}`` the job reported for its tables (none: ``{}``)."""
    return {str(k): str(v) for k, v in dict((reported or {}).get("locations") or {}).items()}


@dataclasses.dataclass(frozen=True)
class RunTables:
    """The results, quarantine and valid tables of one run, each resolved once (quarantine/valid may be None)."""

    results: TableLocation
    quarantine: TableLocation | None
    valid: TableLocation | None
    #: Where the tables' catalog names were placed (also where a reader finds the names the job recorded).
    warehouse: str | None = None

    @classmethod
    def of(
        cls,
        results: str,
        quarantine: str | None,
        valid: str | None,
        *,
        warehouse: str | None,
        storage_options: Mapping[str, str] | None = None,
    ) -> RunTables:
        """The tables named so, resolved in ``warehouse`` (where a job recorded a name, else its layout)."""

        def place(target: str | None) -> TableLocation | None:
            return TableLocation.resolve(target, warehouse, storage_options=storage_options) if target else None

        resolved = place(results)
        assert resolved is not None
        return cls(resolved, place(quarantine), place(valid), warehouse)

    @classmethod
    def resolve(
        cls,
        spec: RunSpec,
        warehouse: str | None,
        *,
        storage_options: Mapping[str, str] | None = None,
        reported: Mapping[str, Any] | None = None,
    ) -> RunTables:
        """``spec``'s tables, after recording where the job's catalog put the names it ``reported``."""
        if spec.results_table is None:
            raise ValueError(f"run {spec.run_id} names no results table to read back")
        for name, where in reported_locations(reported).items():
            catalog_names.record(warehouse, name, where)
        return cls.of(
            spec.results_table,
            spec.quarantine_table,
            spec.valid_table,
            warehouse=warehouse,
            storage_options=storage_options,
        )

    @property
    def outputs(self) -> list[TableLocation]:
        """The tables the run wrote (results, then quarantine and valid when it has them)."""
        return [t for t in (self.results, self.quarantine, self.valid) if t is not None]


def lineage_locations(
    table: str | None, input_path: str | None, outputs: Iterable[TableLocation | str], warehouse: str | None
) -> tuple[str, list[tuple[str, str | None]]]:
    """(where the checked input is, [(where each output is, its catalog name or None)]) for lineage.

    Outputs given as values are used as they are; names (a caller's own list) are resolved here.
    """
    input_location = TableLocation.resolve(table, warehouse).uri if table else str(input_path or "")
    places = [TableLocation.of(output, warehouse) for output in outputs]
    return input_location, [(place.uri, place.name) for place in places]
