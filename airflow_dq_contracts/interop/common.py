"""What the importers and exporters share: located source reading, refusals, exact numbers, YAML output.

Plain Python (no Spark, no Airflow). An importer reads a foreign document with the same safe,
line-tracking YAML reader as contracts (JSON is YAML), so every refusal names the file, the line and
the path inside the *source* document, and all refusals of a file are reported at once as one
:class:`~airflow_dq_contracts.contract.ContractValidationError`.

Example::

    >>> src = Source.parse("rules: [{nonNullExpectation: {}}]", "scan.yaml")
    >>> src.refuse(("rules", 0), "not supported")
    >>> str(src.issues[0])
    'scan.yaml:1: rules[0]: not supported'
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml

from airflow_dq_contracts.contract import checks as registry
from airflow_dq_contracts.contract import loader
from airflow_dq_contracts.contract.errors import ContractValidationError, ValidationIssue
from airflow_dq_contracts.contract.validators import slug
from airflow_dq_contracts.contract.yamlsrc import Path, SourceMap, YamlSyntaxError, format_path, load_yaml


@dataclasses.dataclass
class ImportResult:
    """What an import made: one contract (YAML text) per dataset, and the refused elements (located).

    ``refused`` is empty unless the import ran with ``partial``: then each refused rule is listed with
    its file, line and path in the source, and the contracts hold every rule that mapped exactly.
    """

    contracts: dict[str, str]
    refused: list[ValidationIssue]


class Source:
    """One foreign document (DataHub assertions, a Dataplex scan spec) and the refusals found in it."""

    def __init__(self, data: Any, smap: SourceMap, issues: list[ValidationIssue] | None = None):
        self.data = data
        self.smap = smap
        self.issues: list[ValidationIssue] = list(issues or [])

    @property
    def file(self) -> str:
        return self.smap.file

    @classmethod
    def parse(cls, text: str, file: str) -> Source:
        """Parse YAML or JSON text; a syntax error becomes a located issue (``data`` is then None).

        JSON (Dataplex's usual form) takes a fast path: the C ``json`` parser for the values and one
        token scan for the lines — a file of tens of thousands of rules reads in seconds, not a minute.
        """
        if text.lstrip().startswith(("{", "[")):
            located = _located_json(text, file)
            if located is not None:
                return located
        try:
            data, smap, duplicates = load_yaml(text, file)
        except YamlSyntaxError as exc:
            return cls(None, SourceMap(file), [ValidationIssue(file, exc.line, "", str(exc))])
        source = cls(data, smap)
        for path, message in duplicates:
            source.refuse(path, message)
        return source

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Source:
        """Read a file; an unreadable one becomes a located issue."""
        name = str(path)
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return cls(None, SourceMap(name), [ValidationIssue(name, None, "", "file not found")])
        except UnicodeDecodeError as exc:
            return cls(None, SourceMap(name), [ValidationIssue(name, None, "", f"not UTF-8 text: {exc.reason}")])
        except OSError as exc:
            return cls(None, SourceMap(name), [ValidationIssue(name, None, "", f"cannot read: {exc.strerror}")])
        return cls.parse(text, name)

    def refuse(self, path: Path, message: str) -> None:
        """Record that the element at ``path`` cannot be imported (or is malformed)."""
        self.issues.append(ValidationIssue(self.file, self.smap.line(path), format_path(path), message))

    def where(self, path: Path) -> str:
        """``file:line path`` — how an emitted check names its source element."""
        line = self.smap.line(path)
        return f"{os.path.basename(self.file)}{':' + str(line) if line else ''} {format_path(path)}"

    # -- typed reads: each records a located issue and returns None when the value is wrong ----------
    def mapping(self, value: Any, path: Path, what: str) -> dict | None:
        if not isinstance(value, dict):
            self.refuse(path, f"{what} must be a mapping, got {_kind(value)}")
            return None
        return value

    def items(self, value: Any, path: Path, what: str) -> list:
        if not isinstance(value, list):
            self.refuse(path, f"{what} must be a list, got {_kind(value)}")
            return []
        return value

    def text(self, data: dict, key: str, path: Path, required: bool = False) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                self.refuse(path, f"'{key}' is required")
            return None
        if not isinstance(value, str) or not value.strip():
            self.refuse(path + (key,), f"'{key}' must be a non-empty string, got {value!r}")
            return None
        return value

    def flag(self, data: dict, key: str, path: Path, default: bool) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            self.refuse(path + (key,), f"'{key}' must be true or false, got {value!r}")
            return default
        return value

    def number(self, value: Any, path: Path, what: str, *, strings: bool = False) -> Decimal | None:
        """``value`` as an exact decimal (numbers, or numeric strings when ``strings``)."""
        number = exact_number(value, strings=strings)
        if number is None:
            self.refuse(path, f"{what} must be a number, got {value!r}")
        return number

    def keys(self, data: dict, allowed: Iterable[str], path: Path, what: str) -> None:
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                self.refuse(path + (key,), f"unknown key {key!r} in {what}; known: {', '.join(allowed)}")


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _located_json(text: str, file: str) -> Source | None:
    """``text`` as JSON with the line of every key and item; None when it is not plain JSON (YAML decides).

    >>> src = _located_json(chr(10).join(['{"rules": [', '  {"column": "a"},', '  {"column": "b"}]}']), "r.json")
    >>> src.data["rules"][1], src.smap.line(("rules", 1, "column"))
    ({'column': 'b'}, 3)
    """
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=no_constant)
    except (ValueError, RecursionError):
        return None  # the YAML reader reports it, located
    if duplicates:
        return None  # the YAML reader names each duplicate key at its line
    smap = SourceMap(file)
    lines = smap.lines
    line, last = 1, 0
    # (path, is_object, next index or pending key) for each open container
    stack: list[list[Any]] = []
    pending_key: Any = None
    for match in _TOKEN.finditer(text):
        start = match.start()
        line += text.count("\n", last, start)
        last = start
        token = match.group()
        if token in ":,":
            continue
        if token in "}]":
            stack.pop()
            continue
        if stack and stack[-1][1] and pending_key is None:  # a key of the open object
            pending_key = token[1:-1] if "\\" not in token else json.loads(token)
            lines[stack[-1][0] + (pending_key,)] = line
            continue
        if not stack:
            path: tuple = ()
        elif stack[-1][1]:
            path, pending_key = stack[-1][0] + (pending_key,), None
        else:
            path = stack[-1][0] + (stack[-1][2],)
            stack[-1][2] += 1
        lines.setdefault(path, line)
        if token in "{[":
            stack.append([path, token == "{", 0])
    return Source(data, smap)


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def exact_number(value: Any, *, strings: bool = False) -> Decimal | None:
    """A finite number as the decimal it is written as (``0.1`` → ``Decimal('0.1')``), else None.

    >>> exact_number(0.1), exact_number("2.50", strings=True), exact_number(True)
    (Decimal('0.1'), Decimal('2.50'), None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if registry.is_number(value) else None
    if strings and isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    return None


def plain(number: Decimal) -> int | float:
    """The YAML number for an exact decimal: an int when integral, else the float written the same way.

    >>> plain(Decimal("1000")), plain(Decimal("0.95")), plain(Decimal("1") - Decimal("0.95"))
    (1000, 0.95, 0.05)
    """
    if number == number.to_integral_value():
        return int(number)
    return float(str(number))


def has_check_type(name: str) -> bool:
    """Whether this version of the contract language knows check type ``name`` (at any level)."""
    return registry.check_type("table", name) is not None or registry.check_type("column", name) is not None


def require_type(src: Source, path: Path, check_type: str, what: str) -> bool:
    """Whether ``check_type`` exists; if not, refuse ``what`` at ``path`` naming the missing type."""
    if has_check_type(check_type):
        return True
    src.refuse(
        path,
        f"{what} needs the contract check type '{check_type}' (issue #11), which this version "
        "does not have; nothing else says it exactly",
    )
    return False


def has_top_key(name: str) -> bool:
    """Whether this version of the contract language knows the top-level key ``name``."""
    return name in loader.TOP_KEYS


# --------------------------------------------------------------------------------------- contract draft


@dataclasses.dataclass
class Draft:
    """A contract under construction: table-level checks, columns with their checks, a comment per check.

    ``add`` gives every check a name unique in its scope (check ids must not collide) and keeps the
    comment naming the source element, so the emitted YAML says where each check came from.
    """

    name: str
    top: dict[str, Any] = dataclasses.field(default_factory=dict)
    table_checks: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    columns: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    comments: dict[int, str] = dataclasses.field(default_factory=dict)
    _taken: dict[int, set[str]] = dataclasses.field(default_factory=dict, repr=False)

    def column(self, name: str) -> dict[str, Any]:
        return self.columns.setdefault(name, {"name": name})

    def add(self, check: dict[str, Any], column: str | None, comment: str) -> dict[str, Any]:
        scope = self.table_checks if column is None else self.column(column).setdefault("checks", [])
        # The names taken in each scope, kept as checks are added (tens of thousands of rules stay linear).
        if id(scope) not in self._taken:
            self._taken[id(scope)] = {slug(c["name"]) for c in scope}
        taken = self._taken[id(scope)]
        base, index = check["name"], 2
        while slug(check["name"]) in taken:
            check["name"] = f"{base} ({index})"
            index += 1
        taken.add(slug(check["name"]))
        scope.append(check)
        self.comments[id(check)] = comment
        return check

    def document(self) -> dict[str, Any]:
        """The contract as a plain dict (what ``load_contract`` reads)."""
        doc: dict[str, Any] = {"name": self.name, **self.top}
        if self.columns:
            doc["columns"] = list(self.columns.values())
        if self.table_checks:
            doc["checks"] = self.table_checks
        return doc

    def to_yaml(self, header: str) -> str:
        """The contract as YAML text, ``header`` as a leading comment, one comment line per check."""
        return emit_yaml(self.document(), self.comments, header)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]  # libyaml when present
    """Block style, except short lists of scalars (``between: [0, 10]``, ``values: [a, b]``) inline."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = len(data) <= 12 and all(isinstance(item, (str, int, float, bool)) and len(str(item)) < 40 for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def _dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)


#: Beyond this many checks in one scope, each is written as one JSON line (JSON is YAML): PyYAML's
#: representer is pure Python and would spend most of a large import on layout.
COMPACT_AFTER = 2000


def _dump_checks(checks: list[dict[str, Any]], comments: dict[int, str], indent: str) -> list[str]:
    lines: list[str] = []
    compact = len(checks) > COMPACT_AFTER
    for check in checks:
        comment = comments.get(id(check))
        if comment:
            lines.append(f"{indent}# {comment}")
        if compact:
            lines.append(f"{indent}- {json.dumps(check, ensure_ascii=False)}")
        else:
            lines.extend(indent + line for line in _dump([check]).splitlines())
    return lines


def emit_yaml(doc: dict[str, Any], comments: dict[int, str], header: str = "") -> str:
    """Block-style YAML of a contract dict with ``comments[id(check)]`` written above each check.

    >>> check = {"name": "rows", "type": "num_rows", "min": 1}
    >>> print(emit_yaml({"name": "t", "checks": [check]}, {id(check): "from a.yaml"}), end="")
    name: t
    checks:
    # from a.yaml
    - name: rows
      type: num_rows
      min: 1
    """
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for key, value in doc.items():
        if key == "checks":
            lines.append("checks:")
            lines.extend(_dump_checks(value, comments, ""))
        elif key == "columns":
            lines.append("columns:")
            for column in value:
                rest = {k: v for k, v in column.items() if k != "checks"}
                first, *others = _dump([rest]).splitlines()
                lines.append(first)
                lines.extend(others)
                if column.get("checks"):
                    lines.append("  checks:")
                    lines.extend(_dump_checks(column["checks"], comments, "  "))
        else:
            lines.extend(_dump({key: value}).splitlines())
    return "\n".join(lines) + "\n"


def check_name(text: str, limit: int = 80) -> str:
    """A readable check name from generated text (collapsed whitespace, bounded length)."""
    name = re.sub(r"\s+", " ", text).strip()
    return name if len(name) <= limit else name[: limit - 1] + "…"


def finish(sources: list[Source]) -> None:
    """Raise one :class:`ContractValidationError` with every refusal of every source, if any."""
    issues = [issue for source in sources for issue in source.issues]
    if issues:
        raise ContractValidationError(issues)


def read_sources(sources: list[Source], add: Callable[[Source], None], partial: bool) -> list[ValidationIssue]:
    """Hand every source to ``add`` (an importer's); the refusals of all of them, raised at once unless ``partial``."""
    for source in sources:
        add(source)
    refused = [issue for source in sources for issue in source.issues]
    if refused and not partial:
        finish(sources)
    return refused


def validated(draft: Draft, header: str, origin: str) -> str:
    """The draft as YAML, loaded back with the strict contract loader (so ``validate`` accepts it)."""
    text = draft.to_yaml(header)
    loader.load_contract(draft.document(), filename=origin)  # the same document, without parsing it again
    return text
