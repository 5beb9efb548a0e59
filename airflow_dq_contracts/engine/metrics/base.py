"""The plumbing every metric shares: what a precondition sees, scopes, measurements, the :class:`Metric` base.

A metric class is the Spark-side half of a check type (the contract-side half — parameters and
validation — is :mod:`airflow_dq_contracts.contract.checks`). The protocol, Deequ's analyzers':

* ``precondition(ctx)`` — checked against the *schema* before anything runs;
* ``aggregations(scope)`` — expressions for the ONE shared ``df.agg(...)``, read back in ``measure``;
* ``group_keys()`` / ``group_aggregations(group)`` — the key set of a shared grouped pass and the
  expressions over its grouped rows;
* ``violation()`` — the per-row predicate of row-level checks;
* ``reference_join()`` / ``reference_aggregations()`` / ``own_query()`` — the passes beyond the
  dataset (:mod:`airflow_dq_contracts.engine.relational`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Check
from airflow_dq_contracts.engine.column_paths import ResolvedPath, resolve
from airflow_dq_contracts.engine.relational import ReferenceJoin
from airflow_dq_contracts.engine.spark_types import column, find_field, type_name
from airflow_dq_contracts.engine.text_read import is_marker


@dataclasses.dataclass
class PlanContext:
    """What preconditions may look at: the schema, and a Java regex compiler (the JVM's, if any).

    ``regex_error(pattern)`` returns Java's complaint about ``pattern`` or None.
    """

    schema: T.StructType
    case_sensitive: bool = False
    regex_error: Callable[[str], str | None] = lambda pattern: None
    #: the checked DataFrame (after the run filter), for preconditions that analyse an expression
    frame: Any = None
    #: reference alias → DataFrame (after its filter), or → the reason it could not be read
    references: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``{placeholder}`` → temp view name of this run, for ``sql`` checks
    views: dict[str, str] = dataclasses.field(default_factory=dict)

    def field(self, name: str) -> T.StructField | None:
        """The top-level field called ``name`` (Spark's case rule), or None."""
        return find_field(self.schema, name, self.case_sensitive)

    def path(self, name: str) -> ResolvedPath | str:
        """The column path ``name`` (``address.city``, ``items[].sku``, ``attrs[k]``) resolved, or why not.

        The one place a contract's column becomes a Spark expression: :mod:`..column_paths`.
        """
        return resolve(self.schema, name, self.case_sensitive)

    def missing(self, name: str) -> str:
        """The error message for a column that is not in the data."""
        fields = [f for f in self.schema.fields if not is_marker(f.name)]
        names = ", ".join(f.name for f in fields[:30])
        more = "…" if len(fields) > 30 else ""
        return f"column {name!r} not found in the data (columns: {names}{more})"


class Scope:
    """Restricts a metric's expressions to its check's filter (conditional aggregation).

    Example (needs an active SparkSession, so prose rather than a doctest)::

        scope = Scope(F.col("country") == "DE")
        scope(F.col("amount"))   # CASE WHEN country = 'DE' THEN amount END
    """

    def __init__(self, condition: Column | None) -> None:
        self.condition = condition

    def __call__(self, value: Column) -> Column:
        """``value`` where the filter holds, NULL elsewhere (so aggregates skip the row)."""
        if self.condition is None:
            return value
        return F.when(self.condition, value)

    def count_if(self, predicate: Column) -> Column:
        """Rows in scope where ``predicate`` is true."""
        return F.count(self(F.when(predicate, F.lit(1))))


class GroupScope:
    """What a metric sees of a grouped pass: the key columns and its own row count per group.

    The grouped frame has one row per distinct key tuple with ``_n`` (rows of the group) and one
    ``_n<i>`` per per-check filter (rows of the group where that filter holds), so checks with
    different filters share one pass. ``n`` is this metric's count column; a key tuple is *present*
    in its scope when ``n > 0``.
    """

    def __init__(self, keys: Sequence[Column], n: Column) -> None:
        self.keys = list(keys)
        self.n = n

    @property
    def keys_not_null(self) -> Column:
        """All key columns are non-NULL (a tuple with a NULL is never distinct, SQL rule)."""
        condition = self.keys[0].isNotNull()
        for key in self.keys[1:]:
            condition = condition & key.isNotNull()
        return condition

    @property
    def any_key_null(self) -> Column:
        """Some key column is NULL."""
        return ~self.keys_not_null

    @property
    def present(self) -> Column:
        """The key tuple occurs in this metric's scope."""
        return self.n > F.lit(0)

    def rows(self) -> Column:
        """Rows in scope (sum of the group counts; NULL on an empty frame — read as 0)."""
        return F.sum(self.n)

    def distinct_non_null(self) -> Column:
        """Distinct key tuples without NULLs that occur in scope."""
        return F.count(F.when(self.present & self.keys_not_null, F.lit(1)))


@dataclasses.dataclass(frozen=True)
class GroupKey:
    """One grouping key: an identity (equal identities share a pass) and its expression."""

    identity: str
    expression: Column


def grouped_pass_frame(
    rows: Any,
    members: Sequence[tuple[Any, Sequence[GroupKey]]],
    scope: Callable[[str | None], Any],
    by: Sequence[str] = (),
) -> tuple[Any, list[tuple[Any, int, int]]]:
    """One grouped pass over ``rows`` (a DataFrame) as a frame, and each member's slice of its values.

    ``members``: the planned checks sharing the pass (each with ``metric`` and ``scope_key``) and their
    keys. The rows are grouped by the keys (and ``by``) with one count per scope (``scope(key)`` is the
    :class:`Scope` of a per-check filter), then every member's :meth:`Metric.group_aggregations` over
    those groups: one row per value of ``by`` (none: one row). Returns ``(frame, [(member, lo, hi)])``.
    """
    ordered = sorted(members[0][1], key=lambda k: k.identity)
    position = {k.identity: i for i, k in enumerate(ordered)}
    scope_keys = list(dict.fromkeys(item.scope_key for item, _ in members))
    count_names = {key: ("_dq_n" if key is None else f"_dq_n{i}") for i, key in enumerate(scope_keys)}
    counts = [F.count(scope(key)(F.lit(1))).alias(name) for key, name in count_names.items()]
    keyed = [F.col(name) for name in by] + [k.expression.alias(f"_dq_k{i}") for i, k in enumerate(ordered)]
    grouped = rows.groupBy(*keyed).agg(*counts)
    exprs: list[Column] = []
    slices: list[tuple[Any, int, int]] = []
    for item, keys in members:
        key_cols = [F.col(f"_dq_k{position[k.identity]}") for k in keys]
        contributed = item.metric.group_aggregations(GroupScope(key_cols, F.col(count_names[item.scope_key])))
        slices.append((item, len(exprs), len(exprs) + len(contributed)))
        exprs.extend(contributed)
    return (grouped.groupBy(*by).agg(*exprs) if by else grouped.agg(*exprs)), slices


@dataclasses.dataclass(frozen=True)
class MeasureContext:
    """What :meth:`Metric.measure` gets besides its own values."""

    row_count: int  # rows in this check's scope
    reference_time: dt.datetime  # aware UTC
    #: values of the metric's reference-side passes (anti-join, reference aggregate, own query)
    extra: Sequence[Any] = ()


@dataclasses.dataclass
class Measurement:
    """The outcome of one metric before the validator: a value, or an error saying why not.

    ``metric_value`` may be ±Infinity (the evaluator records it as null with a message) or NaN
    (an error). ``note`` is added to the result message (e.g. unparseable timestamps ignored).
    """

    metric_value: float | None = None
    failed_rows: int | None = None
    error: str | None = None
    note: str = ""
    #: when set, the message of a failed check says this instead of "metric X is outside …"
    reason: str = ""

    @classmethod
    def failure(cls, reason: str) -> Measurement:
        """A measurement that is an error with ``reason``."""
        return cls(error=reason)


class Metric:
    """Base class of the Spark side of a check type. Subclasses override what they need.

    Example (the whole ``count`` check; listed in :data:`.registry.METRIC_CLASSES`)::

        class CountMetric(Metric):
            check_type, level = "count", "column"

            def aggregations(self, scope):
                return [F.count(scope(self.col))]

            def measure(self, scan, grouped, ctx):
                return Measurement(float(scan[0]))
    """

    check_type: ClassVar[str]
    level: ClassVar[str]  # "table" | "column"
    #: whether the check reads a path through array elements (``items[].sku``); others say they cannot
    reads_elements: ClassVar[bool] = False
    #: set by preconditions that resolve the column: the field as found in the schema
    field: T.StructField | None
    #: set by preconditions that resolve the column: its path (:mod:`..column_paths`)
    path: ResolvedPath | None

    def __init__(self, check: Check) -> None:
        self.check = check
        self.field = None
        self.path = None
        self._bound: Column | None = None

    # -- identity ---------------------------------------------------------------------------
    @property
    def column_name(self) -> str:
        """The checked column as it appears in the data (after case-insensitive resolution)."""
        if self.field is not None:
            return self.field.name
        return self.check.column or ""

    @property
    def col(self) -> Column:
        """The checked column (its value per row; inside :meth:`any_value`, one value of an elements path)."""
        if self._bound is not None:
            return self._bound
        if self.path is not None:
            return self.path.value
        return column(self.column_name)

    @property
    def nested_col(self) -> Column | None:
        """:attr:`col` when it is not simply a top-level column (a nested path or a bound element), else None."""
        if self._bound is not None or (self.path is not None and self.path.nested):
            return self.col
        return None

    @property
    def elements(self) -> bool:
        """Whether the checked column is a path through array elements (``items[].sku``)."""
        return self.path is not None and self.path.elements

    def any_value(self, predicate: Callable[[], Column]) -> Column:
        """Per row: some value satisfies ``predicate()`` (built from :attr:`col`); never NULL.

        For a scalar column the row's one value; for an elements path every value of the row, through
        ``exists`` (a row fails when ANY element fails; no values — an empty or NULL array — is false).
        """
        if not self.elements:
            return F.coalesce(predicate(), F.lit(False))
        assert self.path is not None
        return F.coalesce(F.exists(self.path.values, lambda v: self.bound(v, predicate)), F.lit(False))

    def bound(self, value: Column, build: Callable[[], Column], predicate: bool = True) -> Column:
        """``build()`` with :attr:`col` standing for ``value`` (a lambda variable); a predicate's NULL reads false."""
        saved, self._bound = self._bound, value
        try:
            built = build()
            return F.coalesce(built, F.lit(False)) if predicate else built
        finally:
            self._bound = saved

    def has_value(self) -> Column:
        """Per row: the column has a non-NULL value (for an elements path: at least one)."""
        return self.any_value(lambda: self.col.isNotNull())

    def is_missing(self) -> Column:
        """Per row: a value is NULL while its parents are not (a NULL parent is not a NULL child).

        Top-level column: ``col IS NULL``. ``address.city``: ``address`` non-NULL and ``city`` NULL.
        ``items[].sku``: some non-NULL element has a NULL ``sku``; ``tags[]``: some element is NULL.
        """
        if self.path is not None and not self.elements:
            return self.path.present & self.col.isNull()
        return self.any_value(lambda: self.col.isNull())

    def value_count(self) -> Column:
        """Per row: how many non-NULL values the column holds (0/1 for a scalar column)."""
        if not self.elements:
            return F.when(self.col.isNotNull(), F.lit(1)).otherwise(F.lit(0))
        assert self.path is not None
        values = self.path.values
        return F.when(values.isNotNull(), F.size(F.filter(values, lambda v: v.isNotNull()))).otherwise(F.lit(0))

    @property
    def data_type(self) -> T.DataType:
        """The checked column's Spark type (only after a precondition resolved it)."""
        assert self.field is not None, "precondition() resolves the field first"
        return self.field.dataType

    @property
    def return_type(self) -> str | None:
        """The check's ``return`` (``count``, ``pct``…), or None."""
        return self.check.params.get("return")

    # -- protocol ---------------------------------------------------------------------------
    def precondition(self, ctx: PlanContext) -> str | None:
        """Why this check cannot run on this schema, or None. Default: its column exists."""
        if self.check.column is None:
            return None
        found = ctx.path(self.check.column)
        if isinstance(found, str):
            return found
        if found.elements and not self.reads_elements:
            return (
                f"{self.check.type} cannot read every element of an array ({found.text}); "
                "it reads one value per row (checks on elements: missing, count, whitelist, blacklist, "
                "pattern, min, max, min_length, max_length)"
            )
        self.path, self.field = found, found.field()
        return None

    def coordinate(self, peers: list[Metric]) -> None:
        """Called once before the scan with every runnable metric of the same scope (itself included).

        Lets metrics that can share one aggregate agree on it (several percentiles of a column
        become one ``percentile(col, array(…))``). Default: nothing to share.
        """

    def aggregations(self, scope: Scope) -> list[Column]:
        """Expressions for the shared main-scan aggregation (read back in :meth:`measure`)."""
        return []

    def group_keys(self) -> list[GroupKey] | None:
        """The key set of the grouped pass this metric needs, or None."""
        return None

    def group_aggregations(self, group: GroupScope) -> list[Column]:
        """Expressions over the grouped rows of :meth:`group_keys`'s pass."""
        return []

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        """The metric from its values of the scan, of the grouped pass and of its own passes (``ctx.extra``)."""
        raise NotImplementedError

    def violation(self, window_count: Column | None = None) -> Column | None:
        """Per-row predicate: true when this row breaks the check (row-level checks only).

        ``window_count`` is the count of in-scope rows with the same value, for checks that
        declare :meth:`window_keys` (duplicates).
        """
        return None

    def window_keys(self) -> list[Column] | None:
        """Partition keys of the window a per-row reading needs (duplicates), or None."""
        return None

    # -- passes beyond the checked dataset (engine/relational.py) ------------------------------
    def reference_join(self) -> ReferenceJoin | None:
        """The :class:`~airflow_dq_contracts.engine.relational.ReferenceJoin` this metric reads from, or None.

        The evaluator runs ONE left join per distinct join identity (reference, key columns,
        ``as_of``) and hands every member the joined rows' ``matched`` flag.
        """
        return None

    def join_aggregations(self, scope: Scope, matched: Column) -> list[Column]:
        """Expressions over the joined rows of :meth:`reference_join`'s pass (read back in ``ctx.extra``)."""
        return []

    def reference_aggregations(self) -> tuple[str, list[Column]] | None:
        """(reference alias, expressions) computed in ONE aggregate over that reference, or None."""
        return None

    def own_query(self) -> list[Any] | None:
        """Run the metric's own query (``sql`` checks) and return its values, or None."""
        return None

    # -- shared helpers ---------------------------------------------------------------------
    def require_type(self, ctx: PlanContext, allowed: tuple[type, ...], what: str) -> str | None:
        """The default precondition, plus: the column's type is one of ``allowed`` (``what`` names them)."""
        problem = Metric.precondition(self, ctx)
        if problem:
            return problem
        if not isinstance(self.data_type, allowed):
            return f"column {self.column_name!r} is {type_name(self.data_type)}; {self.check.type} needs {what}"
        return None

    def beyond_limit(self, value: Column, side: str | None) -> Column | None:
        """Per row: ``value`` is below the validator's lower limit (``side="lower"``) or above its upper one.

        The limits include the tolerance, in the validator's own exact decimal arithmetic; None
        when the validator has no bound on that side (or ``side`` is None).
        """
        validator = self.check.validator
        if side == "lower" and validator.lower_limit is not None:
            return value < F.lit(validator.lower_limit)
        if side == "upper" and validator.upper_limit is not None:
            return value > F.lit(validator.upper_limit)
        return None

    def ratio(self, count: int, ctx: MeasureContext, failed_rows: int | None = None) -> Measurement:
        """``count`` as the metric, or as a fraction of the rows in scope for ``return: pct``."""
        if self.return_type == "pct":
            if ctx.row_count == 0:
                return Measurement(failed_rows=failed_rows, error="no rows in scope: the percentage has no denominator")
            return Measurement(count / ctx.row_count, failed_rows=failed_rows)
        return Measurement(float(count), failed_rows=failed_rows)
