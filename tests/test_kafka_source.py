"""Issue 35: a contract on a Kafka topic (``dataset: {format: kafka, …}``), batch.

Contract-side tests are plain Python. The engine test produces JSON messages with planted bad rows to
a real single-node KRaft broker (``kafka_broker``, tests/kafka_fixtures.py) with Kafka's own console
producer, runs the contract in-process on the shared ``spark`` session (which carries Spark's Kafka
source), and compares every check's failing rows and the quarantined ids with a plain-Python oracle
over the same messages.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.runspec import DatasetSource

REFERENCE = "2026-03-01T12:00:00Z"
STATUSES = ["new", "paid", "shipped"]
COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "long", "nullable": False},
    {"name": "amount", "type": "double", "checks": [{"name": "non-negative", "type": "min", "min": 0}]},
    {"name": "qty", "type": "int"},
    {
        "name": "status",
        "type": "string",
        "nullable": False,
        "checks": [{"name": "known", "type": "whitelist", "values": STATUSES}],
    },
]


def kafka_dataset(servers: str = "127.0.0.1:9092", **options: str) -> dict[str, Any]:
    return {"format": "kafka", "options": {"kafka.bootstrap.servers": servers, "subscribe": "orders", **options}}


# --------------------------------------------------------------------------------------- contract side


def test_kafka_dataset_is_validated():
    contract = load_contract({"name": "k", "dataset": kafka_dataset(), "columns": COLUMNS})
    assert contract.dataset.name == "kafka://127.0.0.1:9092/orders"
    source = DatasetSource.resolve(contract)
    assert (source.path, source.table, source.format, source.read_as_declared) == (
        "kafka://127.0.0.1:9092/orders",
        None,
        "kafka",
        True,
    )
    cases = {
        "no servers": ({"format": "kafka", "options": {"subscribe": "t"}}, "needs options.kafka.bootstrap.servers"),
        "no topic": ({"format": "kafka", "options": {"kafka.bootstrap.servers": "h:1"}}, "exactly one of"),
        "two subscriptions": (kafka_dataset(assign='{"orders":[0]}'), "got subscribe, assign"),
        "a path too": ({**kafka_dataset(), "path": "/d"}, "named by its options"),
    }
    for name, (dataset, message) in cases.items():
        with pytest.raises(ContractValidationError, match=message):
            load_contract({"name": "k", "dataset": dataset})
        assert name


# --------------------------------------------------------------------------------------- engine side


def make_messages(count: int, seed: int = 35) -> list[tuple[str, str]]:
    """(key, JSON value) per message, with planted faults: negative amounts, unknown or missing
    statuses, an unparseable quantity, a quantity that is not whole, and one value that is not JSON."""
    rng = random.Random(seed)
    messages = []
    for i in range(count):
        record: dict[str, Any] = {"id": i, "amount": round(rng.uniform(0, 100), 2), "qty": rng.randint(1, 9)}
        record["status"] = rng.choice(STATUSES)
        if i % 7 == 3:
            record["amount"] = -record["amount"] - 1
        if i % 11 == 5:
            record["status"] = "lost"
        if i % 13 == 4:
            del record["status"]
        if i % 9 == 2:
            record["qty"] = rng.choice(["x", 2.5, "3 pcs"])
        messages.append((str(i), json.dumps(record)))
    messages.append(("broken", "this is not json {"))
    return messages


def oracle(messages: list[tuple[str, str]]) -> tuple[dict[str, int], dict[Any, set[str]]]:
    """Per check, its failing rows; per quarantined id, the checks it breaks — in plain Python."""
    failing: dict[str, int] = {}
    broken: dict[Any, set[str]] = {}

    def fail(row_id: Any, check: str) -> None:
        failing[check] = failing.get(check, 0) + 1
        broken.setdefault(row_id, set()).add(check)

    for _, value in messages:
        try:
            record = json.loads(value)
        except ValueError:
            record = {}  # not a JSON object: every declared column is NULL
        row_id = record.get("id")
        if row_id is None:
            fail(row_id, "id/not_null")
        if record.get("amount") is not None and record["amount"] < 0:
            fail(row_id, "amount/non_negative")
        qty = record.get("qty")
        if qty is not None and not (isinstance(qty, int) or (isinstance(qty, float) and qty.is_integer())):
            fail(row_id, "qty/schema")
        status = record.get("status")
        if status is None:
            fail(row_id, "status/not_null")
        elif status not in STATUSES:
            fail(row_id, "status/known")
    return failing, broken


@pytest.mark.spark
def test_batch_contract_on_a_kafka_topic(spark, kafka_broker, tmp_path):
    from airflow_dq_contracts.engine.runner import run_contract

    topic = f"orders-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=2)
    messages = make_messages(60)
    kafka_broker.produce(topic, [v for _, v in messages], keys=[k for k, _ in messages])

    dataset = {
        "format": "kafka",
        "options": {
            "kafka.bootstrap.servers": kafka_broker.bootstrap_servers,
            "subscribe": topic,
            "startingOffsets": "earliest",
            "endingOffsets": "latest",
        },
    }
    contract = load_contract({"name": "orders_stream", "dataset": dataset, "columns": COLUMNS})
    quarantine = tmp_path / "quarantine"
    result = run_contract(
        spark, contract, run_id="kafka-batch", reference_time=REFERENCE, quarantine_table=str(quarantine)
    )
    failing, broken = oracle(messages)

    assert result.dataset == f"kafka://{kafka_broker.bootstrap_servers}/{topic}"
    assert result.row_count == len(messages)
    checks = {c.check_id: c for c in result.checks}
    assert {cid: c.failed_rows for cid, c in checks.items() if c.failed_rows} == failing
    rows = spark.read.format("delta").load(str(quarantine)).collect()
    assert result.quarantine_rows == len(rows) == len(broken)
    assert {row["id"]: {v["check_id"] for v in row["_dq_violations"]} for row in rows} == broken
    # The frame is the declared columns (Kafka's own fields are not the data's; no unparsed markers).
    assert [name for name in rows[0].asDict() if not name.startswith("_dq")] == [c["name"] for c in COLUMNS]


@pytest.mark.spark
def test_read_kafka_metadata_columns(spark, kafka_broker):
    from airflow_dq_contracts.contract.model import ColumnType
    from airflow_dq_contracts.engine.kafka_source import METADATA_COLUMNS, read_kafka

    topic = f"meta-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic)
    values = [json.dumps({"id": i, "tags": ["a", str(i)]}) for i in range(5)]
    kafka_broker.produce(topic, values, keys=[f"k{i}" for i in range(5)])
    options = {"kafka.bootstrap.servers": kafka_broker.bootstrap_servers, "subscribe": topic}
    columns = {"id": ColumnType("long"), "tags": ColumnType("list", value_type=ColumnType("string"))}
    frame = read_kafka(spark, options, columns, metadata=True)
    assert frame.columns == ["id", "tags", *METADATA_COLUMNS.values()]
    got = sorted((r["_kafka_offset"], r["_kafka_key"], r["id"], r["tags"], r["_kafka_topic"]) for r in frame.collect())
    # One partition, produced in order: offset i holds message i; scalars are decoded as text.
    assert got == [(i, f"k{i}", str(i), ["a", str(i)], topic) for i in range(5)]
