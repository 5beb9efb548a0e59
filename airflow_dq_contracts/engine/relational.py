"""The third family on Spark: checks that read beyond the checked rows' own columns.

* ``referential`` (row-level) — orphan rows: key tuples with no match in a reference, optionally
  *as of* the row's event time in an SCD-2 reference;
* ``reconciliation`` (table-level) — ours − theirs of a count / sum / distinct count;
* ``row_condition`` (row-level) and ``table_condition`` (table-level) — a SQL boolean per row,
  or over aggregates, both inside the shared scan;
* ``sql`` (table-level) — the author's own SELECT over the dataset and the references.

A reference is an *input of the plan*. The evaluator learns three kinds of pass, never a check name:

1. **one left anti-join per distinct (reference, key columns, as_of)** — the same plan as a
   hand-written anti-join (Spark broadcasts the reference when it is small); every check on the same
   join shares the pass (one aggregate over the unmatched rows, per-check filters as conditional
   counts). ``annotate`` tags the orphans of a failed check with one left join against the reference
   reduced to one row per key tuple (for ``as_of``, with its validity intervals), so no row is
   multiplied;
2. **one aggregate per reference** for every reconciliation against it (the "theirs" side; "ours"
   is in the shared scan or the grouped pass of the column);
3. **one query per ``sql`` check**, over temp views named for this run only (dropped at the end).

Semantics (the reference for users and tests; docs/contracts.md says the same):

* **Referential.** A row is an *orphan* when all its key columns are non-NULL and no reference row
  has the same key tuple (SQL equality). A row with a NULL in any key column (or, with ``as_of``,
  a NULL event time) is not checked — unless ``nulls: fail``, which makes it an orphan too.
  ``as_of: {column, valid_from, valid_to}`` matches only a reference version whose interval holds
  the row's event time, half-open: ``valid_from <= t < valid_to``; a NULL ``valid_to`` is open
  (still current), a NULL ``valid_from`` is open towards the past. Gaps between versions make the
  rows that fall in them orphans; overlapping versions are a match (any version suffices).
  Metric: orphans (``return: count|pct``); default validator ``max: 0``.
* **Reconciliation.** ``measure: count`` (rows), ``sum`` (of non-NULL values; no value sums to 0)
  or ``count_distinct`` (distinct non-NULL values) on both sides (ours after the run filter and
  the check's filter, theirs after the reference's filter). ``return: diff`` = ours − theirs;
  ``pct_diff`` = (ours − theirs) / theirs (both 0 → 0; theirs 0 otherwise → error). Default
  validator ``equals: 0``.
* **Row condition.** A row violates when the condition is not true: false, or NULL (unless
  ``null_passes: true``). Metric: violating rows (``return: count|pct``); default ``max: 0``.
* **Table condition.** The aggregate boolean, in the shared scan; metric 1 (true) or 0 (false or
  NULL); passes when 1.
* **SQL.** ``{dataset}`` and ``{alias}`` become this run's temp views (the dataset after the run
  filter, references after theirs). The text must parse, by Spark's own parser, as exactly one
  query; it is then run *as a subquery*, which no DDL or DML can be. ``return: value`` — one row,
  one numeric column; ``return: rows`` — the failing rows: metric = their count, the first rows in
  the message, default ``max: 0``.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any, Callable, ClassVar, Iterable, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.contract.queries import DATASET_PLACEHOLDER, PLACEHOLDER, placeholders

from .metrics import (
    INTEGRAL_TYPES,
    NUMERIC_TYPES,
    GroupKey,
    Measurement,
    Metric,
    PlanContext,
    _count,
    column,
    describe_number,
    register,
    to_float,
    type_name,
)

#: rows of a ``return: rows`` query quoted in the message
SHOWN_ROWS = 5
# Functions that call into the JVM by reflection: no business in a quality query.
_REFLECTION = re.compile(r"\b(reflect|java_method|try_reflect)\s*\(", re.IGNORECASE)


def _first_line(exc: BaseException) -> str:
    from .evaluator import first_line  # the evaluator imports this module (via metrics): import late

    return first_line(exc)


def _quiet():
    from .evaluator import quiet_pyspark_errors

    return quiet_pyspark_errors()


# --------------------------------------------------------------------------------------- references


def prepare_references(contract: Contract, given: dict[str, Any] | None) -> dict[str, DataFrame | str]:
    """Alias → the reference DataFrame after its declared ``filter``, or → why it is not available.

    ``given`` maps aliases to DataFrames (or to a reason string, e.g. a read error). Aliases the
    contract does not declare are ignored here (the CLI refuses them earlier).

    Example::

        refs = prepare_references(contract, {"customers": spark.read.parquet("/dim/customers")})
    """
    given = given or {}
    out: dict[str, DataFrame | str] = {}
    for alias, declared in contract.references.items():
        frame = given.get(alias)
        if frame is None:
            out[alias] = (f"reference {alias!r} was not given to this run "
                          f"(evaluate(…, references={{{alias!r}: df}}) or the contract's path/table)")
        elif isinstance(frame, str):
            out[alias] = frame
        elif declared.filter:
            try:
                with _quiet():
                    condition = F.expr(declared.filter)
                    frame.where(condition).schema
                out[alias] = frame.where(condition)
            except Exception as exc:  # noqa: BLE001 - ParseException, AnalysisException
                out[alias] = f"invalid filter {declared.filter!r} of reference {alias!r}: {_first_line(exc)}"
        else:
            out[alias] = frame
    return out


def _reference(ctx: PlanContext, alias: str) -> tuple[DataFrame | None, str | None]:
    frame = ctx.references.get(alias)
    if frame is None:
        return None, f"reference {alias!r} is not declared in this contract"
    if isinstance(frame, str):
        return None, frame
    return frame, None


def _resolve(schema: T.StructType, name: str, case_sensitive: bool, where: str) -> tuple[str | None, str | None]:
    found = PlanContext(schema, case_sensitive).field(name)
    if found is None:
        names = ", ".join(f.name for f in schema.fields[:30])
        return None, f"column {name!r} not found in {where} (columns: {names})"
    return found.name, None


@dataclasses.dataclass(frozen=True)
class ReferenceJoin:
    """One anti-join pass: checks with equal :attr:`identity` share it."""

    reference: str
    keys: tuple[str, ...]  # columns of the checked data (as spelled in its schema)
    reference_keys: tuple[str, ...]  # columns of the reference
    as_of: tuple[str, str, str] | None = None  # (event column in the data, valid_from, valid_to)

    @property
    def identity(self) -> tuple:
        return (self.reference, self.keys, self.reference_keys, self.as_of)

    def describe(self) -> str:
        theirs = ", ".join(self.reference_keys)
        text = f"({', '.join(self.keys)}) → {self.reference}({theirs})"
        return text + (f" as of {self.as_of[0]}" if self.as_of else "")


def _reduced(reference: DataFrame, join: ReferenceJoin) -> DataFrame:
    """The reference as one row per non-NULL key tuple (+ its validity intervals for ``as_of``)."""
    keys = [column(name).alias(f"_dq_r{i}") for i, name in enumerate(join.reference_keys)]
    not_null = F.lit(True)
    for name in join.reference_keys:
        not_null = not_null & column(name).isNotNull()
    rows = reference.where(not_null)
    if join.as_of is None:
        return rows.select(*keys).distinct()
    _, valid_from, valid_to = join.as_of
    versions = F.collect_list(F.struct(column(valid_from).alias("f"), column(valid_to).alias("t")))
    return rows.groupBy(*keys).agg(versions.alias("_dq_versions"))


def _match_condition(join: ReferenceJoin, reference_keys: Sequence[str], valid_from: str | None = None,
                     valid_to: str | None = None) -> Column:
    """Key equality (+ for ``as_of``: a non-NULL event time inside ``[valid_from, valid_to)``)."""
    condition = None
    for key, theirs in zip(join.keys, reference_keys):
        equal = column(key) == F.col(theirs)
        condition = equal if condition is None else condition & equal
    assert condition is not None
    if join.as_of is not None and valid_from is not None and valid_to is not None:
        event = column(join.as_of[0])
        condition = condition & event.isNotNull() & (F.col(valid_from).isNull() | (F.col(valid_from) <= event)) & (
            F.col(valid_to).isNull() | (event < F.col(valid_to)))
    return condition


def unmatched(df: DataFrame, reference: DataFrame, join: ReferenceJoin) -> DataFrame:
    """The rows of ``df`` without a (valid, for as_of) match: ONE left anti-join, the evaluation pass.

    Exactly what a hand-written anti-join does — Spark broadcasts the reference when it is small,
    duplicate reference rows change nothing, rows with a NULL key are always in the output (the
    metrics decide whether they count). The reference's columns are renamed first, so a reference
    that is the checked DataFrame itself joins without ambiguity.
    """
    names = [f"_dq_r{i}" for i in range(len(join.keys))]
    columns = [column(theirs).alias(name) for theirs, name in zip(join.reference_keys, names)]
    if join.as_of is not None:
        columns += [column(join.as_of[1]).alias("_dq_from"), column(join.as_of[2]).alias("_dq_to")]
    condition = _match_condition(join, names, "_dq_from", "_dq_to")
    return df.join(reference.select(*columns), on=condition, how="left_anti")


def with_matched(df: DataFrame, reference: DataFrame, join: ReferenceJoin, name: str) -> DataFrame:
    """``df`` plus a boolean column ``name``: the row's key tuple has a (valid, for as_of) match.

    The per-row reading of :func:`unmatched` (for ``annotate``, only when a check failed): one left
    join against the reference reduced to one row per key, so each row of ``df`` appears exactly once.
    """
    reduced = _reduced(reference, join)
    condition = _match_condition(join, [f"_dq_r{i}" for i in range(len(join.keys))])
    joined = df.join(reduced, on=condition, how="left")
    matched = F.col("_dq_r0").isNotNull()
    if join.as_of is not None:
        event = column(join.as_of[0])
        # Half-open [valid_from, valid_to): a NULL bound is open on that side.
        valid = F.exists(F.col("_dq_versions"), lambda v: (v["f"].isNull() | (v["f"] <= event))
                         & (v["t"].isNull() | (event < v["t"])))
        matched = matched & event.isNotNull() & valid
    helpers = [f"_dq_r{i}" for i in range(len(join.keys))] + (["_dq_versions"] if join.as_of else [])
    return joined.withColumn(name, F.coalesce(matched, F.lit(False))).drop(*helpers)


# --------------------------------------------------------------------------------------- metrics


@register
class ReferentialMetric(Metric):
    """``referential``: orphan rows (count or pct), from the shared left join of its reference."""

    check_type, level = "referential", "table"

    def precondition(self, ctx):
        params = self.check.params
        reference, problem = _reference(ctx, params["reference"])
        if problem:
            return problem
        assert reference is not None
        keys, theirs = [], []
        for ours_name, their_name in zip(params["columns"], params.get("reference_columns") or params["columns"]):
            found, problem = _resolve(ctx.schema, ours_name, ctx.case_sensitive, "the data")
            if problem:
                return problem
            other, problem = _resolve(reference.schema, their_name, ctx.case_sensitive,
                                      f"reference {params['reference']!r}")
            if problem:
                return problem
            keys.append(found)
            theirs.append(other)
        as_of = None
        if params.get("as_of"):
            spec = params["as_of"]
            event, problem = _resolve(ctx.schema, spec["column"], ctx.case_sensitive, "the data")
            if problem:
                return problem
            bounds = []
            for key in ("valid_from", "valid_to"):
                bound, problem = _resolve(reference.schema, spec[key], ctx.case_sensitive,
                                          f"reference {params['reference']!r}")
                if problem:
                    return problem
                bounds.append(bound)
            as_of = (event, bounds[0], bounds[1])
        self.join = ReferenceJoin(params["reference"], tuple(keys), tuple(theirs), as_of)  # type: ignore[arg-type]
        self.key_columns = [column(k) for k in keys] + ([column(as_of[0])] if as_of else [])
        if ctx.frame is not None:
            try:  # analysis only (no job): incomparable key types surface here, as this check's error
                with _quiet():
                    unmatched(ctx.frame, reference, self.join).schema
            except Exception as exc:  # noqa: BLE001
                return f"cannot join on {self.join.describe()}: {_first_line(exc)}"
        return None

    def reference_join(self):
        return self.join

    @property
    def any_key_null(self) -> Column:
        condition = F.lit(False)
        for key in self.key_columns:
            condition = condition | key.isNull()
        return condition

    def violation(self, window_count=None):
        """Per row, given the join's ``matched`` flag (passed in the ``window_count`` slot)."""
        if window_count is None:
            return None
        unmatched = ~window_count
        if self.check.params.get("nulls") == "fail":
            return unmatched
        return ~self.any_key_null & unmatched

    def join_aggregations(self, scope, matched):
        # Over the anti-join's rows (matched is false for all of them): orphans, and NULL keys for the note.
        return [scope.count_if(self.violation(matched)), scope.count_if(self.any_key_null)]

    def measure(self, scan, grouped, ctx):
        orphans, null_keys = _count(ctx.extra[0]), _count(ctx.extra[1])
        measurement = self.ratio(orphans, ctx, failed_rows=orphans)
        if null_keys:
            counted = "counted as orphans" if self.check.params.get("nulls") == "fail" else "not checked"
            measurement.note = f"{null_keys} row(s) with a NULL key {counted}"
        return measurement


def _sum_expression(name: str, data_type: T.DataType, scope: Callable[[Column], Column] = lambda c: c) -> Column:
    """Exact for integers (64-bit, NULL on overflow) and decimals, double for floats."""
    if isinstance(data_type, INTEGRAL_TYPES):
        return F.try_sum(scope(column(name).cast("long")))
    if isinstance(data_type, T.DecimalType):
        return F.try_sum(scope(column(name)))
    return F.sum(scope(column(name).cast("double")))


@register
class ReconciliationMetric(Metric):
    """``reconciliation``: ours − theirs (or relative to theirs) of a count, sum or distinct count."""

    check_type, level = "reconciliation", "table"

    def precondition(self, ctx):
        params = self.check.params
        self.reference_frame, problem = _reference(ctx, params["reference"])
        if problem:
            return problem
        self.measure_kind = params["measure"]
        if self.measure_kind == "count":
            return None
        found = ctx.field(params["column"])
        if found is None:
            return ctx.missing(params["column"])
        self.field = found
        theirs_name = params.get("reference_column") or params["column"]
        their_name, problem = _resolve(self.reference_frame.schema, theirs_name, ctx.case_sensitive,  # type: ignore[union-attr]
                                       f"reference {params['reference']!r}")
        if problem:
            return problem
        self.their_field = next(f for f in self.reference_frame.schema.fields if f.name == their_name)  # type: ignore[union-attr]
        if self.measure_kind == "sum":
            for where, fld in (("the data", found), (f"reference {params['reference']!r}", self.their_field)):
                if not isinstance(fld.dataType, NUMERIC_TYPES):
                    return f"column {fld.name!r} of {where} is {type_name(fld.dataType)}; sum needs a number"
        return None

    def aggregations(self, scope):
        if self.measure_kind == "sum":
            assert self.field is not None
            return [_sum_expression(self.field.name, self.field.dataType, scope), F.count(scope(self.col))]
        return []

    def group_keys(self):
        if self.measure_kind == "count_distinct":
            return [GroupKey(f"col:{self.column_name}", self.col)]
        return None

    def group_aggregations(self, group):
        return [group.distinct_non_null()]

    def reference_aggregations(self):
        alias = self.check.params["reference"]
        if self.measure_kind == "count":
            return alias, [F.count(F.lit(1))]
        name = self.their_field.name
        if self.measure_kind == "count_distinct":
            return alias, [F.count_distinct(column(name))]
        return alias, [_sum_expression(name, self.their_field.dataType), F.count(column(name))]

    def measure(self, scan, grouped, ctx):
        if self.measure_kind == "count":
            ours, theirs = float(ctx.row_count), to_float(ctx.extra[0])
        elif self.measure_kind == "count_distinct":
            ours, theirs = float(_count(grouped[0])), to_float(ctx.extra[0])
        else:
            # A sum over no value is 0 here (nothing on one side reconciles with 0 on the other);
            # NULL with values present is an overflow.
            if scan[0] is None and _count(scan[1]) or ctx.extra[0] is None and _count(ctx.extra[1]):
                return Measurement.failure("the sum overflows 64-bit integers / its decimal type")
            ours, theirs = to_float(scan[0]) or 0.0, to_float(ctx.extra[0]) or 0.0
        assert theirs is not None
        note = f"ours {describe_number(ours)}, theirs {describe_number(theirs)}"
        if self.check.params.get("return") == "pct_diff":
            if theirs == 0:
                if ours == 0:
                    return Measurement(0.0, note=note)
                return Measurement.failure(f"{note}: pct_diff has no denominator (theirs is 0)")
            return Measurement((ours - theirs) / theirs, note=note)
        return Measurement(ours - theirs, note=note)


def _analysed(frame: DataFrame, condition: str, aggregate: bool) -> tuple[Column | None, str | None]:
    """Parse + analyse ``condition`` against ``frame`` (no job): (expression, None) or (None, reason)."""
    try:
        with _quiet():
            expression = F.expr(condition)
            if aggregate:
                data_type = frame.agg(expression.alias("_dq_c")).schema.fields[0].dataType
            else:
                data_type = frame.select(expression.alias("_dq_c")).schema.fields[0].dataType
                # WHERE analysis rejects aggregates and windows per row.
                frame.where(expression).schema
    except Exception as exc:  # noqa: BLE001 - ParseException, AnalysisException
        return None, f"invalid condition {condition!r}: {_first_line(exc)}"
    if not isinstance(data_type, T.BooleanType):
        return None, f"condition {condition!r} is {type_name(data_type)}, not a boolean"
    return expression, None


class _ConditionMetric(Metric):
    """A check whose ``condition`` is parsed and analysed against the data before the scan."""

    over_aggregates: ClassVar[bool]

    def precondition(self, ctx):
        if ctx.frame is None:
            return f"{self.check.type} needs the DataFrame to analyse its condition"
        self.condition, problem = _analysed(ctx.frame, self.check.params["condition"], self.over_aggregates)
        return problem


@register
class RowConditionMetric(_ConditionMetric):
    """``row_condition``: rows where the SQL boolean is not true (NULL too, unless ``null_passes``)."""

    check_type, level, over_aggregates = "row_condition", "table", False

    def violation(self, window_count=None):
        return ~F.coalesce(self.condition, F.lit(bool(self.check.params.get("null_passes"))))

    def aggregations(self, scope):
        return [scope.count_if(self.violation())]

    def measure(self, scan, grouped, ctx):
        violating = _count(scan[0])
        return self.ratio(violating, ctx, failed_rows=violating)


@register
class TableConditionMetric(_ConditionMetric):
    """``table_condition``: a boolean over aggregates in the shared scan; 1 when true, else 0."""

    check_type, level, over_aggregates = "table_condition", "table", True

    def aggregations(self, scope):
        return [self.condition]

    def measure(self, scan, grouped, ctx):
        if scan[0] is None:
            return Measurement(0.0, note="the condition is NULL (counts as false)")
        return Measurement(1.0 if scan[0] else 0.0, note="" if scan[0] else "the condition is false")


# --------------------------------------------------------------------------------------- sql


class UnsafeQuery(ValueError):
    """A ``sql`` check's text is not exactly one query (or does not parse / analyse)."""


def _is_command(spark: SparkSession, plan: Any) -> bool:
    jvm = spark._jvm  # type: ignore[attr-defined]
    for name in ("org.apache.spark.sql.catalyst.plans.logical.Command",
                 "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement"):
        try:
            if jvm.java.lang.Class.forName(name).isInstance(plan):
                return True
        except Exception:  # noqa: BLE001 - a class missing in this Spark version
            continue
    return "Insert" in plan.getClass().getSimpleName()


def safe_query(spark: SparkSession, text: str) -> DataFrame:
    """The DataFrame of ``text`` if it is exactly one query; :class:`UnsafeQuery` otherwise. Runs nothing.

    Two independent guards: Spark's own parser must read ``text`` as a single statement that is not
    a command (DDL, DML, SET…), and the text is then analysed *as a subquery*
    (``SELECT * FROM (<text>)``), a position where the grammar admits nothing but a query. A query
    over a missing table fails analysis here, before any job.

    >>> safe_query(spark, "DROP TABLE orders")                    # doctest: +SKIP
    UnsafeQuery: not a query: DROP TABLE orders is a command (DropTable)
    """
    statement = text.strip()
    while statement.endswith(";"):  # one trailing ';' is how many people end a statement
        statement = statement[:-1].rstrip()
    if _REFLECTION.search(statement):
        raise UnsafeQuery("reflection functions (reflect, java_method) are not allowed in a sql check")
    jsession = getattr(spark, "_jsparkSession", None)
    try:
        with _quiet():
            if jsession is not None:
                plan = jsession.sessionState().sqlParser().parsePlan(statement)
                if _is_command(spark, plan):
                    raise UnsafeQuery(f"not a query: it parses as a {plan.getClass().getSimpleName()} statement")
            # A newline before ')' so that a trailing '-- comment' cannot swallow the parenthesis.
            frame = spark.sql(f"SELECT * FROM (\n{statement}\n) AS _dq_sql_check")
            frame.schema
    except UnsafeQuery:
        raise
    except Exception as exc:  # noqa: BLE001 - ParseException (syntax, chained statements), AnalysisException
        raise UnsafeQuery(_first_line(exc)) from None
    return frame


def register_views(spark: SparkSession, df: DataFrame, references: dict[str, DataFrame | str],
                   needed: Iterable[str]) -> dict[str, str]:
    """Temp views for the ``{placeholders}`` in ``needed``, named for this run only; placeholder → view."""
    token = uuid.uuid4().hex[:12]
    views: dict[str, str] = {}
    for name in needed:
        frame = df if name == DATASET_PLACEHOLDER else references.get(name)
        if isinstance(frame, DataFrame):
            view = f"_dq_{token}_{name}"
            frame.createOrReplaceTempView(view)
            views[name] = view
    return views


def drop_views(spark: SparkSession, views: dict[str, str]) -> None:
    """Drop this run's temp views (a long-lived session must not collect them)."""
    for view in views.values():
        try:
            spark.catalog.dropTempView(view)
        except Exception:  # noqa: BLE001 - the session is gone: so are its views
            pass


def needed_views(contract: Contract) -> list[str]:
    """Every placeholder the contract's ``sql`` checks use."""
    names: list[str] = []
    for check in contract.all_checks():
        if check.type == "sql":
            names.extend(placeholders(check.params["query"]))
    return list(dict.fromkeys(names))


@register
class SqlMetric(Metric):
    """``sql``: the author's query — a value (``return: value``) or failing rows (``return: rows``)."""

    check_type, level = "sql", "table"

    def precondition(self, ctx):
        query = self.check.params["query"]
        for name in placeholders(query):
            if name not in ctx.views:
                if name == DATASET_PLACEHOLDER:
                    return "the dataset has no temp view in this run"
                _, problem = _reference(ctx, name)
                return problem or f"reference {name!r} has no temp view in this run"
        if ctx.frame is None:
            return "sql needs a Spark session"
        text = PLACEHOLDER.sub(lambda m: ctx.views.get(m.group(1), m.group(0)), query)
        try:
            self.frame = safe_query(ctx.frame.sparkSession, text)
        except UnsafeQuery as exc:
            return f"query refused: {exc}"
        fields = self.frame.schema.fields
        if self.check.params.get("return") == "value":
            if len(fields) != 1 or not isinstance(fields[0].dataType, NUMERIC_TYPES):
                shown = ", ".join(f"{f.name} {type_name(f.dataType)}" for f in fields)
                return f"return: value needs exactly one numeric column; the query returns ({shown})"
        return None

    def own_query(self):
        if self.check.params.get("return") == "value":
            return list(self.frame.limit(2).collect())
        shown = [", ".join(f"{k}={v!r}" for k, v in row.asDict().items()) for row in self.frame.limit(SHOWN_ROWS).collect()]
        count = len(shown) if len(shown) < SHOWN_ROWS else self.frame.count()
        return [count, shown]

    def measure(self, scan, grouped, ctx):
        if self.check.params.get("return") == "value":
            rows: Sequence[Any] = ctx.extra
            if len(rows) != 1:
                return Measurement.failure(f"return: value needs exactly one row; the query returned {len(rows)}"
                                           + ("+" if len(rows) > 1 else ""))
            value = to_float(rows[0][0])
            if value is None:
                return Measurement.failure("the query returned NULL")
            return Measurement(value)
        count, shown = int(ctx.extra[0]), ctx.extra[1]
        note = ("first rows: " + " | ".join(shown)) if shown else ""
        return Measurement(float(count), failed_rows=None, note=note)
