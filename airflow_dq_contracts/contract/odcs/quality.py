"""ODCS ``quality[]`` rules → contract checks, exactly or refused with a location.

One rule becomes one check of the contract language (or, for ``type: text``, documentation). The
readings ODCS leaves open are chosen here, said in the contract's ``metadata.odcs.notes`` (with the
rule's ODCS path, and printed by ``import odcs``) and listed in ``docs/interop.md`` ("ODCS"):

* ``mustBeBetween: [a, b]`` is inclusive (``a ≤ value ≤ b``, as SQL ``BETWEEN``); ``mustNotBeBetween``
  is its negation (passes when ``value < a`` or ``value > b``).
* ``unit: percent`` is 0–100 of *all* rows (NULLs included); ``rows`` (the default) counts rows.
* ``duplicateValues`` counts ``COUNT(*) − COUNT(DISTINCT …)``: every copy beyond the first, a key
  with a NULL counting as a duplicate (DESIGN §4).
* ``invalidValues`` does not count NULL (a NULL is *missing*, not invalid — ``missingValues`` counts it).
* ``missingValues`` without ``arguments.missingValues`` counts NULLs only.
* strict bounds on a row count shift by one (counts are integers); on a percentage they become
  ``not_between`` against the other end of [0, 1]; on a ``sql`` value the query is wrapped in an
  exact SQL comparison.

Example::

    >>> from airflow_dq_contracts.contract.yamlsrc import SourceMap
    >>> from .common import Found
    >>> found = Found(SourceMap("o.yaml"))
    >>> scope = Scope(column="id", names=("orders",))
    >>> compile_rule(found, {"metric": "nullValues", "mustBe": 0}, ("q", 0), scope)
    ({'name': 'nullValues mustBe 0', 'type': 'missing', 'return': 'count', 'equals': 0}, 'id')
"""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from typing import Any

import yaml

from .. import checks as registry
from ..sqltext import quote_identifier_if_needed, spark_literal
from ..yamlsrc import Path, YamlSyntaxError, format_path, load_yaml
from .common import Found, exact, plain

ENGINE = "airflow-dq-contracts"
OPERATORS = (
    "mustBe",
    "mustNotBe",
    "mustBeGreaterThan",
    "mustBeGreaterOrEqualTo",
    "mustBeLessThan",
    "mustBeLessOrEqualTo",
    "mustBeBetween",
    "mustNotBeBetween",
)
METRICS = ("nullValues", "missingValues", "invalidValues", "duplicateValues", "rowCount")
# ODCS v3.0's library ``rule`` names, read as the v3.1 metric they became.
RULE_ALIASES = {
    "duplicateCount": "duplicateValues",
    "nullCheck": "nullValues",
    "rowCount": "rowCount",
    **{m: m for m in METRICS},
}
NULL_CHECK_NOTE = "v3.0 rule nullCheck without an operator read as nullValues mustBe 0 (no NULL)"
# Keys that describe or schedule a rule without changing what it asserts (Airflow schedules the run).
DOC_KEYS = (
    "id",
    "name",
    "description",
    "dimension",
    "severity",
    "businessImpact",
    "method",
    "schedule",
    "scheduler",
    "customProperties",
    "authoritativeDefinitions",
    "tags",
    "type",
    "unit",
)
RULE_KEYS = DOC_KEYS + OPERATORS + ("metric", "rule", "arguments", "query", "engine", "implementation")
SEVERITIES = {
    "critical": "P0",
    "blocker": "P0",
    "fatal": "P0",
    "error": "P1",
    "high": "P1",
    "major": "P1",
    "warning": "P2",
    "warn": "P2",
    "medium": "P2",
    "minor": "P3",
    "info": "P3",
    "low": "P3",
}
BETWEEN_NOTE = "ODCS mustBeBetween read as inclusive (a ≤ value ≤ b); mustNotBeBetween as its negation"
PERCENT_NOTE = "unit percent: 0–100 of all rows, NULLs included"
DUPLICATES_NOTE = "duplicateValues read as COUNT(*) − COUNT(DISTINCT …): copies beyond the first, NULL keys count"
INVALID_NOTE = "invalidValues does not count NULL (a NULL is missing, not invalid)"
HUNDRED = Decimal(100)


@dataclasses.dataclass(frozen=True)
class Scope:
    """Where a rule sits: its property's column (None at object level) and the names of its object."""

    column: str | None
    names: tuple[str, ...]
    columns: dict[str, str] = dataclasses.field(default_factory=dict)  # ODCS property name → column
    notes: list[str] = dataclasses.field(default_factory=list)  # the readings chosen (said in metadata)


@dataclasses.dataclass
class Reading:
    """How a metric reads: ``count`` (integer), ``pct`` (0–1 ratio) or ``value`` (a query's number)."""

    kind: str
    notes: list[str] = dataclasses.field(default_factory=list)


def severity(found: Found, rule: dict, path: Path) -> str | None:
    """The contract severity of an ODCS ``severity`` (P0–P3 pass through; see ``SEVERITIES``)."""
    raw = rule.get("severity")
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().upper() in ("P0", "P1", "P2", "P3"):
        return raw.strip().upper()
    if isinstance(raw, str) and raw.strip().lower() in SEVERITIES:
        return SEVERITIES[raw.strip().lower()]
    known = ", ".join(sorted(set(SEVERITIES)))
    found.refuse(path + ("severity",), f"unknown severity {raw!r}; known: {known}, or P0–P3")
    return None


def validator(found: Found, rule: dict, path: Path, reading: Reading) -> dict[str, Any] | None:
    """Contract validator keys meaning exactly the rule's operator; None (refused, located) otherwise."""
    present = [op for op in OPERATORS if op in rule]
    if set(present) == {"mustBeGreaterOrEqualTo", "mustBeLessOrEqualTo"}:
        low = _number(found, rule, path, "mustBeGreaterOrEqualTo", reading)
        high = _number(found, rule, path, "mustBeLessOrEqualTo", reading)
        if low is None or high is None:
            return None
        return _between(found, path + ("mustBeGreaterOrEqualTo",), "between", low, high, reading)
    if len(present) != 1:
        found.refuse(
            path,
            f"a rule needs exactly one operator ({', '.join(OPERATORS)}), found {', '.join(present) or 'none'}",
        )
        return None
    op = present[0]
    exact_keys: dict[str, Any] = {} if reading.kind == "count" else {"tolerance": 0}
    if op in ("mustBeBetween", "mustNotBeBetween"):
        pair = rule[op]
        if not isinstance(pair, list) or len(pair) != 2 or any(exact(v) is None for v in pair):
            found.refuse(path + (op,), f"'{op}' needs two numbers [low, high], got {pair!r}")
            return None
        low, high = (_scaled(exact(v), reading) for v in pair)  # type: ignore[arg-type]
        reading.notes.append(BETWEEN_NOTE)
        return _between(found, path + (op,), "between" if op == "mustBeBetween" else "not_between", low, high, reading)
    value = _number(found, rule, path, op, reading)
    if value is None:
        return None
    if reading.kind == "pct" and not Decimal(0) <= value <= Decimal(1):
        found.refuse(path + (op,), f"{plain(value * HUNDRED)}% is outside 0–100%")
        return None
    if op == "mustBe":
        return {"equals": plain(value), **exact_keys}
    if op == "mustNotBe":
        # not_between [v, v] passes iff value < v or value > v: exactly "≠ v".
        return {"not_between": [plain(value), plain(value)], "tolerance": 0}
    if op == "mustBeGreaterOrEqualTo":
        return {"min": plain(value), **exact_keys}
    if op == "mustBeLessOrEqualTo":
        return {"max": plain(value), **exact_keys}
    greater = op == "mustBeGreaterThan"
    if reading.kind == "count":
        # An integer count is > v exactly when it is ≥ floor(v) + 1 (and < v when ≤ ceil(v) − 1).
        return {"min": math.floor(value) + 1} if greater else {"max": math.ceil(value) - 1}
    if reading.kind == "pct":
        # A ratio lies in [0, 1]: "> v" is "not in [0, v]", "< v" is "not in [v, 1]".
        return {"not_between": [0, plain(value)] if greater else [plain(value), 1], "tolerance": 0}
    return {"strict": ">" if greater else "<", "value": plain(value)}  # the sql rule wraps its query


def _number(found: Found, rule: dict, path: Path, op: str, reading: Reading) -> Decimal | None:
    number = exact(rule.get(op))
    if number is None:
        found.refuse(path + (op,), f"'{op}' must be a number, got {rule.get(op)!r}")
        return None
    return _scaled(number, reading)


def _scaled(number: Decimal, reading: Reading) -> Decimal:
    return number / HUNDRED if reading.kind == "pct" else number


def _between(found: Found, path: Path, key: str, low: Decimal, high: Decimal, reading: Reading) -> dict | None:
    if low > high:
        found.refuse(path, f"low {plain(low)} is greater than high {plain(high)}")
        return None
    extra: dict[str, Any] = {} if reading.kind == "count" and key == "between" else {"tolerance": 0}
    return {key: [plain(low), plain(high)], **extra}


# --------------------------------------------------------------------------------------- one rule


def compile_rule(found: Found, rule: Any, path: Path, scope: Scope) -> tuple[dict[str, Any], str | None] | None:
    """``(check, column or None)`` for one ODCS quality rule; None when refused or documentation only."""
    if not isinstance(rule, dict):
        found.refuse(path, f"a quality rule must be a mapping, got {type(rule).__name__}")
        return None
    found.keys(rule, RULE_KEYS, path, "a quality rule")
    kind = rule.get("type", "library")
    if kind == "text":
        return None  # human-readable: kept as documentation by the caller
    if kind not in ("library", "sql", "custom"):
        found.refuse(path + ("type",), f"unknown quality type {kind!r}; known: text, library, sql, custom")
        return None
    start = len(found.issues)
    if kind == "custom":
        return _custom(found, rule, path, scope)
    built = _sql(found, rule, path, scope) if kind == "sql" else _library(found, rule, path, scope)
    if built is None:
        return None
    check, column, notes = built
    level = severity(found, rule, path)
    if len(found.issues) > start:
        return None
    if level:
        check["severity"] = level
    tags = [rule["dimension"]] if isinstance(rule.get("dimension"), str) and rule["dimension"].strip() else []
    tags += [t for t in rule.get("tags") or [] if isinstance(t, str) and t.strip() and t not in tags]
    if tags:
        check["tags"] = tags
    description = rule.get("description") if isinstance(rule.get("description"), str) else None
    if description and description.strip():
        check["description"] = description.strip()
    scope.notes.extend(f"{format_path(path)}: {note}" for note in dict.fromkeys(notes))
    if isinstance(rule.get("name"), str) and rule["name"].strip():
        check["name"] = rule["name"].strip()
    return check, column


def _describe(rule: dict, what: str) -> str:
    ops = [f"{op} {rule[op]}" for op in OPERATORS if op in rule]
    return " ".join([what, *ops]).replace("'", "")


def _library(found: Found, rule: dict, path: Path, scope: Scope) -> tuple[dict, str | None, list[str]] | None:
    raw = rule.get("metric", rule.get("rule"))
    metric = RULE_ALIASES.get(raw) if isinstance(raw, str) else None
    key = "metric" if "metric" in rule else "rule"
    if metric is None:
        found.refuse(path + (key,), f"unknown library metric {raw!r}; known: {', '.join(METRICS)}")
        return None
    if raw == "nullCheck" and not any(op in rule for op in OPERATORS):
        rule = {**rule, "mustBe": 0}  # the v3.0 check's own meaning: the column has no NULL
        scope.notes.append(f"{format_path(path)}: {NULL_CHECK_NOTE}")
    unit = rule.get("unit", "rows")
    if unit not in ("rows", "percent"):
        found.refuse(path + ("unit",), f"unit must be rows or percent, got {unit!r}")
        return None
    if metric == "rowCount" and unit == "percent":
        found.refuse(path + ("unit",), "a row count has no percentage")
        return None
    reading = Reading("pct" if unit == "percent" else "count")
    if unit == "percent":
        reading.notes.append(PERCENT_NOTE)
    ret = {"return": "pct" if unit == "percent" else "count"}
    arguments = rule.get("arguments") or {}
    if not isinstance(arguments, dict):
        found.refuse(path + ("arguments",), f"'arguments' must be a mapping, got {arguments!r}")
        return None
    apath = path + ("arguments",)
    allowed = {
        "rowCount": (),
        "nullValues": (),
        "missingValues": ("missingValues",),
        "invalidValues": ("validValues", "pattern"),
        "duplicateValues": ("properties",),
    }[metric]
    found.keys(arguments, allowed, apath, f"the arguments of {metric}")
    column = scope.column
    if metric not in ("rowCount", "duplicateValues") and column is None:
        found.refuse(path + (key,), f"{metric} counts values of a property: declare it in that property's quality")
        return None
    valid = validator(found, rule, path, reading)
    if valid is None:
        return None
    notes = reading.notes
    name = _describe(rule, metric)
    if metric == "rowCount":
        return {"name": name, "type": "num_rows", **valid}, None, notes
    assert column is not None or metric == "duplicateValues"
    if metric == "nullValues":
        return {"name": name, "type": "missing", **ret, **valid}, column, notes
    if metric == "duplicateValues":
        notes.append(DUPLICATES_NOTE)
        keys = arguments.get("properties")
        if keys is None:
            if column is None:
                found.refuse(apath, "duplicateValues at object level needs arguments.properties")
                return None
            return {"name": name, "type": "duplicates", **ret, **valid}, column, notes
        if column is not None or not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            found.refuse(apath + ("properties",), "arguments.properties is a non-empty list of the object's properties")
            return None
        unknown = [k for k in keys if k not in scope.columns]
        if unknown:
            found.refuse(apath + ("properties",), f"no such propert{'y' if len(unknown) == 1 else 'ies'}: {unknown}")
            return None
        columns = [scope.columns[k] for k in keys]
        return {"name": name, "type": "duplicates", "columns": columns, **ret, **valid}, None, notes
    col = quote_identifier_if_needed(column)  # type: ignore[arg-type]
    if metric == "missingValues":
        listed = arguments.get("missingValues", [None])
        if not isinstance(listed, list) or any(isinstance(v, (list, dict)) for v in listed):
            found.refuse(apath + ("missingValues",), f"arguments.missingValues is a list of values, got {listed!r}")
            return None
        values = [v for v in listed if v is not None]
        if not values:
            return {"name": name, "type": "missing", **ret, **valid}, column, notes
        listing = ", ".join(spark_literal(v) for v in values)
        counts_null = len(values) != len(listed)
        condition = f"{col} IS NOT NULL AND {col} NOT IN ({listing})" if counts_null else f"{col} NOT IN ({listing})"
        check = {"name": name, "type": "row_condition", "condition": condition, "null_passes": not counts_null}
        return {**check, **ret, **valid}, None, notes
    # invalidValues
    valid_values, pattern = arguments.get("validValues"), arguments.get("pattern")
    notes.append(INVALID_NOTE)
    if (valid_values is None) == (pattern is None):
        found.refuse(apath, "invalidValues needs one of arguments.validValues or arguments.pattern")
        return None
    if pattern is not None:
        if not isinstance(pattern, str) or not pattern:
            found.refuse(apath + ("pattern",), f"arguments.pattern must be a regular expression, got {pattern!r}")
            return None
        condition = f"{col} RLIKE {spark_literal(pattern)}"
    else:
        if not isinstance(valid_values, list) or any(isinstance(v, (list, dict)) for v in valid_values):
            found.refuse(apath + ("validValues",), f"arguments.validValues is a list of values, got {valid_values!r}")
            return None
        listed = [v for v in valid_values if v is not None]
        if not listed:
            found.refuse(apath + ("validValues",), "arguments.validValues lists no non-null value")
            return None
        condition = f"{col} IN ({', '.join(spark_literal(v) for v in listed)})"
    check = {"name": name, "type": "row_condition", "condition": condition, "null_passes": True}
    return {**check, **ret, **valid}, None, notes


_OBJECT_PLACEHOLDER = re.compile(r"\{object\}")
_PROPERTY_PLACEHOLDER = re.compile(r"\{property\}")


def _sql(found: Found, rule: dict, path: Path, scope: Scope) -> tuple[dict, str | None, list[str]] | None:
    query = rule.get("query")
    if not isinstance(query, str) or not query.strip():
        found.refuse(path + ("query",), f"a sql rule needs 'query', got {query!r}")
        return None
    text = _OBJECT_PLACEHOLDER.sub("{dataset}", query.strip().rstrip(";"))
    notes: list[str] = []
    if _PROPERTY_PLACEHOLDER.search(text):
        if scope.column is None:
            found.refuse(path + ("query",), "{property} is only defined in a property's quality")
            return None
        text = _PROPERTY_PLACEHOLDER.sub(quote_identifier_if_needed(scope.column), text)
    for name in scope.names:
        named = re.compile(rf"(\b(?:FROM|JOIN)\s+)[`\"]?{re.escape(name)}[`\"]?(?![\w.])", re.IGNORECASE)
        if named.search(text):
            text = named.sub(lambda m: m.group(1) + "{dataset}", text)
            notes.append(f"the query's table {name} read as the checked dataset")
    reading = Reading("value")
    valid = validator(found, rule, path, reading)
    if valid is None:
        return None
    if "strict" in valid:
        # A strict bound on a real number has no inclusive validator: compare in SQL, exactly.
        text = f"SELECT CAST(({text}) {valid['strict']} {valid['value']} AS INT)"
        valid = {"equals": 1, "tolerance": 0}
    name = _describe(rule, "sql")
    return {"name": name, "type": "sql", "query": text, "return": "value", **valid}, None, notes + reading.notes


def _custom(found: Found, rule: dict, path: Path, scope: Scope) -> tuple[dict[str, Any], str | None] | None:
    engine = rule.get("engine")
    if engine != ENGINE:
        found.refuse(
            path + ("engine",),
            f"a custom rule for engine {engine!r} cannot run here (only engine: {ENGINE} carries our checks)",
        )
        return None
    implementation = rule.get("implementation")
    where = path + ("implementation",)
    if isinstance(implementation, str):
        try:
            implementation = load_yaml(implementation, found.smap.file)[0]
        except (YamlSyntaxError, yaml.YAMLError) as exc:
            found.refuse(where, f"the implementation is not YAML: {exc}")
            return None
    if not isinstance(implementation, dict) or "type" not in implementation:
        found.refuse(where, "the implementation is one check of ours (a mapping with 'type')")
        return None
    check = dict(implementation)
    check.setdefault("name", rule.get("name") or f"custom {check['type']}")
    # A column-level type stays on its property; a table-level one (row_condition, sql…) on the table.
    column_level = isinstance(check["type"], str) and registry.check_type("column", check["type"]) is not None
    return check, scope.column if column_level else None
