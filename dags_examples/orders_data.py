"""A deterministic generator of orders data for the example DAGs, written to Delta with delta-rs (no JVM).

Columns (the schema of ``contracts/orders.yaml``): ``order_id`` long, ``customer_id`` long,
``status`` string, ``amount`` double, ``currency`` string, ``email`` string, ``created_at``
timestamp (UTC), ``order_date`` date (the partition column), ``tags`` array<string>.

Clean rows satisfy every check of the orders contract. Knobs inject known defects into the newest
day, so each routing outcome can be produced on purpose (see :data:`OUTCOMES`):

* ``bad_emails`` — emails without ``@`` break "Email format is valid" (P1, row-level) → the run is
  **quarantined** (those rows set aside, the rest published);
* ``duplicate_order_ids`` — order ids repeated break "Order ID is unique" (P0) → the run is **gated**.

The same seed gives the same rows, so tests compute expected counts from :func:`generate_orders`
independently of the code under test.

Example::

    rows = generate_orders(OrdersSpec(end=dt.date(2024, 5, 1), days=3, bad_emails=2))
    write_orders("/tmp/wh/raw/orders", rows)          # replaces those 3 partitions
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

UTC = dt.timezone.utc
STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled")
CURRENCIES = ("USD", "EUR", "GBP", "CAD")
TAGS = ("gift", "express", "promo", "b2b", "first-order")
COLUMNS = ("order_id", "customer_id", "status", "amount", "currency", "email", "created_at", "order_date", "tags")


@dataclasses.dataclass(frozen=True)
class OrdersSpec:
    """What to generate: ``days`` daily partitions ending at ``end``, ``rows_per_day`` each, plus defects.

    Defects go into the newest partition (``end``), the one a daily run checks.
    """

    end: dt.date
    days: int = 3
    rows_per_day: int = 40
    seed: int = 20240501
    bad_emails: int = 0
    duplicate_order_ids: int = 0

    def __post_init__(self) -> None:
        if self.days < 1 or self.rows_per_day < 1:
            raise ValueError("days and rows_per_day must be at least 1")
        if self.bad_emails + 2 * self.duplicate_order_ids > self.rows_per_day:
            raise ValueError("more defects than rows in the newest partition")


# Presets that produce each routing decision with contracts/orders.yaml.
OUTCOMES: dict[str, dict[str, int]] = {
    "pass": {},
    "quarantine": {"bad_emails": 3},
    "gate": {"duplicate_order_ids": 2},
}


def spec_for(outcome: str, end: dt.date, **overrides: Any) -> OrdersSpec:
    """The :class:`OrdersSpec` of a named outcome (``pass``, ``quarantine``, ``gate``).

    >>> spec_for("quarantine", dt.date(2024, 5, 1)).bad_emails
    3
    """
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; choose one of {', '.join(OUTCOMES)}")
    return OrdersSpec(end=end, **{**OUTCOMES[outcome], **overrides})


def generate_orders(spec: OrdersSpec) -> list[dict[str, Any]]:
    """The rows, as dicts, oldest day first. Pure and deterministic.

    >>> rows = generate_orders(OrdersSpec(end=dt.date(2024, 5, 1), days=2, rows_per_day=5))
    >>> len(rows), rows[-1]["order_date"].isoformat()
    (10, '2024-05-01')
    """
    rng = random.Random(spec.seed)
    rows: list[dict[str, Any]] = []
    next_id = 100_000
    for offset in range(spec.days - 1, -1, -1):
        day = spec.end - dt.timedelta(days=offset)
        day_start = dt.datetime.combine(day, dt.time(), tzinfo=UTC)
        for index in range(spec.rows_per_day):
            next_id += 1
            customer = rng.randint(1, 5_000)
            # Spread over the day, the last order a few minutes before midnight: the data is fresh
            # against the end of the daily interval.
            seconds = int((index + 1) * (86_000 / spec.rows_per_day))
            rows.append(
                {
                    "order_id": next_id,
                    "customer_id": customer,
                    "status": rng.choice(STATUSES),
                    "amount": round(rng.uniform(5.0, 900.0), 2),
                    "currency": rng.choice(CURRENCIES),
                    "email": f"customer{customer}@example.com",
                    "created_at": day_start + dt.timedelta(seconds=seconds),
                    "order_date": day,
                    "tags": sorted(rng.sample(TAGS, rng.randint(0, 2))),
                }
            )
    newest = [r for r in rows if r["order_date"] == spec.end]
    for row in newest[: spec.bad_emails]:
        row["email"] = row["email"].replace("@", " at ")
    for position, row in enumerate(newest[spec.bad_emails : spec.bad_emails + spec.duplicate_order_ids]):
        row["order_id"] = newest[-1 - position]["order_id"]
    return rows


def arrow_table(rows: Iterable[dict[str, Any]]):
    """The rows as a pyarrow table with the contract's exact types."""
    import pyarrow as pa

    schema = pa.schema(
        [
            ("order_id", pa.int64()),
            ("customer_id", pa.int64()),
            ("status", pa.string()),
            ("amount", pa.float64()),
            ("currency", pa.string()),
            ("email", pa.string()),
            ("created_at", pa.timestamp("us", tz="UTC")),
            ("order_date", pa.date32()),
            ("tags", pa.list_(pa.string())),
        ]
    )
    rows = list(rows)
    return pa.table({name: [row[name] for row in rows] for name in COLUMNS}, schema=schema)


def write_orders(path: str | Path, rows: list[dict[str, Any]]) -> int:
    """Write ``rows`` to the Delta table at ``path``, replacing exactly the dates they cover.

    Idempotent: writing the same rows twice leaves one copy. Other dates are untouched.
    Returns the number of rows written.
    """
    from deltalake import DeltaTable, write_deltalake

    if not rows:
        return 0
    table = arrow_table(rows)
    dates = sorted({row["order_date"] for row in rows})
    location = str(path)
    Path(location).parent.mkdir(parents=True, exist_ok=True)
    if DeltaTable.is_deltatable(location):
        predicate = f"order_date >= '{dates[0].isoformat()}' AND order_date <= '{dates[-1].isoformat()}'"
        write_deltalake(location, table, mode="overwrite", predicate=predicate, partition_by=["order_date"])
    else:
        write_deltalake(location, table, mode="overwrite", partition_by=["order_date"])
    return table.num_rows


def read_orders(path: str | Path, order_date: dt.date | None = None) -> list[dict[str, Any]]:
    """Rows of the Delta table (optionally one date) as dicts — for the load step and for tests."""
    import pyarrow as pa
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    predicate = None if order_date is None else f"order_date = '{order_date.isoformat()}'"
    data = pa.RecordBatchReader.from_stream(table.scan(predicate=predicate) if predicate else table.scan()).read_all()
    return data.to_pylist()


# ------------------------------------------------------------------------------ customers (SCD-2)


#: customer ids that never existed (their orders are orphans)
def never_existed(customer_id: int) -> bool:
    return customer_id % 97 == 0


#: customers created after their first orders were placed (orphans *as of* the order time)
def created_late(customer_id: int) -> bool:
    return customer_id % 89 == 0 and not never_existed(customer_id)


def generate_customers(end: dt.date, count: int = 5_000) -> list[dict[str, Any]]:
    """An SCD-2 customers dimension: one row per version, ``[valid_from, valid_to)``, NULL ``valid_to`` = current.

    Customers :func:`never_existed` are missing; customers :func:`created_late` start the day after
    ``end``; every 7th customer changed tier 10 days before ``end`` (two versions, no gap).

    >>> rows = generate_customers(dt.date(2024, 5, 1), count=14)
    >>> [(r["customer_id"], r["tier"]) for r in rows if r["customer_id"] == 7]
    [(7, 'silver'), (7, 'gold')]
    """
    start = dt.datetime(2020, 1, 1, tzinfo=UTC)
    change = dt.datetime.combine(end - dt.timedelta(days=10), dt.time(), tzinfo=UTC)
    late = dt.datetime.combine(end + dt.timedelta(days=1), dt.time(), tzinfo=UTC)
    rows: list[dict[str, Any]] = []
    for customer_id in range(1, count + 1):
        if never_existed(customer_id):
            continue
        if created_late(customer_id):
            rows.append({"customer_id": customer_id, "tier": "silver", "valid_from": late, "valid_to": None})
        elif customer_id % 7 == 0:
            rows.append({"customer_id": customer_id, "tier": "silver", "valid_from": start, "valid_to": change})
            rows.append({"customer_id": customer_id, "tier": "gold", "valid_from": change, "valid_to": None})
        else:
            rows.append({"customer_id": customer_id, "tier": "silver", "valid_from": start, "valid_to": None})
    return rows


def write_customers(path: str | Path, rows: list[dict[str, Any]]) -> int:
    """Replace the Delta table at ``path`` with the dimension ``rows``; returns the row count."""
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema(
        [
            ("customer_id", pa.int64()),
            ("tier", pa.string()),
            ("valid_from", pa.timestamp("us", tz="UTC")),
            ("valid_to", pa.timestamp("us", tz="UTC")),
        ]
    )
    table = pa.table({name: [row[name] for row in rows] for name in schema.names}, schema=schema)
    Path(str(path)).parent.mkdir(parents=True, exist_ok=True)
    write_deltalake(str(path), table, mode="overwrite")
    return table.num_rows
