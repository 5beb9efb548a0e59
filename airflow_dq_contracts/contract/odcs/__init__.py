"""ODCS v3 (the Open Data Contract Standard, Bitol) as a contract format: compiled to the same model.

A document with ``kind: DataContract`` and ``apiVersion: v3.0.x`` to ``v3.2.x`` is an ODCS contract;
:func:`airflow_dq_contracts.contract.load_contract` detects it and compiles it here into the plain
contract document it means, then validates that as usual. Every problem is located *in the ODCS
file* (line and ODCS path). Nothing is approximated: what has no exact equivalent is refused, and
each reading ODCS leaves open is chosen and said in the contract's
``metadata.odcs.notes`` (``docs/interop.md``, "ODCS").

One ODCS document may describe several objects (tables); a contract checks one dataset, so each
``schema[]`` object compiles to one contract. ``load_contract("orders.odcs.yaml#orders")`` picks one;
a document with a single object needs no selection.

Mapping (the details in :mod:`.schema` and :mod:`.quality`): ``schema[i]`` → ``dataset.table``
(``physicalName`` or ``name``); ``properties[]`` → columns; ``quality[]`` → checks; ``slaProperties``
``latency``/``freshness`` with an ``element`` → ``sla.freshness_hours`` + ``sla.timestamp_column``;
``team.name`` (or the v3.0 member whose role is owner) → ``owner``; ``version``, ``domain``, ``tags``;
``status``, ``id``, ``dataProduct``, ``text`` rules and the other SLA properties → ``metadata.odcs``.

Example::

    >>> from airflow_dq_contracts.contract import load_contract
    >>> contract = load_contract('''
    ... apiVersion: v3.1.0
    ... kind: DataContract
    ... id: 1
    ... version: 1.0.0
    ... status: active
    ... schema:
    ...   - name: orders
    ...     properties:
    ...       - {name: id, physicalType: bigint, required: true}
    ... ''')
    >>> contract.name, contract.dataset.table, [c.check_id for c in contract.evaluated_checks()]
    ('orders', 'orders', ['id/schema', 'id/not_null'])
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import Any

from ..column_paths import quote_name
from ..errors import ContractValidationError, ValidationIssue
from ..validators import slug
from ..yamlsrc import Path, SourceMap, format_path
from .common import Found, exact, plain
from .location import carried, object_dataset
from .quality import Scope, compile_rule
from .schema import column_name, compile_property, nested_columns

API_VERSION = re.compile(r"^v3\.[012]\.\d+$")
OBJECT_KEYS = (
    "id",
    "name",
    "physicalName",
    "physicalType",
    "businessName",
    "description",
    "authoritativeDefinitions",
    "tags",
    "customProperties",
    "dataGranularityDescription",
    "logicalType",
    "properties",
    "quality",
    "relationships",
    "deprecated",  # v3.2: kept in metadata.odcs (the object is still checked while it exists)
)
LATENCY = ("latency", "freshness")
SEMANTIC = ("measure", "dimension")
_HOURS = {
    **dict.fromkeys(("s", "sec", "second", "seconds"), Decimal(1) / Decimal(3600)),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), Decimal(1) / Decimal(60)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), Decimal(1)),
    **dict.fromkeys(("d", "day", "days"), Decimal(24)),
    **dict.fromkeys(("w", "week", "weeks"), Decimal(168)),
}


def is_odcs(data: Any) -> bool:
    """Whether a parsed document is an ODCS contract (``kind: DataContract`` with an ``apiVersion``).

    >>> is_odcs({"kind": "DataContract", "apiVersion": "v3.1.0"}), is_odcs({"name": "orders"})
    (True, False)
    """
    return isinstance(data, dict) and data.get("kind") == "DataContract" and "apiVersion" in data


@dataclasses.dataclass
class CompiledObject:
    """One ODCS ``schema[]`` object as a plain contract document, with the way back to the ODCS file.

    ``lines`` maps paths of ``document`` to ODCS lines; ``origins`` maps them (as text) to ODCS paths.
    """

    name: str
    document: dict[str, Any]
    lines: dict[Path, int]
    origins: dict[str, str]
    notes: list[str]

    def source_map(self, file: str) -> SourceMap:
        """A source map of ``document`` whose lines are the ODCS file's."""
        return SourceMap(file, dict(self.lines))

    def relocate(self, err: ContractValidationError) -> ContractValidationError:
        """``err`` (found in ``document``) with each path said in ODCS terms."""
        issues = []
        for issue in err.issues:
            prefix = max((p for p in self.origins if issue.path == p or issue.path.startswith(p)), key=len, default="")
            if prefix:
                message = f"{issue.message} (in the compiled contract: {issue.path})"
                issues.append(dataclasses.replace(issue, path=self.origins[prefix], message=message))
            else:
                issues.append(issue)
        return ContractValidationError(issues)


@dataclasses.dataclass
class Compilation:
    """Every object of one ODCS document, and the refusals (located in the ODCS file)."""

    file: str
    objects: list[CompiledObject]
    issues: list[ValidationIssue]
    #: the line of ``schema`` (else of the document's first key): where "describes nothing" points
    schema_line: int | None = None

    def select(self, name: str | None) -> CompiledObject:
        """The object ``name`` (or the only one); raises a located error otherwise."""
        if name is not None:
            for obj in self.objects:
                if obj.name == name:
                    return obj
            known = ", ".join(o.name for o in self.objects) or "none"
            raise ContractValidationError(
                [ValidationIssue(self.file, None, "schema", f"no object {name!r}; objects: {known}")]
            )
        if len(self.objects) != 1:
            names = ", ".join(o.name for o in self.objects)
            message = (
                f"the document describes {len(self.objects)} objects ({names}); a contract checks one dataset: "
                "name one as FILE#OBJECT (`dq-contracts validate|run` and the operator take the whole document "
                "as one suite), or split it with `dq-contracts import odcs -o DIR`"
                if self.objects
                else NOTHING_DESCRIBED
            )
            raise ContractValidationError([ValidationIssue(self.file, self.schema_line, "schema", message)])
        return self.objects[0]

    def require_objects(self) -> list[CompiledObject]:
        """Every object; a located error when the document describes none (an empty or missing ``schema``)."""
        if not self.objects:
            raise ContractValidationError([ValidationIssue(self.file, self.schema_line, "schema", NOTHING_DESCRIBED)])
        return self.objects


#: Why a document with an empty (or no) ``schema`` is refused.
NOTHING_DESCRIBED = "the document describes no object (schema is empty): nothing to check"


class _Origins:
    """Where each element of a compiled document came from (by object identity until paths are known)."""

    def __init__(self) -> None:
        self.by_id: dict[int, Path] = {}

    def mark(self, element: Any, path: Path) -> Any:
        self.by_id[id(element)] = path
        return element

    def resolve(self, document: dict, smap: SourceMap) -> tuple[dict[Path, int], dict[str, str]]:
        lines: dict[Path, int] = {}
        origins: dict[str, str] = {}

        def walk(value: Any, path: Path, inherited: Path) -> None:
            source = self.by_id.get(id(value), inherited)
            line = smap.line(source)
            if line is not None:
                lines[path] = line
            if id(value) in self.by_id and path:
                origins[format_path(path)] = format_path(source)
            if isinstance(value, dict):
                for key, item in value.items():
                    walk(item, path + (key,), source)
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    walk(item, path + (index,), source)

        walk(document, (), ())
        return lines, origins


# --------------------------------------------------------------------------------------- compiling


def compile_odcs(data: dict, smap: SourceMap) -> Compilation:
    """Every ``schema[]`` object of an ODCS document as a contract document; refusals collected, located."""
    found = Found(smap)
    first_key = next(((key,) for key in data), ())
    schema_line = smap.line(("schema",)) or smap.line(first_key)
    api = data.get("apiVersion")
    if not isinstance(api, str) or not API_VERSION.match(api.strip()):
        found.refuse(("apiVersion",), f"ODCS apiVersion {api!r} is not supported; this reads v3.0.x to v3.2.x")
        return Compilation(smap.file, [], found.issues, schema_line)
    raw_objects = data.get("schema") or []
    if not isinstance(raw_objects, list):
        found.refuse(("schema",), f"'schema' must be a list of objects, got {type(raw_objects).__name__}")
        raw_objects = []
    top = _top(found, data)
    objects = []
    for index, raw in enumerate(raw_objects):
        compiled = _object(found, data, raw, ("schema", index), top, len(raw_objects))
        if compiled is not None:
            objects.append(compiled)
    _sla_elements_exist(found, data, objects)
    return Compilation(smap.file, objects, found.issues, schema_line)


def _top(found: Found, data: dict) -> dict[str, Any]:
    """The contract-level keys every object's contract shares."""
    top: dict[str, Any] = {}
    version = data.get("version")
    if isinstance(version, (str, int, float)) and not isinstance(version, bool):
        top["version"] = str(version)
    domain = found.text(data, "domain", ())
    if domain:
        top["domain"] = domain
    owner = _owner(data.get("team"))
    if owner:
        top["owner"] = owner
    description = data.get("description")
    if isinstance(description, dict):
        description = description.get("purpose")
    if isinstance(description, str) and description.strip():
        top["description"] = description.strip()
    tags = [t for t in data.get("tags") or [] if isinstance(t, str) and t.strip()]
    if tags:
        top["tags"] = tags
    return top


def _owner(team: Any) -> str | None:
    """``team.name`` (v3.1), or the username of the v3.0 member whose role is owner."""
    if isinstance(team, dict) and isinstance(team.get("name"), str) and team["name"].strip():
        return str(team["name"]).strip()
    members = team.get("members") if isinstance(team, dict) else team
    for member in members if isinstance(members, list) else []:
        if isinstance(member, dict) and "owner" in str(member.get("role", "")).lower():
            who = member.get("username") or member.get("name")
            if isinstance(who, str) and who.strip():
                return who.strip()
    return None


def _object(found: Found, data: dict, raw: Any, path: Path, top: dict, count: int) -> CompiledObject | None:
    if not isinstance(raw, dict):
        found.refuse(path, f"a schema object must be a mapping, got {type(raw).__name__}")
        return None
    found.keys(raw, OBJECT_KEYS, path, "a schema object")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        found.refuse(path, "a schema object needs 'name'")
        return None
    origins = _Origins()
    notes: list[str] = []
    table = column_name(raw) or name
    contract_name = data.get("name") if count == 1 and isinstance(data.get("name"), str) else name
    doc: dict[str, Any] = origins.mark({"name": str(contract_name).strip() or name, **top}, ())
    doc["dataset"] = origins.mark(object_dataset(found, data, table, count, notes), path)
    if isinstance(raw.get("description"), str) and raw["description"].strip():
        doc["description"] = raw["description"].strip()
    tags = list(doc.get("tags", [])) + [
        t for t in raw.get("tags") or [] if isinstance(t, str) and t not in doc.get("tags", [])
    ]
    if tags:
        doc["tags"] = tags
    columns: list[dict] = []
    table_checks: list[dict] = []
    by_property: dict[str, str] = {}
    keys: list[tuple[int, str, Path]] = []
    props = raw.get("properties") or []
    if not isinstance(props, list):
        found.refuse(path + ("properties",), "'properties' must be a list")
        props = []
    nested_quality: list[tuple[dict, Any, Path]] = []  # nested columns' own quality rules
    for index, prop in enumerate(props):
        where = path + ("properties", index)
        if not isinstance(prop, dict) or column_name(prop) is None:
            found.refuse(where, "a property needs 'name'")
            continue
        if prop.get("semanticType") in SEMANTIC:
            # v3.2: computed by transformLogic over the columns, not a column of the data.
            if prop.get("quality"):
                found.refuse(where + ("quality",), "a measure/dimension is computed, not stored: nothing to check")
            notes.append(f"{format_path(where)}: semanticType {prop['semanticType']} is documentation (not a column)")
            continue
        column, checks, prop_notes = compile_property(found, prop, where)
        notes += prop_notes
        origins.mark(column, where)
        for check in column.get("checks", []):
            origins.mark(check, where + ("logicalTypeOptions",))
        for check in checks:
            table_checks.append(origins.mark(check, where + ("logicalTypeOptions",)))
        by_property[str(prop.get("name") or column["name"])] = column["name"]
        by_property[column["name"]] = column["name"]
        if prop.get("primaryKey") is True:
            position = prop.get("primaryKeyPosition")
            keys.append(
                (position if isinstance(position, int) and position > 0 else 10_000 + index, column["name"], where)
            )
        columns.append(column)
        for nested, nested_checks, nested_notes, nested_path, nested_prop in nested_columns(
            found, prop, where, quote_name(column["name"])
        ):
            notes += nested_notes
            columns.append(origins.mark(nested, nested_path))
            table_checks += [origins.mark(check, nested_path) for check in nested_checks]
            nested_quality.append((nested, nested_prop.get("quality"), nested_path + ("quality",)))
    _primary_key(doc, columns, table_checks, keys, origins, notes)
    names = tuple(dict.fromkeys(n for n in (name, raw.get("physicalName")) if isinstance(n, str) and n))
    docs: list[dict[str, str]] = []
    for index, prop in enumerate(props):
        if isinstance(prop, dict) and column_name(prop) is not None and prop.get("semanticType") not in SEMANTIC:
            column = next(c for c in columns if c["name"] == column_name(prop))
            scope = Scope(column["name"], names, by_property, notes)
            _quality(
                found,
                prop.get("quality"),
                path + ("properties", index, "quality"),
                scope,
                column,
                table_checks,
                docs,
                origins,
            )
    for column, rules, where in nested_quality:
        scope = Scope(column["name"], names, by_property, notes)
        _quality(found, rules, where, scope, column, table_checks, docs, origins)
    scope = Scope(None, names, by_property, notes)
    _quality(found, raw.get("quality"), path + ("quality",), scope, None, table_checks, docs, origins)
    sla, sla_docs = _sla(found, data, raw, columns, path)
    if sla:
        doc["sla"] = origins.mark(sla, ("slaProperties",))
    if columns:
        doc["columns"] = columns
    if table_checks:
        doc["checks"] = table_checks
    _unique_names(doc)
    doc["metadata"] = _metadata(data, raw, notes, docs, sla_docs)
    carried(found, raw, path, doc)
    lines, paths = origins.resolve(doc, found.smap)
    return CompiledObject(name, doc, lines, paths, notes)


#: The reading of a single primaryKey, said (with its path) when ``required`` does not already say not null.
PRIMARY_KEY_NOTE = "a single primaryKey implies not null, whatever required says"


def _primary_key(
    doc: dict, columns: list[dict], table_checks: list[dict], keys: list, origins: _Origins, notes: list[str]
) -> None:
    if len(keys) == 1:
        column = next(c for c in columns if c["name"] == keys[0][1])
        column["primary_key"] = True
        column.pop("unique", None)
        # One spelling: a key is not null whatever `required` says (round trips stay identities).
        if column.pop("nullable", None) is not False:
            notes.append(f"{format_path(keys[0][2] + ('primaryKey',))}: {PRIMARY_KEY_NOTE}")
    elif len(keys) > 1:
        ordered = [name for _, name, _ in sorted(keys)]
        for column in columns:
            if column["name"] in ordered:
                column["nullable"] = False
        check = {"name": f"primary key ({', '.join(ordered)})", "type": "duplicates", "columns": ordered, "max": 0}
        table_checks.append(origins.mark(check, keys[0][2] + ("primaryKey",)))


def _quality(
    found: Found,
    raw: Any,
    path: Path,
    scope: Scope,
    column: dict | None,
    table_checks: list[dict],
    docs: list[dict[str, str]],
    origins: _Origins,
) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        found.refuse(path, "'quality' must be a list of rules")
        return
    for index, rule in enumerate(raw):
        where = path + (index,)
        built = compile_rule(found, rule, where, scope)
        if built is None:
            if isinstance(rule, dict) and rule.get("type") == "text":
                docs.append({"rule": format_path(where), "text": str(rule.get("description", "")).strip()})
            continue
        check, target = built
        origins.mark(check, where)
        if target is None:
            table_checks.append(check)
        else:
            assert column is not None and target == column["name"]
            column.setdefault("checks", []).append(check)


def _unique_names(doc: dict) -> None:
    """Check names unique in each scope (their ids would collide): a suffix on a repeated name."""
    scopes = [doc.get("checks", [])] + [c.get("checks", []) for c in doc.get("columns", [])]
    for checks in scopes:
        taken: set[str] = set()
        for check in checks:
            base, index = str(check.get("name", check.get("type", "check"))), 2
            check["name"] = base
            while slug(check["name"]) in taken:
                check["name"] = f"{base} ({index})"
                index += 1
            taken.add(slug(check["name"]))


def _sla_element(element: Any) -> str | None:
    if not isinstance(element, str) or not element.strip():
        return None
    return element.strip().split(".")[-1]


def _sla(found: Found, data: dict, raw: dict, columns: list[dict], path: Path) -> tuple[dict, list[dict]]:
    """``sla`` from ``latency``/``freshness`` (when the element's column is this object's); the rest kept."""
    sla: dict[str, Any] = {}
    kept: list[dict] = []
    entries = data.get("slaProperties") or []
    if not isinstance(entries, list):
        found.refuse(("slaProperties",), "'slaProperties' must be a list")
        return sla, kept
    names = {c["name"] for c in columns}
    default = data.get("slaDefaultElement")
    for index, entry in enumerate(entries):
        where = ("slaProperties", index)
        if not isinstance(entry, dict):
            continue
        prop = str(entry.get("property", "")).strip()
        if prop.lower() not in LATENCY:
            kept.append({k: v for k, v in entry.items() if isinstance(v, (str, int, float, bool))})
            continue
        element = _sla_element(entry.get("element", default))
        if element is not None and element not in names:
            continue  # another object's column (checked once for all objects)
        unit = str(entry.get("unit", "")).strip().lower()
        value = exact(entry.get("value"))
        if value is None or value < 0:
            found.refuse(where + ("value",), f"{prop} needs a non-negative number, got {entry.get('value')!r}")
            continue
        if unit not in _HOURS:
            found.refuse(
                where + ("unit",), f"{prop} unit {entry.get('unit')!r} is not a fixed duration; use s, m, h, d or w"
            )
            continue
        if "freshness_hours" in sla:
            found.refuse(where, f"a second {prop} for {raw.get('name')!r}; one freshness SLA per dataset")
            continue
        sla["freshness_hours"] = plain(value * _HOURS[unit])
        if element is not None:
            sla["timestamp_column"] = element
    return sla, kept


def _sla_elements_exist(found: Found, data: dict, objects: list[CompiledObject]) -> None:
    """A latency SLA whose element is a column of no object is refused (it would check nothing)."""
    entries = data.get("slaProperties")
    if not isinstance(entries, list):
        return
    columns = {c["name"] for obj in objects for c in obj.document.get("columns", [])}
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and str(entry.get("property", "")).strip().lower() in LATENCY:
            element = _sla_element(entry.get("element", data.get("slaDefaultElement")))
            if element is not None and element not in columns and objects:
                found.refuse(("slaProperties", index, "element"), f"no object has a column {element!r}")


def _metadata(data: dict, raw: dict, notes: list[str], docs: list[dict], sla_docs: list[dict]) -> dict[str, Any]:
    odcs: dict[str, Any] = {"apiVersion": str(data.get("apiVersion")).strip(), "object": raw.get("name")}
    if raw.get("deprecated") is True:
        odcs["deprecated"] = True
    for key in ("id", "status", "dataProduct", "tenant"):
        if isinstance(data.get(key), (str, int)) and not isinstance(data.get(key), bool):
            odcs[key] = data[key]
    if docs:
        odcs["text_rules"] = docs
    if sla_docs:
        odcs["sla"] = sla_docs
    if notes:
        odcs["notes"] = notes
    return {"odcs": odcs}


def refused(compilation: Compilation, issues: list[ValidationIssue] | None = None) -> ContractValidationError:
    """The all-or-nothing error of a compilation's refusals (``issues``, default its own).

    When the document has objects to compile, the last refusal ends with the way past it:
    ``dq-contracts import odcs FILE --partial`` writes the contract without the refused rules and lists them.

    >>> from airflow_dq_contracts.contract.yamlsrc import SourceMap
    >>> data = {"apiVersion": "v3.0.0", "kind": "DataContract", "schema": [{"name": "t", "properties": [
    ...     {"name": "a", "quality": [{"type": "library", "rule": "valueInRange"}]}]}]}
    >>> print(refused(compile_odcs(data, SourceMap("t.odcs.yaml"))))  # doctest: +ELLIPSIS
    t.odcs.yaml: schema[0].properties[0].quality[0].rule: unknown library metric 'valueInRange'; known: ... (to import the rules that map and list the refused ones: dq-contracts import odcs t.odcs.yaml --partial)
    """
    err = ContractValidationError(compilation.issues if issues is None else issues)
    if not compilation.objects or not err.issues:
        return err
    last = err.issues[-1]
    hint = f" (to import the rules that map and list the refused ones: dq-contracts import odcs {compilation.file} --partial)"
    return ContractValidationError([*err.issues[:-1], dataclasses.replace(last, message=last.message + hint)])


def compile_checked(data: dict, smap: SourceMap, duplicates: list) -> Compilation:
    """:func:`compile_odcs`, raising every refusal (and duplicate key), located in the ODCS file."""
    compilation = compile_odcs(data, smap)
    issues = [ValidationIssue(smap.file, smap.line(p), format_path(p), m) for p, m in duplicates]
    if compilation.issues:
        raise refused(compilation, issues + compilation.issues)
    if issues:
        raise ContractValidationError(issues)
    return compilation


def load_odcs(data: dict, smap: SourceMap, duplicates: list, object_name: str | None) -> CompiledObject:
    """The selected object of an ODCS document, compiled; raises every refusal, located in the ODCS file."""
    return compile_checked(data, smap, duplicates).select(object_name)


__all__ = ["Compilation", "CompiledObject", "compile_checked", "compile_odcs", "is_odcs", "load_odcs", "refused"]
