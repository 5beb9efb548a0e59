"""What a contract run tells OpenLineage, derived from that run's result rows — no Spark work.

Plain Python (no Airflow, no OpenLineage client): :mod:`airflow_dq_contracts.operators.openlineage`
wraps these values in the OpenLineage facet classes when the provider is installed.

* :func:`dataset_id` names a dataset after OpenLineage's naming spec: a local path is namespace
  ``file`` + its absolute path; ``s3://bucket/key`` (``s3a``/``s3n`` too) is ``s3://bucket`` + ``key``;
  ``gs://``, ``abfss://``, ``hdfs://`` alike (scheme + authority, then the path); a catalog table is
  its physical location in the warehouse, the table name travelling as a symlink.
* :func:`assertions` is one entry per check of the run: its name, whether it passed (an ``error``
  did not), its column.
* :func:`column_metrics` reads the statistics the checks measured *on the whole dataset* (checks
  with their own ``filter`` measured a subset and are left out): ``missing`` (count) → null count,
  ``cardinality`` → distinct count, ``count``, ``sum``, ``min``, ``max``, ``percentile`` → quantiles.

Example::

    >>> dataset_id("s3a://lake/silver/orders")
    ('s3://lake', 'silver/orders')
    >>> dataset_id("/data/orders/")
    ('file', '/data/orders')
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlparse

from airflow_dq_contracts.results import STATUS_PASSED

_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfs": "abfss", "wasb": "wasbs"}


def dataset_id(location: str) -> tuple[str, str]:
    """(namespace, name) of a path or URI, after OpenLineage's dataset naming spec.

    >>> dataset_id("hdfs://nn:8020/warehouse/t")
    ('hdfs://nn:8020', 'warehouse/t')
    >>> dataset_id("file:///tmp/x")
    ('file', '/tmp/x')
    """
    text = location.strip()
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        parsed = urlparse(text)
        scheme = _SCHEME_ALIASES.get(parsed.scheme.lower(), parsed.scheme.lower())
        if scheme == "file":
            return "file", os.path.normpath(parsed.path) or "/"
        return f"{scheme}://{parsed.netloc}", parsed.path.strip("/")
    return "file", os.path.normpath(os.path.abspath(os.path.expanduser(text)))


@dataclasses.dataclass(frozen=True)
class Assertion:
    """One check of the run as an OpenLineage data-quality assertion."""

    assertion: str
    success: bool
    column: str | None
    severity: str | None = None


@dataclasses.dataclass
class ColumnStats:
    """The OpenLineage column metrics one run measured for one column (None: not measured)."""

    nullCount: int | None = None  # noqa: N815 - OpenLineage's field names
    distinctCount: int | None = None  # noqa: N815
    sum: float | None = None
    count: float | None = None
    min: float | None = None
    max: float | None = None
    quantiles: dict[str, float] = dataclasses.field(default_factory=dict)

    def empty(self) -> bool:
        return (
            all(v is None for v in (self.nullCount, self.distinctCount, self.sum, self.count, self.min, self.max))
            and not self.quantiles
        )


def assertions(checks: Iterable[Mapping[str, Any]]) -> list[Assertion]:
    """One assertion per result record (``summary["checks"]``), in the run's order."""
    return [
        Assertion(str(rec["check_name"]), rec.get("status") == STATUS_PASSED, rec.get("column"), rec.get("severity"))
        for rec in checks
    ]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def column_metrics(
    checks: Iterable[Mapping[str, Any]], params: Mapping[str, Mapping[str, Any]], scoped: Iterable[str] = ()
) -> dict[str, ColumnStats]:
    """Column statistics measured by the run, keyed by column.

    ``checks`` are the result records; ``params`` maps ``check_id`` → the check's parameters
    (``return``, ``percentile``…) from the contract, which the records do not carry; ``scoped``
    are the ids of checks with their own ``filter`` (they measured a subset: left out).

    >>> recs = [{"check_id": "a/n", "check_type": "missing", "column": "a", "status": "passed",
    ...          "metric_value": 2.0, "filter": None}]
    >>> column_metrics(recs, {"a/n": {"return": "count"}})["a"].nullCount
    2
    """
    out: dict[str, ColumnStats] = {}
    scoped = set(scoped)
    for rec in checks:
        column, value = rec.get("column"), _number(rec.get("metric_value"))
        if column is None or value is None or rec.get("status") == "error":
            continue
        check_params = params.get(rec["check_id"])
        if check_params is None or rec["check_id"] in scoped:
            continue  # a check scoped by its own filter measured a subset, not the dataset
        stats = out.setdefault(column, ColumnStats())
        kind = rec.get("check_type")
        if kind == "missing" and check_params.get("return", "count") == "count":
            stats.nullCount = int(value)
        elif kind == "cardinality":
            stats.distinctCount = int(value)
        elif kind in ("sum", "count", "min", "max"):
            setattr(stats, kind, value)
        elif kind == "percentile":
            stats.quantiles[repr(float(check_params["percentile"]))] = value
    return {column: stats for column, stats in out.items() if not stats.empty()}


def row_count(summary: Mapping[str, Any]) -> int | None:
    """Rows the run evaluated (after the run's filter)."""
    value = summary.get("row_count")
    return int(value) if isinstance(value, int) else None
