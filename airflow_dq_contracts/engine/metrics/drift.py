"""``drift``: measured as the plain statistic of its expanded metric — no metric class of its own.

The contract expands a ``drift`` check into one check per metric (``params['metric']``: ``mean``,
``p50``/``p95``/``p99``, ``cardinality``); each is measured like the underlying check type
(``mean`` → :class:`~.statistics.MeanMetric`, the percentiles → :class:`~.statistics.PercentileMetric`,
exact, sharing the column's one ``percentile(col, array(…))`` with other percentile checks,
``cardinality`` → :class:`~.counts.CardinalityMetric` in the column's grouped pass). The bounds come
from history (:mod:`airflow_dq_contracts.contract.baseline`), not from here.
"""

from __future__ import annotations

from airflow_dq_contracts.contract.baseline import DRIFT_METRICS
from airflow_dq_contracts.contract.model import Check


def drift_measured_as(check: Check) -> str:
    """The check type whose metric measures this expanded ``drift`` check.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "t", "columns": [{"name": "x", "checks": [
    ...     {"name": "x drift", "type": "drift", "metrics": ["p95"]}]}]})
    >>> drift_measured_as(next(c.all_checks()))
    'percentile'
    """
    underlying, _ = DRIFT_METRICS[check.params["metric"]]
    return underlying
