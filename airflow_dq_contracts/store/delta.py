"""The one place that opens a Delta table with delta-rs: locations, storage options, one error mapping.

Plain Python plus ``deltalake`` (imported lazily): the Airflow side (operator read-back, sensors,
triggers, report, history, registry) and the Spark driver's delta-rs fast paths all open tables
through :func:`open_table`, so credentials (``storage_options``) and error wording are decided once.

Locations (:func:`is_path`, ``resolve_location``, :class:`StoreError`…) are
:mod:`airflow_dq_contracts.storage.locations`'s; ``is_path`` and ``StoreError`` are re-exported here.

* :func:`table_exists` — whether a Delta log is there (an unreachable store counts as "no").
* :func:`open_table` — a ``deltalake.DeltaTable`` or :class:`TableNotFoundError` /
  :class:`StoreError` with a one-line reason naming the location.
* :func:`scan_table` / :func:`stream_table` — the rows matching a predicate, some columns, as a
  ``pyarrow.Table`` / record batch reader (delta-rs's own engine: deletion vectors and column
  mapping honoured).
* :func:`plain_rows` — a ``pyarrow.Table``'s rows as dicts, timestamps as aware UTC datetimes.

Example::

    >>> is_path("/data/dq/results"), is_path("s3://bucket/dq/results"), is_path("dq.results")
    (True, True, False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_dq_contracts.storage.locations import StoreError, is_path, normalise_location
from airflow_dq_contracts.timeutil import from_epoch_micros

__all__ = [
    "StoreError",
    "TableNotFoundError",
    "access_refused",
    "is_path",
    "normalise_location",
    "open_table",
    "plain_rows",
    "scan_table",
    "sql_string",
    "stream_table",
    "table_exists",
]


class TableNotFoundError(StoreError):
    """No Delta table at the location (no transaction log there)."""


def sql_string(value: str) -> str:
    """A single-quoted SQL string literal for DataFusion (standard SQL: quotes are doubled).

    >>> sql_string("it's")
    "'it''s'"
    """
    return "'" + value.replace("'", "''") + "'"


def table_exists(location: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether ``location`` holds a Delta table; an unreachable store is "no" here (:func:`open_table` says why)."""
    from deltalake import DeltaTable

    try:
        return bool(DeltaTable.is_deltatable(normalise_location(location), dict(storage_options or {})))
    except Exception:  # noqa: BLE001 - delta-rs raises OSError, its own errors and panics alike: all mean "not readable"
        return False


#: How object stores (through delta-rs's object_store) say "these credentials are refused".
_REFUSED = re.compile(
    r"lacked the necessary privileges|not authenticated|\b40[13]\b|Forbidden|AccessDenied|SignatureDoesNotMatch|"
    r"InvalidAccessKeyId|ExpiredToken|AuthorizationFailure|AuthenticationFailed|InvalidAuthenticationInfo"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def access_refused(location: str, storage_options: Mapping[str, str] | None = None) -> str | None:
    """Why the store refuses these credentials at ``location`` (one line), or None (readable, or simply absent).

    A sensor or an operator asks before it reports "no table there" or submits a job: a wrong secret
    and a table not written yet look alike otherwise (:func:`table_exists` says "no" to both).
    """
    try:
        open_table(location, storage_options=storage_options)
    except TableNotFoundError:
        return None
    except StoreError as exc:
        text = _ANSI.sub("", str(exc))
        if _REFUSED.search(text):
            return " ".join(line.strip() for line in text.splitlines()[:3] if line.strip())[:400]
    return None


def open_table(
    location: str,
    *,
    storage_options: Mapping[str, str] | None = None,
    what: str = "Delta",
    version: int | None = None,
) -> Any:
    """The ``deltalake.DeltaTable`` at ``location`` — the only constructor call of the package.

    ``what`` names the table in errors ("results", "quarantine", "registry"…). Raises
    :class:`TableNotFoundError` when there is no Delta log and :class:`StoreError` for anything
    else (a catalog name, unreachable storage, a corrupt log), each naming the location.

    The table's file list is always loaded: delta-rs 1.x ignores (and warns about) ``without_files``.
    """
    if not isinstance(location, str) or not location.strip():
        raise StoreError(f"{what} table: expected a path or URI, got {location!r}")
    if not is_path(location):
        raise StoreError(
            f"{what} table {location!r} looks like a catalog table name; delta-rs reads Delta tables "
            "by path or URI only (e.g. /data/dq/results or s3://bucket/dq/results)"
        )
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError
    from deltalake.exceptions import TableNotFoundError as RustTableNotFound

    path = normalise_location(location)
    try:
        return DeltaTable(path, version=version, storage_options=dict(storage_options or {}) or None)
    except RustTableNotFound as exc:
        raise TableNotFoundError(
            f"{what} table {path!r} does not exist (no Delta transaction log there): "
            "nothing has been written to it yet, or the path is wrong",
            path,
        ) from exc
    except (DeltaError, OSError) as exc:
        raise StoreError(f"{what} table {path!r} cannot be opened: {exc}", path) from exc
    except Exception as exc:  # noqa: BLE001 - delta-rs also raises ValueError/RuntimeError/… for a bad log or URI
        raise StoreError(f"{what} table {path!r} cannot be opened: {exc}", path) from exc
    except BaseException as exc:  # noqa: BLE001 - pyo3's PanicException (a BaseException) on a corrupt log
        if type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit, a cancelled task: not ours to map
        raise StoreError(f"{what} table {path!r} cannot be opened: delta-rs panicked: {exc}", path) from exc


def stream_table(table: Any, location: str, what: str, columns: Sequence[str] | None, predicate: str | None) -> Any:
    """The rows of an open ``table`` matching ``predicate`` (DataFusion SQL) as a ``pyarrow.RecordBatchReader``.

    ``columns=None`` reads every column. A column the table lacks is a :class:`StoreError` saying the
    table is not a ``what`` table; a scan that cannot start is a :class:`StoreError` naming ``location``.
    """
    import pyarrow as pa
    from deltalake.exceptions import DeltaError

    if columns is not None:
        present = set(table.schema().to_arrow().names)
        missing = [c for c in columns if c not in present]
        if missing:
            raise StoreError(
                f"{what} table {location!r} is not an airflow-dq-contracts {what} table: "
                f"missing column(s) {', '.join(missing)}",
                location,
            )
    try:
        # scan() runs in delta-rs's own engine, which honours deletion vectors and column
        # mapping (a plain pyarrow dataset over the files would silently ignore both).
        reader = table.scan(columns=None if columns is None else list(columns), predicate=predicate)
        return pa.RecordBatchReader.from_stream(reader)
    except (DeltaError, OSError) as exc:
        raise StoreError(f"{what} table {location!r} cannot be read: {exc}", location) from exc


def scan_table(table: Any, location: str, what: str, columns: Sequence[str] | None, predicate: str | None) -> Any:
    """Like :func:`stream_table`, read whole: a ``pyarrow.Table``.

    Example::

        table = open_table("/wh/dq_results", what="results")
        rows = scan_table(table, "/wh/dq_results", "results", ["run_id"], "contract_name = 'orders'")
    """
    from deltalake.exceptions import DeltaError

    reader = stream_table(table, location, what, columns, predicate)
    try:
        return reader.read_all()
    except (DeltaError, OSError) as exc:
        raise StoreError(f"{what} table {location!r} cannot be read: {exc}", location) from exc


def constant_strings(value: str | None, length: int) -> Any:
    """A ``pyarrow`` string array of ``length`` copies of ``value`` (nulls for ``None``), built from buffers.

    ``pa.array([...])`` — and even ``pa.scalar`` — imports pandas to check for pandas-like input: a
    quarter of a second of the operator's read-back on a worker where nothing else needs pandas.

    >>> constant_strings("orders", 3).to_pylist(), constant_strings(None, 2).to_pylist()
    (['orders', 'orders', 'orders'], [None, None])
    """
    import array

    import pyarrow as pa

    if value is None:
        return pa.nulls(length, pa.string())
    data = value.encode("utf-8")
    offsets = (
        array.array("i", range(0, len(data) * (length + 1), len(data)))
        if data
        else array.array("i", [0] * (length + 1))
    )
    return pa.StringArray.from_buffers(length, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data * length))


def plain_rows(data: Any) -> list[dict[str, Any]]:
    """A ``pyarrow.Table``'s rows as dicts, timestamps as aware UTC datetimes.

    ``Table.to_pylist()`` would import pandas to convert zone-aware timestamps — over a second of
    the operator's read-back on a worker where nothing else needs pandas — so timestamp columns
    travel as epoch microseconds and are converted here.

    >>> import datetime as dt, pyarrow as pa
    >>> when = dt.datetime(2024, 5, 2, 4, 0, 0, 250, tzinfo=dt.timezone.utc)
    >>> table = pa.table({"at": pa.array([when, None], pa.timestamp("us", tz="UTC")), "n": [1, 2]})
    >>> plain_rows(table)[0]["at"] == when, plain_rows(table)[1]
    (True, {'at': None, 'n': 2})
    """
    import pyarrow as pa

    times = [name for name, kind in zip(data.column_names, data.schema.types) if pa.types.is_timestamp(kind)]
    for name in times:
        index = data.column_names.index(name)
        column = data.column(index)
        if column.type.tz is None:
            column = column.cast(pa.timestamp(column.type.unit, tz="UTC"))
        micros = column.cast(pa.timestamp("us", tz="UTC"), safe=False).cast(pa.int64())
        data = data.set_column(index, name, micros)
    rows: list[dict[str, Any]] = data.to_pylist()
    for row in rows:
        for name in times:
            row[name] = from_epoch_micros(row[name])
    return rows


def first_line(exc: BaseException, limit: int = 400) -> str:
    """The first line of ``exc``'s message (its class name when empty), cut at ``limit`` characters.

    >>> first_line(ValueError("bad\\nmore")), first_line(KeyError())
    ('bad', 'KeyError')
    """
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"
