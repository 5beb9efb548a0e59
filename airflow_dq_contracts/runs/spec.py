"""A run's :class:`~airflow_dq_contracts.runspec.RunSpec` from an edge's settings (the operator's, the CLI's).

The rules both edges share: the ``references`` overrides (the operator's ``{name: "PATH[:FORMAT]"}``, the
command line's ``NAME=PATH[:FORMAT]`` items), the reference time read once into a datetime, the default
results/quarantine tables of a warehouse (the operator's; the CLI writes only the tables it is given) and
the run id of an Airflow task. Raises :class:`~airflow_dq_contracts.runspec.RunSpecError`; each edge says
it in its own words.

>>> from airflow_dq_contracts.contract import load_contract
>>> contract = load_contract({"name": "Orders", "dataset": {"path": "/data/orders"}, "references": {"dim": {"path": "/d"}}})
>>> spec = build_run_spec(contract, warehouse="/wh", references={"dim": "/d2:parquet"}, reference_time="2024-05-02")
>>> spec.results_table, spec.quarantine_table, spec.references["dim"], spec.reference_time.isoformat()
('/wh/dq_results', '/wh/dq_quarantine/orders', ReferenceOverride(path='/d2', format='parquet'), '2024-05-02T00:00:00+00:00')
>>> build_run_spec(contract, references=["dim=/d3"]).results_table is None   # no warehouse: no default tables
True
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_dq_contracts.contract import Contract
from airflow_dq_contracts.results import make_run_id
from airflow_dq_contracts.runspec import ReferenceOverride, RunSpec, parse_reference_override, reference_instant
from airflow_dq_contracts.storage.naming import default_quarantine_table, default_results_table

__all__ = ["build_run_spec", "reference_overrides", "spec_from_args", "task_run_id"]


def task_run_id(dag_id: str, airflow_run_id: str, task_id: str, map_index: int | None = None) -> str:
    """The run id of an Airflow task: deterministic, so a retry replaces its rows; one per map index.

    >>> task_run_id("d", "r", "t") == task_run_id("d", "r", "t", -1) != task_run_id("d", "r", "t", 3)
    True
    """
    parts = [dag_id, airflow_run_id, task_id] + ([str(map_index)] if map_index is not None and map_index >= 0 else [])
    return make_run_id(*parts)


def reference_overrides(references: Mapping[str, str] | Iterable[str] | None) -> dict[str, ReferenceOverride]:
    """``{name: "PATH[:FORMAT]"}`` (the operator's) or ``["NAME=PATH[:FORMAT]", …]`` (the command line's, the
    last one given wins) as structured overrides.

    >>> reference_overrides(["dim=/a", "dim=/b:csv"])
    {'dim': ReferenceOverride(path='/b', format='csv')}
    """
    if isinstance(references, Mapping):
        return {str(name): ReferenceOverride.parse(location) for name, location in references.items()}
    overrides: dict[str, ReferenceOverride] = {}
    for item in references or ():
        name, path, fmt = parse_reference_override(item)
        overrides[name] = ReferenceOverride(path, fmt)
    return overrides


def build_run_spec(
    contract: Contract,
    *,
    warehouse: str | None = None,
    references: Mapping[str, str] | Iterable[str] | None = None,
    reference_time: str | dt.datetime | None = None,
    results_table: str | None = None,
    quarantine_table: str | None = None,
    **fields: Any,
) -> RunSpec:
    """The spec of a run of ``contract``, checked against it (:meth:`RunSpec.for_contract`).

    With a ``warehouse`` the outputs not given go to its default tables; ``fields`` are the other
    :class:`~airflow_dq_contracts.runspec.RunSpec` fields (dataset, filter, run id, Airflow identity…).
    """
    overrides = reference_overrides(references)
    if warehouse:
        results_table = results_table or default_results_table(warehouse)
        quarantine_table = quarantine_table or default_quarantine_table(warehouse, contract.name)
    return RunSpec.for_contract(
        contract,
        references=overrides,
        reference_time=reference_instant(reference_time),
        results_table=results_table,
        quarantine_table=quarantine_table,
        **fields,
    )


#: The run settings ``dq-contracts run`` takes from its flags: {RunSpec setting: argparse destination}.
_CLI_SETTINGS = {
    "reference_time": "reference_time",
    "results_table": "results_table",
    "quarantine_table": "quarantine_table",
    "valid_table": "valid_table",
    "input_path": "input",
    "input_format": "input_format",
    "table": "table",
    "filter": "filter",
    "run_id": "run_id",
    "checkpoint": "checkpoint",
}


def spec_from_args(args: argparse.Namespace, contract: Contract) -> RunSpec:
    """The run ``dq-contracts run`` describes (its parsed arguments), checked against ``contract``.

    Example::

        spec = spec_from_args(build_parser().parse_args(["run", "c.yaml", "--reference", "dim=/d:parquet"]),
                              contract)
        spec.references   # {'dim': ReferenceOverride(path='/d', format='parquet')}
    """
    settings = {setting: getattr(args, flag, None) for setting, flag in _CLI_SETTINGS.items()}
    settings["incremental"] = bool(getattr(args, "incremental", False))
    return build_run_spec(contract, references=getattr(args, "reference", None) or [], **settings)
