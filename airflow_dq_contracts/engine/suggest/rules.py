"""The suggestion rules: a :class:`~.model.Profile` → a draft contract with its evidence (plain Python).

Every rule is written so that the suggested contract passes on the profiled data and on later
clean data from the same source, and fails on the faults a pipeline really produces (docs/engine.md,
"Suggestion rules", is the user's version of this list):

* **nested fields** — every struct field at any depth is a path column (``address.city``) profiled
  like any column; the fields of an array of structs (``items[].sku``) and the elements of an array
  of scalars (``tags[]``) get their element type, NULL evidence, ranges and lengths over every value
  (no allowed values or format); a row with a NULL parent or an empty array has no value, not a
  NULL (``ColumnProfile.absent``). Maps are declared as a whole. Nested fields are never keys nor
  the freshness column;
* **types** — each column's Spark type as the contract's type; schema conformance (P0, gate) then
  catches a renamed, dropped or retyped column. In a text input a string column whose values are
  all of one type but for missing-value tokens (``NA``, ``NULL``, ``-``…) gets that type, and the
  tokens go to ``dataset.null_values`` with their counts as evidence;
* **nullable: false** where no NULL was seen (P1 constraint: the NULL rows are quarantined); a
  column with NULLs gets a ``missing`` share ceiling instead (P2, flag);
* **keys** — a column with no duplicate and no NULL is a key when the evidence is structural, not
  luck: a name that marks an identifier (``id``, ``*_id``, ``key``, ``*_key``, ``uuid``, ``*_uuid``,
  ``orderId`` — the chance caveat for integers stays as a comment), integers whose range is dense
  (≤ rows²/10) or vast (≥ 500·rows², where random collisions are improbable), strings in uuid format
  or named like a code (``code``, ``number``…);
  the first is ``primary_key``, each gets explicit P0 ``missing``/``duplicates`` checks (gate).
  With no single-column key, a two-column key probed without duplicates (table ``duplicates``, P0);
* **allowed_values** — strings with at most :data:`MAX_ALLOWED_VALUES` distinct values, none of
  them seen only once (Good–Turing: singletons announce values not seen yet) (P1, quarantine);
* **format / pattern** — a known format (email, uuid, date, datetime, phone, …) or an inferred
  code shape that every non-null value matches becomes the column's ``format``/``pattern``
  (P1, quarantine); 99.9 % ≤ share < 100 % becomes a ``pattern`` share floor (P2, flag);
* **ranges** — numbers get ``min_value``/``max_value`` widened on each side by the observed spread
  (max − min; a constant by half its magnitude, at least 1), never crossing zero when the data did
  not, rounded outwards (P1, quarantine). Keys, dates and timestamps get none: they move with time;
* **lengths** — strings (without allowed values) and lists: min/max length widened by half the
  observed length spread (at least 1), exact when every value had the same length (P1, quarantine);
* **volume** — ``num_rows`` in ``[0.6, 2] × rows`` (P2, flag), or, with a results table holding at
  least :data:`MIN_HISTORY_POINTS` earlier runs, a ``baseline`` band around the trailing mean whose
  width covers the quietest and busiest day of that history with 20 % / 25 % to spare;
* **freshness** — the SLA on the newest timestamp column: 1.5 × the time the data spans (a date
  column spans its whole day), or 1.5 × the observed age when a reference time was given, and at
  least 36 h for a daily batch (partitioned, or spanning ≥ 6 h) (P1, gate);
* **completeness** — partition columns with daily periods: no gap in the periods the data covers (P1, gate).

Severities follow one rule: keys, schema and arrival (freshness, completeness) **gate**; value
rules on single rows **quarantine** (the enforcement default P1); distribution rules **flag** (P2).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Sequence
from typing import Any

from airflow_dq_contracts.timeutil import format_time

from .model import ColumnProfile, Profile

MAX_ALLOWED_VALUES = 30
FORMAT_SHARE = 0.999
VOLUME_BAND = (0.6, 2.0)
MIN_HISTORY_POINTS = 3
HISTORY_LOOKBACK_DAYS = 28
FRESHNESS_FACTOR = 1.5
#: Data spanning this many hours (or partitioned) is read as a daily batch: freshness of at least a day and a half.
BATCH_SPAN_HOURS = 6
DAILY_FRESHNESS_HOURS = 36
MISSING_MARGIN = 0.05
VOLUME_CHECK_NAME = "Row count within its band"

SEVERITY_KEY = "P0"
SEVERITY_VALUE = "P1"
SEVERITY_ARRIVAL = "P1"
SEVERITY_DISTRIBUTION = "P2"

#: Column names that read as identifiers (``order_id``, ``id``, ``orderId``, ``sku_code``).
KEY_NAME = re.compile(r"((?i:(^|_)(id|key|uuid|guid|code|number|no|nr))$)|([a-z0-9](Id|ID|Key|Uuid|Code)$)")
#: Column names that mark an identifier: a unique, non-NULL column so named is a key whatever its values.
IDENTIFIER_NAME = re.compile(r"((?i:(^|[_\-. ])(id|key|uuid))$)|([a-z0-9](Id|ID|Key|KEY|Uuid|UUID)$)")
#: Values text files write for a missing value (R, pandas, spreadsheets, SQL dumps), tried by the types pass.
NULL_TOKENS = (
    "NA",
    "N/A",
    "n/a",
    "#N/A",
    "NULL",
    "null",
    "Null",
    "None",
    "none",
    "nan",
    "NaN",
    "NAN",
    "",
    "-",
    "--",
    "?",
    ".",
)
_TIME_NAME = re.compile(r"(created|updated|modified|event|ingest|load|_ts$|_at$|time)", re.IGNORECASE)
_RANGED = ("integral", "fractional", "decimal")


@dataclasses.dataclass
class Draft:
    """A suggested contract: the document (``load_contract`` accepts it) and comments by document path."""

    document: dict[str, Any]
    comments: dict[tuple[Any, ...], list[str]] = dataclasses.field(default_factory=dict)
    header: list[str] = dataclasses.field(default_factory=list)

    def note(self, path: tuple[Any, ...], text: str) -> None:
        """Add a comment line shown above the element at ``path``."""
        self.comments.setdefault(path, []).append(text)


# ------------------------------------------------------------------------------------ numbers


def scalar_text(value: str) -> str:
    """A value quoted for a comment (``'NA'``, ``''``)."""
    return repr(value)


def count_text(value: float) -> str:
    """A count with thousands separators (``1,000,000``)."""
    return f"{int(value):,}"


def number_text(value: float) -> str:
    """A measured number, short (``12.5``, ``1e+12``)."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}"


def _clean(value: float, integral: bool) -> float | int:
    if integral:
        return int(value)
    rounded = round(value, 9)
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded


def widened_range(low: float, high: float, integral: bool) -> tuple[float | int, float | int]:
    """The range rule: widen by the spread on each side, keep the sign, round outwards.

    >>> widened_range(68.2, 131.9, False)
    (4, 196)
    >>> widened_range(1, 9, True)
    (0, 17)
    >>> widened_range(-5.0, -1.0, False)
    (-9, 0)
    >>> widened_range(3, 3, True)
    (1, 5)
    """
    spread = high - low
    margin = spread if spread > 0 else max(abs(low) * 0.5, 1.0)
    lo, hi = low - margin, high + margin
    if low >= 0:
        lo = max(lo, 0.0)
    if high <= 0:
        hi = min(hi, 0.0)
    if integral:
        return _clean(math.floor(lo), True), _clean(math.ceil(hi), True)
    step = 10.0 ** (math.floor(math.log10(margin)) - 1)
    return _clean(math.floor(lo / step) * step, False), _clean(math.ceil(hi / step) * step, False)


def length_bounds(shortest: int, longest: int) -> tuple[int, int]:
    """The length rule: exact when every value had one length, else widen by half the spread (≥ 1).

    >>> length_bounds(36, 36), length_bounds(12, 30)
    ((36, 36), (3, 39))
    """
    spread = longest - shortest
    if spread == 0:
        return shortest, longest
    margin = max(1, math.ceil(spread / 2))
    return max(0, shortest - margin), longest + margin


def _by_chance(profile: ColumnProfile, rows: int) -> str | None:
    """The birthday caveat of an integer column whose range is neither dense nor vast, else None."""
    if profile.family != "integral" or profile.minimum is None or profile.maximum is None:
        return None
    span = profile.maximum - profile.minimum + 1
    if span <= rows * rows / 10 or span >= 500 * rows * rows:
        return None
    return f"{count_text(rows)} random draws from a range of {number_text(span)} could be duplicate-free by chance"


def key_caveat(profile: ColumnProfile, rows: int) -> str | None:
    """What a key suggested by its name alone cannot rule out (a comment, not a veto), or None.

    >>> item = ColumnProfile("order_id", "bigint", "long", "integral", minimum=5, maximum=999_000)
    >>> key_caveat(item, 1000)
    'caveat: 1,000 random draws from a range of 998,996 could be duplicate-free by chance; the key checks tell on later data'
    """
    chance = _by_chance(profile, rows)
    return f"caveat: {chance}; the key checks tell on later data" if chance else None


def key_evidence(profile: ColumnProfile, rows: int) -> tuple[bool, str]:
    """Whether a duplicate-free, NULL-free column is a key by the structural rule, and why."""
    named = IDENTIFIER_NAME.search(profile.name) is not None
    if profile.family == "integral" and profile.minimum is not None and profile.maximum is not None:
        span = profile.maximum - profile.minimum + 1
        if span <= rows * rows / 10:
            return True, f"values {number_text(profile.minimum)} … {number_text(profile.maximum)} are dense"
        if span >= 500 * rows * rows:
            return True, "values spread over a range where random collisions are improbable"
        if named:
            return True, "named like an identifier"
        return False, f"not suggested as a key: {_by_chance(profile, rows)}"
    if profile.family == "string":
        if profile.conforming.get("uuid") == profile.non_null:
            return True, "every value is a uuid"
        if named or KEY_NAME.search(profile.name):
            return True, "named like an identifier"
        return False, "not suggested as a key: a string column not named like an identifier"
    return False, ""


# ------------------------------------------------------------------------------------ columns


def _column(draft: Draft, index: int, item: ColumnProfile, profile: Profile, is_primary: bool) -> dict[str, Any]:
    rows = profile.rows
    path: tuple[Any, ...] = ("columns", index)
    spec: dict[str, Any] = {"name": item.name, "type": item.declared_type}
    if item.read_from:
        tokens = ", ".join(f"{scalar_text(t)} {count_text(n)}" for t, n in item.token_nulls.items())
        draft.note(
            path + ("type",),
            f"Spark type {item.read_from} in the data; every value"
            + (f" but the missing-value tokens ({tokens}, read as NULL)" if tokens else "")
            + f" reads as {item.spark_type}",
        )
    else:
        draft.note(path + ("type",), f"Spark type {item.spark_type}")
        if item.token_nulls:
            tokens = ", ".join(f"{scalar_text(t)} {count_text(n)}" for t, n in item.token_nulls.items())
            draft.note(path + ("type",), f"read as NULL (dataset.null_values): {tokens}")
    checks: list[dict[str, Any]] = []
    sampled = " (sample)" if profile.sample else ""

    # Keys first: they decide which other rules apply.
    is_key = False
    if item.duplicates == 0 and item.nulls == 0 and rows > 1:
        is_key, why = key_evidence(item, rows)
        if is_key:
            spec["primary_key" if is_primary else "unique"] = True
            draft.note(
                path + ("primary_key" if is_primary else "unique",),
                f"no duplicate and no NULL in {count_text(rows)} rows{sampled}; {why}",
            )
            caveat = key_caveat(item, rows)
            if caveat:
                draft.note(path + ("primary_key" if is_primary else "unique",), caveat)
            checks.append({"name": "Key is present", "type": "missing", "max": 0, "severity": SEVERITY_KEY})
            checks.append({"name": "Key is unique", "type": "duplicates", "max": 0, "severity": SEVERITY_KEY})
        elif why:
            draft.note(path + ("type",), why)
    elif item.duplicates:
        draft.note(path + ("type",), f"not a key: {count_text(item.duplicates)} duplicate values")

    if not is_key:
        if item.nulls == 0 and rows > 0:
            spec["nullable"] = False
            bound = f" (NULL share below {3 / rows:.2g} at 95 %)" if profile.sample else ""
            nulls = "no row with a NULL value" if item.path == "elements" else "0 NULLs"
            draft.note(path + ("nullable",), f"{nulls} in {count_text(rows)} rows{sampled}{bound}{_absent(item)}")
        elif item.nulls:
            rate = item.null_rate
            ceiling = rate + max(MISSING_MARGIN, 5 * math.sqrt(rate * (1 - rate) / rows))
            if ceiling < 1:
                ceiling = math.ceil(ceiling * 1000) / 1000
                checks.append(
                    {
                        "name": "NULL share stays low",
                        "type": "missing",
                        "return": "pct",
                        "max": ceiling,
                        "severity": SEVERITY_DISTRIBUTION,
                    }
                )
                draft.note(
                    path + ("checks", len(checks) - 1),
                    f"{count_text(item.nulls)} {'rows with a NULL value' if item.path == 'elements' else 'NULLs'} "
                    f"in {count_text(rows)} rows{sampled} ({rate:.2%}); "
                    f"ceiling = share + max({MISSING_MARGIN}, 5 σ)",
                )

    allowed = _allowed_values(draft, path, item, profile)
    if allowed is not None:
        spec["allowed_values"] = allowed
    elif item.family == "string":
        _format(draft, path, item, profile, spec, checks)

    if item.family in _RANGED and not is_key and item.minimum is not None and item.maximum is not None:
        low, high = widened_range(item.minimum, item.maximum, item.family == "integral")
        spec["min_value"], spec["max_value"] = low, high
        draft.note(
            path + ("min_value",),
            f"observed {number_text(item.minimum)} … {number_text(item.maximum)}{sampled}; "
            "widened by the spread on each side",
        )
    if item.family in ("string", "list", "map") and allowed is None and item.min_length is not None:
        assert item.max_length is not None
        low_len, high_len = length_bounds(item.min_length, item.max_length)
        unit = "characters" if item.family == "string" else "elements"
        evidence = f"lengths {item.min_length} … {item.max_length} {unit}{sampled}"
        if low_len > 0:
            checks.append({"name": "Length at least", "type": "min_length", "min": low_len, "severity": SEVERITY_VALUE})
            draft.note(path + ("checks", len(checks) - 1), evidence)
        checks.append({"name": "Length at most", "type": "max_length", "max": high_len, "severity": SEVERITY_VALUE})
        draft.note(path + ("checks", len(checks) - 1), evidence)
    if checks:
        spec["checks"] = checks
    return spec


def _absent(item: ColumnProfile) -> str:
    """The rows of a nested field with no value at all (they pass its checks), as evidence text."""
    if not item.absent:
        return ""
    why = "a NULL or empty array" if item.path == "elements" else "a NULL parent"
    return f"; {count_text(item.absent)} rows have no value ({why}: not a NULL, docs/contracts.md 'Nested fields')"


def _allowed_values(draft: Draft, path: tuple[Any, ...], item: ColumnProfile, profile: Profile) -> list[str] | None:
    counts = item.values
    if item.family != "string" or not counts:
        return None
    distinct = len(counts)
    singletons = sorted(v for v, n in counts.items() if n == 1)
    if distinct > MAX_ALLOWED_VALUES:
        draft.note(path + ("type",), f"{distinct} distinct values: too many for allowed_values")
        return None
    if singletons:
        draft.note(
            path + ("type",),
            f"{distinct} distinct values, {len(singletons)} seen only once ({', '.join(singletons[:3])}…): "
            "other values are likely, so no allowed_values",
        )
        return None
    ordered = sorted(counts, key=lambda v: (-counts[v], v))
    shown = ", ".join(f"{v} {count_text(counts[v])}" for v in ordered[:8])
    draft.note(
        path + ("allowed_values",), f"{distinct} distinct values{' (sample)' if profile.sample else ''}: {shown}"
    )
    missing_like = [v for v in ordered if v in NULL_TOKENS]
    if missing_like:
        draft.note(
            path + ("allowed_values",),
            f"{', '.join(scalar_text(v) for v in missing_like)} may mean a missing value: "
            "if so, list it in dataset.null_values and drop it here",
        )
    return sorted(counts)


def _format(
    draft: Draft,
    path: tuple[Any, ...],
    item: ColumnProfile,
    profile: Profile,
    spec: dict[str, Any],
    checks: list[dict[str, Any]],
) -> None:
    if not item.non_null:
        return
    for what, conforming in item.conforming.items():
        share = conforming / item.non_null
        label = what[len("pattern:") :] if what.startswith("pattern:") else what
        evidence = f"{count_text(conforming)} of {count_text(item.non_null)} values match {label} ({share:.3%})"
        if conforming == item.non_null:
            key = "pattern" if what.startswith("pattern:") else "format"
            spec[key] = label
            draft.note(path + (key,), evidence)
            return
        if share >= FORMAT_SHARE:
            rate = conforming / profile.rows
            floor = max(0.0, rate - 0.01 - 5 * math.sqrt(rate * (1 - rate) / profile.rows))
            check: dict[str, Any] = {
                "name": "Values mostly match the format",
                "type": "pattern",
                "return": "pct",
                "min": math.floor(floor * 1000) / 1000,
                "severity": SEVERITY_DISTRIBUTION,
            }
            check["pattern" if what.startswith("pattern:") else "format"] = label
            checks.append(check)
            draft.note(path + ("checks", len(checks) - 1), evidence + "; floor on the share of all rows")
            return
        draft.note(path + ("type",), evidence + ": below 99.9 %, no format")


# ------------------------------------------------------------------------------------ table


def _volume(draft: Draft, profile: Profile) -> dict[str, Any]:
    estimated = profile.estimated_rows
    evidence = f"{count_text(estimated)} rows"
    if profile.sample:
        spread = 3 * math.sqrt(estimated * (1 - profile.sample) / profile.sample)
        evidence = (
            f"≈ {count_text(estimated)} rows (from {count_text(profile.rows)} sampled at {profile.sample:g}, "
            f"± {count_text(spread)} at 3 σ)"
        )
    else:
        spread = 0.0
    points = _history_points(profile.history)
    if len(points) >= MIN_HISTORY_POINTS:
        values = [value for _, value in points]
        mean = sum(values) / len(values)
        low = min(0.8, math.floor(0.8 * min(values) / mean * 100) / 100) if mean > 0 else 0.5
        high = max(1.25, math.ceil(1.25 * max(values) / mean * 100) / 100) if mean > 0 else 2.0
        names = [name for _, _, name in profile.history if name]
        name = max(set(names), key=names.count) if names else VOLUME_CHECK_NAME
        check = {
            "name": name,
            "type": "num_rows",
            "baseline": {
                "lookback_days": HISTORY_LOOKBACK_DAYS,
                "min_history": min(7, len(points)),
                "band": [low, high],
            },
            "severity": SEVERITY_DISTRIBUTION,
        }
        first, last = format_time(points[0][0]), format_time(points[-1][0])
        draft.note(
            ("checks", 0),
            f"history in {profile.history_source}: {len(points)} runs {first} … {last}, rows mean "
            f"{number_text(round(mean))} (min {number_text(min(values))}, max {number_text(max(values))}); "
            f"today {evidence}",
        )
        draft.note(
            ("checks", 0), "band: 0.8 × the quietest and 1.25 × the busiest day of that history, around its mean"
        )
        return check
    low = max(0, math.floor(VOLUME_BAND[0] * (estimated - spread)))
    high = math.ceil(VOLUME_BAND[1] * (estimated + spread))
    if profile.history_source:
        draft.note(("checks", 0), f"{len(points)} earlier runs in {profile.history_source}: too few for a band")
    draft.note(("checks", 0), f"{evidence}; band {VOLUME_BAND[0]} … {VOLUME_BAND[1]} × rows")
    return {"name": VOLUME_CHECK_NAME, "type": "num_rows", "between": [low, high], "severity": SEVERITY_DISTRIBUTION}


def _history_points(history: Sequence[tuple[dt.datetime, float, str]]) -> list[tuple[dt.datetime, float]]:
    """One value per reference time (the last one listed wins), oldest first."""
    latest: dict[dt.datetime, float] = {}
    for moment, value, _ in history:
        latest[moment] = value
    return sorted(latest.items())


def _freshness(draft: Draft, profile: Profile) -> dict[str, Any] | None:
    times = [c for c in profile.columns if c.family == "timestamp" and c.maximum is not None and c.path is None]
    dates = [c for c in profile.columns if c.family == "date" and c.maximum is not None and c.path is None]
    pool = times or dates
    if not pool:
        return None
    pool.sort(key=lambda c: (not _TIME_NAME.search(c.name), -(c.maximum or 0)))
    chosen = pool[0]
    assert chosen.maximum is not None and chosen.minimum is not None
    whole_day = 24.0 if chosen.family == "date" else 0.0
    span = (chosen.maximum - chosen.minimum) / 3600 + whole_day
    newest = dt.datetime.fromtimestamp(chosen.maximum, dt.timezone.utc)
    age = max(0.0, (profile.reference_time - newest).total_seconds() / 3600 - whole_day)
    basis = max(span, 1.0)
    because = f"the data spans {span:.1f} h"
    if profile.reference_given and age > basis:
        basis, because = age, f"the newest value is {age:.1f} h before the reference time"
    hours = math.ceil(FRESHNESS_FACTOR * basis)
    if (span >= BATCH_SPAN_HOURS or profile.partition_by) and hours < DAILY_FRESHNESS_HOURS:
        hours, because = DAILY_FRESHNESS_HOURS, because + f" (a daily batch: at least {DAILY_FRESHNESS_HOURS} h)"
    draft.note(
        ("sla",),
        f"{chosen.name}: newest {format_time(newest)}; {because} → {FRESHNESS_FACTOR} × that, rounded up",
    )
    return {"freshness_hours": hours, "timestamp_column": chosen.name}


def _completeness(draft: Draft, profile: Profile) -> list[dict[str, Any]]:
    checks = []
    for name in profile.partition_by:
        item = profile.column(name)
        if item.family not in ("date", "string", "timestamp") or not item.values:
            continue
        days = set()
        for value in item.values:
            try:
                days.add(dt.date.fromisoformat(value[:10]))
            except ValueError:
                days = set()
                break
        if not days:
            continue
        span = (max(days) - min(days)).days + 1
        checks.append(
            {
                "name": f"Every {name} partition arrived",
                "type": "completeness",
                "partition_column": name,
                "granularity": "daily",
                "lookback_days": span,
                "severity": SEVERITY_ARRIVAL,
            }
        )
        draft.note(
            ("checks", "completeness", name),
            f"{len(days)} daily partitions {min(days)} … {max(days)}; the window covers the {span} day(s) seen",
        )
    return checks


# ------------------------------------------------------------------------------------ draft


def _columns_text(profile: Profile) -> str:
    """``12 columns`` or ``5 columns and 7 nested fields``."""
    nested = sum(1 for c in profile.columns if c.path)
    text = f"{len(profile.columns) - nested} columns"
    return text + (f" and {nested} nested fields" if nested else "")


def draft_contract(
    profile: Profile,
    *,
    name: str,
    dataset: dict[str, Any] | None = None,
    source: str | None = None,
    filter: str | None = None,
) -> Draft:
    """The suggested contract for ``profile`` (see the module docstring for every rule)."""
    draft = Draft({"name": name, "version": "0.1.0"})
    draft.header = [
        f"Suggested by dq-contracts suggest from {source or 'a DataFrame'}"
        + (f" (filter: {filter})" if filter else "")
        + f" at {format_time(profile.reference_time)}.",
        f"Profiled {'every row' if not profile.sample else f'a {profile.sample:g} sample'}: "
        f"{count_text(profile.rows)} rows, {_columns_text(profile)}, "
        f"{len(profile.passes)} Spark passes ({', '.join(p for p, _ in profile.passes)}).",
        "Severities: keys, schema and arrival gate (P0/P1 table checks); single-row value rules quarantine",
        "(P1); distribution rules flag (P2). Review every line, then commit it beside the pipeline.",
    ]
    if profile.sample:
        draft.header.append(
            f"Sampled: a value rarer than about 1 in {count_text(max(1, profile.rows // 3))} rows may be "
            "unseen (allowed values, NULLs, duplicates, extremes); run exact before trusting it."
        )
    document = draft.document
    if dataset:
        document["dataset"] = dict(dataset)
    if profile.null_tokens:
        _null_values(draft, profile)
    if profile.partition_by:
        document["metadata"] = {"partitioned_by": list(profile.partition_by)}
    sla = _freshness(draft, profile)
    if sla:
        document["sla"] = sla
    keys = [c for c in profile.columns if c.duplicates == 0 and c.nulls == 0 and key_evidence(c, profile.rows)[0]]
    primary = keys[0].name if keys and profile.rows > 1 else None
    document["columns"] = [
        _column(draft, index, item, profile, item.name == primary) for index, item in enumerate(profile.columns)
    ]
    table_checks = [_volume(draft, profile)]
    if not keys:
        for (left, right), duplicates in profile.pair_duplicates.items():
            if duplicates == 0:
                draft.note(
                    ("checks", "pair", left, right),
                    f"no duplicate ({left}, {right}) in {count_text(profile.rows)} rows: a two-column key",
                )
                table_checks.append(
                    {
                        "name": f"{left} and {right} identify a row",
                        "type": "duplicates",
                        "columns": [left, right],
                        "max": 0,
                        "severity": SEVERITY_KEY,
                    }
                )
                break
    table_checks += _completeness(draft, profile)
    document["checks"] = table_checks
    _renumber(draft)
    return draft


def _null_values(draft: Draft, profile: Profile) -> None:
    """``dataset.null_values``: the tokens the profile read as NULL, with their counts as evidence."""
    lines = []
    for token in profile.null_tokens:
        seen = [(c.name, c.token_nulls[token]) for c in profile.columns if token in c.token_nulls]
        where = ", ".join(
            f"{count_text(n)} of {count_text(profile.rows)} values of {name}"
            if i == 0
            else f"{count_text(n)} of {name}"
            for i, (name, n) in enumerate(seen)
        )
        plural = "s" if len(seen) != 1 else ""
        lines.append(f"{scalar_text(token)} in {len(seen)} column{plural}: {where}")
    typed = [c for c in profile.columns if c.read_from]
    because = (
        f"they make {', '.join(c.name for c in typed[:4])}{'…' if len(typed) > 4 else ''} text; "
        "every other value there has one type"
    )
    dataset = draft.document.get("dataset")
    if isinstance(dataset, dict) and (dataset.get("path") or dataset.get("table")):
        dataset["null_values"] = list(profile.null_tokens)
        for line in [*lines, f"read as NULL: {because}"]:
            draft.note(("dataset", "null_values"), line)
    else:
        draft.header.append(
            f"Missing-value tokens read as NULL: {', '.join(scalar_text(t) for t in profile.null_tokens)} ({because});"
        )
        draft.header.append("declare them as dataset.null_values when you name the dataset.")
        draft.header.extend(f"  {line}" for line in lines)


def _renumber(draft: Draft) -> None:
    """Move comments keyed by a check's identity (pair, completeness) onto its index in ``checks``."""
    for index, check in enumerate(draft.document["checks"]):
        if check["type"] == "completeness":
            key: tuple[Any, ...] = ("checks", "completeness", check["partition_column"])
        elif check["type"] == "duplicates":
            key = ("checks", "pair", *check["columns"])
        else:
            continue
        if key in draft.comments:
            draft.comments.setdefault(("checks", index), []).extend(draft.comments.pop(key))
