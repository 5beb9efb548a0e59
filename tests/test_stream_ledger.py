"""A stream's exactly-once appends (engine/batch_ledger.py), on real Delta tables.

Each micro-batch's rows carry ids of their own; after any sequence of appends, replays, restarts (a new
ledger) and other writers' commits, the table must hold every id of every batch exactly once — counted in
plain Python from the batches given, never from the ledger. The stream-level kill -9 test
(tests/test_streams.py) covers the same path through a real driver's death.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_dq_contracts.engine import batch_ledger
from airflow_dq_contracts.engine.batch_ledger import BatchLedger, last_committed, marker

pytestmark = pytest.mark.spark


def _rows(batch_id: int) -> list[tuple[int, int]]:
    return [(batch_id, batch_id * 10 + i) for i in range(3)]


def _frame(spark, batch_id: int):
    return spark.createDataFrame(_rows(batch_id), "batch long, id long")


def _ids(spark, path: str) -> list[int]:
    return sorted(r["id"] for r in spark.read.format("delta").load(path).collect())


def _expected(batches: list[int]) -> list[int]:
    return sorted(row[1] for b in sorted(set(batches)) for row in _rows(b))


def _carries_txn(path: str, version: int) -> bool:
    """Whether commit ``version`` holds a Delta SetTransaction (the costly idempotent-write lookup's record)."""
    log = Path(path) / "_delta_log" / f"{version:020d}.json"
    return any("txn" in json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line)


def test_replays_and_restarts_append_each_batch_once(spark, tmp_path):
    path = str(tmp_path / "valid")
    ledger = BatchLedger("query-a")
    assert [ledger.append(_frame(spark, b), path, b) for b in (0, 1, 2)] == [True, True, True]
    assert _ids(spark, path) == _expected([0, 1, 2])
    # only the ledger's first append to the table asked it (and carried Delta's transaction); the next ones are plain
    assert [_carries_txn(path, v) for v in (0, 1, 2)] == [True, False, False]
    assert last_committed(spark, path, "query-a") == 2
    assert last_committed(spark, path, "query-b") is None

    # the same batch again in this process (a query restarted with the same writer): skipped
    assert ledger.append(_frame(spark, 2), path, 2) is False
    # a restart: a new ledger replays the last batch, then goes on
    restarted = BatchLedger("query-a")
    assert restarted.append(_frame(spark, 2), path, 2) is False
    assert restarted.append(_frame(spark, 3), path, 3) is True
    assert _ids(spark, path) == _expected([0, 1, 2, 3])

    # another query on the same table keeps its own batches
    other = BatchLedger("query-b")
    assert other.append(_frame(spark, 2).selectExpr("batch", "id + 1000 AS id"), path, 2) is True
    assert last_committed(spark, path, "query-a") == 3
    assert last_committed(spark, path, "query-b") == 2


def test_a_failure_makes_the_next_append_ask_the_table(spark, tmp_path):
    path = str(tmp_path / "quarantine")
    ledger = BatchLedger("query-f")
    ledger.append(_frame(spark, 0), path, 0)
    ledger.append(_frame(spark, 1), path, 1)
    ledger.forget()  # what a failed micro-batch does: its append may have committed
    assert ledger.append(_frame(spark, 2), path, 2) is True
    assert _carries_txn(path, 2)  # the table was asked first, so written the verified way
    ledger.forget()
    assert ledger.append(_frame(spark, 2), path, 2) is False
    assert ledger.append(_frame(spark, 3), path, 3) is True
    assert not _carries_txn(path, 3)  # asked on the replay: the next batch is plain again
    assert _ids(spark, path) == _expected([0, 1, 2, 3])


def test_other_writers_commits_beyond_the_first_page_are_searched(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_ledger, "HISTORY_PAGE", 2)
    path = str(tmp_path / "shared")
    ledger = BatchLedger("query-s")
    ledger.append(_frame(spark, 0), path, 0)
    ledger.append(_frame(spark, 1), path, 1)
    for n in range(3):  # a batch run's appends, no marker of this query
        spark.createDataFrame([(99, 5000 + n)], "batch long, id long").write.format("delta").mode("append").save(path)
    assert last_committed(spark, path, "query-s") == 1
    restarted = BatchLedger("query-s")
    assert restarted.append(_frame(spark, 1), path, 1) is False
    assert restarted.append(_frame(spark, 2), path, 2) is True
    assert _ids(spark, path) == sorted(_expected([0, 1, 2]) + [5000, 5001, 5002])


def test_commits_of_delta_idempotent_writes_alone_are_recognised(spark, tmp_path):
    """A table written before the ledger (txnAppId/txnVersion only, no marker): the replay is still skipped."""
    path = str(tmp_path / "legacy")
    for b in (0, 1):
        (
            _frame(spark, b)
            .write.format("delta")
            .mode("append")
            .option("txnAppId", "query-l")
            .option("txnVersion", b)
            .save(path)
        )
    ledger = BatchLedger("query-l")
    ledger.append(_frame(spark, 1), path, 1)  # Delta's own check skips it
    ledger.append(_frame(spark, 2), path, 2)
    assert _ids(spark, path) == _expected([0, 1, 2])


def test_marker_is_the_commits_user_metadata(spark, tmp_path):
    path = str(tmp_path / "meta")
    BatchLedger("q-m").append(_frame(spark, 4), path, 4)
    (meta,) = [r[0] for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("userMetadata").collect()]
    assert meta == marker("q-m", 4)
    assert json.loads(meta) == {"batch": 4, "dq_stream": "q-m"}


def test_a_history_that_cannot_be_read_fails_the_append(spark, tmp_path):
    """Not "never committed": a restarted query whose table's log cannot be read appends nothing."""
    path = str(tmp_path / "broken")
    ledger = BatchLedger("query-x")
    ledger.append(_frame(spark, 0), path, 0)
    ledger.append(_frame(spark, 1), path, 1)
    log = Path(path) / "_delta_log" / f"{1:020d}.json"
    kept = log.read_text(encoding="utf-8")
    log.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(Exception):  # noqa: B017 - whatever the reader raises, the append must not happen
        BatchLedger("query-x").append(_frame(spark, 1), path, 1)
    log.write_text(kept, encoding="utf-8")
    assert _ids(spark, path) == _expected([0, 1])
