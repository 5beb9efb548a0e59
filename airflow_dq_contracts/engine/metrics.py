"""The Spark side of every check type: one small class per type, registered by (level, type name).

A metric class is the Spark-side half of a check type (the contract-side half — parameters and
validation — is in :mod:`airflow_dq_contracts.contract.checks`). Following Deequ's analyzers, each
class declares:

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

Adding a check type is one class here with ``@register``, plus its tests.

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

import dataclasses
import datetime as dt
import decimal
import math
import re
from typing import Any, Callable, ClassVar, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract import timeliness
from airflow_dq_contracts.contract.checks import FORMAT_PATTERNS, REGEX_FLAGS
from airflow_dq_contracts.contract.model import Check

# --------------------------------------------------------------------------------------- helpers

INTEGRAL_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
NUMERIC_TYPES = (*INTEGRAL_TYPES, T.FloatType, T.DoubleType, T.DecimalType)
TIME_TYPES = (T.DateType, T.TimestampType, T.TimestampNTZType)
LENGTH_TYPES = (T.StringType, T.ArrayType, T.MapType)

_MICROS_PER_SECOND = 1_000_000
_MICROS_PER_HOUR = 3_600 * _MICROS_PER_SECOND
_MICROS_PER_DAY = 24 * _MICROS_PER_HOUR
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

# A string carries its own zone when a clock time is followed by Z, an offset, UTC/GMT(±offset) or
# a region id. Anything else is a naive wall-clock time, read as UTC (DESIGN §4). Requiring the
# clock time first keeps "2024-01-31" (whose "-31" looks like an offset) naive.
_ZONED_TEXT = (
    r"(?i)\d{1,2}:\d{2}(:\d{2}(\.\d*)?)?\s*"
    r"(z|(utc|gmt|ut)?\s*[+-]\d{1,2}(:?\d{2}){0,2}|utc|gmt|ut|[a-z_]+/[a-z_]+(/[a-z_]+)?)\s*$"
)


def quote(name: str) -> str:
    """A column name as a SQL identifier (backticks; dots and spaces are part of the name).

    >>> quote("order.id")
    '`order.id`'
    """
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    """``F.col`` for a top-level column whose name may contain dots or spaces."""
    return F.col(quote(name))


def type_name(data_type: T.DataType) -> str:
    """Short Spark SQL name of a type, for messages (``bigint``, ``array<string>``)."""
    return data_type.simpleString()


def describe_number(value: float) -> str:
    """A metric for a message: integers without ``.0``, others with up to 10 significant digits."""
    if math.isinf(value):
        return "+Infinity" if value > 0 else "-Infinity"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}"


def to_float(value: Any) -> float | None:
    """A Spark aggregate result (int, Decimal, float, None) as a Python float."""
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return math.nan
        return float(value)
    return float(value)


def micros_to_datetime(micros: int) -> dt.datetime:
    """Epoch microseconds → aware UTC datetime (``OverflowError`` beyond Python's year 9999)."""
    return _EPOCH + dt.timedelta(microseconds=int(micros))


def instant_micros(name: str, data_type: T.DataType) -> Column | None:
    """Epoch microseconds (UTC) of a date / timestamp / timestamp_ntz / string column, or None.

    Independent of the session time zone: ``timestamp_ntz`` and zone-less strings are wall-clock
    UTC; dates are midnight UTC; unparseable strings give NULL (``try_cast``, so ANSI mode never
    fails the scan).
    """
    ident = quote(name)
    if isinstance(data_type, T.TimestampType):
        return F.unix_micros(column(name))
    if isinstance(data_type, T.TimestampNTZType):
        return F.expr(f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {ident})")
    if isinstance(data_type, T.DateType):
        return F.unix_date(column(name)).cast("long") * F.lit(_MICROS_PER_DAY)
    if isinstance(data_type, T.StringType):
        zoned = F.expr(f"unix_micros(try_cast({ident} AS TIMESTAMP))")
        naive = F.expr(
            f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', try_cast({ident} AS TIMESTAMP_NTZ))"
        )
        return F.when(column(name).rlike(_ZONED_TEXT), zoned).otherwise(naive)
    return None


# --------------------------------------------------------------------------------------- plumbing


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
        for candidate in self.schema.fields:
            if candidate.name == name:
                return candidate
        if not self.case_sensitive:
            matches = [f for f in self.schema.fields if f.name.lower() == name.lower()]
            if len(matches) == 1:
                return matches[0]
        return None

    def missing(self, name: str) -> str:
        """The error message for a column that is not in the data."""
        names = ", ".join(f.name for f in self.schema.fields[:30])
        more = "…" if len(self.schema.fields) > 30 else ""
        return f"column {name!r} not found in the data (columns: {names}{more})"


class Scope:
    """Restricts a metric's expressions to its check's filter (conditional aggregation).

    >>> scope = Scope(None)
    >>> scope(F.lit(1)) is not None
    True
    """

    def __init__(self, condition: Column | None):
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

    def __init__(self, keys: Sequence[Column], n: Column):
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
        return ~self.keys_not_null

    @property
    def present(self) -> Column:
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

    @classmethod
    def failure(cls, reason: str) -> "Measurement":
        return cls(error=reason)


# --------------------------------------------------------------------------------------- base


class Metric:
    """Base class of the Spark side of a check type. Subclasses override what they need.

    Example (the whole ``count`` check)::

        @register
        class CountMetric(Metric):
            check_type, level = "count", "column"

            def aggregations(self, scope):
                return [F.count(scope(self.col))]

            def measure(self, scan, grouped, ctx):
                return Measurement(float(scan[0]))
    """

    check_type: ClassVar[str]
    level: ClassVar[str]  # "table" | "column"
    #: set by preconditions that resolve the column: the field as found in the schema
    field: T.StructField | None

    def __init__(self, check: Check):
        self.check = check
        self.field = None

    # -- identity ---------------------------------------------------------------------------
    @property
    def column_name(self) -> str:
        """The checked column as it appears in the data (after case-insensitive resolution)."""
        if self.field is not None:
            return self.field.name
        return self.check.column or ""

    @property
    def col(self) -> Column:
        return column(self.column_name)

    @property
    def return_type(self) -> str | None:
        return self.check.params.get("return")

    # -- protocol ---------------------------------------------------------------------------
    def precondition(self, ctx: PlanContext) -> str | None:
        """Why this check cannot run on this schema, or None. Default: its column exists."""
        if self.check.column is None:
            return None
        self.field = ctx.field(self.check.column)
        if self.field is None:
            return ctx.missing(self.check.column)
        return None

    def coordinate(self, peers: "list[Metric]") -> None:
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
    def reference_join(self) -> Any:
        """The :class:`~.relational.ReferenceJoin` this metric reads from, or None.

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
        problem = Metric.precondition(self, ctx)
        if problem:
            return problem
        assert self.field is not None
        if not isinstance(self.field.dataType, allowed):
            return (f"column {self.column_name!r} is {type_name(self.field.dataType)}; "
                    f"{self.check.type} needs {what}")
        return None

    def ratio(self, count: int, ctx: MeasureContext, failed_rows: int | None = None) -> Measurement:
        """``count`` as the metric, or as a fraction of the rows in scope for ``return: pct``."""
        if self.return_type == "pct":
            if ctx.row_count == 0:
                return Measurement(failed_rows=failed_rows,
                                   error="no rows in scope: the percentage has no denominator")
            return Measurement(count / ctx.row_count, failed_rows=failed_rows)
        return Measurement(float(count), failed_rows=failed_rows)


METRICS: dict[tuple[str, str], type[Metric]] = {}


def register(cls: type[Metric]) -> type[Metric]:
    """Class decorator: make ``cls`` the Spark side of ``(cls.level, cls.check_type)``."""
    METRICS[(cls.level, cls.check_type)] = cls
    return cls


def metric_for(check: Check) -> Metric:
    """The metric object for ``check``.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "t", "checks": [{"name": "n", "type": "num_rows", "min": 1}]})
    >>> type(metric_for(next(c.all_checks()))).__name__
    'NumRowsMetric'
    """
    level = "table" if check.column is None else "column"
    try:
        cls = METRICS[(level, check.type)]
    except KeyError:
        raise KeyError(f"no Spark metric registered for {level}-level check type {check.type!r}") from None
    return cls(check)


def _count(value: Any) -> int:
    return int(value or 0)


# --------------------------------------------------------------------------------------- table level


@register
class NumRowsMetric(Metric):
    """``num_rows``: rows in scope (the evaluator's per-scope row count; nothing to add)."""

    check_type, level = "num_rows", "table"

    def measure(self, scan, grouped, ctx):
        return Measurement(float(ctx.row_count))


def _groupable(data_type: T.DataType) -> bool:
    """Spark cannot group by maps (nor by anything holding one)."""
    if isinstance(data_type, T.MapType):
        return False
    if isinstance(data_type, T.ArrayType):
        return _groupable(data_type.elementType)
    if isinstance(data_type, T.StructType):
        return all(_groupable(f.dataType) for f in data_type.fields)
    return True


@register
class TableDuplicatesMetric(Metric):
    """Table ``duplicates``: ``COUNT(*) − COUNT(DISTINCT (c1…cn))``; tuples with a NULL are never distinct."""

    check_type, level = "duplicates", "table"

    def precondition(self, ctx):
        self.fields: list[T.StructField] = []
        for name in self.check.params["columns"]:
            found = ctx.field(name)
            if found is None:
                return ctx.missing(name)
            if not _groupable(found.dataType):
                return f"column {name!r} is {type_name(found.dataType)}; maps cannot be compared for duplicates"
            self.fields.append(found)
        return None

    def group_keys(self):
        return [GroupKey(f"col:{f.name}", column(f.name)) for f in self.fields]

    def group_aggregations(self, group):
        return [group.rows(), group.distinct_non_null()]

    def measure(self, scan, grouped, ctx):
        rows, distinct = _count(grouped[0]), _count(grouped[1])
        return self.ratio(rows - distinct, ctx)


class _TimeColumnMetric(Metric):
    """Shared by freshness and completeness: a date / timestamp / string column read as instants."""

    time_param: ClassVar[str]

    def precondition(self, ctx):
        name = self.check.params[self.time_param]
        self.field = ctx.field(name)
        if self.field is None:
            return ctx.missing(name)
        if instant_micros(self.field.name, self.field.dataType) is None:
            return (f"column {self.field.name!r} is {type_name(self.field.dataType)}; {self.check.type} needs "
                    "a date, timestamp or timestamp text column")
        return None

    @property
    def micros(self) -> Column:
        assert self.field is not None
        expression = instant_micros(self.field.name, self.field.dataType)
        assert expression is not None
        return expression


@register
class FreshnessMetric(_TimeColumnMetric):
    """``freshness``: hours from the newest (``aggregation: min`` → oldest) timestamp to the reference."""

    check_type, level, time_param = "freshness", "table", "timestamp_column"

    def aggregations(self, scope):
        newest = F.max if self.check.params.get("aggregation", "max") == "max" else F.min
        return [newest(scope(self.micros)), F.count(scope(self.micros)), F.count(scope(self.col))]

    def measure(self, scan, grouped, ctx):
        extreme, parsed, non_null = scan[0], _count(scan[1]), _count(scan[2])
        name = self.column_name
        if non_null == 0:
            return Measurement.failure(f"no non-null value in {name!r} to measure freshness from")
        if parsed == 0 or extreme is None:
            return Measurement.failure(f"none of the {non_null} non-null values of {name!r} could be read as a time")
        try:
            moment = micros_to_datetime(extreme)
        except OverflowError:
            return Measurement.failure(f"the {self.check.params.get('aggregation', 'max')} of {name!r} "
                                       "is outside the representable years 1–9999")
        age = timeliness.age_hours(ctx.reference_time, moment)
        note = f"{self.check.params.get('aggregation', 'max')}({name}) = {moment.isoformat().replace('+00:00', 'Z')}"
        if parsed < non_null:
            note += f"; {non_null - parsed} value(s) could not be read as a time and were ignored"
        return Measurement(age, note=note)


@register
class CompletenessMetric(_TimeColumnMetric):
    """``completeness``: missing partition periods in the lookback window (see ``timeliness.count_gaps``).

    The distinct partition periods are collected inside the main scan (``collect_set`` of the UTC
    hour for ``hourly``, of the UTC day otherwise — a few thousand values even for years of
    data), so completeness costs no extra pass. String partition values are collected as written
    and read by ``timeliness`` (which also knows ``2024-W05`` and ``2024-01``); one that is not a
    time makes the check an error naming it.
    """

    check_type, level, time_param = "completeness", "table", "partition_column"

    @property
    def _unit(self) -> int:
        return _MICROS_PER_HOUR if self.check.params["granularity"] == "hourly" else _MICROS_PER_DAY

    def _period(self) -> Column:
        assert self.field is not None
        if isinstance(self.field.dataType, T.StringType):
            return self.col
        if isinstance(self.field.dataType, T.DateType):  # days since the epoch: no arithmetic on micros
            days = F.unix_date(self.col).cast("long")
            return days * F.lit(24) if self._unit == _MICROS_PER_HOUR else days
        # Floor division without a detour through doubles that could round to the next period:
        # subtract the positive remainder, then the quotient is a whole number (rounded to it).
        unit = F.lit(self._unit)
        return F.round((self.micros - F.pmod(self.micros, unit)) / unit).cast("long")

    def aggregations(self, scope):
        return [F.collect_set(scope(self._period()))]

    def measure(self, scan, grouped, ctx):
        assert self.field is not None
        raw = sorted(scan[0] or [])
        if isinstance(self.field.dataType, T.StringType):
            values: list[Any] = [value for value in raw if value.strip()]
        else:
            # Date buckets are days (or hours) since the epoch, timestamp buckets likewise.
            try:
                values = [micros_to_datetime(bucket * self._unit) for bucket in raw]
            except OverflowError:
                return Measurement.failure(f"a value of {self.column_name!r} is outside the representable years 1–9999")
        params = self.check.params
        try:
            report = timeliness.count_gaps(values, ctx.reference_time, params["granularity"],
                                           params["lookback_days"], params["allow_future_gaps"])
        except (timeliness.PartitionValueError, ValueError) as exc:
            return Measurement.failure(f"partition column {self.column_name!r}: {exc}")
        return Measurement(float(report.gap_count), note=report.describe(limit=5))


# --------------------------------------------------------------------------------------- statistics


class _NumericStat(Metric):
    """A statistic over the non-null numbers of a column (``mean``, ``sum``, ``variance``…)."""

    minimum_values: ClassVar[int] = 1

    def precondition(self, ctx):
        return self.require_type(ctx, NUMERIC_TYPES, "a numeric column")

    @property
    def as_double(self) -> Column:
        return self.col.cast("double")

    def statistic(self, scope: Scope) -> Column:
        raise NotImplementedError

    def aggregations(self, scope):
        return [self.statistic(scope), F.count(scope(self.col))]

    def measure(self, scan, grouped, ctx):
        value, count = scan[0], _count(scan[1])
        if count < self.minimum_values:
            if self.minimum_values == 1:
                return Measurement.failure(f"no non-null value in {self.column_name!r} to compute {self.check.type} of")
            return Measurement.failure(f"{self.check.type} needs at least {self.minimum_values} non-null values "
                                       f"(sample statistic, n − 1); {self.column_name!r} has {count}")
        number = to_float(value)
        if number is None:
            return Measurement.failure(f"{self.check.type} of {self.column_name!r} overflows its type")
        return Measurement(number)


@register
class MeanMetric(_NumericStat):
    """``mean``: arithmetic mean of the non-null values (in double, so it cannot overflow)."""

    check_type, level = "mean", "column"

    def statistic(self, scope):
        return F.avg(scope(self.as_double))


@register
class SumMetric(_NumericStat):
    """``sum``: exact 64-bit for integers, NULL on decimal overflow (an error), double for floats.

    An integer sum beyond 64 bits (where ANSI mode would fail the query) falls back to the double
    sum computed alongside — approximate, and said so in the message. Both are as cheap as the
    plain sum; an exact decimal(38,0) sum would cost several times more on every row.
    """

    check_type, level = "sum", "column"

    def statistic(self, scope):
        assert self.field is not None
        if isinstance(self.field.dataType, INTEGRAL_TYPES):
            return F.try_sum(scope(self.col.cast("long")))
        if isinstance(self.field.dataType, T.DecimalType):
            return F.try_sum(scope(self.col))
        return F.sum(scope(self.as_double))

    def aggregations(self, scope):
        exprs = super().aggregations(scope)
        if isinstance(self.field.dataType, INTEGRAL_TYPES):  # type: ignore[union-attr]
            exprs.append(F.sum(scope(self.as_double)))
        return exprs

    def measure(self, scan, grouped, ctx):
        if len(scan) > 2 and scan[0] is None and _count(scan[1]) > 0:
            approximate = super().measure([scan[2], scan[1]], grouped, ctx)
            if approximate.error is None:
                approximate.note = "the sum exceeds 64-bit integers: recorded as a double (approximate)"
            return approximate
        return super().measure(scan[:2], grouped, ctx)


@register
class VarianceMetric(_NumericStat):
    """``variance``: sample variance (n − 1), like SQL ``VARIANCE``."""

    check_type, level, minimum_values = "variance", "column", 2

    def statistic(self, scope):
        return F.var_samp(scope(self.as_double))


@register
class StddevMetric(_NumericStat):
    """``stddev``: sample standard deviation (n − 1), like SQL ``STDDEV``."""

    check_type, level, minimum_values = "stddev", "column", 2

    def statistic(self, scope):
        return F.stddev_samp(scope(self.as_double))


@register
class PercentileMetric(_NumericStat):
    """``percentile``: exact, linear interpolation between closest ranks (numpy's default).

    ``approximate: true`` → ``percentile_approx`` (default accuracy 10000: a value of the column).

    Several percentiles of one column (same filter, same exactness) share ONE aggregate
    ``percentile(col, array(p1, p2, …))``: each check emits the identical expression, Spark
    computes it once (the value counts are built once), and each reads its own element.
    """

    check_type, level = "percentile", "column"

    def __init__(self, check: Check):
        super().__init__(check)
        self.fraction = float(check.params["percentile"])
        self.approximate = bool(check.params.get("approximate"))
        self.fractions = [self.fraction]

    def coordinate(self, peers):
        self.fractions = sorted({p.fraction for p in peers if isinstance(p, PercentileMetric)
                                 and p.column_name == self.column_name and p.approximate == self.approximate})

    def statistic(self, scope):
        fractions = F.array(*[F.lit(f) for f in self.fractions])
        if self.approximate:
            return F.percentile_approx(scope(self.as_double), fractions)
        return F.percentile(scope(self.as_double), fractions)

    def measure(self, scan, grouped, ctx):
        values = scan[0]
        picked = None if values is None else values[self.fractions.index(self.fraction)]
        return super().measure([picked, *scan[1:]], grouped, ctx)


class _ExtremeMetric(Metric):
    """``min`` / ``max`` over numbers, dates and timestamps (epoch seconds, UTC)."""

    reducer: ClassVar[Callable[[Column], Column]]

    def precondition(self, ctx):
        return self.require_type(ctx, NUMERIC_TYPES + TIME_TYPES,
                                 "a numeric, date or timestamp column (validators compare numbers)")

    @property
    def value(self) -> Column:
        """The column in metric units: numbers as they are, dates/timestamps in epoch seconds."""
        assert self.field is not None
        if isinstance(self.field.dataType, TIME_TYPES):
            micros = instant_micros(self.column_name, self.field.dataType)
            assert micros is not None
            return micros / F.lit(float(_MICROS_PER_SECOND))
        return self.col

    def aggregations(self, scope):
        exprs = [type(self).reducer(scope(self.value)), F.count(scope(self.col))]
        predicate = self.violation()
        if predicate is not None:
            exprs.append(scope.count_if(predicate))
        return exprs

    def measure(self, scan, grouped, ctx):
        failed_rows = _count(scan[2]) if len(scan) > 2 else None
        if _count(scan[1]) == 0:
            return Measurement(failed_rows=failed_rows,
                               error=f"no non-null value in {self.column_name!r} to compute {self.check.type} of")
        return Measurement(to_float(scan[0]), failed_rows=failed_rows)


@register
class MinMetric(_ExtremeMetric):
    """``min``; per row (when the validator has a lower bound): value < lower − tolerance."""

    check_type, level, reducer = "min", "column", F.min

    def violation(self, window_count=None):
        limit = self.check.validator.lower_limit  # exact decimal arithmetic, as the validator's own
        if limit is None:
            return None
        return self.value < F.lit(limit)


@register
class MaxMetric(_ExtremeMetric):
    """``max``; per row (when the validator has an upper bound): value > upper + tolerance."""

    check_type, level, reducer = "max", "column", F.max

    def violation(self, window_count=None):
        limit = self.check.validator.upper_limit  # exact decimal arithmetic, as the validator's own
        if limit is None:
            return None
        return self.value > F.lit(limit)


@register
class CountMetric(Metric):
    """``count``: non-null values (any type)."""

    check_type, level = "count", "column"

    def aggregations(self, scope):
        return [F.count(scope(self.col))]

    def measure(self, scan, grouped, ctx):
        return Measurement(float(_count(scan[0])))


class _GroupedColumnMetric(Metric):
    """A column metric read from the grouped pass on that column (shared with its siblings)."""

    not_groupable = "maps cannot be grouped"

    def precondition(self, ctx):
        problem = super().precondition(ctx)
        if problem is None and not _groupable(self.field.dataType):  # type: ignore[union-attr]
            return f"column {self.column_name!r} is {type_name(self.field.dataType)}; {self.not_groupable}"  # type: ignore[union-attr]
        return problem

    def group_keys(self):
        return [GroupKey(f"col:{self.column_name}", self.col)]


@register
class CardinalityMetric(_GroupedColumnMetric):
    """``cardinality``: distinct non-null values, from the grouped pass on the column."""

    check_type, level = "cardinality", "column"
    not_groupable = "maps have no distinct values"

    def group_aggregations(self, group):
        return [group.distinct_non_null()]

    def measure(self, scan, grouped, ctx):
        return Measurement(float(_count(grouped[0])))


# --------------------------------------------------------------------------------------- value checks


@register
class MissingMetric(Metric):
    """``missing``: NULL rows (count or pct); each NULL row violates."""

    check_type, level = "missing", "column"

    def aggregations(self, scope):
        return [scope.count_if(self.col.isNull())]

    def measure(self, scan, grouped, ctx):
        nulls = _count(scan[0])
        return self.ratio(nulls, ctx, failed_rows=nulls)

    def violation(self, window_count=None):
        return self.col.isNull()


@register
class ColumnDuplicatesMetric(_GroupedColumnMetric):
    """Column ``duplicates``: ``COUNT(*) − COUNT(DISTINCT col)`` — NULLs count as duplicates.

    Per row, a row violates when its value is NULL or occurs more than once in scope, so
    ``failed_rows`` (every copy) is larger than the metric (copies beyond the first).
    """

    check_type, level = "duplicates", "column"
    not_groupable = "maps cannot be compared for duplicates"

    def group_aggregations(self, group):
        violating = F.sum(F.when(group.present & (group.any_key_null | (group.n > F.lit(1))), group.n))
        return [group.rows(), group.distinct_non_null(), violating]

    def measure(self, scan, grouped, ctx):
        rows, distinct, violating = _count(grouped[0]), _count(grouped[1]), _count(grouped[2])
        return self.ratio(rows - distinct, ctx, failed_rows=violating)

    def window_keys(self):
        return [self.col]

    def violation(self, window_count=None):
        if window_count is None:
            return None
        return self.col.isNull() | (window_count > F.lit(1))


class _ConformanceMetric(Metric):
    """A value check: the metric counts conforming non-null rows; non-null others are violations."""

    def conforming(self) -> Column:
        """True for a non-null value that conforms (only evaluated on non-null values)."""
        raise NotImplementedError

    def aggregations(self, scope):
        # Non-conforming = non-null − conforming: the rule (a regex, say) runs once per row.
        return [scope.count_if(self.col.isNotNull() & self.conforming()), F.count(scope(self.col))]

    def measure(self, scan, grouped, ctx):
        conforming = _count(scan[0])
        return self.ratio(conforming, ctx, failed_rows=_count(scan[1]) - conforming)

    def violation(self, window_count=None):
        return self.col.isNotNull() & ~self.conforming()


def _text(value: Any) -> str:
    """A YAML scalar as the text Spark would show (``true``, ``1``, ``2.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


_NUMBER_TEXT = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$")


class _MembershipMetric(_ConformanceMetric):
    """Shared by whitelist and blacklist: ``values`` converted to the column's type (see module doc)."""

    def precondition(self, ctx):
        problem = super().precondition(ctx)
        if problem:
            return problem
        assert self.field is not None
        data_type = self.field.dataType
        values = list(self.check.params["values"])
        self.lower = False
        if isinstance(data_type, T.StringType):
            self.values: list[Any] = [_text(v) for v in values]
            self.lower = not self.check.params.get("case_sensitive", True)
            if self.lower:
                self.values = [v.lower() for v in self.values]
            self.compared = self.col
        elif isinstance(data_type, NUMERIC_TYPES):
            converted = []
            for value in values:
                if isinstance(value, bool) or not (isinstance(value, (int, float)) or
                                                   (isinstance(value, str) and _NUMBER_TEXT.match(value))):
                    return (f"value {value!r} can never equal a number of column {self.column_name!r} "
                            f"({type_name(data_type)}); give numbers")
                number = value if not isinstance(value, str) else (
                    int(value) if re.fullmatch(r"\s*[+-]?\d+\s*", value) else float(value))
                # Spark literals are 64-bit: a larger integer can only be compared as a double.
                if isinstance(number, int) and not -(2**63) <= number < 2**63:
                    number = float(number)
                converted.append(number)
            self.values = converted
            self.compared = self.col
        elif isinstance(data_type, T.BooleanType):
            converted = []
            for value in values:
                if isinstance(value, bool):
                    converted.append(value)
                elif isinstance(value, str) and value.strip().lower() in ("true", "false"):
                    converted.append(value.strip().lower() == "true")
                else:
                    return f"value {value!r} can never equal a boolean of column {self.column_name!r}; give true/false"
            self.values = converted
            self.compared = self.col
        elif isinstance(data_type, (T.ArrayType, T.MapType, T.StructType, T.BinaryType)):
            return f"column {self.column_name!r} is {type_name(data_type)}; {self.check.type} compares scalar values"
        else:  # dates, timestamps, intervals…: compared as their text
            self.values = [_text(v) for v in values]
            self.compared = self.col.cast("string")
        return None

    def member(self) -> Column:
        target = F.lower(self.compared) if self.lower else self.compared
        return target.isin(self.values)


@register
class WhitelistMetric(_MembershipMetric):
    """``whitelist``: non-null values in ``values`` conform."""

    check_type, level = "whitelist", "column"

    def conforming(self):
        return self.member()


@register
class BlacklistMetric(_MembershipMetric):
    """``blacklist``: non-null values not in ``values`` conform."""

    check_type, level = "blacklist", "column"

    def conforming(self):
        return ~self.member()


def java_pattern(params: dict[str, Any]) -> str:
    """The regex Spark runs for a ``pattern`` check: ``format`` shortcut or ``pattern`` with inline flags.

    >>> java_pattern({"pattern": "^a", "flags": ["IGNORECASE"]})
    '(?i)^a'
    """
    if params.get("format"):
        return FORMAT_PATTERNS[params["format"]]
    flags = "".join(sorted({REGEX_FLAGS[f] for f in params.get("flags") or ()}))
    return (f"(?{flags})" if flags else "") + params["pattern"]


@register
class PatternMetric(_ConformanceMetric):
    """``pattern``: non-null values where the (Java) regex finds a match conform (``rlike``)."""

    check_type, level = "pattern", "column"

    def precondition(self, ctx):
        problem = super().precondition(ctx)
        if problem:
            return problem
        assert self.field is not None
        if isinstance(self.field.dataType, (T.ArrayType, T.MapType, T.StructType, T.BinaryType)):
            return f"column {self.column_name!r} is {type_name(self.field.dataType)}; pattern matches text"
        self.regex = java_pattern(self.check.params)
        complaint = ctx.regex_error(self.regex)
        if complaint:
            return f"invalid Java regular expression {self.regex!r}: {complaint}"
        return None

    def conforming(self):
        text = self.col if isinstance(self.field.dataType, T.StringType) else self.col.cast("string")  # type: ignore[union-attr]
        return text.rlike(self.regex)


# --------------------------------------------------------------------------------------- lengths


class _LengthMetric(Metric):
    """``min_length`` / ``max_length`` / ``avg_length``: a length statistic, or conforming rows with ``return``."""

    reducer: ClassVar[Callable[[Column], Column]]

    def precondition(self, ctx):
        return self.require_type(ctx, LENGTH_TYPES, "a string, list or map column")

    @property
    def length(self) -> Column:
        """Characters (code points) of a string, elements of a list or map; NULL for NULL."""
        assert self.field is not None
        if isinstance(self.field.dataType, T.StringType):
            return F.char_length(self.col)
        # size(NULL) is -1 under legacy settings: guard it so NULL stays NULL.
        return F.when(self.col.isNotNull(), F.size(self.col))

    def conforming(self) -> Column:
        low, high = self.check.params.get("length_min"), self.check.params.get("length_max")
        condition = self.col.isNotNull()
        if low is not None:
            condition = condition & (self.length >= F.lit(int(low)))
        if high is not None:
            condition = condition & (self.length <= F.lit(int(high)))
        return condition

    def statistic_violation(self) -> Column | None:
        return None

    def aggregations(self, scope):
        if self.return_type:
            return [scope.count_if(self.conforming()), F.count(scope(self.col))]
        exprs = [type(self).reducer(scope(self.length)), F.count(scope(self.col))]
        predicate = self.statistic_violation()
        if predicate is not None:
            exprs.append(scope.count_if(predicate))
        return exprs

    def measure(self, scan, grouped, ctx):
        if self.return_type:
            conforming = _count(scan[0])
            return self.ratio(conforming, ctx, failed_rows=_count(scan[1]) - conforming)
        failed_rows = _count(scan[2]) if len(scan) > 2 else None
        if _count(scan[1]) == 0:
            return Measurement(failed_rows=failed_rows,
                               error=f"no non-null value in {self.column_name!r} to compute {self.check.type} of")
        return Measurement(to_float(scan[0]), failed_rows=failed_rows)

    def violation(self, window_count=None):
        if self.return_type:
            return self.col.isNotNull() & ~self.conforming()
        return self.statistic_violation()


@register
class MinLengthMetric(_LengthMetric):
    """``min_length``; per row without ``return``: length < lower bound − tolerance."""

    check_type, level, reducer = "min_length", "column", F.min

    def statistic_violation(self):
        limit = self.check.validator.lower_limit
        if limit is None:
            return None
        return self.length < F.lit(limit)


@register
class MaxLengthMetric(_LengthMetric):
    """``max_length``; per row without ``return``: length > upper bound + tolerance."""

    check_type, level, reducer = "max_length", "column", F.max

    def statistic_violation(self):
        limit = self.check.validator.upper_limit
        if limit is None:
            return None
        return self.length > F.lit(limit)


@register
class AvgLengthMetric(_LengthMetric):
    """``avg_length``: mean length of non-null values (no per-row reading without ``return``)."""

    check_type, level, reducer = "avg_length", "column", F.avg


# The third family (referential, reconciliation, row/table conditions, sql) lives in its own module;
# importing it registers its classes here.
from . import relational as _relational  # noqa: E402,F401  (registration side effect)
