"""Every window a micro-batch closes, evaluated together: one grouped pass instead of one run per window.

:class:`~.streams.ContractBatchWriter` closes the event-time windows the watermark has passed. Each
window is a run of its own (its run id, its ``filter``, its end as the reference time), and its
results must be exactly what a batch :class:`~.evaluator.Evaluator` gives on its rows alone.
:func:`evaluate_windows` gives exactly that for all of them at once:

1. the contract is planned ONCE (preconditions read the schema, which every window shares);
2. the shared scan runs as ONE ``groupBy(window)`` aggregation — one row per window — and every
   grouped pass (``duplicates``, ``cardinality``…) as ONE two-level aggregation keyed by the window
   and its keys;
3. per window, the checks that cannot be grouped — the reference joins and reference aggregates —
   run on the window's own rows (as the per-window run does), and the window's result is measured
   and validated by its own evaluator (its run id, filter, reference time, history).

A contract with ``sql`` checks (whose queries name the data through temporary views), a single
window, or a grouped pass that fails on the data: each window is evaluated on its own, as before
(errors then isolated per metric exactly as in a batch run).

Example::

    results = evaluate_windows(contract, buffered_rows, [WindowRun(start, run_id, text, end)],
                               window_column="_dq_window", dataset="orders")
    results[start].decision
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.results import ContractResult

from .concurrency import pass_parallelism, run_concurrently
from .evaluator import Evaluator
from .metrics import grouped_pass_frame
from .relational import drop_views, needed_views
from .spark_errors import quiet_pyspark_errors

__all__ = ["WindowRun", "evaluate_windows"]


@dataclasses.dataclass(frozen=True)
class WindowRun:
    """One window to evaluate: its start (epoch seconds), run id, ``filter`` text and end (the reference time)."""

    start: int
    run_id: str
    filter: str
    end: dt.datetime


def _noop(message: str) -> None:
    return None


def _settings(window: WindowRun, dataset: str, references: Mapping[str, DataFrame | str] | None) -> dict[str, Any]:
    """The evaluator arguments of one window's run (as the per-window path gives them)."""
    return dict(
        run_id=window.run_id,
        dataset=dataset,
        filter=window.filter,
        apply_filter=False,
        references=dict(references) if references else None,
        progress=_noop,
    )


def evaluate_windows(
    contract: Contract,
    rows: DataFrame,
    windows: Sequence[WindowRun],
    *,
    window_column: str,
    dataset: str,
    references: Mapping[str, DataFrame | str] | None = None,
) -> dict[int, ContractResult]:
    """Each window's :class:`ContractResult` (by start), as its own evaluation on its rows would give it.

    ``rows``: the data columns of every window's rows plus ``window_column`` (the window's start).
    """
    frames = {w.start: rows.where(F.col(window_column) == F.lit(w.start)).drop(window_column) for w in windows}

    def alone(window: WindowRun) -> ContractResult:
        return Evaluator(contract, frames[window.start], window.end, **_settings(window, dataset, references)).run()

    if len(windows) < 2 or needed_views(contract) or any(c.is_query for c in contract.evaluated_checks()):
        return {w.start: alone(w) for w in windows}
    first = windows[0]
    shared = _SharedPlan(contract, rows.drop(window_column), first.end, **_settings(first, dataset, references))
    computed = shared.grouped(rows, window_column, [w.start for w in windows])
    results: dict[int, ContractResult] = {}
    for window in windows:
        values = None if computed is None else computed.get(window.start)
        if values is None:
            results[window.start] = alone(window)
            continue
        results[window.start] = _WindowEvaluator(
            shared,
            values,
            contract,
            frames[window.start],
            window.end,
            **_settings(window, dataset, references),
        ).run()
    return results


@dataclasses.dataclass
class _Values:
    """One window's share of the grouped passes."""

    row_counts: dict[str | None, int]
    scan: Mapping[int, Sequence[Any]]  # planned index → its scan values
    grouped: Mapping[int, Sequence[Any]]  # planned index → its grouped-pass values


class _SharedPlan(Evaluator):
    """The plan every window shares (made on the data columns: the schema each window's run sees), and the
    grouped scan and passes that give every window's values at once."""

    def grouped(self, rows: DataFrame, window_column: str, starts: list[int]) -> dict[int, _Values] | None:
        """Every window's values from one grouped scan and one pass per key set; None when Spark failed."""
        try:
            self.planned = planned = self._plan()
        finally:
            drop_views(self.spark, self.views)
        keys, exprs = self._row_count_exprs()
        live = self._live(planned)
        for item in live:
            contributed = item.metric.aggregations(self._scope(item.scope_key))
            item.scan_slice = (len(exprs), len(exprs) + len(contributed))
            exprs.extend(contributed)
        passes = self._group_passes(planned)
        scan = rows.groupBy(F.col(window_column)).agg(*[e.alias(f"_dq_s{i}") for i, e in enumerate(exprs)])
        built = [grouped_pass_frame(rows, members, self._scope, by=[window_column]) for _, (_, members) in passes]
        frames = [scan] + [frame for frame, _ in built]

        def collect(frame: DataFrame) -> dict[int, list[Any]]:
            with quiet_pyspark_errors():
                return {int(row[0]): list(row[1:]) for row in frame.collect()}

        jobs = [functools.partial(collect, frame) for frame in frames]
        try:
            parallelism = pass_parallelism(self.spark, len(jobs))
            collected = run_concurrently(self.spark, jobs, parallelism, remote=self.capabilities.remote)
        except Exception:  # noqa: BLE001 - the per-window evaluations isolate what breaks, as a batch run does
            return None
        index = {id(item): number for number, item in enumerate(planned)}
        out: dict[int, _Values] = {}
        for start in starts:
            values = collected[0].get(start)
            if values is None:
                continue
            counts = {key: int(values[i] or 0) for i, key in enumerate(keys)}
            scan_values = {index[id(item)]: values[item.scan_slice[0] : item.scan_slice[1]] for item in live}
            grouped_values: dict[int, Sequence[Any]] = {}
            for number, (_, slices) in enumerate(built):
                row = collected[number + 1].get(start)
                if row is None:
                    break
                for item, lo, hi in slices:
                    grouped_values[index[id(item)]] = row[lo:hi]
            else:
                out[start] = _Values(counts, scan_values, grouped_values)
        return out


class _WindowEvaluator(Evaluator):
    """One window's run on its own rows, its plan and its scan and grouped values taken from the shared pass;
    its reference passes (joins, reference aggregates) on its own rows, its measuring and history its own."""

    def __init__(self, shared: _SharedPlan, values: _Values, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shared = shared
        self.values = values

    def _plan(self) -> list[Any]:
        self.conditions = self.shared.conditions
        planned = [dataclasses.replace(item) for item in self.shared.planned]
        for number, item in enumerate(planned):
            item.scan_values = self.values.scan.get(number, ())
            item.grouped_values = self.values.grouped.get(number, ())
        return planned

    def _scan_and_group(self, planned: list[Any]) -> None:
        self.row_counts = dict(self.values.row_counts)
