"""Validator semantics: the acceptance condition of a check, with the spec's exact inequalities.

- ``min``:          passes if actual ≥ min − tolerance
- ``max``:          passes if actual ≤ max + tolerance
- ``between``:      passes if actual ≥ low − tolerance and actual ≤ high + tolerance
- ``not_between``:  passes if actual < low − tolerance or actual > high + tolerance
- ``equals``:       passes if |actual − expected| ≤ tolerance
- ``noop``:         records the metric, never fails on its value
- ``all_conform``:  implied for ``whitelist``/``blacklist``/``pattern`` without a validator (DESIGN §4):
  passes only when no non-null value breaks the rule, i.e. ``failed_rows == 0``

A missing or NaN metric never passes a bounded validator (fail closed).

The inequalities are evaluated on the numbers as written — each float read as its shortest decimal
form (``repr``) — in exact decimal arithmetic. In binary floating point ``|3.4 − 3.5|`` is
``0.10000000000000009``, so the spec's own ``equals: 3.5, tolerance: 0.1`` would reject 3.4, and
``0.7 + 0.1`` is ``0.7999999999999999``, so ``max: 0.7, tolerance: 0.1`` would reject 0.8.

>>> Validator("between", low=100, high=1000).passes(1000 + 1e-10)
True
>>> Validator("not_between", low=5, high=10).passes(10)
False
>>> Validator("noop").passes(None)
True
"""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal

DEFAULT_TOLERANCE = 1e-9
KINDS = ("min", "max", "between", "not_between", "equals", "noop", "all_conform")
EXPLICIT_KINDS = ("min", "max", "between", "not_between", "equals")


def format_number(value: float | int | None) -> str:
    """Short, exact-looking number: ``1000000``, ``0.95``, ``1e-9``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    text = repr(number)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else ""
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


def exact(value: float | int) -> Decimal:
    """``value`` as the decimal it is written as: ``exact(0.1) == Decimal("0.1")``, not 0.1000000000000000055…."""
    return Decimal(repr(float(value)))


def _exact_bound(value: float | None) -> Decimal:
    """A bound the validator's kind requires (set by construction), as :func:`exact` reads it."""
    assert value is not None, "the validator's kind declares this bound"
    return exact(value)


@dataclasses.dataclass(frozen=True)
class Validator:
    """An acceptance condition over one float metric."""

    kind: str
    low: float | None = None
    high: float | None = None
    tolerance: float = DEFAULT_TOLERANCE
    metric_name: str | None = None  # e.g. "age_hours" for the implicit freshness validator

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown validator kind {self.kind!r}")

    @property
    def is_noop(self) -> bool:
        return self.kind == "noop"

    def passes(self, metric: float | None, failed_rows: int | None = None) -> bool:
        """Whether ``metric`` is accepted. ``failed_rows`` is only read by ``all_conform``."""
        if self.kind == "noop":
            return True
        if self.kind == "all_conform":
            return failed_rows is not None and failed_rows == 0
        if metric is None:
            return False
        if math.isnan(float(metric)):
            return False
        actual, tol = exact(metric), exact(self.tolerance)
        if self.kind == "min":
            return actual >= _exact_bound(self.low) - tol
        if self.kind == "max":
            return actual <= _exact_bound(self.high) + tol
        if self.kind == "between":
            return _exact_bound(self.low) - tol <= actual <= _exact_bound(self.high) + tol
        if self.kind == "not_between":
            return actual < _exact_bound(self.low) - tol or actual > _exact_bound(self.high) + tol
        # equals
        return abs(actual - _exact_bound(self.low)) <= tol

    @property
    def lower_bound(self) -> float | None:
        """The smallest acceptable value (used by per-row readings of min/min_length checks)."""
        if self.kind in ("min", "between", "equals"):
            return self.low
        return None

    @property
    def upper_bound(self) -> float | None:
        """The largest acceptable value (used by per-row readings of max/max_length checks)."""
        if self.kind == "max":
            return self.high
        if self.kind == "between":
            return self.high
        if self.kind == "equals":
            return self.low
        return None

    @property
    def lower_limit(self) -> float | None:
        """``lower_bound − tolerance`` computed exactly: the smallest accepted value, for per-row predicates.

        >>> Validator("min", low=0.3, tolerance=0.1).lower_limit
        0.2
        """
        bound = self.lower_bound
        return None if bound is None else float(exact(bound) - exact(self.tolerance))

    @property
    def upper_limit(self) -> float | None:
        """``upper_bound + tolerance`` computed exactly: the largest accepted value, for per-row predicates.

        >>> Validator("max", high=0.7, tolerance=0.1).upper_limit
        0.8
        """
        bound = self.upper_bound
        return None if bound is None else float(exact(bound) + exact(self.tolerance))

    def describe(self) -> str:
        """Human-readable condition, as stored in the results table's ``validator`` column.

        >>> Validator("between", low=100, high=1000000).describe()
        'between [100, 1000000] ±1e-9'
        """
        tol = f" ±{format_number(self.tolerance)}"
        prefix = f"{self.metric_name} " if self.metric_name else ""
        if self.kind == "noop":
            return "noop"
        if self.kind == "all_conform":
            return "implicit: all conform"
        if self.kind == "min":
            return f"{prefix}min {format_number(self.low)}{tol}"
        if self.kind == "max":
            return f"{prefix}max {format_number(self.high)}{tol}"
        if self.kind == "equals":
            return f"{prefix}equals {format_number(self.low)}{tol}"
        return f"{prefix}{self.kind} [{format_number(self.low)}, {format_number(self.high)}]{tol}"


def describe_failure(validator: Validator, metric: float | None) -> str:
    """Why ``metric`` was rejected, in one line."""
    if metric is None:
        return "metric could not be computed"
    if isinstance(metric, float) and math.isnan(metric):
        return "metric is NaN"
    return f"metric {format_number(metric)} is outside {validator.describe()}"


_SLUG = re.compile(r"[^0-9a-z]+")


def slug(text: str) -> str:
    """Stable identifier fragment: ``"Order ID is unique"`` → ``order_id_is_unique``."""
    return _SLUG.sub("_", text.lower()).strip("_") or "check"
