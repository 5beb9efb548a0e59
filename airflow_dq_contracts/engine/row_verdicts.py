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

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Check, Contract
from airflow_dq_contracts.results import QUARANTINE_VIOLATIONS, STATUS_FAILED, VIOLATION_FIELDS, ContractResult

from .evaluator import case_sensitive, filter_condition
from .metrics import PlanContext, Scope, metric_for
from .relational import prepare_references, with_matched
from .spark_errors import java_regex_checker

__all__ = ["VIOLATIONS_TYPE", "VIOLATION_TYPE", "annotate", "tagging_checks"]

VIOLATION_TYPE = T.StructType([T.StructField(name, T.StringType(), True) for name in VIOLATION_FIELDS])
VIOLATIONS_TYPE = T.ArrayType(VIOLATION_TYPE, True)


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


def _empty_violations() -> Column:
    return F.filter(F.array(F.lit(None).cast(VIOLATION_TYPE)), lambda item: item.isNotNull())


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

    Example::

        tagged = annotate(contract, df, result)
        bad = tagged.where("size(_dq_violations) > 0")

        ev = Evaluator(contract, df, references={"customers": customers})
        tagged = annotate(contract, df, ev.run(), ev.references)     # references prepared once
    """
    prepared = prepare_references(contract, references)
    ctx = PlanContext(
        df.schema, case_sensitive(df.sparkSession), java_regex_checker(df.sparkSession), frame=df, references=prepared
    )
    joins: dict[tuple, str] = {}
    conditions: dict[str, Column] = {}
    helpers: list[str] = []
    items: list[Column] = []
    work = df
    for check in tagging_checks(contract, result):
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
                helpers.append(joins[join.identity])
                work = with_matched(work, prepared.frame(join.reference), join, joins[join.identity])
            predicate = metric.violation(F.col(joins[join.identity]))
        elif window_keys:
            helper = f"__dq_window_{len(helpers)}"
            helpers.append(helper)
            work = work.withColumn(helper, F.count(scope(F.lit(1))).over(Window.partitionBy(*window_keys)))
            copies = F.col(helper)
            earlier = (earlier_keys or {}).get(check.check_id)
            if earlier is not None and len(window_keys) == 1:
                seen, key = f"{helper}_seen", f"{helper}_key"
                held = earlier.select(F.col("_k0").alias(key), F.lit(1).alias(seen))
                work = work.join(held, window_keys[0] == F.col(key), "left")
                helpers += [seen, key]
                copies = copies + F.coalesce(scope(F.col(seen)), F.lit(0))
            predicate = metric.violation(copies)
        else:
            predicate = metric.violation()
        if predicate is None:
            continue
        if condition is not None:
            predicate = condition & predicate
        tag = F.struct(
            *[
                F.lit(value).cast("string").alias(name)
                for name, value in zip(VIOLATION_FIELDS, _violation_values(check))
            ]
        )
        items.append(F.when(F.coalesce(predicate, F.lit(False)), tag))
    if items:
        violations = F.filter(F.array(*items), lambda item: item.isNotNull())
    else:
        violations = _empty_violations()
    out = work.withColumn(QUARANTINE_VIOLATIONS, violations.cast(VIOLATIONS_TYPE))
    return out.drop(*helpers) if helpers else out
