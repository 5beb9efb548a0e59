"""OpenLineage facets of a ContractCheckOperator run (used only when the OpenLineage provider is installed).

The values come from :mod:`airflow_dq_contracts.interop.lineage` (plain Python, derived from the run's result
rows); this module only wraps them in the OpenLineage client's classes, imported lazily so that the
operator module imports without the provider. No pyspark, no extra Spark work.

The operator gets ``get_openlineage_facets_on_complete`` from :class:`LineageMixin`.

Example (what the provider's listener does after ``execute``)::

    lineage = check_task.get_openlineage_facets_on_complete(task_instance)
    lineage.inputs[0].facets["dataQualityAssertions"].assertions[0].success
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from airflow_dq_contracts.contract import Contract
from airflow_dq_contracts.interop import lineage
from airflow_dq_contracts.runs.tables import lineage_locations


def _dataset(
    location: str,
    table: str | None,
    facets: dict[str, Any] | None = None,
    input_facets: dict[str, Any] | None = None,
    output: bool = False,
) -> Any:
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import symlinks_dataset

    namespace, name = lineage.dataset_id(location)
    facets = dict(facets or {})
    if table:
        # A catalog table is named by its physical location; its table name travels as a symlink
        # (what OpenLineage's Spark integration does for tables too).
        facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
            identifiers=[symlinks_dataset.Identifier(namespace=namespace, name=table, type="TABLE")]
        )
    if output:
        return OutputDataset(namespace=namespace, name=name, facets=facets)
    return InputDataset(namespace=namespace, name=name, facets=facets, inputFacets=input_facets or {})


def operator_lineage(
    contract: Contract,
    summary: Mapping[str, Any],
    *,
    input_location: str,
    input_table: str | None,
    outputs: list[tuple[str, str | None]],
) -> Any:
    """``OperatorLineage``: the checked dataset as input (assertions + metrics), the written tables as outputs.

    ``outputs`` are ``(location, table name or None)`` of the results/quarantine/valid tables.
    """
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.facet_v2 import data_quality_assertions_dataset as dqa
    from openlineage.client.facet_v2 import data_quality_metrics_input_dataset as dqm

    checks = list(summary.get("checks") or [])
    assertions = [
        dqa.Assertion(
            assertion=rec["check_type"],
            success=item.success,
            column=item.column,
            severity=item.severity,
            name=item.assertion,
            description=rec.get("message") or None,
            expected=rec.get("validator"),
            actual=None if rec.get("metric_value") is None else repr(float(rec["metric_value"])),
        )
        for rec, item in zip(checks, lineage.assertions(checks))
    ]
    params = {c.check_id: c.params for c in contract.evaluated_checks()}
    scoped = {c.check_id for c in contract.evaluated_checks() if c.filter}
    metrics = {
        # ColumnStats carries OpenLineage's own field names (a copy of each, quantiles included).
        column: dqm.ColumnMetrics(**dataclasses.asdict(s))
        for column, s in lineage.column_metrics(checks, params, scoped).items()
    }
    facets = {"dataQualityAssertions": dqa.DataQualityAssertionsDatasetFacet(assertions=assertions)}
    input_facets = {
        "dataQualityMetrics": dqm.DataQualityMetricsInputDatasetFacet(
            columnMetrics=metrics, rowCount=lineage.row_count(summary)
        )
    }
    inputs = [_dataset(input_location, input_table, facets, input_facets)]
    written = [_dataset(location, table, output=True) for location, table in outputs]
    return OperatorLineage(inputs=inputs, outputs=written)


def merge_lineage(each: list[Any]) -> Any:
    """One ``OperatorLineage`` of a task's contracts: every checked input, each written table once."""
    if len(each) == 1:
        return each[0]
    from airflow.providers.openlineage.extractors import OperatorLineage

    outputs: dict[tuple[str, str], Any] = {}
    for one in each:
        for dataset in one.outputs:
            outputs.setdefault((dataset.namespace, dataset.name), dataset)
    return OperatorLineage(inputs=[d for one in each for d in one.inputs], outputs=list(outputs.values()))


def task_lineage(runs: list[dict[str, Any]], warehouse: str | None) -> Any:
    """The ``OperatorLineage`` of a task's runs: each ``{"contract", "summary", "table", "input_path", "outputs"}``,
    its outputs resolved table values (or names, resolved here once)."""
    each = []
    for run in runs:  # one per contract (several in one task)
        input_location, outputs = lineage_locations(run["table"], run["input_path"], run["outputs"], warehouse)
        each.append(
            operator_lineage(
                run["contract"],
                run["summary"],
                input_location=input_location,
                input_table=run["table"],
                outputs=outputs,
            )
        )
    return merge_lineage(each)


class LineageMixin:
    """What :class:`~airflow_dq_contracts.operators.contract_check.ContractCheckOperator` tells OpenLineage."""

    _lineage: dict[str, Any] | None = None  # what the last execute() checked and wrote

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage facets of the run (called by the OpenLineage provider; also on a gate failure).

        The checked dataset is the input, with ``dataQualityAssertions`` (one per check) and
        ``dataQualityMetrics`` (row count and the column statistics the run measured), all read
        from this run's result rows; the results/quarantine/valid tables are the outputs. Returns
        None when nothing ran or the OpenLineage packages are not installed.
        """
        state = self._lineage
        if state is None or not state["runs"]:
            return None
        try:
            return task_lineage(state["runs"], state["warehouse"])
        except ImportError:
            return None  # the OpenLineage provider is optional: silent without it

    def record_lineage(self, runs: list[dict[str, Any]], warehouse: str) -> None:
        """What this execute() checked and wrote, per contract, for :meth:`get_openlineage_facets_on_complete`."""
        self._lineage = {"runs": runs, "warehouse": warehouse}
