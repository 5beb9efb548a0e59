"""The one table of check type → metric class: every Spark-side check type is listed here, explicitly.

Nothing registers itself by being imported: a new check type is one class in its family module
(:mod:`.counts`, :mod:`.statistics`, :mod:`.strings`, :mod:`.timeliness`, :mod:`.schema`,
:mod:`.references`, :mod:`.conditions`, :mod:`.query`) and one line in :data:`METRIC_CLASSES`.
The contract side of the same type is :data:`airflow_dq_contracts.contract.checks.CHECK_TYPES`;
``tests/test_engine_imports.py`` checks that the two tables cover the same types.
A type defined outside the package registers its class with :func:`register_metric`, after its contract
side (:func:`airflow_dq_contracts.contract.checks.register_check_type`); ``tests/test_seams.py`` adds one.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_dq_contracts.contract.checks import CHECK_TYPES
from airflow_dq_contracts.contract.model import Check

from .base import Metric
from .conditions import RowConditionMetric, TableConditionMetric
from .counts import (
    CardinalityMetric,
    ColumnDuplicatesMetric,
    CountMetric,
    MissingMetric,
    NumRowsMetric,
    TableDuplicatesMetric,
)
from .drift import drift_measured_as
from .query import SqlMetric
from .references import ReconciliationMetric, ReferentialMetric
from .schema import ColumnSchemaMetric, TableSchemaMetric
from .statistics import (
    MaxMetric,
    MeanMetric,
    MinMetric,
    PercentileMetric,
    StddevMetric,
    SumMetric,
    VarianceMetric,
)
from .strings import (
    AvgLengthMetric,
    BlacklistMetric,
    MaxLengthMetric,
    MinLengthMetric,
    PatternMetric,
    WhitelistMetric,
)
from .timeliness import CompletenessMetric, FreshnessMetric

#: Every metric class; each declares its ``(level, check_type)``.
METRIC_CLASSES: tuple[type[Metric], ...] = (
    # table level
    NumRowsMetric,
    TableDuplicatesMetric,
    FreshnessMetric,
    CompletenessMetric,
    TableSchemaMetric,
    ReferentialMetric,
    ReconciliationMetric,
    RowConditionMetric,
    TableConditionMetric,
    SqlMetric,
    # column level
    CountMetric,
    MissingMetric,
    CardinalityMetric,
    ColumnDuplicatesMetric,
    MinMetric,
    MaxMetric,
    MeanMetric,
    SumMetric,
    VarianceMetric,
    StddevMetric,
    PercentileMetric,
    WhitelistMetric,
    BlacklistMetric,
    PatternMetric,
    MinLengthMetric,
    MaxLengthMetric,
    AvgLengthMetric,
    ColumnSchemaMetric,
)

#: ``(level, check type)`` → metric class.
METRICS: dict[tuple[str, str], type[Metric]] = {(cls.level, cls.check_type): cls for cls in METRIC_CLASSES}

#: Check types measured as another type of the same level: ``(level, type)`` → the type to use for a check.
MEASURED_AS: dict[tuple[str, str], Callable[[Check], str]] = {
    ("column", "drift"): drift_measured_as,
}


def register_metric(cls: type[Metric]) -> None:
    """Measure the checks of ``(cls.level, cls.check_type)`` with ``cls`` (replacing an earlier class).

    The type's contract side comes first (:func:`airflow_dq_contracts.contract.checks.register_check_type`):
    a metric no contract can name is refused.
    """
    key = (cls.level, cls.check_type)
    if key not in CHECK_TYPES:
        raise ValueError(
            f"no {cls.level}-level check type {cls.check_type!r} in the contract language: register it first"
        )
    METRICS[key] = cls


def metric_for(check: Check) -> Metric:
    """The metric object for ``check``.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "t", "checks": [{"name": "n", "type": "num_rows", "min": 1}]})
    >>> type(metric_for(next(c.all_checks()))).__name__
    'NumRowsMetric'
    """
    level = "table" if check.column is None else "column"
    check_type = check.type
    if (level, check_type) in MEASURED_AS:
        check_type = MEASURED_AS[(level, check_type)](check)
    try:
        cls = METRICS[(level, check_type)]
    except KeyError:
        raise KeyError(f"no Spark metric registered for {level}-level check type {check.type!r}") from None
    return cls(check)
