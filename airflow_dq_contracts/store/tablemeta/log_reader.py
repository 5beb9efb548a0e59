"""A Delta transaction log read directly — JSON commits and Parquet/JSON checkpoints — for tables delta-rs cannot scan.

delta-rs reads fewer table features than Spark's Delta (``Unsupported table features required:
[TypeWidening]``). The questions the sensors and statistics-first ask — a column's newest value,
partition values, row and NULL counts, min/max — need only the log and, where statistics cannot say,
one column of a few data files. This module answers them without delta-rs's scan: plain Python plus
``pyarrow`` (its filesystems, Parquet reader and compute).

What it reads
    ``_last_checkpoint``; classic checkpoints (one Parquet file or ``.checkpoint.<i>.<n>.parquet``
    parts); v2 checkpoints (``.checkpoint.<uuid>.json|parquet`` with ``_sidecars/`` files); the JSON
    commits after the newest checkpoint — so a log whose older commits were cleaned up after a
    checkpoint is read like any other. Files are identified by path and deletion vector, as the
    protocol says.

Features that do not change what the statistics mean (:data:`READABLE_FEATURES`)
    type widening (statistics of older files are in the old type: parsed by the current type, e.g.
    an ``int`` statistic read as ``bigint``, a ``date`` one as midnight of a ``timestamp_ntz``, and
    older files' column cast to the current type), ``timestamp_ntz``, column mapping (statistics and
    partition values are keyed by physical names: mapped to the logical ones here), in-commit
    timestamps, change data feed, liquid clustering, variant columns (present, never read),
    v2 checkpoints. Deletion vectors change counts and extremes: rows are counted as
    ``numRecords − cardinality``, and a file's column read here drops the deleted rows
    (:mod:`.deletion_vectors` decodes inline and file vectors).

Any other reader feature (e.g. a catalog-managed table whose newest commits are not in
``_delta_log``) is refused by :func:`read_log` with a :class:`UnsupportedFeatureError` that names it.

Example::

    snapshot = read_log("/lake/orders")
    snapshot.version, len(snapshot.files), snapshot.add_actions().column_names
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import posixpath
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from airflow_dq_contracts.store.tablemeta.deletion_vectors import DeletionVectorError, deleted_rows, dv_key
from airflow_dq_contracts.store.tablemeta.parquet_dir import table_filesystem
from airflow_dq_contracts.store.tablemeta.table_facts import DeltaMetadataError, TableNotFoundError
from airflow_dq_contracts.timeutil import UTC

__all__ = ["READABLE_FEATURES", "AddFile", "LogSnapshot", "UnsupportedFeatureError", "read_log"]

#: Reader features whose tables this module reads exactly (see the module doc).
READABLE_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
        "variantShredding-preview",
    }
)

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?(?:\.([0-9a-fA-F-]{36}))?\.(parquet|json)$")
_INTEGERS = ("byte", "short", "integer", "long")
_ARROW_TYPES: dict[str, pa.DataType] = {
    "byte": pa.int64(),
    "short": pa.int64(),
    "integer": pa.int64(),
    "long": pa.int64(),
    "float": pa.float64(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "string": pa.string(),
    "boolean": pa.bool_(),
}
_EPOCH_DATE = dt.date(1970, 1, 1)


class UnsupportedFeatureError(DeltaMetadataError):
    """The table needs a reader feature this log reader does not read (``.feature`` names it)."""

    def __init__(self, message: str, path: str | None = None, feature: str = "") -> None:
        super().__init__(message, path)
        self.feature = feature


@dataclasses.dataclass(frozen=True)
class AddFile:
    """One live data file of the snapshot."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int | None
    stats: Mapping[str, Any] | None
    deletion_vector: Mapping[str, Any] | None

    @property
    def records(self) -> int | None:
        """``numRecords`` of the statistics (None: not collected)."""
        value = (self.stats or {}).get("numRecords")
        return None if value is None else int(value)

    @property
    def deleted(self) -> int:
        """Rows the file's deletion vector removes (its ``cardinality``)."""
        return int((self.deletion_vector or {}).get("cardinality") or 0)


def _delta_type(kind: Any) -> str:
    if isinstance(kind, str):
        return "decimal" if kind.startswith("decimal") else kind
    return str(kind.get("type"))  # struct, array, map


def _decimal_type(kind: str) -> pa.DataType:
    precision, scale = (int(x) for x in kind[len("decimal(") : -1].split(","))
    return pa.decimal128(precision, scale)


@dataclasses.dataclass(frozen=True)
class Column:
    """A leaf column of the schema: its logical path, physical path and Delta type (``decimal(p,s)`` kept)."""

    logical: str
    physical: str
    type: str

    @property
    def arrow_type(self) -> pa.DataType | None:
        if self.type.startswith("decimal("):
            return _decimal_type(self.type)
        return _ARROW_TYPES.get(self.type)


def _columns(fields: Sequence[Mapping[str, Any]], logical: str = "", physical: str = "") -> list[Column]:
    out = []
    for field in fields:
        name = str(field["name"])
        phys = str((field.get("metadata") or {}).get("delta.columnMapping.physicalName", name))
        kind = field["type"]
        if isinstance(kind, dict) and kind.get("type") == "struct":
            out += _columns(kind["fields"], f"{logical}{name}.", f"{physical}{phys}.")
        else:
            out.append(Column(logical + name, physical + phys, kind if isinstance(kind, str) else _delta_type(kind)))
    return out


def _parse_stat(value: Any, column: Column) -> Any:
    """A statistic (JSON value) as a Python value of the column's *current* type (older files: widened)."""
    if value is None:
        return None
    kind = column.type
    try:
        if kind in _INTEGERS:
            return int(value)
        if kind in ("float", "double"):
            return float(value)
        if kind.startswith("decimal("):
            return Decimal(str(value))
        if kind == "date":
            return dt.date.fromisoformat(str(value)[:10])
        if kind in ("timestamp", "timestamp_ntz"):
            text = str(value)
            if len(text) == 10:  # a date statistic of a column widened from date
                moment = dt.datetime.fromisoformat(text)
            else:
                moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            if moment.tzinfo is not None:
                moment = moment.astimezone(UTC).replace(tzinfo=None)
            return moment
        if kind == "string":
            return str(value)
    except (TypeError, ValueError):
        return None
    return None


def _parse_partition(value: str | None, kind: str) -> Any:
    if value is None:
        return None
    if kind in _INTEGERS:
        return int(value)
    if kind in ("float", "double"):
        return float(value)
    if kind.startswith("decimal("):
        return Decimal(value)
    if kind == "date":
        return dt.date.fromisoformat(value)
    if kind in ("timestamp", "timestamp_ntz"):
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    if kind == "boolean":
        return value.lower() == "true"
    return value


def _nested(stats: Mapping[str, Any] | None, key: str, physical: str) -> Any:
    node: Any = (stats or {}).get(key)
    for part in physical.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return None if isinstance(node, Mapping) else node


def _plain(value: Any) -> Any:
    """A Parquet checkpoint's map column (a list of pairs) as a dict; anything else as it is."""
    if isinstance(value, list) and all(isinstance(item, tuple) and len(item) == 2 for item in value):
        return dict(value)
    return value


class LogSnapshot:
    """The newest version of a Delta table as its log states it (see the module doc)."""

    def __init__(
        self,
        location: str,
        options: Mapping[str, str] | None,
        fs: Any,
        root: str,
        version: int,
        protocol: Mapping[str, Any],
        metadata: Mapping[str, Any],
        files: list[AddFile],
        commit_info: Mapping[str, Any] | None,
    ) -> None:
        self.location, self.options, self.fs, self.root = location, options, fs, root
        self.version = version
        self.protocol = protocol
        self.metadata = metadata
        self.files = files
        self.commit_info = commit_info
        self.schema_json = str(metadata.get("schemaString") or '{"fields": []}')
        self.fields: list[Mapping[str, Any]] = json.loads(self.schema_json).get("fields", [])
        self.columns = {c.logical: c for c in _columns(self.fields)}
        self.partition_columns = [str(c) for c in metadata.get("partitionColumns") or []]

    @property
    def reader_features(self) -> list[str]:
        return [str(f) for f in self.protocol.get("readerFeatures") or []]

    def column(self, name: str) -> Column:
        return self.columns[name]

    def commit_millis(self) -> int | None:
        """The newest commit's time: its ``inCommitTimestamp`` when in-commit timestamps are on, else ``timestamp``."""
        info = self.commit_info or {}
        value = info.get("inCommitTimestamp") or info.get("timestamp")
        return None if value is None else int(value)

    # ------------------------------------------------------------------ statistics as columns

    def stat_values(self, kind: str, column: str, indices: Sequence[int] | None = None) -> list[Any]:
        """Per file: ``min``/``max``/``null_count`` of a data column, or ``partition`` (values of the current type)."""
        spec = self.columns[column]
        chosen = self.files if indices is None else [self.files[i] for i in indices]
        if kind == "partition":
            return [_parse_partition(f.partition_values.get(spec.physical), spec.type) for f in chosen]
        key = {"min": "minValues", "max": "maxValues", "null_count": "nullCount"}[kind]
        raw = [_nested(f.stats, key, spec.physical) for f in chosen]
        if kind == "null_count":
            return [None if v is None else int(v) for v in raw]
        return [_parse_stat(v, spec) for v in raw]

    def add_actions(self) -> pa.Table:
        """The live files as delta-rs's ``get_add_actions(flatten=True)`` shapes them.

        ``path``, ``size_bytes``, ``modification_time``, ``num_records``, ``null_count.<physical>``,
        ``min.<physical>``, ``max.<physical>``, ``partition.<logical>`` (typed by the table's schema).
        """
        data: dict[str, pa.Array] = {
            "path": pa.array([f.path for f in self.files], pa.string()),
            "size_bytes": pa.array([f.size for f in self.files], pa.int64()),
            "modification_time": pa.array([f.modification_time for f in self.files], pa.int64()),
            "num_records": pa.array([f.records for f in self.files], pa.int64()),
        }
        data_columns = [c for c in self.columns.values() if c.logical not in self.partition_columns]
        for column in data_columns:
            data[f"null_count.{column.physical}"] = pa.array(self.stat_values("null_count", column.logical), pa.int64())
        for kind in ("min", "max"):
            for column in data_columns:
                arrow_type = column.arrow_type
                if arrow_type is None or column.type == "boolean":
                    continue
                data[f"{kind}.{column.physical}"] = pa.array(self.stat_values(kind, column.logical), arrow_type)
        for name in self.partition_columns:
            spec = self.columns[name]
            data[f"partition.{name}"] = pa.array(self.stat_values("partition", name), spec.arrow_type or pa.string())
        return pa.table(data) if self.files else pa.table({k: v.slice(0, 0) for k, v in data.items()})

    # ------------------------------------------------------------------ data files

    def file_path(self, index: int) -> str:
        relative = urllib.parse.unquote(self.files[index].path)
        if "://" in relative or relative.startswith("/"):
            return relative.split("://", 1)[1] if "://" in relative else relative
        return posixpath.join(self.root, relative)

    def _read_bytes(self, path: str, offset: int, length: int) -> bytes:
        target = path.split("://", 1)[1] if "://" in path else path
        with self.fs.open_input_file(target) as handle:
            handle.seek(offset)
            data: bytes = handle.read(length)
            return data

    def deleted_positions(self, index: int) -> set[int]:
        """Row positions of file ``index`` that its deletion vector removes (empty without one)."""
        descriptor = self.files[index].deletion_vector
        if not descriptor:
            return set()
        try:
            return deleted_rows(descriptor, self.root, self._read_bytes)
        except (DeletionVectorError, OSError, KeyError, ValueError) as exc:
            raise UnsupportedFeatureError(
                f"the deletion vector of {self.files[index].path} in the Delta table at {self.location} "
                f"cannot be decoded here ({exc}): its rows cannot be counted exactly without Spark — "
                "run the check in Spark (dq-contracts run), or apply the deletes with "
                "REORG TABLE … APPLY (PURGE)",
                self.location,
                "deletionVectors",
            ) from None

    def live_rows(self, index: int) -> int:
        """Rows of file ``index`` after its deletion vector, from the Parquet footer when the log has no count."""
        records = self.files[index].records
        if records is None:
            import pyarrow.parquet as pq

            with self.fs.open_input_file(self.file_path(index)) as handle:
                records = pq.ParquetFile(handle).metadata.num_rows
        return int(records) - self.files[index].deleted

    def read_column(self, index: int, column: str) -> pa.Array:
        """The live values of ``column`` in file ``index`` (deleted rows dropped), cast to the table's current type.

        Only that column is read. A column missing from an older file (added later) is all NULL; a
        partition column is its partition value repeated.
        """
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        spec = self.columns[column]
        target = spec.arrow_type
        if column in self.partition_columns:
            value = self.stat_values("partition", column, [index])[0]
            return pa.array([value] * self.live_rows(index), target or pa.string())
        try:
            with self.fs.open_input_file(self.file_path(index)) as handle:
                parquet = pq.ParquetFile(handle, coerce_int96_timestamp_unit="us")
                names = parquet.schema_arrow.names
                top = spec.physical.split(".")[0]
                if top not in names:
                    values: pa.Array = pa.nulls(parquet.metadata.num_rows, target or pa.null())
                else:
                    table = parquet.read(columns=[top])
                    values = table.column(0).combine_chunks()
                    for part in spec.physical.split(".")[1:]:
                        values = pc.struct_field(values, part)
        except OSError as exc:
            raise DeltaMetadataError(
                f"reading column {column!r} of {self.files[index].path} in the Delta table at {self.location} "
                f"failed: {exc}",
                self.location,
            ) from None
        if target is not None and values.type != target:
            if pa.types.is_timestamp(values.type) and pa.types.is_timestamp(target):
                values = values.cast(pa.timestamp("us", tz=values.type.tz), safe=False)
            values = values.cast(target)
        deleted = self.deleted_positions(index)
        if deleted:
            values = values.filter(_keep_mask(len(values), deleted))
        return values


def _keep_mask(length: int, deleted: set[int]) -> pa.Array:
    """A boolean mask keeping every position but ``deleted``, built from a bit buffer (no pandas import)."""
    bits = bytearray(b"\xff" * ((length + 7) // 8))
    for position in deleted:
        if position < length:
            bits[position // 8] &= ~(1 << (position % 8)) & 0xFF
    return pa.Array.from_buffers(pa.bool_(), length, [None, pa.py_buffer(bytes(bits))])


# ---------------------------------------------------------------------------------------- replay


def _json_lines(fs: Any, path: str) -> list[dict[str, Any]]:
    with fs.open_input_stream(path) as handle:
        text = handle.read().decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _parquet_actions(fs: Any, path: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    with fs.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        wanted = [
            n
            for n in ("add", "remove", "metaData", "protocol", "sidecar", "checkpointMetadata")
            if n in parquet.schema_arrow.names
        ]
        table = parquet.read(columns=wanted)
    actions = []
    if "add" in table.column_names:
        table = table.set_column(table.column_names.index("add"), "add", _without_parsed(table.column("add")))
    for row in table.to_pylist():
        for name, value in row.items():
            if value is not None:
                actions.append({name: value})
    return actions


def _without_parsed(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A checkpoint's ``add`` column without ``stats_parsed``/``partitionValues_parsed`` when ``stats`` is there.

    The JSON ``stats`` say the same, and turning time-zone-aware statistics into Python would import pandas
    (a second per sensor poke).
    """
    kind = column.type
    names = [kind.field(i).name for i in range(kind.num_fields)]
    if "stats" not in names:
        return column
    keep = [n for n in names if n not in ("stats_parsed", "partitionValues_parsed")]
    fields = [kind.field(n) for n in keep]
    chunks = [
        pa.StructArray.from_arrays([chunk.field(n) for n in keep], fields=fields, mask=chunk.is_null())
        for chunk in column.chunks
    ]
    return pa.chunked_array(chunks, pa.struct(fields))


def _checkpoint_actions(fs: Any, log_dir: str, names: Sequence[str]) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = []
    for name in names:
        path = posixpath.join(log_dir, name)
        actions += _json_lines(fs, path) if name.endswith(".json") else _parquet_actions(fs, path)
    sidecars = [a["sidecar"] for a in actions if "sidecar" in a]
    for sidecar in sidecars:
        relative = urllib.parse.unquote(str(sidecar["path"]))
        path = relative if relative.startswith("/") else posixpath.join(log_dir, "_sidecars", relative)
        actions += _parquet_actions(fs, path)
    return actions


def _newest_checkpoint(listed: Mapping[str, Any], hint: int | None) -> tuple[int, list[str]] | None:
    """(version, file names) of the newest complete checkpoint (``_last_checkpoint``'s if it is complete)."""
    by_version: dict[int, dict[str, list[str]]] = {}
    for name, match in listed.items():
        version, part, parts, _uuid, _ext = match.groups()
        group = by_version.setdefault(int(version), {})
        key = f"multi{parts}" if parts else f"single-{name}"
        group.setdefault(key, []).append(name)
    order = sorted(by_version, reverse=True)
    if hint in by_version:
        order = [hint] + [v for v in order if v != hint]
    for version in order:
        for key, names in sorted(by_version[version].items()):
            if key.startswith("multi") and len(names) != int(key[len("multi") :]):
                continue  # a multi-part checkpoint being written
            return version, sorted(names)
    return None


def read_log(location: str, storage_options: Mapping[str, str] | None = None) -> LogSnapshot:
    """The table's newest snapshot, replayed from its newest checkpoint and the JSON commits after it.

    Raises :class:`TableNotFoundError` (no ``_delta_log``), :class:`UnsupportedFeatureError` (a reader
    feature not in :data:`READABLE_FEATURES`) or :class:`DeltaMetadataError` (a gap in the log).
    """
    import pyarrow.fs as pafs

    fs, root = table_filesystem(location, storage_options)
    log_dir = posixpath.join(root, "_delta_log")
    try:
        entries = fs.get_file_info(pafs.FileSelector(log_dir, allow_not_found=True))
    except OSError as exc:
        raise DeltaMetadataError(f"cannot list the Delta log of {location}: {exc}", location) from None
    commits: dict[int, str] = {}
    checkpoints: dict[str, Any] = {}
    hint: int | None = None
    for entry in entries:
        name = posixpath.basename(entry.path)
        if match := _COMMIT.match(name):
            commits[int(match.group(1))] = name
        elif match := _CHECKPOINT.match(name):
            checkpoints[name] = match
        elif name == "_last_checkpoint":
            try:
                hint = int(_json_lines(fs, entry.path)[0]["version"])
            except (OSError, ValueError, KeyError, IndexError):
                hint = None  # a hint only: the listing decides
    if not commits and not checkpoints:
        raise TableNotFoundError(f"no Delta table at {location}: no transaction log there", location)
    newest = _newest_checkpoint(checkpoints, hint)
    start, actions = 0, []
    if newest is not None:
        start = newest[0] + 1
        actions = _checkpoint_actions(fs, log_dir, newest[1])
    version = max([*commits, start - 1])
    missing = [v for v in range(start, version + 1) if v not in commits]
    if missing:
        raise DeltaMetadataError(
            f"the Delta log of {location} lacks commit {missing[0]} and no checkpoint covers it "
            "(commits were removed without a checkpoint after them)",
            location,
        )
    protocol: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    files: dict[tuple[str, str | None], dict[str, Any]] = {}
    commit_info: dict[str, Any] | None = None

    def apply(action: Mapping[str, Any]) -> None:
        nonlocal protocol, metadata
        if "add" in action:
            add = action["add"]
            files[(str(add["path"]), dv_key(add.get("deletionVector")))] = add
        elif "remove" in action:
            remove = action["remove"]
            files.pop((str(remove["path"]), dv_key(remove.get("deletionVector"))), None)
        elif "metaData" in action:
            metadata = dict(action["metaData"])
        elif "protocol" in action:
            protocol = dict(action["protocol"])

    for action in actions:
        apply(action)
    for number in range(start, version + 1):
        for action in _json_lines(fs, posixpath.join(log_dir, commits[number])):
            apply(action)
            if "commitInfo" in action and number == version:
                commit_info = action["commitInfo"]
    unknown = [f for f in protocol.get("readerFeatures") or [] if f not in READABLE_FEATURES]
    if unknown:
        raise UnsupportedFeatureError(
            f"the Delta table at {location} requires reader feature(s) {', '.join(unknown)}, which neither "
            "delta-rs nor this provider's log reader reads: check it with the contract in Spark "
            "(dq-contracts run) instead of a metadata sensor",
            location,
            unknown[0],
        )
    return LogSnapshot(
        location,
        storage_options,
        fs,
        root,
        version,
        protocol,
        metadata,
        [_add_file(add) for add in files.values()],
        commit_info,
    )


def _add_file(add: Mapping[str, Any]) -> AddFile:
    stats = add.get("stats")
    parsed: Mapping[str, Any] | None = None
    if isinstance(stats, str) and stats:
        parsed = json.loads(stats)
    elif isinstance(add.get("stats_parsed"), Mapping):
        parsed = add["stats_parsed"]
    return AddFile(
        path=str(add["path"]),
        partition_values=_plain(add.get("partitionValues")) or {},
        size=int(add.get("size") or 0),
        modification_time=add.get("modificationTime"),
        stats=parsed,
        deletion_vector=add.get("deletionVector"),
    )


# ------------------------------------------------------------------------------------ extremes


@dataclasses.dataclass(frozen=True)
class ExtremePlan:
    """How to get a column's exact max/min: the statistics' part (``base``) and the files to read."""

    column: str
    kind: str
    base: Any
    reads: tuple[int, ...]
    files_with_stats: int


def comparable(value: Any) -> Any:
    """A statistic or read value as it is compared: timestamps as epoch microseconds, the rest as they are."""
    if isinstance(value, dt.datetime):
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return (moment - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
    return value


def _better(kind: str, a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b) if kind == "max" else min(a, b)


def plan_extreme(
    snapshot: LogSnapshot, column: str, kind: str, indices: Sequence[int] | None = None, *, exact: bool = True
) -> ExtremePlan:
    """The files whose ``column`` must be read for its exact ``kind`` (max/min) over ``indices`` (default: all).

    A file without statistics for the column (and not all NULL) is read; a file with a deletion vector
    is read when its (no longer tight) bound may reach the extreme of the files without one, whose
    statistics are exact — except timestamps, truncated to milliseconds: the files within one
    millisecond of the extreme are read too (unless ``exact`` is false).
    """
    spec = snapshot.columns[column]
    timestamp = spec.type in ("timestamp", "timestamp_ntz")
    chosen = list(range(len(snapshot.files))) if indices is None else list(indices)
    stats = [comparable(v) for v in snapshot.stat_values(kind, column, chosen)]
    nulls = snapshot.stat_values("null_count", column, chosen) if column not in snapshot.partition_columns else []
    must_read: list[int] = []
    exact_stats: list[tuple[int, Any]] = []
    loose_stats: list[tuple[int, Any]] = []
    for position, index in enumerate(chosen):
        file = snapshot.files[index]
        records = file.records
        if records is not None and records - file.deleted <= 0:
            continue  # every row deleted
        stat = stats[position]
        if stat is None:
            partition = column in snapshot.partition_columns
            if partition or (records is not None and nulls[position] == records):
                continue  # a NULL partition value, an all-NULL file
            must_read.append(index)
        elif file.deletion_vector and column not in snapshot.partition_columns:
            loose_stats.append((index, stat))
        else:
            exact_stats.append((index, stat))
    best = None
    for _, stat in exact_stats:
        best = _better(kind, best, stat)
    reads = list(must_read)
    if best is None:
        reads += [index for index, _ in loose_stats]
        base = None
    else:
        slack = 1000 if timestamp and column not in snapshot.partition_columns else 0
        bound = best - slack if kind == "max" else best + slack

        def reaches(stat: Any) -> bool:
            return bool(stat >= bound if kind == "max" else stat <= bound)

        if slack and exact:
            reads += [index for index, stat in exact_stats if reaches(stat)]
            base = None
        else:
            base = best
        reads += [index for index, stat in loose_stats if reaches(stat)]
    return ExtremePlan(column, kind, base, tuple(dict.fromkeys(reads)), len(exact_stats) + len(loose_stats))


def finish_extreme(snapshot: LogSnapshot, plan: ExtremePlan) -> Any:
    """The plan carried out: the exact extreme (timestamps as epoch microseconds), None when no value."""
    import pyarrow.compute as pc

    value = plan.base
    for index in plan.reads:
        values = snapshot.read_column(index, plan.column)
        if pa.types.is_timestamp(values.type):
            values = pc.cast(pc.cast(values, pa.timestamp("us"), safe=False), pa.int64())
        extreme = (pc.max(values) if plan.kind == "max" else pc.min(values)).as_py()
        value = _better(plan.kind, value, comparable(extreme))
    return value


def count_nulls(snapshot: LogSnapshot, index: int, column: str) -> int:
    """Live NULLs of ``column`` in file ``index`` (its column read, deleted rows dropped)."""
    return int(snapshot.read_column(index, column).null_count)
