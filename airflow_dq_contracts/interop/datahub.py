"""Import DataHub's open assertion YAML (``version: 1, assertions: [...]``) as a data contract.

Every assertion becomes one or more checks with the *same meaning*, or is refused with a located
message (file, line, path in the DataHub document) — never approximated. The mapping tables, the
refusals and their reasons are in ``docs/interop.md``. Plain Python: no Spark, no Airflow.

Example::

    >>> text = '''
    ... version: 1
    ... assertions:
    ...   - entity: urn:li:dataset:(urn:li:dataPlatform:snowflake,db.public.events,PROD)
    ...     type: volume
    ...     metric: row_count
    ...     condition: {type: greater_than, value: 1000}
    ... '''
    >>> print(import_datahub_texts([(text, "events.yaml")]).split("checks:")[1], end="")
    <BLANKLINE>
    # DataHub events.yaml:4 assertions[0] (volume row_count greater_than)
    - name: row count greater_than 1000
      type: num_rows
      min: 1001
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from airflow_dq_contracts.contract.errors import ContractValidationError, ValidationIssue
from airflow_dq_contracts.contract.sqltext import quote_identifier_if_needed, spark_literal

from .common import (
    Draft,
    ImportResult,
    Source,
    check_name,
    has_top_key,
    plain,
    read_sources,
    require_type,
    validated,
)
from .datahub_conditions import FLIP, HUNDRED, Condition, metric_validator, parse_condition

URN = re.compile(r"^urn:li:dataset:\(urn:li:dataPlatform:([^,()]+),(.+),([A-Za-z_]+)\)$")
COMPARISONS = (
    "equal_to",
    "not_equal_to",
    "greater_than",
    "greater_than_or_equal_to",
    "less_than",
    "less_than_or_equal_to",
    "between",
)
VALUE_CONDITIONS = COMPARISONS + (
    "in",
    "not_in",
    "is_null",
    "is_not_null",
    "matches_regex",
    "not_empty",
    "length_greater_than",
    "length_less_than",
    "length_between",
)
SCHEMA_TYPES = (
    "string",
    "number",
    "boolean",
    "date",
    "timestamp",
    "struct",
    "array",
    "map",
    "bytes",
    "integer",
    "decimal",
    "int",
    "long",
    "float",
    "double",
    "bigint",
    "binary",
)
# id / id_raw / meta identify an assertion inside DataHub; they do not change what it asserts.
COMMON_KEYS = ("entity", "type", "schedule", "description", "id", "id_raw", "meta")
KEYS = {
    "freshness": COMMON_KEYS + ("lookback_interval", "last_modified_field", "filters"),
    "volume": COMMON_KEYS + ("metric", "condition", "filters"),
    "field": COMMON_KEYS + ("field", "metric", "condition", "exclude_nulls", "failure_threshold", "filters"),
    "sql": COMMON_KEYS + ("statement", "condition"),
    "schema": COMMON_KEYS + ("condition", "columns"),
}
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(minute|hour|day|week)s?\s*$", re.IGNORECASE)
_HOURS = {"minute": Decimal(1) / Decimal(60), "hour": Decimal(1), "day": Decimal(24), "week": Decimal(168)}
PART_SUFFIXES = (" (min)", " (max)", " (min length)", " (max length)", " (no nulls)")
# DataHub schema types whose contract type differs from their name: INTEGER is any integer DataHub
# accepts (long widens from int/short/byte); NUMBER any numeric type (no single type: declared untyped).
DATAHUB_TYPES: dict[str, str | None] = {"number": None, "integer": "long"}


# --------------------------------------------------------------------------------------- importer


class DataHubImporter:
    """Turns DataHub assertion documents into one contract :class:`Draft` (see module docs)."""

    def __init__(self, name: str | None = None, only: str | None = None):
        self.name = name
        self.only = only.strip() if only else None  # import only this dataset URN
        self.drafts: dict[str, Draft] = {}  # one contract per dataset URN, in first-seen order
        self.entity: str | None = None  # the URN of the assertion being read
        self.schema_at: dict[str, str] = {}  # URN → where its schema assertion is
        self.untyped: list[str] = []  # columns declared without a type (DataHub NUMBER)

    @property
    def draft(self) -> Draft | None:
        """The contract of the assertion being read."""
        return self.drafts.get(self.entity) if self.entity else None

    # -- entry points ---------------------------------------------------------------------------
    def add_source(self, src: Source) -> None:
        doc = src.mapping(src.data, (), "a DataHub assertions document") if not src.issues else None
        if doc is None:
            return
        # ``namespace`` names the set of assertions inside DataHub; it does not change what they assert.
        src.keys(doc, ("version", "namespace", "assertions"), (), "a DataHub assertions document")
        if doc.get("version", 1) != 1:
            src.refuse(("version",), f"unsupported version {doc.get('version')!r}; this importer reads version 1")
        assertions = src.items(doc.get("assertions"), ("assertions",), "'assertions'")
        for index, raw in enumerate(assertions):
            self.assertion(src, raw, ("assertions", index))

    def assertion(self, src: Source, raw: Any, path: tuple) -> None:
        data = src.mapping(raw, path, "an assertion")
        if data is None:
            return
        kind = data.get("type")
        if kind not in KEYS:
            src.refuse(path + ("type",), f"unknown assertion type {kind!r}; known: {', '.join(KEYS)}")
            return
        src.keys(data, KEYS[kind], path, f"a '{kind}' assertion")
        if not self.set_entity(src, data, path):
            return
        handler: Callable[[Source, dict, tuple], None] = getattr(self, f"_{kind}")
        handler(src, data, path)

    def set_entity(self, src: Source, data: dict, path: tuple) -> bool:
        urn = src.text(data, "entity", path, required=True)
        if urn is None:
            return False
        match = URN.match(urn.strip())
        if match is None:
            src.refuse(
                path + ("entity",),
                f"not a DataHub dataset URN: {urn!r} (expected "
                "urn:li:dataset:(urn:li:dataPlatform:<platform>,<name>,<env>))",
            )
            return False
        urn = urn.strip()
        if self.only is not None and urn != self.only:
            return False  # another dataset: not selected (--dataset)
        self.entity = urn
        if urn not in self.drafts:
            platform, name = match.group(1), match.group(2)
            dataset: dict[str, Any] = {"table": name}
            if platform == "file":
                dataset = {"path": name}
            elif platform in ("s3", "gcs", "abfs"):
                dataset = {"path": f"{platform}://{name}"}
            draft = Draft(self.name or name.replace("/", ".").split(".")[-1] or "imported")
            draft.top["dataset"] = dataset
            draft.top["metadata"] = {"datahub_urn": urn}
            self.drafts[urn] = draft
        return True

    def add(self, src: Source, data: dict, path: tuple, check: dict[str, Any], column: str | None, what: str) -> None:
        assert self.draft is not None
        description = data.get("description")
        if isinstance(description, str) and description.strip():
            # An exported contract keeps its check names; a part of one assertion keeps its part's suffix.
            suffix = next((s for s in PART_SUFFIXES if check["name"].endswith(s)), "")
            check["name"] = check_name(description) + suffix
        where = _filter_sql(data.get("filters"))
        if where:
            check["filter"] = where
        elif data.get("filters") is not None:
            src.refuse(
                path + ("filters",),
                f"'filters' must be {{type: sql, sql: <WHERE clause>}} or the clause itself, got {data['filters']!r}",
            )
        self.draft.add(check, column, f"DataHub {src.where(path)} ({what})")

    # -- assertion types ------------------------------------------------------------------------
    def _freshness(self, src: Source, data: dict, path: tuple) -> None:
        field = src.text(data, "last_modified_field", path)
        interval = src.text(data, "lookback_interval", path, required=True)
        if field is None:
            if "last_modified_field" not in data:
                src.refuse(
                    path,
                    "freshness needs 'last_modified_field': only the LAST_MODIFIED_FIELD source "
                    "can be evaluated on the data (audit logs and information schema cannot)",
                )
            return
        if interval is None:
            return
        match = _INTERVAL.match(interval)
        if match is None:
            src.refuse(
                path + ("lookback_interval",),
                f"cannot read interval {interval!r}; write e.g. '6 hours', '30 minutes', '2 days'",
            )
            return
        hours = Decimal(match.group(1)) * _HOURS[match.group(2).lower()]
        assert self.draft is not None
        self.draft.column(field)
        check = {
            "name": f"{field} updated within {interval.strip()}",
            "type": "freshness",
            "timestamp_column": field,
            "max_age_hours": plain(hours),
            "tolerance": 0,
        }
        self.add(src, data, path, check, None, f"freshness {field} {interval.strip()}")

    def _volume(self, src: Source, data: dict, path: tuple) -> None:
        metric = data.get("metric", "row_count")
        if metric != "row_count":
            src.refuse(path + ("metric",), f"volume metric {metric!r} is not supported; only row_count exists")
            return
        cond = parse_condition(src, data.get("condition"), path + ("condition",), COMPARISONS)
        if cond is None:
            return
        validator = metric_validator(src, cond, path + ("condition",), "count")
        if validator is None:
            return
        check = {"name": f"row count {cond.describe()}", "type": "num_rows", **validator}
        self.add(src, data, path, check, None, f"volume row_count {cond.kind}")

    def _sql(self, src: Source, data: dict, path: tuple) -> None:
        statement = src.text(data, "statement", path, required=True)
        cond = parse_condition(src, data.get("condition"), path + ("condition",), COMPARISONS)
        if statement is None or cond is None:
            return
        if not require_type(src, path, "sql", "a DataHub sql assertion"):
            return
        validator = metric_validator(src, cond, path + ("condition",), "float")
        if validator is None:
            return
        query = statement.strip()
        table = (self.draft.top.get("dataset") or {}).get("table") if self.draft else None
        if table:
            # The entity is the checked dataset: {dataset} names it (after the run's filter).
            query = re.sub(rf"(?<![\w.`]){re.escape(table)}(?![\w`])", "{dataset}", query)
        check = {"name": f"sql {cond.describe()}", "type": "sql", "query": query, "return": "value", **validator}
        self.add(src, data, path, check, None, f"sql {cond.kind}")

    def _schema(self, src: Source, data: dict, path: tuple) -> None:
        cond_path = path + ("condition",)
        cond = src.mapping(data.get("condition"), cond_path, "'condition'")
        if cond is None:
            return
        src.keys(cond, ("type", "columns"), cond_path, "a schema condition")
        mode = {"exact_match": "exact", "contains": "contains"}.get(str(cond.get("type")))
        if mode is None:
            src.refuse(
                cond_path + ("type",), f"unknown schema condition {cond.get('type')!r}; known: exact_match, contains"
            )
            return
        columns_path = cond_path + ("columns",) if "columns" in cond else path + ("columns",)
        columns = src.items(cond.get("columns", data.get("columns")), columns_path, "'columns'")
        typed: list[tuple[str, str]] = []
        for index, raw in enumerate(columns):
            where = columns_path + (index,)
            item = src.mapping(raw, where, "a schema column")
            if item is None:
                continue
            src.keys(item, ("name", "type", "nativeType"), where, "a schema column")
            name = src.text(item, "name", where, required=True)
            kind = src.text(item, "type", where, required=True)
            if name is None or kind is None:
                continue
            if kind.lower() not in SCHEMA_TYPES:
                src.refuse(
                    where + ("type",),
                    f"DataHub type {kind!r} has no contract column type "
                    f"(union and enum have none); supported: {', '.join(SCHEMA_TYPES)}",
                )
                continue
            typed.append((name, kind.lower()))
        assert self.entity is not None
        if self.entity in self.schema_at:
            src.refuse(
                path,
                f"a second schema assertion on {self.entity} (the first is at {self.schema_at[self.entity]}); "
                "they would overwrite each other's columns and mode — keep one",
            )
            return
        self.schema_at[self.entity] = src.where(path)
        if not has_top_key("enforcement"):
            src.refuse(
                path,
                "a DataHub schema assertion needs the contract's schema enforcement "
                "('enforcement: {schema: {mode: …}}', issue #10), which this version does not have",
            )
            return
        if len(typed) != len(columns):
            return
        assert self.draft is not None
        for name, kind in typed:
            column = self.draft.column(name)
            if DATAHUB_TYPES.get(kind, kind) is not None:
                column["type"] = DATAHUB_TYPES.get(kind, kind)
            else:
                # DataHub's NUMBER admits every numeric type; the model has no such type, so the column
                # is declared without one (its presence is checked) — said in the header and docs.
                self.untyped.append(f"{self.entity} {name}: DataHub {kind} accepts any numeric type")
                self.draft.top["metadata"].setdefault("datahub_types", {})[name] = kind  # for the export
        self.draft.top["enforcement"] = {"schema": {"mode": mode, "severity": "P0"}}

    def _field(self, src: Source, data: dict, path: tuple) -> None:
        column = src.text(data, "field", path, required=True)
        if column is None:
            return
        if "metric" in data:
            for key in ("exclude_nulls", "failure_threshold"):
                if key in data:
                    src.refuse(path + (key,), f"'{key}' applies to field value assertions, not to field metrics")
            self._field_metric(src, data, path, column)
        else:
            self._field_values(src, data, path, column)

    # -- field metrics --------------------------------------------------------------------------
    def _field_metric(self, src: Source, data: dict, path: tuple, column: str) -> None:
        metric = data.get("metric")
        cond = parse_condition(src, data.get("condition"), path + ("condition",), COMPARISONS)
        if metric not in FIELD_METRICS:
            src.refuse(path + ("metric",), f"unknown field metric {metric!r}; known: {', '.join(FIELD_METRICS)}")
            return
        if cond is None:
            return
        base, reading, transform = FIELD_METRICS[metric]
        name, source_kind = f"{column} {metric} {cond.describe()}", cond.kind
        if transform is not None:
            cond = transform(cond)
        if base.get("type") == "row_condition" and not require_type(
            src, path, "row_condition", f"field metric {metric}"
        ):
            return
        validator = metric_validator(src, cond, path + ("condition",), reading)
        if validator is None:
            return
        template = {
            k: (v.format(col=quote_identifier_if_needed(column)) if isinstance(v, str) else v) for k, v in base.items()
        }
        check = {"name": name, **template, **validator}
        target = None if check["type"] == "row_condition" else column
        self.add(src, data, path, check, target, f"field {column} metric {metric} {source_kind}")

    # -- field values ---------------------------------------------------------------------------
    def _field_values(self, src: Source, data: dict, path: tuple, column: str) -> None:
        cond = parse_condition(src, data.get("condition"), path + ("condition",), VALUE_CONDITIONS, text_values=True)
        exclude_nulls = src.flag(data, "exclude_nulls", path, True)
        threshold = self._threshold(src, data, path)
        if cond is None or threshold is None:
            return
        FieldValues(self, src, data, path, column, cond, exclude_nulls, *threshold).map()

    def _threshold(self, src: Source, data: dict, path: tuple) -> tuple[str, Decimal] | None:
        raw = data.get("failure_threshold")
        if raw is None:
            return "count", Decimal(0)
        where = path + ("failure_threshold",)
        item = src.mapping(raw, where, "'failure_threshold'")
        if item is None:
            return None
        src.keys(item, ("type", "value"), where, "'failure_threshold'")
        kind = item.get("type")
        if kind not in ("count", "percentage"):
            src.refuse(where + ("type",), f"failure_threshold type must be count or percentage, got {kind!r}")
            return None
        value = src.number(item.get("value"), where + ("value",), "failure_threshold value")
        if value is None:
            return None
        if value < 0 or (kind == "percentage" and value > HUNDRED):
            src.refuse(where + ("value",), f"failure_threshold {plain(value)} is out of range")
            return None
        return (kind, value) if value else ("count", Decimal(0))


def _filter_sql(raw: Any) -> str | None:
    """The SQL of DataHub ``filters`` — ``{type: sql, sql: …}`` (the compiler's form) or a bare clause."""
    if isinstance(raw, dict) and raw.get("type", "sql") == "sql" and set(raw) <= {"type", "sql"}:
        raw = raw.get("sql")
    return raw.strip() if isinstance(raw, str) and raw.strip() else None


def _percent(cond: Condition) -> Condition:
    """A 0–100 DataHub percentage condition as a 0–1 ratio condition (exact decimal division)."""
    if cond.kind == "between":
        return Condition("between", low=cond.low / HUNDRED, high=cond.high / HUNDRED)  # type: ignore[operator]
    return Condition(cond.kind, cond.value / HUNDRED)


def _unique_to_duplicates(cond: Condition) -> Condition:
    """``unique% <cond> u`` as ``duplicates pct <cond'> 1 − u/100`` (unique ratio = 1 − duplicate ratio)."""
    one = Decimal(1)
    if cond.kind == "between":
        return Condition("between", low=one - cond.high / HUNDRED, high=one - cond.low / HUNDRED)  # type: ignore[operator]
    return Condition(FLIP.get(cond.kind, cond.kind), one - cond.value / HUNDRED)


#: A field metric's reading: (check template, reading, condition transform).
FieldMetric = tuple[dict[str, Any], str, Callable[[Condition], Condition] | None]


def _violating(condition: str, reading: str, *, null_passes: bool = False) -> FieldMetric:
    """The rows where ``condition`` is not true, counted (``count``) or as a share (``pct``)."""
    template: dict[str, Any] = {"type": "row_condition", "condition": condition}
    if null_passes:
        template["null_passes"] = True
    template["return"] = reading
    return template, reading, _percent if reading == "pct" else None


# metric → (check template, reading, condition transform). ``{col}`` is the quoted column.
FIELD_METRICS: dict[str, FieldMetric] = {
    "null_count": ({"type": "missing", "return": "count"}, "count", None),
    "null_percentage": ({"type": "missing", "return": "pct"}, "pct", _percent),
    "unique_count": ({"type": "cardinality"}, "count", None),
    "unique_percentage": ({"type": "duplicates", "return": "pct"}, "pct", _unique_to_duplicates),
    # DataHub's own compiler counts "empty" as ``col IS NULL OR TRIM(col) = ''``: those rows violate.
    "empty_count": _violating("{col} IS NOT NULL AND TRIM({col}) <> ''", "count"),
    "empty_percentage": _violating("{col} IS NOT NULL AND TRIM({col}) <> ''", "pct"),
    "min": ({"type": "min"}, "float", None),
    "max": ({"type": "max"}, "float", None),
    "mean": ({"type": "mean"}, "float", None),
    "median": ({"type": "percentile", "percentile": 0.5}, "float", None),
    "stddev": ({"type": "stddev"}, "float", None),
    # A row violates "{col} >= 0" exactly when it is negative (NULL passes): violations = negatives.
    "negative_count": _violating("{col} >= 0", "count", null_passes=True),
    "negative_percentage": _violating("{col} >= 0", "pct", null_passes=True),
    "zero_count": _violating("{col} <> 0", "count", null_passes=True),
    "zero_percentage": _violating("{col} <> 0", "pct", null_passes=True),
}


@dataclasses.dataclass
class FieldValues:
    """One field-values assertion: a per-row condition, NULL handling and a failure threshold.

    Native checks count *conforming non-null* rows (``whitelist``, ``pattern``…), or NULL rows
    (``missing``), so the mapping depends on the NULL rule and the threshold:

    * NULLs excluded, no threshold → the check's implicit "every non-null value conforms"
      (or a min/max statistic for ranges and lengths);
    * NULLs fail, percentage threshold p (or none) → conforming ratio ``return: pct, min: 1 − p``;
    * anything else → ``row_condition`` (issue #11), whose metric is the violating rows.
    """

    importer: DataHubImporter
    src: Source
    data: dict
    path: tuple
    column: str
    cond: Condition
    exclude_nulls: bool
    threshold_kind: str
    threshold: Decimal

    def add(self, check: dict[str, Any], column: str | None) -> None:
        what = f"field {self.column} {self.cond.kind}"
        self.importer.add(self.src, self.data, self.path, check, column, what)

    @property
    def name(self) -> str:
        return f"{self.column} {self.cond.describe()}"

    def map(self) -> None:
        kind, col = self.cond.kind, self.column
        if kind == "is_not_null":
            return self.threshold_check({"type": "missing"}, col)
        if kind == "is_null":
            if self.threshold_kind == "count":
                return self.add({"name": self.name, "type": "count", "max": plain(self.threshold)}, col)
            return self.row_condition(f"{quote_identifier_if_needed(col)} IS NULL", null_passes=False)
        native = self.native()
        if native is None:
            return None
        conforming, stats = native
        if conforming is None and stats is None:
            return self.row_condition(self.sql(), null_passes=self.exclude_nulls)
        zero = not self.threshold
        if self.exclude_nulls and zero:
            if stats is None:
                assert conforming is not None  # not both None (handled above)
                return self.add({"name": self.name, **conforming}, col)
            for suffix, check in stats:
                self.add({"name": f"{self.name}{suffix}", **check}, col)
            return None
        if not self.exclude_nulls and (zero or self.threshold_kind == "percentage") and conforming is not None:
            ratio = Decimal(1) - self.threshold / HUNDRED
            return self.add(
                {"name": self.name, **conforming, "return": "pct", "min": plain(ratio), "tolerance": 0}, col
            )
        if not self.exclude_nulls and zero and stats is not None:
            for suffix, check in stats:
                self.add({"name": f"{self.name}{suffix}", **check}, col)
            return self.add({"name": f"{self.name} (no nulls)", "type": "missing", "max": 0}, col)
        return self.row_condition(self.sql(), null_passes=self.exclude_nulls)

    def threshold_check(self, base: dict[str, Any], column: str) -> None:
        if self.threshold_kind == "count":
            return self.add({"name": self.name, **base, "return": "count", "max": plain(self.threshold)}, column)
        return self.add(
            {"name": self.name, **base, "return": "pct", "max": plain(self.threshold / HUNDRED), "tolerance": 0}, column
        )

    def native(self) -> tuple[dict[str, Any] | None, list[tuple[str, dict[str, Any]]] | None] | None:
        """(conformance check, statistic checks) — either may be None when it has no native form."""
        kind, cond = self.cond.kind, self.cond
        if kind == "in":
            return {"type": "whitelist", "values": cond.value}, None
        if kind == "not_in":
            return {"type": "blacklist", "values": cond.value}, None
        if kind in ("equal_to", "not_equal_to"):
            value = cond.value if isinstance(cond.value, str) else plain(cond.value)
            return {"type": "whitelist" if kind == "equal_to" else "blacklist", "values": [value]}, None
        if kind == "matches_regex":
            # DataHub compiles to REGEXP_LIKE, a whole-value match; contract patterns search.
            return {"type": "pattern", "pattern": anchored(cond.value)}, None
        if kind in ("not_empty", "length_greater_than", "length_less_than", "length_between"):
            low, high = self.length_bounds()
            if low is None and high is None:
                return None
            conforming: dict[str, Any] = {"type": "min_length" if low is not None else "max_length"}
            if low is not None:
                conforming["length_min"] = low
            if high is not None:
                conforming["length_max"] = high
            stats = []
            if low is not None:
                stats.append((" (min length)" if high is not None else "", {"type": "min_length", "min": low}))
            if high is not None:
                stats.append((" (max length)" if low is not None else "", {"type": "max_length", "max": high}))
            return conforming, stats
        if kind in ("greater_than_or_equal_to", "less_than_or_equal_to", "between"):
            stats = []
            if kind != "less_than_or_equal_to":
                lower = cond.low if kind == "between" else cond.value
                stats.append(
                    (" (min)" if kind == "between" else "", {"type": "min", "min": plain(lower), "tolerance": 0})  # type: ignore[arg-type]
                )
            if kind != "greater_than_or_equal_to":
                upper = cond.high if kind == "between" else cond.value
                stats.append(
                    (" (max)" if kind == "between" else "", {"type": "max", "max": plain(upper), "tolerance": 0})  # type: ignore[arg-type]
                )
            if kind == "between" and cond.low > cond.high:  # type: ignore[operator]
                self.src.refuse(self.path + ("condition",), "between: min is greater than max")
                return None
            return None, stats
        return None, None  # strict comparisons: only a row condition says them exactly

    def length_bounds(self) -> tuple[int | None, int | None]:
        kind, cond = self.cond.kind, self.cond
        if kind == "not_empty":
            return 1, None
        # Lengths are integers: "> n" is "≥ floor(n) + 1", "< n" is "≤ ceil(n) − 1".
        if kind == "length_greater_than":
            return math.floor(cond.value) + 1, None
        if kind == "length_less_than":
            high = math.ceil(cond.value) - 1
            if high < 0:
                self.src.refuse(self.path + ("condition",), f"no value has a length below {plain(cond.value)}")
                return None, None
            return None, high
        low, high = max(math.ceil(cond.low), 0), math.floor(cond.high)  # type: ignore[arg-type]
        if low > high:
            self.src.refuse(self.path + ("condition",), "length_between: no length lies between min and max")
            return None, None
        return low, high

    def sql(self) -> str:
        """The per-row condition as Spark SQL (a row violates when it is false)."""
        col, cond, kind = quote_identifier_if_needed(self.column), self.cond, self.cond.kind
        operators = {
            "equal_to": "=",
            "not_equal_to": "<>",
            "greater_than": ">",
            "greater_than_or_equal_to": ">=",
            "less_than": "<",
            "less_than_or_equal_to": "<=",
        }
        if kind in operators:
            value = spark_literal(cond.value) if isinstance(cond.value, str) else plain(cond.value)
            return f"{col} {operators[kind]} {value}"
        if kind == "between":
            return f"{col} BETWEEN {plain(cond.low)} AND {plain(cond.high)}"  # type: ignore[arg-type]
        if kind in ("in", "not_in"):
            values = ", ".join(spark_literal(v) for v in cond.value)
            return f"{col} {'NOT IN' if kind == 'not_in' else 'IN'} ({values})"
        if kind == "matches_regex":
            return f"{col} RLIKE {spark_literal(anchored(cond.value))}"
        low, high = self.length_bounds()
        parts = ([f"char_length({col}) >= {low}"] if low is not None else []) + (
            [f"char_length({col}) <= {high}"] if high is not None else []
        )
        return " AND ".join(parts)

    def row_condition(self, condition: str, null_passes: bool) -> None:
        if not require_type(
            self.src, self.path, "row_condition", f"field {self.cond.kind} with this NULL rule and failure_threshold"
        ):
            return None
        check: dict[str, Any] = {
            "name": self.name,
            "type": "row_condition",
            "condition": condition,
            "null_passes": null_passes,
        }
        if self.threshold_kind == "count":
            check.update({"return": "count", "max": plain(self.threshold)})
        else:
            check.update({"return": "pct", "max": plain(self.threshold / HUNDRED), "tolerance": 0})
        return self.add(check, None)


def anchored(regex: str) -> str:
    """A whole-value match as a search pattern: ``^(?:regex)$``.

    >>> anchored("[a-z]+")
    '^(?:[a-z]+)$'
    """
    return f"^(?:{regex})$"


# --------------------------------------------------------------------------------------- public API


def import_datahub_each(
    sources: list[Source], name: str | None = None, dataset: str | None = None, partial: bool = False
) -> ImportResult:
    """One contract per dataset URN of the documents (``dataset``: only that one).

    Raises ``ContractValidationError`` with every refusal; with ``partial``, returns what maps exactly
    and the refusals (located) instead.
    """
    importer = DataHubImporter(name, dataset)
    refused = read_sources(sources, importer.add_source, partial)
    if not importer.drafts:
        what = f"no assertions on {dataset}" if dataset else "no assertions to import"
        raise ContractValidationError(
            refused or [ValidationIssue(s.file, None, "assertions", what) for s in sources[:1]]
        )
    files = ", ".join(os.path.basename(s.file) for s in sources)
    header = (
        f"Imported from DataHub assertions ({files}) by `dq-contracts import datahub`.\n"
        "Each check's comment names its source assertion; see docs/interop.md for the mapping."
    )
    header += "".join(f"\nNote: {note} (declared without a type)." for note in importer.untyped)
    contracts = {urn: validated(draft, header, f"<import of {files}>") for urn, draft in importer.drafts.items()}
    return ImportResult(contracts, refused)


def import_datahub_sources(sources: list[Source], name: str | None = None) -> str:
    """Contract YAML text from parsed DataHub documents about one dataset; raises ``ContractValidationError``."""
    result = import_datahub_each(sources, name)
    if len(result.contracts) > 1:
        urns = ", ".join(result.contracts)
        raise ContractValidationError(
            [
                ValidationIssue(
                    sources[0].file,
                    None,
                    "assertions",
                    f"assertions on {len(result.contracts)} datasets ({urns}): import them with -o DIR "
                    "(one contract each) or pick one with --dataset URN",
                )
            ]
        )
    return next(iter(result.contracts.values()))


def import_datahub_texts(texts: list[tuple[str, str]], name: str | None = None) -> str:
    """Contract YAML text from ``(text, filename)`` pairs of DataHub assertion YAML."""
    return import_datahub_sources([Source.parse(text, file) for text, file in texts], name)


def import_datahub(paths: list[str | os.PathLike[str]], name: str | None = None) -> str:
    """Contract YAML text from DataHub assertion files (about one dataset).

    Example::

        text = import_datahub(["assertions.yaml"])       # raises ContractValidationError if refused
        Path("contracts/purchase_events.yaml").write_text(text)
    """
    return import_datahub_sources([Source.read(p) for p in paths], name)
