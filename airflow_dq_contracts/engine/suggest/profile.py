"""The profiling run of ``suggest``: ONE aggregate scan plus the grouped passes it needs (Spark side).

The measurements are the engine's own: a private *profiling contract* (``missing``, ``min``,
``max``, ``min_length``, ``max_length``, ``pattern`` checks without validators) is loaded with
:func:`~airflow_dq_contracts.contract.load_contract` and each check's metric class from
:mod:`airflow_dq_contracts.engine.metrics` contributes its expressions to one shared ``df.agg``
and reads its values back with its own ``measure`` — the same code that later evaluates the
suggested contract, so a bound suggested here is in the units the check will measure (epoch
seconds for dates and timestamps, characters or elements for lengths). The scan adds a
HyperLogLog distinct estimate per groupable column, which decides the grouped passes:

* **values** — one ``groupBy(column index, value)`` over the low-cardinality columns together
  (``stack``): exact value counts for ``allowed_values`` and the partition periods;
* **keys** — one grouped pass per key candidate (at most :data:`MAX_KEY_CANDIDATES`) through the
  ``duplicates`` metric's own grouped aggregation, and, only when no single column is a key, up to
  :data:`MAX_PAIRS` two-column probes through the table ``duplicates`` metric.

Before the scan a *probe* of at most :data:`PROBE_ROWS` rows of the string columns chooses which
formats (email, uuid, ISO date…) and which inferred shape (``^[A-Z]{3}-[0-9]+$``) are worth counting
over every row, so the scan evaluates one or two regexes per string column rather than all of them.
Values that all read as numbers get no format (a column of numbers is never a phone).

A text input (CSV, JSON: ``null_tokens=True``) first gets a **types** pass — one grouped pass
classifying every value of its string columns (a missing-value token such as ``NA``, an int, a
long, a double, a boolean, a date, a timestamp, or text). A string column whose other values all
have one type was made a string by its tokens: it is profiled as that type, and the tokens it holds
are read as NULL in every string column (as the reader does with the draft's
``dataset.null_values``).

Example::

    profile = profile_frame(df, partition_by=["day"], reference_time="2024-05-02T00:00:00Z")
    profile.column("email").conforming   # {'email': 9990}
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.checks import FORMAT_PATTERNS
from airflow_dq_contracts.contract.column_paths import ELEMENTS, FIELD, Step, format_path
from airflow_dq_contracts.contract.model import Check
from airflow_dq_contracts.engine.column_paths import ResolvedPath, resolve
from airflow_dq_contracts.engine.metrics import GroupScope, MeasureContext, Metric, PlanContext, Scope, metric_for
from airflow_dq_contracts.engine.metrics.schema import SCALAR_KINDS
from airflow_dq_contracts.engine.spark_errors import first_line
from airflow_dq_contracts.engine.spark_types import column, count_value, find_field
from airflow_dq_contracts.timeutil import parse_time, utcnow

from .model import ColumnProfile, Profile
from .rules import IDENTIFIER_NAME, KEY_NAME, NULL_TOKENS

#: Rows of the string columns read before the scan to choose the formats worth counting.
PROBE_ROWS = 1000
#: A format (or shape) enters the scan when at least this share of the probe's values match it.
PROBE_SHARE = 0.9
#: Formats tried, most specific first (``phone`` last: any digit string of 2–15 digits matches it).
PROBED_FORMATS = ("uuid", "email", "datetime", "date", "ipv4", "ipv6", "url", "phone")
#: A column whose estimated distinct count is at most this has its values counted exactly.
VALUE_COUNT_LIMIT = 50
#: Partition columns have their periods counted up to this many distinct values.
PARTITION_VALUE_LIMIT = 400
#: Key candidates (grouped pass each) and two-column probes at most.
MAX_KEY_CANDIDATES = 3
MAX_PAIRS = 2
#: Nested fields (struct fields at any depth, array elements) profiled at most, over all columns.
MAX_NESTED_FIELDS = 200
#: HyperLogLog relative standard deviation of the scan's distinct estimates.
HLL_RSD = 0.02
#: A column is a key candidate when its estimate reaches this share of its rows (HLL error margin).
KEY_SHARE = 0.95

_REGEX_SPECIAL = set(".^$*+?()[]{}|\\")

#: Values that read as numbers (a leading zero, a decimal comma and an exponent included): never a format.
NUMBER_TEXT = re.compile(r"[+-]?([0-9]+([.,][0-9]*)?|[.,][0-9]+)([eE][+-]?[0-9]+)?")
#: Typed values in text, as the types pass recognises them (Java regexes). A leading zero keeps an
#: integer text (``007`` is a code, not 7); dates and timestamps must also parse (``try_cast``).
INTEGRAL_TEXT = r"^[+-]?(0|[1-9][0-9]*)$"
DECIMAL_TEXT = r"^[+-]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
BOOLEAN_TEXT = r"(?i)^(true|false)$"
DATE_TEXT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
TIMESTAMP_TEXT = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:[0-9]{2})?$"
)
_TOKEN_CLASS = "null:"
_NUMERIC_ORDER = {"int": 0, "long": 1, "double": 2}


class ProfileError(RuntimeError):
    """The data cannot be profiled (no column, a failing scan); the message says why."""


# ------------------------------------------------------------------------------------ types


def family_of(data_type: T.DataType) -> str:
    """The rules' family of a Spark type (``integral``, ``string``, ``timestamp``…)."""
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integral"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "fractional"
    if isinstance(data_type, T.DecimalType):
        return "decimal"
    if isinstance(data_type, (T.StringType, T.VarcharType, T.CharType)):
        return "string"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    if isinstance(data_type, T.DateType):
        return "date"
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return "timestamp"
    if isinstance(data_type, T.ArrayType):
        return "list"
    if isinstance(data_type, T.MapType):
        return "map"
    return "other"


def declared_type(data_type: T.DataType) -> Any:
    """The contract's column type for a Spark type (a name, or a ``{kind: …}`` mapping).

    >>> declared_type(T.LongType()), declared_type(T.ArrayType(T.StringType()))
    ('long', {'kind': 'list', 'value_type': 'string'})
    """
    for spark_class, name in SCALAR_KINDS.items():
        if isinstance(data_type, spark_class):
            return name
    if isinstance(data_type, T.DecimalType):
        return {"kind": "decimal", "precision": data_type.precision, "scale": data_type.scale}
    if isinstance(data_type, T.ArrayType):
        return {"kind": "list", "value_type": declared_type(data_type.elementType)}
    if isinstance(data_type, T.MapType):
        return {
            "kind": "map",
            "key_type": declared_type(data_type.keyType),
            "value_type": declared_type(data_type.valueType),
        }
    return {"kind": "struct"}


def nested_paths(field: T.StructField) -> list[tuple[str, T.DataType]]:
    """The path columns profiled below a top-level column: (path text, type of one value), outermost first.

    Every field of a struct, at any depth (``address.city``, ``address.geo``, ``address.geo.lat``); the
    fields of the elements of an array of structs (``items[].sku``); the elements of an array of
    anything else (``tags[]``). Nothing below a map (its keys are data) or below an array's arrays.

    >>> address = T.StructType([T.StructField("city", T.StringType()), T.StructField("zip.code", T.StringType())])
    >>> items = T.ArrayType(T.StructType([T.StructField("sku", T.StringType())]))
    >>> [p for p, _ in nested_paths(T.StructField("address", address))]
    ['address.city', 'address.`zip.code`']
    >>> [p for p, _ in nested_paths(T.StructField("items", items))]
    ['items[].sku']
    >>> [(p, t.simpleString()) for p, t in nested_paths(T.StructField("tags", T.ArrayType(T.LongType())))]
    [('tags[]', 'bigint')]
    """
    out: list[tuple[str, T.DataType]] = []

    def walk(steps: tuple[Step, ...], data_type: T.DataType) -> None:
        if isinstance(data_type, T.StructType):
            for child in data_type.fields:
                path = (*steps, Step(FIELD, child.name))
                out.append((format_path(path), child.dataType))
                walk(path, child.dataType)
        elif isinstance(data_type, T.ArrayType):
            path = (*steps, Step(ELEMENTS))
            if isinstance(data_type.elementType, T.StructType):
                walk(path, data_type.elementType)
            else:
                out.append((format_path(path), data_type.elementType))

    walk((Step(FIELD, field.name),), field.dataType)
    return out


# ------------------------------------------------------------------------------------ probe


def shape_pattern(values: Sequence[str]) -> str | None:
    """The one regex shape shared by every value (letters, digits, literal separators), or None.

    A shape must hold a run of digits and something else (a code such as ``ORD-000123``, a phone
    number such as ``(555) 123-4567``): plain words and plain numbers get none, and free text rarely
    has one shape in every value. Run lengths that never vary are fixed (``{6}``).

    >>> shape_pattern(["ORD-000123", "ORD-004711"])
    '^[A-Z]{3}-[0-9]{6}$'
    >>> shape_pattern(["ab-1", "cd-22"])
    '^[a-z]{2}-[0-9]+$'
    >>> shape_pattern(["alice", "bob"]) is None
    True
    """
    shapes: set[tuple[str, ...]] = set()
    lengths: dict[int, set[int]] = {}
    cases: dict[int, set[str]] = {}
    for value in values:
        tokens = re.findall(r"[A-Za-z]+|[0-9]+|.", value, flags=re.DOTALL)
        shape = []
        for index, token in enumerate(tokens):
            if token.isascii() and token.isalpha():
                kind = "L"
                cases.setdefault(index, set()).add("u" if token.isupper() else "l" if token.islower() else "m")
            elif token.isascii() and token.isdigit():
                kind = "D"
            else:
                kind = token
            shape.append(kind)
            lengths.setdefault(index, set()).add(len(token))
        shapes.add(tuple(shape))
        if len(shapes) > 1:
            return None
    if not shapes:
        return None
    (only,) = shapes
    kinds = list(only)
    if "D" not in kinds or len(kinds) < 2:
        return None
    parts = ["^"]
    for index, kind in enumerate(kinds):
        if kind == "L":
            case = cases.get(index, {"m"})
            parts.append("[A-Z]" if case == {"u"} else "[a-z]" if case == {"l"} else "[A-Za-z]")
        elif kind == "D":
            parts.append("[0-9]")
        else:
            parts.append("\\" + kind if kind in _REGEX_SPECIAL else kind)
            continue
        seen = lengths[index]
        parts.append(("" if min(seen) == 1 else f"{{{min(seen)}}}") if len(seen) == 1 else "+")
    parts.append("$")
    return "".join(parts)


def looks_numeric(values: Sequence[str]) -> bool:
    """Whether every value but the missing-value tokens reads as a number (and one at least does).

    >>> looks_numeric(["3750", "NA", "4250.5"]), looks_numeric(["NA"]), looks_numeric(["+1 555 0100"])
    (True, False, False)
    """
    numbers = [value for value in values if value not in NULL_TOKENS]
    return bool(numbers) and all(NUMBER_TEXT.fullmatch(value) for value in numbers)


def _value_of(name: str, paths: Mapping[str, ResolvedPath] | None) -> Column:
    """The value per row of a profiled column: a top-level column, or a nested scalar path (``address.city``)."""
    return paths[name].value if paths and name in paths else column(name)


def _probe(df: DataFrame, names: list[str], paths: Mapping[str, ResolvedPath] | None = None) -> dict[str, list[str]]:
    """Candidates per string column: format names and ``pattern:<regex>`` shapes, from ≤ PROBE_ROWS rows."""
    if not names:
        return {}
    rows = df.select(*[_value_of(n, paths) for n in names]).limit(PROBE_ROWS).collect()
    candidates: dict[str, list[str]] = {}
    for index, name in enumerate(names):
        values = [row[index] for row in rows if row[index] is not None]
        if not values:
            continue
        if looks_numeric(values):
            candidates[name] = []  # a column of numbers: never a phone, a date or a code shape
            continue
        found: list[str] = []
        for fmt in PROBED_FORMATS:
            regex = re.compile(FORMAT_PATTERNS[fmt])
            if sum(1 for v in values if regex.search(v)) >= PROBE_SHARE * len(values):
                found.append(fmt)
                break  # the most specific format that fits
        if not found:
            shape = shape_pattern(values)
            if shape is not None:
                found.append(f"pattern:{shape}")
        candidates[name] = found
    return candidates


# ------------------------------------------------------------------------------------ text types


def text_type(kinds: Collection[str]) -> str | None:
    """The one type a string column's values (tokens aside) have, or None when it stays text.

    Numbers widen (``int`` < ``long`` < ``double``); dates with timestamps are timestamps.

    >>> text_type({"int", "double"}), text_type({"date"}), text_type({"date", "timestamp"})
    ('double', 'date', 'timestamp')
    >>> text_type({"int", "text"}) is None, text_type(set()) is None, text_type({"int", "boolean"}) is None
    (True, True, True)
    """
    kinds = set(kinds)
    if not kinds or "text" in kinds:
        return None
    if kinds <= set(_NUMERIC_ORDER):
        return max(kinds, key=_NUMERIC_ORDER.__getitem__)
    if kinds <= {"date", "timestamp"}:
        return "timestamp" if "timestamp" in kinds else "date"
    if kinds == {"boolean"}:
        return "boolean"
    return None


def _value_class(value: Column) -> Column:
    """What one text value is: ``null:<token>``, ``int``, ``long``, ``double``, ``boolean``, ``date``, ``timestamp``, ``text``."""
    digits = F.length(F.regexp_replace(value, "[^0-9]", ""))
    integral = value.rlike(INTEGRAL_TEXT)
    return (
        F.when(value.isNull(), F.lit(None))
        .when(value.isin(*NULL_TOKENS), F.concat(F.lit(_TOKEN_CLASS), value))
        .when(integral & (digits <= 9), F.lit("int"))
        .when(integral & (digits <= 18), F.lit("long"))
        .when(value.rlike(DECIMAL_TEXT), F.lit("double"))
        .when(value.rlike(BOOLEAN_TEXT), F.lit("boolean"))
        .when(value.rlike(DATE_TEXT) & value.try_cast("date").isNotNull(), F.lit("date"))
        .when(value.rlike(TIMESTAMP_TEXT) & value.try_cast("timestamp").isNotNull(), F.lit("timestamp"))
        .otherwise(F.lit("text"))
    )


def read_text_types(
    df: DataFrame, names: list[str]
) -> tuple[DataFrame, list[str], dict[str, str], dict[str, dict[str, int]]]:
    """The types pass over the string columns ``names`` (see the module docstring).

    Returns the frame the profile reads (retyped columns cast, the tokens NULL in every string
    column), the tokens read as NULL (most frequent first), column → the type it is read as, and
    column → token → values read as NULL.
    """
    classes = _grouped_counts(df, names, _value_class)
    retyped: dict[str, str] = {}
    chosen: dict[str, int] = {}
    for name in names:
        kinds = {kind for kind in classes[name] if not kind.startswith(_TOKEN_CLASS)}
        target = text_type(kinds)
        if target is None:
            continue
        retyped[name] = target
        for kind, count in classes[name].items():
            if kind.startswith(_TOKEN_CLASS):
                token = kind[len(_TOKEN_CLASS) :]
                chosen[token] = chosen.get(token, 0) + count
    tokens = sorted(chosen, key=lambda token: (-chosen[token], token))
    token_nulls: dict[str, dict[str, int]] = {}
    for name in names:
        found = {t: classes[name][_TOKEN_CLASS + t] for t in tokens if _TOKEN_CLASS + t in classes[name]}
        if found:
            token_nulls[name] = found
    if not retyped and not tokens:
        return df, tokens, retyped, token_nulls
    selected: list[Column] = []
    for field in df.schema.fields:
        value = column(field.name)
        if field.name in names:
            if tokens:
                value = F.when(value.isin(*tokens), F.lit(None)).otherwise(value)
            if field.name in retyped:
                value = value.try_cast(retyped[field.name])
            value = value.alias(field.name)
        selected.append(value)
    return df.select(*selected), tokens, retyped, token_nulls


# ------------------------------------------------------------------------------------ scan


def _profiling_checks(
    fields: list[T.StructField], candidates: dict[str, list[str]], elements: Collection[str] = ()
) -> dict[str, list[tuple[str, Check]]]:
    """Column → [(what, check)] of the private profiling contract (checks without validators).

    On an elements path (``elements``: ``items[].sku``, ``tags[]``) the min/max and lengths reduce
    over every value; a value that is itself an array or a map gets no length (its array is the unit).
    """
    columns = []
    for field in fields:
        family = family_of(field.dataType)
        checks: list[dict[str, Any]] = [{"name": "missing", "type": "missing"}]
        if family in ("integral", "fractional", "decimal", "date", "timestamp"):
            checks += [{"name": "min", "type": "min"}, {"name": "max", "type": "max"}]
        if family == "string" or (family in ("list", "map") and field.name not in elements):
            checks += [{"name": "min_length", "type": "min_length"}, {"name": "max_length", "type": "max_length"}]
        for index, candidate in enumerate(candidates.get(field.name, [])):
            spec: dict[str, Any] = {"name": f"conform {index}", "type": "pattern", "return": "count"}
            if candidate.startswith("pattern:"):
                spec["pattern"] = candidate[len("pattern:") :]
            else:
                spec["format"] = candidate
            checks.append(spec)
        columns.append({"name": field.name, "checks": checks})
    contract = load_contract({"name": "suggest-profile", "columns": columns})
    out: dict[str, list[tuple[str, Check]]] = {}
    for declared in contract.columns:
        whats = []
        extra = iter(candidates.get(declared.name, []))
        for check in declared.checks:
            what = next(extra) if check.type == "pattern" else check.type
            whats.append((what, check))
        out[declared.name] = whats
    return out


def _run_metrics(
    df: DataFrame,
    fields: list[T.StructField],
    checks: dict[str, list[tuple[str, Check]]],
    reference: dt.datetime,
    paths: Mapping[str, ResolvedPath] | None = None,
) -> tuple[int, dict[str, dict[str, Any]], dict[str, int | None]]:
    """The shared scan: (rows, column → what → metric value, column → HLL estimate).

    A nested path (``paths``) also measures ``absent``: rows with no value of it and no NULL — a
    NULL parent (``address`` for ``address.city``), or a NULL or empty array for an elements path.
    """
    paths = paths or {}
    ctx = PlanContext(df.schema)
    exprs: list[Column] = [F.count(F.lit(1))]
    planned: list[tuple[str, str, Metric, int, int]] = []
    for field in fields:
        for what, check in checks[field.name]:
            metric = metric_for(check)
            if metric.precondition(ctx):
                continue
            contributed = metric.aggregations(Scope(None))
            planned.append((field.name, what, metric, len(exprs), len(exprs) + len(contributed)))
            exprs.extend(contributed)
    estimates: dict[str, int] = {}
    absent: dict[str, int] = {}
    for field in fields:
        path = paths.get(field.name)
        if path is not None:
            nothing = F.coalesce(F.size(path.values), F.lit(0)) <= 0 if path.elements else ~path.present
            absent[field.name] = len(exprs)
            exprs.append(F.count(F.when(nothing, F.lit(1))))
        if family_of(field.dataType) not in ("map", "other", "list") and not (path and path.elements):
            estimates[field.name] = len(exprs)
            exprs.append(F.approx_count_distinct(_value_of(field.name, paths), HLL_RSD))
    try:
        row = df.agg(*exprs).collect()[0]
    except Exception as exc:  # noqa: BLE001 - the data cannot be scanned: one readable reason
        raise ProfileError(f"the profiling scan failed: {first_line(exc)}") from None
    values = list(row)
    rows = count_value(values[0])
    measured: dict[str, dict[str, Any]] = {field.name: {} for field in fields}
    mctx = MeasureContext(rows, reference)
    for name, what, metric, lo, hi in planned:
        outcome = metric.measure(values[lo:hi], [], mctx)
        measured[name][what] = None if outcome.error else outcome.metric_value
    for name, index in absent.items():
        measured[name]["absent"] = count_value(values[index])
    distinct: dict[str, int | None] = {name: count_value(values[i]) for name, i in estimates.items()}
    return rows, measured, distinct


# ------------------------------------------------------------------------------------ grouped passes


def _value_counts(
    df: DataFrame, names: list[str], paths: Mapping[str, ResolvedPath] | None = None
) -> dict[str, dict[str, int]]:
    """ONE grouped pass: exact value → rows for each of ``names`` (their values as text)."""
    return _grouped_counts(df, names, lambda value: value.cast("string"), paths)


def _grouped_counts(
    df: DataFrame,
    names: list[str],
    key: Callable[[Column], Column],
    paths: Mapping[str, ResolvedPath] | None = None,
) -> dict[str, dict[str, int]]:
    """ONE grouped pass over ``names`` together: column → ``key(value)`` → rows (NULL keys left out)."""
    if not names:
        return {}
    pairs = F.explode(
        F.array(*[F.struct(F.lit(i).alias("c"), key(_value_of(n, paths)).alias("v")) for i, n in enumerate(names)])
    ).alias("p")
    grouped = df.select(pairs).where(F.col("p.v").isNotNull()).groupBy("p.c", "p.v").count()
    counts: dict[str, dict[str, int]] = {name: {} for name in names}
    for row in grouped.collect():
        counts[names[row[0]]][row[1]] = int(row[2])
    return counts


def _duplicates(df: DataFrame, names: Sequence[str]) -> int:
    """Exact duplicates of a key set, through the ``duplicates`` metric's own grouped aggregation."""
    if len(names) == 1:
        spec = {"name": "k", "columns": [{"name": names[0], "checks": [{"name": "d", "type": "duplicates"}]}]}
        check = load_contract({"name": "suggest-key", **spec}).columns[0].checks[0]
    else:
        spec = {"name": "k", "checks": [{"name": "d", "type": "duplicates", "columns": list(names)}]}
        check = load_contract({"name": "suggest-key", **spec}).checks[0]
    metric = metric_for(check)
    problem = metric.precondition(PlanContext(df.schema))
    if problem:
        raise ProfileError(problem)
    keys = metric.group_keys() or []
    grouped = df.groupBy(*[k.expression.alias(f"_dq_k{i}") for i, k in enumerate(keys)]).agg(
        F.count(F.lit(1)).alias("_dq_n")
    )
    scope = GroupScope([F.col(f"_dq_k{i}") for i in range(len(keys))], F.col("_dq_n"))
    row = grouped.agg(*metric.group_aggregations(scope)).collect()[0]
    return count_value(row[0]) - count_value(row[1])


def _key_candidates(profiles: list[ColumnProfile], rows: int) -> list[ColumnProfile]:
    """Columns worth an exact duplicate count: no NULL, integral or string, nearly all values distinct."""
    found = [
        p
        for p in profiles
        if p.family in ("integral", "string")
        and p.path is None
        and p.nulls == 0
        and rows > 1
        and p.approx_distinct is not None
        and p.approx_distinct >= KEY_SHARE * rows
    ]
    found.sort(
        key=lambda p: (not IDENTIFIER_NAME.search(p.name), not KEY_NAME.search(p.name), -(p.approx_distinct or 0))
    )
    return found[:MAX_KEY_CANDIDATES]


def _pair_candidates(profiles: list[ColumnProfile], rows: int) -> list[tuple[str, str]]:
    """Two-column probes: non-NULL, groupable, non-float columns whose distinct product can reach the rows.

    Only products well below ``rows²/10`` are tried: a pair whose combinations are that rare could
    be free of duplicates by chance (the birthday bound), which is no evidence of a key.
    """
    usable = [
        p
        for p in profiles
        if p.family in ("integral", "string", "date", "boolean")
        and p.path is None
        and p.nulls == 0
        and p.approx_distinct
        and 1 < p.approx_distinct < KEY_SHARE * rows
    ]
    pairs = []
    for i, left in enumerate(usable):
        for right in usable[i + 1 :]:
            product = (left.approx_distinct or 0) * (right.approx_distinct or 0)
            if rows <= product < rows * rows / 10:
                pairs.append((product, left.name, right.name))
    pairs.sort()
    return [(a, b) for _, a, b in pairs[:MAX_PAIRS]]


# ------------------------------------------------------------------------------------ the run


def profile_frame(
    df: DataFrame,
    *,
    sample: float | None = None,
    partition_by: Sequence[str] = (),
    reference_time: dt.datetime | str | None = None,
    seed: int = 20240501,
    null_tokens: bool = False,
) -> Profile:
    """Profile ``df``: one aggregate scan plus the grouped passes it needs (see the module docstring).

    ``sample`` (0 < f < 1) profiles a Bernoulli sample of that fraction (seeded); the default is
    exact. ``partition_by`` names partition columns whose periods are counted. ``reference_time``
    (default: now, UTC) is what the freshness evidence is measured against. ``null_tokens`` (a
    text input) runs the types pass first: string columns that hold one type and missing-value
    tokens are profiled as that type, the tokens as NULL (:attr:`Profile.null_tokens`).
    """
    if sample is not None and not 0 < sample <= 1:
        raise ValueError(f"sample must be a fraction in (0, 1], got {sample!r}")
    given = reference_time is not None
    reference = parse_time(reference_time) if given else utcnow()
    assert reference is not None
    case_sensitive = False
    fields = list(df.schema.fields)
    if not fields:
        raise ProfileError("the data has no column to profile")
    partitions = []
    for name in partition_by:
        found = find_field(df.schema, name, case_sensitive)
        if found is None:
            raise ProfileError(f"partition column {name!r} is not in the data")
        partitions.append(found.name)
    frame = df.sample(fraction=sample, seed=seed) if sample and sample < 1 else df
    passes: list[tuple[str, float]] = []

    tokens: list[str] = []
    read_from: dict[str, str] = {}
    token_nulls: dict[str, dict[str, int]] = {}
    strings = [f.name for f in fields if family_of(f.dataType) == "string"]
    if null_tokens and strings:
        began = time.perf_counter()
        try:
            frame, tokens, retyped, token_nulls = read_text_types(frame, strings)
        except Exception as exc:  # noqa: BLE001 - the data cannot be scanned: one readable reason
            raise ProfileError(f"the types pass failed: {first_line(exc)}") from None
        passes.append((f"types [{len(strings)} string columns]", time.perf_counter() - began))
        read_from = {name: "string" for name in retyped}
        fields = list(frame.schema.fields)

    # Nested fields are profiled as path columns, each right after its top-level column (same scan).
    paths: dict[str, ResolvedPath] = {}
    profiled: list[T.StructField] = []
    for field in fields:
        profiled.append(field)
        for text, _ in nested_paths(field):
            nested = resolve(frame.schema, text, case_sensitive)
            if len(paths) < MAX_NESTED_FIELDS and not isinstance(nested, str) and nested.nested:
                paths[nested.text] = nested
                profiled.append(T.StructField(nested.text, nested.data_type, nested.nullable))
    elements = {name for name, path in paths.items() if path.elements}
    fields = profiled
    probed = [f.name for f in fields if family_of(f.dataType) == "string" and f.name not in elements]

    began = time.perf_counter()
    candidates = _probe(frame, probed, paths)
    passes.append((f"probe (≤ {PROBE_ROWS:,} rows of {len(probed)} string columns)", time.perf_counter() - began))

    began = time.perf_counter()
    checks = _profiling_checks(fields, candidates, elements)
    rows, measured, distinct = _run_metrics(frame, fields, checks, reference, paths)
    passes.append(("scan", time.perf_counter() - began))

    profiles: list[ColumnProfile] = []
    for field in fields:
        values = measured[field.name]
        nulls = count_value(values.get("missing") or 0)
        absent = count_value(values.get("absent") or 0)
        profiles.append(
            ColumnProfile(
                name=field.name,
                spark_type=field.dataType.simpleString(),
                declared_type=declared_type(field.dataType),
                family=family_of(field.dataType),
                nulls=nulls,
                non_null=rows - nulls - absent,
                absent=absent,
                path=("elements" if field.name in elements else "field") if field.name in paths else None,
                approx_distinct=distinct.get(field.name),
                minimum=values.get("min"),
                maximum=values.get("max"),
                min_length=None if values.get("min_length") is None else int(values["min_length"]),
                max_length=None if values.get("max_length") is None else int(values["max_length"]),
                conforming={
                    what: count_value(value)
                    for what, value in values.items()
                    if what in FORMAT_PATTERNS or what.startswith("pattern:")
                },
                read_from=read_from.get(field.name),
                token_nulls=token_nulls.get(field.name, {}),
            )
        )

    began = time.perf_counter()
    counted = [
        p.name
        for p in profiles
        if p.approx_distinct is not None
        and (
            (p.family == "string" and p.approx_distinct <= VALUE_COUNT_LIMIT)
            or (p.name in partitions and p.approx_distinct <= PARTITION_VALUE_LIMIT)
        )
    ]
    for name, counts in _value_counts(frame, counted, paths).items():
        by_name = {p.name: p for p in profiles}
        by_name[name].values = counts
    if counted:
        passes.append((f"values [{', '.join(counted)}]", time.perf_counter() - began))

    for candidate in _key_candidates(profiles, rows):
        began = time.perf_counter()
        candidate.duplicates = _duplicates(frame, [candidate.name])
        passes.append((f"key [{candidate.name}]", time.perf_counter() - began))
    pair_duplicates: dict[tuple[str, str], int] = {}
    if not any(p.duplicates == 0 for p in profiles):
        for pair in _pair_candidates(profiles, rows):
            began = time.perf_counter()
            pair_duplicates[pair] = _duplicates(frame, pair)
            passes.append((f"key [{', '.join(pair)}]", time.perf_counter() - began))
    return Profile(
        rows=rows,
        columns=profiles,
        reference_time=reference,
        reference_given=given,
        sample=sample if sample and sample < 1 else None,
        pair_duplicates=pair_duplicates,
        partition_by=partitions,
        null_tokens=tokens,
        passes=passes,
    )
