"""The Spark side of every check type: one small class per type, listed in one table (:mod:`.registry`).

A metric class is the Spark-side half of a check type (the contract-side half — parameters and
validation — is in :mod:`airflow_dq_contracts.contract.checks`). The package, by family:

* :mod:`.base` — :class:`Metric`, :class:`PlanContext`, scopes, :class:`Measurement` (the shared-scan plumbing);
* :mod:`.counts` — ``num_rows``, ``count``, ``missing``, ``cardinality``, ``duplicates``;
* :mod:`.statistics` — ``min``, ``max``, ``mean``, ``sum``, ``variance``, ``stddev``, ``percentile``;
* :mod:`.strings` — ``whitelist``, ``blacklist``, ``pattern``, ``min/max/avg_length``;
* :mod:`.timeliness` — ``freshness``, ``completeness``; :mod:`.schema` — schema conformance;
* :mod:`.references` — ``referential``, ``reconciliation``; :mod:`.conditions` — ``row_condition``,
  ``table_condition``; :mod:`.query` — ``sql``; :mod:`.drift` — ``drift`` (measured as a plain statistic);
* :mod:`.registry` — :data:`METRICS`, the one table of (level, type) → class, and :func:`metric_for`.

Following Deequ's analyzers, each class declares:

* ``precondition(ctx)`` — checked against the *schema* before anything runs: a missing column or a
  wrong type removes only that check from the scan and gives it status ``error`` with the reason;
* ``aggregations(scope)`` — the expressions it contributes to the ONE shared ``df.agg(...)`` of
  the main scan; it reads its values back, in the same order, in :meth:`Metric.measure`;
* ``group_keys()`` / ``group_aggregations(group)`` — when it needs distinct counts (cardinality,
  duplicates): the key set it groups by and the expressions it computes over the
  grouped rows. The evaluator runs ONE ``groupBy(keys)`` pass per distinct key set, shared by
  every metric that needs the same keys (and every per-check filter — see :class:`GroupScope`);
  no ``COUNT(DISTINCT …)`` ever enters the main scan, so Spark never plans an ``Expand``;
* ``violation()`` — the per-row predicate of row-level checks (what puts a row in quarantine).

Adding a check type is one class in its family module, one line in :data:`.registry.METRIC_CLASSES`,
plus its tests.

Semantics (DESIGN §4, and the decisions below — the reference for users and tests):

* **Scope.** A check's optional ``filter`` is a SQL predicate; its aggregates are conditional
  (``when(filter, …)``) inside the same scan, and its ``row_count`` is the rows where the filter
  is *true* (NULL counts as false, as in ``WHERE``). ``return: pct`` divides by that row count —
  all rows in scope, NULLs included. No rows in scope → ``pct`` is an error.
* **Value checks** (``whitelist``, ``blacklist``, ``pattern``, length checks with ``return``):
  the metric counts *conforming non-null* rows; ``failed_rows`` counts non-null rows that do not
  conform (NULLs are neither). ``missing``: the metric and ``failed_rows`` are the NULL rows
  (NaN is a value, not NULL).
* **Column duplicates** = ``COUNT(*) − COUNT(DISTINCT col)``: NULLs count as duplicates
  (``[A, A, NULL]`` → 2). Its per-row reading differs on purpose: a row *violates* when its value
  is NULL or occurs more than once, so every copy of a duplicated value is tagged (``[A, A, NULL]``
  → 3 violating rows), because no copy is more "the duplicate" than another.
* **Table duplicates** = ``COUNT(*) − COUNT(DISTINCT (c1, …, cn))`` where a key tuple holding a
  NULL is never distinct (SQL rule), so each such row counts as a duplicate.
* **Whitelist / blacklist values.** On string columns every value is compared as text
  (``1`` → ``"1"``, ``true`` → ``"true"``); ``case_sensitive: false`` lower-cases both sides
  (Java's ``toLowerCase``). On numeric columns values compare as numbers; a numeric *string*
  (``"5"``) is read as the number; any other value can never match a number and makes the check
  an error (it would silently widen a blacklist or narrow a whitelist). On boolean columns
  ``true``/``false`` (or those strings); on date/timestamp columns the column's ISO text
  (``2024-01-31``, ``2024-01-31 10:00:00``) is compared with the values as text.
* **Pattern** uses search semantics (``rlike``) and Spark's *Java* regexes. Non-string atomic
  columns (numbers, dates…) are matched on their Spark text form. Where Java and Python differ:
  ``\\d``, ``\\w``, ``\\s`` are ASCII-only in Java unless ``(?U)`` is given; Python's named group
  ``(?P<name>…)`` is ``(?<name>…)`` in Java; ``\\Z`` in Python is ``\\z`` in Java; Java knows
  possessive quantifiers (``a++``), ``\\p{L}``, ``\\Q…\\E`` and ``\\h``; ``flags: [UNICODE]``
  becomes Java's ``(?u)`` (Unicode-aware case folding). Patterns are compiled by the JVM before
  the scan: one Java rejects makes that check an error.
* **Lengths** are characters (Unicode code points, Spark ``char_length``) for strings and
  elements (``size``) for lists and maps. Without ``return`` the metric is the min/max/avg length
  of non-null values. With ``return``, a row conforms when it is non-null and its length is in
  ``[length_min, length_max]`` (a missing bound is unbounded), and the metric counts those rows.
* **Statistics** use non-null values. ``variance``/``stddev`` are the *sample* statistics
  (n − 1; fewer than two values is an error). ``percentile`` is exact with linear interpolation
  (numpy's default); ``approximate: true`` uses ``percentile_approx`` (which returns a value
  present in the data). ``cardinality`` counts distinct non-null values. ``sum`` of integers is
  exact up to 64 bits (beyond: a double, said in the message), of decimals NULL on overflow
  (→ error), of floats a double.
  ``min``/``max`` of dates and timestamps are **epoch seconds** (UTC; a date is its midnight UTC)
  — write validator bounds in epoch seconds; strings and booleans are errors (validators are
  numeric). NaN is a value: Spark orders it above +Infinity, so a ``max`` or ``mean`` over a
  column holding NaN is NaN, which is an error; ±Infinity metrics are evaluated by the validator
  but recorded as ``metric_value: null`` with the infinity named in the message (strict JSON).
* **No value to compute from** (no rows in scope for ``pct``; no non-null value for ``mean``,
  ``sum``, ``min``, ``max``, ``percentile``, ``variance``, ``stddev``, the length statistics,
  ``freshness``) is an error. Counts (``num_rows``, ``count``, ``missing``, ``duplicates``,
  ``cardinality``, conforming counts) are 0 on empty input and are validated normally.
* **Time.** Timestamps are instants; ``timestamp_ntz`` values, strings without a zone and dates
  are read as UTC (a date is its midnight UTC), whatever the Spark session time zone. Strings
  with an offset or zone (``Z``, ``+02:00``, ``Europe/Paris``) are converted; strings that do not
  parse are ignored (and counted in the message); if none parses, the check is an error.
  ``freshness``: ``age_hours = (reference_time − max|min(timestamp_column)) / 1 h``.
  ``completeness``: the distinct partition periods (UTC hours for ``hourly``, UTC days
  otherwise; string partition values as written) are collected in the main scan and counted
  by :func:`airflow_dq_contracts.contract.timeliness.count_gaps`.
"""

from __future__ import annotations

from airflow_dq_contracts.engine.spark_types import describe_number

from .base import GroupKey, GroupScope, MeasureContext, Measurement, Metric, PlanContext, Scope, grouped_pass_frame
from .registry import MEASURED_AS, METRIC_CLASSES, METRICS, metric_for

# The metric classes themselves are listed once, in .registry; import one from its family module.
__all__ = [
    "MEASURED_AS",
    "METRICS",
    "METRIC_CLASSES",
    "GroupKey",
    "GroupScope",
    "MeasureContext",
    "Measurement",
    "Metric",
    "PlanContext",
    "Scope",
    "describe_number",
    "grouped_pass_frame",
    "metric_for",
]
