"""The example contracts under ``dags_examples/contracts/`` validate and together use the whole language."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_dq_contracts.contract import load_contract

CONTRACTS = Path(__file__).resolve().parent.parent / "dags_examples" / "contracts"

# The 4 table-level and 17 column-level check types of the spec (000_*.txt, "Checks Summary"),
# written out here rather than read from the registry.
TABLE_TYPES = {"num_rows", "duplicates", "freshness", "completeness"}
COLUMN_TYPES = {
    "cardinality",
    "min",
    "max",
    "mean",
    "sum",
    "count",
    "variance",
    "stddev",
    "percentile",
    "missing",
    "duplicates",
    "whitelist",
    "blacklist",
    "pattern",
    "min_length",
    "max_length",
    "avg_length",
}
ALL_TYPES = {("table", t) for t in TABLE_TYPES} | {("column", t) for t in COLUMN_TYPES}

# The generated dataset of the example DAG (issue 2): name → Spark type.
ORDERS_COLUMNS = [
    ("order_id", "long"),
    ("customer_id", "long"),
    ("status", "string"),
    ("amount", "double"),
    ("currency", "string"),
    ("email", "string"),
    ("created_at", "timestamp"),
    ("order_date", "date"),
    ("tags", "list<string>"),
]


def _files() -> list[Path]:
    return sorted(CONTRACTS.glob("*.yaml"))


def _types(path: Path) -> set[tuple[str, str]]:
    return {(check.level, check.type) for check in load_contract(path).all_checks()}


def test_the_examples_exist() -> None:
    assert {p.name for p in _files()} >= {"orders.yaml", "orders_v2.yaml", "customers.yaml", "events.yaml"}


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_example_contract_validates(path: Path) -> None:
    contract = load_contract(path)
    assert contract.name and contract.version and contract.owner
    assert sum(1 for _ in contract.all_checks()) > 0


def test_examples_together_use_all_21_check_types() -> None:
    used: set[tuple[str, str]] = set()
    for path in _files():
        used |= _types(path)
    assert len(ALL_TYPES) == 21
    assert ALL_TYPES - used == set()


def test_orders_alone_uses_every_check_type() -> None:
    # The example DAG runs orders.yaml, so its results table shows every check type at work.
    assert ALL_TYPES - _types(CONTRACTS / "orders.yaml") == set()


def test_orders_matches_the_generated_dataset_columns() -> None:
    contract = load_contract(CONTRACTS / "orders.yaml")
    assert [(c.name, c.type.describe()) for c in contract.columns] == ORDERS_COLUMNS
    assert contract.partitioned_by == ("order_date",)


def test_orders_carries_the_004_metadata() -> None:
    contract = load_contract(CONTRACTS / "orders.yaml")
    assert (contract.name, contract.version, contract.owner, contract.domain) == (
        "orders",
        "2.1.0",
        "checkout-team",
        "commerce",
    )
    assert contract.description and contract.consumers and contract.tags
    sla = contract.sla
    assert (sla.freshness_hours, sla.availability_target, sla.max_latency_minutes) == (4.0, 0.999, 30.0)
    assert sla.delivery_deadline_utc == "06:00" and sla.support_contact and sla.escalation_policy
    assert contract.dataset.table == "silver.orders"


def test_orders_v2_is_the_same_contract_a_version_later() -> None:
    old, new = load_contract(CONTRACTS / "orders.yaml"), load_contract(CONTRACTS / "orders_v2.yaml")
    assert (old.name, new.name) == ("orders", "orders")
    assert (old.version, new.version) == ("2.1.0", "2.2.0")
