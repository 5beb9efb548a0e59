"""Row-level verdicts: ``_dq_violations`` on each row, from the checks that failed in a run's result.

What the quarantine/valid split (:mod:`airflow_dq_contracts.store.sinks.spark_rows`) works on: the
evaluator measures, this module says which rows broke what (DQX-style, an array column). Plain
projections over the run's DataFrame, plus one window per failed ``duplicates`` check and the left
join of a failed ``referential`` check's pass.

Example::

    tagged = annotate(contract, df, result)
    bad = tagged.where("size(_dq_violations) > 0")
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Check, Contract
from airflow_dq_contracts.contract.sqltext import spark_string
from airflow_dq_contracts.results import (
    QUARANTINE_VIOLATIONS,
    QUARANTINING_ACTIONS,
    STATUS_FAILED,
    VALID_FLAGS,
    VIOLATION_FIELDS,
    ContractResult,
)

from .evaluator import case_sensitive, filter_condition
from .metrics import PlanContext, Scope, metric_for
from .relational import PreparedReferences, prepare_references, with_matched
from .spark_errors import java_regex_checker

__all__ = ["QUARANTINED", "VIOLATIONS_TYPE", "VIOLATION_TYPE", "RowTagger", "annotate", "tagging_checks"]

VIOLATION_TYPE = T.StructType([T.StructField(name, T.StringType(), True) for name in VIOLATION_FIELDS])
VIOLATIONS_TYPE = T.ArrayType(VIOLATION_TYPE, True)
#: the column :meth:`RowTagger.mark` adds: the row goes to quarantine
QUARANTINED = "__dq_quarantined"


def _violation_values(check: Check) -> tuple[str, ...]:
    """The ``_dq_violations`` struct of a check, in :data:`VIOLATION_FIELDS` order."""
    by_field = {
        "check_id": check.check_id,
        "check_name": check.name,
        "check_type": check.type,
        "severity": check.severity,
        "action": check.action,
    }
    return tuple(by_field[name] for name in VIOLATION_FIELDS)


def _violation_tag(check: Check) -> Column:
    """The ``_dq_violations`` struct of a check, as one SQL expression (a struct of literals built column by
    column costs some twenty driver calls into the JVM; this costs one)."""
    fields = ", ".join(
        f"{spark_string(name)}, {'CAST(NULL AS STRING)' if value is None else spark_string(str(value))}"
        for name, value in zip(VIOLATION_FIELDS, _violation_values(check))
    )
    return F.expr(f"named_struct({fields})")


def _empty_violations() -> Column:
    return F.filter(F.array(F.lit(None).cast(VIOLATION_TYPE)), lambda item: item.isNotNull())


def _listed(entries: list[tuple[bool, Column, Column]]) -> Column:
    """Per row, the ``_dq_violations`` structs of the ``entries`` it breaks (an empty array for none)."""
    if not entries:
        return _empty_violations().cast(VIOLATIONS_TYPE)
    items = [F.when(broken, tag) for _, tag, broken in entries]
    return F.filter(F.array(*items), lambda item: item.isNotNull()).cast(VIOLATIONS_TYPE)


def tagging_checks(contract: Contract, result: ContractResult) -> list[Check]:
    """The checks whose violations :func:`annotate` lists on rows: row-level and ``failed`` in ``result``.

    Known before any row is read, so a caller can tell that no row can be quarantined (no tagging
    check quarantines or gates) and skip that output altogether.

    Example::

        if not any(c.action in ("quarantine", "gate") for c in tagging_checks(contract, result)):
            print("nothing to set aside")
    """
    failed = {r.check_id: r for r in result.checks if r.status == STATUS_FAILED}
    # A schema check tags rows only for values that did not parse (its failing rows), not a missing column.
    return [
        check
        for check in contract.evaluated_checks()
        if check.check_id in failed
        and check.row_level
        and (check.type != "schema" or (failed[check.check_id].failed_rows or 0) > 0)
    ]


def annotate(
    contract: Contract,
    df: DataFrame,
    result: ContractResult,
    references: Mapping[str, DataFrame | str] | None = None,
    *,
    earlier_keys: Mapping[str, DataFrame] | None = None,
) -> DataFrame:
    """``df`` plus ``_dq_violations``: per row, the row-level checks that FAILED in ``result`` and that it breaks.

    ``_dq_violations`` is ``array<struct<check_id, check_name, check_type, severity, action>>``
    (empty for a clean row). Only checks with status ``failed`` tag rows — a passed check tags
    nothing, an errored one cannot say which rows break it — and table-level checks never tag
    rows (DESIGN §6). One projection over ``df``; a failed column ``duplicates`` check adds one
    window (``count over (partition by column)``). ``df`` must be the DataFrame (after the run
    filter) that ``result`` was computed on. A failed ``referential`` check adds the left join of
    its evaluation pass (one per distinct join); pass the same ``references`` as to :func:`evaluate`,
    or better the evaluator's :attr:`Evaluator.references`, already prepared (filters analysed once per run).
    ``earlier_keys`` (an incremental run): per column ``duplicates`` check id, the distinct keys earlier
    rows of the table hold (one column ``_k0``); a new row holding one counts as a copy, as it would in a
    run over the whole table (one left join of those keys per such check).
    Tagging many DataFrames of one schema (a stream's micro-batches): :class:`RowTagger`.

    Example::

        tagged = annotate(contract, df, result)
        bad = tagged.where("size(_dq_violations) > 0")

        ev = Evaluator(contract, df, references={"customers": customers})
        tagged = annotate(contract, df, ev.run(), ev.references)     # references prepared once
    """
    return RowTagger(contract, result).tag(df, references, earlier_keys=earlier_keys)


class RowTagger:
    """:func:`annotate` for many DataFrames of one schema, the tag expressions built once.

    Building the expressions of a contract's row checks is driver work — a few thousand calls into
    the JVM, about half a second for the example contract — that a stream would otherwise repeat for
    every micro-batch. The tagger keeps what it built per input schema (and the schemas of the
    references), so a batch of a schema it has seen costs only the projection (and any joins).

    Example::

        tagger = RowTagger(contract, result)
        for batch in batches:                      # same columns each time
            tagged = tagger.tag(batch, references)  # expressions built for the first only
            valid, quarantined = tagger.split(tagger.mark(batch, references))  # the same split, cheaper
    """

    def __init__(self, contract: Contract, result: ContractResult) -> None:
        self.contract = contract
        self.checks = tagging_checks(contract, result)
        self._plans: dict[tuple, _TagPlan] = {}
        self._marked = _TagPlan()

    def _plan(
        self,
        df: DataFrame,
        references: Mapping[str, DataFrame | str] | None,
        earlier_keys: Mapping[str, DataFrame] | None,
    ) -> tuple[_TagPlan, PreparedReferences, dict[str, DataFrame]]:
        prepared = prepare_references(self.contract, references)
        earlier = dict(earlier_keys or {})
        key = (
            df.schema.json(),
            tuple(
                (alias, value if isinstance(value, str) else value.schema.json())
                for alias, value in sorted(prepared.items())
            ),
            tuple(sorted(earlier)),
        )
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _TagPlan.build(self.checks, df, prepared, set(earlier))
        return plan, prepared, earlier

    def tag(
        self,
        df: DataFrame,
        references: Mapping[str, DataFrame | str] | None = None,
        *,
        earlier_keys: Mapping[str, DataFrame] | None = None,
    ) -> DataFrame:
        """``df`` plus ``_dq_violations`` (see :func:`annotate`)."""
        plan, prepared, earlier = self._plan(df, references, earlier_keys)
        out = plan.with_helpers(df, prepared, earlier).withColumn(QUARANTINE_VIOLATIONS, plan.violations)
        return out.drop(*plan.helpers) if plan.helpers else out

    def mark(
        self,
        df: DataFrame,
        references: Mapping[str, DataFrame | str] | None = None,
        *,
        one_partition: Callable[[DataFrame], bool] | None = None,
    ) -> DataFrame:
        """``df`` plus :data:`QUARANTINED` (a boolean: the row breaks a check that quarantines or gates) and
        the helper columns of the checks' joins and windows; :meth:`split` then gives the two sides.

        The same split as :func:`~airflow_dq_contracts.store.sinks.split_annotated` over :meth:`tag`, for a
        fraction of the work: the side of a row is one boolean expression, the ``_dq_violations`` list is
        built only for quarantined rows, and a valid row's ``_dq_flags`` only from the checks that flag.
        Columns may be added to the marked frame (and it may be persisted) before :meth:`split`.

        ``one_partition``: asked (``one_partition(df)``) when the checks count copies of a key (a window)
        and join nothing. When ``df`` holds a single partition (a micro-batch read from one file), it is
        declared so (``coalesce(1)``, which moves no row), and Spark counts the copies of each key in that
        partition, sorted in place, instead of shuffling every row by key first. A join is never forced
        onto one partition.
        """
        plan, prepared, earlier = self._plan(df, references, None)
        self._marked = plan
        if one_partition is not None and plan.counts_copies_only and one_partition(df):
            df = df.coalesce(1)
        return plan.with_helpers(df, prepared, earlier).withColumn(QUARANTINED, plan.quarantined)

    @property
    def can_quarantine(self) -> bool:
        """Whether a row of the frame :meth:`mark` made last can go to quarantine (a check quarantines or gates it)."""
        return self._marked.can_quarantine

    def split(self, marked: DataFrame) -> tuple[DataFrame, DataFrame]:
        """``(valid, quarantined)`` of the frame :meth:`mark` made last (or one derived from it): valid rows
        with ``_dq_flags``, quarantined ones with ``_dq_violations``, the helper columns and :data:`QUARANTINED` dropped."""
        plan = self._marked
        drop = [*plan.helpers, QUARANTINED]
        valid = marked.where(~F.col(QUARANTINED)).withColumn(VALID_FLAGS, plan.flags).drop(*drop)
        quarantined = marked.where(F.col(QUARANTINED)).withColumn(QUARANTINE_VIOLATIONS, plan.violations).drop(*drop)
        return valid, quarantined


class _TagPlan:
    """The expressions of one input schema: the helper columns to add, then ``_dq_violations``."""

    def __init__(self) -> None:
        #: ("join", ReferenceJoin, helper) | ("window", helper, Column) | ("earlier", check id, helper, key Column)
        self.steps: list[tuple] = []
        self.helpers: list[str] = []
        self.violations: Column = _listed([])
        #: a row breaks a check that quarantines or gates it (never NULL)
        self.quarantined: Column = F.lit(False)
        #: a valid row's violations: those of the checks that only flag
        self.flags: Column = _listed([])
        #: per tagging check: (it quarantines or gates, its ``_dq_violations`` struct, a row breaks it — never NULL)
        self.entries: list[tuple[bool, Column, Column]] = []

    @property
    def counts_copies_only(self) -> bool:
        """Whether the helper columns are windows only (copies of a key counted; no join)."""
        return bool(self.steps) and all(step[0] == "window" for step in self.steps)

    @property
    def can_quarantine(self) -> bool:
        """Whether a check of this plan quarantines or gates a row."""
        return any(quarantines for quarantines, _, _ in self.entries)

    @classmethod
    def build(cls, checks: list[Check], df: DataFrame, prepared: PreparedReferences, earlier: set[str]) -> _TagPlan:
        plan = cls()
        ctx = PlanContext(
            df.schema,
            case_sensitive(df.sparkSession),
            java_regex_checker(df.sparkSession),
            frame=df,
            references=prepared,
        )
        joins: dict[tuple, str] = {}
        conditions: dict[str, Column] = {}
        for check in checks:
            metric = metric_for(check)
            if metric.precondition(ctx):
                continue  # cannot happen for a check that was measured on this DataFrame
            condition: Column | None = None
            if check.filter:
                if check.filter not in conditions:
                    conditions[check.filter] = filter_condition(df, check.filter)
                condition = conditions[check.filter]
            scope = Scope(condition)
            window_keys = metric.window_keys()
            join = metric.reference_join()
            if join is not None:
                if join.identity not in joins:
                    joins[join.identity] = f"__dq_join_{len(joins)}"
                    plan.helpers.append(joins[join.identity])
                    plan.steps.append(("join", join, joins[join.identity]))
                predicate = metric.violation(F.col(joins[join.identity]))
            elif window_keys:
                helper = f"__dq_window_{len(plan.helpers)}"
                plan.helpers.append(helper)
                plan.steps.append(("window", helper, F.count(scope(F.lit(1))).over(Window.partitionBy(*window_keys))))
                copies = F.col(helper)
                if check.check_id in earlier and len(window_keys) == 1:
                    seen, key = f"{helper}_seen", f"{helper}_key"
                    plan.steps.append(("earlier", check.check_id, helper, window_keys[0]))
                    plan.helpers += [seen, key]
                    copies = copies + F.coalesce(scope(F.col(seen)), F.lit(0))
                predicate = metric.violation(copies)
            else:
                predicate = metric.violation()
            if predicate is None:
                continue
            if condition is not None:
                predicate = condition & predicate
            tag = _violation_tag(check)
            quarantines = check.action.strip().lower() in QUARANTINING_ACTIONS
            plan.entries.append((quarantines, tag, F.coalesce(predicate, F.lit(False))))
        plan.violations = _listed(plan.entries)
        sides = [broken for quarantines, _, broken in plan.entries if quarantines]
        plan.quarantined = functools.reduce(operator.or_, sides) if sides else F.lit(False)
        plan.flags = _listed([entry for entry in plan.entries if not entry[0]])
        return plan

    def with_helpers(self, df: DataFrame, prepared: PreparedReferences, earlier: Mapping[str, DataFrame]) -> DataFrame:
        """``df`` plus the helper columns of the checks' joins and windows."""
        work = df
        for step in self.steps:
            if step[0] == "join":
                _, join, helper = step
                work = with_matched(work, prepared.frame(join.reference), join, helper)
            elif step[0] == "window":
                _, helper, column = step
                work = work.withColumn(helper, column)
            else:
                _, check_id, helper, window_key = step
                seen, key = f"{helper}_seen", f"{helper}_key"
                held = earlier[check_id].select(F.col("_k0").alias(key), F.lit(1).alias(seen))
                work = work.join(held, window_key == F.col(key), "left")
        return work
