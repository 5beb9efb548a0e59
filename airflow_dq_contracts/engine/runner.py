"""Read a dataset, evaluate a contract, write the Delta outputs — shared by the CLI and the Spark job.

* :func:`read_dataset` — the contract's dataset, or ``--input PATH`` / ``--table NAME``, restricted
  by the run-level ``filter`` before anything else (so Spark prunes partitions of Delta/Parquet).
* :func:`run_contract` — read → :class:`~airflow_dq_contracts.engine.evaluator.Evaluator` →
  optional Delta sinks (quarantine and valid rows first, the results table last, so a run whose
  results are in the table has its rows set aside too). Returns the
  :class:`~airflow_dq_contracts.results.ContractResult`. The spark-submit job calls it.
  It takes the run as one :class:`~airflow_dq_contracts.runspec.RunSpec` and reads each of its
  fields once.

``dq-contracts run`` lives in :mod:`.cli_run` (it builds the spec from the command line).

Which reader read a run's Delta input, and at which version, is the result's ``source_read``
(``{"reader": "delta-rs" | "spark", "version": …}``; the job's DONE line carries it): delta-rs on the
driver for a small local table (:func:`_driver_read`; when it cannot, one log line says why and
Spark's Delta reads), Spark's Delta otherwise, pinned at the version it found when the run writes rows.

**Test-only hook**: ``$DQ_CONTRACTS_TEST_PAUSE`` = ``POINT:FILE`` (POINT ``read`` — after the input is
resolved and its version pinned, before any scan — or ``write`` — before the first write) makes the run
write ``FILE.reached`` (its pid) at that point and wait while ``FILE`` exists (at most 10 minutes).
The kill -9 and fencing tests use it to stop a real job mid-run; nothing else sets it.

Example::

    spark = get_spark(master="local[2]")
    contract = load_contract("orders.yaml")
    spec = RunSpec.for_contract(contract, input_path="/data/orders", input_format="parquet",
                                reference_time="2024-05-02T00:00:00Z")
    print(run_contract(spark, contract, spec).decision)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from airflow_dq_contracts.contract.model import Contract, Reference
from airflow_dq_contracts.contract.sqltext import datafusion_literal, delta_path_table
from airflow_dq_contracts.results import ContractResult, make_run_id
from airflow_dq_contracts.runspec import DatasetSource, RunSpec, RunSpecError
from airflow_dq_contracts.storage.s3 import is_s3, outage, spark_location
from airflow_dq_contracts.store import open_table, spark_remote
from airflow_dq_contracts.store.spark_remote import SessionCapabilities, is_connect_session
from airflow_dq_contracts.timeutil import format_time, utcnow

from .concurrency import run_concurrently
from .evaluator import Evaluator, case_sensitive, filter_condition
from .incremental import Increment, answer_whole_table, ledger_location, plan_increment, recorded_ranges
from .kafka_source import read_kafka
from .log_plan import DeltaInput, statistics_source
from .relational import needed_views
from .row_verdicts import annotate, tagging_checks
from .session import (
    DRIVER_READ_CONF_KEY,
    DRIVER_READ_SIZES,
    SOURCE_SIZES,
    SmallRunTuning,
    carry_size,
    driver_read_limit,
    driver_read_size,
)
from .spark_errors import first_line, quiet_pyspark_errors
from .statistics_first import statistics_enabled
from .text_read import as_declared, visible

Progress = Callable[[str], None]

#: The run cannot be described: no dataset, an invalid filter or reference time, bad ``--conf``. The
#: spec's own error (:class:`~airflow_dq_contracts.runspec.RunSpecError`), so a caller catches one type.
RunArgumentError = RunSpecError

log = logging.getLogger(__name__)

#: Reader of a DataFrame of a Delta source → how it was read: ``{"reader": "delta-rs" | "spark",
#: "version": the Delta version read (None: not pinned)}`` (see :func:`source_read`).
SOURCE_READS: weakref.WeakKeyDictionary[DataFrame, dict[str, Any]] = weakref.WeakKeyDictionary()

#: The test-only pause hook (see the module docs): ``POINT:FILE``.
TEST_PAUSE_ENV = "DQ_CONTRACTS_TEST_PAUSE"
_TEST_PAUSE_SECONDS = 600.0


def _pause_for_tests(point: str, say: Callable[[str], None]) -> None:
    """Test-only: wait at ``point`` while ``$DQ_CONTRACTS_TEST_PAUSE``'s file exists (module docs)."""
    setting = os.environ.get(TEST_PAUSE_ENV, "")
    wanted, _, path = setting.partition(":")
    if wanted != point or not path:
        return
    with open(path + ".reached", "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    say(f"paused at {point} (test hook {TEST_PAUSE_ENV}) while {path} exists")
    deadline = time.monotonic() + _TEST_PAUSE_SECONDS
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)


def _note_read(frame: DataFrame, read: Mapping[str, Any]) -> None:
    with contextlib.suppress(TypeError):  # not a weak key (another client's class): not recorded
        SOURCE_READS[frame] = dict(read)


def source_read(frame: DataFrame) -> dict[str, Any] | None:
    """How a Delta source DataFrame was read (``{"reader", "version"}``), None for another source."""
    try:
        return SOURCE_READS.get(frame)
    except TypeError:  # not a weak key (another client's class)
        return None


class DatasetError(RuntimeError):
    """The dataset could not be read (missing path, not a Delta table, unknown table…)."""


def _noop(message: str) -> None:
    return None


# --------------------------------------------------------------------------------------- reading


def _delta_version(spark: SparkSession, path: str | None, table: str | None) -> int | None:
    """The current version of a Delta source (None if it has no history we can read)."""
    target = delta_path_table(path) if path else table
    try:
        with quiet_pyspark_errors():
            rows = spark.sql(f"DESCRIBE HISTORY {target} LIMIT 1").select("version").collect()
    except Exception:  # noqa: BLE001 - not a Delta table: read it as is
        return None
    return int(rows[0][0]) if rows else None


def read_dataset(
    spark: SparkSession,
    contract: Contract,
    input_path: str | None = None,
    input_format: str | None = None,
    table: str | None = None,
    filter: str | None = None,
    *,
    pin_version: bool = False,
) -> DataFrame:
    """The DataFrame a run evaluates: ``input_path`` (``input_format``, default the contract's, else
    delta) or catalog ``table``, else the contract's ``dataset``; restricted by ``filter``.

    ``pin_version`` reads a Delta source at its current version, so that every later pass over
    the DataFrame (scan, quarantine, valid rows) sees the same rows even if a writer commits
    meanwhile. Raises :class:`RunArgumentError` (nothing to read, invalid filter) or
    :class:`DatasetError` (cannot read), each with a one-line reason.

    Example::

        df = read_dataset(spark, contract, "/data/orders", "delta", filter="order_date = '2024-05-01'")
    """
    return read_source(spark, DatasetSource.resolve(contract, input_path, table, input_format), filter, pin_version)


def read_source(
    spark: SparkSession,
    source: DatasetSource,
    filter: str | None = None,
    pin_version: bool = False,
    capabilities: SessionCapabilities | None = None,
    *,
    keep_unparsed: bool = False,
    detail: Mapping[str, Any] | None = None,
) -> DataFrame:
    """The DataFrame of a resolved ``source`` (a spec's ``source``), restricted by ``filter``; as :func:`read_dataset`.

    Read as declared (:func:`~.text_read.as_declared`): a text format with declared columns gets their
    types, null tokens read as NULL. ``keep_unparsed`` keeps the unparsed markers (the run's schema
    checks count them); without it they are dropped. ``capabilities``: what ``spark`` can do (default:
    as the session tells, :meth:`SessionCapabilities.of`). ``detail``: the source's ``DESCRIBE DETAIL`` when
    the caller already asked for it (:func:`source_detail`; ``{}``: asked, no answer), not asked again.
    """
    capabilities = capabilities or SessionCapabilities.of(spark)
    df = _read(spark, capabilities, source, pin_version, filter, detail)
    if filter:
        try:
            filtered = df.where(filter_condition(df, filter))
        except ValueError as exc:
            raise RunArgumentError(str(exc)) from None
        df = _derived(df, filtered)
    return df if keep_unparsed else _derived(df, visible(df))


def _derived(frame: DataFrame, derived: DataFrame) -> DataFrame:
    """``derived`` (``frame`` filtered, typed, its markers dropped) with what is known of ``frame``'s read:
    its on-disk size and how (which reader, which version) it was read."""
    if derived is not frame:
        carry_size(frame, derived)
        read = source_read(frame)
        if read is not None:
            _note_read(derived, read)
    return derived


def _read(
    spark: SparkSession,
    capabilities: SessionCapabilities,
    source: DatasetSource,
    pin_version: bool,
    filter: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> DataFrame:
    """``source`` loaded (:func:`_load`) and read as declared when it says so (markers kept)."""
    options = dict(source.options)
    if source.format == "kafka":
        df = _load_kafka(spark, source)
    else:
        df = _load(spark, capabilities, source.path, source.table, source.format, options, pin_version, filter, detail)
    if not (source.read_as_declared or source.null_tokens):
        return df
    return _derived(df, as_declared(df, source, case_sensitive(spark)))


def _strip_delta_metadata(field: Any) -> Any:
    """A Delta schema (JSON) without Delta's internal field metadata (``delta.*`` keys), as Spark reads it."""
    if isinstance(field, dict):
        out = {key: _strip_delta_metadata(value) for key, value in field.items()}
        if isinstance(out.get("metadata"), dict):
            out["metadata"] = {k: v for k, v in out["metadata"].items() if not k.startswith("delta.")}
        return out
    if isinstance(field, list):
        return [_strip_delta_metadata(item) for item in field]
    return field


def _landed_partitions(
    spark: SparkSession, actions: Any, partition_columns: list[str], schema: Any, filter: str
) -> tuple[Any, str] | None:
    """Which files of a partitioned table the run ``filter`` keeps, and a delta-rs predicate reading them.

    The filter is evaluated *by Spark* (Spark's SQL, types and casts) on one row per file holding
    its partition values — a local relation, no job. None when it cannot prune this way: the filter
    names a data column, or a partition value has a type not mapped here.
    """
    from pyspark.sql import types as T

    fields = {field.name: field for field in schema.fields}
    names = [f"partition.{column}" for column in partition_columns]
    if not partition_columns or any(name not in actions.column_names for name in names):
        return None
    values = list(zip(*(actions.column(name).to_pylist() for name in names)))
    frame = spark.createDataFrame(
        [(index, *row) for index, row in enumerate(values)],
        T.StructType([T.StructField("_dq_file", T.IntegerType())] + [fields[column] for column in partition_columns]),
    )
    try:
        with quiet_pyspark_errors():
            kept = {row[0] for row in frame.where(filter_condition(frame, filter)).select("_dq_file").collect()}
    except Exception:  # noqa: BLE001 - the filter names a data column (or is invalid: Spark will say so)
        return None
    clauses = set()
    for index in kept:
        terms = []
        for column, value in zip(partition_columns, values[index]):
            quoted = '"' + column.replace('"', '""') + '"'
            if value is None:
                terms.append(f"{quoted} IS NULL")
                continue
            literal = datafusion_literal(value)
            if literal is None:
                return None
            terms.append(f"{quoted} = {literal}")
        clauses.add("(" + " AND ".join(terms) + ")")
    mask = [index in kept for index in range(len(values))]
    return mask, " OR ".join(sorted(clauses)) or "false"


def _driver_read(
    spark: SparkSession, path: str, options: dict[str, str], filter: str | None = None
) -> DataFrame | None:
    """A small Delta table read whole by delta-rs on the driver and handed to Spark as Arrow; else None.

    For a landed partition of a few thousand rows, Spark's own Delta read costs seconds whatever the
    size (the log read by a Spark job, the state reconstruction, a file scan planned and compiled);
    delta-rs reads the same snapshot in milliseconds — deletion vectors and column mapping honoured —
    and the DataFrame gets the table's exact Spark schema (names, types, nullability, comments). Only
    when the table's data files total at most :data:`~.session.DRIVER_READ_BYTES`
    (``spark.dqcontracts.driverReadBytes``; 0 turns this off), no reader option is given, and
    ``deltalake`` can read the location from this driver; any doubt returns None and Spark reads it.
    The result is one consistent snapshot, so it needs no version pinning.
    """
    limit = driver_read_limit(spark)
    if limit <= 0 or options:
        return None
    stage = "open"
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql import types as T

        table = open_table(path)
        schema = T.StructType.fromJson(_strip_delta_metadata(json.loads(table.schema().to_json())))
        actions = pa.table(table.get_add_actions(flatten=True))
        landed = (
            _landed_partitions(spark, actions, list(table.metadata().partition_columns), schema, filter)
            if filter
            else None
        )
        predicate = None
        if landed is not None:
            mask, predicate = landed
            actions = actions.filter(pa.array(mask, pa.bool_()))
        size = int(pc.sum(actions.column("size_bytes")).as_py() or 0)
        if size > limit:
            log.info(
                "%s: %s bytes of data files, over the driver-read limit of %s (%s): Spark's Delta reader reads it",
                path,
                f"{size:,}",
                f"{limit:,}",
                DRIVER_READ_CONF_KEY,
            )
            return None
        stage = "scan"
        data = pa.RecordBatchReader.from_stream(table.scan(predicate=predicate)).read_all()
        # The partition predicate must select exactly the files Spark kept: their record counts
        # (no deletion vectors) are the proof; anything else and Spark reads the table.
        if predicate is not None and (
            any(name.startswith("deletionVector") for name in actions.column_names)
            or data.num_rows != int(pc.sum(actions.column("num_records")).as_py() or 0)
        ):
            log.warning(
                "%s: delta-rs's partition read does not match Spark's file selection for the filter "
                "(deletion vectors, or record counts differ): Spark's Delta reader reads it instead",
                path,
            )
            return None
        stage = "hand over to Spark"
        with quiet_pyspark_errors():
            df = spark.createDataFrame(data.select(schema.fieldNames()), schema=schema)
    except Exception as exc:  # noqa: BLE001 - any doubt: Spark reads the table, and the log says why
        log.warning(
            "%s: delta-rs could not read it on the driver (%s: %s): Spark's Delta reader reads it instead",
            path,
            stage,
            first_line(exc),
        )
        return None
    DRIVER_READ_SIZES[df] = size
    _note_read(df, {"reader": "delta-rs", "version": int(table.version())})
    return df


def _load(
    spark: SparkSession,
    capabilities: SessionCapabilities,
    path: str | None,
    name: str | None,
    fmt: str,
    options: dict[str, str],
    pin_version: bool,
    filter: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> DataFrame:
    """A path (``fmt``) or catalog table as a DataFrame, resolved now; :class:`DatasetError` if it cannot be read.

    ``detail``: the source's ``DESCRIBE DETAIL`` as the caller has it (then not asked again).
    """
    if fmt == "delta" and path and not name and capabilities.driver_reads_paths:
        small = _driver_read(spark, path, options, filter)
        if small is not None:
            return small
    size = version = None
    if fmt == "delta" and capabilities.remote and detail is not None:
        size = _detail_size(detail)  # the caller's DESCRIBE DETAIL: no second round trip
        if pin_version:
            version = _delta_version(spark, path, name)
    elif fmt == "delta" and capabilities.remote:
        # Spark Connect: the size (for SmallRunTuning) and the pin from the server, side by side.
        if pin_version:
            size, version = run_concurrently(
                spark,
                [lambda: _remote_delta_size(spark, path, name), lambda: _delta_version(spark, path, name)],
                2,
                remote=True,
            )
        else:
            size = _remote_delta_size(spark, path, name)
    elif pin_version and fmt == "delta":
        version = _delta_version(spark, path, name)
    where = f"table {name!r}" if name else f"{fmt} dataset {path!r}"
    try:
        with quiet_pyspark_errors():
            reader = spark.read.options(**options)
            if version is not None:
                reader = reader.option("versionAsOf", version)
            if name:
                df = reader.table(name)
            else:
                df = reader.format(fmt).load(spark_location(path) if path else path)
            _ = df.schema  # resolve now: a missing path fails here, not in the middle of the scan
    except Exception as exc:  # noqa: BLE001 - AnalysisException, Py4JJavaError…
        down = outage(exc) if path and is_s3(path) else None  # the JVM's first line says only "o159.load"
        raise DatasetError(f"cannot read {where}: {down or first_line(exc)}") from None
    if size is not None:
        SOURCE_SIZES[df] = size
    if fmt == "delta":
        _note_read(df, {"reader": "spark", "version": version})
    return df


def _load_kafka(spark: SparkSession, source: DatasetSource) -> DataFrame:
    """A Kafka dataset (batch): its messages' JSON values decoded as declared (:mod:`.kafka_source`)."""
    try:
        with quiet_pyspark_errors():
            df = read_kafka(spark, source.options, source.columns)
            _ = df.schema  # resolve now: no Kafka source on the session fails here
    except Exception as exc:  # noqa: BLE001 - AnalysisException, Py4JJavaError…
        raise DatasetError(f"cannot read kafka dataset {source.name!r}: {first_line(exc)}") from None
    return df


def _remote_delta_size(spark: SparkSession, path: str | None, name: str | None) -> int | None:
    """A Delta source's size on disk from the server's ``DESCRIBE DETAIL`` (None when it cannot say)."""
    return _detail_size(_describe(spark, path, name))


def _describe(spark: SparkSession, path: str | None, name: str | None) -> dict[str, Any]:
    """``DESCRIBE DETAIL`` of a Delta source as the session's Spark resolves it; ``{}`` when it cannot say."""
    try:
        with quiet_pyspark_errors():
            return dict(spark_remote.describe_detail(spark, spark_remote.table_reference(path, name)) or {})
    except Exception:  # noqa: BLE001 - not a Delta table, or no DESCRIBE DETAIL here: no size, no statistics
        return {}


def _detail_size(detail: Mapping[str, Any]) -> int | None:
    value = detail.get("sizeInBytes")
    return int(value) if isinstance(value, int) else None


def source_detail(
    spark: SparkSession, source: DatasetSource, capabilities: SessionCapabilities
) -> dict[str, Any] | None:
    """The ``DESCRIBE DETAIL`` a run needs of its input, asked once (None: the run needs none).

    On Spark Connect the job asks it of every Delta input anyway (its size tunes a small run); for a
    catalog-named input it also gives the ``location`` the catalog resolves, where statistics-first
    reads the Delta log (:func:`.log_plan.statistics_source`).
    """
    if source.format != "delta" or not (source.path or source.table):
        return None
    if capabilities.remote or (source.table and not source.null_tokens and statistics_enabled(spark)):
        return _describe(spark, source.path, source.table)
    return None


def read_references(
    spark: SparkSession,
    contract: Contract,
    references: dict[str, Reference] | None = None,
    *,
    pin_version: bool = False,
    capabilities: SessionCapabilities | None = None,
) -> dict[str, DataFrame | str]:
    """Each reference a check uses, read once (its filter is applied by the evaluator), or why not.

    A reference that cannot be read is not a run failure: the checks using it get status ``error``.
    Column pruning and the filter reach the reader through Spark's optimizer.
    """
    references = contract.references if references is None else references
    capabilities = capabilities or SessionCapabilities.of(spark)
    used = {c.params.get("reference") for c in contract.all_checks()}
    used |= set(needed_views(contract))
    out: dict[str, DataFrame | str] = {}
    for alias, ref in references.items():
        if alias not in used:
            continue
        try:
            # Read as declared: the columns a check compares with the dataset's get its declared types.
            out[alias] = visible(_read(spark, capabilities, DatasetSource.for_reference(ref, contract), pin_version))
        except DatasetError as exc:
            out[alias] = f"reference {alias!r}: {exc}"
    return out


# --------------------------------------------------------------------------------------- running


def run_contract(
    spark: SparkSession,
    contract: Contract,
    spec: RunSpec | None = None,
    *,
    progress: Progress | None = None,
    capabilities: SessionCapabilities | None = None,
    **settings: Any,
) -> ContractResult:
    """Read, evaluate and (when the spec names targets) write the Delta outputs; returns the result.

    ``spec`` is the run (:class:`~airflow_dq_contracts.runspec.RunSpec`, built and validated by the
    caller: the job, ``dq-contracts run``); without one, ``settings`` are its fields and the spec is
    built here with :meth:`RunSpec.for_contract` (a Python caller's shortcut), raising
    :class:`RunArgumentError` for a run that cannot be described.

    ``capabilities`` is what ``spark`` can do, as whoever made the session says (the job, the CLI);
    default: as the session itself tells (:meth:`SessionCapabilities.of`).

    ``run_id`` defaults to a fresh id per run (``make_run_id(contract, dataset, start time)``);
    pass the same id again to replace that run's rows in every table. Quarantine/valid rows are
    written before the results, so the results table never announces rows that are not there.
    With a results table, the contract version is also upserted into the registry beside it
    (``dq_contracts``, see :mod:`airflow_dq_contracts.store.results.registry`); the spec's ``contract_text``
    is what it records as the contract's text (default: the contract's file).

    Example::

        spec = RunSpec.for_contract(contract, input_path="/data/orders", run_id="nightly-2024-05-01",
                                    results_table="/wh/dq_results", quarantine_table="/wh/quarantine/orders")
        result = run_contract(spark, contract, spec)
        result = run_contract(spark, contract, input_path="/data/orders")     # the same, spec built here
    """
    if spec is None:
        spec = RunSpec.for_contract(contract, **settings)
    elif settings:
        raise TypeError(f"run_contract: give a RunSpec or its fields, not both ({', '.join(sorted(settings))})")
    if spec.source is None:  # a spec built field by field: resolved here, once
        spec = spec.resolve(contract)
    source = spec.source
    assert source is not None
    capabilities = capabilities or SessionCapabilities.of(spark)
    say = progress or _noop
    started_at = utcnow()
    dataset = source.name
    run_id = spec.run_id or make_run_id(contract.name, dataset, format_time(started_at))
    results_table, run_filter = spec.results_table, spec.filter
    writes_rows = bool(spec.quarantine_table or spec.valid_table)
    declared = spec.resolved_references(contract)

    # A small run (a landed partition, small references) gets cheaper settings, restored afterwards:
    # the session may be the caller's (dq-contracts run, evaluate()). A plain Delta path checked without
    # writing rows is read lazily: its DataFrame is built (and the run tuned) only if a check needs the
    # scan (engine/log_plan.py).
    plain = bool(source.path) and capabilities.driver_reads_paths and not spec.incremental
    plain = plain and not (source.table or source.read_as_declared or run_filter or writes_rows)
    stats = statistics_source(source, capabilities) if plain else None
    with contextlib.ExitStack() as stack:
        tunings: list[SmallRunTuning] = []

        def tuning() -> SmallRunTuning:
            if not tunings:  # entered before the input is read
                tunings.append(stack.enter_context(SmallRunTuning(spark)))
            return tunings[0]

        if stats is None:
            tuning()
        increment, detail = None, None
        if spec.incremental:
            results_table, increment = _increment(spark, contract, spec, source, run_id, say)
        else:
            detail = source_detail(spark, source, capabilities)

        def read_input() -> DataFrame:
            began = time.perf_counter()
            if increment is not None:
                frame = _increment_frame(spark, source, increment.frame, run_filter)
            else:
                frame = read_source(
                    spark, source, run_filter, writes_rows, capabilities, keep_unparsed=True, detail=detail
                )
            read, read_bytes = source_read(frame), driver_read_size(frame)
            on_driver = f", {read_bytes:,} bytes read by delta-rs on the driver" if read_bytes is not None else ""
            say(
                f"read: {dataset} ({len(visible(frame).columns)} columns"
                + (", read as declared" if source.read_as_declared else "")
                + (f", filter {run_filter}" if run_filter else "")
                + on_driver
                + (f", {read['reader']} reader at version {read['version']}" if read else "")
                + f") in {time.perf_counter() - began:.2f} s"
            )
            return frame

        def tuned(frame: DataFrame) -> DataFrame:
            message = tuning().decide([frame] + [f for f in reference_frames.values() if not isinstance(f, str)])
            if message:
                say(message)
            return frame

        def build() -> DataFrame:
            tuning()
            return tuned(read_input())

        lazy = DeltaInput(spark, stats, build) if stats is not None else None
        if lazy is not None:
            say(f"input: {dataset} is a Delta table: its DataFrame is built only if a check needs the scan")
        subject: DataFrame | DeltaInput = read_input() if lazy is None else lazy
        _pause_for_tests("read", say)
        reference_frames = read_references(
            spark, contract, declared, pin_version=writes_rows, capabilities=capabilities
        )
        for alias, frame in reference_frames.items():
            say(f"reference {alias}: " + (frame if isinstance(frame, str) else declared[alias].location))
        read = None if isinstance(subject, DeltaInput) else source_read(tuned(subject))
        evaluator = Evaluator(
            contract,
            subject,
            spec.reference_time,
            run_id=run_id,
            dataset=dataset,
            filter=run_filter,
            apply_filter=False,
            dag_id=spec.dag_id,
            task_id=spec.task_id,
            airflow_run_id=spec.airflow_run_id,
            progress=say,
            started_at=started_at,
            history=results_table,  # baselines learn from the same table this run appends to
            references=reference_frames,
            # An increment is not the table the log describes: its checks are scanned.
            statistics=None if increment is not None else statistics_source(source, capabilities, detail, read),
            capabilities=capabilities,
        )
        result = evaluator.run()
        read = source_read(evaluator.df) if lazy is None or lazy.built else None  # None: no DataFrame was built
        result.source_read = dict(read) if read else None
        earlier_keys: Mapping[str, DataFrame] = {}
        if increment is not None:
            stats = statistics_source(source, capabilities, source_detail(spark, source, capabilities))
            args = (increment, evaluator.df, result, results_table or "", stats, evaluator.reference_time, say)
            earlier_keys = answer_whole_table(spark, contract, source, *args).earlier_keys  # and marks scopes

        if writes_rows or results_table:
            _pause_for_tests("write", say)
            # Imported here: the sinks need delta-spark, which a plain evaluation does not.
            from airflow_dq_contracts.store import sinks

            # Every catalog-named output of the run looked up at once, before its first write.
            sinks.probe_run_tables(spark, run_id, capabilities, results_table, spec.quarantine_table, spec.valid_table)
            if writes_rows:
                # The evaluator's references are already prepared (filters analysed once per run).
                _write_rows(
                    spark,
                    contract,
                    evaluator.df,
                    result,
                    run_id,
                    spec.quarantine_table,
                    spec.valid_table,
                    say,
                    capabilities,
                    evaluator.references,
                    spec.attempt,
                    earlier_keys,
                )
            if results_table:
                began = time.perf_counter()
                result.results_table = results_table
                result.finished_at = utcnow()
                # Through the store's interface: the registry row first (a reader that finds the run's
                # results also finds its owner, SLA and tables), then the run's rows and their commit.
                store = sinks.SparkResultsStore(spark, results_table, capabilities)
                store.upsert_registry(_registry_row(contract, result, spec.contract_text))
                result.results_version = store.write_run(result.checks, run_id, attempt=spec.attempt)
                say(f"results: {len(result.checks)} rows to {results_table} in {time.perf_counter() - began:.2f} s")
    result.finished_at = utcnow()
    return result


def _increment(
    spark: SparkSession, contract: Contract, spec: RunSpec, source: DatasetSource, run_id: str, say: Progress
) -> tuple[str, Increment]:
    """The results table an incremental run records its range in, and the rows new since the last run (their
    logs read by this process when it sees the paths its Spark reads: a Connect session's are the server's)."""
    ledger, driver = ledger_location(spec.results_table, spec.checkpoint), not is_connect_session(spark)
    earlier, own = recorded_ranges(spark, ledger, contract.name, source.name, run_id, driver=driver)
    try:
        increment = plan_increment(spark, source, earlier, own, driver=driver)
    except RunSpecError:
        raise
    except Exception as exc:  # noqa: BLE001 - AnalysisException, Py4JJavaError…
        raise DatasetError(f"cannot read the new rows of {source.name!r}: {first_line(exc)}") from None
    say(f"incremental: {increment.note}" + (" (a retry: the range it recorded)" if own is not None else ""))
    return ledger, increment


def _increment_frame(spark: SparkSession, source: DatasetSource, frame: DataFrame, run_filter: str | None) -> DataFrame:
    """An increment's raw rows read as declared and restricted by the run's filter (unparsed markers kept)."""
    if source.read_as_declared or source.null_tokens:
        frame = as_declared(frame, source, case_sensitive(spark))
    if run_filter:
        try:
            frame = frame.where(filter_condition(frame, run_filter))
        except ValueError as exc:
            raise RunArgumentError(str(exc)) from None
    return frame


def _write_rows(
    spark: SparkSession,
    contract: Contract,
    df: DataFrame,
    result: ContractResult,
    run_id: str,
    quarantine_table: str | None,
    valid_table: str | None,
    say: Progress,
    capabilities: SessionCapabilities,
    references: Mapping[str, DataFrame | str] | None = None,
    attempt: int | None = None,
    earlier_keys: Mapping[str, DataFrame] | None = None,
) -> None:
    """Quarantine and valid rows of one run: each table one commit at most, the input read once.

    ``attempt`` (the spec's) travels with each commit: a newer attempt's commit refuses it (store/fencing.py).
    ``earlier_keys``: per column ``duplicates`` check, the earlier rows' keys an increment repeats (``annotate``).

    Whether any row can be quarantined is known from the results before a row is read (a failed
    row-level check whose action quarantines or gates). When none can, the quarantine side is
    never computed: nothing is written or committed, unless an earlier attempt of this run left
    rows there, which are then removed (a retry replaces). When rows are set aside and both tables
    are written, the annotated frame is cached for the two writes, so the row predicates (regexes,
    duplicate windows) and the input read run once, not once per output.
    """
    from pyspark import StorageLevel

    from airflow_dq_contracts.store import sinks

    began = time.perf_counter()
    sets_rows_aside = any(
        check.action.strip().lower() in sinks.QUARANTINING_ACTIONS for check in tagging_checks(contract, result)
    )
    annotated = visible(annotate(contract, df, result, references, earlier_keys=earlier_keys))  # no unparsed markers
    cached = sets_rows_aside and bool(quarantine_table) and bool(valid_table)
    if cached:
        annotated = annotated.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        valid, quarantined = sinks.split_annotated(annotated)
        if quarantine_table:
            result.quarantine_table = quarantine_table
            if sets_rows_aside:
                result.quarantine_rows = sinks.write_quarantine(
                    spark,
                    quarantined,
                    quarantine_table,
                    run_id=run_id,
                    rows_at_most=result.row_count,
                    capabilities=capabilities,
                    attempt=attempt,
                )
                what = f"{result.quarantine_rows} rows"
            else:
                result.quarantine_rows = 0
                removed = sinks.clear_run_rows(
                    spark,
                    quarantine_table,
                    kind="quarantine",
                    run_id=run_id,
                    capabilities=capabilities,
                    attempt=attempt,
                )
                what = "nothing to set aside" + (" (an earlier attempt's rows removed)" if removed else ", no commit")
            say(f"quarantine write: {what} in {time.perf_counter() - began:.2f} s")
        if valid_table:
            began_valid = time.perf_counter()
            result.valid_table = valid_table
            result.valid_rows = sinks.write_valid(
                spark,
                valid,
                valid_table,
                run_id=run_id,
                rows_at_most=result.row_count,
                capabilities=capabilities,
                attempt=attempt,
            )
            say(f"valid write: {result.valid_rows} rows in {time.perf_counter() - began_valid:.2f} s")
    finally:
        if cached:
            annotated.unpersist()
    say(
        f"rows: quarantined {result.quarantine_rows if quarantine_table else '-'}, "
        f"valid {result.valid_rows if valid_table else '-'} in {time.perf_counter() - began:.2f} s"
    )


def _registry_row(contract: Contract, result: ContractResult, contract_text: str | None) -> dict[str, Any]:
    """The registry row of the run's contract version (its text, owner, SLA, tables and this run)."""
    from airflow_dq_contracts.store.results import contract_source_text, registry_row

    assert result.results_table is not None
    return registry_row(
        contract,
        contract_text=contract_text if contract_text is not None else contract_source_text(contract),
        run_id=result.run_id,
        run_at=result.started_at,
        decision=result.decision,
        dataset=result.dataset,
        results_table=result.results_table,
        quarantine_table=result.quarantine_table,
        valid_table=result.valid_table,
    )
