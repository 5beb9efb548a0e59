"""Contracts on streams: row checks per micro-batch, table checks per event-time window (Spark side).

Two entry points (no Airflow imports here):

* :func:`contract_batch_writer` — a ``foreachBatch`` function for a user's own streaming query;
* :func:`run_stream` — ``dq-contracts stream``: reads the contract's dataset as a stream (Delta, a
  Kafka topic, or a file folder read with the declared schema: :func:`read_stream`) and runs the query
  with that function.

Per micro-batch ``batch_id`` the function

1. marks every row with the contract's row-level checks and splits it (:class:`~.row_verdicts.RowTagger`:
   the batch engine's row verdicts, their expressions built once per stream, a row's side one boolean,
   its violation list built only where it is written);
2. appends the quarantined and the valid rows **exactly once**, the two appends side by side, through
   a :class:`~.batch_ledger.BatchLedger` keyed by the query's stable id and ``batch_id``: each commit
   records them in its ``userMetadata``, and a batch that may be a replay (the first after a start, or
   after a failure) is first looked up in each table's history, so a batch replayed after a crash is
   skipped on every table its first attempt already committed to. A batch without windows is not
   cached: each write computes it (Spark's plan must be deterministic, else it is cached);
3. with a ``stream`` key in the contract (event time, window, watermark) and a results table: keeps
   the batch's in-time rows in a *window buffer* (a Delta table under ``state_location``, written the
   same idempotent way) and the batch's largest event time in a *state* table; the watermark is the
   largest event time of all earlier batches minus the declared ``watermark``. A window whose end the
   watermark has passed is *closed*: the whole contract is evaluated on its rows (the batch
   evaluator, every check type; all windows a batch closes in one grouped pass,
   :mod:`.stream_windows`), its results are written under ``run_id`` = ``make_run_id(contract,
   dataset, "window", start)`` (one run id per contract + window; a repeated write replaces), and its
   buffered rows are deleted (one DELETE per batch). A row whose window was already closed when its batch began is *late*:
   still checked and written to quarantine/valid, never buffered, and counted in the window's
   ``stream:late_rows`` result row (rewritten with the running count).

Every results row of a window records its ``source_range`` (JSON text, the conventions of incremental
runs): the merged ranges of the micro-batches its rows came from (:func:`merge_ranges`) — Kafka offsets
per topic and partition, the files of a folder, or a Delta stream's offsets (from the query's offsets log).

Each window's results carry two rows of their own: ``stream:late_rows`` (late rows counted so far,
failed with action ``flag`` when any) and ``stream:watermark_lag`` (seconds between the wall clock
when the window closed and the watermark: the stream's freshness). The window's bounds are the
``filter`` of its rows (``ts >= '…' AND ts < '…'``) and are in those two rows' messages.

Example::

    writer = contract_batch_writer(contract, results_table="/wh/dq_results",
                                   quarantine_table="/wh/quarantine/orders", valid_table="/wh/orders_valid",
                                   state_location="/chk/orders/_dq_stream", query_id="orders-stream")
    (spark.readStream.format("delta").load("/data/orders").writeStream
        .foreachBatch(writer).option("checkpointLocation", "/chk/orders/query")
        .trigger(availableNow=True).start().awaitTermination())
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.contract.sqltext import delta_path_table
from airflow_dq_contracts.contract.streaming import StreamSettings
from airflow_dq_contracts.results import (
    QUARANTINE_AT,
    QUARANTINE_RUN_ID,
    QUARANTINE_VIOLATIONS,
    STATUS_FAILED,
    STATUS_PASSED,
    VALID_FLAGS,
    CheckResult,
    ContractResult,
    make_run_id,
)
from airflow_dq_contracts.runspec import DatasetSource
from airflow_dq_contracts.storage.s3 import spark_location
from airflow_dq_contracts.timeutil import format_time, to_epoch_micros, utcnow

from .batch_ledger import BatchLedger
from .concurrency import pass_parallelism, run_concurrently
from .evaluator import case_sensitive
from .kafka_source import METADATA_COLUMNS, decode
from .row_verdicts import RowTagger
from .stream_ranges import FILE_COLUMNS, delta_range, files_range, kafka_range, merge_ranges
from .stream_windows import WindowRun, evaluate_windows
from .text_read import as_declared, declared_spark_type, is_marker

__all__ = [
    "PAUSE_ENV",
    "ContractBatchWriter",
    "contract_batch_writer",
    "default_checkpoint",
    "merge_ranges",
    "read_stream",
    "run_stream",
    "stream_query_id",
    "window_run_id",
]

Progress = Callable[[str], None]

#: Test hook (documented in docs/streaming.md): ``"N"`` makes batch N stop after its quarantine commit,
#: write ``<state_location>/paused-N`` and sleep, so a test can kill the driver in the middle of a batch.
PAUSE_ENV = "DQ_CONTRACTS_TEST_STREAM_PAUSE_BATCH"

_WINDOW = "_dq_window"  # buffer column: the window's start, epoch seconds
_BATCH = "_dq_batch"
_LATE = "__dq_late"
_EVENT_US = "__dq_event_us"
#: a source's own columns (Kafka's message fields, a file's name): they make ``source_range``, not the data
_PROVENANCE = frozenset(METADATA_COLUMNS.values()) | frozenset(FILE_COLUMNS.values())


def _noop(message: str) -> None:
    return None


def stream_query_id(contract: Contract, checkpoint: str | None = None) -> str:
    """The stable id of a contract's streaming query (its appends' key): from its checkpoint, else its name.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "orders"})
    >>> stream_query_id(c, "/chk/a") == stream_query_id(c, "/chk/a") != stream_query_id(c, "/chk/b")
    True
    """
    return make_run_id("stream", contract.name, (checkpoint or "").rstrip("/"))


def window_run_id(contract: Contract, dataset: str, window_start: int) -> str:
    """The run id of one window (``window_start``: epoch seconds): one per contract + dataset + window."""
    return make_run_id(contract.name, dataset, "window", str(int(window_start)))


def _window_run_id_column(contract: Contract, dataset: str, start: Column) -> Column:
    """:func:`window_run_id` computed by Spark for each row (the same SHA-256 text)."""
    joined = F.concat_ws("\x1f", F.lit(contract.name), F.lit(dataset), F.lit("window"), start.cast("string"))
    return F.concat(F.lit("dq-"), F.substring(F.sha2(joined, 256), 1, 24))


def default_checkpoint(results_table: str, contract: Contract) -> str:
    """``<folder of the results table>/_dq_checkpoints/<contract>/stream`` (documented default)."""
    parent = results_table.rstrip("/").rsplit("/", 1)[0] if "/" in results_table else "."
    return f"{parent}/_dq_checkpoints/{contract.name}/stream"


def _tagging_result(contract: Contract, dataset: str) -> ContractResult:
    """A result in which every row-level check failed: :func:`annotate` then tags each row it breaks."""
    now = utcnow()
    checks = [
        CheckResult(
            run_id="stream",
            contract_name=contract.name,
            contract_version=contract.version,
            dataset=dataset,
            check_id=check.check_id,
            check_name=check.name,
            check_type=check.type,
            column=check.column,
            severity=check.severity,
            action=check.action,
            validator="",
            metric_value=None,
            status=STATUS_FAILED,
            passed=False,
            failed_rows=1,
            message="",
            row_count=0,
        )
        for check in contract.evaluated_checks()
        if check.row_level
    ]
    return ContractResult("stream", contract.name, contract.version, dataset, 0, checks, now, now)


def _deterministic(frame: DataFrame) -> bool:
    """Whether computing ``frame`` twice gives the same rows: Spark's own verdict on its plan (False if unknown)."""
    try:
        return bool(frame._jdf.queryExecution().analyzed().deterministic())
    except Exception:  # noqa: BLE001 - Spark Connect (no plan object here): assume it may differ
        return False


def _one_partition(frame: DataFrame) -> bool:
    """Whether a micro-batch's rows come as one partition (one file, one Kafka partition); False if unknown."""
    try:
        return frame.rdd.getNumPartitions() == 1
    except Exception:  # noqa: BLE001 - Spark Connect (no RDD here): unknown, so no
        return False


def _exists(spark: SparkSession, path: str) -> bool:
    try:
        spark.read.format("delta").load(spark_location(path)).schema  # noqa: B018 - resolves the table
    except Exception:  # noqa: BLE001 - no table yet
        return False
    return True


class ContractBatchWriter:
    """The ``foreachBatch`` function of :func:`contract_batch_writer` (call it as ``fn(batch_df, batch_id)``)."""

    def __init__(
        self,
        contract: Contract,
        *,
        results_table: str | None = None,
        quarantine_table: str | None = None,
        valid_table: str | None = None,
        state_location: str | None = None,
        query_id: str | None = None,
        dataset: str | None = None,
        references: Mapping[str, DataFrame | str] | None = None,
        progress: Progress | None = None,
        checkpoint: str | None = None,
        reread_references: Callable[[], Mapping[str, DataFrame | str]] | None = None,
    ) -> None:
        self.contract = contract
        #: called at the start of every micro-batch (``run_stream``): the references as of that batch
        self.reread_references = reread_references
        self.offsets_log = f"{checkpoint.rstrip('/')}/offsets" if checkpoint else None
        self.results_table = results_table
        self.quarantine_table = quarantine_table
        self.valid_table = valid_table
        self.state_location = state_location.rstrip("/") if state_location else None
        self.query_id = query_id or stream_query_id(contract, state_location)
        #: every append of a batch, exactly once (keyed by ``query_id`` and the batch id)
        self.ledger = BatchLedger(self.query_id)
        self.dataset = dataset or contract.dataset.name or contract.name
        self.references = references
        self.say = progress or _noop
        self.tagger = RowTagger(contract, _tagging_result(contract, self.dataset))
        settings = contract.stream
        #: windows are kept only when the contract declares them and there is somewhere to keep them
        self.windows: StreamSettings | None = settings if settings and results_table and self.state_location else None

    # -- locations ---------------------------------------------------------------------------
    @property
    def buffer_table(self) -> str:
        return f"{self.state_location}/window_buffer"

    @property
    def state_table(self) -> str:
        return f"{self.state_location}/window_state"

    # -- one micro-batch -----------------------------------------------------------------------
    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        began = time.perf_counter()
        batch_id = int(batch_id)
        spark = batch_df.sparkSession
        if self.reread_references is not None:
            self.references = self.reread_references()
        data = [name for name in batch_df.columns if name not in _PROVENANCE]
        columns = [name for name in data if not is_marker(name)]  # what is written
        markers = [name for name in data if is_marker(name)]  # values that did not parse: schema checks
        annotated = self.tagger.mark(batch_df, self.references, one_partition=_one_partition)
        windows = self.windows
        watermark_before: int | None = None
        if windows is not None:
            event_us = F.unix_micros(F.col(windows.event_time).cast("timestamp"))
            window_us = windows.window_seconds * 1_000_000
            start = (F.floor(event_us / F.lit(window_us)) * F.lit(windows.window_seconds)).cast("long")
            watermark_before = self._watermark(spark, batch_id)
            late = (
                F.lit(False)
                if watermark_before is None
                else F.coalesce(
                    (start + F.lit(windows.window_seconds)) * F.lit(1_000_000) <= watermark_before, F.lit(False)
                )
            )
            annotated = (
                annotated.withColumn(_EVENT_US, event_us)
                .withColumn(_WINDOW, start)
                .withColumn(_LATE, late)
                .withColumn(
                    QUARANTINE_RUN_ID,
                    F.coalesce(
                        _window_run_id_column(self.contract, self.dataset, F.col(_WINDOW)),
                        F.lit(self._batch_run_id(batch_id)),
                    ),
                )
            )
        else:
            annotated = annotated.withColumn(QUARANTINE_RUN_ID, F.lit(self._batch_run_id(batch_id)))
        # Kept for the writes and the windows that read it again; a batch that only feeds the two writes is
        # computed by each (side by side), unless its plan may differ between two computations.
        cached = windows is not None or not _deterministic(annotated)
        if cached:
            annotated = annotated.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            self._write_rows(annotated, columns, batch_id, spark)
            if windows is not None:
                source_range = self._batch_range(spark, annotated, batch_id)
                self._windows(spark, annotated, columns + markers, batch_id, windows, watermark_before, source_range)
        except BaseException:  # noqa: BLE001 - re-raised: a failed append may have committed, so every table is asked before the replay
            self.ledger.forget()
            raise
        finally:
            if cached:
                annotated.unpersist()
        self.say(f"batch {batch_id}: done in {time.perf_counter() - began:.2f} s")

    def _batch_range(self, spark: SparkSession, annotated: DataFrame, batch_id: int) -> str | None:
        """What one micro-batch covered (JSON text): Kafka offsets, files, or Delta stream offsets."""
        names = set(annotated.columns)
        document: dict[str, Any] | None = None
        if METADATA_COLUMNS["offset"] in names:
            document = kafka_range(annotated)
        elif FILE_COLUMNS["file_path"] in names:
            document = files_range(annotated)
        elif self.offsets_log:
            document = delta_range(spark, self.offsets_log, batch_id)
        return None if document is None else json.dumps(document, sort_keys=True)

    def _batch_run_id(self, batch_id: int) -> str:
        return make_run_id(self.contract.name, self.dataset, "batch", self.query_id, str(batch_id))

    def _write_rows(self, annotated: DataFrame, columns: list[str], batch_id: int, spark: SparkSession) -> None:
        """The batch's quarantine and valid rows, each appended once; the two writes run side by side."""
        valid, quarantined = self.tagger.split(annotated)
        data = [F.col(f"`{name}`") for name in columns]
        writes: list[Callable[[], object]] = []
        # no check can set a row aside (every row check flags): no quarantine append, as in a batch run
        quarantine_table = self.quarantine_table if self.tagger.can_quarantine else None
        if quarantine_table:
            stamp = F.timestamp_micros(F.lit(to_epoch_micros(utcnow())))
            out = quarantined.select(
                *data, F.col(QUARANTINE_RUN_ID), F.col(QUARANTINE_VIOLATIONS), stamp.alias(QUARANTINE_AT)
            )
            writes.append(functools.partial(self.ledger.append, out, quarantine_table, batch_id))
        if self.valid_table:
            kept = valid.select(*data, F.col(QUARANTINE_RUN_ID), F.col(VALID_FLAGS))
            writes.append(functools.partial(self.ledger.append, kept, self.valid_table, batch_id))
        if self._pause_requested(batch_id):
            # after the quarantine commit, before the valid one
            writes.insert(1 if quarantine_table else 0, functools.partial(self._pause_hook, batch_id))
            parallelism = 1
        else:
            # side by side: with cores to spare, their fixed costs (Delta's state lookup and commit) overlap
            parallelism = pass_parallelism(spark, len(writes))
        run_concurrently(spark, writes, parallelism)

    def _pause_requested(self, batch_id: int) -> bool:
        return os.environ.get(PAUSE_ENV) == str(batch_id) and bool(self.state_location)

    def _pause_hook(self, batch_id: int) -> None:
        """The test hook of :data:`PAUSE_ENV`: stop in the middle of batch N for a kill -9."""
        os.makedirs(str(self.state_location), exist_ok=True)
        with open(f"{self.state_location}/paused-{batch_id}", "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        time.sleep(600)

    # -- windows -----------------------------------------------------------------------------
    def _watermark(self, spark: SparkSession, batch_id: int, inclusive: bool = False) -> int | None:
        """The watermark (epoch micros) after the batches before ``batch_id`` (``inclusive``: and it)."""
        assert self.windows is not None
        if not _exists(spark, self.state_table):
            return None
        state = spark.read.format("delta").load(spark_location(self.state_table))
        bound = F.col("batch_id") <= batch_id if inclusive else F.col("batch_id") < batch_id
        row = state.where(bound).agg(F.max("max_event_us")).collect()[0][0]
        return None if row is None else int(row) - self.windows.watermark_seconds * 1_000_000

    def _windows(
        self,
        spark: SparkSession,
        annotated: DataFrame,
        columns: list[str],
        batch_id: int,
        windows: StreamSettings,
        watermark_before: int | None,
        source_range: str | None = None,
    ) -> None:
        stats = (
            annotated.groupBy(_WINDOW, _LATE).agg(F.count(F.lit(1)).alias("n"), F.max(_EVENT_US).alias("m")).collect()
        )
        late = {int(r[_WINDOW]): int(r["n"]) for r in stats if r[_LATE] and r[_WINDOW] is not None}
        max_event = max((int(r["m"]) for r in stats if r["m"] is not None), default=None)
        in_time = annotated.where(~F.col(_LATE) & F.col(_WINDOW).isNotNull())
        if any(not r[_LATE] and r[_WINDOW] is not None for r in stats):
            buffered = in_time.select(*[F.col(f"`{name}`") for name in columns], F.col(_WINDOW)).withColumn(
                _BATCH, F.lit(batch_id).cast("long")
            )
            # a new buffer is partitioned by window: closing windows then deletes whole files, no rewrite
            new_buffer = not _exists(spark, self.buffer_table)
            self.ledger.append(buffered, self.buffer_table, batch_id, _WINDOW if new_buffer else None)
        schema = T.StructType(
            [
                T.StructField("batch_id", T.LongType()),
                T.StructField("max_event_us", T.LongType()),
                T.StructField("window_start", T.LongType()),
                T.StructField("late_rows", T.LongType()),
                T.StructField("source_range", T.StringType()),
            ]
        )
        rows: list[tuple[int, int | None, int | None, int | None, str | None]]
        rows = [(batch_id, max_event, None, None, source_range)]
        rows += [(batch_id, None, start, n, None) for start, n in late.items()]
        self.ledger.append(spark.createDataFrame(rows, schema), self.state_table, batch_id)
        # the watermark after this batch: the state's largest event time, this batch's row included (no re-read)
        lag = windows.watermark_seconds * 1_000_000
        seen = [v for v in (max_event, None if watermark_before is None else watermark_before + lag) if v is not None]
        if not seen:
            return
        watermark = max(seen) - lag
        closed: list[int] = []
        if _exists(spark, self.buffer_table):
            buffer = spark.read.format("delta").load(spark_location(self.buffer_table))
            limit = F.lit(watermark) >= (F.col(_WINDOW) + windows.window_seconds) * F.lit(1_000_000)
            # the closing rows, read once: their windows and batches, then the evaluation, from the cache
            closing = buffer.where(limit).persist(StorageLevel.MEMORY_AND_DISK)
            try:
                batches: dict[int, list[int]] = {}
                for row in closing.select(_WINDOW, _BATCH).distinct().collect():
                    batches.setdefault(int(row[0]), []).append(int(row[1]))
                closed = sorted(batches)
                self._close_windows(spark, closing, batches, windows, watermark)
            finally:
                closing.unpersist()
        for start in sorted(late):
            if start not in closed:
                self._record_late(spark, start, windows, watermark)

    def _window_state(
        self, spark: SparkSession, batches: Mapping[int, list[int]]
    ) -> tuple[dict[int, int], dict[int, str | None]]:
        """Per window of ``batches`` (start → the batches its rows came from): the late rows counted so far, and
        its merged ``source_range`` (:func:`merge_ranges` of those batches' ranges) — one read of the state table."""
        state = spark.read.format("delta").load(spark_location(self.state_table))
        starts = sorted(batches)
        wanted = sorted({batch for listed in batches.values() for batch in listed})
        has_range = "source_range" in state.columns
        rows = (
            state.where(
                F.col("window_start").isin(starts) | (F.col("window_start").isNull() & F.col("batch_id").isin(wanted))
            )
            .select("batch_id", "window_start", "late_rows", F.col("source_range") if has_range else F.lit(None))
            .collect()
        )
        late = dict.fromkeys(starts, 0)
        by_batch: dict[int, list[str | None]] = {}
        for row in rows:
            if row[1] is not None:
                late[int(row[1])] += int(row[2] or 0)
            else:
                by_batch.setdefault(int(row[0]), []).append(row[3])
        ranges: dict[int, str | None] = {}
        for start, listed in batches.items():
            texts = [text for batch in sorted(listed) for text in by_batch.get(batch, [])]
            ranges[start] = merge_ranges(texts) if has_range and listed else None
        return late, ranges

    def _window_filter(self, windows: StreamSettings, start: int) -> tuple[str, dt.datetime, dt.datetime]:
        begin = dt.datetime.fromtimestamp(start, dt.timezone.utc)
        end = begin + dt.timedelta(seconds=windows.window_seconds)
        text = (
            f"`{windows.event_time}` >= TIMESTAMP '{format_time(begin)}' "
            f"AND `{windows.event_time}` < TIMESTAMP '{format_time(end)}'"
        )
        return text, begin, end

    def _stream_rows(
        self,
        run_id: str,
        windows: StreamSettings,
        start: int,
        watermark: int,
        late_rows: int,
        row_count: int,
        source_range: str | None = None,
    ) -> list[CheckResult]:
        """The window's own result rows: its late rows and its watermark lag."""
        text, begin, end = self._window_filter(windows, start)
        now = utcnow()
        lag = now.timestamp() - watermark / 1_000_000
        bounds = f"window [{format_time(begin)}, {format_time(end)})"
        common = dict(
            run_id=run_id,
            contract_name=self.contract.name,
            contract_version=self.contract.version,
            dataset=self.dataset,
            column=windows.event_time,
            severity="P3",
            action="flag",
            row_count=row_count,
            filter=text,
            evaluated_at=now,
            reference_time=end,
            evaluated_from="scan",
            source_range=source_range,
        )
        return [
            CheckResult(
                check_id="stream:late_rows",
                check_name="late rows",
                check_type="late_rows",
                validator="max 0",
                metric_value=float(late_rows),
                status=STATUS_FAILED if late_rows else STATUS_PASSED,
                passed=not late_rows,
                failed_rows=late_rows,
                message=f"{bounds}: {late_rows} row(s) arrived after the watermark passed the window's end "
                f"(watermark {windows.watermark_seconds} s); they were checked row by row but not in this window",
                **common,  # type: ignore[arg-type]
            ),
            CheckResult(
                check_id="stream:watermark_lag",
                check_name="watermark lag",
                check_type="watermark_lag",
                validator="",
                metric_value=round(lag, 3),
                status=STATUS_PASSED,
                passed=True,
                failed_rows=None,
                message=f"{bounds}: closed at watermark {format_time(dt.datetime.fromtimestamp(watermark / 1e6, dt.timezone.utc))}, "
                f"{lag:.1f} s behind the wall clock",
                **common,  # type: ignore[arg-type]
            ),
        ]

    def _close_windows(
        self,
        spark: SparkSession,
        closing: DataFrame,
        batches: Mapping[int, list[int]],
        windows: StreamSettings,
        watermark: int,
    ) -> None:
        """Close every window of ``batches`` (start → the batches its buffered rows came from) together: their
        rows (``closing``, read once) evaluated for all of them in one grouped pass
        (:func:`~.stream_windows.evaluate_windows`: each window's results as its own run would give them), each
        window's results written under its run id, then ONE delete of their rows from the buffer."""
        from airflow_dq_contracts.store import sinks

        starts = sorted(batches)
        if not starts:
            return
        assert self.results_table is not None
        late, ranges = self._window_state(spark, batches)
        runs = []
        for start in starts:
            text, _, end = self._window_filter(windows, start)
            runs.append(WindowRun(start, window_run_id(self.contract, self.dataset, start), text, end))
        results = evaluate_windows(
            self.contract,
            closing.drop(_BATCH),
            runs,
            window_column=_WINDOW,
            dataset=self.dataset,
            references=self.references,
        )
        store = sinks.SparkResultsStore(spark, self.results_table)
        for run in runs:
            result = results[run.start]
            source_range = ranges.get(run.start)
            for record in result.checks:
                record.source_range = source_range
            records = list(result.checks) + self._stream_rows(
                run.run_id, windows, run.start, watermark, late[run.start], result.row_count, source_range
            )
            store.write_run(records, run.run_id)
        listed = ", ".join(str(int(start)) for start in starts)
        spark.sql(f"DELETE FROM {delta_path_table(spark_location(self.buffer_table))} WHERE {_WINDOW} IN ({listed})")
        for run in runs:
            result = results[run.start]
            self.say(f"window {run.filter}: {result.row_count} rows, {result.decision}, run {run.run_id}")

    def _record_late(self, spark: SparkSession, start: int, windows: StreamSettings, watermark: int) -> None:
        """Late rows of a closed window: its ``stream:late_rows`` row rewritten with the running count."""
        from airflow_dq_contracts.store import sinks

        assert self.results_table is not None
        run_id = window_run_id(self.contract, self.dataset, start)
        store = sinks.SparkResultsStore(spark, self.results_table)
        previous = store.read_run(run_id, contract_name=self.contract.name)
        kept = [r for r in previous if not r.check_id.startswith("stream:")]
        row_count = kept[0].row_count if kept else 0
        late_total = self._window_state(spark, {start: []})[0][start]
        source_range = kept[0].source_range if kept else None
        records = kept + self._stream_rows(run_id, windows, start, watermark, late_total, row_count, source_range)
        store.write_run(records, run_id)
        self.say(f"window {start}: {late_total} late row(s) recorded, run {run_id}")


def contract_batch_writer(
    contract: Contract,
    *,
    results_table: str | None = None,
    quarantine_table: str | None = None,
    valid_table: str | None = None,
    state_location: str | None = None,
    query_id: str | None = None,
    dataset: str | None = None,
    references: Mapping[str, DataFrame | str] | None = None,
    progress: Progress | None = None,
    checkpoint: str | None = None,
) -> ContractBatchWriter:
    """A ``foreachBatch`` function ``fn(batch_df, batch_id)`` checking ``contract`` on each micro-batch.

    Row-level checks tag each row; quarantined and valid rows are appended exactly once per batch
    (:class:`~.batch_ledger.BatchLedger`, keyed by ``query_id`` — default :func:`stream_query_id` of
    ``state_location`` — and ``batch_id``). Give a stable ``query_id`` (or ``state_location``) per query:
    two queries with the same id would skip each other's batches. With the contract's ``stream``
    key, a ``results_table`` and a ``state_location`` (a folder beside the query's checkpoint),
    table-level checks run per event-time window (see the module docstring). ``references``:
    alias → DataFrame of the contract's references, read once (stream–static joins). ``checkpoint``: the
    query's ``checkpointLocation``; a Delta source's ``source_range`` is read from its offsets log (a
    Kafka or file source's comes from the rows, :func:`read_stream`'s provenance columns).

    Example::

        fn = contract_batch_writer(contract, quarantine_table="/wh/q/orders", valid_table="/wh/orders_ok",
                                   query_id="orders")
        stream.writeStream.foreachBatch(fn).option("checkpointLocation", "/chk/orders").start()
    """
    return ContractBatchWriter(
        contract,
        results_table=results_table,
        quarantine_table=quarantine_table,
        valid_table=valid_table,
        state_location=state_location,
        query_id=query_id,
        dataset=dataset,
        references=references,
        progress=progress,
        checkpoint=checkpoint,
    )


def _declared_schema(contract: Contract, as_text: bool = False) -> T.StructType:
    """The read schema of a streamed folder: the declared types, or (``as_text``: CSV, JSON) text for the
    declared scalars, parsed afterwards by :func:`~.text_read.as_declared` so that a value that does not
    parse is counted by its column's schema check, as in a batch run — never a silent NULL."""
    fields = []
    for column in contract.columns:
        declared = declared_spark_type(column.type)
        data_type = T.StringType() if declared is None or as_text else declared
        fields.append(T.StructField(column.name, data_type, True))
    return T.StructType(fields)


#: Kafka reader options of batch reads only (a stream has no end); dropped from a stream's options.
KAFKA_BATCH_ONLY = ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp")


def read_stream(spark: SparkSession, source: DatasetSource, contract: Contract) -> DataFrame:
    """The contract's dataset as a streaming DataFrame: a Delta table, a Kafka topic or a folder of files.

    * Delta: Spark's Delta stream source, with the dataset's options.
    * Kafka: Spark's Kafka source; values decoded as a batch run decodes them
      (:func:`~.kafka_source.decode`, then :func:`~.text_read.as_declared`: a value that does not parse
      is NULL and counted by its column's ``schema`` check). ``startingOffsets`` defaults to ``earliest``
      (the first run checks what the topic holds); the batch-only ``endingOffsets*`` options are dropped.
      Kafka's own fields (:data:`~.kafka_source.METADATA_COLUMNS`) ride along for ``source_range``.
    * A folder (json, csv, parquet): read with the declared schema — CSV and JSON values as text, then
      parsed as a batch run parses them (:func:`~.text_read.as_declared`: null tokens, a value that does
      not parse counted by its column's ``schema`` check); each row's file (Spark's ``_metadata``:
      :data:`FILE_COLUMNS`) rides along for ``source_range``.

    The writer (:class:`ContractBatchWriter`) drops the provenance columns before anything is written.
    """
    reader = spark.readStream.options(**dict(source.options))
    if source.format == "delta":
        if source.table:
            return reader.table(source.table)
        return reader.format("delta").load(spark_location(source.path or ""))
    if source.format == "kafka":
        options = {k: v for k, v in source.options.items() if k not in KAFKA_BATCH_ONLY}
        options.setdefault("startingOffsets", "earliest")
        raw = spark.readStream.format("kafka").options(**options).load()
        return as_declared(decode(raw, source.columns, metadata=True), source, case_sensitive(spark))
    if not contract.columns:
        raise ValueError(f"a {source.format} folder is streamed with the declared schema: declare 'columns'")
    options = {k: v for k, v in source.options.items() if k != "inferSchema"}
    reader = spark.readStream.options(**options).schema(_declared_schema(contract, as_text=source.text))
    frame = reader.format(source.format).load(spark_location(source.path or ""))
    frame = frame.select("*", *(F.col(f"_metadata.{field}").alias(name) for field, name in FILE_COLUMNS.items()))
    if source.read_as_declared or source.null_tokens:
        frame = as_declared(frame, source, case_sensitive(spark))
    return frame


def run_stream(
    spark: SparkSession,
    contract: Contract,
    *,
    checkpoint: str,
    trigger: str = "available-now",
    results_table: str | None = None,
    quarantine_table: str | None = None,
    valid_table: str | None = None,
    input_path: str | None = None,
    input_format: str | None = None,
    table: str | None = None,
    progress: Progress | None = None,
) -> None:
    """``dq-contracts stream``: the contract's dataset as a stream, checked by :func:`contract_batch_writer`.

    ``checkpoint`` holds Spark's checkpoint (``<checkpoint>/query``) and the window state
    (``<checkpoint>/_dq_stream``). The contract's references are re-read at the start of every micro-batch. ``trigger``: ``available-now`` processes what is there and returns;
    an interval (``"30 seconds"``) runs until the process is stopped.
    """
    from .runner import read_references

    say = progress or _noop
    source = DatasetSource.resolve(contract, input_path, table, input_format)
    checkpoint = checkpoint.rstrip("/")
    stream = read_stream(spark, source, contract)
    writer = ContractBatchWriter(
        contract,
        results_table=results_table,
        quarantine_table=quarantine_table,
        valid_table=valid_table,
        state_location=f"{checkpoint}/_dq_stream",
        query_id=stream_query_id(contract, checkpoint),
        dataset=source.name,
        progress=say,
        checkpoint=spark_location(f"{checkpoint}/query"),
        # references re-read at the start of every micro-batch: a stream–static join sees the reference as
        # it is when the batch runs (a window closing in that batch too), never a copy from the query's start
        reread_references=(lambda: read_references(spark, contract)) if contract.references else None,
    )
    query = stream.writeStream.foreachBatch(writer).option("checkpointLocation", spark_location(f"{checkpoint}/query"))
    if trigger == "available-now":
        query = query.trigger(availableNow=True)
    else:
        query = query.trigger(processingTime=trigger)
    say(f"stream: {source.name} → checkpoint {checkpoint}, trigger {trigger}")
    handle = query.start()
    handle.awaitTermination()
