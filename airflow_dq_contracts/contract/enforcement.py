"""Enforcement: what a contract *declares* becomes checks that every run evaluates.

Three sources, each compiled to ordinary checks of the existing engine (so they share its single
scan and grouped passes) with fixed ids (DESIGN §5):

* **Schema conformance** — ``enforcement.schema: {mode: contains | exact | off, severity: P0}``.
  One ``<column>/schema`` check per declared column (present, with a compatible type — see
  :mod:`.conformance`; a deprecated column may be absent) and, in ``exact`` mode, one
  ``_table_/schema`` check failing on undeclared columns. Default ``contains``, P0 (→ gate).
* **Column constraints** — seed 004's shorthand on a column: ``nullable: false`` →
  ``<column>/not_null`` (``missing``, max 0); ``unique: true`` → ``<column>/unique``
  (``duplicates``, max 0; NULLs count as duplicates, DESIGN §4); ``primary_key: true`` → both;
  ``allowed_values: […]`` → ``<column>/allowed_values`` (``whitelist``); ``pattern:`` / ``format:``
  → ``<column>/pattern``; ``min_value:`` / ``max_value:`` → ``<column>/min_value`` (``min``) /
  ``<column>/max_value`` (``max``), exact bounds (tolerance 0). Severity from
  ``enforcement.constraints: {severity: P1}`` (default P1: violating rows are quarantined);
  ``enforcement.constraints: off`` disables them. A constraint is *suppressed* when an explicit,
  unfiltered check on the column already asserts it (or something stricter), so no result is
  reported twice. A deprecated column's constraints are not compiled: it is on its way out.
* **SLA** — ``sla.freshness_hours`` with ``sla.timestamp_column`` → the freshness check
  ``_table_/sla_freshness`` (``enforcement.sla: {severity: P1}`` or ``off``), unless an explicit
  ``freshness`` check on that column exists.

* **Statistics** — ``enforcement.statistics: off`` (default ``on``): no check of this contract is answered
  from the Delta log's statistics; every one is scanned (``engine/statistics_first.py``).

``off`` may be written bare or quoted: YAML 1.1 reads a bare ``off`` as ``false``.

Example::

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract('''
    ... name: t
    ... columns:
    ...   - {name: id, type: long, primary_key: true}
    ...   - {name: state, type: string, allowed_values: [on, off]}
    ... ''')
    >>> [ch.check_id for ch in c.evaluated_checks()]
    ['id/schema', 'state/schema', 'id/not_null', 'id/unique', 'state/allowed_values']
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any, Protocol

from . import checks as registry
from .model import DEFAULT_POLICY, SCHEMA_MODES, SEVERITIES, Check, Column, ColumnType, Contract, Enforcement
from .validators import Validator
from .yamlsrc import format_path

Path = tuple[Any, ...]

TABLE = "_table_"
ENFORCEMENT_KEYS = ("schema", "constraints", "sla", "statistics")
SCHEMA_KEYS = ("mode", "severity")
SEVERITY_KEYS = ("severity",)
CONSTRAINT_KEYS = ("unique", "primary_key", "allowed_values", "pattern", "format", "min_value", "max_value")
DEPRECATION_KEYS = ("deprecated", "deprecated_by", "sunset", "renamed_from")
#: Keys a column may carry beyond name/type/nullable/description/checks/tags.
COLUMN_KEYS = CONSTRAINT_KEYS + DEPRECATION_KEYS
# Declared types min_value/max_value can bound (the min/max checks read dates as epoch seconds).
_BOUNDABLE = {"byte", "short", "int", "long", "float", "double", "decimal", "date", "timestamp", "timestamp_ntz"}


class Issues(Protocol):
    """Where problems go (the loader's collector): ``add(path, message)``."""

    def add(self, path: Path, message: str) -> None: ...


def is_off(value: Any) -> bool:
    """``off`` written bare (YAML reads it as ``false``) or quoted.

    >>> is_off(False), is_off("off"), is_off("Off"), is_off("on")
    (True, True, True, False)
    """
    return value is False or (isinstance(value, str) and value.strip().lower() == "off")


def _is_on(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "on")


# --------------------------------------------------------------------------------------- reading


def _severity(issues: Issues, raw: dict, path: Path, default: str) -> str:
    value = raw.get("severity", default)
    if not isinstance(value, str) or value not in SEVERITIES:
        issues.add(path + ("severity",), f"unknown severity {value!r}; allowed: {', '.join(SEVERITIES)}")
        return default
    return value


def _unknown_keys(issues: Issues, raw: dict, allowed: tuple[str, ...], path: Path, what: str) -> None:
    for key in raw:
        if key not in allowed:
            issues.add(path + (key,), f"unknown key {key!r} in {what}; allowed: {', '.join(allowed)}")


def _switch(issues: Issues, raw: Any, path: Path, default_severity: str) -> tuple[bool, str]:
    """``off`` | ``on`` | ``{severity: …}`` → (enabled, severity)."""
    if raw is None or _is_on(raw):
        return True, default_severity
    if is_off(raw):
        return False, default_severity
    if not isinstance(raw, dict):
        issues.add(path, f"'{path[-1]}' must be off or a mapping like {{severity: {default_severity}}}, got {raw!r}")
        return True, default_severity
    _unknown_keys(issues, raw, SEVERITY_KEYS, path, f"'{path[-1]}'")
    return True, _severity(issues, raw, path, default_severity)


def read_enforcement(issues: Issues, raw: Any, path: Path = ("enforcement",)) -> Enforcement:
    """The contract's ``enforcement`` mapping (defaults when absent), problems reported to ``issues``.

    >>> class Collect(list):
    ...     def add(self, path, message): self.append(message)
    >>> read_enforcement(Collect(), {"schema": "exact", "constraints": False}).constraints
    False
    """
    default = Enforcement()
    if raw is None:
        return default
    if not isinstance(raw, dict):
        issues.add(path, f"'enforcement' must be a mapping, got {type(raw).__name__}")
        return default
    _unknown_keys(issues, raw, ENFORCEMENT_KEYS, path, "'enforcement'")
    mode, schema_severity = default.schema_mode, default.schema_severity
    schema = raw.get("schema")
    if isinstance(schema, dict):
        _unknown_keys(issues, schema, SCHEMA_KEYS, path + ("schema",), "'enforcement.schema'")
        mode = schema.get("mode", mode)
        mode_path = path + ("schema", "mode")
        schema_severity = _severity(issues, schema, path + ("schema",), schema_severity)
    elif schema is not None:
        mode, mode_path = schema, path + ("schema",)
    if schema is not None:
        mode = "off" if is_off(mode) else mode
        if mode not in SCHEMA_MODES:
            issues.add(mode_path, f"unknown schema mode {mode!r}; allowed: {', '.join(SCHEMA_MODES)}")
            mode = default.schema_mode
    constraints, constraints_severity = _switch(
        issues, raw.get("constraints"), path + ("constraints",), default.constraints_severity
    )
    sla, sla_severity = _switch(issues, raw.get("sla"), path + ("sla",), default.sla_severity)
    statistics = raw.get("statistics")  # on (default) | off: answer checks from the Delta log first
    if statistics is not None and not (_is_on(statistics) or is_off(statistics)):
        issues.add(path + ("statistics",), f"'statistics' must be on or off, got {statistics!r}")
    return Enforcement(
        schema_mode=mode,
        schema_severity=schema_severity,
        constraints=constraints,
        constraints_severity=constraints_severity,
        sla=sla,
        sla_severity=sla_severity,
        statistics=not is_off(statistics),
    )


@dataclasses.dataclass(frozen=True)
class Declaration:
    """A column's constraint and deprecation keys as read (values normalised, paths for locations)."""

    values: dict[str, Any]
    paths: dict[str, Path]
    deprecated: bool = False
    deprecated_by: str | None = None
    sunset: dt.date | None = None
    renamed_from: str | None = None


def _sunset(issues: Issues, value: Any, path: Path) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):  # a bare 2026-05-01 is already a YAML date
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    issues.add(path, f"'sunset' must be a date YYYY-MM-DD, got {value!r}")
    return None


def read_column(issues: Issues, data: dict, path: Path, column_type: ColumnType | None) -> Declaration:
    """Validate a column's constraint and deprecation keys (``data`` is the column mapping)."""
    values: dict[str, Any] = {}
    paths: dict[str, Path] = {}

    def put(key: str, value: Any) -> None:
        values[key], paths[key] = value, path + (key,)

    for key in ("unique", "primary_key"):
        if key in data:
            if not isinstance(data[key], bool):
                issues.add(path + (key,), f"'{key}' must be true or false, got {data[key]!r}")
            elif data[key]:
                put(key, True)
    if values.get("primary_key") and data.get("nullable") is True:
        issues.add(path + ("nullable",), "a primary key is never NULL: drop 'nullable: true' or 'primary_key'")
    if "allowed_values" in data:
        raw = data["allowed_values"]
        if not isinstance(raw, list) or not raw:
            issues.add(path + ("allowed_values",), f"'allowed_values' must be a non-empty list, got {raw!r}")
        elif any(item is None or isinstance(item, (list, dict)) for item in raw):
            issues.add(path + ("allowed_values",), "'allowed_values' entries must be strings, numbers or booleans")
        else:
            put("allowed_values", list(raw))
    if "pattern" in data and "format" in data:
        issues.add(path + ("format",), "give either 'pattern' or 'format', not both")
    elif "pattern" in data:
        raw = data["pattern"]
        problem = (
            f"'pattern' must be a non-empty string, got {raw!r}"
            if not isinstance(raw, str) or not raw
            else registry.regex_problem(raw)
        )
        if problem:
            issues.add(path + ("pattern",), problem)
        else:
            put("pattern", raw)
    elif "format" in data:
        raw = data["format"]
        if raw not in registry.FORMAT_PATTERNS:
            issues.add(path + ("format",), f"unknown format {raw!r}; allowed: {', '.join(registry.FORMAT_PATTERNS)}")
        else:
            put("format", raw)
    for key in ("min_value", "max_value"):
        if key not in data:
            continue
        raw = data[key]
        if not registry.is_number(raw):
            issues.add(path + (key,), f"'{key}' must be a number, got {raw!r}")
        elif column_type is not None and column_type.kind not in _BOUNDABLE:
            issues.add(
                path + (key,),
                f"'{key}' needs a numeric, date or timestamp column; this column is {column_type.describe()}",
            )
        else:
            put(key, float(raw))
    if "min_value" in values and "max_value" in values and values["min_value"] > values["max_value"]:
        issues.add(
            path + ("min_value",),
            f"'min_value' {data['min_value']!r} is greater than 'max_value' {data['max_value']!r}",
        )

    deprecated = data.get("deprecated", False)
    if not isinstance(deprecated, bool):
        issues.add(path + ("deprecated",), f"'deprecated' must be true or false, got {deprecated!r}")
        deprecated = False
    texts: dict[str, str | None] = {}
    for key in ("deprecated_by", "renamed_from"):
        raw = data.get(key)
        if raw is not None and not (isinstance(raw, str) and raw.strip()):
            issues.add(path + (key,), f"'{key}' must be a column name, got {raw!r}")
            raw = None
        texts[key] = raw
    sunset = _sunset(issues, data["sunset"], path + ("sunset",)) if data.get("sunset") is not None else None
    if (texts["deprecated_by"] is not None or sunset is not None) and not deprecated:
        key = "deprecated_by" if texts["deprecated_by"] is not None else "sunset"
        issues.add(path + (key,), f"'{key}' only applies to a column with 'deprecated: true'")
    if data.get("nullable") is False:
        paths["nullable"] = path + ("nullable",)
    return Declaration(values, paths, deprecated, texts["deprecated_by"], sunset, texts["renamed_from"])


def check_references(issues: Issues, columns: list[tuple[Column, Path]]) -> None:
    """``deprecated_by`` must name a declared column; ``renamed_from`` must not name one."""
    names = {column.name for column, _ in columns}
    for column, path in columns:
        if column.deprecated_by is not None and column.deprecated_by not in names:
            issues.add(path + ("deprecated_by",), f"column {column.deprecated_by!r} is not declared in 'columns'")
        if column.deprecated_by == column.name:
            issues.add(path + ("deprecated_by",), "a column cannot replace itself")
        if column.renamed_from is not None and column.renamed_from in names:
            issues.add(
                path + ("renamed_from",),
                f"column {column.renamed_from!r} is still declared; a renamed column's old name must be gone",
            )


# --------------------------------------------------------------------------------------- compiling


def _action(draft: Check, policy: dict[str, dict[str, str]]) -> Check:
    level = "row" if draft.row_level else "table"
    return dataclasses.replace(draft, action=policy.get(draft.severity, DEFAULT_POLICY[draft.severity])[level])


def _implicit(
    name: str,
    kind: str,
    column: str | None,
    severity: str,
    validator: Validator,
    params: dict[str, Any],
    tags: tuple[str, ...],
    description: str,
    where: str,
    line: int | None,
    policy: dict[str, dict[str, str]],
) -> Check:
    check_id = f"{column or TABLE}/{name}"
    more = {"tags": tags, "description": description, "path": where, "line": line}
    draft = Check.draft(name, kind, column, severity, validator, params, check_id, **more)
    return _action(draft, policy)


_NONE = Validator("max", high=0.0, tolerance=0.0)


def _upper_zero(check: Check) -> bool:
    # The bound as written: a count or share with upper bound 0 asserts "none" (the default
    # tolerance of 1e-9 cannot admit a whole row).
    bound = check.validator.upper_bound
    return bound is not None and bound <= 0


def _same_text_values(values: list[Any]) -> set[str]:
    return {str(v).lower() if isinstance(v, bool) else str(v) for v in values}


def asserted_by(check: Check, constraint: str, value: Any) -> bool:
    """Whether the explicit ``check`` already asserts ``constraint`` (or something stricter).

    Only unfiltered, enabled checks count: a filtered one says nothing about the other rows, a
    disabled one is never evaluated.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "t", "columns": [{"name": "a", "checks": [
    ...     {"name": "a present", "type": "missing", "max": 0}]}]})
    >>> asserted_by(c.columns[0].checks[0], "not_null", True)
    True
    """
    if check.filter or not check.enabled:
        return False
    if constraint == "not_null":
        return check.type == "missing" and _upper_zero(check)
    if constraint == "unique":
        if check.column is None:
            return check.type == "duplicates" and check.params.get("columns") == [value] and _upper_zero(check)
        return check.type == "duplicates" and _upper_zero(check)
    if constraint == "allowed_values":
        return (
            check.type == "whitelist"
            and check.validator.kind == "all_conform"
            and check.params.get("case_sensitive", True)
            and _same_text_values(check.params["values"]) <= _same_text_values(value)
        )
    if constraint == "pattern":
        return (
            check.type == "pattern"
            and check.validator.kind == "all_conform"
            and not check.params.get("flags")
            and (check.params.get("pattern"), check.params.get("format")) == value
        )
    if constraint == "min_value":
        limit = check.validator.lower_limit
        return check.type == "min" and limit is not None and limit >= value
    if constraint == "max_value":
        limit = check.validator.upper_limit
        return check.type == "max" and limit is not None and limit <= value
    return False


def _with_tags(check: Check, tags: tuple[str, ...]) -> Check:
    merged = tuple(dict.fromkeys(check.tags + tags))  # check tags first, then the column's; no repeats
    return check if merged == check.tags else dataclasses.replace(check, tags=merged)


def compile_column(
    issues: Issues,
    column: Column,
    declaration: Declaration,
    enforcement: Enforcement,
    policy: dict[str, dict[str, str]],
    table_checks: tuple[Check, ...],
    line: Callable[[Path], int | None],
    path: Path,
) -> Column:
    """``column`` with its tags on every check and its constraint checks compiled.

    A constraint whose id an explicit check of the column already uses (and does not assert the
    constraint) is an error at that check, since two result rows cannot share a ``check_id``.
    """
    checks = tuple(_with_tags(c, column.tags) for c in column.checks)
    out = dataclasses.replace(column, checks=checks)
    if not enforcement.constraints or column.deprecated:
        return out
    values = declaration.values
    wanted: list[tuple[str, str, Any, str, dict[str, Any], Validator]] = []
    if not column.nullable:
        key = "nullable" if "nullable" in declaration.paths else "primary_key"
        wanted.append(("not_null", "missing", True, key, {"return": "count"}, _NONE))
    if values.get("unique") or values.get("primary_key"):
        key = "unique" if values.get("unique") else "primary_key"
        wanted.append(("unique", "duplicates", column.name, key, {"return": "count"}, _NONE))
    if "allowed_values" in values:
        wanted.append(
            (
                "allowed_values",
                "whitelist",
                values["allowed_values"],
                "allowed_values",
                {"values": values["allowed_values"], "return": "count", "case_sensitive": True},
                Validator("all_conform", tolerance=0.0),
            )
        )
    if "pattern" in values or "format" in values:
        key = "pattern" if "pattern" in values else "format"
        params = {"pattern": values.get("pattern"), "format": values.get("format"), "flags": (), "return": "count"}
        wanted.append(
            (
                "pattern",
                "pattern",
                (params["pattern"], params["format"]),
                key,
                params,
                Validator("all_conform", tolerance=0.0),
            )
        )
    if "min_value" in values:
        wanted.append(
            (
                "min_value",
                "min",
                values["min_value"],
                "min_value",
                {},
                Validator("min", low=values["min_value"], tolerance=0.0),
            )
        )
    if "max_value" in values:
        wanted.append(
            (
                "max_value",
                "max",
                values["max_value"],
                "max_value",
                {},
                Validator("max", high=values["max_value"], tolerance=0.0),
            )
        )
    scope = checks + tuple(t for t in table_checks if t.type == "duplicates")
    compiled: list[Check] = []
    for name, kind, value, key, params, validator in wanted:
        if any(asserted_by(c, name, value) for c in scope):
            continue
        where = declaration.paths.get(key, path)
        clash = next((c for c in checks if c.check_id == f"{column.name}/{name}"), None)
        if clash is not None:
            issues.add(
                tuple(_parse_path(clash.path)) + ("name",),
                f"check_id {clash.check_id!r} is the id of the constraint declared by "
                f"'{key}'; rename this check (or make it assert the constraint)",
            )
            continue
        compiled.append(
            _implicit(
                name,
                kind,
                column.name,
                enforcement.constraints_severity,
                validator,
                params,
                column.tags,
                f"constraint from the column's '{key}'",
                format_path(where),
                line(where),
                policy,
            )
        )
    return dataclasses.replace(out, constraints=tuple(compiled))


def _parse_path(text: str) -> list[Any]:
    """``columns[2].checks[0]`` → ``["columns", 2, "checks", 0]`` (the inverse of format_path)."""
    out: list[Any] = []
    for part in text.replace("[", ".[").split("."):
        if not part:
            continue
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return out


def schema_checks(
    contract: Contract, policy: dict[str, dict[str, str]], line: Callable[[Path], int | None]
) -> tuple[Check, ...]:
    """``<column>/schema`` per declared column, plus ``_table_/schema`` in ``exact`` mode."""
    enforcement = contract.enforcement
    if enforcement.schema_mode == "off" or not contract.columns:
        return ()
    declared = tuple(c.name for c in contract.columns)
    out = []
    for index, column in enumerate(contract.columns):
        params = {
            "declared_type": column.type,
            "declared": declared,
            "deprecated": column.deprecated,
            "deprecated_by": column.deprecated_by,
            "sunset": column.sunset,
            "renamed_from": column.renamed_from,
        }
        out.append(
            _implicit(
                "schema",
                "schema",
                column.name,
                enforcement.schema_severity,
                Validator("max", high=0.0, tolerance=0.0, metric_name="schema_problems"),
                params,
                column.tags,
                "schema conformance of the declared column",
                f"columns[{index}]",
                line(("columns", index)),
                policy,
            )
        )
    if enforcement.schema_mode == "exact":
        out.append(
            _implicit(
                "schema",
                "schema",
                None,
                enforcement.schema_severity,
                Validator("max", high=0.0, tolerance=0.0, metric_name="undeclared_columns"),
                {"declared": declared},
                (),
                "no undeclared columns (enforcement.schema.mode: exact)",
                "enforcement",
                line(("enforcement",)),
                policy,
            )
        )
    return tuple(out)


def sla_checks(
    contract: Contract, policy: dict[str, dict[str, str]], line: Callable[[Path], int | None]
) -> tuple[Check, ...]:
    """``_table_/sla_freshness`` from ``sla.freshness_hours`` + ``sla.timestamp_column``, if not written."""
    sla = contract.sla
    if not contract.enforcement.sla or sla.freshness_hours is None or not sla.timestamp_column:
        return ()
    if any(
        c.type == "freshness" and c.enabled and c.params.get("timestamp_column") == sla.timestamp_column
        for c in contract.checks
    ):
        return ()
    params = {"max_age_hours": sla.freshness_hours, "timestamp_column": sla.timestamp_column, "aggregation": "max"}
    return (
        _implicit(
            "sla_freshness",
            "freshness",
            None,
            contract.enforcement.sla_severity,
            Validator("max", high=float(sla.freshness_hours), metric_name="age_hours"),
            params,
            (),
            "the SLA's freshness_hours on its timestamp_column",
            "sla.freshness_hours",
            line(("sla", "freshness_hours")),
            policy,
        ),
    )
