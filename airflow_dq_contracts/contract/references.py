"""``references:`` — named datasets a check may compare against — and the rules that tie checks to them.

Plain Python (no Spark): the loader calls :func:`parse_references` for the top-level key and
:func:`check_reference_use` once the checks are built, so an unknown alias, a ``{placeholder}`` of a
``sql`` query that names nothing, or a statement that is not a query is a located contract error.

Example::

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "orders", "references": {"customers": {"path": "/dim/c", "format": "parquet"}},
    ...                    "checks": [{"name": "known customer", "type": "referential",
    ...                                "columns": ["customer_id"], "reference": "customers"}]})
    >>> c.references["customers"].format
    'parquet'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from .model import DATASET_FORMATS, Check, ColumnType, Contract, Reference
from .parsing import read_null_values
from .queries import DATASET_PLACEHOLDER, placeholders

REFERENCE_KEYS = ("table", "path", "format", "filter", "options", "null_values")
_ALIAS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Add = Callable[[tuple, str], None]


def parse_references(data: Any, add: Add, similar: Callable[[str, Iterable[str]], str]) -> dict[str, Reference]:
    """The ``references:`` mapping (alias → ``{path, format} | {table}``, optional ``filter``, ``options``)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        add((), f"'references' must be a mapping of name → {{path, format}} or {{table}}, got {type(data).__name__}")
        return {}
    out: dict[str, Reference] = {}
    for alias, raw in data.items():
        where: tuple = (alias,)
        if not isinstance(alias, str) or not _ALIAS.match(alias):
            add(
                where,
                f"reference name {alias!r} must be an identifier (letters, digits, _), as it is "
                "used as {name} in sql queries",
            )
            continue
        if alias == DATASET_PLACEHOLDER:
            add(where, "'dataset' is reserved: {dataset} names the checked dataset in sql queries")
            continue
        if isinstance(raw, str) and raw.strip():
            raw = {"table": raw}
        if not isinstance(raw, dict):
            add(where, f"a reference is {{path: …, format: …}} or {{table: …}}, got {raw!r}")
            continue
        for key in raw:
            if key not in REFERENCE_KEYS and not str(key).startswith("x-"):
                add(
                    where + (key,),
                    f"unknown key {key!r} in a reference{similar(str(key), REFERENCE_KEYS)}; "
                    f"allowed: {', '.join(REFERENCE_KEYS)}",
                )
        values: dict[str, str | None] = {}
        for key in ("table", "path", "filter"):
            value = raw.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                add(where + (key,), f"'{key}' must be a non-empty string, got {value!r}")
                value = None
            values[key] = value
        if values["table"] and values["path"]:
            add(where, "give either 'table' or 'path', not both")
        elif not values["table"] and not values["path"]:
            add(where, "a reference needs 'table' or 'path'")
        fmt = raw.get("format", "delta")
        if fmt not in DATASET_FORMATS:
            add(
                where + ("format",),
                f"unknown format {fmt!r}{similar(str(fmt), DATASET_FORMATS)}; allowed: {', '.join(DATASET_FORMATS)}",
            )
            fmt = "delta"
        options = raw.get("options") or {}
        if not isinstance(options, dict):
            add(where + ("options",), f"'options' must be a mapping, got {type(options).__name__}")
            options = {}
        null_values = read_null_values(
            raw.get("null_values"), lambda sub, msg, at=where: add(at + ("null_values", *sub), msg)
        )
        out[alias] = Reference(
            name=alias,
            table=values["table"],
            path=values["path"],
            format=fmt,
            filter=values["filter"],
            options={str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()},
            null_values=null_values,
        )
    return out


def reference_column_types(contract: Contract, alias: str) -> dict[str, ColumnType]:
    """The columns of reference ``alias`` a check compares with a declared, typed column of the dataset → that type.

    A text reference is read with these as its declared columns (``referential`` keys, the
    ``reconciliation`` column), so both sides of a comparison have the type the contract declares.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "o", "columns": [{"name": "customer_id", "type": "long"}],
    ...                    "references": {"customers": {"path": "/dim/c.csv", "format": "csv"}},
    ...                    "checks": [{"name": "known", "type": "referential", "columns": ["customer_id"],
    ...                                "reference": "customers", "reference_columns": ["id"]}]})
    >>> {name: kind.describe() for name, kind in reference_column_types(c, "customers").items()}
    {'id': 'long'}
    """
    types = {column.name: column.type for column in contract.columns if column.type is not None}
    out: dict[str, ColumnType] = {}
    for check in contract.all_checks():
        params = check.params
        if params.get("reference") != alias:
            continue
        pairs: list[tuple[str, str]] = []
        if check.type == "referential":
            ours = list(params.get("columns") or [])
            pairs = list(zip(ours, params.get("reference_columns") or ours))
        elif check.type == "reconciliation" and params.get("column"):
            pairs = [(params["column"], params.get("reference_column") or params["column"])]
        for own, theirs in pairs:
            if own in types:
                out.setdefault(theirs, types[own])
    return out


def check_reference_use(
    checks: Iterable[tuple[int, Check]],
    references: dict[str, Reference],
    add: Add,
    similar: Callable[[str, Iterable[str]], str],
) -> None:
    """Every alias a check names is declared; ``sql`` placeholders name the dataset or a reference.

    ``add(path, message)`` paths are relative to ``checks[index]``.
    """
    known = sorted(references)
    for index, check in checks:
        alias = check.params.get("reference")
        if alias is not None and alias not in references:
            add(
                (index, "reference"),
                f"unknown reference {alias!r}{similar(alias, known)}; declared: "
                f"{', '.join(known) or 'none (add a top-level references: mapping)'}",
            )
        if check.is_query:
            for name in placeholders(check.params["query"]):
                if name != DATASET_PLACEHOLDER and name not in references:
                    add(
                        (index, "query"),
                        f"{{{name}}} names no reference{similar(name, known)}; use "
                        f"{{dataset}} or one of: {', '.join(known) or 'none declared'}",
                    )
            if check.params.get("return") == "value" and check.validator.is_noop:
                add(
                    (index,),
                    "a sql check with 'return: value' needs a validator (min, max, between, "
                    "not_between or equals); without one it could never fail",
                )
        definition = check.definition
        if check.filter and definition is not None and not definition.filterable:
            add(
                (index, "filter"),
                f"'filter' does not apply to '{check.type}': write the scope into the "
                + ("query" if definition.is_query else "condition"),
            )
