"""Load and strictly validate contracts. Every problem of a file is reported at once, located.

Example::

    >>> c = load_contract('''
    ... name: orders
    ... columns:
    ...   - name: order_id
    ...     type: long
    ...     checks:
    ...       - {name: "Order ID is unique", type: duplicates, max: 0, severity: P0}
    ... ''')
    >>> [ch.check_id for ch in c.all_checks()]
    ['order_id/order_id_is_unique']
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path as FsPath
from typing import Any

from . import checks as registry
from . import enforcement as enforcing
from . import odcs
from .check_parser import parse_checks
from .errors import ContractValidationError, ValidationIssue
from .model import (
    ACTIONS,
    DATASET_FORMATS,
    DEFAULT_POLICY,
    KAFKA_SERVERS_OPTION,
    KAFKA_SUBSCRIPTIONS,
    SEVERITIES,
    SLA,
    Check,
    Column,
    ColumnType,
    Contract,
    Dataset,
)
from .parsing import ParseContext, read_null_values, similar
from .references import check_reference_use, parse_references
from .streaming import read_stream
from .yamlsrc import Path, SourceMap, YamlSyntaxError, load_yaml

TOP_KEYS = (
    "name",
    "version",
    "owner",
    "domain",
    "description",
    "consumers",
    "tags",
    "dataset",
    "metadata",
    "sla",
    "columns",
    "checks",
    "policy",
    "references",
    "enforcement",
    "stream",
)
COLUMN_KEYS = ("name", "type", "nullable", "description", "checks", "tags") + enforcing.COLUMN_KEYS
DATASET_KEYS = ("table", "path", "format", "options", "null_values")
SLA_KEYS = (
    "freshness_hours",
    "timestamp_column",
    "max_latency_minutes",
    "availability_target",
    "delivery_deadline_utc",
    "support_contact",
    "escalation_policy",
)
TYPE_KEYS = ("kind", "value_type", "key_type", "precision", "scale", "timezone", "fields", "element_type")

SCALAR_TYPES: dict[str, str] = {
    "string": "string",
    "str": "string",
    "varchar": "string",
    "text": "string",
    "char": "string",
    "json": "string",
    "uuid": "string",
    "int": "int",
    "integer": "int",
    "int32": "int",
    "long": "long",
    "bigint": "long",
    "int64": "long",
    "short": "short",
    "smallint": "short",
    "int16": "short",
    "byte": "byte",
    "tinyint": "byte",
    "int8": "byte",
    "float": "float",
    "real": "float",
    "float32": "float",
    "double": "double",
    "float64": "double",
    "decimal": "decimal",
    "numeric": "decimal",
    "number": "decimal",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "datetime": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
    "bytes": "binary",
}
COMPLEX_KINDS = {"list": "list", "array": "list", "map": "map", "struct": "struct"}
_DECIMAL = re.compile(r"^(decimal|numeric)\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$", re.IGNORECASE)
_HHMM = re.compile(r"^([01]?\d|2[0-3]):[0-5]\d(:[0-5]\d)?$")
_SEMVER = re.compile(r"^\d+(\.\d+){0,2}([-+][0-9A-Za-z.-]+)?$")


# --------------------------------------------------------------------------------------- public API


def load_contract(
    source: str | os.PathLike[str] | dict[str, Any],
    *,
    filename: str | None = None,
    policy: dict[str, Any] | None = None,
) -> Contract:
    """Load a contract from a file path, YAML text or an already-parsed dict.

    Raises :class:`ContractValidationError` with every problem located (file, line, path).
    ``policy`` overrides the contract's own severity → action policy.
    """
    if isinstance(source, dict):
        return _document(source, SourceMap(filename or "<dict>"), [], policy, None)
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and not source.lstrip().startswith("{")
    ):
        path = FsPath(source)
        odcs_object = None
        if not path.exists() and "#" in str(source):  # FILE#OBJECT: one object of an ODCS document
            location, odcs_object = str(source).rsplit("#", 1)
            path = FsPath(location)
        name = filename or str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ContractValidationError([ValidationIssue(name, None, "", "file not found")]) from None
        except IsADirectoryError:
            raise ContractValidationError([ValidationIssue(name, None, "", "is a directory, not a file")]) from None
        except UnicodeDecodeError as exc:
            raise ContractValidationError([ValidationIssue(name, None, "", f"not UTF-8 text: {exc.reason}")]) from None
        except OSError as exc:
            raise ContractValidationError([ValidationIssue(name, None, "", f"cannot read: {exc.strerror}")]) from None
        return parse_contract(text, filename=name, policy=policy, odcs_object=odcs_object)
    return parse_contract(str(source), filename=filename or "<string>", policy=policy)


def parse_contract(
    text: str, *, filename: str = "<string>", policy: dict[str, Any] | None = None, odcs_object: str | None = None
) -> Contract:
    """Parse YAML text (safe loader only) and validate it (an ODCS v3 document: object ``odcs_object``)."""
    try:
        data, smap, duplicates = load_yaml(text, filename)
    except YamlSyntaxError as exc:
        raise ContractValidationError([ValidationIssue(filename, exc.line, "", str(exc))]) from None
    return _document(data, smap, duplicates, policy, odcs_object)


def _document(data: Any, smap: SourceMap, duplicates: list, policy: dict | None, odcs_object: str | None) -> Contract:
    """A contract document, or an ODCS v3 one compiled to it first (errors located in the ODCS file)."""
    if not odcs.is_odcs(data):
        if odcs_object is not None:
            message = f"#{odcs_object} selects an object of an ODCS document; this is not one"
            raise ContractValidationError([ValidationIssue(smap.file, None, "", message)])
        return _build(data, smap, duplicates, policy)
    compiled = odcs.load_odcs(data, smap, duplicates, odcs_object)
    try:
        return _build(compiled.document, compiled.source_map(smap.file), [], policy)
    except ContractValidationError as err:
        raise compiled.relocate(err) from None


def validate_file(path: str | os.PathLike[str]) -> list[ValidationIssue]:
    """All problems of a contract file (empty list when valid)."""
    try:
        load_contract(path)
    except ContractValidationError as exc:
        return exc.issues
    return []


# --------------------------------------------------------------------------------------- building


def _build(data: Any, smap: SourceMap, duplicates: list, policy_override: dict | None) -> Contract:
    ctx = ParseContext(smap)
    for path, message in duplicates:
        ctx.add(path, message)
    if not isinstance(data, dict):
        ctx.add(
            (),
            "a contract must be a YAML mapping with at least 'name'" if data is not None else "the document is empty",
        )
        raise ContractValidationError(ctx.issues)
    ctx.keys(data, TOP_KEYS, (), "the contract")
    name = ctx.string(data, "name", (), required=True) or ""
    version = data.get("version")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, (str, int, float)):
            ctx.add(("version",), f"'version' must be a semantic version like 2.1.0, got {version!r}")
            version = None
        else:
            version = str(version)
            if not _SEMVER.match(version):
                ctx.add(("version",), f"'version' must be a semantic version like 2.1.0, got {version!r}")
    owner = ctx.string(data, "owner", ())
    domain = ctx.string(data, "domain", ())
    description = ctx.string(data, "description", ())
    consumers = ctx.str_list(data.get("consumers"), ("consumers",), "'consumers'")
    tags = ctx.str_list(data.get("tags"), ("tags",), "'tags'")
    dataset = _dataset(ctx, data.get("dataset"))
    metadata = ctx.mapping(data.get("metadata"), ("metadata",), "'metadata'") or {}
    if "partitioned_by" in metadata:
        metadata = dict(metadata)
        metadata["partitioned_by"] = list(
            ctx.str_list(metadata["partitioned_by"], ("metadata", "partitioned_by"), "'partitioned_by'")
        )
    sla = _sla(ctx, data.get("sla"))
    stream = read_stream(data.get("stream"), lambda sub, msg: ctx.add(("stream", *sub), msg))
    policy = _policy(ctx, data.get("policy"), ("policy",))
    if policy_override:
        override_ctx = ParseContext(SourceMap("<policy argument>"))
        policy = {**policy, **_policy(override_ctx, policy_override, ())}
        ctx.issues.extend(override_ctx.issues)

    columns: list[Column] = []
    declarations: list[tuple[enforcing.Declaration, Path]] = []
    seen_columns: dict[str, int] = {}
    for index, raw in enumerate(ctx.seq(data.get("columns"), ("columns",), "'columns'") or []):
        read = _column(ctx, raw, ("columns", index), policy)
        if read is None:
            continue
        col, declaration = read
        declarations.append((declaration, ("columns", index)))
        if col.name in seen_columns:
            ctx.add(
                ("columns", index, "name"),
                f"duplicate column name {col.name!r} (first at columns[{seen_columns[col.name]}])",
            )
        else:
            seen_columns[col.name] = index
        columns.append(col)

    table_checks = parse_checks(ctx, data.get("checks"), ("checks",), None, policy)
    references = parse_references(data.get("references"), lambda sub, msg: ctx.add(("references", *sub), msg), similar)
    # What the contract declares becomes checks too (schema, constraints, SLA: see .enforcement).
    enforcement = enforcing.read_enforcement(ctx, data.get("enforcement"))
    columns = [
        enforcing.compile_column(ctx, col, declaration, enforcement, policy, tuple(table_checks), smap.line, where)
        for col, (declaration, where) in zip(columns, declarations)
    ]
    enforcing.check_references(ctx, [(col, where) for col, (_, where) in zip(columns, declarations)])
    contract = Contract(
        name=name,
        version=version,
        owner=owner,
        domain=domain,
        description=description,
        consumers=consumers,
        tags=tags,
        dataset=dataset,
        metadata=metadata,
        sla=sla,
        columns=tuple(columns),
        checks=tuple(table_checks),
        policy=policy,
        source=smap.file,
        references=references,
        enforcement=enforcement,
        stream=stream,
    )
    contract = dataclasses.replace(
        contract,
        schema_checks=enforcing.schema_checks(contract, policy, smap.line),
        implicit_checks=enforcing.sla_checks(contract, policy, smap.line),
    )
    _cross_checks(ctx, contract)
    check_reference_use(
        _indexed_checks(data, table_checks), references, lambda sub, msg: ctx.add(("checks", *sub), msg), similar
    )
    if ctx.issues:
        raise ContractValidationError(ctx.issues)
    return contract


def _indexed_checks(data: dict, checks: list[Check]) -> list[tuple[int, Check]]:
    """The built table-level checks with their index in the document (invalid ones were dropped)."""
    raw: list[Any] = data["checks"] if isinstance(data.get("checks"), list) else []
    by_path = {f"checks[{i}]": i for i in range(len(raw))}
    return [(by_path[c.path], c) for c in checks if c.path in by_path]


def _dataset(ctx: ParseContext, raw: Any) -> Dataset:
    path: Path = ("dataset",)
    if raw is None:
        return Dataset()
    if isinstance(raw, str):
        if not raw.strip():
            ctx.add(path, "'dataset' must be a table name or {table: …} / {path: …, format: …}, got ''")
            return Dataset()
        return Dataset(table=raw)
    data = ctx.mapping(raw, path, "'dataset'")
    if data is None:
        return Dataset()
    ctx.keys(data, DATASET_KEYS, path, "'dataset'")
    table = ctx.string(data, "table", path)
    location = ctx.string(data, "path", path)
    fmt = data.get("format", "delta")
    options = ctx.mapping(data.get("options"), path + ("options",), "'options'") or {}
    if fmt == "kafka":
        _kafka_dataset(ctx, path, table, location, options)
    elif table and location:
        ctx.add(path, "give either 'table' or 'path', not both")
    elif not table and not location:
        ctx.add(path, "'dataset' needs 'table' or 'path'")
    if fmt not in DATASET_FORMATS:
        ctx.add(
            path + ("format",),
            f"unknown format {fmt!r}{similar(fmt, DATASET_FORMATS)}; allowed: {', '.join(DATASET_FORMATS)}",
        )
        fmt = "delta"
    null_values = read_null_values(data.get("null_values"), lambda sub, msg: ctx.add(path + ("null_values", *sub), msg))
    return Dataset(
        table=table,
        path=location,
        format=fmt,
        options={str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()},
        null_values=null_values,
    )


def _kafka_dataset(ctx: ParseContext, path: Path, table: Any, location: Any, options: dict) -> None:
    """A ``format: kafka`` dataset: no table or path; ``options`` name the servers and one subscription."""
    if table or location:
        ctx.add(
            path, "a kafka dataset is named by its options (kafka.bootstrap.servers, subscribe), not 'table'/'path'"
        )
    if not str(options.get(KAFKA_SERVERS_OPTION) or "").strip():
        ctx.add(path + ("options",), f"a kafka dataset needs options.{KAFKA_SERVERS_OPTION} (host:port[,host:port…])")
    given = [key for key in KAFKA_SUBSCRIPTIONS if str(options.get(key) or "").strip()]
    if len(given) != 1:
        ctx.add(
            path + ("options",),
            f"a kafka dataset needs exactly one of options.{', options.'.join(KAFKA_SUBSCRIPTIONS)}"
            + (f", got {', '.join(given)}" if given else ""),
        )


def _sla(ctx: ParseContext, raw: Any) -> SLA:
    path: Path = ("sla",)
    data = ctx.mapping(raw, path, "'sla'")
    if not data:
        return SLA()
    ctx.keys(data, SLA_KEYS, path, "'sla'")
    values: dict[str, Any] = {}
    for key in ("freshness_hours", "max_latency_minutes", "availability_target"):
        if data.get(key) is not None:
            if not registry.is_number(data[key]) or data[key] < 0:
                ctx.add(path + (key,), f"'{key}' must be a non-negative number, got {data[key]!r}")
            else:
                values[key] = float(data[key])
    if "availability_target" in values and values["availability_target"] > 1:
        ctx.add(path + ("availability_target",), "'availability_target' is a fraction in [0, 1]")
    for key in ("timestamp_column", "delivery_deadline_utc", "support_contact", "escalation_policy"):
        value = data.get(key)
        if value is None:
            continue
        if key == "delivery_deadline_utc" and isinstance(value, int) and not isinstance(value, bool):
            # YAML 1.1 reads an unquoted 18:30 as the base-60 number 1110.
            ctx.add(
                path + (key,),
                f"'{key}' must be a quoted time like \"06:00\" (unquoted, YAML reads it as the number {value})",
            )
        elif key == "delivery_deadline_utc" and not (isinstance(value, str) and _HHMM.match(value)):
            ctx.add(path + (key,), f"'{key}' must be a time of day HH:MM like \"06:00\", got {value!r}")
        elif key in ("timestamp_column", "delivery_deadline_utc") and not (isinstance(value, str) and value):
            ctx.add(path + (key,), f"'{key}' must be a non-empty string, got {value!r}")
        else:
            values[key] = str(value)
    return SLA(**values)


def _policy(ctx: ParseContext, raw: Any, path: Path) -> dict[str, dict[str, str]]:
    policy = {sev: dict(actions) for sev, actions in DEFAULT_POLICY.items()}
    data = ctx.mapping(raw, path, "'policy'")
    if not data:
        return policy
    for severity, value in data.items():
        where = path + (severity,)
        if severity not in SEVERITIES:
            ctx.add(where, f"unknown severity {severity!r} in policy; allowed: {', '.join(SEVERITIES)}")
            continue
        if isinstance(value, str):
            value = {"table": value, "row": value}
        if not isinstance(value, dict):
            ctx.add(where, "a policy entry is an action (gate|quarantine|flag) or {table: …, row: …}")
            continue
        for level, action in value.items():
            if level not in ("table", "row"):
                ctx.add(where + (level,), f"unknown policy level {level!r}; allowed: table, row")
            elif action not in ACTIONS:
                ctx.add(where + (level,), f"unknown action {action!r}; allowed: {', '.join(ACTIONS)}")
            elif level == "table" and action == "quarantine":
                ctx.add(where + (level,), "a table-level failure cannot quarantine rows; use gate or flag")
            else:
                policy[severity][level] = action
    return policy


def _column_type(ctx: ParseContext, raw: Any, path: Path) -> ColumnType | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        lowered = text.lower()
        if lowered in SCALAR_TYPES:
            return ColumnType(SCALAR_TYPES[lowered], raw=raw)
        if lowered in COMPLEX_KINDS:
            return ColumnType(COMPLEX_KINDS[lowered], raw=raw)
        match = _DECIMAL.match(text)
        if match:
            digits, places = int(match.group(2)), int(match.group(3) or 0)
            if not 1 <= digits <= 38 or places > digits:
                ctx.add(path, f"decimal precision must be in [1, 38] and scale in [0, precision], got {raw!r}")
                return None
            return ColumnType("decimal", precision=digits, scale=places, raw=raw)
        known = list(SCALAR_TYPES) + list(COMPLEX_KINDS)
        ctx.add(path, f"unknown column type {raw!r}{similar(lowered, known)}")
        return None
    if not isinstance(raw, dict):
        ctx.add(path, f"a column type is a name or {{kind: …}}, got {raw!r}")
        return None
    ctx.keys(raw, TYPE_KEYS, path, "a column type")
    kind = raw.get("kind")
    if not isinstance(kind, str):
        ctx.add(path + ("kind",), "a structured column type needs 'kind'")
        return None
    lowered = kind.lower()
    normalised = COMPLEX_KINDS.get(lowered) or SCALAR_TYPES.get(lowered)
    if normalised is None:
        ctx.add(
            path + ("kind",),
            f"unknown column kind {kind!r}{similar(lowered, list(SCALAR_TYPES) + list(COMPLEX_KINDS))}",
        )
        return None
    value_raw = raw.get("value_type", raw.get("element_type"))
    value_type = _column_type(ctx, value_raw, path + ("value_type",)) if value_raw is not None else None
    key_type = _column_type(ctx, raw.get("key_type"), path + ("key_type",)) if raw.get("key_type") is not None else None
    precision = raw.get("precision")
    scale = raw.get("scale")
    if normalised == "decimal":
        if precision is not None and (
            not isinstance(precision, int) or isinstance(precision, bool) or not 1 <= precision <= 38
        ):
            ctx.add(path + ("precision",), f"decimal precision must be an integer in [1, 38], got {precision!r}")
            precision = None
        if scale is not None and (
            not isinstance(scale, int)
            or isinstance(scale, bool)
            or scale < 0
            or (precision is not None and scale > precision)
        ):
            ctx.add(path + ("scale",), f"decimal scale must be an integer in [0, precision], got {scale!r}")
            scale = None
    elif precision is not None or scale is not None:
        ctx.add(path, "'precision'/'scale' only apply to decimal")
    if normalised != "map" and key_type is not None:
        ctx.add(path + ("key_type",), "'key_type' only applies to map")
    return ColumnType(normalised, value_type=value_type, key_type=key_type, precision=precision, scale=scale, raw=raw)


def _column(ctx: ParseContext, raw: Any, path: Path, policy: dict) -> tuple[Column, enforcing.Declaration] | None:
    data = ctx.list_item(raw, path, "a column", "at least 'name'")
    if data is None:
        return None
    ctx.keys(data, COLUMN_KEYS, path, "a column")
    name = ctx.string(data, "name", path, required=True)
    if name is None:
        return None
    col_type = _column_type(ctx, data.get("type"), path + ("type",))
    nullable = data.get("nullable", True)
    if not isinstance(nullable, bool):
        ctx.add(path + ("nullable",), f"'nullable' must be true or false, got {nullable!r}")
        nullable = True
    description = ctx.string(data, "description", path)
    tags = ctx.str_list(data.get("tags"), path + ("tags",), "'tags'")
    checks = parse_checks(ctx, data.get("checks"), path + ("checks",), name, policy)
    declaration = enforcing.read_column(ctx, data, path, col_type)
    if declaration.values.get("primary_key"):
        nullable = False  # a primary key is not null + unique
    return Column(
        name=name,
        type=col_type,
        nullable=nullable,
        description=description,
        checks=tuple(checks),
        tags=tags,
        deprecated=declaration.deprecated,
        deprecated_by=declaration.deprecated_by,
        sunset=declaration.sunset,
        renamed_from=declaration.renamed_from,
    ), declaration


def _cross_checks(ctx: ParseContext, contract: Contract) -> None:
    """Rules that look across the document (declared columns vs. the columns checks refer to)."""
    declared = {c.name for c in contract.columns}
    if not declared:
        return  # a checks-only contract: columns are looked up in the data at run time
    sla_column = contract.sla.timestamp_column
    if sla_column is not None and sla_column not in declared:
        ctx.add(
            ("sla", "timestamp_column"),
            f"column {sla_column!r} is not declared in 'columns'{similar(sla_column, declared)}",
        )
    if contract.stream is not None and contract.stream.event_time not in declared:
        name = contract.stream.event_time
        ctx.add(("stream", "event_time"), f"column {name!r} is not declared in 'columns'{similar(name, declared)}")
    for index, col in enumerate(contract.partitioned_by):
        if col not in declared:
            ctx.add(
                ("metadata", "partitioned_by", index),
                f"column {col!r} is not declared in 'columns'{similar(col, declared)}",
            )
    for index, check in enumerate(contract.checks):
        refs: list[tuple[str, str]] = []
        if check.type == "duplicates":
            refs = [("columns", c) for c in check.params.get("columns") or []]
        elif check.type == "freshness":
            refs = [("timestamp_column", check.params["timestamp_column"])]
        elif check.type == "completeness":
            refs = [("partition_column", check.params["partition_column"])]
        for key, col in refs:
            if col not in declared:
                ctx.add(("checks", index, key), f"column {col!r} is not declared in 'columns'{similar(col, declared)}")
