"""Incremental runs: which rows are new since the last run of a contract on a dataset (docs/incremental.md).

The checkpoint is not a file of its own: it is the ``source_range`` column of the results table the
run writes (or ``checkpoint``, another results table). A run reads the ranges that earlier runs of the
same contract on the same dataset recorded there, computes the range that is new now, checks the rows
of that range only and records the range in its own results rows — in the same commit as its
verdicts. So the checkpoint advances exactly when the results do: a run killed before its results
commit left no range behind and the next attempt re-reads the same rows; a retry of the same run id
finds its own range and re-checks exactly that range (its rows replaced, as every retry's).

What "new" means:

* **Delta** — the versions after the last one checked, up to the version current when the run starts
  (``{"kind": "delta", "from_version": A, "to_version": B, "read": ...}``, versions A+1..B). When every
  data file of version A is still in version B the range holds appends only: its rows are read from the
  change data feed (``read: "cdf"``, inserts) when the table has it, else from the files added in the
  range (``read: "files"``). A commit that removed files (update, delete, merge, optimize, overwrite) makes
  the run check the whole table at B (``read: "whole table"``), and says why.
* **File folders** (parquet, csv, json) — the files not recorded by an earlier run, keyed by name, size and
  modification time (``{"kind": "files", "files": [[name, size, mtime_ms], …]}``); a rewritten file is new.
* A first run (no range recorded) checks everything (``from_version`` -1, or every file).

Scope of table-level checks: row-level checks cover the new rows (their rows are quarantined); for an
append-only Delta increment, :func:`answer_whole_table` answers counts, min/max, freshness from the
Delta log at the range's end and uniqueness by a semi-join of the new keys against the earlier rows,
each record's message ending ``(scope: whole table)``; the rest say ``(scope: new rows)``.

Spark side: imports pyspark, never Airflow.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_dq_contracts.runspec import DatasetSource, RunSpecError
from airflow_dq_contracts.storage.s3 import env_delta_options, spark_location

#: Results-row message suffixes saying what a table-level check covered.
SCOPE_NEW_ROWS = "scope: new rows"
SCOPE_WHOLE_TABLE = "scope: whole table"
#: Formats read by file (a folder of files; new = files not yet recorded).
FILE_FORMATS = ("parquet", "csv", "json")
#: Change types of the change data feed that are new rows.
_CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


@dataclasses.dataclass(frozen=True)
class Increment:
    """The rows one incremental run checks: ``frame`` (raw, before reading as declared), its ``source_range``
    (the JSON text recorded in every results row) and ``whole`` (the whole input: first run or non-append)."""

    frame: DataFrame
    source_range: str
    whole: bool
    note: str


def ledger_location(spec_results: str | None, checkpoint: str | None) -> str:
    """The results table the ranges are read from and recorded in: ``checkpoint``, else the results table.

    One table, so the range is committed with the verdicts; two different ones would advance apart.

    >>> ledger_location("/wh/dq_results", None)
    '/wh/dq_results'
    >>> ledger_location(None, "/wh/dq_results")
    '/wh/dq_results'
    >>> ledger_location("/wh/a", "/wh/b")
    Traceback (most recent call last):
    ...
    airflow_dq_contracts.runspec.RunSpecError: checkpoint: an incremental run records its range with its results: give the results table, or a checkpoint equal to it (got '/wh/b' and results table '/wh/a')
    """
    if spec_results and checkpoint and spec_results.rstrip("/") != checkpoint.rstrip("/"):
        raise RunSpecError(
            "an incremental run records its range with its results: give the results table, or a checkpoint "
            f"equal to it (got {checkpoint!r} and results table {spec_results!r})",
            field="checkpoint",
        )
    location = spec_results or checkpoint
    if not location:
        raise RunSpecError(
            "an incremental run needs a results table (or --checkpoint): the ranges already checked are read "
            "from it and this run's range is recorded there",
            field="checkpoint",
        )
    return location


def _ledger(spark: SparkSession, ledger: str) -> DataFrame | None:
    """The results table that records ranges; None when absent or of an earlier release (no ``source_range``)."""
    try:
        if "/" in ledger or ":" in ledger:  # a path or URI; else a catalog table name
            table = spark.read.format("delta").load(spark_location(ledger))
        else:
            table = spark.read.table(ledger)
        columns = table.columns
    except Exception:  # noqa: BLE001 - no table yet (AnalysisException): nothing was recorded
        return None
    return table if "source_range" in columns else None


def recorded_ranges(
    spark: SparkSession, ledger: str, contract_name: str, dataset: str, run_id: str, *, driver: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The ranges earlier runs recorded for ``contract_name`` on ``dataset`` (one per run), and this run id's own.

    An absent table, or one of an earlier release (no ``source_range`` column), records nothing.
    ``driver``: this process reads the ledger's path itself (delta-rs, no Spark job); else Spark reads it.
    """
    found = _driver_ranges(ledger, contract_name, dataset) if driver else None
    rows: list[Any]
    if found is not None:
        rows = found
    else:
        table = _ledger(spark, ledger)
        if table is None:
            return [], None
        rows = (
            table.where(
                (F.col("contract_name") == contract_name)
                & (F.col("dataset") == dataset)
                & F.col("source_range").isNotNull()
            )
            .select("run_id", "source_range")
            .distinct()
            .collect()
        )
    others: list[dict[str, Any]] = []
    own: dict[str, Any] | None = None
    for row in rows:
        document = json.loads(row["source_range"])
        if row["run_id"] == run_id:
            own = document
        else:
            others.append(document)
    return others, own


def _driver_ranges(ledger: str, contract_name: str, dataset: str) -> list[dict[str, Any]] | None:
    """:func:`recorded_ranges`' rows read by delta-rs; [] for no table or no ``source_range``; None: Spark reads."""
    from airflow_dq_contracts.store.tablemeta import source_ranges

    found = source_ranges(ledger, contract_name, dataset, env_delta_options(ledger))
    return None if found is None else [{"run_id": run_id, "source_range": text} for run_id, text in found]


def plan_increment(
    spark: SparkSession,
    source: DatasetSource,
    earlier: Sequence[dict[str, Any]],
    own: dict[str, Any] | None,
    *,
    driver: bool = False,
) -> Increment:
    """The rows new since ``earlier`` ranges (or exactly ``own``, a retry's recorded range) of ``source``.

    ``driver``: this process reads the source's path itself — the newest version and the files the new
    commits appended come from the Delta log (no Spark job, no snapshot of the earlier version).
    """
    if source.format == "delta":
        log = source.path if driver and source.path and not source.table else None
        return _delta_increment(spark, source, earlier, own, log)
    if source.format in FILE_FORMATS and source.path and not source.table:
        return _files_increment(spark, source, earlier, own)
    raise RunSpecError(
        f"incremental runs read Delta tables and folders of {', '.join(FILE_FORMATS)} files, not {source.format!r}"
        + (" tables" if source.table else ""),
        field="incremental",
    )


# ---------------------------------------------------------------------------------------------- Delta


def _delta_path(source: DatasetSource) -> str:
    assert source.path is not None
    return spark_location(source.path)


def _delta_reader(spark: SparkSession, source: DatasetSource, **options: Any) -> DataFrame:
    reader = spark.read.format("delta").options(**{k: str(v) for k, v in options.items()})
    return reader.table(source.table) if source.table else reader.load(_delta_path(source))


def _current_version(spark: SparkSession, source: DatasetSource) -> int:
    from delta.tables import DeltaTable

    handle = DeltaTable.forName(spark, source.table) if source.table else DeltaTable.forPath(spark, _delta_path(source))
    latest = handle.history(1).select("version").first()
    assert latest is not None
    return int(latest[0])


def _cdf_enabled(spark: SparkSession, source: DatasetSource) -> bool:
    reference = source.table or f"delta.`{_delta_path(source)}`"
    detail = spark.sql(f"DESCRIBE DETAIL {reference}").first()
    properties = (detail["properties"] if detail is not None else None) or {}
    return str(properties.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def _newest_version(spark: SparkSession, source: DatasetSource, log: str | None) -> int:
    """The source's newest version: one listing of its Delta log from here (``log``), else Spark's history."""
    if log is not None:
        from airflow_dq_contracts.store.tablemeta import newest_version

        try:
            found = newest_version(log, env_delta_options(log))
        except Exception:  # noqa: BLE001 - unreadable from here: Spark answers
            found = -1
        if found >= 0:
            return found
    return _current_version(spark, source)


def _appended(at_end: DataFrame, log: str | None, start: int, end: int) -> list[str] | None:
    """The files (as Spark names them) versions ``start + 1`` … ``end`` appended, from the Delta log; None when
    those commits did more than append, or the log cannot say (the snapshots are compared instead)."""
    if log is None:
        return None
    import posixpath
    import urllib.parse

    from airflow_dq_contracts.store.tablemeta import appended_files

    relative = appended_files(log, start, end, env_delta_options(log))
    if relative is None:
        return None
    wanted = {posixpath.basename(path): path for path in relative}
    added = []
    for name in at_end.inputFiles():
        decoded = urllib.parse.unquote(name)
        path = wanted.get(posixpath.basename(decoded))
        if path is not None and decoded.endswith("/" + path):
            added.append(name)
    return sorted(added) if len(added) == len(wanted) == len(relative) else None


def _delta_increment(
    spark: SparkSession,
    source: DatasetSource,
    earlier: Sequence[dict[str, Any]],
    own: dict[str, Any] | None,
    log: str | None = None,
) -> Increment:
    if own is not None and own.get("kind") == "delta":
        start, end = int(own["from_version"]), int(own["to_version"])  # a retry: exactly its range again
    else:
        checked = [int(r["to_version"]) for r in earlier if r.get("kind") == "delta"]
        start, end = (max(checked) if checked else -1), _newest_version(spark, source, log)
    at_end = _delta_reader(spark, source, versionAsOf=end)
    if start < 0:
        return _delta_range(at_end, start, end, "whole table", True, "first run: the whole table")
    if start >= end:
        return _delta_range(at_end.limit(0), start, end, "none", False, f"nothing new since version {start}")
    appended = _appended(at_end, log, start, end)
    if appended is not None:
        before, after = set(), set(appended)  # append-only, as the log says
    else:
        before = set(_delta_reader(spark, source, versionAsOf=start).inputFiles())
        after = set(at_end.inputFiles())
    if not before <= after:
        return _delta_range(
            at_end,
            start,
            end,
            "whole table",
            True,
            f"versions {start + 1}..{end} removed or rewrote files (not append-only): the whole table",
        )
    if _cdf_enabled(spark, source):
        feed = _delta_reader(spark, source, readChangeFeed="true", startingVersion=start + 1, endingVersion=end).where(
            F.col("_change_type") == "insert"
        )
        frame = feed.drop(*_CDF_COLUMNS)
        return _delta_range(frame, start, end, "cdf", False, f"versions {start + 1}..{end}: inserts of the change feed")
    added = sorted(after - before)
    if not added:
        frame = at_end.limit(0)
    elif _plain_parquet(log, end, added):
        # Only the appended files are opened: Delta's file index does not prune on ``_metadata.file_path``.
        frame = spark.read.schema(at_end.schema).parquet(*added)
    else:
        frame = at_end.where(F.col("_metadata.file_path").isin(added))
    return _delta_range(frame, start, end, "files", False, f"versions {start + 1}..{end}: {len(added)} added file(s)")


#: Reader features under which a data file's Parquet holds exactly its rows under their logical names.
_PLAIN_READER_FEATURES = frozenset({"timestampNtz", "deletionVectors", "v2Checkpoint", "vacuumProtocolCheck"})


def _plain_parquet(log: str | None, end: int, added: Sequence[str]) -> bool:
    """Whether the files ``added`` (as Spark names them) read as plain Parquet give exactly the rows Delta's reader
    gives: the table at ``end`` is not partitioned (partition values live in the log), maps no column names,
    widens no type, and none of those files carries a deletion vector. Any doubt (the log unreadable, a newer
    version than ``end``): False, and Delta's reader is used."""
    if log is None:
        return False
    import posixpath
    import urllib.parse

    from airflow_dq_contracts.store.tablemeta import DeltaMetadataError, read_log

    try:
        snapshot = read_log(log, env_delta_options(log))
    except (DeltaMetadataError, OSError, ValueError, KeyError):
        return False
    configuration = snapshot.metadata.get("configuration") or {}
    if (
        snapshot.version != end
        or snapshot.partition_columns
        or str(configuration.get("delta.columnMapping.mode") or "none").lower() != "none"
        or set(snapshot.reader_features) - _PLAIN_READER_FEATURES
    ):
        return False
    names = {posixpath.basename(urllib.parse.unquote(name)) for name in added}
    carried = [f for f in snapshot.files if posixpath.basename(urllib.parse.unquote(f.path)) in names]
    return len(carried) == len(names) and not any(f.deletion_vector for f in carried)


def _delta_range(frame: DataFrame, start: int, end: int, read: str, whole: bool, note: str) -> Increment:
    text = json.dumps({"kind": "delta", "from_version": start, "to_version": end, "read": read}, sort_keys=True)
    return Increment(frame, text, whole, note)


# ---------------------------------------------------------------------------------------------- files


def _file_keys(ranges: Iterable[dict[str, Any]]) -> set[tuple[str, int, int]]:
    keys: set[tuple[str, int, int]] = set()
    for document in ranges:
        if document.get("kind") == "files":
            keys.update((str(name), int(size), int(mtime)) for name, size, mtime in document.get("files", []))
    return keys


def _files_increment(
    spark: SparkSession, source: DatasetSource, earlier: Sequence[dict[str, Any]], own: dict[str, Any] | None
) -> Increment:
    assert source.path is not None
    location = spark_location(source.path)
    options = dict(source.options)
    if own is not None and own.get("kind") == "files":
        chosen = sorted(_file_keys([own]))
    else:
        listing = spark.read.format(source.format).options(**options).load(location).inputFiles()
        stats = (
            spark.read.format("binaryFile").load(list(listing)).select("path", "length", "modificationTime").collect()
            if listing
            else []
        )
        present = {(row["path"], int(row["length"]), int(row["modificationTime"].timestamp() * 1000)) for row in stats}
        chosen = sorted(present - _file_keys(earlier))
    whole = not earlier
    text = json.dumps({"kind": "files", "files": [list(key) for key in chosen]}, sort_keys=True)
    if not chosen:
        frame = spark.read.format(source.format).options(**options).load(location).limit(0)
        return Increment(frame, text, whole, "no new file")
    frame = (
        spark.read.format(source.format)
        .options(**options)
        .option("basePath", location)
        .load([name for name, _, _ in chosen])
    )
    note = ("first run: " if whole else "") + f"{len(chosen)} new file(s)"
    return Increment(frame, text, whole, note)


# ---------------------------------------------------------------------------------------------- scope

#: Table-level check types whose whole-table value the Delta log answers (``engine/statistics_first.py``).
WHOLE_TABLE_FROM_LOG = ("num_rows", "count", "min", "max", "freshness", "completeness")


def whole_table_candidates(contract: Any) -> list[Any]:
    """The table-level checks an increment answers for the whole table from the Delta log (no scan).

    Row-level checks (one row can break them: ``missing``, a bounded ``min``…) stay on the new rows, whose
    violating rows are the ones quarantined; a check with its own ``filter`` or a learned ``baseline`` too.
    """
    return [
        check
        for check in contract.evaluated_checks()
        if check.enabled
        and check.type in WHOLE_TABLE_FROM_LOG
        and not check.row_level
        and not check.filter
        and check.baseline is None
    ]


def restricted(contract: Any, checks: Sequence[Any]) -> Any:
    """``contract`` evaluating ``checks`` only (the others disabled: no result row)."""
    kept = {check.check_id for check in checks}

    def keep(group: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(c if c.check_id in kept else dataclasses.replace(c, enabled=False) for c in group)

    columns = tuple(
        dataclasses.replace(column, checks=keep(column.checks), constraints=keep(column.constraints))
        for column in contract.columns
    )
    return dataclasses.replace(
        contract,
        schema_checks=keep(contract.schema_checks),
        checks=keep(contract.checks),
        implicit_checks=keep(contract.implicit_checks),
        columns=columns,
    )


def delta_range(increment: Increment) -> tuple[int, int] | None:
    """``(from_version, to_version)`` of an append-only Delta increment (None: files, or the whole table read)."""
    document = json.loads(increment.source_range)
    if increment.whole or document.get("kind") != "delta":
        return None
    return int(document["from_version"]), int(document["to_version"])


def replace_records(result: Any, answered: Iterable[Any], row_count: int) -> set[str]:
    """Put the whole-table ``answered`` records in place of the increment's (same check ids); their ids.

    Each keeps the run's ``row_count`` (the rows it covered: the increment's, DESIGN §10).
    """
    by_id = {record.check_id: record for record in answered}
    for index, record in enumerate(result.checks):
        if record.check_id in by_id:
            whole = by_id[record.check_id]
            whole.row_count = row_count
            result.checks[index] = whole
    return set(by_id)


# ---------------------------------------------------------------------------------------------- uniqueness


@dataclasses.dataclass(frozen=True)
class KeyOverlap:
    """What the semi-join of an increment's keys against the earlier rows found (:func:`key_overlap`)."""

    #: distinct non-NULL new keys that an earlier row also holds
    repeated: int
    #: the earlier rows' own duplicates (COUNT(*) − COUNT(DISTINCT keys))
    earlier: int
    #: how ``earlier`` was known: the previous run's whole-table value, or a count of the earlier keys
    earlier_from: str
    #: distinct new keys that occur ONCE among the new rows and that an earlier row holds: rows the
    #: increment alone does not show as duplicates (a column check tags them, :func:`earlier_key_frames`)
    single_repeats: int = 0
    #: the earlier rows' distinct non-NULL keys within the new keys' range (columns ``_k0``…), or None
    earlier_keys: DataFrame | None = None


def uniqueness_checks(contract: Any) -> list[Any]:
    """The ``duplicates`` checks (table keys, a column's values, ``unique: true``) an increment answers
    for the whole table: counted or ``return: pct``, without their own filter or baseline."""
    return [
        check
        for check in contract.evaluated_checks()
        if check.enabled and check.type == "duplicates" and not check.filter and check.baseline is None
    ]


def key_columns(check: Any) -> list[str]:
    """The key of a ``duplicates`` check: its ``columns`` (table level) or its column."""
    return list(check.params["columns"]) if check.column is None else [check.column]


def key_overlap(
    new_rows: DataFrame, earlier_rows: DataFrame, keys: Sequence[str], earlier_duplicates: int | None
) -> KeyOverlap:
    """How many distinct new keys repeat an earlier row's, reading only the key columns of the earlier rows.

    The earlier rows are restricted to each key's range among the new keys first, so Delta skips the
    data files whose statistics put them outside it (an increasing id reads almost no earlier file).
    ``earlier_duplicates``: the earlier rows' duplicates when a previous run recorded them for the whole
    table; else they are counted here (the key columns of every earlier row).

    Whole-table duplicates = earlier duplicates + the increment's own + ``repeated``: a tuple holding a
    NULL is never distinct, so it counts as a duplicate on whichever side it is.
    """
    present = F.lit(True)
    for key in keys:
        present = present & F.col(key).isNotNull()
    fresh = new_rows.where(present).select(*[F.col(k).alias(f"_k{i}") for i, k in enumerate(keys)]).distinct()
    bounds = fresh.agg(
        *[F.min(f"_k{i}") for i in range(len(keys))], *[F.max(f"_k{i}") for i in range(len(keys))]
    ).first()
    repeated = single = 0
    older: DataFrame | None = None
    if bounds is not None and bounds[0] is not None:
        window = present
        for i, key in enumerate(keys):
            window = window & F.col(key).between(bounds[i], bounds[len(keys) + i])
        names = [f"_k{i}" for i in range(len(keys))]
        older = earlier_rows.where(window).select(*[F.col(k).alias(f"_k{i}") for i, k in enumerate(keys)]).distinct()
        # Each distinct new key with its number of new rows; those an earlier row holds, counted once
        # and, of them, the ones held by a single new row.
        counted_new = new_rows.where(present).groupBy(*[F.col(k).alias(f"_k{i}") for i, k in enumerate(keys)]).count()
        found = (
            counted_new.join(older, on=names, how="left_semi")
            .agg(F.count(F.lit(1)), F.sum(F.when(F.col("count") == 1, 1).otherwise(0)))
            .first()
        )
        repeated, single = (int(found[0] or 0), int(found[1] or 0)) if found is not None else (0, 0)
    if earlier_duplicates is not None:
        return KeyOverlap(repeated, earlier_duplicates, "the previous run's whole-table count", single, older)
    columns = [F.col(k) for k in keys]
    counted = earlier_rows.agg(
        F.count(F.lit(1)), F.count_distinct(*columns) if len(columns) > 1 else F.count_distinct(columns[0])
    ).first()
    assert counted is not None
    earlier = int(counted[0] or 0) - int(counted[1] or 0)
    return KeyOverlap(repeated, earlier, "counted from the earlier rows' keys", single, older)


def whole_table_uniqueness(record: Any, check: Any, overlap: KeyOverlap, rows: tuple[int, int] | None = None) -> None:
    """Make ``record`` (the increment's) the whole table's verdict on ``check``.

    Its ``failed_rows`` stay the new rows' — the ones a column check tags: NULL, repeated among the new
    rows, or (added here) holding a key an earlier row holds. ``rows`` (a ``return: pct`` check): the new
    and the earlier rows' counts; the record's value is then a share of the new rows, and the whole
    table's is the whole table's duplicates over its rows."""
    from airflow_dq_contracts.contract.validators import describe_failure
    from airflow_dq_contracts.results import STATUS_FAILED, STATUS_PASSED

    assert record.metric_value is not None
    new = round(float(record.metric_value) * rows[0]) if rows else int(record.metric_value)
    count = new + overlap.earlier + overlap.repeated
    whole = count / (rows[0] + rows[1]) if rows else float(count)
    if check.column is not None and record.failed_rows is not None:
        record.failed_rows = int(record.failed_rows) + overlap.single_repeats
    passed = check.validator.passes(whole, record.failed_rows)
    parts = [] if passed else [describe_failure(check.validator, whole)]
    if rows:
        parts.append(f"{count} duplicate(s) in {rows[0] + rows[1]} rows")
    parts.append(
        f"{overlap.repeated} new key(s) repeat an earlier row's, {new} duplicate(s) among "
        f"the new rows, {overlap.earlier} among the earlier rows ({overlap.earlier_from})"
    )
    record.metric_value, record.passed = whole, passed
    record.status = STATUS_PASSED if passed else STATUS_FAILED
    record.message = "; ".join(parts)


def previous_whole_values(
    spark: SparkSession, ledger: str, contract_name: str, dataset: str, to_version: int, run_id: str
) -> dict[str, float]:
    """The whole-table metric values a run that ended at ``to_version`` recorded, by check id (merged state).

    Only rows that say ``scope: whole table`` count; of several such runs (an idle run records the same
    end), the latest. A retry (``run_id``) never reads its own rows.
    """
    table = _ledger(spark, ledger)
    if table is None:
        return {}
    rows = (
        table.where(
            (F.col("contract_name") == contract_name)
            & (F.col("dataset") == dataset)
            & (F.col("run_id") != run_id)
            & F.col("source_range").isNotNull()
            & F.col("metric_value").isNotNull()
            & F.col("message").endswith(f"({SCOPE_WHOLE_TABLE})")
        )
        .select("check_id", "metric_value", "source_range", "evaluated_at")
        .collect()
    )
    latest: dict[str, tuple[Any, float]] = {}
    for row in rows:
        document = json.loads(row["source_range"])
        if document.get("kind") != "delta" or int(document["to_version"]) != to_version:
            continue
        seen = latest.get(row["check_id"])
        if seen is None or row["evaluated_at"] > seen[0]:
            latest[row["check_id"]] = (row["evaluated_at"], float(row["metric_value"]))
    return {check_id: value for check_id, (_, value) in latest.items()}


# ---------------------------------------------------------------------------------------------- sums


def sum_checks(contract: Any) -> list[Any]:
    """The ``sum`` checks an increment answers for the whole table from merged state (the previous run's
    whole-table sum plus the new rows'), without their own filter or baseline."""
    return [
        check
        for check in contract.evaluated_checks()
        if check.enabled and check.type == "sum" and check.column and not check.filter and check.baseline is None
    ]


def whole_table_sums(
    checks: Sequence[Any],
    records: Mapping[str, Any],
    earlier_rows: DataFrame,
    state: Mapping[str, float],
    progress: Any,
) -> set[str]:
    """Make each ``sum`` check's record (the new rows' sum) the whole table's; the ids answered.

    The earlier rows' sum is the previous run's whole-table value at the range's first version (merged
    state, no read); when none is recorded it is summed from the earlier rows (one column), and the
    message says which. Exact for integers and decimals; for floating-point columns equal to a full
    run's sum up to the order of additions.
    """
    from airflow_dq_contracts.contract.validators import describe_failure
    from airflow_dq_contracts.results import STATUS_FAILED, STATUS_PASSED

    answered: set[str] = set()
    for check in checks:
        record = records.get(check.check_id)
        if record is None or record.status == "error" or record.metric_value is None:
            continue
        if check.column not in earlier_rows.columns:
            continue  # a nested path or a renamed column: the new rows' sum stands
        earlier, earlier_from = state.get(check.check_id), "the previous run's whole-table sum"
        if earlier is None:
            found = earlier_rows.agg(F.sum(F.col(check.column))).first()
            earlier, earlier_from = float((found[0] if found else None) or 0), "summed from the earlier rows"
        new_sum = float(record.metric_value)
        whole = earlier + new_sum
        passed = check.validator.passes(whole, record.failed_rows)
        parts = [] if passed else [describe_failure(check.validator, whole)]
        parts.append(f"the new rows' sum {new_sum:g} + the earlier rows' {earlier:g} ({earlier_from})")
        record.metric_value, record.passed = whole, passed
        record.status = STATUS_PASSED if passed else STATUS_FAILED
        record.message = "; ".join(parts)
        answered.add(check.check_id)
        progress(f"whole table: {check.check_id}: {record.message}")
    return answered


@dataclasses.dataclass(frozen=True)
class WholeTable:
    """What :func:`answer_whole_table` answered for the whole table."""

    #: check ids whose records now hold the whole table's verdict
    answered: frozenset[str] | set[str] = frozenset()
    #: per column ``duplicates`` check whose new keys repeat earlier rows': those earlier keys (``_k0``),
    #: for :func:`~airflow_dq_contracts.engine.row_verdicts.annotate` to tag the new rows holding them
    earlier_keys: Mapping[str, DataFrame] = dataclasses.field(default_factory=dict)


def answer_whole_table(
    spark: SparkSession,
    contract: Any,
    source: DatasetSource,
    increment: Increment,
    new_rows: DataFrame,
    result: Any,
    ledger: str,
    statistics: Any,
    reference_time: Any,
    progress: Any,
) -> WholeTable:
    """Answer for the whole table (version B of an append-only increment) what needs no re-read, then
    :func:`mark_scope` every table-level check's message.

    * :func:`whole_table_candidates` from the Delta log's statistics at B (``evaluated_from``
      ``statistics``); a check the log cannot answer stays on the new rows;
    * uniqueness (:func:`uniqueness_checks`) by a semi-join of the new keys against the earlier rows
      (:func:`key_overlap`), the earlier rows' own duplicates from the previous run's whole-table value;
    * sums (:func:`sum_checks`) from the previous run's whole-table sum plus the new rows'.

    ``statistics``: the :class:`~airflow_dq_contracts.engine.statistics_first.StatisticsSource` of the
    input (None: no log to read). Nothing here for a first run or a whole-table read (all is whole
    already), a folder of files, or a run with a ``filter`` (its checks stay on its new rows).
    """
    versions = delta_range(increment)
    if versions is None or result.filter:
        mark_scope(contract, result, increment)
        return WholeTable()
    start, end = versions
    answered: set[str] = set()
    earlier_keys: dict[str, DataFrame] = {}
    candidates = whole_table_candidates(contract)
    if candidates and statistics is not None:
        from .evaluator import Evaluator
        from .statistics_first import FROM_STATISTICS

        at_end = dataclasses.replace(statistics, version=end)
        whole = Evaluator(
            restricted(contract, candidates),
            new_rows,  # what the log cannot answer is measured on the new rows (and dropped below)
            reference_time,
            run_id=result.run_id,
            dataset=result.dataset,
            apply_filter=False,
            statistics=at_end,
            progress=lambda line: progress(f"whole table: {line}"),
        ).run()
        from_log = [record for record in whole.checks if record.evaluated_from == FROM_STATISTICS]
        answered |= replace_records(result, from_log, result.row_count)
    checks, sums = uniqueness_checks(contract), sum_checks(contract)
    if (checks or sums) and start >= 0 and end > start:
        earlier_rows = _delta_reader(spark, source, versionAsOf=start)
        state = previous_whole_values(spark, ledger, result.contract_name, result.dataset, start, result.run_id)
        records = {record.check_id: record for record in result.checks}
        answered |= whole_table_sums(sums, records, earlier_rows, state, progress)
        earlier_count: int | None = None  # the earlier rows, for the shares (Delta answers from its log)
        for check in checks:
            record = records.get(check.check_id)
            if record is None or record.status == "error" or record.metric_value is None:
                continue
            rows: tuple[int, int] | None = None
            previous = state.get(check.check_id)
            if check.return_type == "pct":
                earlier_count = earlier_rows.count() if earlier_count is None else earlier_count
                rows = (result.row_count, earlier_count)
                previous = None if previous is None else previous * earlier_count  # the share as a count
            overlap = key_overlap(new_rows, earlier_rows, key_columns(check), _as_count(previous))
            whole_table_uniqueness(record, check, overlap, rows)
            answered.add(check.check_id)
            if check.column is not None and overlap.earlier_keys is not None and overlap.repeated:
                earlier_keys[check.check_id] = overlap.earlier_keys
            progress(f"whole table: {check.check_id}: {record.message}")
    mark_scope(contract, result, increment, answered)
    return WholeTable(answered, earlier_keys)


def _as_count(value: float | None) -> int | None:
    return None if value is None else round(value)


def scope_message(message: str, whole: bool) -> str:
    """``message`` with the scope a table-level check covered (``new rows`` or ``whole table``).

    >>> scope_message("row count 12", False)
    'row count 12 (scope: new rows)'
    """
    return f"{message} ({SCOPE_WHOLE_TABLE if whole else SCOPE_NEW_ROWS})"


def mark_scope(contract: Any, result: Any, increment: Increment, whole_table: Iterable[str] = ()) -> None:
    """Every results row of ``result`` records the range; a table-level check's message says what it covered
    (the new rows or the whole table; docs/incremental.md). ``whole_table``: the check ids answered for
    the whole table although the run read an increment (from the Delta log, or uniqueness by semi-join)."""
    # Uniqueness is a verdict on a set of rows even where one row can break it: it says its scope too.
    scoped = {c.check_id for c in contract.evaluated_checks() if not c.row_level or c.type == "duplicates"}
    wide = set(whole_table)
    for record in result.checks:
        record.source_range = increment.source_range
        if record.check_id in wide or record.check_id in scoped:
            record.message = scope_message(record.message, increment.whole or record.check_id in wide)
