"""DataHub ``condition`` values and the contract validators that mean exactly the same (plain Python).

Split from :mod:`.datahub` (the importer); ``metric_validator`` is also the reading the export inverts.

Example::

    >>> from .common import Source
    >>> metric_validator(Source.parse("{}", "x.yaml"), Condition("greater_than", Decimal(10)), (), "count")
    {'min': 11}
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from typing import Any

from .common import Source, plain

HUNDRED = Decimal(100)


@dataclasses.dataclass(frozen=True)
class Condition:
    """A parsed DataHub ``condition``: ``kind`` and its value(s) as exact decimals (or raw values)."""

    kind: str
    value: Any = None
    low: Decimal | None = None
    high: Decimal | None = None

    def describe(self) -> str:
        if self.kind in ("between", "length_between"):
            return f"{self.kind} {plain(self.low)} and {plain(self.high)}"  # type: ignore[arg-type]
        if self.value is None:
            return self.kind
        if isinstance(self.value, Decimal):
            return f"{self.kind} {plain(self.value)}"
        if isinstance(self.value, list):
            return f"{self.kind} [{', '.join(str(v) for v in self.value)}]"
        return f"{self.kind} {self.value}"


# --------------------------------------------------------------------------------------- validators
# A metric reading is "count" (an integer: strict bounds shift by one exactly), "pct" (a 0–1 ratio:
# strict bounds become not_between against the other end of [0, 1]) or "float" (strict bounds have
# no exact equivalent: refused). "pct" and "float" readings are compared with tolerance 0, so the
# contract's default 1e-9 float-noise tolerance cannot admit a value DataHub would reject.

FLIP = {
    "greater_than": "less_than",
    "less_than": "greater_than",
    "greater_than_or_equal_to": "less_than_or_equal_to",
    "less_than_or_equal_to": "greater_than_or_equal_to",
}


def metric_validator(src: Source, cond: Condition, path: tuple, reading: str) -> dict[str, Any] | None:
    """Contract validator keys meaning exactly ``metric <cond>``; None (refused, located) otherwise.

    >>> src = Source.parse("{}", "x.yaml")
    >>> metric_validator(src, Condition("greater_than", Decimal(10)), (), "count")
    {'min': 11}
    >>> metric_validator(src, Condition("less_than", Decimal("0.05")), (), "pct")
    {'not_between': [0.05, 1], 'tolerance': 0}
    """
    exact = {} if reading == "count" else {"tolerance": 0}
    kind, value = cond.kind, cond.value
    if kind == "between":
        if cond.low > cond.high:  # type: ignore[operator]
            low, high = plain(cond.low), plain(cond.high)  # type: ignore[arg-type]
            src.refuse(path, f"between: min {low} is greater than max {high}")
            return None
        return {"between": [plain(cond.low), plain(cond.high)], **exact}  # type: ignore[arg-type]
    if kind == "equal_to":
        return {"equals": plain(value), **exact}
    if kind == "not_equal_to":
        # not_between [v, v] passes iff actual < v or actual > v: exactly "≠ v", infinities included.
        return {"not_between": [plain(value), plain(value)], "tolerance": 0}
    if kind == "greater_than_or_equal_to":
        return {"min": plain(value), **exact}
    if kind == "less_than_or_equal_to":
        return {"max": plain(value), **exact}
    strict_greater = kind == "greater_than"
    if reading == "count":
        # An integer count is > v exactly when it is ≥ floor(v) + 1 (and < v when ≤ ceil(v) − 1).
        if strict_greater:
            return {"min": math.floor(value) + 1}
        return {"max": math.ceil(value) - 1}
    if reading == "pct":
        if not Decimal(0) <= value <= Decimal(1):
            src.refuse(path, f"{kind} {plain(value * HUNDRED)}% is outside 0–100%")
            return None
        # A ratio lies in [0, 1]: "> v" is "not in [0, v]", "< v" is "not in [v, 1]".
        span = [0, plain(value)] if strict_greater else [plain(value), 1]
        return {"not_between": span, "tolerance": 0}
    src.refuse(
        path,
        f"strict '{kind}' on a non-integer metric has no exact equivalent in the contract "
        "language (min/max are inclusive, and not_between would accept ±Infinity); use "
        f"'{kind}_or_equal_to' with the bound you mean",
    )
    return None


def parse_condition(
    src: Source, raw: Any, path: tuple, allowed: tuple[str, ...], text_values: bool = False
) -> Condition | None:
    """Read a DataHub ``condition`` mapping (``type`` + ``value`` or ``min``/``max``)."""
    data = src.mapping(raw, path, "'condition'")
    if data is None:
        return None
    kind = data.get("type")
    if kind not in allowed:
        src.refuse(path + ("type",), f"unknown condition type {kind!r}; supported here: {', '.join(allowed)}")
        return None
    if kind in ("between", "length_between"):
        src.keys(data, ("type", "min", "max"), path, f"a '{kind}' condition")
        low = src.number(data.get("min"), path + ("min",), f"'{kind}' min")
        high = src.number(data.get("max"), path + ("max",), f"'{kind}' max")
        if low is None or high is None:
            return None
        return Condition(kind, low=low, high=high)
    if kind in ("is_null", "is_not_null", "not_empty"):
        src.keys(data, ("type",), path, f"a '{kind}' condition")
        return Condition(kind)
    src.keys(data, ("type", "value"), path, f"a '{kind}' condition")
    value = data.get("value")
    if kind in ("in", "not_in"):
        items = src.items(value, path + ("value",), f"'{kind}' value")
        if not items or any(v is None or isinstance(v, (list, dict)) for v in items):
            src.refuse(path + ("value",), f"'{kind}' needs a non-empty list of scalar values, got {value!r}")
            return None
        return Condition(kind, list(items))
    if kind == "matches_regex":
        if not isinstance(value, str) or not value:
            src.refuse(path + ("value",), f"'matches_regex' needs a regular expression, got {value!r}")
            return None
        return Condition(kind, value)
    if text_values and kind in ("equal_to", "not_equal_to") and isinstance(value, str):
        return Condition(kind, value)  # a row compared with a text value (→ whitelist / blacklist)
    number = src.number(value, path + ("value",), f"'{kind}' value")
    return None if number is None else Condition(kind, number)
