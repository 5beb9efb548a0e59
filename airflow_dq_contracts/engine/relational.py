"""The third family on Spark: checks that read beyond the checked rows' own columns.

* ``referential`` (row-level) — orphan rows: key tuples with no match in a reference, optionally
  *as of* the row's event time in an SCD-2 reference;
* ``reconciliation`` (table-level) — ours − theirs of a count / sum / distinct count;
* ``row_condition`` (row-level) and ``table_condition`` (table-level) — a SQL boolean per row,
  or over aggregates, both inside the shared scan;
* ``sql`` (table-level) — the author's own SELECT over the dataset and the references.

This module holds the passes and the inputs they read; the metric classes of these types are in
:mod:`.metrics.references`, :mod:`.metrics.conditions` and :mod:`.metrics.query`.

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

import contextlib
import dataclasses
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.contract.queries import DATASET_PLACEHOLDER, placeholders

from .spark_errors import first_line, quiet_pyspark_errors
from .spark_types import column, find_field
from .text_read import visible

# Functions that call into the JVM by reflection: no business in a quality query.
_REFLECTION = re.compile(r"\b(reflect|java_method|try_reflect)\s*\(", re.IGNORECASE)


# --------------------------------------------------------------------------------------- references


class PreparedReferences(dict[str, "DataFrame | str"]):
    """What :func:`prepare_references` returns: alias → DataFrame after its filter, or → why it is unavailable.

    Its own type so that preparing twice is a no-op: :func:`~.row_verdicts.annotate` given the
    evaluator's ``references`` reuses them instead of analysing every reference filter again.
    """

    def __init__(self, contract: Contract, prepared: dict[str, DataFrame | str]) -> None:
        super().__init__(prepared)
        self.contract = contract

    def frame(self, alias: str) -> DataFrame:
        """The DataFrame of ``alias``; ``KeyError`` with the reason when it is not available."""
        value = self[alias]
        if isinstance(value, str):
            raise KeyError(value)
        return value


def prepare_references(contract: Contract, given: Mapping[str, Any] | None) -> PreparedReferences:
    """Alias → the reference DataFrame after its declared ``filter``, or → why it is not available.

    ``given`` maps aliases to DataFrames (or to a reason string, e.g. a read error). Aliases the
    contract does not declare are ignored here (the CLI refuses them earlier). References this
    function already prepared for ``contract`` are returned as they are (computed once per run).

    Example::

        refs = prepare_references(contract, {"customers": spark.read.parquet("/dim/customers")})
        assert prepare_references(contract, refs) is refs
    """
    if isinstance(given, PreparedReferences) and given.contract is contract:
        return given
    given = given or {}
    out: dict[str, DataFrame | str] = {}
    for alias, declared in contract.references.items():
        frame = given.get(alias)
        if frame is None:
            out[alias] = (
                f"reference {alias!r} was not given to this run "
                f"(evaluate(…, references={{{alias!r}: df}}) or the contract's path/table)"
            )
        elif isinstance(frame, str):
            out[alias] = frame
        elif declared.filter:
            try:
                with quiet_pyspark_errors():
                    condition = F.expr(declared.filter)
                    _ = frame.where(condition).schema
                out[alias] = frame.where(condition)
            except Exception as exc:  # noqa: BLE001 - ParseException, AnalysisException
                out[alias] = f"invalid filter {declared.filter!r} of reference {alias!r}: {first_line(exc)}"
        else:
            out[alias] = frame
    return PreparedReferences(contract, out)


def reference_frame(references: Mapping[str, DataFrame | str], alias: str) -> tuple[DataFrame | None, str | None]:
    """(the prepared reference ``alias``, None), or (None, why it is not available)."""
    frame = references.get(alias)
    if frame is None:
        return None, f"reference {alias!r} is not declared in this contract"
    if isinstance(frame, str):
        return None, frame
    return frame, None


def resolve_column(schema: T.StructType, name: str, case_sensitive: bool, where: str) -> tuple[str | None, str | None]:
    """(the column's name as spelled in ``schema``, None), or (None, a message naming ``where`` it is missing)."""
    found = find_field(schema, name, case_sensitive)
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


def _match_condition(
    join: ReferenceJoin, reference_keys: Sequence[str], valid_from: str | None = None, valid_to: str | None = None
) -> Column:
    """Key equality (+ for ``as_of``: a non-NULL event time inside ``[valid_from, valid_to)``)."""
    condition = None
    for key, theirs in zip(join.keys, reference_keys):
        equal = column(key) == F.col(theirs)
        condition = equal if condition is None else condition & equal
    assert condition is not None
    if join.as_of is not None and valid_from is not None and valid_to is not None:
        event = column(join.as_of[0])
        condition = (
            condition
            & event.isNotNull()
            & (F.col(valid_from).isNull() | (F.col(valid_from) <= event))
            & (F.col(valid_to).isNull() | (event < F.col(valid_to)))
        )
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
        valid = F.exists(
            F.col("_dq_versions"),
            lambda v: (v["f"].isNull() | (v["f"] <= event)) & (v["t"].isNull() | (event < v["t"])),
        )
        matched = matched & event.isNotNull() & valid
    helpers = [f"_dq_r{i}" for i in range(len(join.keys))] + (["_dq_versions"] if join.as_of else [])
    return joined.withColumn(name, F.coalesce(matched, F.lit(False))).drop(*helpers)


# --------------------------------------------------------------------------------------- sql


class UnsafeQuery(ValueError):
    """A ``sql`` check's text is not exactly one query (or does not parse / analyse)."""


def _is_command(spark: SparkSession, plan: Any) -> bool:
    jvm: Any = spark._jvm
    for name in (
        "org.apache.spark.sql.catalyst.plans.logical.Command",
        "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement",
    ):
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
        with quiet_pyspark_errors():
            if jsession is not None:
                plan = jsession.sessionState().sqlParser().parsePlan(statement)
                if _is_command(spark, plan):
                    raise UnsafeQuery(f"not a query: it parses as a {plan.getClass().getSimpleName()} statement")
            # A newline before ')' so that a trailing '-- comment' cannot swallow the parenthesis.
            frame = spark.sql(f"SELECT * FROM (\n{statement}\n) AS _dq_sql_check")
            _ = frame.schema  # analysis, no job
    except UnsafeQuery:
        raise
    except Exception as exc:  # noqa: BLE001 - ParseException (syntax, chained statements), AnalysisException
        raise UnsafeQuery(first_line(exc)) from None
    return frame


def register_views(
    spark: SparkSession, df: DataFrame, references: Mapping[str, DataFrame | str], needed: Iterable[str]
) -> dict[str, str]:
    """Temp views for the ``{placeholders}`` in ``needed``, named for this run only; placeholder → view."""
    token = uuid.uuid4().hex[:12]
    views: dict[str, str] = {}
    for name in needed:
        frame = visible(df) if name == DATASET_PLACEHOLDER else references.get(name)
        if isinstance(frame, DataFrame):
            view = f"_dq_{token}_{name}"
            frame.createOrReplaceTempView(view)
            views[name] = view
    return views


def drop_views(spark: SparkSession, views: dict[str, str]) -> None:
    """Drop this run's temp views (a long-lived session must not collect them)."""
    for view in views.values():
        with contextlib.suppress(Exception):  # noqa: BLE001 - the session is gone: so are its views
            spark.catalog.dropTempView(view)


def needed_views(contract: Contract) -> list[str]:
    """Every placeholder the contract's ``sql`` checks use."""
    names: list[str] = []
    for check in contract.all_checks():
        if check.is_query:
            names.extend(placeholders(check.params["query"]))
    return list(dict.fromkeys(names))
