"""Thresholds that learn from history: ``baseline:`` on a check, and ``type: drift`` (plain Python).

A baseline replaces a static validator with bounds computed, at each run, from the same check's
earlier results (the *history*, read once per run from the Delta results table):

* ``band: [low, high]`` — accept ``low × mean … high × mean`` of the trailing values
  (the seasonal band of seed 003: ``avg_last_28d × 0.5 … × 2.5``);
* ``max_sigma: k`` — accept ``mean ± k·σ`` (σ the sample standard deviation, n − 1).

Which earlier results are *history* (:func:`select_points`): rows of the same contract name,
``check_id`` and dataset whose ``reference_time`` lies in ``[reference_time − lookback_days,
reference_time)``; excluded are runs whose decision was ``gate`` (recomputed from that run's own
rows with :func:`airflow_dq_contracts.results.decide`, so nothing extra is stored), checks whose
status was not ``passed``, and — unless ``include_same_reference_time: true`` — runs of the very
reference time being evaluated (a retry is not history). When several runs share one reference
time, only the newest (by ``evaluated_at``) speaks for that time. Fewer than ``min_history``
usable points is the *learning period*: the check passes with ``learning: N of M runs``.

A ``drift`` check (:func:`expand_drift`) is shorthand for one ``max_sigma`` baseline per metric of
a numeric column (``mean``, ``p50``, ``p95``, ``p99``, ``cardinality``), each with its own
``check_id`` ``<column>/<name>/<metric>``.

Example::

    >>> b = Baseline(lookback_days=28, min_history=3, band=(0.5, 2.5))
    >>> outcome = judge(b, [100.0, 110.0, 90.0])
    >>> outcome.validator.describe(), outcome.expected_min, outcome.expected_max
    ('between [50, 250] ±1e-9', 50.0, 250.0)
    >>> judge(b, [100.0]).message
    'learning: 1 of 3 runs'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from airflow_dq_contracts.results import DECISION_GATE, decide
from airflow_dq_contracts.timeutil import parse_time

from .validators import DEFAULT_TOLERANCE, Validator, exact, format_number

DEFAULT_LOOKBACK_DAYS = 28
DEFAULT_MIN_HISTORY = 7
DEFAULT_MAX_SIGMA = 3.0
BASELINE_KEYS = ("lookback_days", "min_history", "band", "max_sigma", "include_same_reference_time")

#: Drift metrics → (underlying check type, its parameters).
DRIFT_METRICS: dict[str, tuple[str, dict[str, Any]]] = {
    "mean": ("mean", {}),
    "p50": ("percentile", {"percentile": 0.5, "approximate": False}),
    "p95": ("percentile", {"percentile": 0.95, "approximate": False}),
    "p99": ("percentile", {"percentile": 0.99, "approximate": False}),
    "cardinality": ("cardinality", {}),
}

#: The results-table columns the history needs (and nothing more: it is read once per run).
HISTORY_COLUMNS = (
    "run_id",
    "dataset",
    "check_id",
    "action",
    "status",
    "failed_rows",
    "metric_value",
    "reference_time",
    "evaluated_at",
)

Add = Callable[[tuple, str], None]


@dataclasses.dataclass(frozen=True)
class Baseline:
    """How a check learns its bounds from history: exactly one of ``band`` and ``max_sigma``."""

    lookback_days: int = DEFAULT_LOOKBACK_DAYS
    min_history: int = DEFAULT_MIN_HISTORY
    band: tuple[float, float] | None = None
    max_sigma: float | None = None
    include_same_reference_time: bool = False

    def describe(self) -> str:
        """The rule, for the results table's ``validator`` column.

        >>> Baseline(band=(0.5, 2.5)).describe()
        'baseline band [0.5, 2.5] × mean of 28 d'
        """
        if self.band is not None:
            rule = f"band [{format_number(self.band[0])}, {format_number(self.band[1])}] × mean"
        else:
            rule = f"mean ± {format_number(self.max_sigma)}σ"
        return f"baseline {rule} of {self.lookback_days} d"


@dataclasses.dataclass(frozen=True)
class BaselineOutcome:
    """What a baseline says for one run: the validator to apply (None while learning), bounds, message."""

    validator: Validator | None
    expected_min: float | None
    expected_max: float | None
    message: str
    points: int

    @property
    def learning(self) -> bool:
        return self.validator is None


def judge(baseline: Baseline, values: Sequence[float], tolerance: float = DEFAULT_TOLERANCE) -> BaselineOutcome:
    """Bounds from the usable history ``values`` (already selected by :func:`select_points`).

    >>> judge(Baseline(min_history=2, max_sigma=2), [10.0, 12.0]).message
    'baseline mean 11, σ 1.414213562, N 2 → between [8.171572875, 13.82842712]'
    """
    n = len(values)
    if n < baseline.min_history:
        return BaselineOutcome(None, None, None, f"learning: {n} of {baseline.min_history} runs", n)
    mean = math.fsum(values) / n
    sigma = statistics.stdev(values) if n > 1 else 0.0
    if baseline.band is not None:
        # Exact decimals, so "0.5 × 1000" is 500 and not 499.99999999999994.
        low = float(exact(baseline.band[0]) * exact(mean))
        high = float(exact(baseline.band[1]) * exact(mean))
        low, high = min(low, high), max(low, high)  # a negative mean flips the band
    else:
        assert baseline.max_sigma is not None
        spread = float(exact(baseline.max_sigma) * exact(sigma))
        low, high = float(exact(mean) - exact(spread)), float(exact(mean) + exact(spread))
    validator = Validator("between", low=low, high=high, tolerance=tolerance)
    message = f"baseline mean {_short(mean)}, σ {_short(sigma)}, N {n} → between [{_short(low)}, {_short(high)}]"
    return BaselineOutcome(validator, low, high, message, n)


def _short(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}"


# --------------------------------------------------------------------------------------- history


def gated_runs(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The run ids whose decision was ``gate``, recomputed from each run's own result rows.

    >>> gated_runs([{"run_id": "a", "action": "gate", "status": "failed", "failed_rows": None},
    ...             {"run_id": "b", "action": "flag", "status": "failed", "failed_rows": None}])
    {'a'}
    """
    by_run: dict[str, list[Any]] = {}
    for row in rows:
        by_run.setdefault(row["run_id"], []).append(_Decidable(row))
    return {run_id for run_id, checks in by_run.items() if decide(checks) == DECISION_GATE}


class _Decidable:
    """The three fields :func:`decide` reads, from a plain row."""

    def __init__(self, row: Mapping[str, Any]):
        self.action = row.get("action")
        self.failed_rows = row.get("failed_rows")
        self.counts_as_failed = row.get("status") != "passed"


def select_points(
    rows: Iterable[Mapping[str, Any]],
    *,
    check_id: str,
    dataset: str,
    reference_time: dt.datetime,
    baseline: Baseline,
    gated: set[str] | None = None,
    exclude_run_id: str | None = None,
) -> list[float]:
    """The usable history of one check, oldest first (see the module docstring for the rules).

    ``rows`` are results rows (dicts with :data:`HISTORY_COLUMNS`) of one contract; ``gated`` the
    run ids whose decision was gate (computed from ``rows`` when not given); ``exclude_run_id``
    the run being evaluated (its own earlier attempt is never its history).

    >>> day = lambda d: dt.datetime(2024, 1, d, tzinfo=dt.timezone.utc)
    >>> rows = [{"run_id": f"r{d}", "dataset": "t", "check_id": "c", "action": "gate", "status": "passed",
    ...          "failed_rows": None, "metric_value": float(d), "reference_time": day(d), "evaluated_at": day(d)}
    ...         for d in (1, 2, 3)]
    >>> select_points(rows, check_id="c", dataset="t", reference_time=day(3), baseline=Baseline())
    [1.0, 2.0]
    """
    rows = list(rows)
    if gated is None:
        gated = gated_runs(rows)
    reference = parse_time(reference_time)
    assert reference is not None
    start = reference - dt.timedelta(days=baseline.lookback_days)
    # One run speaks for each reference time: the newest evaluation of it.
    newest: dict[dt.datetime, tuple[dt.datetime, Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("check_id") != check_id or row.get("dataset") != dataset or row.get("run_id") == exclude_run_id:
            continue
        moment = parse_time(row.get("reference_time"))
        if moment is None or not start <= moment <= reference:  # rows before the column existed: no axis
            continue
        if moment == reference and not baseline.include_same_reference_time:
            continue  # a retry of the run being evaluated is not history
        evaluated = parse_time(row.get("evaluated_at")) or moment
        if moment not in newest or evaluated >= newest[moment][0]:
            newest[moment] = (evaluated, row)
    points: list[float] = []
    for moment in sorted(newest):
        row = newest[moment][1]
        value = row.get("metric_value")
        if row["run_id"] in gated or row.get("status") != "passed" or value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue
        points.append(float(value))
    return points


# --------------------------------------------------------------------------------------- parsing


def parse_baseline(raw: Any, add: Add, *, defaults: Baseline | None = None) -> Baseline | None:
    """Validate a ``baseline:`` mapping; report every problem through ``add(subpath, message)``.

    >>> problems = []
    >>> parse_baseline({"band": [2, 1], "max_sigma": 3}, lambda p, m: problems.append((p, m)))
    >>> [p for p, _ in problems]
    [('band',), ('band',)]
    """
    base = defaults or Baseline()
    if not isinstance(raw, dict):
        add(
            (),
            f"'baseline' must be a mapping like {{lookback_days: 28, min_history: 7, band: [0.5, 2.5]}}, got {raw!r}",
        )
        return None
    ok = True
    for key in raw:
        if key not in BASELINE_KEYS:
            add((key,), f"unknown key {key!r} in 'baseline'; allowed: {', '.join(BASELINE_KEYS)}")
            ok = False
    values: dict[str, Any] = {}
    for key in ("lookback_days", "min_history"):
        if key in raw:
            value = raw[key]
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                add((key,), f"'{key}' must be an integer ≥ 1, got {value!r}")
                ok = False
            else:
                values[key] = value
    if "include_same_reference_time" in raw:
        if not isinstance(raw["include_same_reference_time"], bool):
            add(
                ("include_same_reference_time",),
                f"'include_same_reference_time' must be true or false, got {raw['include_same_reference_time']!r}",
            )
            ok = False
        else:
            values["include_same_reference_time"] = raw["include_same_reference_time"]
    has_band, has_sigma = "band" in raw, "max_sigma" in raw
    if has_band == has_sigma:
        add(
            ("band",) if has_band else (),
            "'baseline' needs exactly one of 'band: [low, high]' (× trailing mean) or 'max_sigma: k' (mean ± k·σ)",
        )
        ok = False
    if has_band:
        band = raw["band"]
        if not isinstance(band, list) or len(band) != 2 or not all(_finite(v) for v in band):
            add(("band",), f"'band' needs two numbers [low, high] (multiples of the trailing mean), got {band!r}")
            ok = False
        elif band[0] < 0 or band[0] > band[1]:
            add(("band",), f"'band' needs 0 ≤ low ≤ high, got {band!r}")
            ok = False
        else:
            values["band"] = (float(band[0]), float(band[1]))
    if has_sigma:
        sigma = raw["max_sigma"]
        if not _finite(sigma) or sigma <= 0:
            add(("max_sigma",), f"'max_sigma' must be a number > 0, got {sigma!r}")
            ok = False
        else:
            values["max_sigma"] = float(sigma)
    if not ok:
        return None
    return dataclasses.replace(base, **values)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))


def check_drift_metrics(params: dict[str, Any], add: Add) -> None:
    """``extra`` validation of the ``drift`` check type: known metrics, each once."""
    seen: set[str] = set()
    for index, name in enumerate(params.get("metrics") or ()):
        if name not in DRIFT_METRICS:
            add(("metrics", index), f"unknown drift metric {name!r}; allowed: {', '.join(DRIFT_METRICS)}")
        elif name in seen:
            add(("metrics", index), f"drift metric {name!r} is listed twice")
        seen.add(name)


def expand_drift(check: Any) -> list[Any]:
    """One check per metric of a ``drift`` check: ``check_id`` ``<column>/<name>/<metric>``.

    Each keeps ``type: drift`` (so the results say what the author wrote) and carries the
    underlying statistic's parameters plus ``metric``; its baseline is ``max_sigma``.
    """
    params = check.params
    baseline = Baseline(
        lookback_days=int(params["lookback_days"]),
        min_history=int(params["min_history"]),
        max_sigma=float(params["max_sigma"]),
    )
    expanded = []
    # Unknown or repeated names were reported by check_drift_metrics; the contract will not load.
    names = [m for m in params.get("metrics") or DRIFT_METRICS if isinstance(m, str) and m in DRIFT_METRICS]
    for name in dict.fromkeys(names):
        _, extra = DRIFT_METRICS[name]
        expanded.append(
            dataclasses.replace(
                check,
                check_id=f"{check.check_id}/{name}",
                params={**params, **extra, "metric": name},
                baseline=baseline,
            )
        )
    return expanded
