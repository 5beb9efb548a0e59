"""The check types of the contract language: their parameters, levels and validation rules.

This is the contract-side half of a check type (plain Python). The Spark-side half — the metric
expressions and the per-row predicate — is one small class per type in
:mod:`airflow_dq_contracts.engine.metrics` (by family), listed under the same (level, name) in
``engine/metrics/registry.py``.

Adding a check type: one :class:`CheckType` here, one metric class in its family module and one line in
the registry's ``METRIC_CLASSES``, tests beside both (``tests/test_engine_imports.py`` checks the two
tables cover the same types). A type defined outside the package is added with :func:`register_check_type`
and :func:`airflow_dq_contracts.engine.metrics.registry.register_metric` (``tests/test_seams.py``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from .baseline import DEFAULT_LOOKBACK_DAYS, DEFAULT_MAX_SIGMA, DEFAULT_MIN_HISTORY, check_drift_metrics
from .queries import statement_problem
from .timeliness import GRANULARITIES
from .validators import Validator

Number = (int, float)

# Predefined ``format:`` shortcuts of the ``pattern`` check (spec table, verbatim).
FORMAT_PATTERNS: dict[str, str] = {
    "email": r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
    "phone": r"^\+?[1-9]\d{1,14}$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "url": r"^https?://[^\s/$.?#].[^\s]*$",
    "ipv4": r"^(?:[0-9]{1,3}\.){3}[0-9]{1,3}$",
    "ipv6": r"^(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$",
    "date": r"^\d{4}-\d{2}-\d{2}$",
    "datetime": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}",
}

# ``flags:`` of the ``pattern`` check → Java inline flags (Spark evaluates regexes in the JVM).
REGEX_FLAGS: dict[str, str] = {
    "IGNORECASE": "i",
    "I": "i",
    "MULTILINE": "m",
    "M": "m",
    "DOTALL": "s",
    "S": "s",
    "VERBOSE": "x",
    "X": "x",
    "UNICODE": "u",
    "U": "u",
}


@dataclasses.dataclass(frozen=True)
class Param:
    """A check-specific parameter: its YAML name, kind, default and domain."""

    name: str
    kind: str  # number | int | bool | str | str_list | value_list | choice | flags | mapping
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False


@dataclasses.dataclass(frozen=True)
class CheckType:
    """What the contract language knows about one check type at one level."""

    name: str
    level: str  # table | column
    params: tuple[Param, ...] = ()
    validators: bool = True  # the five standard validators are allowed
    implicit: str | None = None  # all_conform | max_age_hours | max_gap_count | no_violation | zero | true
    extra: Callable[[dict[str, Any], Callable[[tuple, str], None]], None] | None = None
    summary: str = ""
    #: False for types a run derives from the contract itself (``schema``): not writable under ``checks``
    written: bool = True
    #: True for a type that runs its own query instead of joining the shared scan (``sql``)
    is_query: bool = False
    #: False for a type whose scope is written into its own condition or query (no ``filter`` key)
    filterable: bool = True

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


RETURN = Param("return", "choice", default="count", choices=("count", "pct"))
RETURN_OPTIONAL = Param("return", "choice", default=None, choices=("count", "pct"))
LENGTH_BOUNDS = (
    Param("length_min", "int", minimum=0),
    Param("length_max", "int", minimum=0),
)


def _check_length_params(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    lo, hi = params.get("length_min"), params.get("length_max")
    if (lo is not None or hi is not None) and params.get("return") is None:
        add(
            ("length_min" if lo is not None else "length_max",),
            "length_min/length_max define conforming rows and need 'return: count' or 'return: pct'",
        )
    if lo is not None and hi is not None and lo > hi:
        add(("length_min",), f"length_min {lo} is greater than length_max {hi}")


_JAVA_ONLY = re.compile(r"\\[pP]\{[^}]*\}|\\[pP][A-Za-z]|\\[QE]|\\[zZ]|\\h|\\R|\\X")


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid regex, or None.

    Spark runs patterns as Java regexes; Python's ``re`` is the closest parser available without a
    JVM, so Java-only escapes (``\\p{L}``, ``\\Q…\\E``, ``\\h``…) are neutralised before compiling.
    """
    try:
        re.compile(_JAVA_ONLY.sub("x", pattern))
    except re.error as exc:
        return f"invalid regular expression {pattern!r}: {exc}"
    return None


def _check_pattern_params(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    has_pattern, has_format = params.get("pattern") is not None, params.get("format") is not None
    if has_pattern == has_format:
        add(("pattern",), "give exactly one of 'pattern' or 'format'")
    if has_format and params.get("flags"):
        add(("flags",), "'flags' only apply to 'pattern', not to 'format'")
    if has_pattern:
        problem = regex_problem(params["pattern"])
        if problem:
            add(("pattern",), problem)


def _check_values(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    if not params.get("case_sensitive", True):
        return
    # Nothing more: values are checked for scalar types by the generic parameter validation.


def _check_columns(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    columns = params.get("columns") or []
    seen: set[str] = set()
    for index, name in enumerate(columns):
        if name in seen:
            add(("columns", index), f"column {name!r} is listed twice")
        seen.add(name)


def _stat(name: str, summary: str, *params: Param) -> CheckType:
    return CheckType(name, "column", params=params, summary=summary)


def _value_set(name: str, summary: str) -> CheckType:
    """``whitelist`` / ``blacklist``: the same parameters, conforming rows in or outside ``values``."""
    return CheckType(
        name,
        "column",
        params=(Param("values", "value_list", required=True), RETURN, Param("case_sensitive", "bool", default=True)),
        implicit="all_conform",
        extra=_check_values,
        summary=summary,
    )


def _length(name: str, summary: str) -> CheckType:
    """``min_length`` / ``max_length`` / ``avg_length``: a length statistic, or conforming rows with ``return``."""
    return CheckType(
        name, "column", params=(RETURN_OPTIONAL, *LENGTH_BOUNDS), extra=_check_length_params, summary=summary
    )


CHECK_TYPES: dict[tuple[str, str], CheckType] = {}


def _register(*types: CheckType) -> None:
    for t in types:
        CHECK_TYPES[(t.level, t.name)] = t


_register(
    # Table level
    CheckType("num_rows", "table", summary="total row count"),
    CheckType(
        "duplicates",
        "table",
        params=(Param("columns", "str_list", required=True), RETURN),
        extra=_check_columns,
        summary="COUNT(*) − COUNT(DISTINCT columns…)",
    ),
    CheckType(
        "freshness",
        "table",
        params=(
            Param("max_age_hours", "number", required=True, minimum=0),
            Param("timestamp_column", "str", required=True),
            Param("aggregation", "choice", default="max", choices=("max", "min")),
        ),
        validators=False,
        implicit="max_age_hours",
        summary="age in hours of the newest (oldest) timestamp",
    ),
    CheckType(
        "completeness",
        "table",
        params=(
            Param("partition_column", "str", required=True),
            Param("granularity", "choice", required=True, choices=GRANULARITIES),
            Param("lookback_days", "int", default=30, minimum=1),
            Param("allow_future_gaps", "bool", default=True),
            Param("max_gap_count", "int", default=0, minimum=0),
        ),
        validators=False,
        implicit="max_gap_count",
        summary="number of missing partitions",
    ),
    # Column level: statistics
    _stat("cardinality", "distinct non-null values"),
    _stat("min", "minimum value"),
    _stat("max", "maximum value"),
    _stat("mean", "arithmetic mean of non-null values"),
    _stat("sum", "sum of non-null values"),
    _stat("count", "non-null values"),
    _stat("variance", "sample variance (n−1)"),
    _stat("stddev", "sample standard deviation (n−1)"),
    _stat(
        "percentile",
        "exact percentile, linear interpolation",
        Param("percentile", "number", required=True, minimum=0.0, maximum=1.0),
        Param("approximate", "bool", default=False),
    ),
    # Column level: values
    CheckType("missing", "column", params=(RETURN,), summary="NULL values"),
    CheckType("duplicates", "column", params=(RETURN,), summary="COUNT(*) − COUNT(DISTINCT column)"),
    _value_set("whitelist", "non-null values in the allowed set"),
    _value_set("blacklist", "non-null values outside the forbidden set"),
    CheckType(
        "pattern",
        "column",
        params=(
            Param("pattern", "str"),
            Param("format", "choice", choices=tuple(FORMAT_PATTERNS)),
            Param("flags", "flags", default=()),
            RETURN,
        ),
        implicit="all_conform",
        extra=_check_pattern_params,
        summary="non-null values matching a regex",
    ),
    _length("min_length", "minimum length (characters or elements)"),
    _length("max_length", "maximum length (characters or elements)"),
    _length("avg_length", "average length (characters or elements)"),
    # Column level: learned from history (contract/baseline.py); one result per metric
    CheckType(
        "drift",
        "column",
        params=(
            Param("metrics", "value_list"),
            Param("max_sigma", "number", default=DEFAULT_MAX_SIGMA, minimum=0.0, exclusive_minimum=True),
            Param("lookback_days", "int", default=DEFAULT_LOOKBACK_DAYS, minimum=1),
            Param("min_history", "int", default=DEFAULT_MIN_HISTORY, minimum=1),
        ),
        validators=False,
        implicit="drift",
        extra=check_drift_metrics,
        summary="mean, p50, p95, p99, cardinality within k σ of their trailing history",
    ),
)


# --------------------------------------------------------------------------- the third family
# Checks that look beyond one row's own columns: another dataset (referential, reconciliation),
# a free SQL condition (row_condition, table_condition) or a whole query (sql). All are declared in
# the top-level ``checks``; referential and row_condition still have a per-row reading.

AS_OF_KEYS = ("column", "valid_from", "valid_to")
RECONCILE_MEASURES = ("count", "sum", "count_distinct")


def _check_referential(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    _check_columns(params, add)
    theirs = params.get("reference_columns")
    if theirs is not None and len(theirs) != len(params["columns"]):
        add(
            ("reference_columns",),
            f"'reference_columns' names {len(theirs)} column(s) for "
            f"{len(params['columns'])} in 'columns'; give one per key column",
        )
    as_of = params.get("as_of")
    if as_of is None:
        return
    for key in as_of:
        if key not in AS_OF_KEYS:
            add(("as_of", key), f"unknown key {key!r} in 'as_of'; allowed: {', '.join(AS_OF_KEYS)}")
    for key in AS_OF_KEYS:
        value = as_of.get(key)
        if value is None:
            add(
                ("as_of",),
                f"'as_of' needs '{key}' (column: the row's event time; valid_from/valid_to: "
                "the reference's validity interval)",
            )
        elif not isinstance(value, str) or not value:
            add(("as_of", key), f"'as_of.{key}' must be a column name, got {value!r}")


def _check_reconciliation(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    measure = params["measure"]
    if measure == "count":
        for key in ("column", "reference_column"):
            if params.get(key) is not None:
                add((key,), f"'{key}' does not apply to 'measure: count' (it counts rows)")
    elif params.get("column") is None:
        add(("measure",), f"'measure: {measure}' needs 'column'")


def _check_sql(params: dict[str, Any], add: Callable[[tuple, str], None]) -> None:
    problem = statement_problem(params["query"])
    if problem:
        add(("query",), problem)


_register(
    CheckType(
        "referential",
        "table",
        params=(
            Param("columns", "str_list", required=True),
            Param("reference", "str", required=True),
            Param("reference_columns", "str_list"),
            Param("as_of", "mapping"),
            Param("nulls", "choice", default="ignore", choices=("ignore", "fail")),
            RETURN,
        ),
        implicit="no_violation",
        extra=_check_referential,
        summary="rows whose key has no match in the reference (orphans)",
    ),
    CheckType(
        "reconciliation",
        "table",
        params=(
            Param("reference", "str", required=True),
            Param("measure", "choice", required=True, choices=RECONCILE_MEASURES),
            Param("column", "str"),
            Param("reference_column", "str"),
            Param("return", "choice", default="diff", choices=("diff", "pct_diff")),
        ),
        implicit="zero",
        extra=_check_reconciliation,
        summary="ours − theirs of a count or sum",
    ),
    CheckType(
        "row_condition",
        "table",
        params=(Param("condition", "str", required=True), Param("null_passes", "bool", default=False), RETURN),
        implicit="no_violation",
        summary="rows where a SQL boolean is not true",
    ),
    CheckType(
        "table_condition",
        "table",
        params=(Param("condition", "str", required=True),),
        validators=False,
        implicit="true",
        filterable=False,
        summary="a SQL boolean over aggregates",
    ),
    CheckType(
        "sql",
        "table",
        params=(
            Param("query", "str", required=True),
            Param("return", "choice", default="value", choices=("value", "rows")),
        ),
        implicit="sql",
        extra=_check_sql,
        is_query=True,
        filterable=False,
        summary="a SELECT returning a value or failing rows",
    ),
)

# Schema conformance (see .enforcement): derived from ``columns`` and ``enforcement.schema``, one
# check per declared column and, in ``exact`` mode, one for the table (undeclared columns).
_register(
    CheckType(
        "schema", "column", validators=False, written=False, summary="the column is present with a compatible type"
    ),
    CheckType(
        "schema",
        "table",
        validators=False,
        written=False,
        summary="no undeclared column (enforcement.schema.mode: exact)",
    ),
)

TABLE_TYPES = sorted(name for (level, name), t in CHECK_TYPES.items() if level == "table" and t.written)
COLUMN_TYPES = sorted(name for (level, name), t in CHECK_TYPES.items() if level == "column" and t.written)


def register_check_type(ctype: CheckType) -> None:
    """Add ``ctype`` to the contract language (replacing a type of the same level and name).

    The contract side only: a run also needs its Spark half,
    :func:`airflow_dq_contracts.engine.metrics.registry.register_metric`.

    >>> register_check_type(CheckType("dq_doctest_type", "column", summary="a doctest's type"))
    >>> check_type("column", "dq_doctest_type").summary, "dq_doctest_type" in COLUMN_TYPES
    ("a doctest's type", True)
    >>> _ = CHECK_TYPES.pop(("column", "dq_doctest_type")); COLUMN_TYPES.remove("dq_doctest_type")
    """
    if ctype.level not in ("table", "column"):
        raise ValueError(f"check type {ctype.name!r}: level must be 'table' or 'column', got {ctype.level!r}")
    _register(ctype)
    names = TABLE_TYPES if ctype.level == "table" else COLUMN_TYPES
    if ctype.written and ctype.name not in names:
        names.append(ctype.name)
        names.sort()


COMMON_KEYS = ("name", "type", "severity", "tolerance", "tags", "action", "filter", "description", "enabled")
VALIDATOR_KEYS = ("min", "max", "between", "not_between", "equals")


def check_type(level: str, name: str) -> CheckType | None:
    """The check type an author may write at ``level`` (derived-only types such as ``schema`` are not)."""
    found = CHECK_TYPES.get((level, name))
    return found if found is not None and found.written else None


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool); an int too large for a float is not a usable bound."""
    if not isinstance(value, Number) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def has_row_reading(check: Any) -> bool:
    """Whether one row can break ``check`` on its own (so it can be tagged and quarantined).

    Table-level checks never tag rows (DESIGN §6). ``min``/``max`` and the length checks tag rows
    only when their validator gives a bound a single value can cross.
    """
    if check.baseline is not None:
        return False  # a learned bound is a property of the whole run, not of one row
    if check.column is None:
        # The third family's row-level types: an orphan row, a row breaking its condition.
        return check.type in ("referential", "row_condition")
    kind = check.type
    # ``schema``: a value that does not parse as the declared type (a column read from text) is one row's.
    if kind in ("missing", "whitelist", "blacklist", "pattern", "duplicates", "schema"):
        return True
    if kind in ("min_length", "max_length", "avg_length") and check.params.get("return"):
        return True
    if kind in ("min", "min_length"):
        return check.validator.lower_bound is not None
    if kind in ("max", "max_length"):
        return check.validator.upper_bound is not None
    return False


def implicit_validator(ctype: CheckType, params: dict[str, Any], tolerance: float) -> Validator:
    """The validator of a check that declares none."""
    if ctype.implicit == "all_conform":
        return Validator("all_conform", tolerance=tolerance)
    if ctype.implicit == "max_age_hours":
        return Validator("max", high=float(params["max_age_hours"]), tolerance=tolerance, metric_name="age_hours")
    if ctype.implicit == "max_gap_count":
        return Validator("max", high=float(params["max_gap_count"]), tolerance=tolerance, metric_name="gap_count")
    # A check of the third family without a validator must still be able to fail (no silent hole).
    if ctype.implicit == "no_violation" or (ctype.implicit == "sql" and params.get("return") == "rows"):
        return Validator("max", high=0.0, tolerance=tolerance)
    if ctype.implicit == "zero":
        return Validator("equals", low=0.0, tolerance=tolerance)
    if ctype.implicit == "true":
        return Validator("equals", low=1.0, tolerance=tolerance, metric_name="condition")
    return Validator("noop", tolerance=tolerance)
