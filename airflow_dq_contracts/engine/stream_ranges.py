"""What a stream's micro-batch covered (``source_range``): Kafka offsets, files, or Delta stream offsets.

One micro-batch's range is JSON text in the window state; a window's range merges those of the
batches its rows came from (:func:`merge_ranges`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_dq_contracts.storage.s3 import spark_location

from .kafka_source import METADATA_COLUMNS

__all__ = ["FILE_COLUMNS", "delta_range", "files_range", "kafka_range", "merge_ranges"]

#: where each row of a file-folder stream came from (Spark's ``_metadata``), dropped before any write
FILE_COLUMNS = {"file_path": "_dq_file_path", "file_size": "_dq_file_size", "file_modification_time": "_dq_file_mtime"}


def merge_ranges(ranges: Iterable[str | None]) -> str | None:
    """One window's ``source_range``: the ranges of the micro-batches its rows came from, merged (JSON text).

    Kafka: per topic and partition the first and last offset; files: the union; Delta: the earliest
    start and the latest end offset (``start`` None: from where the query began). None when no batch
    recorded a range.

    >>> merge_ranges(['{"kind": "kafka", "offsets": {"t": {"0": [0, 4]}}}',
    ...               '{"kind": "kafka", "offsets": {"t": {"0": [5, 9], "1": [0, 2]}}}'])
    '{"kind": "kafka", "offsets": {"t": {"0": [0, 9], "1": [0, 2]}}}'
    >>> merge_ranges([None]) is None
    True
    """
    docs = [json.loads(text) for text in ranges if text]
    kinds = {doc.get("kind") for doc in docs}
    if not docs:
        return None
    merged: dict[str, Any]
    if kinds == {"kafka"}:
        offsets: dict[str, dict[str, list[int]]] = {}
        for doc in docs:
            for topic, partitions in doc["offsets"].items():
                into = offsets.setdefault(topic, {})
                for partition, (first, last) in partitions.items():
                    old = into.get(partition, [first, last])
                    into[partition] = [min(old[0], first), max(old[1], last)]
        merged = {"kind": "kafka", "offsets": offsets}
    elif kinds == {"files"}:
        files = sorted({tuple(item) for doc in docs for item in doc["files"]})
        merged = {"kind": "files", "files": [list(item) for item in files]}
    elif kinds == {"delta"}:

        def key(offset: dict[str, int]) -> tuple[int, int]:
            return (offset["version"], offset["index"])

        starts = [doc.get("start") for doc in docs]
        start = None if any(item is None for item in starts) else min(starts, key=key)
        merged = {"kind": "delta", "read": "stream", "start": start, "end": max((d["end"] for d in docs), key=key)}
    else:
        merged = {"kind": "batches", "ranges": docs}
    return json.dumps(merged, sort_keys=True)


def kafka_range(frame: DataFrame) -> dict[str, Any]:
    """The Kafka offsets of a batch: per topic and partition, the first and last."""
    topic, partition, offset = (METADATA_COLUMNS[name] for name in ("topic", "partition", "offset"))
    rows = frame.groupBy(topic, partition).agg(F.min(offset), F.max(offset)).collect()
    offsets: dict[str, dict[str, list[int]]] = {}
    for row in rows:
        offsets.setdefault(str(row[0]), {})[str(int(row[1]))] = [int(row[2]), int(row[3])]
    return {"kind": "kafka", "offsets": offsets}


def files_range(frame: DataFrame) -> dict[str, Any]:
    """The files of a batch as incremental runs key them: ``[name, size, mtime_ms]``."""
    rows = frame.select(*FILE_COLUMNS.values()).distinct().collect()
    files = sorted([str(r[0]), int(r[1]), int(r[2].timestamp() * 1000)] for r in rows if r[0] is not None)
    return {"kind": "files", "files": files}


def _offset_entry(spark: SparkSession, offsets_log: str, batch_id: int) -> dict[str, Any] | None:
    """The (single) source's end offset of ``batch_id`` in a query's offsets log, or None."""
    path = f"{offsets_log}/{batch_id}"
    try:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        else:
            lines = [row[0] for row in spark.read.text(spark_location(path)).collect()]
        entry = json.loads(lines[2]) if len(lines) > 2 else None
    except Exception:  # noqa: BLE001 - no log entry (not a checkpoint of ours): no range
        return None
    return entry if isinstance(entry, dict) else None


def delta_range(spark: SparkSession, offsets_log: str, batch_id: int) -> dict[str, Any] | None:
    """A Delta stream's batch: from the previous batch's end offset to its own (version, file index)."""

    def offset(entry: dict[str, Any] | None) -> dict[str, int] | None:
        if entry is None or "reservoirVersion" not in entry:
            return None
        return {"version": int(entry["reservoirVersion"]), "index": int(entry.get("index", -1))}

    end = offset(_offset_entry(spark, offsets_log, batch_id))
    if end is None:
        return None
    start = offset(_offset_entry(spark, offsets_log, batch_id - 1)) if batch_id > 0 else None
    return {"kind": "delta", "read": "stream", "start": start, "end": end}
