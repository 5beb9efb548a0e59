"""Export a data contract as DataHub assertion YAML, where the mapping is exact (the inverse of the import).

Each exportable check becomes one DataHub assertion whose ``description`` is the check's name, so
``import → export → import`` gives the same contract. A check with no exact DataHub equivalent
(``sum``, ``variance``, a ``percentile`` other than the median, a tolerance wider than the default,
a disabled check…) is refused with its location in the contract; ``skip_unsupported`` exports the
rest and returns the refusals instead. Severity, action and tags have no DataHub field: they are
routing, not assertion, and are not exported. Plain Python.

Example::

    >>> from airflow_dq_contracts.contract import parse_contract
    >>> c = parse_contract("name: t\\ndataset: db.t\\nchecks: [{name: rows, type: num_rows, min: 1}]")
    >>> print(export_datahub(c), end="")
    version: 1
    assertions:
    - entity: urn:li:dataset:(urn:li:dataPlatform:delta,db.t,PROD)
      type: volume
      description: rows
      metric: row_count
      condition:
        type: greater_than_or_equal_to
        value: 1
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import yaml

from airflow_dq_contracts.contract.checks import FORMAT_PATTERNS
from airflow_dq_contracts.contract.errors import ContractValidationError, ValidationIssue
from airflow_dq_contracts.contract.model import Check, Contract
from airflow_dq_contracts.contract.sqltext import unquote_identifier
from airflow_dq_contracts.contract.validators import DEFAULT_TOLERANCE, Validator

from .common import plain

HUNDRED = Decimal(100)
# Contract column kinds → the DataHub schema type the import reads back as the same kind.
EXPORT_TYPES = {
    **{kind: kind for kind in ("string", "boolean", "date", "timestamp", "decimal", "int", "long")},
    **{kind: kind for kind in ("float", "double", "struct", "map", "binary")},
    "list": "array",
}
# The row conditions the import writes for DataHub metrics (``{col}`` is the column): their metric.
ROW_METRICS = {
    "{col} IS NOT NULL AND TRIM({col}) <> ''": "empty",
    "{col} >= 0": "negative",
    "{col} <> 0": "zero",
}
_COLUMN_IN = re.compile(r"^(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\b")
_ANCHORED = re.compile(r"^\^\(\?:(.*)\)\$$", re.DOTALL)


class Refused(Exception):
    """A check has no exact DataHub equivalent (the message says why)."""


def _d(value: float | None) -> Decimal:
    assert value is not None
    return Decimal(repr(float(value)))


def condition(validator: Validator, reading: str, scale: Decimal = Decimal(1)) -> dict[str, Any]:
    """The DataHub condition saying exactly what ``validator`` says (values multiplied by ``scale``).

    ``reading`` is ``count`` (integer metric), ``pct`` (a 0–1 ratio) or ``float``; a one-sided
    ``not_between`` is a strict bound only on a ratio, whose range is [0, 1].

    >>> condition(Validator("between", low=1, high=5), "count")
    {'type': 'between', 'min': 1, 'max': 5}
    >>> condition(Validator("not_between", low=0, high=0.05, tolerance=0), "pct", Decimal(100))
    {'type': 'greater_than', 'value': 5}
    """
    # The default tolerance (1e-9) only absorbs floating-point noise; a wider one changes the meaning.
    if validator.tolerance not in (0, DEFAULT_TOLERANCE):
        raise Refused(f"tolerance {validator.tolerance!r}: DataHub conditions have no tolerance")
    kind = validator.kind
    if kind in ("noop", "all_conform"):
        raise Refused(f"validator {validator.describe()!r} has no DataHub condition")
    if kind == "between":
        return {"type": "between", "min": plain(_d(validator.low) * scale), "max": plain(_d(validator.high) * scale)}
    if kind == "min":
        return {"type": "greater_than_or_equal_to", "value": plain(_d(validator.low) * scale)}
    if kind == "max":
        return {"type": "less_than_or_equal_to", "value": plain(_d(validator.high) * scale)}
    if kind == "equals":
        return {"type": "equal_to", "value": plain(_d(validator.low) * scale)}
    low, high = _d(validator.low), _d(validator.high)
    if low == high:
        return {"type": "not_equal_to", "value": plain(low * scale)}
    if reading == "pct" and low == 0:
        return {"type": "greater_than", "value": plain(high * scale)}
    if reading == "pct" and high == 1:
        return {"type": "less_than", "value": plain(low * scale)}
    raise Refused(f"not_between {validator.describe()} (two disjoint ranges) has no DataHub condition")


def _inverted(cond: dict[str, Any]) -> dict[str, Any]:
    """A duplicate-ratio condition as the unique-percentage condition (unique% = 100 − 100·dup)."""
    flip = {
        "greater_than": "less_than",
        "less_than": "greater_than",
        "greater_than_or_equal_to": "less_than_or_equal_to",
        "less_than_or_equal_to": "greater_than_or_equal_to",
    }
    if cond["type"] == "between":
        return {
            "type": "between",
            "min": plain(HUNDRED - Decimal(str(cond["max"]))),
            "max": plain(HUNDRED - Decimal(str(cond["min"]))),
        }
    return {"type": flip.get(cond["type"], cond["type"]), "value": plain(HUNDRED - Decimal(str(cond["value"])))}


def _regex(check: Check) -> str:
    if check.params.get("flags"):
        raise Refused("pattern flags have no DataHub equivalent")
    pattern = check.params.get("pattern") or FORMAT_PATTERNS[check.params["format"]]
    match = _ANCHORED.match(pattern)
    # DataHub matches the whole value; a contract pattern searches: .* on both sides says the same.
    return match.group(1) if match else f"(?s).*(?:{pattern}).*"


class DataHubExporter:
    """Builds the DataHub assertions of one contract."""

    def __init__(self, contract: Contract, platform: str = "delta", env: str = "PROD"):
        self.contract = contract
        urn = (contract.metadata or {}).get("datahub_urn")
        if isinstance(urn, str) and urn:
            self.entity = urn
        else:
            name = contract.dataset.table or contract.dataset.path or contract.name
            name = re.sub(r"^[a-z0-9]+://", "", name)
            self.entity = f"urn:li:dataset:(urn:li:dataPlatform:{platform},{name},{env})"

    def schema(self) -> dict[str, Any] | None:
        """The schema assertion of the declared columns (enforcement.schema), None when it is off."""
        contract = self.contract
        mode = contract.enforcement.schema_mode
        declared = (contract.metadata or {}).get("datahub_types") or {}
        if mode == "off" or not any(c.type is not None or c.name in declared for c in contract.columns):
            # No type declared: the schema checks only say "present", which every assertion on the
            # column already needs; there is no schema to assert (docs/interop.md).
            return None
        columns = []
        for column in contract.columns:
            kind = column.type.kind if column.type is not None else None
            if column.name in declared:
                columns.append({"name": column.name, "type": declared[column.name]})
            elif kind is None:
                raise Refused(f"column {column.name!r} has no type: a DataHub schema assertion needs one")
            elif kind == "decimal" and column.type is not None and column.type.precision is not None:
                raise Refused(f"column {column.name!r}: DataHub's decimal type has no precision/scale")
            elif kind in EXPORT_TYPES:
                columns.append({"name": column.name, "type": EXPORT_TYPES[kind]})
            else:
                raise Refused(f"column {column.name!r} of type {kind} has no DataHub schema type")
        condition_type = "exact_match" if mode == "exact" else "contains"
        return {
            "entity": self.entity,
            "type": "schema",
            "condition": {"type": condition_type, "columns": columns},
        }

    def assertions(self, check: Check) -> dict[str, Any]:
        if not check.enabled:
            raise Refused("a disabled check has no DataHub equivalent (DataHub assertions are always active)")
        if check.baseline is not None:  # bounds learned from our results table (issue #12)
            raise Refused("a 'baseline' (bounds learned from history) has no exact DataHub assertion")
        base: dict[str, Any] = {"entity": self.entity}
        method = getattr(self, f"_{check.type}", None)
        if method is None:
            raise Refused(f"check type {check.type!r} has no exact DataHub assertion")
        assertion = method(check, base)
        assertion.setdefault("description", check.name)
        if check.filter:
            if assertion["type"] not in ("volume", "field"):
                raise Refused(f"a filter on a {assertion['type']} assertion has no DataHub field")
            assertion["filters"] = {"type": "sql", "sql": check.filter}
        # Keep DataHub's key order readable: entity, type, description, then the rest.
        head = {k: assertion.pop(k) for k in ("entity", "type", "description")}
        return {**head, **assertion}

    def _metric(self, check: Check, base: dict, metric: str, reading: str, scale: Decimal = Decimal(1)) -> dict:
        return {
            **base,
            "type": "field",
            "field": check.column,
            "metric": metric,
            "condition": condition(check.validator, reading, scale),
        }

    # -- table level ---------------------------------------------------------------------------
    def _num_rows(self, check: Check, base: dict) -> dict:
        return {**base, "type": "volume", "metric": "row_count", "condition": condition(check.validator, "count")}

    def _freshness(self, check: Check, base: dict) -> dict:
        if check.params.get("aggregation", "max") != "max":
            raise Refused("freshness of the oldest timestamp (aggregation: min) has no DataHub equivalent")
        hours = _d(check.params["max_age_hours"])
        if check.validator.tolerance not in (0, DEFAULT_TOLERANCE):
            raise Refused("a freshness tolerance has no DataHub equivalent")
        return {
            **base,
            "type": "freshness",
            "lookback_interval": f"{plain(hours)} hours",
            "last_modified_field": check.params["timestamp_column"],
        }

    def _sql(self, check: Check, base: dict) -> dict:
        if check.params.get("return", "value") != "value":
            raise Refused("sql with 'return: rows' has no DataHub equivalent (DataHub compares one value)")
        table = self.contract.dataset.table or self.contract.dataset.path
        if not table and "{dataset}" in check.params["query"]:
            raise Refused("the query names {dataset} but the contract has no dataset to put there")
        statement = check.params["query"].replace("{dataset}", table or "")
        return {**base, "type": "sql", "statement": statement, "condition": condition(check.validator, "float")}

    def _row_condition(self, check: Check, base: dict) -> dict:
        """The row conditions the import writes for empty/negative/zero metrics, back to those metrics."""
        condition_text = check.params["condition"]
        found = _COLUMN_IN.match(condition_text)
        column = found.group(1) if found else ""
        template = condition_text.replace(column, "{col}") if column else condition_text
        metric = ROW_METRICS.get(template)
        null_passes = check.params.get("null_passes", False)
        if metric is None or null_passes != (metric != "empty"):
            raise Refused("a row condition has no DataHub assertion (only DataHub's own metrics map back)")
        name = unquote_identifier(column)
        pct = check.return_type == "pct"
        return {
            **base,
            "type": "field",
            "field": name,
            "metric": f"{metric}_{'percentage' if pct else 'count'}",
            "condition": condition(check.validator, "pct" if pct else "count", HUNDRED if pct else Decimal(1)),
        }

    # -- column level --------------------------------------------------------------------------
    def _missing(self, check: Check, base: dict) -> dict:
        if check.return_type == "pct":
            return self._metric(check, base, "null_percentage", "pct", HUNDRED)
        return self._metric(check, base, "null_count", "count")

    def _cardinality(self, check: Check, base: dict) -> dict:
        return self._metric(check, base, "unique_count", "count")

    def _duplicates(self, check: Check, base: dict) -> dict:
        if check.return_type != "pct":
            raise Refused(
                "a duplicate *count* has no DataHub metric (unique_count counts distinct values); "
                "use 'return: pct' (→ unique_percentage)"
            )
        assertion = self._metric(check, base, "unique_percentage", "pct", HUNDRED)
        assertion["condition"] = _inverted(assertion["condition"])
        return assertion

    def _stat(self, check: Check, base: dict, metric: str) -> dict:
        return self._metric(check, base, metric, "float")

    def _extreme(self, check: Check, base: dict, metric: str) -> dict:
        # "min ≥ v" is "every non-null value ≥ v" (and "max ≤ v" likewise): the field-values form,
        # as the import reads it.
        if check.validator.kind == metric:
            return {
                **base,
                "type": "field",
                "field": check.column,
                "exclude_nulls": True,
                "condition": condition(check.validator, "float"),
            }
        return self._stat(check, base, metric)

    def _min(self, check: Check, base: dict) -> dict:
        return self._extreme(check, base, "min")

    def _max(self, check: Check, base: dict) -> dict:
        return self._extreme(check, base, "max")

    def _mean(self, check: Check, base: dict) -> dict:
        return self._stat(check, base, "mean")

    def _stddev(self, check: Check, base: dict) -> dict:
        return self._stat(check, base, "stddev")

    def _percentile(self, check: Check, base: dict) -> dict:
        if check.params.get("percentile") != 0.5 or check.params.get("approximate"):
            raise Refused("only the exact median (percentile 0.5) has a DataHub metric")
        return self._stat(check, base, "median")

    def _values(self, check: Check, base: dict, cond: dict[str, Any]) -> dict:
        """A field-values assertion: all-conform (NULLs excluded) or a conforming ratio of 1 − p (NULLs fail)."""
        validator = check.validator
        assertion = {**base, "type": "field", "field": check.column, "condition": cond}
        if validator.kind == "all_conform":
            return {**assertion, "exclude_nulls": True}
        if check.return_type == "pct" and validator.kind == "min" and validator.tolerance == 0:
            failing = (Decimal(1) - _d(validator.low)) * HUNDRED
            result = {**assertion, "exclude_nulls": False}
            if failing:
                result["failure_threshold"] = {"type": "percentage", "value": plain(failing)}
            return result
        raise Refused(
            f"{check.type} with {validator.describe()} has no DataHub equivalent (DataHub thresholds "
            "count failing rows; the contract counts conforming ones)"
        )

    def _whitelist(self, check: Check, base: dict) -> dict:
        if not check.params.get("case_sensitive", True):
            raise Refused("case-insensitive value sets have no DataHub equivalent")
        return self._values(check, base, {"type": "in", "value": list(check.params["values"])})

    def _blacklist(self, check: Check, base: dict) -> dict:
        if not check.params.get("case_sensitive", True):
            raise Refused("case-insensitive value sets have no DataHub equivalent")
        return self._values(check, base, {"type": "not_in", "value": list(check.params["values"])})

    def _pattern(self, check: Check, base: dict) -> dict:
        return self._values(check, base, {"type": "matches_regex", "value": _regex(check)})

    def _length(self, check: Check, base: dict) -> dict:
        params = check.params
        if params.get("return"):
            low, high = params.get("length_min"), params.get("length_max")
            if low is None and high == 0:  # conforming rows of length ≤ 0: the empty values
                metric = "empty_percentage" if check.return_type == "pct" else "empty_count"
                return self._metric(
                    check,
                    base,
                    metric,
                    check.return_type or "count",
                    HUNDRED if check.return_type == "pct" else Decimal(1),
                )
            return self._values(check, base, _length_condition(low, high))
        validator = check.validator
        if check.type == "min_length" and validator.kind == "min":
            return {
                **base,
                "type": "field",
                "field": check.column,
                "exclude_nulls": True,
                "condition": _length_condition(int(validator.low), None),  # type: ignore[arg-type]
            }
        if check.type == "max_length" and validator.kind == "max":
            return {
                **base,
                "type": "field",
                "field": check.column,
                "exclude_nulls": True,
                "condition": _length_condition(None, int(validator.high)),  # type: ignore[arg-type]
            }
        raise Refused(f"{check.type} with {validator.describe()} has no DataHub equivalent")

    _min_length = _length
    _max_length = _length


def _length_condition(low: int | None, high: int | None) -> dict[str, Any]:
    if low == 1 and high is None:
        return {"type": "not_empty"}
    if low is not None and high is not None:
        return {"type": "length_between", "min": low, "max": high}
    if low is not None:
        return {"type": "length_greater_than", "value": low - 1}
    return {"type": "length_less_than", "value": (high or 0) + 1}


def export_datahub(
    contract: Contract, *, platform: str = "delta", env: str = "PROD", skip_unsupported: bool = False
) -> str:
    """DataHub assertion YAML for ``contract``.

    Raises :class:`ContractValidationError` listing every check that has no exact equivalent
    (file, line, path in the contract), unless ``skip_unsupported`` — then those are left out and
    :func:`export_datahub_report` tells which.
    """
    text, refused = export_datahub_report(contract, platform=platform, env=env)
    if refused and not skip_unsupported:
        raise ContractValidationError(refused)
    return text


def export_datahub_report(
    contract: Contract, *, platform: str = "delta", env: str = "PROD"
) -> tuple[str, list[ValidationIssue]]:
    """(DataHub YAML of the exportable checks, located refusals of the others)."""
    exporter = DataHubExporter(contract, platform, env)
    assertions: list[dict[str, Any]] = []
    refused: list[ValidationIssue] = []
    try:
        schema = exporter.schema()
        if schema is not None:
            assertions.append(schema)
    except Refused as exc:
        refused.append(ValidationIssue(contract.source, None, "columns", f"schema not exported: {exc}"))
    checks = list(contract.all_checks())
    pairs = _between_pairs(checks)
    for check in checks:
        if id(check) in pairs:
            high_check = pairs[id(check)]
            if high_check is None:
                continue  # the (max) half of a pair: exported with its (min) half
            assertion = exporter.assertions(check)
            assertion["description"] = check.name[: -len(" (min)")]
            low, high = assertion["condition"]["value"], exporter.assertions(high_check)["condition"]["value"]
            assertion["condition"] = {"type": "between", "min": low, "max": high}
            assertions.append(assertion)
            continue
        try:
            assertions.append(exporter.assertions(check))
        except Refused as exc:
            refused.append(ValidationIssue(contract.source, check.line, check.path, f"not exported: {exc}"))
    text = yaml.safe_dump({"version": 1, "assertions": assertions}, sort_keys=False, allow_unicode=True, width=100)
    return text, refused


def _between_pairs(checks: list[Check]) -> dict[int, Check | None]:
    """``X (min)`` / ``X (max)`` checks on one column (what the import makes of a field ``between``).

    Maps the min half to its max half and the max half to None, so the pair exports as ONE ``between``
    assertion, as it was written; only a pair that says exactly "every non-null value in [a, b]".
    """

    def plain_bound(check: Check, kind: str) -> bool:
        return (
            check.type == kind
            and check.validator.kind == kind
            and check.validator.tolerance == 0
            and check.enabled
            and check.baseline is None
        )

    pairs: dict[int, Check | None] = {}
    by_name = {(c.column, c.name, c.filter): c for c in checks}
    for check in checks:
        if check.column is None or not check.name.endswith(" (min)") or not plain_bound(check, "min"):
            continue
        other = by_name.get((check.column, check.name[: -len(" (min)")] + " (max)", check.filter))
        if other is not None and plain_bound(other, "max"):
            pairs[id(check)] = other
            pairs[id(other)] = None
    return pairs
