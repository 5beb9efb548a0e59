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

Example::

    spark = get_spark(master="local[2]")
    contract = load_contract("orders.yaml")
    spec = RunSpec.for_contract(contract, input_path="/data/orders", input_format="parquet",
                                reference_time="2024-05-02T00:00:00Z")
    print(run_contract(spark, contract, spec).decision)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from airflow_dq_contracts.contract.model import Contract, Reference
from airflow_dq_contracts.contract.sqltext import datafusion_literal, delta_path_table
from airflow_dq_contracts.results import ContractResult, make_run_id
from airflow_dq_contracts.runspec import DatasetSource, RunSpec, RunSpecError
from airflow_dq_contracts.storage.s3 import S3Settings, is_s3, spark_location
from airflow_dq_contracts.store import open_table, spark_remote
from airflow_dq_contracts.store.spark_remote import SessionCapabilities
from airflow_dq_contracts.timeutil import format_time, utcnow

from .concurrency import run_concurrently
from .evaluator import Evaluator, filter_condition
from .relational import needed_views
from .row_verdicts import annotate, tagging_checks
from .session import (
    DRIVER_READ_SIZES,
    SOURCE_SIZES,
    SmallRunTuning,
    carry_size,
    driver_read_limit,
    driver_read_size,
)
from .spark_errors import first_line, quiet_pyspark_errors
from .statistics_first import StatisticsSource

Progress = Callable[[str], None]

#: The run cannot be described: no dataset, an invalid filter or reference time, bad ``--conf``. The
#: spec's own error (:class:`~airflow_dq_contracts.runspec.RunSpecError`), so a caller catches one type.
RunArgumentError = RunSpecError


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
) -> DataFrame:
    """The DataFrame of a resolved ``source`` (a spec's ``source``), restricted by ``filter``; as :func:`read_dataset`.

    ``capabilities``: what ``spark`` can do (default: as the session tells, :meth:`SessionCapabilities.of`).
    """
    capabilities = capabilities or SessionCapabilities.of(spark)
    df = _load(spark, capabilities, source.path, source.table, source.format, dict(source.options), pin_version, filter)
    if filter:
        try:
            filtered = df.where(filter_condition(df, filter))
        except ValueError as exc:
            raise RunArgumentError(str(exc)) from None
        carry_size(df, filtered)
        df = filtered
    return df


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
            return None
        data = pa.RecordBatchReader.from_stream(table.scan(predicate=predicate)).read_all()
        # The partition predicate must select exactly the files Spark kept: their record counts
        # (no deletion vectors) are the proof; anything else and Spark reads the table.
        if predicate is not None and (
            any(name.startswith("deletionVector") for name in actions.column_names)
            or data.num_rows != int(pc.sum(actions.column("num_records")).as_py() or 0)
        ):
            return None
        with quiet_pyspark_errors():
            df = spark.createDataFrame(data.select(schema.fieldNames()), schema=schema)
    except Exception:  # noqa: BLE001 - any doubt: Spark reads the table
        return None
    DRIVER_READ_SIZES[df] = size
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
) -> DataFrame:
    """A path (``fmt``) or catalog table as a DataFrame, resolved now; :class:`DatasetError` if it cannot be read."""
    if fmt == "delta" and path and not name and capabilities.driver_reads_paths:
        small = _driver_read(spark, path, options, filter)
        if small is not None:
            return small
    size = version = None
    if fmt == "delta" and capabilities.remote:
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
        raise DatasetError(f"cannot read {where}: {first_line(exc)}") from None
    if size is not None:
        SOURCE_SIZES[df] = size
    return df


def _remote_delta_size(spark: SparkSession, path: str | None, name: str | None) -> int | None:
    """A Delta source's size on disk from the server's ``DESCRIBE DETAIL`` (None when it cannot say)."""
    try:
        with quiet_pyspark_errors():
            detail = spark_remote.describe_detail(spark, spark_remote.table_reference(path, name))
    except Exception:  # noqa: BLE001 - not a Delta table, or no DESCRIBE DETAIL here: no size, no tuning
        return None
    value = (detail or {}).get("sizeInBytes")
    return int(value) if isinstance(value, int) else None


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
        options = dict(ref.options)
        if ref.format == "csv" and not ref.table:
            options = {"header": "true", "inferSchema": "true", **options}
        try:
            out[alias] = _load(spark, capabilities, ref.path, ref.table, ref.format, options, pin_version)
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
    # the session may be the caller's (dq-contracts run, evaluate()).
    with SmallRunTuning(spark) as tuning:
        began = time.perf_counter()
        df = read_source(spark, source, run_filter, writes_rows, capabilities)
        read_bytes = driver_read_size(df)
        on_driver = f", {read_bytes:,} bytes read by delta-rs on the driver" if read_bytes is not None else ""
        say(
            f"read: {dataset} ({len(df.columns)} columns"
            + (f", filter {run_filter}" if run_filter else "")
            + on_driver
            + f") in {time.perf_counter() - began:.2f} s"
        )
        reference_frames = read_references(
            spark, contract, declared, pin_version=writes_rows, capabilities=capabilities
        )
        for alias, frame in reference_frames.items():
            say(f"reference {alias}: " + (frame if isinstance(frame, str) else declared[alias].location))

        tuned = tuning.decide([df] + [frame for frame in reference_frames.values() if not isinstance(frame, str)])
        if tuned:
            say(tuned)
        evaluator = Evaluator(
            contract,
            df,
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
            statistics=_statistics_source(source, capabilities),
            capabilities=capabilities,
        )
        result = evaluator.run()

        if writes_rows or results_table:
            # Imported here: the sinks need delta-spark, which a plain evaluation does not.
            from airflow_dq_contracts.store import sinks

            if writes_rows:
                # The evaluator's references are already prepared (filters analysed once per run).
                _write_rows(
                    spark,
                    contract,
                    df,
                    result,
                    run_id,
                    spec.quarantine_table,
                    spec.valid_table,
                    say,
                    capabilities,
                    evaluator.references,
                )
            if results_table:
                began = time.perf_counter()
                result.results_table = results_table
                result.finished_at = utcnow()
                # Through the store's interface: the registry row first (a reader that finds the run's
                # results also finds its owner, SLA and tables), then the run's rows and their commit.
                store = sinks.SparkResultsStore(spark, results_table, capabilities)
                store.upsert_registry(_registry_row(contract, result, spec.contract_text))
                result.results_version = store.write_run(result.checks, run_id)
                say(f"results: {len(result.checks)} rows to {results_table} in {time.perf_counter() - began:.2f} s")
    result.finished_at = utcnow()
    return result


def _statistics_source(source: DatasetSource, capabilities: SessionCapabilities) -> StatisticsSource | None:
    """The Delta path input whose log may answer checks before the scan (``engine/statistics_first.py``)."""
    path = source.path
    if source.format != "delta" or not path or source.table or not capabilities.driver_reads_paths:
        # (On Spark Connect a path is the server's: this process may not see its files, so Spark scans.)
        return None
    # On S3 the log is read with the same credentials the job's Spark uses (the standard environment).
    return StatisticsSource(path, S3Settings.from_env().delta_options() if is_s3(path) else None)


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
) -> None:
    """Quarantine and valid rows of one run: each table one commit at most, the input read once.

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
    annotated = annotate(contract, df, result, references)
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
                )
                what = f"{result.quarantine_rows} rows"
            else:
                result.quarantine_rows = 0
                removed = sinks.clear_run_rows(
                    spark, quarantine_table, kind="quarantine", run_id=run_id, capabilities=capabilities
                )
                what = "nothing to set aside" + (" (an earlier attempt's rows removed)" if removed else ", no commit")
            say(f"quarantine write: {what} in {time.perf_counter() - began:.2f} s")
        if valid_table:
            began_valid = time.perf_counter()
            result.valid_table = valid_table
            result.valid_rows = sinks.write_valid(
                spark, valid, valid_table, run_id=run_id, rows_at_most=result.row_count, capabilities=capabilities
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
