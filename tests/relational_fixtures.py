"""Generated facts + an SCD-2 dimension, and plain-Python expectations for the third family.

Nothing here imports the engine: orphans, reconciliation figures and condition violations are
computed from the same Python rows with obvious code, following docs/contracts.md.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 1, 1, tzinfo=UTC)

FACT_DDL = "order_id long, customer_id long, region string, event_time timestamp, amount double, status string"
DIM_DDL = "customer_id long, region string, valid_from timestamp, valid_to timestamp, tier string"


def day(n: float) -> dt.datetime:
    return T0 + dt.timedelta(days=n)


def make_dimension(seed: int = 11) -> list[dict[str, Any]]:
    """Customers 1..40 with SCD-2 versions: gaps, overlaps, open ends, a duplicated key, NULL keys.

    Customer ids 41..45 never appear (their orders are plain orphans).
    """
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for cid in range(1, 41):
        region = "eu" if cid % 2 else "us"
        kind = cid % 5
        if kind == 0:  # one open version from day 10: earlier events are orphans as of
            spans = [(day(10), None)]
        elif kind == 1:  # two versions with a gap [20, 25)
            spans = [(day(0), day(20)), (day(25), None)]
        elif kind == 2:  # overlapping versions (a data bug the check must survive)
            spans = [(day(0), day(30)), (day(15), day(45))]
        elif kind == 3:  # closed in the past, no current version
            spans = [(day(0), day(40))]
        else:  # open towards the past (NULL valid_from) and the future
            spans = [(None, None)]
        for valid_from, valid_to in spans:
            rows.append(
                {
                    "customer_id": cid,
                    "region": region,
                    "valid_from": valid_from,
                    "valid_to": valid_to,
                    "tier": rng.choice(["gold", "silver"]),
                }
            )
    rows.append(dict(rows[0]))  # an exact duplicate row: must not duplicate facts
    rows.append({"customer_id": None, "region": "eu", "valid_from": None, "valid_to": None, "tier": "x"})
    return rows


def make_facts(count: int = 300, seed: int = 5) -> list[dict[str, Any]]:
    """Orders: known and unknown customers, NULL keys and NULL event times, boundary timestamps."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    boundaries = [day(10), day(20), day(25), day(30), day(40), day(45)]
    for order_id in range(count):
        roll = rng.random()
        customer = None if roll < 0.05 else rng.randint(1, 45)
        if order_id < len(boundaries) * 4:  # exact interval bounds: valid_from inclusive, valid_to exclusive
            event = boundaries[order_id % len(boundaries)]
            customer = [1, 2, 3, 5][order_id // len(boundaries)]
        elif rng.random() < 0.04:
            event = None
        else:
            event = day(rng.uniform(0, 60))
        region = rng.choice(["eu", "us", None]) if rng.random() < 0.3 else ("eu" if (customer or 0) % 2 else "us")
        amount = None if rng.random() < 0.08 else round(rng.uniform(-50, 900), 2)
        rows.append(
            {
                "order_id": order_id,
                "customer_id": customer,
                "region": region,
                "event_time": event,
                "amount": amount,
                "status": rng.choice(["new", "paid", "x", None]),
            }
        )
    return rows


# ------------------------------------------------------------------------------ expectations


def orphans(
    facts: list[dict],
    dim: list[dict],
    keys: list[str],
    dim_keys: list[str] | None = None,
    as_of: bool = False,
    nulls_fail: bool = False,
) -> set[int]:
    """order_ids of the orphan rows, by the documented rule (half-open [valid_from, valid_to))."""
    dim_keys = dim_keys or keys
    out: set[int] = set()
    for row in facts:
        key = tuple(row[k] for k in keys)
        null_key = any(v is None for v in key) or (as_of and row["event_time"] is None)
        if null_key:
            if nulls_fail:
                out.add(row["order_id"])
            continue
        versions = [d for d in dim if tuple(d[k] for k in dim_keys) == key]
        if as_of:
            t = row["event_time"]
            versions = [
                d
                for d in versions
                if (d["valid_from"] is None or d["valid_from"] <= t) and (d["valid_to"] is None or t < d["valid_to"])
            ]
        if not versions:
            out.add(row["order_id"])
    return out


def row_condition_violations(facts: list[dict], null_passes: bool) -> set[int]:
    """Violations of ``amount > 0 AND status <> 'x'`` with SQL's three-valued logic."""
    out = set()
    for row in facts:
        a, s = row["amount"], row["status"]
        left = None if a is None else a > 0
        right = None if s is None else s != "x"
        if left is False or right is False:
            value: bool | None = False
        elif left is None or right is None:
            value = None
        else:
            value = True
        if value is False or (value is None and not null_passes):
            out.add(row["order_id"])
    return out
