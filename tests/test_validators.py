"""Validator edges (spec 000, "Validators"): tolerance on each side of min, max, between, not_between and
equals — exactly at bound ± tolerance and the next float outside — default tolerance 1e-9, tolerance 0,
noop, all_conform, None/NaN/inf metrics, describe() strings.

"Just outside" is ``math.nextafter`` of the boundary: the nearest float past it. Boundaries are written
as the decimal the spec's inequality gives (e.g. ``min: 100`` with the default tolerance accepts down to
99.999999999). A randomised check compares against exact rational arithmetic (``fractions``).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.validators import Validator, describe_failure

INF = math.inf
NAN = math.nan


def below(x: float) -> float:
    return math.nextafter(x, -INF)


def above(x: float) -> float:
    return math.nextafter(x, INF)


# ----------------------------------------------------------------------------- default tolerance 1e-9


def test_default_tolerance_is_1e_9() -> None:
    assert Validator("min", low=0).tolerance == 1e-9
    contract = load_contract("name: t\nchecks:\n  - {name: a, type: num_rows, min: 1}\n")
    assert next(contract.all_checks()).validator.tolerance == 1e-9


@pytest.mark.parametrize(
    "metric, ok",
    [
        (100, True),
        (100.5, True),
        (99.999999999, True),  # 100 − 1e-9 is still accepted
        (below(99.999999999), False),
        (99.999999998, False),
        (99.9999999995, True),
        (-INF, False),
        (INF, True),
    ],
)
def test_min_default_tolerance(metric: float, ok: bool) -> None:
    assert Validator("min", low=100).passes(metric) is ok


@pytest.mark.parametrize(
    "metric, ok",
    [
        (100, True),
        (0, True),
        (100.000000001, True),
        (above(100.000000001), False),
        (100.000000002, False),
        (INF, False),
        (-INF, True),
    ],
)
def test_max_default_tolerance(metric: float, ok: bool) -> None:
    assert Validator("max", high=100).passes(metric) is ok


@pytest.mark.parametrize(
    "metric, ok",
    [
        (100, True),
        (500000, True),
        (1000000, True),
        (99.999999999, True),
        (below(99.999999999), False),
        (1000000.000000001, True),
        (above(1000000.000000001), False),
    ],
)
def test_between_default_tolerance_on_each_side(metric: float, ok: bool) -> None:
    assert Validator("between", low=100, high=1000000).passes(metric) is ok


@pytest.mark.parametrize(
    "metric, ok",
    [
        (95, False),
        (90, False),
        (99, False),  # inside the excluded range
        (89.999999999, False),
        (below(89.999999999), True),  # low − tol is still excluded
        (99.000000001, False),
        (above(99.000000001), True),  # high + tol is still excluded
        (0, True),
        (10**8, True),
        (-INF, True),
        (INF, True),
    ],
)
def test_not_between_default_tolerance_on_each_side(metric: float, ok: bool) -> None:
    assert Validator("not_between", low=90, high=99).passes(metric) is ok


@pytest.mark.parametrize(
    "metric, ok",
    [
        (9500000, False),
        (9000000, False),
        (9999999, False),
        (8999999, True),
        (10000000, True),
        # Floats this large are ~1.9e-9 apart, so the next float below 9000000 is already below low − 1e-9.
        (below(9000000.0), True),
        (above(9999999.0), True),
    ],
)
def test_not_between_the_spec_example(metric: float, ok: bool) -> None:
    assert Validator("not_between", low=9000000, high=9999999).passes(metric) is ok


@pytest.mark.parametrize(
    "metric, ok",
    [
        (1000, True),
        (999.999999999, True),
        (1000.000000001, True),
        (below(999.999999999), False),
        (above(1000.000000001), False),
        (INF, False),
    ],
)
def test_equals_default_tolerance(metric: float, ok: bool) -> None:
    assert Validator("equals", low=1000).passes(metric) is ok


# ---------------------------------------------------------------------------- explicit tolerance


@pytest.mark.parametrize(
    "kind, low, high, metric, ok",
    [
        ("min", 10, None, 9.5, True),
        ("min", 10, None, below(9.5), False),
        ("min", 10, None, 10, True),
        ("max", None, 10, 10.5, True),
        ("max", None, 10, above(10.5), False),
        ("max", None, 10, 10, True),
        ("between", 1, 2, 0.5, True),
        ("between", 1, 2, below(0.5), False),
        ("between", 1, 2, 2.5, True),
        ("between", 1, 2, above(2.5), False),
        ("not_between", 1, 2, 0.5, False),
        ("not_between", 1, 2, below(0.5), True),
        ("not_between", 1, 2, 2.5, False),
        ("not_between", 1, 2, above(2.5), True),
        ("not_between", 1, 2, 1.5, False),
        ("equals", 7, None, 6.5, True),
        ("equals", 7, None, 7.5, True),
        ("equals", 7, None, below(6.5), False),
        ("equals", 7, None, above(7.5), False),
    ],
)
def test_tolerance_half_on_each_side(kind: str, low, high, metric: float, ok: bool) -> None:
    assert Validator(kind, low=low, high=high, tolerance=0.5).passes(metric) is ok


@pytest.mark.parametrize(
    "kind, low, high, tol, metric",
    [
        # The spec's own examples at their exact decimal boundaries (binary floats alone would reject them).
        ("equals", 3.5, None, 0.1, 3.4),  # "Average rating matches target": 3.5 within 0.1
        ("equals", 3.5, None, 0.1, 3.6),
        ("equals", 300.0, None, 5.0, 295.0),  # P99 exactly 300 s within 5 s
        ("equals", 1000000.0, None, 0.01, 999999.99),
        ("equals", 1000000.0, None, 0.01, 1000000.01),
        ("max", None, 0.7, 0.1, 0.8),
        ("min", 0.3, None, 0.1, 0.2),
        ("between", 0.1, 0.2, 0.1, 0.3),
        ("between", 0.1, 0.2, 0.1, 0.0),
    ],
)
def test_decimal_boundaries_are_exact(kind: str, low, high, tol: float, metric: float) -> None:
    validator = Validator(kind, low=low, high=high, tolerance=tol)
    assert validator.passes(metric)
    outward = below(metric) if metric <= (low if low is not None else high) else above(metric)
    assert not validator.passes(outward)


def test_not_between_decimal_boundary_is_exact() -> None:
    validator = Validator("not_between", low=0.3, high=0.7, tolerance=0.1)
    assert not validator.passes(0.2) and not validator.passes(0.8)
    assert validator.passes(below(0.2)) and validator.passes(above(0.8))


# --------------------------------------------------------------------------------------- tolerance 0


@pytest.mark.parametrize(
    "kind, low, high, metric, ok",
    [
        ("min", 0, None, 0, True),
        ("min", 0, None, -0.0, True),
        ("min", 0, None, below(0.0), False),
        ("max", None, 0, 0, True),
        ("max", None, 0, above(0.0), False),
        ("between", 5, 5, 5, True),
        ("between", 5, 5, below(5.0), False),
        ("between", 5, 5, above(5.0), False),
        ("not_between", 5, 6, 5, False),
        ("not_between", 5, 6, below(5.0), True),
        ("not_between", 5, 6, 6, False),
        ("not_between", 5, 6, above(6.0), True),
        ("equals", 1000, None, 1000, True),
        ("equals", 1000, None, above(1000.0), False),
        ("equals", 1000, None, below(1000.0), False),
    ],
)
def test_tolerance_zero_is_exact(kind: str, low, high, metric: float, ok: bool) -> None:
    assert Validator(kind, low=low, high=high, tolerance=0).passes(metric) is ok


def test_tolerance_zero_from_yaml() -> None:
    contract = load_contract("name: t\nchecks:\n  - {name: a, type: num_rows, equals: 1000, tolerance: 0}\n")
    validator = next(contract.all_checks()).validator
    assert validator.tolerance == 0
    assert validator.passes(1000) and not validator.passes(999) and not validator.passes(1001)


def test_integer_metrics() -> None:
    assert Validator("equals", low=500, tolerance=0).passes(500)
    assert Validator("max", high=0).passes(0) and not Validator("max", high=0).passes(1)


# ------------------------------------------------------------------------------- noop, all_conform


@pytest.mark.parametrize("metric", [None, NAN, INF, -INF, 0, -1e300, 12345.678])
def test_noop_never_fails(metric) -> None:
    assert Validator("noop").passes(metric)
    assert Validator("noop").passes(metric, failed_rows=99)


@pytest.mark.parametrize(
    "metric, failed_rows, ok",
    [
        (100.0, 0, True),
        (None, 0, True),
        (NAN, 0, True),  # the metric itself is not what is judged
        (100.0, 1, False),
        (100.0, None, False),  # unknown violations: fail closed
    ],
)
def test_all_conform_reads_failed_rows(metric, failed_rows, ok: bool) -> None:
    assert Validator("all_conform").passes(metric, failed_rows=failed_rows) is ok


@pytest.mark.parametrize(
    "kind, low, high",
    [
        ("min", 0, None),
        ("max", None, 10),
        ("between", 0, 10),
        ("not_between", 0, 10),
        ("equals", 5, None),
    ],
)
@pytest.mark.parametrize("metric", [None, NAN])
def test_missing_or_nan_metric_fails_every_bounded_validator(kind: str, low, high, metric) -> None:
    assert Validator(kind, low=low, high=high).passes(metric) is False


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown validator kind"):
        Validator("atleast", low=1)


@pytest.mark.parametrize(
    "yaml_check, kind, low, high",
    [
        ("{name: c, type: freshness, max_age_hours: 24, timestamp_column: ts}", "max", None, 24),
        ("{name: c, type: completeness, partition_column: d, granularity: daily}", "max", None, 0),
        ("{name: c, type: completeness, partition_column: d, granularity: daily, max_gap_count: 2}", "max", None, 2),
        ("{name: c, type: num_rows}", "noop", None, None),
    ],
)
def test_implicit_table_validators(yaml_check: str, kind: str, low, high) -> None:
    check = next(load_contract(f"name: t\nchecks:\n  - {yaml_check}\n").all_checks())
    assert (check.validator.kind, check.validator.low, check.validator.high) == (kind, low, high)


@pytest.mark.parametrize(
    "yaml_check, kind",
    [
        ("{name: c, type: whitelist, values: [a]}", "all_conform"),
        ("{name: c, type: blacklist, values: [a]}", "all_conform"),
        ("{name: c, type: pattern, format: email}", "all_conform"),
        ("{name: c, type: pattern, pattern: '^a'}", "all_conform"),
        ("{name: c, type: missing}", "noop"),
        ("{name: c, type: duplicates}", "noop"),
        ("{name: c, type: variance}", "noop"),
        ("{name: c, type: mean}", "noop"),
        ("{name: c, type: whitelist, values: [a], return: pct, min: 0.9}", "min"),
    ],
)
def test_implicit_column_validators(yaml_check: str, kind: str) -> None:
    check = next(load_contract(f"name: t\ncolumns:\n  - {{name: x, checks: [{yaml_check}]}}\n").all_checks())
    assert check.validator.kind == kind


# ------------------------------------------------------------------------------------------ limits


@pytest.mark.parametrize(
    "validator, lower, upper",
    [
        (Validator("min", low=0.3, tolerance=0.1), 0.2, None),
        (Validator("max", high=0.7, tolerance=0.1), None, 0.8),
        (Validator("between", low=1, high=2, tolerance=0.5), 0.5, 2.5),
        (Validator("equals", low=5, tolerance=1), 4.0, 6.0),
        (Validator("min", low=100), 99.999999999, None),
        (Validator("not_between", low=1, high=2), None, None),
        (Validator("noop"), None, None),
    ],
)
def test_limits_for_per_row_predicates(validator: Validator, lower, upper) -> None:
    assert (validator.lower_limit, validator.upper_limit) == (lower, upper)


# ----------------------------------------------------------------------------------------- describe


@pytest.mark.parametrize(
    "validator, text",
    [
        (Validator("between", low=100, high=1000000), "between [100, 1000000] ±1e-9"),
        (Validator("not_between", low=9000000, high=9999999), "not_between [9000000, 9999999] ±1e-9"),
        (Validator("min", low=0, tolerance=0), "min 0 ±0"),
        (Validator("min", low=0.95), "min 0.95 ±1e-9"),
        (Validator("max", high=0.01), "max 0.01 ±1e-9"),
        (Validator("equals", low=1000000.0, tolerance=0.01), "equals 1000000 ±0.01"),
        (Validator("equals", low=3.5, tolerance=0.1), "equals 3.5 ±0.1"),
        (Validator("between", low=-50.0, high=0.0), "between [-50, 0] ±1e-9"),
        (Validator("max", high=10, tolerance=2.5e-10), "max 10 ±2.5e-10"),
        (Validator("noop"), "noop"),
        (Validator("all_conform"), "implicit: all conform"),
        (Validator("max", high=24.0, metric_name="age_hours"), "age_hours max 24 ±1e-9"),
    ],
)
def test_describe(validator: Validator, text: str) -> None:
    assert validator.describe() == text


def test_describe_of_implicit_freshness_and_completeness() -> None:
    contract = load_contract(
        "name: t\nchecks:\n"
        "  - {name: f, type: freshness, max_age_hours: 24, timestamp_column: ts}\n"
        "  - {name: c, type: completeness, partition_column: d, granularity: daily}\n"
    )
    assert [c.validator.describe() for c in contract.all_checks()] == [
        "age_hours max 24 ±1e-9",
        "gap_count max 0 ±1e-9",
    ]


def test_describe_failure() -> None:
    validator = Validator("min", low=10)
    assert describe_failure(validator, None) == "metric could not be computed"
    assert describe_failure(validator, NAN) == "metric is NaN"
    assert describe_failure(validator, 5) == "metric 5 is outside min 10 ±1e-9"
    assert describe_failure(Validator("between", low=1, high=2), 2.5) == "metric 2.5 is outside between [1, 2] ±1e-9"


# ------------------------------------------------------------------------- randomised exact oracle


def _oracle(kind: str, low: str | None, high: str | None, tol: str, metric: str) -> bool:
    """The spec's inequalities in exact rational arithmetic on the decimals as written."""
    a, t = Fraction(metric), Fraction(tol)
    lo = Fraction(low) if low is not None else None
    hi = Fraction(high) if high is not None else None
    if kind == "min":
        return a >= lo - t
    if kind == "max":
        return a <= hi + t
    if kind == "between":
        return lo - t <= a <= hi + t
    if kind == "not_between":
        return a < lo - t or a > hi + t
    return abs(a - lo) <= t


def test_randomised_against_exact_arithmetic() -> None:
    rng = random.Random(20240601)

    def decimal_text() -> str:
        # Few digits, so boundaries (metric exactly at bound ± tolerance) come up often.
        return f"{rng.randint(-300, 300) / rng.choice((1, 10, 100)):.2f}".rstrip("0").rstrip(".")

    hits = {True: 0, False: 0}
    boundary_cases = 0
    for _ in range(4000):
        kind = rng.choice(["min", "max", "between", "not_between", "equals"])
        tol = rng.choice(["0", "0.1", "0.25", "1", "0.01", "3"])
        a, b = sorted((decimal_text(), decimal_text()), key=Fraction)
        low, high = (a, b) if kind in ("between", "not_between") else ((a, None) if kind != "max" else (None, a))
        if rng.random() < 0.5:  # aim at a boundary: bound ± tolerance
            bound = Fraction(low if low is not None else high)
            metric_value = bound + rng.choice((-1, 1)) * Fraction(tol)
            metric = str(float(metric_value))
            boundary_cases += 1
        else:
            metric = decimal_text()
        validator = Validator(
            kind,
            low=float(low) if low is not None else None,
            high=float(high) if high is not None else None,
            tolerance=float(tol),
        )
        want = _oracle(kind, low, high, tol, metric)
        assert validator.passes(float(metric)) is want, (kind, low, high, tol, metric)
        hits[want] += 1
    assert hits[True] > 500 and hits[False] > 500 and boundary_cases > 1000
