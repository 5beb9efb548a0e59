"""Import Dataplex data-quality rules (``DataQualityRule`` JSON/YAML, ``rules: [...]``) as a data contract.

Reads the rule list of a ``gcloud dataplex datascans`` spec file (``rules:`` at the top, with
optional ``rowFilter`` / ``samplingPercent``) or of a DataScan resource (``dataQualitySpec.rules``).
Every rule becomes checks with the same meaning, or is refused with a located message (file, line,
path in the source) — never approximated. Mapping tables: ``docs/interop.md``. Plain Python.

Dataplex semantics that drive the mapping:

* a row-level rule passes when ``passing rows / all rows ≥ threshold`` (0 or absent = 1.0);
* ``ignoreNull: false`` (the default) makes NULL rows *fail* Range, Regex, Set and Uniqueness;
* ``suspended: true`` keeps the rule but does not run it (→ ``enabled: false``);
* ``dimension`` groups results (→ a tag).

Example::

    >>> text = '{"rules": [{"column": "id", "nonNullExpectation": {}, "dimension": "COMPLETENESS"}]}'
    >>> print(import_dataplex_texts([(text, "scan.json")], table="shop.orders").split("checks:")[1], end="")
    <BLANKLINE>
      # Dataplex scan.json:1 rules[0] (nonNullExpectation)
      - name: id non-null
        type: missing
        max: 0
        tags: [COMPLETENESS]
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from typing import Any

from airflow_dq_contracts.contract.errors import ContractValidationError, ValidationIssue
from airflow_dq_contracts.contract.sqltext import quote_identifier_if_needed, spark_literal

from .common import (
    Draft,
    ImportResult,
    Source,
    check_name,
    plain,
    read_sources,
    require_type,
    validated,
)

COLUMN_RULES = (
    "rangeExpectation",
    "nonNullExpectation",
    "setExpectation",
    "regexExpectation",
    "uniquenessExpectation",
    "statisticRangeExpectation",
)
RULE_TYPES = (
    *COLUMN_RULES,
    "rowConditionExpectation",
    "tableConditionExpectation",
    "sqlAssertion",
    "templateReference",
)
# ignoreNull is only defined for these (Dataplex API reference).
IGNORE_NULL_RULES = ("rangeExpectation", "regexExpectation", "setExpectation", "uniquenessExpectation")
AGGREGATE_RULES = ("statisticRangeExpectation", "tableConditionExpectation", "sqlAssertion", "templateReference")
RULE_KEYS = (
    "column",
    "ignoreNull",
    "dimension",
    "threshold",
    "name",
    "description",
    "suspended",
    "attributes",
    "ruleSource",
    "debugQueries",
) + RULE_TYPES
SPEC_KEYS = (
    "rules",
    "rowFilter",
    "samplingPercent",
    "postScanActions",
    "catalogPublishingEnabled",
    "incrementalField",
    "filter",
)
STATISTICS = {"MEAN": "mean", "MIN": "min", "MAX": "max"}
SQL_STATISTICS = {"MEAN": "AVG", "MIN": "MIN", "MAX": "MAX"}
_BIGQUERY = re.compile(r"^//bigquery\.googleapis\.com/projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)$")
ONE = Decimal(1)


def _camel(key: Any) -> Any:
    """``non_null_expectation`` → ``nonNullExpectation`` (gcloud reads both spellings)."""
    if not isinstance(key, str) or "_" not in key.strip("_"):
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def normalise(value: Any, path: tuple, lines: dict, written: tuple | None = None) -> Any:
    """Keys in camelCase (as ``gcloud`` converts them) and explicit nulls dropped (unset in Google's API).

    ``lines`` (the source map) learns each new key path from the ``written`` one, so refusals still
    point at the line in the file. ``attributes`` are the user's own labels: their keys are kept.

    >>> normalise({"data_quality_spec": {"rules": [{"ignore_null": None, "column": "", "x": 1}]}}, (), {})
    {'dataQualitySpec': {'rules': [{'x': 1}]}}
    """
    written = path if written is None else written
    if written != path and written in lines:
        lines.setdefault(path, lines[written])
    if isinstance(value, list):
        return [normalise(item, path + (index,), lines, written + (index,)) for index, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out: dict[Any, Any] = {}
    for key, item in value.items():
        if item is None or (key == "column" and item == ""):
            continue  # "not set" in Google's API format
        new = _camel(key)
        out[new] = item if key == "attributes" else normalise(item, path + (new,), lines, written + (key,))
    return out


class DataplexImporter:
    """Turns Dataplex rule documents into one contract :class:`Draft` (see module docs)."""

    def __init__(self, name: str | None, dataset: dict[str, Any] | None):
        self.name = name
        self.dataset = dataset
        self.draft: Draft | None = None

    def _ensure_draft(self, fallback: str) -> Draft:
        if self.draft is None:
            name = self.name or ((self.dataset or {}).get("table") or fallback).replace("/", ".").split(".")[-1]
            self.draft = Draft(name or "imported")
            if self.dataset:
                self.draft.top["dataset"] = dict(self.dataset)
        return self.draft

    # -- documents ------------------------------------------------------------------------------
    def add_source(self, src: Source) -> None:
        if not src.issues:
            src.data = normalise(src.data, (), src.smap.lines)
        doc = src.mapping(src.data, (), "a Dataplex data-quality spec") if not src.issues else None
        if doc is None:
            return
        base: tuple = ()
        if "dataQualitySpec" in doc:  # a whole DataScan resource
            self._scan_dataset(src, doc)
            base = ("dataQualitySpec",)
            doc = src.mapping(doc["dataQualitySpec"], base, "'dataQualitySpec'")
            if doc is None:
                return
        src.keys(doc, SPEC_KEYS, base, "a Dataplex data-quality spec")
        sampling = doc.get("samplingPercent")
        if sampling not in (None, 0, 100, 0.0, 100.0):
            src.refuse(
                base + ("samplingPercent",),
                f"samplingPercent {sampling!r}: a contract checks every row "
                "in scope; a sample would change what the rules mean",
            )
        row_filter = doc.get("rowFilter") or doc.get("filter")
        if row_filter is not None and not (isinstance(row_filter, str) and row_filter.strip()):
            src.refuse(base + ("rowFilter",), f"'rowFilter' must be a SQL predicate, got {row_filter!r}")
            row_filter = None
        self._ensure_draft(os.path.splitext(os.path.basename(src.file))[0])
        rules = src.items(doc.get("rules"), base + ("rules",), "'rules'")
        if not rules and isinstance(doc.get("rules"), list):
            src.refuse(base + ("rules",), "no rules to import")
        for index, raw in enumerate(rules):
            self.rule(src, raw, base + ("rules", index), row_filter.strip() if row_filter else None)

    def _scan_dataset(self, src: Source, doc: dict) -> None:
        data = doc.get("data")
        if self.dataset or not isinstance(data, dict):
            return
        resource = data.get("resource")
        match = _BIGQUERY.match(resource) if isinstance(resource, str) else None
        if match:
            self.dataset = {"table": ".".join(match.groups())}

    # -- one rule -------------------------------------------------------------------------------
    def rule(self, src: Source, raw: Any, path: tuple, row_filter: str | None) -> None:
        data = src.mapping(raw, path, "a rule")
        if data is None:
            return
        src.keys(data, RULE_KEYS, path, "a rule")
        kinds = [k for k in RULE_TYPES if k in data]
        if len(kinds) != 1:
            src.refuse(
                path,
                f"a rule needs exactly one rule type ({', '.join(RULE_TYPES)}), found {', '.join(kinds) or 'none'}",
            )
            return
        kind = kinds[0]
        body = data[kind] if data[kind] is not None else {}
        body = src.mapping(body, path + (kind,), f"'{kind}'")
        if body is None:
            return
        rule = Rule(self, src, data, path, kind, body, row_filter)
        rule.read_common()
        if rule.ok:
            getattr(rule, kind)()


class Rule:
    """One Dataplex rule being mapped; methods are named after the rule type they map."""

    def __init__(
        self,
        importer: DataplexImporter,
        src: Source,
        data: dict,
        path: tuple,
        kind: str,
        body: dict,
        row_filter: str | None,
    ):
        self.importer, self.src, self.data, self.path = importer, src, data, path
        self.kind, self.body, self.row_filter = kind, body, row_filter
        self.ok = True
        self.column: str | None = None
        self.ignore_null = False
        self.threshold = ONE

    def read_common(self) -> None:
        src, data, path = self.src, self.data, self.path
        self.column = src.text(data, "column", path)
        if self.kind in COLUMN_RULES and self.column is None:
            if "column" not in data:
                src.refuse(path, f"{self.kind} needs 'column'")
            self.ok = False
        if "ignoreNull" in data and self.kind not in IGNORE_NULL_RULES:
            src.refuse(path + ("ignoreNull",), f"'ignoreNull' is only valid for {', '.join(IGNORE_NULL_RULES)}")
            self.ok = False
        self.ignore_null = src.flag(data, "ignoreNull", path, False)
        if "threshold" in data:
            threshold = src.number(data["threshold"], path + ("threshold",), "'threshold'")
            if threshold is None or not Decimal(0) <= threshold <= ONE:
                if threshold is not None:
                    src.refuse(path + ("threshold",), f"'threshold' must be in [0.0, 1.0], got {data['threshold']!r}")
                self.ok = False
            elif self.kind in AGGREGATE_RULES and threshold not in (0, 1):
                src.refuse(path + ("threshold",), f"'threshold' is only valid for row-level rules, not {self.kind}")
                self.ok = False
            elif threshold != 0:  # 0 means the default, 1.0
                self.threshold = threshold
        for key in ("name", "description", "dimension"):
            src.text(data, key, path)
        src.flag(data, "suspended", path, False)

    # -- emitting -------------------------------------------------------------------------------
    def emit(self, check: dict[str, Any], column: str | None, suffix: str = "") -> None:
        data = self.data
        name = data.get("name") if isinstance(data.get("name"), str) and data["name"].strip() else None
        check["name"] = check_name((name or check["name"]) + suffix)
        if isinstance(data.get("description"), str):
            check["description"] = data["description"]
        if isinstance(data.get("dimension"), str) and data["dimension"].strip():
            check["tags"] = [data["dimension"].strip()]
        if self.row_filter and check.get("type") not in ("sql",):
            check["filter"] = (
                self.row_filter if "filter" not in check else f"({self.row_filter}) AND ({check['filter']})"
            )
        if data.get("suspended") is True:
            check["enabled"] = False
        draft = self.importer._ensure_draft("imported")
        draft.add(check, column, f"Dataplex {self.src.where(self.path)} ({self.kind})")

    def failing_ratio(self) -> dict[str, Any]:
        """Validator keys for "failing rows ≤ (1 − threshold) of all rows" on a failing-rows metric."""
        if self.threshold == ONE:
            return {"max": 0}
        return {"return": "pct", "max": plain(ONE - self.threshold), "tolerance": 0}

    def passing_ratio(self) -> dict[str, Any]:
        """Validator keys for "passing rows ≥ threshold of all rows" on a conforming-rows metric."""
        return {"return": "pct", "min": plain(self.threshold), "tolerance": 0}

    def row_condition(self, condition: str, null_passes: bool, label: str) -> None:
        if not require_type(self.src, self.path, "row_condition", label):
            return
        check = {
            "name": f"{self.column or 'row'} {self.kind}",
            "type": "row_condition",
            "condition": condition,
            "null_passes": null_passes,
        }
        check.update({"return": "count", "max": 0} if self.threshold == ONE else self.failing_ratio())
        self.emit(check, None)

    def conformance(self, check: dict[str, Any], sql: str) -> None:
        """Set / regex: NULLs fail → conforming ratio ≥ threshold; NULLs pass → all conform, or a row condition."""
        if not self.ignore_null:
            # Passing rows are exactly the conforming non-null rows, over all rows.
            return self.emit({**check, **self.passing_ratio()}, self.column)
        if self.threshold == ONE:
            return self.emit(check, self.column)  # implicit: every non-null value conforms
        return self.row_condition(sql, True, f"{self.kind} with ignoreNull and threshold < 1")

    # -- rule types -----------------------------------------------------------------------------
    def nonNullExpectation(self) -> None:
        self.emit({"name": f"{self.column} non-null", "type": "missing", **self.failing_ratio()}, self.column)

    def setExpectation(self) -> None:
        values = self.src.items(self.body.get("values"), self.path + (self.kind, "values"), "'values'")
        if not values or any(not isinstance(v, (str, int, float)) or isinstance(v, bool) for v in values):
            self.src.refuse(
                self.path + (self.kind, "values"),
                f"'values' must be a non-empty list of strings, got {self.body.get('values')!r}",
            )
            return
        sql = f"{quote_identifier_if_needed(self.column)} IN ({', '.join(spark_literal(v) for v in values)})"  # type: ignore[arg-type]
        self.conformance({"name": f"{self.column} in set", "type": "whitelist", "values": list(values)}, sql)

    def regexExpectation(self) -> None:
        regex = self.src.text(self.body, "regex", self.path + (self.kind,), required=True)
        if regex is None:
            return
        # Dataplex uses REGEXP_CONTAINS: search semantics, as contract patterns.
        sql = f"{quote_identifier_if_needed(self.column)} RLIKE {spark_literal(regex)}"  # type: ignore[arg-type]
        self.conformance({"name": f"{self.column} matches regex", "type": "pattern", "pattern": regex}, sql)

    def uniquenessExpectation(self) -> None:
        if self.threshold != ONE:
            self.src.refuse(
                self.path + ("threshold",),
                "uniqueness with a threshold < 1 is refused: Dataplex counts "
                "every row of a duplicated value as failing, the contract's "
                "duplicates metric counts the extra copies",
            )
            return
        check: dict[str, Any] = {"name": f"{self.column} unique", "type": "duplicates", "max": 0}
        if self.ignore_null:
            # duplicates counts NULLs as duplicates (DESIGN §4); scoped to non-null rows they pass.
            check["filter"] = f"{quote_identifier_if_needed(self.column)} IS NOT NULL"  # type: ignore[arg-type]
        self.emit(check, self.column)

    def bounds(self) -> tuple[Decimal | None, Decimal | None, bool, bool] | None:
        body, where = self.body, self.path + (self.kind,)
        self.src.keys(
            body,
            ("statistic", "minValue", "maxValue", "strictMinEnabled", "strictMaxEnabled")
            if self.kind == "statisticRangeExpectation"
            else ("minValue", "maxValue", "strictMinEnabled", "strictMaxEnabled"),
            where,
            f"'{self.kind}'",
        )
        low = high = None
        if body.get("minValue") is not None:
            low = self.src.number(body["minValue"], where + ("minValue",), "'minValue'", strings=True)
            if low is None:
                return None
        if body.get("maxValue") is not None:
            high = self.src.number(body["maxValue"], where + ("maxValue",), "'maxValue'", strings=True)
            if high is None:
                return None
        if low is None and high is None:
            self.src.refuse(where, "at least one of 'minValue' or 'maxValue' is required")
            return None
        if low is not None and high is not None and low > high:
            self.src.refuse(where, f"minValue {body['minValue']!r} is greater than maxValue {body['maxValue']!r}")
            return None
        strict_min = self.src.flag(body, "strictMinEnabled", where, False) and low is not None
        strict_max = self.src.flag(body, "strictMaxEnabled", where, False) and high is not None
        return low, high, strict_min, strict_max

    def rangeExpectation(self) -> None:
        bounds = self.bounds()
        if bounds is None:
            return
        low, high, strict_min, strict_max = bounds
        col = self.column
        if self.threshold == ONE and not (strict_min or strict_max):
            # Every non-null value in [low, high] ⇔ min ≥ low and max ≤ high (per-row readings tag rows).
            both = low is not None and high is not None
            if low is not None:
                self.emit({"name": f"{col} in range", "type": "min", "min": plain(low)}, col, " (min)" if both else "")
            if high is not None:
                self.emit({"name": f"{col} in range", "type": "max", "max": plain(high)}, col, " (max)" if both else "")
            if not self.ignore_null:
                self.emit({"name": f"{col} in range", "type": "missing", "max": 0}, col, " (no nulls)")
            return
        parts = []
        if low is not None:
            parts.append(f"{quote_identifier_if_needed(col)} {'>' if strict_min else '>='} {plain(low)}")  # type: ignore[arg-type]
        if high is not None:
            parts.append(f"{quote_identifier_if_needed(col)} {'<' if strict_max else '<='} {plain(high)}")  # type: ignore[arg-type]
        self.row_condition(
            " AND ".join(parts), self.ignore_null, "rangeExpectation with strict bounds or threshold < 1"
        )

    def statisticRangeExpectation(self) -> None:
        statistic = self.body.get("statistic")
        if statistic not in STATISTICS:
            self.src.refuse(
                self.path + (self.kind, "statistic"), f"statistic must be one of MEAN, MIN, MAX, got {statistic!r}"
            )
            return
        bounds = self.bounds()
        if bounds is None:
            return
        low, high, strict_min, strict_max = bounds
        if strict_min or strict_max:
            # Validators are inclusive; the SQL comparison of the statistic says a strict bound exactly.
            stat = f"{SQL_STATISTICS[statistic]}({quote_identifier_if_needed(self.column)})"  # type: ignore[arg-type]
            parts = ([f"{stat} {'>' if strict_min else '>='} {plain(low)}"] if low is not None else []) + (
                [f"{stat} {'<' if strict_max else '<='} {plain(high)}"] if high is not None else []
            )
            return self.table_condition(" AND ".join(parts), f"{self.column} {statistic.lower()} in range")
        validator: dict[str, Any]
        if low is not None and high is not None:
            validator = {"between": [plain(low), plain(high)]}
        elif low is not None:
            validator = {"min": plain(low)}
        else:
            validator = {"max": plain(high)}  # type: ignore[arg-type]
        check = {
            "name": f"{self.column} {statistic.lower()} in range",
            "type": STATISTICS[statistic],
            **validator,
            "tolerance": 0,
        }
        self.emit(check, self.column)

    def rowConditionExpectation(self) -> None:
        expression = self.src.text(self.body, "sqlExpression", self.path + (self.kind,), required=True)
        if expression is not None:
            # A NULL result is not "true": the row fails, as in Dataplex.
            self.row_condition(expression.strip(), False, "rowConditionExpectation")

    def tableConditionExpectation(self) -> None:
        expression = self.src.text(self.body, "sqlExpression", self.path + (self.kind,), required=True)
        if expression is None:
            return
        self.table_condition(expression.strip(), "table condition")

    def table_condition(self, expression: str, name: str) -> None:
        """A condition over aggregates; under a rowFilter, a query over exactly the filtered rows."""
        if self.row_filter:
            # A table condition has no filter key (it is one aggregate): the query scopes it exactly.
            query = f"SELECT CAST(({expression}) AS INT) FROM {{dataset}} WHERE {self.row_filter}"
            check = {"name": name, "type": "sql", "query": query, "return": "value", "equals": 1, "tolerance": 0}
            return self.emit(check, None)
        if require_type(self.src, self.path, "table_condition", self.kind):
            self.emit({"name": name, "type": "table_condition", "condition": expression}, None)
        return None

    def sqlAssertion(self) -> None:
        statement = self.src.text(self.body, "sqlStatement", self.path + (self.kind,), required=True)
        if statement is None or not require_type(self.src, self.path, "sql", self.kind):
            return
        # ${data()} is the scanned table — under a rowFilter, exactly its filtered rows.
        data = f"(SELECT * FROM {{dataset}} WHERE {self.row_filter})" if self.row_filter else "{dataset}"
        query = re.sub(r"\$\{data\(\)\}", lambda _: data, statement.strip())
        self.emit({"name": "sql assertion", "type": "sql", "query": query, "return": "rows", "max": 0}, None)

    def templateReference(self) -> None:
        self.src.refuse(
            self.path + ("templateReference",),
            "templateReference rules are resolved by Dataplex from "
            "a catalog template; import the resolved rule instead",
        )


# --------------------------------------------------------------------------------------- public API


def import_dataplex_result(
    sources: list[Source],
    name: str | None = None,
    table: str | None = None,
    path: str | None = None,
    fmt: str | None = None,
    partial: bool = False,
) -> ImportResult:
    """The contract of parsed Dataplex documents; with ``partial``, the rules that map and the refusals.

    Raises ``ContractValidationError`` with every refusal (located in the source) unless ``partial``.
    """
    dataset: dict[str, Any] | None = None
    if table:
        dataset = {"table": table}
    elif path:
        dataset = {"path": path, **({"format": fmt} if fmt else {})}
    importer = DataplexImporter(name, dataset)
    refused = read_sources(sources, importer.add_source, partial)
    draft = importer.draft
    if draft is None or (not draft.table_checks and not draft.columns):
        raise ContractValidationError(
            refused or [ValidationIssue(sources[0].file if sources else "<none>", None, "rules", "no rules to import")]
        )
    files = ", ".join(os.path.basename(s.file) for s in sources)
    header = (
        f"Imported from Dataplex data-quality rules ({files}) by `dq-contracts import dataplex`.\n"
        "Each check's comment names its source rule; see docs/interop.md for the mapping."
    )
    key = (draft.top.get("dataset") or {}).get("table") or draft.name
    return ImportResult({key: validated(draft, header, f"<import of {files}>")}, refused)


def import_dataplex_sources(
    sources: list[Source],
    name: str | None = None,
    table: str | None = None,
    path: str | None = None,
    fmt: str | None = None,
) -> str:
    """Contract YAML text from parsed Dataplex documents; raises ``ContractValidationError`` (all refusals)."""
    return next(iter(import_dataplex_result(sources, name, table, path, fmt).contracts.values()))


def import_dataplex_texts(
    texts: list[tuple[str, str]],
    name: str | None = None,
    table: str | None = None,
    path: str | None = None,
    fmt: str | None = None,
) -> str:
    """Contract YAML text from ``(text, filename)`` pairs of Dataplex rule JSON/YAML."""
    return import_dataplex_sources([Source.parse(t, f) for t, f in texts], name, table, path, fmt)


def import_dataplex(
    paths: list[str | os.PathLike[str]],
    name: str | None = None,
    table: str | None = None,
    path: str | None = None,
    fmt: str | None = None,
) -> str:
    """Contract YAML text from Dataplex rule files (JSON or YAML).

    Example::

        text = import_dataplex(["scan_rules.json"], table="shop.orders")
    """
    return import_dataplex_sources([Source.read(p) for p in paths], name, table, path, fmt)
