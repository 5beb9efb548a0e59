"""ODCS ``schema[].properties[]`` → contract columns: types, ``required``/``unique``/``primaryKey`` and
``logicalTypeOptions`` as constraints and checks — exactly, or refused with a location.

* the column is the property's ``physicalName`` (what the data calls it), else its ``name``;
* the type is the ``physicalType`` when it names a Spark type (``varchar(18)`` → string, ``bigint`` →
  long, ``decimal(10,2)``), else the ``logicalType``; ``number`` (and ``time``) name no single Spark
  type, so the column is declared without one (present, any type) and a note says so;
* ``required: true`` → ``nullable: false``; ``unique`` / a single ``primaryKey`` → the column's
  constraints; a composite key (several ``primaryKey``, ordered by ``primaryKeyPosition``) → a
  table-level ``duplicates`` check on the key plus ``nullable: false`` on each part;
* ``logicalTypeOptions``: ``minimum``/``maximum`` (numbers → ``min``/``max`` checks, tolerance 0;
  ``exclusive*`` on integers shift by one, otherwise — and for dates and timestamps — an exact
  ``row_condition``), ``minLength``/``maxLength``/``minItems``/``maxItems`` → length checks,
  ``pattern`` → the ``pattern`` constraint (search semantics, as JSON Schema), ``format`` → a named
  format of ours on strings (on dates, times and numbers it describes a rendering: documentation).

Example::

    >>> from airflow_dq_contracts.contract.yamlsrc import SourceMap
    >>> from .common import Found
    >>> column, table_checks, notes = compile_property(
    ...     Found(SourceMap("o.yaml")), {"name": "id", "physicalType": "bigint", "required": True}, ("p",))
    >>> column
    {'name': 'id', 'type': 'long', 'nullable': False}
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..checks import FORMAT_PATTERNS
from ..column_paths import quote_name
from ..sqltext import quote_identifier_if_needed, spark_literal
from ..yamlsrc import Path
from ..yamlsrc import format_path as _where
from .common import Found, exact, plain

ELEMENT_KEYS: tuple[str, ...] = (
    "id",
    "name",
    "physicalType",
    "description",
    "businessName",
    "authoritativeDefinitions",
    "tags",
    "customProperties",
)
PROPERTY_KEYS = ELEMENT_KEYS + (
    "classification",
    "criticalDataElement",
    "encryptedName",
    "examples",
    "logicalType",
    "logicalTypeOptions",
    "partitionKeyPosition",
    "partitioned",
    "physicalName",
    "primaryKey",
    "primaryKeyPosition",
    "quality",
    "relationships",
    "required",
    "transformDescription",
    "transformLogic",
    "transformSourceObjects",
    "unique",
    "properties",
    "items",
    "enum",  # v3.2
    "deprecated",  # v3.2
    "semanticType",  # v3.2
    "map",  # v3.2: the key and value types of a map (documentation beyond the column's type)
)
OPTION_KEYS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "timezone",
    "defaultTimezone",
)
LOGICAL_TYPES = {
    "string": "string",
    "date": "date",
    "timestamp": "timestamp",
    "integer": "long",
    "boolean": "boolean",
    "array": "list",
    "object": "struct",
    "map": "map",
    "number": None,
    "time": None,
}
# physicalType names (lower case, without a length) that name one Spark type exactly.
PHYSICAL_TYPES = {
    **dict.fromkeys(("string", "varchar", "char", "nvarchar", "nchar", "text", "character varying", "uuid"), "string"),
    **dict.fromkeys(("json", "jsonb", "clob", "character"), "string"),
    **dict.fromkeys(("int", "integer", "int4", "int32"), "int"),
    **dict.fromkeys(("bigint", "long", "int64"), "long"),
    **dict.fromkeys(("smallint", "short", "int2", "int16"), "short"),
    **dict.fromkeys(("tinyint", "byte"), "byte"),
    **dict.fromkeys(("float", "real", "float4", "float32"), "float"),
    **dict.fromkeys(("double", "double precision", "float8", "float64"), "double"),
    **dict.fromkeys(("boolean", "bool"), "boolean"),
    "date": "date",
    **dict.fromkeys(("timestamp", "datetime", "timestamp_ltz", "timestamptz", "timestamp with time zone"), "timestamp"),
    **dict.fromkeys(("timestamp_ntz", "timestamp without time zone"), "timestamp_ntz"),
    **dict.fromkeys(("binary", "bytes", "bytea", "varbinary"), "binary"),
    **dict.fromkeys(("decimal", "numeric"), "decimal"),
    **dict.fromkeys(("array", "list"), "list"),
    "map": "map",
    "struct": "struct",
}
_SIZED = re.compile(r"^([a-z_ ]+?)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")
INTEGRAL = ("byte", "short", "int", "long")
NUMERIC = INTEGRAL + ("float", "double", "decimal")
TEMPORAL = {"date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ"}


def column_name(prop: dict) -> str | None:
    """What the data calls the property: ``physicalName``, else ``name``."""
    for key in ("physicalName", "name"):
        if isinstance(prop.get(key), str) and prop[key].strip():
            return str(prop[key]).strip()
    return None


def column_type(found: Found, prop: dict, path: Path, notes: list[str]) -> str | None:
    """The contract type of a property (see module docs); None: declared without a type."""
    physical = prop.get("physicalType")
    if isinstance(physical, str) and physical.strip():
        text = physical.strip().lower()
        sized = _SIZED.match(text)
        base = sized.group(1).strip() if sized else text
        kind = PHYSICAL_TYPES.get(base)
        if kind == "decimal" and sized:
            return f"decimal({sized.group(2)},{sized.group(3) or 0})"
        if kind is not None and (not sized or kind == "string"):
            return kind
    logical = prop.get("logicalType")
    if logical is None:
        return None
    if logical not in LOGICAL_TYPES:
        found.refuse(path + ("logicalType",), f"unknown logicalType {logical!r}; known: {', '.join(LOGICAL_TYPES)}")
        return None
    kind = LOGICAL_TYPES[logical]
    if kind is None:
        notes.append(f"{_where(path)}: logicalType {logical} names no single Spark type: declared without one")
    return kind


def compile_property(
    found: Found, prop: dict, path: Path, name: str | None = None
) -> tuple[dict[str, Any], list[dict], list[str]]:
    """``(column, table-level checks, notes)`` of one property (its quality rules are compiled elsewhere).

    ``name``: the column's name when it is not the property's own (a nested property's path).
    """
    notes: list[str] = []
    found.keys(prop, PROPERTY_KEYS, path, "a property")
    name = name or column_name(prop) or "?"
    column: dict[str, Any] = {"name": name}
    kind = column_type(found, prop, path, notes)
    if kind is not None:
        column["type"] = kind
    for key, target in (("required", "nullable"), ("unique", "unique")):
        value = prop.get(key)
        if value is not None and not isinstance(value, bool):
            found.refuse(path + (key,), f"'{key}' must be true or false, got {value!r}")
        elif value:
            column[target] = target != "nullable"
    if prop.get("deprecated") is True:
        column["deprecated"] = True  # on its way out: may be absent, its constraints are not compiled
    if "enum" in prop:
        values = _enum_values(found, prop["enum"], path + ("enum",))
        if values:
            column["allowed_values"] = values
    description = prop.get("description") if isinstance(prop.get("description"), str) else None
    business = prop.get("businessName") if isinstance(prop.get("businessName"), str) else None
    text = " — ".join(part.strip() for part in (business, description) if part and part.strip())
    if text:
        column["description"] = text
    tags = [t for t in prop.get("tags") or [] if isinstance(t, str) and t.strip()]
    if tags:
        column["tags"] = tags
    if prop.get("properties") and kind not in ("struct", "list", None):
        found.refuse(path + ("properties",), "nested properties on a property that is not an object or array")
    _nested(found, prop.get("map"), path + ("map",))
    table_checks = _options(found, prop, path, column, kind, notes)
    return column, table_checks, notes


NESTED_CONSTRAINTS = ("logicalTypeOptions", "quality", "enum", "unique", "primaryKey")
#: what a nested property (``properties`` of an object, an array's ``items``) cannot say: a key is a table's
NESTED_REFUSED = ("primaryKey",)


def nested_columns(
    found: Found, prop: dict, path: Path, parent: str
) -> list[tuple[dict, list[dict], list[str], Path, dict]]:
    """The columns of a property's nested ``properties`` / ``items``, named by path (docs/contracts.md "Nested fields").

    An object's property ``city`` under ``address`` is the column ``address.city``; an array's
    ``items`` is ``tags[]`` and the properties of its items ``items[].sku``. Each is compiled as a
    property (type, ``required`` → ``nullable: false``, ``unique``, ``logicalTypeOptions``, ``enum``),
    deeper levels recursively; a ``primaryKey`` inside is refused. Returns ``(column, table-level
    checks, notes, path, property)`` per nested column, parents before children (the caller compiles
    the property's ``quality`` rules as for a top-level property).

    >>> from airflow_dq_contracts.contract.yamlsrc import SourceMap
    >>> prop = {"name": "items", "logicalType": "array", "items": {"logicalType": "object", "properties": [
    ...     {"name": "sku", "logicalType": "string", "required": True}]}}
    >>> [c for c, _, _, _, _ in nested_columns(Found(SourceMap("o.yaml")), prop, ("p",), "items")]
    [{'name': 'items[]', 'type': 'struct'}, {'name': 'items[].sku', 'type': 'string', 'nullable': False}]
    """
    out: list[tuple[dict, list[dict], list[str], Path, dict]] = []
    kids = prop.get("properties")
    if kids is not None and not isinstance(kids, list):
        found.refuse(path + ("properties",), "'properties' must be a list")
        kids = []
    for index, kid in enumerate(kids or []):
        where = path + ("properties", index)
        if not isinstance(kid, dict) or column_name(kid) is None:
            found.refuse(where, "a property needs 'name'")
            continue
        out += _nested_property(found, kid, where, f"{parent}.{quote_name(column_name(kid) or '')}")
    items = prop.get("items")
    if isinstance(items, dict):
        out += _nested_property(found, items, path + ("items",), f"{parent}[]")
    elif items is not None:
        found.refuse(path + ("items",), "'items' must be a mapping (the property of every element)")
    return out


def _nested_property(
    found: Found, prop: dict, path: Path, name: str
) -> list[tuple[dict, list[dict], list[str], Path, dict]]:
    for key in NESTED_REFUSED:
        if prop.get(key) not in (None, False, [], {}):
            found.refuse(
                path + (key,),
                f"'{key}' inside a nested field: a key is made of top-level columns",
            )
    kept = {k: v for k, v in prop.items() if k not in NESTED_REFUSED}
    column, checks, notes = compile_property(found, kept, path, name=name)
    if checks:  # exclusive bounds compile to a SQL row_condition over the column: not over a nested path
        found.refuse(
            path + ("logicalTypeOptions",), f"exclusive bounds inside a nested field ({name}) cannot be checked"
        )
    return [(column, checks, notes, path, prop), *nested_columns(found, prop, path, name)]


def _nested(found: Found, value: Any, path: Path) -> None:
    """Refuse constraints inside a nested field, an array's items or a map's key/value: checks read columns."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            _nested(found, item, path + (index,))
    elif isinstance(value, dict):
        for key, item in value.items():
            constraint = key in NESTED_CONSTRAINTS or (key == "required" and item is True)
            if constraint and item not in (None, False, [], {}):
                found.refuse(path + (key,), f"'{key}' inside a nested field cannot be checked (checks read columns)")
            elif isinstance(item, (dict, list)):
                _nested(found, item, path + (key,))


def _enum_values(found: Found, raw: Any, path: Path) -> list[Any]:
    """The values of a v3.2 ``enum`` (items ``{value, label, …}`` or plain scalars) → ``allowed_values``."""
    if not isinstance(raw, list) or not raw:
        found.refuse(path, f"'enum' must be a non-empty list, got {raw!r}")
        return []
    values = []
    for index, item in enumerate(raw):
        value = item.get("value") if isinstance(item, dict) else item
        if value is None or isinstance(value, (list, dict)):
            found.refuse(path + (index,), f"an enum item needs a scalar 'value', got {item!r}")
            return []
        values.append(value)
    return values


def _options(found: Found, prop: dict, path: Path, column: dict, kind: str | None, notes: list[str]) -> list[dict]:
    raw = prop.get("logicalTypeOptions")
    if raw is None:
        return []
    where = path + ("logicalTypeOptions",)
    if not isinstance(raw, dict):
        found.refuse(where, f"'logicalTypeOptions' must be a mapping, got {raw!r}")
        return []
    found.keys(raw, OPTION_KEYS, where, "logicalTypeOptions (others cannot be checked exactly)")
    logical = prop.get("logicalType")
    checks: list[dict[str, Any]] = column.setdefault("checks", [])
    table: list[dict] = []
    name = column["name"]
    for key, check_type, bound in (
        ("minLength", "min_length", "min"),
        ("maxLength", "max_length", "max"),
        ("minItems", "min_length", "min"),
        ("maxItems", "max_length", "max"),
    ):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            found.refuse(where + (key,), f"'{key}' must be a non-negative integer, got {value!r}")
        elif not (key == "minItems" and value == 0 or key == "minLength" and value == 0):  # 0: always true
            checks.append({"name": f"{name} {key} {value}", "type": check_type, bound: value})
    if "pattern" in raw:
        if isinstance(raw["pattern"], str) and raw["pattern"]:
            column["pattern"] = raw["pattern"]
        else:
            found.refuse(where + ("pattern",), f"'pattern' must be a regular expression, got {raw['pattern']!r}")
    if "format" in raw:
        fmt = raw["format"]
        if logical in (None, "string") and kind in (None, "string"):
            if fmt in FORMAT_PATTERNS and "pattern" in column:  # both must hold: the format as its own check
                checks.append({"name": f"{name} format {fmt}", "type": "pattern", "format": fmt})
            elif fmt in FORMAT_PATTERNS:
                column["format"] = fmt
            else:
                found.refuse(
                    where + ("format",), f"string format {fmt!r} has no check here; known: {', '.join(FORMAT_PATTERNS)}"
                )
        else:
            notes.append(f"{_where(where)}.format {fmt!r} describes how a {logical} is written: documentation")
    for key in ("timezone", "defaultTimezone"):
        if key in raw:
            notes.append(f"{_where(where)}.{key} is documentation (Spark stores instants)")
    for low in (True, False):
        table += _bound(found, raw, where, name, kind, low, checks)
    if not checks:
        column.pop("checks")
    return table


def _bound(found: Found, raw: dict, where: Path, name: str, kind: str | None, low: bool, checks: list) -> list[dict]:
    """The ``minimum``/``exclusiveMinimum`` (``low``) or maximum side, as one check."""
    inclusive_key, exclusive_key = ("minimum", "exclusiveMinimum") if low else ("maximum", "exclusiveMaximum")
    value, exclusive, key = raw.get(inclusive_key), False, inclusive_key
    flag = raw.get(exclusive_key)
    if isinstance(flag, bool):  # JSON Schema draft 4: a flag on minimum/maximum
        exclusive = flag
    elif flag is not None:
        if value is not None:
            found.refuse(where + (exclusive_key,), f"give either '{inclusive_key}' or '{exclusive_key}'")
            return []
        value, exclusive, key = flag, True, exclusive_key
    if value is None:
        return []
    number = exact(value)
    col = quote_identifier_if_needed(name)
    op = (">" if exclusive else ">=") if low else ("<" if exclusive else "<=")
    label = f"{name} {key} {value}"
    if number is not None and kind not in TEMPORAL and kind not in ("string", "boolean", "binary"):
        if not exclusive:
            checks.append({"name": label, "type": "min" if low else "max", "min" if low else "max": plain(number)})
            checks[-1]["tolerance"] = 0
            return []
        if kind in INTEGRAL:  # an integer is > v exactly when ≥ floor(v) + 1
            shifted = math.floor(number) + 1 if low else math.ceil(number) - 1
            checks.append({"name": label, "type": "min" if low else "max", "min" if low else "max": shifted})
            return []
        condition = f"{col} {op} {plain(number)}"
    elif isinstance(value, str) and kind in TEMPORAL:
        condition = f"{col} {op} {TEMPORAL[kind]} {spark_literal(value)}"
    else:
        found.refuse(
            where + (key,),
            f"a {key} of {value!r} on a {kind or 'untyped'} property has no exact check "
            "(numbers bound numeric properties; dates and timestamps take ISO text)",
        )
        return []
    return [{"name": label, "type": "row_condition", "condition": condition, "null_passes": True}]
