"""Generated rows and plain-Python reference implementations for the engine tests.

Nothing here imports the engine: every expected metric, violating row and verdict is computed
from the same Python rows with straightforward code (sorted lists, ``re``, ``len``,
``statistics``), following the semantics written in ``000_*.txt`` and DESIGN §4. The engine's
results are compared with these, never with values read back from the engine itself.
"""

from __future__ import annotations

import calendar
import dataclasses
import datetime as dt
import math
import random
import re
import statistics
from collections.abc import Callable
from decimal import Decimal
from typing import Any

UTC = dt.timezone.utc
REFERENCE_TIME = dt.datetime(2024, 1, 20, 6, 0, tzinfo=UTC)
REFERENCE_TEXT = "2024-01-20T06:00:00Z"
ZONES = (UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(dt.timedelta(hours=-8)))

# Days present in the ``day`` partition column: 2024-01-05 … 2024-01-20 except two gap days.
GAP_DAYS = (dt.date(2024, 1, 13), dt.date(2024, 1, 15))
PRESENT_DAYS = tuple(dt.date(2024, 1, d) for d in range(5, 21) if dt.date(2024, 1, d) not in GAP_DAYS)
# ``event_hour``: whole hours before the reference time, except these offsets (hours back).
MISSING_HOUR_OFFSETS = (3, 7)

STATUSES = ("pending", "shipped", "Shipped", "SHIPPED", "cancelled", "bogus", "", "ünïcode", None)
NAME_ALPHABET = "abcXYZ éüß漢字😀"

SCHEMA_DDL = (
    "rid long, id long, user string, region string, status string, qty int, amount double, "
    "price decimal(10,2), email string, name string, tags array<string>, props map<string,int>, "
    "created_at timestamp, local_ts timestamp_ntz, ts_text string, day date, day_text string, "
    "event_hour timestamp"
)
COLUMNS = [part.strip().split(" ")[0] for part in SCHEMA_DDL.split(", ")]


def make_rows(count: int = 400, seed: int = 7) -> list[dict[str, Any]]:
    """Seeded rows with nulls, duplicates, case variants, empty strings, unicode, lists, maps,
    negative numbers and timestamps in several zones."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for rid in range(count):
        if rid > 10 and rng.random() < 0.06:
            ident = rows[rng.randrange(rid)]["id"]  # a duplicate (possibly of a NULL)
        elif rng.random() < 0.03:
            ident = None
        else:
            ident = 1000 + rid
        offset_hours = rng.uniform(0, 240)
        moment = REFERENCE_TIME - dt.timedelta(hours=offset_hours, microseconds=rng.randrange(10**6))
        zone = rng.choice(ZONES)
        # The first rows cover every present day, so the partition layout is known by construction.
        day = (
            PRESENT_DAYS[rid]
            if rid < len(PRESENT_DAYS)
            else (None if rng.random() < 0.05 else rng.choice(PRESENT_DAYS))
        )
        hour_offset = rid % 30
        event_hour = (
            None
            if hour_offset in MISSING_HOUR_OFFSETS
            else (REFERENCE_TIME.replace(minute=0) - dt.timedelta(hours=hour_offset) + dt.timedelta(minutes=rid % 60))
        )
        text_kind = rng.randrange(6)
        text_moment = REFERENCE_TIME - dt.timedelta(hours=rng.uniform(1, 300))
        text_moment = text_moment.replace(microsecond=0)
        ts_text = [
            text_moment.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat(),  # +02:00
            text_moment.strftime("%Y-%m-%d %H:%M:%S"),  # naive = UTC
            text_moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "not a time",
            None,
            text_moment.strftime("%Y-%m-%d"),  # a date: midnight UTC
        ][text_kind]
        rows.append(
            {
                "rid": rid,
                "id": ident,
                "user": None if rng.random() < 0.05 else f"u{rng.randrange(30)}",
                "region": rng.choice(("eu", "us", "apac", None)),
                "status": rng.choice(STATUSES),
                "qty": None if rng.random() < 0.08 else rng.randint(-3, 10),
                "amount": None if rng.random() < 0.1 else round(rng.uniform(-100, 500), 2),
                "price": None if rng.random() < 0.1 else Decimal(f"{rng.uniform(0, 1000):.2f}"),
                "email": rng.choice((f"user{rid}@example.com", f"bad{rid}", f"U{rid}@EXAMPLE.ORG", "a@b.c", None)),
                "name": None
                if rng.random() < 0.07
                else "".join(rng.choice(NAME_ALPHABET) for _ in range(rng.randint(0, 12))),
                "tags": rng.choice((None, [], ["a"], ["a", "b"], [f"t{rid % 5}", "x", "y", "z"])),
                "props": rng.choice((None, {}, {"k": 1}, {"k": 1, "j": 2, "m": rid % 7})),
                "created_at": moment.astimezone(zone),
                "local_ts": (REFERENCE_TIME - dt.timedelta(hours=rng.uniform(0, 100))).replace(tzinfo=None),
                "ts_text": ts_text,
                "day": day,
                "day_text": None if day is None else day.isoformat(),
                "event_hour": event_hour,
            }
        )
    return rows


def to_df(spark: Any, rows: list[dict[str, Any]], ddl: str = SCHEMA_DDL) -> Any:
    """The rows as a DataFrame with an explicit schema."""
    names = [part.strip().split(" ")[0] for part in ddl.split(", ")]
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], ddl)


# --------------------------------------------------------------------------------------- filters

# Per-check filters: the SQL the contract carries and the same predicate in Python.
FILTERS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "qty > 2": lambda r: r["qty"] is not None and r["qty"] > 2,
    "region = 'eu'": lambda r: r["region"] == "eu",
    "rid % 2 = 0": lambda r: r["rid"] % 2 == 0,
    "amount < 0": lambda r: r["amount"] is not None and r["amount"] < 0,
}


def in_scope(rows: list[dict[str, Any]], check: dict[str, Any]) -> list[dict[str, Any]]:
    text = check.get("filter")
    return rows if not text else [r for r in rows if FILTERS[text](r)]


# --------------------------------------------------------------------------------------- references


def epoch_seconds(value: Any) -> float:
    """Dates are midnight UTC, naive datetimes UTC, aware ones converted."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
    return float(calendar.timegm(value.timetuple()))


def parse_instant(text: str) -> dt.datetime | None:
    """Plain-Python reading of a timestamp text: zone kept when given, naive = UTC, None if garbage."""
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def percentile_linear(values: list[float], fraction: float) -> float:
    """numpy's default: linear interpolation between closest ranks."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def length_of(value: Any) -> int:
    return len(value)  # str → code points, list → elements, dict → entries


@dataclasses.dataclass
class Expected:
    """What a check must produce, computed in plain Python."""

    metric: float | None
    failed_rows: int | None
    row_count: int
    error: bool = False
    violating: set[int] | None = None  # rids breaking a row-level reading


def _ratio(count: int, n: int, check: dict[str, Any]) -> tuple[float | None, bool]:
    if check.get("return") == "pct":
        return (count / n, False) if n else (None, True)
    return float(count), False


def _conversion(values: list[Any], column_kind: str, lower: bool) -> list[Any]:
    if column_kind == "string":
        texts = [("true" if v else "false") if isinstance(v, bool) else str(v) for v in values]
        return [t.lower() for t in texts] if lower else texts
    return [float(v) if isinstance(v, str) else v for v in values]


def expected_for(
    check: dict[str, Any],
    column: str | None,
    rows: list[dict[str, Any]],
    column_kind: str = "string",
    reference: dt.datetime = REFERENCE_TIME,
) -> Expected:
    """The expected outcome of ``check`` (a contract check dict) on ``column`` over ``rows``."""
    kind = check["type"]
    scoped = in_scope(rows, check)
    n = len(scoped)

    def result(
        metric: float | None, failed: int | None = None, violating: set[int] | None = None, error: bool = False
    ) -> Expected:
        return Expected(metric, failed, n, error or metric is None, violating)

    if column is None:
        if kind == "num_rows":
            return result(float(n))
        if kind == "duplicates":
            tuples = [tuple(r[c] for c in check["columns"]) for r in scoped]
            distinct = len({t for t in tuples if None not in t})
            metric, error = _ratio(n - distinct, n, check)
            return result(metric, error=error)
        if kind == "freshness":
            name = check["timestamp_column"]
            instants = []
            for r in scoped:
                value = r[name]
                if value is None:
                    continue
                if isinstance(value, str):
                    parsed = parse_instant(value)
                    if parsed is not None:
                        instants.append(parsed.timestamp())
                else:
                    instants.append(epoch_seconds(value))
            if not instants:
                return result(None)
            chosen = min(instants) if check.get("aggregation") == "min" else max(instants)
            return result((reference.timestamp() - chosen) / 3600.0)
        raise AssertionError(f"no reference for table-level {kind}")

    values = [r[column] for r in scoped]
    non_null = [v for v in values if v is not None]
    rids_non_null = [(r["rid"], r[column]) for r in scoped if r[column] is not None]

    if kind == "count":
        return result(float(len(non_null)))
    if kind == "missing":
        nulls = {r["rid"] for r in scoped if r[column] is None}
        metric, error = _ratio(len(nulls), n, check)
        return result(metric, len(nulls), nulls, error)
    if kind == "duplicates":
        counts: dict[Any, int] = {}
        for v in non_null:
            counts[v] = counts.get(v, 0) + 1
        violating = {r["rid"] for r in scoped if r[column] is None or counts[r[column]] > 1}
        metric, error = _ratio(n - len(counts), n, check)
        return result(metric, len(violating), violating, error)
    if kind == "cardinality":
        return result(float(len(set(non_null))))
    if kind in ("whitelist", "blacklist"):
        lower = column_kind == "string" and check.get("case_sensitive") is False
        allowed = set(_conversion(check["values"], column_kind, lower))
        member = {rid: ((v.lower() if lower else v) in allowed) for rid, v in rids_non_null}
        conforming = {rid for rid, m in member.items() if m == (kind == "whitelist")}
        violating = set(member) - conforming
        metric, error = _ratio(len(conforming), n, check)
        return result(metric, len(violating), violating, error)
    if kind == "pattern":
        regex = check.get("pattern") or FORMATS[check["format"]]
        flags = re.IGNORECASE if "IGNORECASE" in (check.get("flags") or []) else 0
        conforming = {rid for rid, v in rids_non_null if re.search(regex, str(v), flags)}
        violating = {rid for rid, _ in rids_non_null} - conforming
        metric, error = _ratio(len(conforming), n, check)
        return result(metric, len(violating), violating, error)
    if kind in ("min_length", "max_length", "avg_length"):
        lengths = {rid: length_of(v) for rid, v in rids_non_null}
        if check.get("return"):
            low, high = check.get("length_min"), check.get("length_max")
            conforming = {
                rid for rid, size in lengths.items() if (low is None or size >= low) and (high is None or size <= high)
            }
            violating = set(lengths) - conforming
            metric, error = _ratio(len(conforming), n, check)
            return result(metric, len(violating), violating, error)
        if not lengths:
            return result(None)
        sizes = list(lengths.values())
        metric = {"min_length": min, "max_length": max}.get(kind, lambda s: sum(s) / len(s))(sizes)
        violating = _bound_violations(check, kind.replace("_length", ""), lengths)
        return result(float(metric), None if violating is None else len(violating), violating)
    # statistics
    numbers = {rid: (epoch_seconds(v) if isinstance(v, (dt.date, dt.datetime)) else v) for rid, v in rids_non_null}
    plain = list(numbers.values())
    if kind in ("min", "max"):
        if not plain:
            return result(None)
        violating = _bound_violations(check, kind, numbers)
        metric = float(min(plain) if kind == "min" else max(plain))
        return result(metric, None if violating is None else len(violating), violating)
    if not plain:
        return result(None)
    floats = [float(v) for v in plain]
    if kind == "mean":
        return result(math.fsum(floats) / len(floats))
    if kind == "sum":
        return result(float(sum(plain)))  # exact for int and Decimal
    if kind in ("variance", "stddev"):
        if len(floats) < 2:
            return result(None)
        variance = statistics.variance(floats)
        return result(variance if kind == "variance" else math.sqrt(variance))
    if kind == "percentile":
        return result(percentile_linear(floats, check["percentile"]))
    raise AssertionError(f"no reference for column-level {kind}")


def _bound_violations(check: dict[str, Any], direction: str, values: dict[int, Any]) -> set[int] | None:
    """Rows crossing the validator's bound, for min/max (and their length forms)."""
    tol = check.get("tolerance", 1e-9)
    if direction == "min":
        bound = check.get("min", check.get("equals"))
        if "between" in check:
            bound = check["between"][0]
        if bound is None:
            return None
        return {rid for rid, v in values.items() if v < bound - tol}
    if direction == "max":
        bound = check.get("max", check.get("equals"))
        if "between" in check:
            bound = check["between"][1]
        if bound is None:
            return None
        return {rid for rid, v in values.items() if v > bound + tol}
    return None


FORMATS = {
    "email": r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "date": r"^\d{4}-\d{2}-\d{2}$",
}


def verdict(check: dict[str, Any], metric: float | None, failed_rows: int | None) -> bool:
    """The spec's inequalities, written out independently of the contract package."""
    tol = check.get("tolerance", 1e-9)
    if check["type"] == "freshness":
        return metric is not None and metric <= check["max_age_hours"] + tol
    if check["type"] == "completeness":
        return metric is not None and metric <= check.get("max_gap_count", 0) + tol
    present = [k for k in ("min", "max", "between", "not_between", "equals") if k in check]
    if not present:
        if check["type"] in ("whitelist", "blacklist", "pattern"):
            return failed_rows == 0
        return True
    if metric is None or math.isnan(metric):
        return False
    key = present[0]
    if key == "min":
        return metric >= check["min"] - tol
    if key == "max":
        return metric <= check["max"] + tol
    if key == "between":
        low, high = check["between"]
        return low - tol <= metric <= high + tol
    if key == "not_between":
        low, high = check["not_between"]
        return metric < low - tol or metric > high + tol
    return abs(metric - check["equals"]) <= tol


def close(actual: float | None, expected: float | None, rel: float = 1e-9) -> bool:
    if actual is None or expected is None:
        return actual is expected
    return math.isclose(actual, expected, rel_tol=rel, abs_tol=1e-9)
