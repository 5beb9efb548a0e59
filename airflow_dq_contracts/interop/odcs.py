"""ODCS v3 in and out: ``dq-contracts import odcs`` (one contract per object) and ``export odcs``.

Import uses the model layer's compiler (:mod:`airflow_dq_contracts.contract.odcs`: the mapping, its
choices and its refusals live there, because ``validate``/``run`` read ODCS directly too) and writes
each object's contract as YAML, a comment above each check naming its ODCS rule. ``partial=True``
keeps what maps exactly and returns the refused rules, located.

Export (:func:`export_odcs`, also what ``suggest --format odcs`` calls) writes an ODCS v3.1.0
document with exactly the contract's meaning: columns as properties (``required``, ``unique``,
``primaryKey``), checks with an exact ODCS library metric as ``type: library`` (``rowCount``,
``nullValues``, ``duplicateValues``), every other check of ours under ``type: custom`` with
``engine: airflow-dq-contracts`` carrying it unchanged, the freshness SLA as ``latency``, a path
dataset as the document's server. What the standard has no field for (no version, reader options, a
non-default enforcement, our own metadata; ``native: true`` for a contract not compiled from ODCS)
goes in the object's ``customProperties`` under ``airflow-dq-contracts``, which the import reads
back: import → export → import and export → import → export are identities (docs/interop.md). What
ODCS cannot carry (references, learned baselines) is refused, located.

Example::

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "orders", "version": "1.0.0", "dataset": {"table": "shop.orders"},
    ...                    "checks": [{"name": "rows", "type": "num_rows", "min": 1}]})
    >>> print(export_odcs(c).split("schema:")[1], end="")
    <BLANKLINE>
    - name: orders
      physicalName: shop.orders
      physicalType: table
      quality:
      - name: rows
        type: library
        metric: rowCount
        mustBeGreaterOrEqualTo: 1
        severity: P1
      customProperties:
      - property: airflow-dq-contracts
        value:
          native: true
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import yaml

from airflow_dq_contracts.contract import loader
from airflow_dq_contracts.contract.checks import implicit_validator
from airflow_dq_contracts.contract.column_paths import ELEMENTS, KEY, Step, format_path, try_parse
from airflow_dq_contracts.contract.errors import ContractValidationError, ValidationIssue
from airflow_dq_contracts.contract.model import Check, Column, ColumnType, Contract, Dataset, Enforcement
from airflow_dq_contracts.contract.odcs import CompiledObject, compile_odcs, is_odcs, refused
from airflow_dq_contracts.contract.odcs.location import CARRIER
from airflow_dq_contracts.contract.odcs.quality import ENGINE
from airflow_dq_contracts.contract.validators import DEFAULT_TOLERANCE

from .common import Source, emit_yaml

LOGICAL = {
    "string": "string",
    **dict.fromkeys(("byte", "short", "int", "long"), "integer"),
    **dict.fromkeys(("float", "double", "decimal"), "number"),
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp",
    "list": "array",
    "struct": "object",
    "map": "object",
}


@dataclasses.dataclass
class Imported:
    """The contracts of one ODCS document (object name → YAML text) and the refused rules (located)."""

    contracts: dict[str, str]
    refused: list[ValidationIssue]
    notes: list[str]


def import_odcs(path: str | os.PathLike[str], *, object_name: str | None = None, partial: bool = False) -> Imported:
    """Contract YAML per object of an ODCS file; raises ``ContractValidationError`` unless ``partial``.

    Example::

        result = import_odcs("orders.odcs.yaml")             # every object, all-or-nothing
        result = import_odcs("shop.odcs.yaml", object_name="orders", partial=True)
        for issue in result.refused: print(issue)
    """
    src = Source.read(path)
    if src.issues:
        raise ContractValidationError(src.issues)
    if not is_odcs(src.data):
        raise ContractValidationError(
            [ValidationIssue(src.file, 1, "", "not an ODCS document (needs kind: DataContract and apiVersion v3.x)")]
        )
    compilation = compile_odcs(src.data, src.smap)
    if compilation.issues and not partial:
        raise refused(compilation)
    objects = [compilation.select(object_name)] if object_name or len(compilation.objects) == 1 else compilation.objects
    if not objects:
        compilation.select(None)  # raises: no object
    contracts: dict[str, str] = {}
    problems: list[ValidationIssue] = []
    notes: list[str] = []
    for obj in objects:
        text = _yaml(obj, src.file)
        try:
            loader.parse_contract(text, filename=src.file)
        except ContractValidationError as err:
            problems.extend(obj.relocate(err).issues)
            continue
        contracts[obj.name] = text
        notes += [f"{obj.name}: {note}" for note in obj.notes]
    if problems:
        raise ContractValidationError(problems)
    return Imported(contracts, list(compilation.issues), notes)


def _yaml(obj: CompiledObject, file: str) -> str:
    """The object's contract as YAML, a comment above each check naming its ODCS element."""
    comments: dict[int, str] = {}
    doc = obj.document
    scopes = [("checks", doc.get("checks", []))] + [
        (f"columns[{i}].checks", c.get("checks", [])) for i, c in enumerate(doc.get("columns", []))
    ]
    for prefix, checks in scopes:
        for index, check in enumerate(checks):
            where = f"{prefix}[{index}]"
            origin = obj.origins.get(where)
            line = obj.lines.get(_path(where))
            if origin:
                comments[id(check)] = f"ODCS {os.path.basename(file)}{':' + str(line) if line else ''} {origin}"
    header = (
        f"Compiled from ODCS {os.path.basename(file)} (object {obj.name}) by `dq-contracts import odcs`.\n"
        "Each check's comment names its source rule; see docs/interop.md (ODCS) for the mapping."
    )
    return emit_yaml(doc, comments, header)


def _path(text: str) -> tuple:
    parts: list[Any] = []
    for chunk in text.replace("]", "").split("."):
        name, *indices = chunk.split("[")
        parts.append(name)
        parts.extend(int(i) for i in indices)
    return tuple(parts)


# --------------------------------------------------------------------------------------- export


def export_odcs(contract: Contract) -> str:
    """An ODCS v3.1.0 document (YAML text) meaning exactly ``contract``; raises ``ContractValidationError``.

    The function ``dq-contracts suggest --format odcs`` calls. See the module docs for the mapping.
    """
    refused: list[ValidationIssue] = []

    def refuse(where: str, line: int | None, message: str) -> None:
        refused.append(ValidationIssue(contract.source or "<contract>", line, where, message))

    if contract.references:
        refuse("references", None, "references (other datasets) have no ODCS form that runs them")
    found = contract.metadata.get("odcs")
    odcs_meta: dict[str, Any] = found if isinstance(found, dict) else {}
    doc: dict[str, Any] = {
        "apiVersion": "v3.1.0",
        "kind": "DataContract",
        "id": str(odcs_meta.get("id") or contract.name),
        "name": contract.name,
        "version": contract.version or "0.0.0",
        "status": str(odcs_meta.get("status") or "active"),
    }
    for key in ("dataProduct", "tenant"):
        if odcs_meta.get(key) is not None:
            doc[key] = odcs_meta[key]
    if contract.domain:
        doc["domain"] = contract.domain
    if contract.description:
        doc["description"] = {"purpose": contract.description}
    if contract.tags:
        doc["tags"] = list(contract.tags)
    obj: dict[str, Any] = {"name": str(odcs_meta.get("object") or contract.name)}
    if contract.dataset.name:
        obj["physicalName"] = contract.dataset.name
        obj["physicalType"] = "table"
    if odcs_meta.get("deprecated") is True:
        obj["deprecated"] = True  # ODCS v3.2
    properties = nested_properties(contract.columns, lambda column: _property(column, refuse), refuse)
    if properties:
        obj["properties"] = properties
    keys = [c for c in contract.checks if _composite_key(c, contract)]
    for prop in properties if keys else []:
        if prop.pop("primaryKey", None):  # beside a composite key, a single key is "unique" (+ required)
            prop["unique"] = True
    for check in keys:
        for prop in properties:
            if prop["name"] in check.params["columns"]:
                prop["primaryKey"] = True
                prop["primaryKeyPosition"] = list(check.params["columns"]).index(prop["name"]) + 1
    quality = [_rule(check, refuse) for check in contract.checks if check not in keys]
    quality += _text_rules(odcs_meta)
    if any(quality):
        obj["quality"] = [rule for rule in quality if rule]
    _location(contract, doc, obj)
    doc["schema"] = [obj]
    if contract.owner:
        doc["team"] = {"name": contract.owner}
    sla_entries = [dict(entry) for entry in odcs_meta.get("sla") or [] if isinstance(entry, dict)]
    if contract.sla.freshness_hours is not None:
        entry: dict[str, Any] = {"property": "latency", "value": contract.sla.freshness_hours, "unit": "h"}
        if contract.sla.timestamp_column:
            entry["element"] = f"{obj['name']}.{contract.sla.timestamp_column}"
        sla_entries.insert(0, entry)
    if sla_entries:
        doc["slaProperties"] = sla_entries
    if _uses_v3_2(obj):
        doc["apiVersion"] = "v3.2.0"
    if refused:
        raise ContractValidationError(refused)
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def _location(contract: Contract, doc: dict[str, Any], obj: dict[str, Any]) -> None:
    """A path dataset as the document's one server (``path``/``location`` + ``format``); what the standard
    cannot say — no version, no dataset, reader options, our own metadata — in the object's carrier
    (``contract/odcs/location.py``)."""
    dataset = contract.dataset
    carrier: dict[str, Any] = {}
    if contract.version is None:
        carrier["unversioned"] = True
    if dataset.path and not dataset.table:
        server = _server(dataset.path)
        server["format"] = dataset.format
        doc["servers"] = [{"server": obj["name"], **server}]
    if not dataset.name or dataset.options or dataset.null_values or (dataset.table and dataset.path):
        carrier["dataset"] = _dataset_document(dataset) if dataset.name else None
    metadata = {key: value for key, value in contract.metadata.items() if key != "odcs"}
    if metadata:
        carrier["metadata"] = metadata
    if contract.enforcement != Enforcement():
        carrier["enforcement"] = _enforcement_document(contract.enforcement)
    if "odcs" not in contract.metadata:
        carrier["native"] = True  # not compiled from ODCS: the import adds no metadata.odcs
    if carrier:
        obj["customProperties"] = [{"property": CARRIER, "value": carrier}]


def _enforcement_document(enforcement: Enforcement) -> dict[str, Any]:
    """The contract's ``enforcement:`` mapping (what its YAML says), for the carrier."""

    def switch(on: bool, severity: str) -> Any:
        return {"severity": severity} if on else "off"

    return {
        "schema": {"mode": enforcement.schema_mode, "severity": enforcement.schema_severity},
        "constraints": switch(enforcement.constraints, enforcement.constraints_severity),
        "sla": switch(enforcement.sla, enforcement.sla_severity),
        "statistics": "on" if enforcement.statistics else "off",
    }


def _server(path: str) -> dict[str, Any]:
    """An ODCS server entry for a path: its ``type`` from the scheme (``local`` without one)."""
    scheme = path.split("://", 1)[0].lower() if "://" in path else ""
    kinds = {"s3": "s3", "s3a": "s3", "s3n": "s3", "abfss": "azure", "abfs": "azure", "az": "azure", "wasbs": "azure"}
    if not scheme or scheme == "file":
        return {"type": "local", "path": path}
    return {"type": kinds.get(scheme, "custom"), "location": path}


def _dataset_document(dataset: Dataset) -> dict[str, Any]:
    """The contract's ``dataset:`` mapping (what its YAML says)."""
    out: dict[str, Any] = {}
    if dataset.table:
        out["table"] = dataset.table
    if dataset.path:
        out["path"] = dataset.path
    if dataset.format != Dataset().format:
        out["format"] = dataset.format
    if dataset.options:
        out["options"] = dict(dataset.options)
    if dataset.null_values:
        out["null_values"] = list(dataset.null_values)
    return out


def _text_rules(odcs_meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``type: text`` rules the import kept as documentation, back as text rules."""
    rules = []
    for entry in odcs_meta.get("text_rules") or []:
        if isinstance(entry, dict):
            rules.append({"type": "text", "description": str(entry.get("text", ""))})
    return rules


def _uses_v3_2(obj: dict[str, Any]) -> bool:
    """Whether the object says something only ODCS v3.2 has (``enum``, ``deprecated``)."""
    props = obj.get("properties") or []
    return bool(obj.get("deprecated")) or any("enum" in p or p.get("deprecated") for p in props)


def _composite_key(check: Check, contract: Contract) -> bool:
    """A table duplicates check of max 0 over non-nullable columns: what a composite primaryKey compiles to."""
    if check.type != "duplicates" or check.column is not None or not check.name.startswith("primary key ("):
        return False
    columns = [contract.column(name) for name in check.params["columns"]]
    return all(c is not None and not c.nullable for c in columns) and check.validator.kind == "max"


def nested_properties(
    columns: Sequence[Column], build: Callable[[Column], dict[str, Any]], refuse: Any
) -> list[dict[str, Any]]:
    """The ODCS properties of ``columns``, nested columns (``address.city``, ``items[].sku``, ``tags[]``) placed
    under their parent's ``properties`` / ``items`` — the inverse of the importer's nested properties.

    A parent the contract does not declare is written as a bare ``object`` (``array`` for ``[]``)
    property; a map value by key (``attrs[color]``) has no ODCS form and is refused.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "t", "columns": [{"name": "address.city", "nullable": False}]})
    >>> nested_properties(c.columns, lambda col: {"name": col.name, "required": not col.nullable}, None)
    [{'name': 'address', 'logicalType': 'object', 'properties': [{'name': 'city', 'required': True}]}]
    """
    top: list[dict[str, Any]] = []
    by_path: dict[str, dict[str, Any]] = {}

    def holder(steps: tuple[Step, ...]) -> dict[str, Any]:
        text = format_path(steps)
        if text in by_path:
            return by_path[text]
        if steps[-1].kind == ELEMENTS:
            array = holder(steps[:-1])
            array.setdefault("logicalType", "array")
            made = array.setdefault("items", {"logicalType": "object"})
        else:
            made = {"name": steps[-1].name, "logicalType": "object"}
            (holder(steps[:-1]).setdefault("properties", []) if len(steps) > 1 else top).append(made)
        by_path[text] = made
        return made

    for column in columns:
        prop = build(column)
        steps = try_parse(column.name)
        if steps is None or (len(steps) == 1 and format_path(steps) not in by_path):
            prop["name"] = steps[0].name if steps else column.name
            top.append(prop)
            by_path[format_path(steps) if steps else column.name] = prop
            continue
        if any(step.kind == KEY for step in steps):
            refuse(f"columns[{column.name}]", None, "a map value by key has no ODCS form")
            continue
        place = holder(steps)  # the bare parent made for a child declared earlier, or a new property
        nested = {k: v for k, v in place.items() if k in ("properties", "items")}
        if steps[-1].kind == ELEMENTS:
            prop.pop("name", None)
        else:
            prop["name"] = steps[-1].name
        place.clear()
        place.update({**prop, **nested})
    return top


def _property(column: Column, refuse: Any) -> dict[str, Any]:
    prop: dict[str, Any] = {"name": column.name}
    if column.type is not None:
        prop["physicalType"] = _physical_type(column.type)
        if column.type.kind in LOGICAL:
            prop["logicalType"] = LOGICAL[column.type.kind]
    if not column.nullable:
        prop["required"] = True
    ids = {c.check_id.split("/", 1)[1]: c for c in column.constraints}
    if "unique" in ids and _declared_by(ids["unique"]) == "primary_key":
        prop["primaryKey"] = True  # what ``primary_key: true`` compiles to: not null and unique
    elif "unique" in ids and "not_null" in ids and _declared_by(ids["unique"]) is None:
        prop["primaryKey"] = True
    elif "unique" in ids:
        prop["unique"] = True
    if column.description:
        prop["description"] = column.description
    if column.tags:
        prop["tags"] = list(column.tags)
    if column.deprecated:
        prop["deprecated"] = True  # ODCS v3.2
    if column.deprecated_by or column.sunset or column.renamed_from:
        refuse(f"columns[{column.name}]", None, "deprecated_by, sunset and renamed_from have no ODCS form")
    rules = [_rule(c, refuse) for c in column.checks]
    native = _native_constraints(column, prop)
    # Other constraints travel as our own checks under their fixed names.
    rules += [_rule(c, refuse, name=key) for key, c in ids.items() if key not in ("not_null", "unique", *native)]
    if any(rules):
        prop["quality"] = [rule for rule in rules if rule]
    return prop


def _declared_by(constraint: Check) -> str | None:
    """The column key a constraint was compiled from (``primary_key``, ``unique``…), from its description."""
    text = constraint.description or ""
    prefix = "constraint from the column's '"
    return text[len(prefix) : -1] if text.startswith(prefix) and text.endswith("'") else None


def _physical_type(kind: ColumnType) -> str:
    """The type as the contract writes it; a list or map without element types is just its kind."""
    if kind.kind in ("list", "map") and kind.value_type is None and kind.key_type is None:
        return kind.kind
    return kind.describe()


def _native_constraints(column: Column, prop: dict[str, Any]) -> tuple[str, ...]:
    """The column's ``pattern`` / ``format`` / ``allowed_values`` constraints in ODCS's own spelling
    (``logicalTypeOptions.pattern`` / ``.format``, v3.2 ``enum``); the constraint names so written."""
    written: list[str] = []
    for constraint in column.constraints:
        key = constraint.check_id.split("/", 1)[1]
        if key == "pattern" and constraint.params.get("pattern") and not constraint.params.get("flags"):
            prop.setdefault("logicalTypeOptions", {})["pattern"] = constraint.params["pattern"]
        elif key == "pattern" and constraint.params.get("format"):
            prop.setdefault("logicalTypeOptions", {})["format"] = constraint.params["format"]
        elif key == "allowed_values" and constraint.params.get("case_sensitive", True):
            prop["enum"] = list(constraint.params["values"])
        else:
            continue
        written.append(key)
    return tuple(written)


def check_document(check: Check) -> dict[str, Any]:
    """The contract-language mapping of one check (what its YAML says), from the model.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> c = load_contract({"name": "t", "checks": [{"name": "r", "type": "num_rows", "between": [1, 9]}]})
    >>> check_document(c.checks[0])
    {'name': 'r', 'type': 'num_rows', 'between': [1, 9], 'severity': 'P1'}
    """
    doc: dict[str, Any] = {"name": check.name, "type": check.type}
    definition = check.definition
    assert definition is not None
    for param in definition.params:
        value = check.params.get(param.name)
        if value is not None and value != param.default:
            doc[param.name] = list(value) if isinstance(value, tuple) else value
    validator = check.validator
    if definition.validators and validator != implicit_validator(definition, check.params, validator.tolerance):
        kind, low, high = validator.kind, validator.low, validator.high
        if kind == "min":
            doc["min"] = _num(low)
        elif kind == "max":
            doc["max"] = _num(high)
        elif kind == "equals":
            doc["equals"] = _num(low)
        elif kind in ("between", "not_between"):
            doc[kind] = [_num(low), _num(high)]
    if validator.tolerance != DEFAULT_TOLERANCE:
        doc["tolerance"] = _num(validator.tolerance)
    doc["severity"] = check.severity
    if check.explicit_action:
        doc["action"] = check.action
    for key in ("filter", "description"):
        if getattr(check, key):
            doc[key] = getattr(check, key)
    if check.tags:
        doc["tags"] = list(check.tags)
    if not check.enabled:
        doc["enabled"] = False
    return doc


def _num(value: float | None) -> int | float:
    assert value is not None
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else float(value)


def _rule(check: Check, refuse: Any, name: str | None = None) -> dict[str, Any] | None:
    """One ODCS quality rule: an exact library metric where there is one, else ``type: custom``."""
    if check.baseline is not None:
        refuse(check.path, check.line, "a bound learned from history (baseline) has no ODCS form")
        return None
    library = _library(check)
    if library is not None:
        return library
    implementation = check_document(check)
    if name is not None:
        implementation["name"] = name
    return {"name": implementation["name"], "type": "custom", "engine": ENGINE, "implementation": implementation}


def _library(check: Check) -> dict[str, Any] | None:
    """``rowCount``/``nullValues``/``duplicateValues`` when they mean exactly the check, else None."""
    validator = check.validator
    plain_check = not (check.filter or check.explicit_action or not check.enabled)
    if not plain_check or check.baseline is not None:
        return None
    ret = check.params.get("return")
    metric = None
    if check.type == "num_rows":
        metric = "rowCount"
    elif check.type == "missing" and check.column is not None:
        metric = "nullValues"
    elif check.type == "duplicates" and check.column is not None:
        metric = "duplicateValues"
    if metric is None:
        return None
    percent = ret == "pct"
    if validator.tolerance != (0 if percent else DEFAULT_TOLERANCE):
        return None
    scale = 100 if percent else 1
    operators = {"min": "mustBeGreaterOrEqualTo", "max": "mustBeLessOrEqualTo", "equals": "mustBe"}
    rule: dict[str, Any] = {"name": check.name, "type": "library", "metric": metric}
    if validator.kind in operators:
        bound = validator.low if validator.kind in ("min", "equals") else validator.high
        rule[operators[validator.kind]] = _num(float(repr_scaled(bound, scale)))
    elif validator.kind in ("between", "not_between"):
        key = "mustBeBetween" if validator.kind == "between" else "mustNotBeBetween"
        rule[key] = [_num(float(repr_scaled(validator.low, scale))), _num(float(repr_scaled(validator.high, scale)))]
        if key == "mustNotBeBetween" or validator.low == validator.high:
            return None  # the import reads these with a note and a different tolerance: keep ours
    else:
        return None
    if percent:
        rule["unit"] = "percent"
    rule["severity"] = check.severity
    rule.update(_dimension_and_tags(check.tags))
    if check.description:
        rule["description"] = check.description
    return rule


DIMENSIONS = ("accuracy", "completeness", "conformity", "consistency", "coverage", "timeliness", "uniqueness")


def _dimension_and_tags(tags: tuple[str, ...]) -> dict[str, Any]:
    """A first tag that is an ODCS dimension as ``dimension`` (the import reads it back as that tag)."""
    if not tags:
        return {}
    if tags[0] in DIMENSIONS:
        return {"dimension": tags[0], **({"tags": list(tags[1:])} if tags[1:] else {})}
    return {"tags": list(tags)}


def repr_scaled(value: float | None, scale: int) -> str:
    """``value × scale`` written exactly (``0.05 × 100`` → ``'5.00'``), as the import divides it back."""
    assert value is not None
    return str(Decimal(repr(float(value))) * scale)


__all__ = ["Imported", "check_document", "export_odcs", "import_odcs"]
