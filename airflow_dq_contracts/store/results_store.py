"""Read a run's check results and quarantine count back from Delta, without Spark (delta-rs).

Plain Python plus ``deltalake``: the Airflow operator imports this module to read what the Spark
job wrote, so it must not import ``pyspark`` (not even transitively) and must not start a JVM.
``deltalake`` and ``pyarrow`` are imported lazily, inside the functions, so that merely importing
this module (for :func:`is_path`) costs nothing.

delta-rs addresses tables by path or URI only; a catalog table name (``dq.results``) cannot be
resolved here — read those with :func:`airflow_dq_contracts.store.sinks.read_results`.

Example::

    >>> from airflow_dq_contracts.store.results_store import is_path
    >>> is_path("/data/dq/results"), is_path("s3://bucket/dq/results"), is_path("dq.results")
    (True, True, False)
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any, Mapping

from airflow_dq_contracts.results import EVOLVED_RESULT_COLUMNS, QUARANTINE_RUN_ID, RESULT_COLUMNS, CheckResult

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

__all__ = ["ResultsStoreError", "is_path", "plain_rows", "read_results", "read_quarantine_count", "sql_string"]


class ResultsStoreError(Exception):
    """A results or quarantine table cannot be read: missing, not Delta, wrong schema, a name."""


def is_path(target: str) -> bool:
    """True when ``target`` is a filesystem path or URI, False for a catalog table name.

    A target containing ``/``, ``\\`` or ``://``, or starting with ``.`` or ``~``, is a path;
    anything else (``results``, ``dq.results``, ``main.dq.results``) is a table name.

    >>> [is_path(t) for t in ("/tmp/r", "./r", "~/r", "C:\\\\r", "s3a://b/r", "dq.results")]
    [True, True, True, True, True, False]
    """
    text = target.strip()
    return "/" in text or "\\" in text or "://" in text or text.startswith((".", "~"))


def sql_string(value: str) -> str:
    """A single-quoted SQL string literal for DataFusion (standard SQL: quotes are doubled).

    >>> sql_string("it's")
    "'it''s'"
    """
    return "'" + value.replace("'", "''") + "'"


def _open(path: str, what: str, storage_options: Mapping[str, str] | None) -> Any:
    if not isinstance(path, str) or not path.strip():
        raise ResultsStoreError(f"{what} table: expected a path or URI, got {path!r}")
    if not is_path(path):
        raise ResultsStoreError(
            f"{what} table {path!r} looks like a catalog table name; delta-rs reads Delta tables "
            "by path or URI only (e.g. /data/dq/results or s3://bucket/dq/results)"
        )
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    location = os.path.expanduser(path.strip())
    try:
        return DeltaTable(location, storage_options=dict(storage_options or {}))
    except TableNotFoundError as exc:
        raise ResultsStoreError(
            f"{what} table {location!r} does not exist (no Delta transaction log there): "
            "nothing has been written to it yet, or the path is wrong"
        ) from exc
    except (DeltaError, OSError) as exc:
        raise ResultsStoreError(f"{what} table {location!r} cannot be opened: {exc}") from exc


def _scan(table: Any, location: str, what: str, columns: list[str], predicate: str) -> Any:
    """The matching rows as a ``pyarrow.Table``."""
    import pyarrow as pa
    from deltalake.exceptions import DeltaError

    present = set(table.schema().to_arrow().names)
    missing = [c for c in columns if c not in present]
    if missing:
        raise ResultsStoreError(
            f"{what} table {location!r} is not an airflow-dq-contracts {what} table: "
            f"missing column(s) {', '.join(missing)}"
        )
    try:
        # scan() runs in delta-rs's own engine, which honours deletion vectors and column
        # mapping (a plain pyarrow dataset over the files would silently ignore both).
        reader = table.scan(columns=columns, predicate=predicate)
        return pa.RecordBatchReader.from_stream(reader).read_all()
    except (DeltaError, OSError) as exc:
        raise ResultsStoreError(f"{what} table {location!r} cannot be read: {exc}") from exc


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
    rows = data.to_pylist()
    for row in rows:
        for name in times:
            if row[name] is not None:
                row[name] = _EPOCH + dt.timedelta(microseconds=row[name])
    return rows


def _commit_rows(location: str, version: int, run_id: str, names: list[str]) -> list[dict[str, Any]] | None:
    """The rows commit ``version`` of the results table added, if it is a write of run ``run_id``.

    Reads that one JSON log entry and the data files it adds, so its cost does not depend on the
    table's history. None whenever the answer could differ from a scan of the table (the commit is
    not the run's results write, a file carries a deletion vector or lives outside the table,
    a column is not where a plain table keeps it) or the storage cannot be read this way; the
    caller then scans the table.
    """
    import urllib.parse

    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    try:
        if "://" in location:
            filesystem, root = pafs.FileSystem.from_uri(location)
        else:
            filesystem, root = pafs.LocalFileSystem(), os.path.abspath(location)
        with filesystem.open_input_stream(f"{root}/_delta_log/{version:020d}.json") as stream:
            actions = [json.loads(line) for line in stream.read().decode("utf-8").splitlines() if line.strip()]
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        tag = json.loads(info.get("userMetadata") or "{}")
        if not (isinstance(tag, dict) and tag.get("writer") == "airflow-dq-contracts"
                and tag.get("table") == "results" and tag.get("run_id") == run_id):
            return None
        if any("metaData" in a for a in actions):
            return None  # a schema change in this commit (evolution, column mapping): let delta-rs read it
        pieces = []
        for add in (a["add"] for a in actions if "add" in a):
            if add.get("deletionVector") or "://" in add["path"]:
                return None
            data = pq.read_table(f"{root}/{urllib.parse.unquote(add['path'])}", filesystem=filesystem)
            columns = []
            for name in names:
                if name in data.column_names:
                    columns.append(data.column(name))
                elif name in (add.get("partitionValues") or {}):
                    columns.append(pa.array([add["partitionValues"][name]] * data.num_rows, pa.string()))
                else:
                    return None
            pieces.append(pa.table(columns, names=names))
        rows = [row for piece in pieces for row in plain_rows(piece)]
    except Exception:  # noqa: BLE001 - any doubt: the caller scans the table instead
        return None
    if any(row.get("run_id") != run_id for row in rows):
        return None
    return rows


def read_results(
    path: str,
    run_id: str,
    *,
    contract_name: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    version: int | None = None,
) -> list[CheckResult]:
    """The check results of one run, read from the Delta results table at ``path`` with delta-rs.

    Ordered by ``contract_name`` then ``check_id`` (Delta keeps no row order). An unknown
    ``run_id`` gives an empty list; a missing table raises :class:`ResultsStoreError`. Give
    ``contract_name`` when it is known (the operator does): the table is partitioned by it, so
    only that contract's files are considered — the read-back stays as cheap after thousands of
    runs of other contracts. Give ``version`` — the run's results commit, as the job reports it —
    and only that commit's log entry and files are read, whatever the length of the table's
    history; when that commit is not the run's results write (or cannot be read that way) the
    table is scanned as without it.

    Example::

        checks = read_results("/data/dq/results", run_id="dq-3f2a…", contract_name="orders")
        failed = [c.check_id for c in checks if not c.passed]
    """
    if version is not None and is_path(path):
        fast = _commit_rows(os.path.expanduser(path.strip()), int(version), run_id,
                            [name for name, _ in RESULT_COLUMNS])
        if fast is not None and (contract_name is None or all(r["contract_name"] == contract_name for r in fast)):
            records = [CheckResult.from_dict(row) for row in fast]
            records.sort(key=lambda r: (r.contract_name or "", r.check_id or ""))
            return records
    table = _open(path, "results", storage_options)
    # A table written by an earlier release lacks the second-wave columns: they read as NULL.
    present = set(table.schema().to_arrow().names)
    names = [name for name, _ in RESULT_COLUMNS if name in present or name not in EVOLVED_RESULT_COLUMNS]
    predicate = f"run_id = {sql_string(run_id)}"
    if contract_name is not None:
        predicate = f"contract_name = {sql_string(contract_name)} AND {predicate}"
    rows = plain_rows(_scan(table, path, "results", names, predicate))
    records = [CheckResult.from_dict(row) for row in rows]
    records.sort(key=lambda r: (r.contract_name or "", r.check_id or ""))
    return records


def read_quarantine_count(
    path: str, run_id: str, *, storage_options: Mapping[str, str] | None = None
) -> int:
    """How many rows run ``run_id`` set aside in the Delta quarantine table at ``path``.

    Example::

        n = read_quarantine_count("/data/dq/quarantine/orders", run_id="dq-3f2a…")
    """
    table = _open(path, "quarantine", storage_options)
    predicate = f"{QUARANTINE_RUN_ID} = {sql_string(run_id)}"
    return int(_scan(table, path, "quarantine", [QUARANTINE_RUN_ID], predicate).num_rows)
