"""The results store's small commits made by delta-rs, from a Spark driver or any Python process — no Spark.

A run's results and its registry upsert are a handful of rows. Committed with delta-rs they take
milliseconds, where a cold JVM spends seconds in Delta's write path; so the Spark job tries these
first, and :class:`~airflow_dq_contracts.store.results.delta_store.DeltaResultsStore` writes with them
outright. Every table is opened by :func:`airflow_dq_contracts.store.delta.open_table`.

delta-rs commits where it is certainly safe (:func:`driver_table`): a table on the local
filesystem or on S3 whose schema is exactly the expected one; a catalog name, another schema (an
older release's results table, which Spark evolves) or no ``deltalake`` here: the caller gets
``None``/``False`` and Spark's Delta writes instead.

**On S3 the results and registry tables are written by delta-rs only** (:func:`on_object_store`,
:func:`commit_results`, :func:`upsert_registry`), never by Spark's Delta: delta-rs creates each
``_delta_log/<version>.json`` with an S3 conditional write (``If-None-Match: *``, its default on S3
since 0.23), so of two drivers committing the same version one is refused and retries on the new
state (appends never conflict; a retried run's replacement is retried up to ``attempts`` times),
where Spark's default ``S3SingleDriverLogStore`` would let the second overwrite the first. The two
kinds of writers are never mixed on one table: a Spark commit there could overwrite a delta-rs one.
Credentials: the ``storage_options`` given, else the standard AWS_* environment
(:meth:`~airflow_dq_contracts.storage.s3.S3Settings.delta_options`).

* :func:`append_results` — a **new** run's results in one append commit (its version), or None;
  a missing local results table is created first, as Spark's Delta creates it (:func:`create_local_table`).
* :func:`upsert_registry` — one registry row read, merged (:func:`merge_registry_rows`) and
  committed (an append for a new key, else a predicate overwrite of the key's rows), or False.
* :func:`write_run_rows` — a run's few quarantine/valid rows (an Arrow table the Spark job collected)
  committed to a local table: created when missing, appended for a new run, the run's rows replaced
  on a retry — or None, and Spark's Delta writes them.
* :func:`run_absent` — whether a table certainly holds no row of a run (a retry replaces instead).
* :func:`result_row`, :func:`arrow_schema`, :func:`commit_token` — a result row's values, the
  Arrow schema of a column list, the ``userMetadata`` tag a results commit is found by.

Plain Python plus ``deltalake``/``pyarrow`` (imported lazily): no pyspark, no Airflow.

Example::

    version = append_results("/wh/dq_results", result.checks, run_id=result.run_id)
    if version is None:
        ...  # Spark's Delta writes (and replaces the run's rows on a retry)
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_dq_contracts.results import RESULT_COLUMNS, CheckResult
from airflow_dq_contracts.storage.s3 import S3Settings, is_s3, with_retry_bounds
from airflow_dq_contracts.store import fencing
from airflow_dq_contracts.store.commit_lock import local_commit_lock, local_table_path
from airflow_dq_contracts.store.delta import StoreError, first_line, is_path, open_table, plain_rows, sql_string
from airflow_dq_contracts.store.results.outages import note_lost, raise_if_outage, registry_outage
from airflow_dq_contracts.store.results.registry import (
    REGISTRY_COLUMNS,
    REGISTRY_KEY,
    REGISTRY_TIME_COLUMNS,
    fold_registry_rows,
    merge_registry_rows,
)
from airflow_dq_contracts.timeutil import parse_time, to_utc

__all__ = [
    "DRIVER_ROWS_LIMIT",
    "REGISTRY_DESCRIPTION",
    "RESULTS_DESCRIPTION",
    "RESULTS_PARTITION_COLUMNS",
    "append_results",
    "commit_results",
    "arrow_schema",
    "commit_token",
    "create_local_table",
    "driver_table",
    "fold_registry_rows",
    "merge_registry_rows",
    "on_object_store",
    "read_registry_key",
    "registry_key_predicate",
    "result_row",
    "run_absent",
    "upsert_registry",
    "write_run_rows",
]

log = logging.getLogger(__name__)

#: Partitioning of the results table: dashboards and history ask about one contract at a time.
RESULTS_PARTITION_COLUMNS: tuple[str, ...] = ("contract_name",)

#: The tables' descriptions (Delta ``metaData.description``), whichever writer creates them.
RESULTS_DESCRIPTION = "airflow-dq-contracts check results: one row per check per run"
REGISTRY_DESCRIPTION = "airflow-dq-contracts contract registry: one row per contract version"

#: Quarantine/valid rows of one run up to this many are committed by delta-rs from the driver
#: (:func:`write_run_rows`); more are written by Spark's Delta from the executors.
DRIVER_ROWS_LIMIT = 10_000

# Delta type names delta-rs writes exactly as Spark's Delta does, in a table of protocol (1, 2):
# no table feature (timestamp_ntz, variant, type widening…) that the two might enable differently.
_PLAIN_TYPES = frozenset(
    ("string", "long", "integer", "short", "byte", "double", "float", "boolean", "date", "timestamp", "binary")
)

_ARROW_KINDS = {"string": "string", "double": "float64", "boolean": "bool_", "bigint": "int64"}

# Delta's names of the primitive types whose Spark SQL name differs (as Spark's simpleString prints them).
_SPARK_NAMES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def commit_token(kind: str, run_id: str) -> str:
    """A unique ``userMetadata`` for one write, so its commit can be found in the table's history.

    >>> json.loads(commit_token("results", "r1"))["run_id"]
    'r1'
    """
    return json.dumps({"writer": "airflow-dq-contracts", "table": kind, "run_id": run_id, "write": uuid.uuid4().hex})


def arrow_schema(columns: Sequence[tuple[str, str]]) -> Any:
    """The ``pyarrow`` schema of ``(name, kind)`` columns (the kinds of RESULT_COLUMNS / REGISTRY_COLUMNS).

    >>> arrow_schema([("n", "bigint"), ("at", "timestamp")]).types
    [DataType(int64), TimestampType(timestamp[us, tz=UTC])]
    """
    import pyarrow as pa

    def kind_of(kind: str) -> Any:
        if kind == "timestamp":
            return pa.timestamp("us", tz="UTC")
        if kind == "array<string>":
            return pa.list_(pa.string())
        return getattr(pa, _ARROW_KINDS[kind])()

    return pa.schema([(name, kind_of(kind)) for name, kind in columns])


def result_row(record: CheckResult) -> tuple[Any, ...]:
    """``record``'s values in ``RESULT_COLUMNS`` order, each of its column's type (times as aware UTC).

    >>> import datetime as dt
    >>> row = result_row(CheckResult(run_id="r", contract_name="c", contract_version="1", dataset="d",
    ...     check_id="k", check_name="n", check_type="count", column=None, severity="P1", action="gate",
    ...     validator="> 0", metric_value=3, status="passed", passed=True, failed_rows=None, message="",
    ...     row_count=3, filter=None, evaluated_at=dt.datetime(2024, 5, 2)))
    >>> row[11], row[18].isoformat()
    (3.0, '2024-05-02T00:00:00+00:00')
    """
    values: list[Any] = []
    for name, kind in RESULT_COLUMNS:
        value = getattr(record, name)
        if value is not None:
            if kind == "string":
                value = str(value)
            elif kind == "double":
                value = float(value)
            elif kind == "bigint":
                value = int(value)
            elif kind == "boolean":
                value = bool(value)
            elif kind == "timestamp":
                # Aware datetimes convert to the right instant whatever the JVM/Python time zone.
                value = parse_time(value) if isinstance(value, str) else to_utc(value)
            elif kind == "array<string>":
                value = [str(item) for item in value]
        values.append(value)
    return tuple(values)


def _type_name(kind: Any) -> str:
    """A Delta schema JSON type as Spark SQL prints it (``long`` → ``bigint``, ``array<string>``…)."""
    if isinstance(kind, str):
        return _SPARK_NAMES.get(kind, kind)
    if isinstance(kind, dict):
        if kind.get("type") == "array":
            return f"array<{_type_name(kind.get('elementType'))}>"
        if kind.get("type") == "map":
            return f"map<{_type_name(kind.get('keyType'))},{_type_name(kind.get('valueType'))}>"
        if kind.get("type") == "struct":
            fields = ",".join(f"{f.get('name')}:{_type_name(f.get('type'))}" for f in kind.get("fields", []))
            return f"struct<{fields}>"
    return json.dumps(kind, sort_keys=True)


def _is_local(location: str) -> bool:
    return is_path(location) and ("://" not in location or location.startswith("file:"))


def on_object_store(location: str | None) -> bool:
    """Whether the table at ``location`` is on S3, where its results/registry commits are delta-rs's alone.

    >>> on_object_store("s3a://lake/dq_results"), on_object_store("/wh/dq_results"), on_object_store(None)
    (True, False, False)
    """
    return location is not None and is_s3(location)


def delta_uri(location: str) -> str:
    """The location as delta-rs names it (``s3a://``/``s3n://`` are Spark's names of ``s3://``).

    >>> delta_uri("s3a://lake/t"), delta_uri("/wh/t")
    ('s3://lake/t', '/wh/t')
    """
    for scheme in ("s3a://", "s3n://"):
        if location.lower().startswith(scheme):
            return "s3://" + location[len(scheme) :]
    return location


def _options(location: str, storage_options: Mapping[str, str] | None) -> dict[str, str] | None:
    """The given options, else (on S3) the standard AWS_* environment's; on S3 with bounded retries."""
    if is_s3(location):
        return with_retry_bounds(storage_options or S3Settings.from_env().delta_options())
    return dict(storage_options) if storage_options else None


def driver_table(
    location: str | None,
    columns: Sequence[tuple[str, str]],
    partition_by: Sequence[str] = (),
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """The existing table at ``location`` opened with delta-rs, for a small commit from here; else None.

    Only a table on the local filesystem (a plain path or ``file:``) or on S3 whose schema is
    exactly ``columns`` (``(name, Spark SQL type)``) and whose partitioning is ``partition_by``; a
    catalog name (None here), another schema, a missing or unreadable table, no ``deltalake`` — None.

    Example::

        table = driver_table("/wh/dq_contracts", REGISTRY_COLUMNS)
    """
    if location is None or not (_is_local(location) or is_s3(location)):
        return None
    try:
        table = open_table(delta_uri(location), storage_options=_options(location, storage_options))
        found = [(f["name"], _type_name(f["type"])) for f in json.loads(table.schema().to_json())["fields"]]
        if found != list(columns) or list(table.metadata().partition_columns) != list(partition_by):
            return None
        return table
    except Exception as exc:  # noqa: BLE001 - missing table, unreadable, no deltalake: Spark writes
        log.debug("table %r: not written by delta-rs here (%s)", location, first_line(exc))
        return None


def _local_state(path: str) -> str:
    """``missing``, ``delta_log`` (a ``_delta_log`` folder is there) or ``other`` content at a local ``path``."""
    if not os.path.lexists(path):
        return "missing"
    if not os.path.isdir(path):
        return "other"
    if os.path.isdir(os.path.join(path, "_delta_log")):
        return "delta_log"
    return "other" if os.listdir(path) else "missing"


def create_local_table(
    location: str | None,
    schema: Any,
    partition_by: Sequence[str] = (),
    *,
    description: str | None = None,
) -> Any:
    """A missing local table created by delta-rs with an empty first commit, as Spark's Delta creates it.

    ``schema`` is a ``pyarrow`` schema. Version 0 is a ``CREATE TABLE`` commit holding only the
    metadata (the schema, ``partition_by``, ``description``) and protocol (1, 2) — what
    ``DeltaTable.createIfNotExists`` writes from Spark — made in milliseconds, under the table's
    commit lock (store/commit_lock.py), so writers creating it at once find one winner's table.
    Returns the ``deltalake.DeltaTable`` of a table created here or just before by another writer;
    None when ``location`` is not a local path or holds something else (the caller's Spark path
    reports it). Call it holding no lock.

    Example::

        table = create_local_table("/wh/dq_contracts", arrow_schema(REGISTRY_COLUMNS), description="…")
    """
    path = local_table_path(location)
    if path is None:
        return None
    from deltalake import DeltaTable, Schema

    with local_commit_lock(path):
        state = _local_state(path)
        if state == "missing":
            return DeltaTable.create(
                path,
                Schema.from_arrow(schema),
                mode="error",
                partition_by=list(partition_by) or None,
                description=description,
            )
    if state == "delta_log":
        return open_table(path)
    return None


def _plain_type(kind: Any) -> bool:
    """Whether a Delta schema JSON type is made of :data:`_PLAIN_TYPES` (and decimals, arrays, maps, structs)."""
    if isinstance(kind, str):
        return kind in _PLAIN_TYPES or kind.startswith("decimal(")
    if isinstance(kind, dict):
        if kind.get("type") == "array":
            return _plain_type(kind.get("elementType"))
        if kind.get("type") == "map":
            return _plain_type(kind.get("keyType")) and _plain_type(kind.get("valueType"))
        if kind.get("type") == "struct":
            return all(_plain_type(f.get("type")) and not f.get("metadata") for f in kind.get("fields", []))
    return False


def _nullable_arrow(data_type: Any) -> Any:
    """A ``pyarrow`` type with every field nullable (map keys stay required), as Delta stores a written schema."""
    import pyarrow as pa

    if pa.types.is_struct(data_type):
        return pa.struct([pa.field(f.name, _nullable_arrow(f.type), True) for f in data_type])
    if pa.types.is_large_list(data_type):
        return pa.large_list(pa.field(data_type.value_field.name, _nullable_arrow(data_type.value_type), True))
    if pa.types.is_list(data_type):
        return pa.list_(pa.field(data_type.value_field.name, _nullable_arrow(data_type.value_type), True))
    if pa.types.is_map(data_type):
        return pa.map_(
            pa.field(data_type.key_field.name, _nullable_arrow(data_type.key_type), False),
            pa.field(data_type.item_field.name, _nullable_arrow(data_type.item_type), True),
        )
    return data_type


def _delta_schema(table: Any) -> Any:
    return json.loads(table.schema().to_json())


def write_run_rows(
    location: str | None,
    data: Any,
    schema: Mapping[str, Any],
    *,
    kind: str,
    run_column: str,
    run_id: str,
    partition_by: Sequence[str] = (),
    token: str | None = None,
    attempt: int | None = None,
) -> int | None:
    """A run's quarantine/valid rows committed by delta-rs to a local table; the rows written, or None.

    ``data`` (a ``pyarrow`` table, every row of ``run_id`` in ``run_column``) is what the Spark job
    collected of the rows it would write, ``schema`` the Delta schema JSON Spark's Delta would give the
    table (every field nullable). Under the table's commit lock (store/commit_lock.py), one commit:
    an append when the table holds no row of the run, else a predicate overwrite replacing the
    run's rows (a retry) — the same end state as Spark's write. A missing table is first created
    as Spark creates it (:func:`create_local_table`: an empty ``CREATE TABLE`` version 0,
    partitioned by ``partition_by``). The commit is tagged ``token`` (``userMetadata``) and carries
    ``attempt`` (store/fencing.py: a newer attempt's commit there refuses it, never a fallback to Spark).

    None — nothing committed, Spark's Delta writes — unless every condition holds: a local path; a
    schema of plain types (:data:`_PLAIN_TYPES`, no field metadata) that delta-rs derives from
    ``data`` exactly; an existing table of exactly that schema, protocol (1, ≤ 2); no ``deltalake``
    error. A failure after the commit is harmless: Spark then finds the run's rows and replaces them.

    Example::

        n = write_run_rows("/wh/q/orders", arrow_rows, schema_json, kind="quarantine",
                           run_column="_dq_run_id", run_id=run_id)
    """
    path = local_table_path(location)
    if path is None or not _plain_type(dict(schema)):
        return None
    try:
        import pyarrow as pa
        from deltalake import DeltaTable, Schema, write_deltalake

        arrow = pa.schema([pa.field(f.name, _nullable_arrow(f.type), True) for f in data.schema])
        # Rebuilt from plain values (≤ DRIVER_ROWS_LIMIT rows: milliseconds): the buffers Spark's Arrow
        # collection hands over (offsets of nested strings) can make delta-rs's Arrow kernels panic.
        data = pa.Table.from_pylist(data.to_pylist(), schema=arrow)
        if json.loads(Schema.from_arrow(arrow).to_json()) != dict(schema):
            log.debug("%s table %r: delta-rs would store another schema than Spark's; Spark writes", kind, location)
            return None
        properties = fencing.commit_properties(token, run_id, attempt)
        with local_commit_lock(path):
            state = _local_state(path)
            if state == "other":
                return None  # Spark's path refuses to bury what is there
            if state == "missing":
                table = DeltaTable.create(
                    path, Schema.from_arrow(arrow), mode="error", partition_by=list(partition_by) or None
                )
                absent = True
            else:
                table = open_table(path, what=kind)
                protocol = table.protocol()
                if (
                    _delta_schema(table) != dict(schema)
                    or protocol.min_reader_version != 1
                    or protocol.min_writer_version > 2
                ):
                    return None  # schema evolution, another layout, table features: Spark's Delta
                fencing.check_attempt(table, f"{kind} table {location!r}", run_id, attempt)
                absent = _absent_in(table, run_column, run_id)
            if absent:
                write_deltalake(table, data, mode="append", commit_properties=properties)
            else:
                predicate = f"{run_column} = {sql_string(run_id)}"
                write_deltalake(table, data, mode="overwrite", predicate=predicate, commit_properties=properties)
        return int(data.num_rows)
    except fencing.StaleAttemptError:
        raise
    except BaseException as exc:  # noqa: BLE001 - also pyo3's PanicException: Spark writes instead (and replaces)
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit: not ours to map
        # Said, not hidden: the run still ends right (Spark writes and replaces), but a delta-rs failure
        # here is worth a look.
        log.warning("%s table %r: delta-rs write failed (%s); Spark writes instead", kind, location, first_line(exc))
        return None


def _absent_in(table: Any, run_column: str, run_id: str) -> bool:
    import pyarrow as pa

    reader = table.scan(columns=[run_column], predicate=f"{run_column} = {sql_string(run_id)}")
    return bool(pa.RecordBatchReader.from_stream(reader).read_all().num_rows == 0)


def run_absent(
    location: str | None, run_column: str, run_id: str, *, storage_options: Mapping[str, str] | None = None
) -> bool:
    """True only when the existing Delta table at ``location`` certainly holds no row of ``run_id``.

    Read with delta-rs: the table's log plus, at most, the files whose statistics admit the run
    (deletion vectors and column mapping honoured) — no Spark job and no state reconstruction.
    False whenever that cannot be known: a catalog table name (``location`` None), no
    ``deltalake`` here (a cluster node without it), a location or credentials delta-rs cannot use,
    a missing table; the caller then replaces, which is always correct.

    Example::

        if run_absent("/wh/q/orders", "_dq_run_id", run_id):
            ...  # a plain append; else a replaceWhere of the run's rows
    """
    if location is None:
        return False
    try:
        table = open_table(delta_uri(location), storage_options=_options(location, storage_options))
        if run_column not in table.schema().to_arrow().names:
            return False
        return _absent_in(table, run_column, run_id)
    except Exception as exc:  # noqa: BLE001 - any doubt means "replace", never "append"
        log.debug(
            "table %r: cannot tell with delta-rs whether run %s has rows (%s); replacing",
            location,
            run_id,
            first_line(exc),
        )
        return False


def append_results(
    location: str,
    records: Sequence[CheckResult],
    run_id: str,
    *,
    storage_options: Mapping[str, str] | None = None,
    token: str | None = None,
    attempt: int | None = None,
) -> int | None:
    """A new run's results appended by delta-rs (one commit, milliseconds): that commit's version, or None.

    None — nothing committed — unless :func:`driver_table` allows it (a local table of the exact
    results schema and partitioning) and the table holds no row of the run (a retry replaces, with
    Spark). The commit is tagged ``token`` (default: a fresh :func:`commit_token`), which the
    read-back uses to recognise the run's commit, and carries ``attempt`` (store/fencing.py). Every record
    must carry ``run_id`` (:class:`~airflow_dq_contracts.store.delta.StoreError` otherwise). A failure after
    the commit is harmless: Spark's write then finds the run's rows and replaces them.

    Example::

        version = append_results("/wh/dq_results", result.checks, result.run_id)
    """
    records = _run_records(location, records, run_id)
    table = driver_table(location, RESULT_COLUMNS, RESULTS_PARTITION_COLUMNS, storage_options=storage_options)
    try:
        path = local_table_path(location)
        if table is None and path is not None and _local_state(path) == "missing":
            # A new local table: created by delta-rs as Spark's Delta creates it, then appended to.
            table = create_local_table(
                location, arrow_schema(RESULT_COLUMNS), RESULTS_PARTITION_COLUMNS, description=RESULTS_DESCRIPTION
            )
            table = table and driver_table(location, RESULT_COLUMNS, RESULTS_PARTITION_COLUMNS)
        if table is None:
            return None
        from deltalake import write_deltalake

        data = _results_arrow(records)
        tag = token if token is not None else commit_token("results", run_id)
        properties = fencing.commit_properties(tag, run_id, attempt)
        with local_commit_lock(location):
            table.update_incremental()  # the state the commit is made on, read under the lock
            fencing.check_attempt(table, f"results table {location!r}", run_id, attempt)
            if not _absent_in(table, "run_id", run_id):
                return None
            write_deltalake(table, data, mode="append", commit_properties=properties)
        return int(table.version())
    except fencing.StaleAttemptError:
        raise
    except Exception as exc:  # noqa: BLE001 - Spark writes instead (and replaces, should this have committed)
        log.debug("results table %r: delta-rs append failed (%s); Spark writes", location, first_line(exc))
        return None


def _run_records(location: str, records: Sequence[CheckResult], run_id: str) -> list[CheckResult]:
    """``records`` as a list, each a :class:`CheckResult` of ``run_id`` (:class:`StoreError` otherwise)."""
    records = list(records)
    for record in records:
        if not isinstance(record, CheckResult) or record.run_id != run_id:
            raise StoreError(
                f"results table {location!r}: expected CheckResult records of run {run_id!r}, got {record!r}", location
            )
    return records


def _results_arrow(records: Sequence[CheckResult]) -> Any:
    """The records as one Arrow table of the results schema."""
    import pyarrow as pa

    names = [name for name, _ in RESULT_COLUMNS]
    return pa.Table.from_pylist([dict(zip(names, result_row(r))) for r in records], schema=arrow_schema(RESULT_COLUMNS))


def _found_schema(table: Any) -> tuple[list[tuple[str, str]], list[str]]:
    fields = json.loads(table.schema().to_json())["fields"]
    return [(f["name"], _type_name(f["type"])) for f in fields], list(table.metadata().partition_columns)


def _version_of(uri: str, options: dict[str, str] | None, tag: str, what: str) -> int:
    """The version of the commit tagged ``tag`` (our own, just made), read from the table's history."""
    table = open_table(uri, storage_options=options, what=what)
    for entry in table.history(50):
        if entry.get("userMetadata") == tag:
            return int(entry["version"])
    return int(table.version())  # 50 commits since ours: the table moved on; its version is still a bound


def commit_results(
    location: str,
    records: Sequence[CheckResult],
    run_id: str,
    *,
    storage_options: Mapping[str, str] | None = None,
    token: str | None = None,
    attempts: int = 8,
    attempt: int | None = None,
) -> int:
    """A run's results committed by delta-rs on an object store (S3), where Spark never writes them.

    One commit: an append when the table holds no row of ``run_id`` (the first run's append creates
    the table, partitioned by ``contract_name``; two creators race safely, see the module
    docstring), else a predicate overwrite replacing the run's rows (an Airflow retry). A commit
    refused because another writer committed first is tried again on the new state, up to ``attempts``
    times; it carries the Airflow ``attempt`` (store/fencing.py). Returns the version of the commit
    (tagged ``token``); raises :class:`~airflow_dq_contracts.store.delta.StoreError` naming the table
    when it cannot commit — never falls back to Spark's Delta, which must not write this table.

    Example::

        version = commit_results("s3://lake/dq/results", result.checks, result.run_id)
    """
    from deltalake import write_deltalake
    from deltalake.exceptions import CommitFailedError

    from airflow_dq_contracts.store.delta import TableNotFoundError

    records = _run_records(location, records, run_id)
    uri, options = delta_uri(location), _options(location, storage_options)
    data = _results_arrow(records)
    tag = token if token is not None else commit_token("results", run_id)
    properties = fencing.commit_properties(tag, run_id, attempt)
    last: BaseException | None = None
    for round_ in range(max(1, attempts)):
        try:
            try:
                table = open_table(uri, storage_options=options, what="results")
            except TableNotFoundError:
                write_deltalake(
                    uri,
                    data,
                    mode="append",
                    partition_by=list(RESULTS_PARTITION_COLUMNS),
                    description="airflow-dq-contracts check results: one row per check per run",
                    storage_options=options,
                    commit_properties=properties,
                )
                return note_lost(uri, run_id, -1, _version_of(uri, options, tag, "results"))
            columns, partitions = _found_schema(table)
            if columns != list(RESULT_COLUMNS) or partitions != list(RESULTS_PARTITION_COLUMNS):
                raise StoreError(
                    f"results table {uri!r} is not of this release's results schema (columns {columns}, partitioned "
                    f"by {partitions}); on object storage only delta-rs writes it and it does not evolve schemas: "
                    "give a new results table",
                    uri,
                )
            fencing.check_attempt(table, f"results table {uri!r}", run_id, attempt)
            read_version = int(table.version())
            if _absent_in(table, "run_id", run_id):
                write_deltalake(table, data, mode="append", commit_properties=properties)
            else:
                predicate = f"run_id = {sql_string(run_id)}"
                write_deltalake(table, data, mode="overwrite", predicate=predicate, commit_properties=properties)
            return note_lost(uri, run_id, read_version, _version_of(uri, options, tag, "results"))
        except CommitFailedError as exc:  # another writer won this version: look again, then retry
            last = exc
            log.info("results table %r: run %s's commit refused (try %d); retrying", uri, run_id, round_ + 1)
            time.sleep(min(2.0, 0.05 * 2**round_) * (0.5 + random.random()))
        except Exception as exc:  # noqa: BLE001 - delta-rs/object_store errors: one located StoreError
            raise_if_outage(exc, "results", uri, f"committing run {run_id}")
            if isinstance(exc, StoreError):
                raise
            raise StoreError(
                f"results table {uri!r}: delta-rs could not commit run {run_id}: {first_line(exc)}", uri
            ) from None
    raise StoreError(
        f"results table {uri!r}: run {run_id}'s commit was refused {attempts} times by concurrent commits "
        f"({first_line(last) if last else 'no reason'})",
        uri,
    )


# --------------------------------------------------------------------------------------------
# The registry


def registry_key_predicate(row: Mapping[str, Any]) -> str:
    """``row``'s key as a delta-rs (DataFusion) predicate, NULL-safe.

    >>> registry_key_predicate({"contract_name": "orders", "contract_version": None})
    "contract_name = 'orders' AND contract_version IS NULL"
    """
    return " AND ".join(
        f"{key} IS NULL" if row.get(key) is None else f"{key} = {sql_string(str(row[key]))}" for key in REGISTRY_KEY
    )


def read_registry_key(
    location: str | None, row: Mapping[str, Any], *, storage_options: Mapping[str, str] | None = None
) -> list[dict[str, Any]] | None:
    """The registry rows of ``row``'s key read by delta-rs, times as aware UTC datetimes; None when it cannot.

    No Spark job (which costs a small run seconds: the log read, the state reconstruction and a
    file scan, cold); None — a catalog name (``location`` None), no ``deltalake`` here, a table
    delta-rs cannot read or without the registry's columns — and the caller reads them with Spark.

    Example::

        found = read_registry_key("/wh/dq_contracts", {"contract_name": "orders", "contract_version": "1.0"})
    """
    if location is None:
        return None
    try:
        import pyarrow as pa

        table = open_table(delta_uri(location), storage_options=_options(location, storage_options), what="registry")
        names = [name for name, _ in REGISTRY_COLUMNS]
        if not set(names) <= set(table.schema().to_arrow().names):
            return None
        return plain_rows(
            pa.RecordBatchReader.from_stream(
                table.scan(columns=names, predicate=registry_key_predicate(row))
            ).read_all()
        )
    except Exception:  # noqa: BLE001 - any doubt: the caller reads the key with Spark
        return None


def upsert_registry(
    location: str, row: Mapping[str, Any], *, storage_options: Mapping[str, str] | None = None, attempts: int = 8
) -> bool:
    """The registry upsert committed by delta-rs (milliseconds, no Spark job); False: nothing committed.

    Only for a table :func:`driver_table` allows (local, the exact registry schema). One commit: an
    append for a new key, else a predicate overwrite of the key's rows; a concurrent commit makes
    delta-rs refuse it, and the key is read and merged again (up to ``attempts`` times). Naive
    times in ``row`` are UTC.

    Example::

        if not upsert_registry("/wh/dq_contracts", registry_row(contract, ...)):
            ...  # Spark's Delta writes it
    """
    row = {**row, **{name: to_utc(row[name]) for name in REGISTRY_TIME_COLUMNS if row.get(name) is not None}}
    table = driver_table(location, REGISTRY_COLUMNS, storage_options=storage_options)
    if table is None and on_object_store(location):
        table = _open_or_create_registry(location, row, storage_options)
        if table is True:
            return True
        if table is None:
            return False
    try:
        path = local_table_path(location)
        if table is None and path is not None and _local_state(path) == "missing":
            # A new local registry: created by delta-rs as Spark's Delta creates it; the key is then appended.
            table = create_local_table(location, arrow_schema(REGISTRY_COLUMNS), description=REGISTRY_DESCRIPTION)
            table = table and driver_table(location, REGISTRY_COLUMNS)
        if table is None:
            return False
        import pyarrow as pa
        from deltalake import write_deltalake
        from deltalake.exceptions import CommitFailedError

        names = [name for name, _ in REGISTRY_COLUMNS]
        for attempt in range(attempts):
            found = read_registry_key(location, row, storage_options=storage_options)
            if found is None:
                return False
            merged = fold_registry_rows(found, row)
            data = pa.Table.from_pylist(
                [{name: merged.get(name) for name in names}], schema=arrow_schema(REGISTRY_COLUMNS)
            )
            try:
                with local_commit_lock(location):
                    if found:
                        write_deltalake(table, data, mode="overwrite", predicate=registry_key_predicate(row))
                    else:
                        write_deltalake(table, data, mode="append")
                return True
            except CommitFailedError:  # another run committed first: read the key again, merge, retry
                time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
                table.update_incremental()
        return False
    except Exception as exc:  # noqa: BLE001 - Spark upserts instead (the merge is idempotent)
        registry_outage(location, row, exc)
        log.debug("registry table %r: delta-rs upsert failed (%s); Spark writes", location, first_line(exc))
        return False


def _open_or_create_registry(
    location: str, row: Mapping[str, Any], storage_options: Mapping[str, str] | None, attempts: int = 5
) -> Any:
    """An object store's registry table: True when ``row`` created it, the table opened with delta-rs
    when it exists (the caller upserts onto it), None when it cannot be written here.

    Concurrent first runs race: one creates the table while another is between its look and its
    write, or mid-way through opening it. Each round looks again (creation by an append, else the
    table as it now is); only a table that stays unreadable or of another schema ends in None.
    Two first runs that both append leave the key two rows, which every read folds into one
    (:func:`fold_registry_rows`) and the next upsert of the key replaces.
    """
    import pyarrow as pa
    from deltalake import write_deltalake

    from airflow_dq_contracts.store.delta import table_exists

    uri, options = delta_uri(location), _options(location, storage_options)
    names = [name for name, _ in REGISTRY_COLUMNS]
    reason = "it exists with another schema or cannot be read"
    for attempt in range(attempts):
        try:
            if not table_exists(uri, options):
                data = pa.Table.from_pylist(
                    [{name: row.get(name) for name in names}], schema=arrow_schema(REGISTRY_COLUMNS)
                )
                write_deltalake(uri, data, mode="append", description=REGISTRY_DESCRIPTION, storage_options=options)
                return True
        except Exception as exc:  # noqa: BLE001 - an outage raises; a lost creation race looks again
            registry_outage(location, row, exc)
            reason = first_line(exc)
        table = driver_table(location, REGISTRY_COLUMNS, storage_options=storage_options)
        if table is not None:
            return table
        time.sleep(min(2.0, 0.1 * 2**attempt) * (0.5 + random.random()))
    log.warning("registry table %r: delta-rs cannot write it (%s)", location, reason)
    return None
