"""The Delta log read directly (issue 37), without Spark: classic checkpoints, log cleanup, Roaring containers, refusals.

Tables written by Spark 4 are in ``tests/test_delta_spark4_tables.py``; here delta-rs writes a table with
a classic Parquet checkpoint (which Spark's v2 checkpoints do not exercise) and hand-made logs and
bitmaps cover what a writer rarely produces.
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_dq_contracts.store.tablemeta import UnsupportedFeatureError, add_actions, read_log
from airflow_dq_contracts.store.tablemeta.deletion_vectors import _MAGIC, _roaring_array
from airflow_dq_contracts.store.tablemeta.delta_log import newest_timestamp

UTC = dt.timezone.utc


def test_a_classic_checkpoint_and_the_commits_before_it_removed(tmp_path):
    path = str(tmp_path / "t")
    rows: list[tuple[int, dt.datetime]] = []
    for batch in range(4):
        data = [(batch * 10 + i, dt.datetime(2024, 1, 1 + batch, i, tzinfo=UTC)) for i in range(5)]
        rows += data
        write_deltalake(
            path,
            pa.table({"n": [r[0] for r in data], "ts": pa.array([r[1] for r in data], pa.timestamp("us", "UTC"))}),
            mode="append",
        )
        if batch == 2:
            DeltaTable(path).create_checkpoint()
    log = Path(path) / "_delta_log"
    assert (log / "00000000000000000002.checkpoint.parquet").exists()
    for version in range(3):
        (log / f"{version:020d}.json").unlink()  # cleaned up, as Delta does after a checkpoint
    snapshot = read_log(path)
    assert snapshot.version == 3 and len(snapshot.files) == 4
    ours = snapshot.add_actions().sort_by("path")
    theirs = add_actions(DeltaTable(path)).sort_by("path")
    for name in ("path", "num_records", "min.n", "max.n", "null_count.ts", "max.ts"):
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name
    # The delta-rs-readable table still goes through delta-rs; the log reader's own answer agrees.
    from airflow_dq_contracts.store.tablemeta.delta_log import _newest_from_log

    expected = max(r[1] for r in rows)
    assert newest_timestamp(path, "ts").value == expected
    assert _newest_from_log(snapshot, "ts", "max", True, 0.0).value == expected


def _commit(log: Path, version: int, *actions: dict) -> None:
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_a_reader_feature_nobody_reads_is_named(tmp_path):
    schema = {"type": "struct", "fields": [{"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}}]}
    _commit(
        tmp_path / "t" / "_delta_log",
        0,
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"],
                      "writerFeatures": ["catalogManaged"]}},
        {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {}}},
    )  # fmt: skip
    with pytest.raises(UnsupportedFeatureError, match="catalogManaged") as caught:
        newest_timestamp(str(tmp_path / "t"), "ts")
    assert caught.value.feature == "catalogManaged" and "dq-contracts run" in str(caught.value)


def test_roaring_run_and_bitmap_containers():
    # One 32-bit bitmap with a run container (rows 5..9) and a bitmap container (every even row of the
    # next 65536), under high bits 1: positions (1 << 32) | …
    evens = [2 * i for i in range(5000)]
    words = bytearray(8192)
    for value in evens:
        words[value // 8] |= 1 << (value % 8)
    cookie = 12347 | (1 << 16)  # two containers, runs present
    body = struct.pack("<I", cookie) + bytes([0b01]) + struct.pack("<HHHH", 0, 4, 1, len(evens) - 1)
    body += struct.pack("<HHH", 1, 5, 4) + bytes(words)
    data = struct.pack("<iqI", _MAGIC, 1, 1) + body
    expected = {(1 << 32) | v for v in range(5, 10)} | {(1 << 32) | (1 << 16) | v for v in evens}
    assert _roaring_array(data) == expected


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _inline_dv(rows: list[int]) -> str:
    """A RoaringBitmapArray of small row positions (one array container), Z85-encoded as Delta inlines it."""
    body = struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, len(rows) - 1) + struct.pack("<I", 0)
    data = struct.pack("<iqI", _MAGIC, 1, 0) + body + struct.pack(f"<{len(rows)}H", *rows)
    data += b"\0" * (-len(data) % 4)
    out = ""
    for start in range(0, len(data), 4):
        value, chars = int.from_bytes(data[start : start + 4], "big"), ""
        for _ in range(5):
            value, rest = divmod(value, 85)
            chars = _Z85[rest] + chars
        out += chars
    return out


def test_deletion_vectors_inline_decoded_and_a_missing_one_named(tmp_path):
    import pyarrow.parquet as pq

    table = tmp_path / "t"
    table.mkdir()
    times = [dt.datetime(2024, 5, 1, h, tzinfo=UTC) for h in (9, 3, 8, 5)]  # row 0 holds the newest: deleted
    pq.write_table(pa.table({"ts": pa.array(times, pa.timestamp("us", "UTC"))}), table / "a.parquet")
    schema = {"type": "struct", "fields": [{"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}}]}
    stats = json.dumps(
        {
            "numRecords": 4,
            "minValues": {"ts": "2024-05-01T03:00:00.000Z"},
            "maxValues": {"ts": "2024-05-01T09:00:00.000Z"},
            "nullCount": {"ts": 0},
            "tightBounds": False,
        }
    )
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors", "typeWidening"],
        "writerFeatures": ["deletionVectors", "typeWidening"],
    }
    inline = {"storageType": "i", "pathOrInlineDv": _inline_dv([0, 2]), "sizeInBytes": 40, "cardinality": 2}
    _commit(
        table / "_delta_log", 0, {"protocol": protocol},
        {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                      "partitionColumns": [], "configuration": {}}},
        {"add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True,
                 "stats": stats, "deletionVector": inline}},
    )  # fmt: skip
    measurement = newest_timestamp(str(table), "ts")
    assert measurement.value == max(times[1], times[3]) and measurement.files_read == 1
    assert read_log(str(table)).live_rows(0) == 2

    missing = {"storageType": "u", "pathOrInlineDv": "ab" + "0" * 20, "offset": 1, "sizeInBytes": 34, "cardinality": 1}
    _commit(
        table / "_delta_log", 1,
        {"remove": {"path": "a.parquet", "deletionVector": inline, "dataChange": True}},
        {"add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True,
                 "stats": stats, "deletionVector": missing}},
    )  # fmt: skip
    with pytest.raises(UnsupportedFeatureError, match="deletion vector of a.parquet") as caught:
        newest_timestamp(str(table), "ts")
    assert caught.value.feature == "deletionVectors" and "REORG TABLE" in str(caught.value)
