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
import math
import os
import re
from pathlib import Path as FsPath
from typing import Any

from . import checks as registry
from . import enforcement as enforcing
from .baseline import expand_drift, parse_baseline
from .errors import ContractValidationError, ValidationIssue
from .model import (
    ACTIONS,
    DATASET_FORMATS,
    DEFAULT_POLICY,
    DEFAULT_SEVERITY,
    SEVERITIES,
    SLA,
    Check,
    Column,
    ColumnType,
    Contract,
    Dataset,
)
from .references import check_reference_use, parse_references
from .validators import DEFAULT_TOLERANCE, Validator, slug
from .yamlsrc import Path, SourceMap, YamlSyntaxError, format_path, load_yaml

TOP_KEYS = ("name", "version", "owner", "domain", "description", "consumers", "tags", "dataset",
            "metadata", "sla", "columns", "checks", "policy", "references", "enforcement")
COLUMN_KEYS = ("name", "type", "nullable", "description", "checks", "tags") + enforcing.COLUMN_KEYS
DATASET_KEYS = ("table", "path", "format", "options")
SLA_KEYS = ("freshness_hours", "timestamp_column", "max_latency_minutes", "availability_target",
            "delivery_deadline_utc", "support_contact", "escalation_policy")
TYPE_KEYS = ("kind", "value_type", "key_type", "precision", "scale", "timezone", "fields", "element_type")

SCALAR_TYPES: dict[str, str] = {
    "string": "string", "str": "string", "varchar": "string", "text": "string", "char": "string",
    "json": "string", "uuid": "string",
    "int": "int", "integer": "int", "int32": "int",
    "long": "long", "bigint": "long", "int64": "long",
    "short": "short", "smallint": "short", "int16": "short",
    "byte": "byte", "tinyint": "byte", "int8": "byte",
    "float": "float", "real": "float", "float32": "float",
    "double": "double", "float64": "double",
    "decimal": "decimal", "numeric": "decimal", "number": "decimal",
    "boolean": "boolean", "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp", "datetime": "timestamp", "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary", "bytes": "binary",
}
COMPLEX_KINDS = {"list": "list", "array": "list", "map": "map", "struct": "struct"}
_DECIMAL = re.compile(r"^(decimal|numeric)\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$", re.IGNORECASE)
_HHMM = re.compile(r"^([01]?\d|2[0-3]):[0-5]\d(:[0-5]\d)?$")
_SEMVER = re.compile(r"^\d+(\.\d+){0,2}([-+][0-9A-Za-z.-]+)?$")


def _similar(word: str, options: Any) -> str:
    import difflib

    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Ctx:
    """Collects issues for one document; knows the line of every path."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.issues: list[ValidationIssue] = []

    def add(self, path: Path, message: str) -> None:
        self.issues.append(ValidationIssue(self.smap.file, self.smap.line(path), format_path(path), message))

    def keys(self, data: dict, allowed: tuple[str, ...], path: Path, what: str) -> None:
        for key in data:
            if not isinstance(key, str):
                self.add(path + (key,), f"keys must be strings, got {key!r}")
            elif key not in allowed and not key.startswith("x-"):
                self.add(path + (key,), f"unknown key {key!r} in {what}{_similar(key, allowed)}; "
                                        f"allowed: {', '.join(allowed)}")

    def string(self, data: dict, key: str, path: Path, required: bool = False) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                self.add(path + (key,) if key in data else path, f"'{key}' is required")
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            self.add(path + (key,), f"'{key}' must be a non-empty string, got {value!r}")
            return None
        return value

    def mapping(self, value: Any, path: Path, what: str) -> dict | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            self.add(path, f"{what} must be a mapping, got {type(value).__name__}")
            return None
        return value

    def seq(self, value: Any, path: Path, what: str) -> list | None:
        if value is None:
            return None
        if not isinstance(value, list):
            self.add(path, f"{what} must be a list, got {type(value).__name__}")
            return None
        return value

    def str_list(self, value: Any, path: Path, what: str) -> tuple[str, ...]:
        items = self.seq(value, path, what)
        if items is None:
            return ()
        out = []
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item:
                self.add(path + (index,), f"{what} entries must be non-empty strings, got {item!r}")
            else:
                out.append(item)
        return tuple(out)


# --------------------------------------------------------------------------------------- public API


def load_contract(source: str | os.PathLike[str] | dict[str, Any], *, filename: str | None = None,
                  policy: dict[str, Any] | None = None) -> Contract:
    """Load a contract from a file path, YAML text or an already-parsed dict.

    Raises :class:`ContractValidationError` with every problem located (file, line, path).
    ``policy`` overrides the contract's own severity → action policy.
    """
    if isinstance(source, dict):
        return _build(source, SourceMap(filename or "<dict>"), [], policy)
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and not source.lstrip().startswith("{")):
        path = FsPath(source)
        name = filename or str(source)
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
        return parse_contract(text, filename=name, policy=policy)
    return parse_contract(str(source), filename=filename or "<string>", policy=policy)


def parse_contract(text: str, *, filename: str = "<string>", policy: dict[str, Any] | None = None) -> Contract:
    """Parse YAML text (safe loader only) and validate it."""
    try:
        data, smap, duplicates = load_yaml(text, filename)
    except YamlSyntaxError as exc:
        raise ContractValidationError([ValidationIssue(filename, exc.line, "", str(exc))]) from None
    return _build(data, smap, duplicates, policy)


def validate_file(path: str | os.PathLike[str]) -> list[ValidationIssue]:
    """All problems of a contract file (empty list when valid)."""
    try:
        load_contract(path)
    except ContractValidationError as exc:
        return exc.issues
    return []


# --------------------------------------------------------------------------------------- building


def _build(data: Any, smap: SourceMap, duplicates: list, policy_override: dict | None) -> Contract:
    ctx = _Ctx(smap)
    for path, message in duplicates:
        ctx.add(path, message)
    if not isinstance(data, dict):
        ctx.add((), "a contract must be a YAML mapping with at least 'name'"
                if data is not None else "the document is empty")
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
        metadata["partitioned_by"] = list(ctx.str_list(metadata["partitioned_by"], ("metadata", "partitioned_by"),
                                                       "'partitioned_by'"))
    sla = _sla(ctx, data.get("sla"))
    policy = _policy(ctx, data.get("policy"), ("policy",))
    if policy_override:
        override_ctx = _Ctx(SourceMap("<policy argument>"))
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
            ctx.add(("columns", index, "name"), f"duplicate column name {col.name!r} "
                                                f"(first at columns[{seen_columns[col.name]}])")
        else:
            seen_columns[col.name] = index
        columns.append(col)

    table_checks = _checks(ctx, data.get("checks"), ("checks",), None, policy)
    references = parse_references(data.get("references"), lambda sub, msg: ctx.add(("references", *sub), msg),
                                  _similar)
    # What the contract declares becomes checks too (schema, constraints, SLA: see .enforcement).
    enforcement = enforcing.read_enforcement(ctx, data.get("enforcement"))
    columns = [enforcing.compile_column(ctx, col, declaration, enforcement, policy, tuple(table_checks),
                                        smap.line, where)
               for col, (declaration, where) in zip(columns, declarations)]
    enforcing.check_references(ctx, [(col, where) for col, (_, where) in zip(columns, declarations)])
    contract = Contract(
        name=name, version=version, owner=owner, domain=domain, description=description,
        consumers=consumers, tags=tags, dataset=dataset, metadata=metadata, sla=sla,
        columns=tuple(columns), checks=tuple(table_checks), policy=policy, source=smap.file,
        references=references,
        enforcement=enforcement,
    )
    contract = dataclasses.replace(contract, schema_checks=enforcing.schema_checks(contract, policy, smap.line),
                                   implicit_checks=enforcing.sla_checks(contract, policy, smap.line))
    _cross_checks(ctx, contract)
    check_reference_use(_indexed_checks(data, table_checks), references,
                        lambda sub, msg: ctx.add(("checks", *sub), msg), _similar)
    if ctx.issues:
        raise ContractValidationError(ctx.issues)
    return contract


def _indexed_checks(data: dict, checks: list[Check]) -> list[tuple[int, Check]]:
    """The built table-level checks with their index in the document (invalid ones were dropped)."""
    raw: list[Any] = data["checks"] if isinstance(data.get("checks"), list) else []
    by_path = {f"checks[{i}]": i for i in range(len(raw))}
    return [(by_path[c.path], c) for c in checks if c.path in by_path]


def _dataset(ctx: _Ctx, raw: Any) -> Dataset:
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
    if table and location:
        ctx.add(path, "give either 'table' or 'path', not both")
    if not table and not location:
        ctx.add(path, "'dataset' needs 'table' or 'path'")
    fmt = data.get("format", "delta")
    if fmt not in DATASET_FORMATS:
        ctx.add(path + ("format",), f"unknown format {fmt!r}{_similar(fmt, DATASET_FORMATS)}; "
                                    f"allowed: {', '.join(DATASET_FORMATS)}")
        fmt = "delta"
    options = ctx.mapping(data.get("options"), path + ("options",), "'options'") or {}
    return Dataset(table=table, path=location, format=fmt,
                   options={str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()})


def _sla(ctx: _Ctx, raw: Any) -> SLA:
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
            ctx.add(path + (key,), f"'{key}' must be a quoted time like \"06:00\" (unquoted, YAML reads "
                                   f"it as the number {value})")
        elif key == "delivery_deadline_utc" and not (isinstance(value, str) and _HHMM.match(value)):
            ctx.add(path + (key,), f"'{key}' must be a time of day HH:MM like \"06:00\", got {value!r}")
        elif key in ("timestamp_column", "delivery_deadline_utc") and not (isinstance(value, str) and value):
            ctx.add(path + (key,), f"'{key}' must be a non-empty string, got {value!r}")
        else:
            values[key] = str(value)
    return SLA(**values)


def _policy(ctx: _Ctx, raw: Any, path: Path) -> dict[str, dict[str, str]]:
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


def _column_type(ctx: _Ctx, raw: Any, path: Path) -> ColumnType | None:
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
        ctx.add(path, f"unknown column type {raw!r}{_similar(lowered, known)}")
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
        ctx.add(path + ("kind",), f"unknown column kind {kind!r}"
                                  f"{_similar(lowered, list(SCALAR_TYPES) + list(COMPLEX_KINDS))}")
        return None
    value_raw = raw.get("value_type", raw.get("element_type"))
    value_type = _column_type(ctx, value_raw, path + ("value_type",)) if value_raw is not None else None
    key_type = _column_type(ctx, raw.get("key_type"), path + ("key_type",)) if raw.get("key_type") is not None else None
    precision = raw.get("precision")
    scale = raw.get("scale")
    if normalised == "decimal":
        if precision is not None and (not isinstance(precision, int) or isinstance(precision, bool)
                                      or not 1 <= precision <= 38):
            ctx.add(path + ("precision",), f"decimal precision must be an integer in [1, 38], got {precision!r}")
            precision = None
        if scale is not None and (not isinstance(scale, int) or isinstance(scale, bool) or scale < 0
                                  or (precision is not None and scale > precision)):
            ctx.add(path + ("scale",), f"decimal scale must be an integer in [0, precision], got {scale!r}")
            scale = None
    elif precision is not None or scale is not None:
        ctx.add(path, "'precision'/'scale' only apply to decimal")
    if normalised != "map" and key_type is not None:
        ctx.add(path + ("key_type",), "'key_type' only applies to map")
    return ColumnType(normalised, value_type=value_type, key_type=key_type, precision=precision, scale=scale, raw=raw)


def _column(ctx: _Ctx, raw: Any, path: Path, policy: dict) -> tuple[Column, enforcing.Declaration] | None:
    if raw is None:
        ctx.add(path, "empty list item: a column must be a mapping with at least 'name'")
        return None
    data = ctx.mapping(raw, path, "a column")
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
    checks = _checks(ctx, data.get("checks"), path + ("checks",), name, policy)
    declaration = enforcing.read_column(ctx, data, path, col_type)
    if declaration.values.get("primary_key"):
        nullable = False  # a primary key is not null + unique
    return Column(name=name, type=col_type, nullable=nullable, description=description, checks=tuple(checks),
                  tags=tags, deprecated=declaration.deprecated, deprecated_by=declaration.deprecated_by,
                  sunset=declaration.sunset, renamed_from=declaration.renamed_from), declaration


def _checks(ctx: _Ctx, raw: Any, path: Path, column: str | None, policy: dict) -> list[Check]:
    items = ctx.seq(raw, path, "'checks'") or []
    out: list[Check] = []
    names: dict[str, int] = {}
    ids: dict[str, int] = {}
    for index, item in enumerate(items):
        check = _check(ctx, item, path + (index,), column, policy)
        if check is None:
            continue
        scope = f"column {column!r}" if column else "the table-level checks"
        if check.name in names:
            ctx.add(path + (index, "name"), f"two checks named {check.name!r} in {scope} "
                                            f"(first at {format_path(path + (names[check.name],))}); "
                                            "their check_id would collide")
        elif check.check_id in ids:
            ctx.add(path + (index, "name"), f"check name {check.name!r} gives the same check_id "
                                            f"{check.check_id!r} as {format_path(path + (ids[check.check_id],))}")
        names.setdefault(check.name, index)
        ids.setdefault(check.check_id, index)
        out.extend(expand_drift(check) if check.type == "drift" else [check])
    return out


def _number(ctx: _Ctx, value: Any, path: Path, what: str) -> float | None:
    if not registry.is_number(value):
        ctx.add(path, f"{what} must be a number, got {value!r}")
        return None
    return float(value)


def _validator(ctx: _Ctx, data: dict, path: Path, ctype: registry.CheckType,
               params: dict[str, Any]) -> Validator | None:
    present = [k for k in registry.VALIDATOR_KEYS if k in data]
    tolerance = DEFAULT_TOLERANCE
    if "tolerance" in data:
        value = _number(ctx, data["tolerance"], path + ("tolerance",), "'tolerance'")
        if value is not None and value < 0:
            ctx.add(path + ("tolerance",), f"'tolerance' must not be negative, got {data['tolerance']!r}")
        elif value is not None:
            tolerance = value
    if not ctype.validators and present:
        uses = {"max_age_hours": "it is validated by 'max_age_hours'", "max_gap_count":
                "it is validated by 'max_gap_count'", "drift": "it is validated by 'max_sigma'"}.get(
                    ctype.implicit or "", "it passes when its condition is true")
        ctx.add(path + (present[0],), f"'{ctype.name}' takes no validator ({', '.join(present)}); {uses}")
        return None
    if len(present) > 1:
        ctx.add(path + (present[1],), f"only one validator per check; found {', '.join(present)}")
        return None
    if not present:
        try:
            return registry.implicit_validator(ctype, params, tolerance)
        except (KeyError, TypeError, ValueError):
            return None  # a required parameter is missing or wrong: already reported
    kind = present[0]
    raw = data[kind]
    where = path + (kind,)
    if kind in ("between", "not_between"):
        if not isinstance(raw, list) or len(raw) != 2:
            ctx.add(where, f"'{kind}' needs a list of two numbers [low, high], got {raw!r}")
            return None
        low = _number(ctx, raw[0], where + (0,), f"'{kind}' bounds")
        high = _number(ctx, raw[1], where + (1,), f"'{kind}' bounds")
        if low is None or high is None:
            return None
        if low > high:
            ctx.add(where, f"'{kind}' low bound {raw[0]!r} is greater than high bound {raw[1]!r}")
            return None
        return Validator(kind, low=low, high=high, tolerance=tolerance)
    value = _number(ctx, raw, where, f"'{kind}'")
    if value is None:
        return None
    if kind == "max":
        return Validator("max", high=value, tolerance=tolerance)
    return Validator(kind, low=value, tolerance=tolerance)


def _param_value(ctx: _Ctx, param: registry.Param, value: Any, path: Path) -> Any:
    kind = param.kind
    if kind == "bool":
        if not isinstance(value, bool):
            ctx.add(path, f"'{param.name}' must be true or false, got {value!r}")
            return param.default
        return value
    if kind in ("number", "int"):
        if kind == "int" and not (isinstance(value, int) and not isinstance(value, bool)):
            ctx.add(path, f"'{param.name}' must be an integer, got {value!r}")
            return None
        if not registry.is_number(value):
            ctx.add(path, f"'{param.name}' must be a number, got {value!r}")
            return None
        if param.minimum is not None and value < param.minimum:
            ctx.add(path, f"'{param.name}' must be ≥ {param.minimum:g}, got {value!r}")
            return None
        if param.exclusive_minimum and param.minimum is not None and value <= param.minimum:
            ctx.add(path, f"'{param.name}' must be > {param.minimum:g}, got {value!r}")
            return None
        if param.maximum is not None and value > param.maximum:
            bound = f"in [{param.minimum:g}, {param.maximum:g}]" if param.minimum is not None else f"≤ {param.maximum:g}"
            ctx.add(path, f"'{param.name}' must be {bound}, got {value!r}")
            return None
        return value
    if kind == "str":
        if not isinstance(value, str) or not value:
            ctx.add(path, f"'{param.name}' must be a non-empty string, got {value!r}")
            return None
        return value
    if kind == "choice":
        if value not in param.choices:
            ctx.add(path, f"unknown {param.name} {value!r}{_similar(value, param.choices)}; "
                          f"allowed: {', '.join(param.choices)}")
            return None
        return value
    if kind == "str_list":
        if not isinstance(value, list) or not value:
            ctx.add(path, f"'{param.name}' must be a non-empty list of column names, got {value!r}")
            return None
        return list(ctx.str_list(value, path, f"'{param.name}'"))
    if kind == "value_list":
        if not isinstance(value, list) or not value:
            ctx.add(path, f"'{param.name}' must be a non-empty list, got {value!r}")
            return None
        for index, item in enumerate(value):
            if item is None or isinstance(item, (list, dict)) or (isinstance(item, float) and math.isnan(item)):
                ctx.add(path + (index,), f"'{param.name}' entries must be strings, numbers or booleans, got {item!r}")
        return list(value)
    if kind == "mapping":
        if not isinstance(value, dict):
            ctx.add(path, f"'{param.name}' must be a mapping, got {value!r}")
            return None
        return dict(value)
    if kind == "flags":
        if not isinstance(value, list):
            ctx.add(path, f"'{param.name}' must be a list like [IGNORECASE], got {value!r}")
            return ()
        flags = []
        for index, item in enumerate(value):
            name = str(item).upper() if isinstance(item, str) else item
            if name not in registry.REGEX_FLAGS:
                ctx.add(path + (index,), f"unknown regex flag {item!r}{_similar(item, registry.REGEX_FLAGS)}; "
                                         f"allowed: IGNORECASE, MULTILINE, DOTALL, VERBOSE, UNICODE")
            else:
                flags.append(name)
        return tuple(flags)
    raise AssertionError(kind)  # pragma: no cover


def _check(ctx: _Ctx, raw: Any, path: Path, column: str | None, policy: dict) -> Check | None:
    if raw is None:
        ctx.add(path, "empty list item: a check must be a mapping with 'name' and 'type'")
        return None
    data = ctx.mapping(raw, path, "a check")
    if data is None:
        return None
    name = ctx.string(data, "name", path, required=True)
    type_name = data.get("type")
    level = "table" if column is None else "column"
    if not isinstance(type_name, str):
        ctx.add(path + ("type",) if "type" in data else path,
                "'type' is required" if type_name is None else f"'type' must be a string, got {type_name!r}")
        return None
    ctype = registry.check_type(level, type_name)
    if ctype is None:
        other = "column" if level == "table" else "table"
        if registry.check_type(other, type_name) is not None:
            where = "under columns[].checks" if other == "column" else "in the top-level 'checks'"
            ctx.add(path + ("type",), f"'{type_name}' is a {other}-level check; put it {where}")
        else:
            allowed = registry.TABLE_TYPES if level == "table" else registry.COLUMN_TYPES
            ctx.add(path + ("type",), f"unknown {level}-level check type {type_name!r}"
                                      f"{_similar(type_name, registry.TABLE_TYPES + registry.COLUMN_TYPES)}; "
                                      f"allowed: {', '.join(allowed)}")
        return None
    allowed_keys = registry.COMMON_KEYS + tuple(p.name for p in ctype.params)
    if ctype.validators:
        allowed_keys += registry.VALIDATOR_KEYS + ("baseline",)
    # Validators on freshness/completeness get their own message in _validator.
    ctx.keys({k: v for k, v in data.items() if k not in registry.VALIDATOR_KEYS or ctype.validators},
             allowed_keys, path, f"a '{type_name}' check")

    params: dict[str, Any] = {}
    for param in ctype.params:
        if param.name in data and data[param.name] is not None:
            value = _param_value(ctx, param, data[param.name], path + (param.name,))
            params[param.name] = value if value is not None else param.default
            if value is None:
                params.setdefault("__invalid__", []).append(param.name)
        elif param.required:
            ctx.add(path, f"'{type_name}' check needs '{param.name}'")
            params["__invalid__"] = params.get("__invalid__", []) + [param.name]
        else:
            params[param.name] = param.default
    invalid = params.pop("__invalid__", [])
    if ctype.extra is not None and not invalid:
        ctype.extra(params, lambda sub, message: ctx.add(path + tuple(sub), message))

    validator = _validator(ctx, data, path, ctype, params) if not invalid or ctype.validators else None
    baseline = None
    if "baseline" in data and ctype.validators:
        baseline = parse_baseline(data["baseline"], lambda sub, message: ctx.add(path + ("baseline",) + tuple(sub),
                                                                                 message))
        static = [k for k in registry.VALIDATOR_KEYS if k in data]
        if static:
            ctx.add(path + (static[0],), f"a check with 'baseline' learns its bounds from history; "
                                         f"remove the static validator '{static[0]}'")
            return None
        if baseline is None:
            return None

    severity = data.get("severity", DEFAULT_SEVERITY)
    if not isinstance(severity, str) or severity not in SEVERITIES:
        ctx.add(path + ("severity",), f"unknown severity {severity!r}; allowed: {', '.join(SEVERITIES)}")
        severity = DEFAULT_SEVERITY
    tags = ctx.str_list(data.get("tags"), path + ("tags",), "'tags'")
    check_filter = ctx.string(data, "filter", path)
    description = ctx.string(data, "description", path)
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        ctx.add(path + ("enabled",), f"'enabled' must be true or false, got {enabled!r}")
        enabled = True
    if name is None or validator is None or invalid:
        return None

    check_id = f"{column or '_table_'}/{slug(name)}"
    draft = Check(name=name, type=type_name, column=column, severity=severity, action="flag",
                  validator=validator, params=params, check_id=check_id, tags=tags,
                  filter=check_filter, description=description, enabled=enabled, path=format_path(path),
                  line=ctx.smap.line(path), baseline=baseline)
    explicit = data.get("action")
    if explicit is not None:
        if explicit not in ACTIONS:
            ctx.add(path + ("action",), f"unknown action {explicit!r}{_similar(explicit, ACTIONS)}; "
                                        f"allowed: {', '.join(ACTIONS)}")
            return None
        if explicit == "quarantine" and not draft.row_level:
            ctx.add(path + ("action",), f"'{type_name}' has no per-row reading here, so it cannot quarantine "
                                        "rows; use gate or flag")
            return None
        action = explicit
    else:
        action = policy[severity]["row" if draft.row_level else "table"]
    return Check(**{**draft.__dict__, "action": action, "explicit_action": explicit is not None})


def _cross_checks(ctx: _Ctx, contract: Contract) -> None:
    """Rules that look across the document (declared columns vs. the columns checks refer to)."""
    declared = {c.name for c in contract.columns}
    if not declared:
        return  # a checks-only contract: columns are looked up in the data at run time
    sla_column = contract.sla.timestamp_column
    if sla_column is not None and sla_column not in declared:
        ctx.add(("sla", "timestamp_column"), f"column {sla_column!r} is not declared in 'columns'"
                                             f"{_similar(sla_column, declared)}")
    for index, col in enumerate(contract.partitioned_by):
        if col not in declared:
            ctx.add(("metadata", "partitioned_by", index), f"column {col!r} is not declared in 'columns'"
                                                           f"{_similar(col, declared)}")
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
                ctx.add(("checks", index, key), f"column {col!r} is not declared in 'columns'"
                                                f"{_similar(col, declared)}")
