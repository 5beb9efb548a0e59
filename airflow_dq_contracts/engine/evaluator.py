"""Run a contract's checks on a DataFrame: preconditions, ONE shared scan, one grouped pass per key set.

Example::

    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.engine import evaluate, annotate

    contract = load_contract("contracts/orders.yaml")
    df = spark.read.parquet("/data/orders")
    result = evaluate(contract, df, reference_time="2024-05-02T00:00:00Z")
    print(result.decision, result.counts())          # 'quarantine' {'passed': 18, 'failed': 2, ...}
    tagged = annotate(contract, df, result)          # + _dq_violations per row

How a run is planned (see :mod:`.metrics` for the semantics of every check type):

1. **Preconditions** against the schema (column exists, right type, Java-valid regex, a per-check
   ``filter`` that parses and is a boolean predicate). A failing precondition gives that check
   status ``error`` with the reason; it never reaches Spark.
2. **Main scan**: every remaining metric's aggregate expressions, plus one row count per
   distinct per-check filter, in a single ``df.agg(...)`` — one aggregation, one read of the data.
3. **Grouped passes**: one ``groupBy(keys)`` per distinct key set (``cardinality`` and
   ``duplicates`` on the same column share one), whatever the per-check filters.
4. **Measure and validate**: each metric reads its values back; validators decide.

Spark never fails the run because of the data: ANSI-mode pitfalls are avoided by construction
(``try_sum``, ``try_cast``, Java-compiled regexes), and if the shared scan still fails (say a
regex overflows the JVM stack on a very long string), the evaluator falls back to one small
aggregation per metric so that only the metric(s) that really fail are reported as ``error``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_dq_contracts.contract.baseline import BaselineOutcome, gated_runs, judge, select_points
from airflow_dq_contracts.contract.model import Check, Contract
from airflow_dq_contracts.contract.validators import Validator, describe_failure
from airflow_dq_contracts.results import (
    STATUS_ERROR,
    STATUS_FAILED,
    STATUS_PASSED,
    CheckResult,
    ContractResult,
    format_time,
    make_run_id,
    parse_time,
    utcnow,
)
from airflow_dq_contracts.store.sinks import HistorySource, load_history
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

from .concurrency import pass_parallelism, run_concurrently
from .log_plan import DeltaInput, answer_from_log, case_sensitive, filter_condition
from .metrics import (
    GroupKey,
    MeasureContext,
    Measurement,
    Metric,
    PlanContext,
    Scope,
    describe_number,
    grouped_pass_frame,
    metric_for,
)
from .relational import (
    PreparedReferences,
    ReferenceJoin,
    drop_views,
    needed_views,
    prepare_references,
    register_views,
    unmatched,
)
from .spark_errors import first_line, java_regex_checker, job_group, quiet_pyspark_errors
from .statistics_first import FROM_SCAN, FROM_STATISTICS, StatisticsSource, answer

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


def _progress_default(message: str) -> None:
    log.info("%s", message)


# --------------------------------------------------------------------------------------- planning


@dataclasses.dataclass
class PhaseStat:
    """Timing of one phase of an evaluation (and the Spark job group its jobs ran under)."""

    name: str
    seconds: float
    job_group: str | None = None
    detail: str = ""


@dataclasses.dataclass
class _Planned:
    """One check on its way through the evaluation."""

    check: Check
    metric: Metric
    scope_key: str | None  # the per-check filter text (None = whole DataFrame)
    error: str | None = None
    scan_slice: tuple[int, int] = (0, 0)
    scan_values: Sequence[Any] = ()
    grouped_values: Sequence[Any] = ()
    extra_values: Sequence[Any] = ()  # from the reference-side passes (engine/relational.py)
    measurement: Measurement | None = None
    answered: Measurement | None = None  # measured from the Delta log's statistics (no scan)


class Evaluator:
    """One evaluation of a contract on a DataFrame. Use :func:`evaluate` unless you need ``stats``.

    Example::

        ev = Evaluator(contract, df, reference_time="2024-05-02T00:00:00Z")
        result = ev.run()
        for phase in ev.stats:
            print(phase.name, round(phase.seconds, 2), phase.job_group)
    """

    def __init__(
        self,
        contract: Contract,
        df: DataFrame | DeltaInput,
        reference_time: dt.datetime | str | None = None,
        *,
        run_id: str | None = None,
        dataset: str | None = None,
        dag_id: str | None = None,
        task_id: str | None = None,
        airflow_run_id: str | None = None,
        filter: str | None = None,
        apply_filter: bool = True,
        references: dict[str, Any] | None = None,
        history: HistorySource = None,
        statistics: StatisticsSource | None = None,
        progress: Progress | None = None,
        started_at: dt.datetime | None = None,
        capabilities: SessionCapabilities | None = None,
    ):
        self.contract = contract
        self.lazy = df if isinstance(df, DeltaInput) else None  # built only if a check needs it (log_plan.py)
        self._df = None if isinstance(df, DeltaInput) else df
        self.spark = df.spark if isinstance(df, DeltaInput) else df.sparkSession
        self.capabilities = capabilities or SessionCapabilities.of(self.spark)  # as the session's maker said
        self.statistics = statistics  # a Delta input whose log may answer checks (engine/statistics_first.py)
        self.statistics_rows: int | None = None  # the run's row count from that log, when it knows it
        self.started_at = started_at or utcnow()
        try:
            self.reference_time = parse_time(reference_time) or self.started_at
        except ValueError as exc:
            raise ValueError(f"reference_time: {exc}") from None
        self.dataset = dataset or contract.dataset.name or "<dataframe>"
        self.run_id = run_id or make_run_id(contract.name, self.dataset, format_time(self.started_at))
        self.run_filter = filter
        if filter and apply_filter:
            self._df = self.df.where(filter_condition(self.df, filter))
        self.dag_id, self.task_id, self.airflow_run_id = dag_id, task_id, airflow_run_id
        self.history = history
        self.progress = progress or _progress_default
        self.stats: list[PhaseStat] = []
        self.row_counts: dict[str | None, int] = {}
        # The aggregated DataFrames of the last run, for plan inspection (tests, benchmarks).
        self.scan_frame: DataFrame | None = None
        self.group_frames: dict[tuple[str, ...], DataFrame] = {}
        self.join_frames: dict[tuple, DataFrame] = {}
        # Reference alias → DataFrame after its filter (or why it is unavailable), prepared once per run:
        # pass them on to annotate(). Temp views of sql checks.
        self.references: PreparedReferences = prepare_references(contract, references)
        self.views: dict[str, str] = {}

    @property
    def df(self) -> DataFrame:
        """The evaluated DataFrame (a :class:`DeltaInput` is built now if it was not yet)."""
        if self._df is None:
            assert self.lazy is not None
            self._df = self.lazy.frame()
        return self._df

    # -- phases -------------------------------------------------------------------------------
    def run(self) -> ContractResult:
        """Evaluate every check; returns the :class:`ContractResult` (never raises on data)."""
        answered = self._from_log() if self._df is None and self.statistics is not None else None
        if answered is not None:
            return self._finish(answered)
        try:
            planned = self._plan()
            self._from_statistics(planned)
            self._scan_and_group(planned)
            self._relational(planned)
        finally:
            drop_views(self.spark, self.views)
        return self._finish(planned)

    def _job_group(self, phase: str) -> str:
        return f"dq-contracts:{self.run_id}:{phase}"

    def _from_log(self) -> list[_Planned] | None:
        """Every check answered from the Delta log with no DataFrame built, or None (see :mod:`.log_plan`)."""
        began, lazy = time.perf_counter(), self.lazy
        assert lazy is not None
        found = answer_from_log(self.contract, lazy, case_sensitive(self.spark), self.reference_time, self.progress)
        if found is None:
            return None
        rows = self.statistics_rows = found.row_count
        self.row_counts = {None: rows}
        self.stats.append(PhaseStat("statistics", time.perf_counter() - began, None, found.outcome.detail))
        self.stats.append(PhaseStat("scan", 0.0, None, f"{rows:,} rows from the Delta log: no DataFrame, no scan"))
        self.progress(f"scan: none ({rows:,} rows from the Delta log's statistics; no DataFrame built)")
        return [_Planned(check, metric, None, answered=measured) for check, metric, measured in found.checks]

    def _plan(self) -> list[_Planned]:
        began = time.perf_counter()
        self.views = register_views(self.spark, self.df, self.references, needed_views(self.contract))
        ctx = PlanContext(
            self.df.schema,
            case_sensitive(self.spark),
            java_regex_checker(self.spark),
            frame=self.df,
            references=self.references,
            views=self.views,
        )
        self.conditions: dict[str | None, Column | None] = {None: None}
        filter_errors: dict[str, str] = {}
        planned: list[_Planned] = []
        for check in self.contract.evaluated_checks():
            if not check.enabled:
                continue  # disabled: kept in the contract, never evaluated, no result row
            item = _Planned(check, metric_for(check), check.filter or None)
            key = item.scope_key
            if key is not None and key not in self.conditions and key not in filter_errors:
                try:
                    self.conditions[key] = filter_condition(self.df, key)
                except ValueError as exc:
                    filter_errors[key] = str(exc)
            if item.scope_key in filter_errors:
                item.error = filter_errors[item.scope_key]
            else:
                try:
                    item.error = item.metric.precondition(ctx)
                except Exception as exc:  # noqa: BLE001 - a precondition must never take the run down
                    item.error = f"cannot plan this check: {first_line(exc)}"
            planned.append(item)
        for item in planned:
            if not item.error:
                item.metric.coordinate([p.metric for p in planned if not p.error and p.scope_key == item.scope_key])
        errors = [p for p in planned if p.error]
        detail = f"{len(planned)} checks, {len(errors)} failed their preconditions"
        seconds = time.perf_counter() - began
        self.stats.append(PhaseStat("plan", seconds, None, detail))
        self.progress(
            f"plan: {detail} in {seconds:.2f} s" + "".join(f"\n  - {p.check.check_id}: {p.error}" for p in errors)
        )
        return planned

    def _scope(self, key: str | None) -> Scope:
        return Scope(self.conditions.get(key))

    def _row_count_exprs(self) -> tuple[list[str | None], list[Column]]:
        keys = list(self.conditions)
        return keys, [F.count(self._scope(key)(F.lit(1))) for key in keys]

    def _from_statistics(self, planned: list[_Planned]) -> None:
        """Measure from the Delta log what it answers exactly, before any scan (see :mod:`.statistics_first`)."""
        began, candidates = time.perf_counter(), [(p.check, p.metric, not p.error) for p in planned]
        source = self.statistics if self.contract.enforcement.statistics else None  # enforcement.statistics: off
        outcome = answer(
            self.spark, source, self.df.schema, self.run_filter, candidates, self.reference_time, self.progress
        )
        for index, measurement in outcome.answers.items():
            planned[index].answered = measurement
        self.statistics_rows = outcome.row_count
        self.stats.append(PhaseStat("statistics", time.perf_counter() - began, None, outcome.detail))

    @staticmethod
    def _live(planned: list[_Planned]) -> list[_Planned]:
        """The planned metrics still to compute (no error, not answered by the Delta log)."""
        return [p for p in planned if not p.error and p.answered is None]

    def _scan_needed(self, planned: list[_Planned]) -> bool:
        """False when the Delta log gave the row count and left nothing else for the scan."""
        return self.statistics_rows is None or any(
            p.scope_key is not None or p.metric.aggregations(Scope(None)) for p in self._live(planned)
        )

    def _scan_exprs(self, planned: list[_Planned]) -> tuple[list[str | None], list[Column], list[_Planned]] | None:
        """The scan's row counts and every live metric's aggregates (slices noted); None when nothing is left for it."""
        keys, exprs = self._row_count_exprs()
        live = self._live(planned)
        known = self.statistics_rows
        if not self._scan_needed(planned):
            assert known is not None
            self.row_counts = {None: known}  # nothing left for the scan: skip it
            self.stats.append(PhaseStat("scan", 0.0, None, f"{known:,} rows from the Delta log: no scan"))
            self.progress(f"scan: none ({known:,} rows from the Delta log's statistics)")
            return None
        for item in live:
            contributed = item.metric.aggregations(self._scope(item.scope_key))
            item.scan_slice = (len(exprs), len(exprs) + len(contributed))
            exprs.extend(contributed)
        return keys, exprs, live

    def _scan(self, planned: list[_Planned]) -> None:
        began = time.perf_counter()
        built = self._scan_exprs(planned)
        if built is None:
            return
        keys, exprs, live = built
        group = self._job_group("scan")
        fallback = False
        try:
            self.scan_frame = self.df.agg(*exprs)
            with job_group(self.spark, group, f"dq-contracts scan of {self.dataset}"), quiet_pyspark_errors():
                values = list(self.scan_frame.collect()[0])
        except Exception as exc:  # noqa: BLE001 - isolate the metric(s) that break the scan
            fallback = True
            log.warning("shared scan failed (%s); evaluating metrics one by one", first_line(exc))
            values = self._scan_one_by_one(live, keys, exprs, group)
        self._scan_done(keys, exprs, live, values, time.perf_counter() - began, group, fallback)

    def _scan_done(
        self,
        keys: list[str | None],
        exprs: list[Column],
        live: list[_Planned],
        values: list[Any],
        seconds: float,
        group: str | None,
        fallback: bool = False,
        how: str = "in one pass",
    ) -> None:
        if not fallback:
            for item in live:
                item.scan_values = values[item.scan_slice[0] : item.scan_slice[1]]
        self.row_counts = {key: int(values[index] or 0) for index, key in enumerate(keys)}
        detail = f"{self.row_counts[None]:,} rows, {len(exprs)} aggregates {how}" + (
            " (fallback: one pass per metric)" if fallback else ""
        )
        self.stats.append(PhaseStat("scan", seconds, group, detail))
        self.progress(f"scan: {detail} in {seconds:.2f} s")

    def _scan_one_by_one(
        self, live: list[_Planned], keys: list[str | None], exprs: list[Column], group: str
    ) -> list[Any]:
        """Fallback when the shared scan fails: each row count and each metric alone, errors isolated.

        Slower (one pass per metric) but only ever used when something in the data breaks an
        expression at run time; the metric(s) that still fail get status ``error`` with Spark's reason.
        """
        values: list[Any] = [0] * len(keys)
        with job_group(self.spark, group, f"dq-contracts scan of {self.dataset} (fallback)"):
            # If even counting all rows fails, the data itself is unreadable: that is a run failure.
            values[0] = self.df.agg(exprs[0]).collect()[0][0]
            for index in range(1, len(keys)):
                try:
                    with quiet_pyspark_errors():
                        values[index] = self.df.agg(exprs[index]).collect()[0][0]
                except Exception as exc:  # noqa: BLE001 - a per-check filter that fails on the data
                    for item in live:
                        if item.scope_key == keys[index]:
                            item.error = f"filter {keys[index]!r} failed on the data: {first_line(exc)}"
            for item in live:
                lo, hi = item.scan_slice
                if item.error or lo == hi:
                    continue
                try:
                    with quiet_pyspark_errors():
                        item.scan_values = list(self.df.agg(*exprs[lo:hi]).collect()[0])
                except Exception as exc:  # noqa: BLE001 - the metric that breaks on this data errors alone
                    item.error = f"Spark could not compute this metric: {first_line(exc)}"
        return values

    def _scan_and_group(self, planned: list[_Planned]) -> None:
        """The shared scan and the grouped passes, submitted together (``spark.dqcontracts.passParallelism``).

        They read the same input and share nothing but it, so Spark runs them as concurrent jobs: on
        a small run each is mostly planning and round-trip latency (Spark Connect above all), which
        then overlaps; on a large one the scheduler shares the same cores. Their stats keep the
        order of a sequential run (scan, then the passes by number).
        """
        passes = self._group_passes(planned)
        remote = self.capabilities.remote
        if passes and remote and self._in_one_query(planned, passes):
            return
        jobs = [functools.partial(self._scan, planned)]
        jobs += [
            functools.partial(self._group_pass, number, identity, members) for number, (identity, members) in passes
        ]
        first = len(self.stats)
        run_concurrently(self.spark, jobs, pass_parallelism(self.spark, len(jobs)), remote=remote)
        done = self.stats[first:]
        done.sort(key=lambda stat: -1 if stat.name == "scan" else int(stat.name[len("group") :] or 0))
        self.stats[first:] = done

    def _group_passes(
        self, planned: list[_Planned]
    ) -> list[tuple[int, tuple[tuple[str, ...], list[tuple[_Planned, list[GroupKey]]]]]]:
        """One pass per distinct set of group keys: ``(number, (identity, members))``."""
        passes: dict[tuple[str, ...], list[tuple[_Planned, list[GroupKey]]]] = {}
        for item in planned:
            if item.error:
                continue
            keys = item.metric.group_keys()
            if keys:
                identity = tuple(sorted(k.identity for k in keys))
                passes.setdefault(identity, []).append((item, keys))
        return list(enumerate(passes.items()))

    def _group_frame(
        self, identity: tuple[str, ...], members: list[tuple[_Planned, list[GroupKey]]]
    ) -> tuple[DataFrame, list[tuple[_Planned, int, int]]]:
        """One grouped pass as a one-row frame: its keys' counts, then every member's aggregations over them."""
        frame, slices = grouped_pass_frame(self.df, members, self._scope)
        self.group_frames[identity] = frame
        return frame, slices

    def _group_pass(
        self, number: int, identity: tuple[str, ...], members: list[tuple[_Planned, list[GroupKey]]]
    ) -> None:
        """One grouped pass (one job); a failure errors its checks only."""
        began = time.perf_counter()
        group = self._job_group(f"group{number}")
        label = ", ".join(identity)
        slices: list[tuple[_Planned, int, int]] = []
        try:
            frame, slices = self._group_frame(identity, members)
            with job_group(self.spark, group, f"dq-contracts grouped pass [{label}]"), quiet_pyspark_errors():
                values = list(frame.collect()[0])
            for item, lo, hi in slices:
                item.grouped_values = values[lo:hi]
        except Exception as exc:  # noqa: BLE001 - a grouped pass failing errors its checks only
            for item, _ in members:
                item.error = f"Spark could not compute the grouped pass [{label}]: {first_line(exc)}"
        self._group_done(number, label, members, time.perf_counter() - began, group)

    def _group_done(
        self,
        number: int,
        label: str,
        members: list[tuple[_Planned, list[GroupKey]]],
        seconds: float,
        group: str | None,
        how: str = "",
    ) -> None:
        detail = f"[{label}] for {len(members)} check(s)"
        self.stats.append(PhaseStat(f"group{number}", seconds, group, detail + how))
        self.progress(f"grouped pass {detail}{how} in {seconds:.2f} s")

    def _in_one_query(self, planned: list[_Planned], passes: list[tuple[int, tuple[Any, Any]]]) -> bool:
        """The scan and every grouped pass as ONE query — their one-row results side by side — on Spark Connect.

        There each query is a round trip with its own analysis and Delta snapshot: one query instead
        of several halves a small run's passes. False, nothing recorded, when the Delta log made the scan
        needless or the query fails on the data: the passes then run as usual, errors isolated.
        """
        if not self._scan_needed(planned):
            return False  # the Delta log answered what the scan would have: the passes as usual
        began = time.perf_counter()
        built = self._scan_exprs(planned)
        assert built is not None
        keys, exprs, live = built
        try:
            scan = self.df.agg(*[e.alias(f"_dq_s{i}") for i, e in enumerate(exprs)])
            combined, parts = scan, []
            for number, (identity, members) in passes:
                frame, slices = self._group_frame(identity, members)
                names = [f"_dq_g{number}_{i}" for i in range(len(frame.columns))]
                combined = combined.crossJoin(frame.toDF(*names))
                parts.append((number, identity, members, slices, len(names)))
            with quiet_pyspark_errors():
                values = list(combined.collect()[0])
        except Exception as exc:  # noqa: BLE001 - the separate passes isolate what breaks
            log.info("the passes in one query failed (%s); running them separately", first_line(exc))
            return False
        self.scan_frame = scan
        seconds = time.perf_counter() - began
        how = f"with {len(passes)} grouped pass(es) in one query"
        self._scan_done(keys, exprs, live, values[: len(exprs)], seconds, None, how=how)
        offset = len(exprs)
        for number, identity, members, slices, width in parts:
            row = values[offset : offset + width]
            offset += width
            for item, lo, hi in slices:
                item.grouped_values = row[lo:hi]
            self._group_done(number, ", ".join(identity), members, seconds, None, how=" (in the scan's query)")
        return True

    def _learn(self) -> dict[str, BaselineOutcome | str]:
        """Per baseline check, its bounds for this run (or why the history could not be read).

        The history is read once for all baseline checks: the widest lookback window of the
        contract, up to and including this reference time (the rules of which rows count are in
        :func:`~airflow_dq_contracts.contract.baseline.select_points`).
        """
        checks = [c for c in self.contract.all_checks() if c.baseline is not None and c.enabled]
        if not checks:
            return {}
        began = time.perf_counter()
        lookback = max(c.baseline.lookback_days for c in checks if c.baseline is not None)
        since = self.reference_time - dt.timedelta(days=lookback)
        try:
            rows = load_history(self.spark, self.history, self.contract.name, since, self.reference_time)
        except Exception as exc:  # noqa: BLE001 - unreadable history fails the baseline checks closed
            reason = f"cannot read the history for the baseline: {first_line(exc)}"
            return {c.check_id: reason for c in checks}
        gated = gated_runs(rows)
        outcomes: dict[str, BaselineOutcome | str] = {}
        for check in checks:
            assert check.baseline is not None
            points = select_points(
                rows,
                check_id=check.check_id,
                dataset=self.dataset,
                reference_time=self.reference_time,
                baseline=check.baseline,
                gated=gated,
                exclude_run_id=self.run_id,
            )
            outcomes[check.check_id] = judge(check.baseline, points, check.validator.tolerance)
        seconds = time.perf_counter() - began
        detail = f"{len(rows)} history rows ({len(gated)} gated run(s)) for {len(checks)} baseline check(s)"
        self.stats.append(PhaseStat("history", seconds, None, detail))
        self.progress(f"history: {detail} in {seconds:.2f} s")
        return outcomes

    def _pass(self, phase: str, detail: str, members: list[_Planned], compute: Callable[[], None]) -> None:
        """Run one reference-side pass under its job group; a failure errors its members only."""
        began = time.perf_counter()
        group = self._job_group(phase)
        try:
            with job_group(self.spark, group, f"dq-contracts {detail}"), quiet_pyspark_errors():
                compute()
        except Exception as exc:  # noqa: BLE001 - bad data in one pass must not take the run down
            for item in members:
                item.error = f"Spark could not compute the {detail}: {first_line(exc)}"
        seconds = time.perf_counter() - began
        self.stats.append(PhaseStat(phase, seconds, group, detail))
        self.progress(f"{detail} in {seconds:.2f} s")

    def _relational(self, planned: list[_Planned]) -> None:
        """The passes a reference or a query needs (see :mod:`.relational`), each shared where it can be.

        One left join per distinct (reference, keys, as_of); one aggregate per reference for every
        reconciliation against it; one query per ``sql`` check.
        """
        live = [p for p in planned if not p.error]
        joins: dict[tuple, list[_Planned]] = {}
        aggregates: dict[str, list[tuple[_Planned, list[Column]]]] = {}
        for item in live:
            join = item.metric.reference_join()
            if join is not None:
                joins.setdefault(join.identity, []).append(item)
            wanted = item.metric.reference_aggregations()
            if wanted is not None:
                aggregates.setdefault(wanted[0], []).append((item, wanted[1]))

        def spread(frame: DataFrame, parts: list[tuple[_Planned, list[Column]]]) -> None:
            exprs = [expr for _, contributed in parts for expr in contributed]
            values = list(frame.agg(*exprs).collect()[0])
            for item, contributed in parts:
                item.extra_values, values = values[: len(contributed)], values[len(contributed) :]

        def join_pass(join: ReferenceJoin, members: list[_Planned]) -> None:
            orphans = unmatched(self.df, self.references.frame(join.reference), join)
            self.join_frames[join.identity] = orphans
            spread(
                orphans,
                [(item, item.metric.join_aggregations(self._scope(item.scope_key), F.lit(False))) for item in members],
            )

        for number, members in enumerate(joins.values()):
            join = members[0].metric.reference_join()
            assert join is not None
            self._pass(
                f"join{number}",
                f"anti-join {join.describe()} for {len(members)} check(s)",
                members,
                functools.partial(join_pass, join, members),
            )
        for alias, parts in aggregates.items():
            self._pass(
                f"reference:{alias}",
                f"aggregate of reference {alias} for {len(parts)} check(s)",
                [item for item, _ in parts],
                functools.partial(lambda alias, parts: spread(self.references.frame(alias), parts), alias, parts),
            )
        for number, item in enumerate(p for p in live if p.check.is_query):

            def run_query(item: _Planned = item) -> None:
                item.extra_values = item.metric.own_query() or []

            self._pass(f"query{number}", f"query of {item.check.check_id}", [item], run_query)

    def _finish(self, planned: list[_Planned]) -> ContractResult:
        outcomes = self._learn()
        began = time.perf_counter()
        records: list[CheckResult] = []
        for item in planned:
            row_count = self.row_counts.get(item.scope_key, 0)
            if item.error:
                measurement = Measurement.failure(item.error)
            elif item.answered is not None:
                measurement = item.answered
            else:
                try:
                    measurement = item.metric.measure(
                        item.scan_values,
                        item.grouped_values,
                        MeasureContext(row_count, self.reference_time, extra=item.extra_values),
                    )
                except Exception as exc:  # noqa: BLE001 - a bug in one metric must not hide the others
                    log.exception("measuring %s failed", item.check.check_id)
                    measurement = Measurement.failure(f"internal error while measuring: {first_line(exc)}")
            outcome = outcomes.get(item.check.check_id)
            if isinstance(outcome, str) and measurement.error is None:
                measurement = Measurement(measurement.metric_value, measurement.failed_rows, error=outcome)
            item.measurement = measurement
            record = self._record(
                item.check, measurement, row_count, outcome if isinstance(outcome, BaselineOutcome) else None
            )
            # Schema checks read the schema only: from the log when this run's statistics came from it.
            from_log = item.answered is not None or (item.check.type == "schema" and self.statistics_rows is not None)
            record.evaluated_from = FROM_STATISTICS if from_log else FROM_SCAN
            records.append(record)
        finished_at = utcnow()
        result = ContractResult(
            run_id=self.run_id,
            contract_name=self.contract.name,
            contract_version=self.contract.version,
            dataset=self.dataset,
            row_count=self.row_counts.get(None, 0),
            checks=records,
            started_at=self.started_at,
            finished_at=finished_at,
            filter=self.run_filter,
        )
        counts = result.counts()
        detail = (
            f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} error(s) "
            f"→ decision {result.decision}"
        )
        seconds = time.perf_counter() - began
        self.stats.append(PhaseStat("evaluate", seconds, None, detail))
        self.progress(f"evaluate: {detail} in {seconds:.2f} s")
        return result

    def _record(
        self, check: Check, measurement: Measurement, row_count: int, baseline: BaselineOutcome | None = None
    ) -> CheckResult:
        validator = check.validator
        described = validator.describe()
        if baseline is not None and check.baseline is not None:
            # Learning: the metric is recorded, nothing is judged yet.
            validator = baseline.validator or Validator("noop", tolerance=check.validator.tolerance)
            described = f"{check.baseline.describe()}: " + ("learning" if baseline.learning else validator.describe())
        metric = measurement.metric_value
        message_parts: list[str] = []
        if measurement.error is None and metric is None:
            measurement = dataclasses.replace(measurement, error="metric could not be computed")
        if measurement.error is None and metric is not None and math.isnan(metric):
            measurement = dataclasses.replace(measurement, error=f"{check.type} is NaN (the column holds NaN values)")
        if measurement.error is not None:
            status, passed, recorded = STATUS_ERROR, False, None
            message_parts.append(measurement.error)
        else:
            assert metric is not None
            passed = validator.passes(metric, measurement.failed_rows)
            status = STATUS_PASSED if passed else STATUS_FAILED
            recorded = metric if math.isfinite(metric) else None
            if not math.isfinite(metric):
                message_parts.append(f"metric is {describe_number(metric)} (recorded as null)")
            if not passed:
                if measurement.reason:
                    message_parts.append(measurement.reason)
                elif validator.kind == "all_conform":
                    message_parts.append(f"{measurement.failed_rows} non-null value(s) do not conform")
                else:
                    message_parts.append(
                        describe_failure(validator, metric)
                        if math.isfinite(metric)
                        else f"metric {describe_number(metric)} is outside {validator.describe()}"
                    )
                    if measurement.failed_rows:
                        message_parts.append(f"{measurement.failed_rows} violating row(s)")
        if measurement.note:
            message_parts.append(measurement.note)
        if baseline is not None:
            message_parts.append(baseline.message)
        return CheckResult(
            run_id=self.run_id,
            contract_name=self.contract.name,
            contract_version=self.contract.version,
            dataset=self.dataset,
            check_id=check.check_id,
            check_name=check.name,
            check_type=check.type,
            column=check.column,
            severity=check.severity,
            action=check.action,
            validator=described,
            metric_value=recorded,
            status=status,
            passed=passed,
            failed_rows=measurement.failed_rows,
            message="; ".join(message_parts),
            row_count=row_count,
            filter=self.run_filter,
            evaluated_at=self.started_at,
            dag_id=self.dag_id,
            task_id=self.task_id,
            airflow_run_id=self.airflow_run_id,
            tags=list(check.tags),
            reference_time=self.reference_time,
            expected_min=baseline.expected_min if baseline else None,
            expected_max=baseline.expected_max if baseline else None,
        )


# --------------------------------------------------------------------------------------- public API


def evaluate(
    contract: Contract,
    df: DataFrame,
    reference_time: dt.datetime | str | None = None,
    *,
    run_id: str | None = None,
    dataset: str | None = None,
    filter: str | None = None,
    dag_id: str | None = None,
    task_id: str | None = None,
    airflow_run_id: str | None = None,
    progress: Progress | None = None,
    history: HistorySource = None,
    references: dict[str, DataFrame] | None = None,
) -> ContractResult:
    """Evaluate every check of ``contract`` on ``df``; one result record per check.

    ``references`` gives the DataFrames of the contract's ``references:`` by alias (their
    declared ``filter`` is applied here); a check whose reference is missing has status ``error``.

    ``reference_time`` (ISO-8601 text or datetime; naive = UTC; default now) is what
    ``freshness`` and ``completeness`` are measured against. ``filter`` restricts ``df`` first
    and is recorded in every record. Never raises because of the data: a check that cannot be
    computed has status ``error`` with the reason. Raises ``ValueError`` for an invalid
    ``filter`` or ``reference_time``.

    ``history`` feeds the checks with a ``baseline:`` (and ``drift`` checks): the Delta results
    table of earlier runs (a path, read with delta-rs, or a catalog table name) or the earlier
    result records themselves (:class:`CheckResult` objects or their dicts). Without it every
    baseline check is in its learning period. Runs are told apart by ``reference_time``, so pass
    the run's own one (``evaluate(..., reference_time=day, history="/data/dq/results")``).

    Example::

        result = evaluate(contract, spark.read.parquet("/data/orders"), "2024-05-02T00:00:00Z")
        json.dumps(result.summary())     # strict JSON: no NaN / Infinity
    """
    return Evaluator(
        contract,
        df,
        reference_time,
        run_id=run_id,
        dataset=dataset,
        filter=filter,
        dag_id=dag_id,
        task_id=task_id,
        airflow_run_id=airflow_run_id,
        progress=progress,
        history=history,
        references=references,
    ).run()
