"""Breaking and compatible changes between two versions of a contract (``004_*.txt``, "Breaking Change
Detection"). Plain Python: it compares two validated :class:`~.model.Contract` objects.

A change is *breaking* when something that worked against the old contract can fail, or silently get a
different answer, against the new one; *compatible* when nobody has to change anything. A *note* is
neither: it points at something to fix in the contract itself (a missing major version bump).

=================================================  ===========  ==========================================
change                                             kind         why
=================================================  ===========  ==========================================
column removed                                     breaking     every reader of it fails
deprecated column removed after its sunset         compatible   004: consumers were told, and the date
(or deprecated without a sunset)                                passed (no date: it may go at any time)
deprecated column removed before its sunset        breaking     the promised date has not come
column renamed (``renamed_from``)                  breaking     readers of the old name fail — unless the
                                                                old column was deprecated and its sunset
                                                                passed (compatible); types compared too
column deprecated                                  compatible   an announcement, nothing breaks yet
column type changed                                breaking     readers' casts and schemas no longer fit
column type widened (lossless, see below)          compatible   every old value is still representable
column type no longer declared                     breaking     the type guarantee is gone
column type declared where there was none          compatible   a new guarantee
nullable → NOT NULL                                breaking     004: writers that send NULLs now break
NOT NULL → nullable                                compatible   004 calls only the other direction breaking
whitelist value removed                            breaking     a consumer relying on that value breaks
whitelist value added                              compatible   consumers may ignore it
whitelist now case-sensitive / case-insensitive    breaking /   ``'us'`` stops / starts matching ``'US'``
                                                   compatible
whitelist introduced / dropped                     compatible   no consumer could rely on an unlisted value
new NOT NULL column                                breaking     existing writers do not provide it
new nullable column                                compatible
SLA degraded (``freshness_hours`` or               breaking     consumers schedule on the promise
``max_latency_minutes`` up, ``availability_target``
down, ``delivery_deadline_utc`` later, or dropped)
SLA improved (or newly promised)                   compatible
dataset moved (table, path or format changed)      breaking     readers point at the old location
partition column removed                           breaking     partition filters and CompletenessSensor
                                                                rely on it; added ones are compatible
reference moved, refiltered or removed             breaking     referential/reconciliation/sql checks
                                                                compare against something else
reference added                                    compatible
condition, query, keys or measure of a             breaking     the same check_id now accepts or rejects
referential / reconciliation / row_condition /                  different data
table_condition / sql check changed
breaking changes without a major version bump      note         semver: bump MAJOR (for 0.x: MINOR)
=================================================  ===========  ==========================================

**Widening is compatible** (decision): ``byte → short → int → long``; integers to ``double`` (and
``byte``/``short`` to ``float``), exactly representable; ``float → double``; an integer to a decimal with
enough integer digits; ``decimal(p,s) → decimal(p',s')`` with ``s' ≥ s`` and ``p'−s' ≥ p−s``; element,
key and value types of lists and maps by the same rules. These are the promotions Delta's type widening,
Parquet and Avro readers apply on their own, and a Spark reader gets the wider type without failing.
Narrowing, or any other change (``double → decimal``, ``date → timestamp``, ``long → string``), is
breaking. A ``decimal`` without precision is Spark's default ``decimal(10,0)``.

Only whitelist checks define "allowed values"; when a column has several, a value is allowed if any of
them lists it. Quality checks added, removed or loosened are not schema or SLA changes and are not
reported.

Example::

    >>> from airflow_dq_contracts.contract import load_contract
    >>> old = load_contract("name: t\\nversion: 1.0.0\\ncolumns:\\n  - {name: a, type: int}\\n  - {name: b, type: string}\\n")
    >>> new = load_contract("name: t\\nversion: 1.1.0\\ncolumns:\\n  - {name: a, type: long}\\n")
    >>> for change in diff_contracts(old, new):
    ...     print(change.kind, change.category, change.column)
    compatible column_widened a
    breaking column_removed b
    note version_not_bumped None
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from .model import Column, ColumnType, Contract

BREAKING = "breaking"
COMPATIBLE = "compatible"
NOTE = "note"

# Categories (stable strings: they are part of `dq-contracts diff --json`).
COLUMN_REMOVED = "column_removed"
COLUMN_RENAMED = "column_renamed"
COLUMN_DEPRECATED = "column_deprecated"
COLUMN_ADDED = "column_added"
COLUMN_RETYPED = "column_retyped"
COLUMN_WIDENED = "column_widened"
COLUMN_TYPE_DROPPED = "column_type_dropped"
COLUMN_TYPE_DECLARED = "column_type_declared"
NULLABILITY_TIGHTENED = "nullability_tightened"
NULLABILITY_RELAXED = "nullability_relaxed"
ALLOWED_VALUES_REMOVED = "allowed_values_removed"
ALLOWED_VALUES_ADDED = "allowed_values_added"
ALLOWED_VALUES_CASE = "allowed_values_case"
ALLOWED_VALUES_DECLARED = "allowed_values_declared"
ALLOWED_VALUES_DROPPED = "allowed_values_dropped"
SLA_DEGRADED = "sla_degraded"
SLA_IMPROVED = "sla_improved"
DATASET_MOVED = "dataset_moved"
DATASET_DECLARED = "dataset_declared"
PARTITIONING_CHANGED = "partitioning_changed"
REFERENCE_CHANGED = "reference_changed"
REFERENCE_ADDED = "reference_added"
CHECK_DEFINITION_CHANGED = "check_definition_changed"
VERSION_NOT_BUMPED = "version_not_bumped"


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between two contract versions.

    >>> c = Change("breaking", "column_removed", "tags", "column 'tags' removed", old="list<string>")
    >>> c.breaking, c.to_dict()["category"]
    (True, 'column_removed')
    """

    kind: str  # breaking | compatible | note
    category: str
    column: str | None
    description: str
    old: Any = None  # the old and new value of what changed, JSON-friendly (for --json)
    new: Any = None

    @property
    def breaking(self) -> bool:
        return self.kind == BREAKING

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as printed by ``dq-contracts diff --json``."""
        return {
            "kind": self.kind,
            "category": self.category,
            "column": self.column,
            "description": self.description,
            "breaking": self.breaking,
            "old": self.old,
            "new": self.new,
        }


def diff_contracts(old: Contract, new: Contract, *, today: dt.date | None = None) -> list[Change]:
    """Every schema, SLA, location and partitioning change from ``old`` to ``new``, in a stable order.

    ``today`` (default: the current UTC date) decides whether a deprecated column's ``sunset`` has
    passed.

    Order: dataset, then the old columns in their order (removed, type, nullability, allowed values),
    then new columns in their order, partitioning, SLA, and notes last.

    >>> from airflow_dq_contracts.contract import load_contract
    >>> a = load_contract("name: t\\nsla: {freshness_hours: 4}\\n")
    >>> b = load_contract("name: t\\nsla: {freshness_hours: 6}\\n")
    >>> [c.description for c in diff_contracts(a, b)]
    ['SLA freshness_hours degraded: 4 → 6']
    """
    today = today or dt.datetime.now(dt.timezone.utc).date()
    changes: list[Change] = []
    changes += _dataset_changes(old, new)
    new_columns = {c.name: c for c in new.columns}
    old_names = {c.name for c in old.columns}
    # renamed_from: old name → the new column, when the old name is gone from the new contract
    renames = {
        c.renamed_from: c for c in new.columns if c.renamed_from in old_names and c.renamed_from not in new_columns
    }
    for column in old.columns:
        after = new_columns.get(column.name)
        if after is None and column.name in renames:
            changes += _rename_changes(column, renames[column.name], today)
            continue
        if after is None:
            changes.append(_removal(column, today))
            continue
        changes += _column_changes(column, after)
    for column in new.columns:
        if column.name in old_names or column in renames.values():
            continue
        type_text = f" ({_type_text(column.type)})" if column.type else ""
        if column.nullable:
            changes.append(
                Change(
                    COMPATIBLE,
                    COLUMN_ADDED,
                    column.name,
                    f"new nullable column {column.name!r}{type_text}",
                    new=_type_text(column.type),
                )
            )
        else:
            changes.append(
                Change(
                    BREAKING,
                    COLUMN_ADDED,
                    column.name,
                    f"new NOT NULL column {column.name!r}{type_text}",
                    new=_type_text(column.type),
                )
            )
    changes += _partitioning_changes(old, new)
    changes += _reference_changes(old, new)
    changes += _sla_changes(old, new)
    changes += _version_notes(old, new, changes)
    return changes


# ------------------------------------------------------------------------------------------ dataset


def _location(contract: Contract) -> str | None:
    dataset = contract.dataset
    if dataset.table:
        return f"table {dataset.table}"
    if dataset.path:
        return f"path {dataset.path} ({dataset.format})"
    return None


def _dataset_changes(old: Contract, new: Contract) -> list[Change]:
    before, after = _location(old), _location(new)
    if before == after:
        return []
    if before is None:
        return [Change(COMPATIBLE, DATASET_DECLARED, None, f"dataset declared: {after}", new=after)]
    if after is None:
        return [Change(BREAKING, DATASET_MOVED, None, f"dataset no longer declared (was {before})", old=before)]
    return [Change(BREAKING, DATASET_MOVED, None, f"dataset moved: {before} → {after}", old=before, new=after)]


# ------------------------------------------------------------------------------------------ references

# The parameters that define what the third family's checks accept (not how they are reported).
_DEFINING = {
    "referential": ("columns", "reference", "reference_columns", "as_of", "nulls"),
    "reconciliation": ("reference", "measure", "column", "reference_column", "return"),
    "row_condition": ("condition", "null_passes"),
    "table_condition": ("condition",),
    "sql": ("query", "return"),
}


def _reference_text(ref: Any) -> str:
    where = f"table {ref.table}" if ref.table else f"path {ref.path} ({ref.format})"
    return where + (f" where {ref.filter}" if ref.filter else "")


def _reference_changes(old: Contract, new: Contract) -> list[Change]:
    """References moved/refiltered/removed (breaking) or added; new-family checks redefined (breaking)."""
    changes: list[Change] = []
    for alias, before in old.references.items():
        after = new.references.get(alias)
        if after is None:
            changes.append(
                Change(BREAKING, REFERENCE_CHANGED, None, f"reference {alias!r} removed", old=_reference_text(before))
            )
        elif _reference_text(before) != _reference_text(after) or before.options != after.options:
            changes.append(
                Change(
                    BREAKING,
                    REFERENCE_CHANGED,
                    None,
                    f"reference {alias!r} changed: {_reference_text(before)} → {_reference_text(after)}",
                    old=_reference_text(before),
                    new=_reference_text(after),
                )
            )
    for alias, after in new.references.items():
        if alias not in old.references:
            changes.append(
                Change(
                    COMPATIBLE,
                    REFERENCE_ADDED,
                    None,
                    f"reference {alias!r} added: {_reference_text(after)}",
                    new=_reference_text(after),
                )
            )
    before_checks = {c.check_id: c for c in old.all_checks() if c.type in _DEFINING}
    for check in new.all_checks():
        previous = before_checks.get(check.check_id)
        if previous is None or previous.type != check.type:
            continue
        for key in _DEFINING[check.type]:
            if previous.params.get(key) != check.params.get(key):
                changes.append(
                    Change(
                        BREAKING,
                        CHECK_DEFINITION_CHANGED,
                        check.column,
                        f"{check.type} check {check.name!r}: {key} changed: "
                        f"{previous.params.get(key)!r} → {check.params.get(key)!r}",
                        old=previous.params.get(key),
                        new=check.params.get(key),
                    )
                )
    return changes


# ------------------------------------------------------------------------------------------ columns


def _retired(column: Column, today: dt.date) -> tuple[bool, str]:
    """(may it go now?, the words saying why) for a column removed or renamed away."""
    if not column.deprecated:
        return False, ""
    if column.sunset is None:
        return True, ""
    when = "after" if today >= column.sunset else "before"
    return today >= column.sunset, f" {when} its sunset {column.sunset.isoformat()}"


def _removal(column: Column, today: dt.date) -> Change:
    compatible, why = _retired(column, today)
    if compatible:
        return Change(
            COMPATIBLE,
            COLUMN_REMOVED,
            column.name,
            f"deprecated column {column.name!r} removed{why}",
            old=_type_text(column.type),
        )
    return Change(
        BREAKING, COLUMN_REMOVED, column.name, f"column {column.name!r} removed{why}", old=_type_text(column.type)
    )


def _rename_changes(old: Column, new: Column, today: dt.date) -> list[Change]:
    compatible, why = _retired(old, today)
    changes = [
        Change(
            COMPATIBLE if compatible else BREAKING,
            COLUMN_RENAMED,
            new.name,
            f"column {old.name!r} renamed to {new.name!r}{why}",
            old=old.name,
            new=new.name,
        )
    ]
    # The renamed column is otherwise compared like a kept one (type, nullability, allowed values).
    return changes + _column_changes(dataclasses.replace(old, name=new.name), new)


def _type_text(column_type: ColumnType | None) -> str | None:
    return column_type.describe() if column_type is not None else None


def _column_changes(old: Column, new: Column) -> list[Change]:
    name = old.name
    changes: list[Change] = []
    before, after = _type_text(old.type), _type_text(new.type)
    if before != after:
        if after is None:
            changes.append(
                Change(
                    BREAKING,
                    COLUMN_TYPE_DROPPED,
                    name,
                    f"column {name!r} no longer declares a type (was {before})",
                    old=before,
                )
            )
        elif before is None:
            changes.append(
                Change(COMPATIBLE, COLUMN_TYPE_DECLARED, name, f"column {name!r} now declares type {after}", new=after)
            )
        elif old.type is not None and new.type is not None and widens(old.type, new.type):
            changes.append(
                Change(
                    COMPATIBLE,
                    COLUMN_WIDENED,
                    name,
                    f"column {name!r} type widened: {before} → {after}",
                    old=before,
                    new=after,
                )
            )
        else:
            changes.append(
                Change(
                    BREAKING,
                    COLUMN_RETYPED,
                    name,
                    f"column {name!r} type changed: {before} → {after}",
                    old=before,
                    new=after,
                )
            )
    if old.nullable and not new.nullable:
        changes.append(
            Change(
                BREAKING,
                NULLABILITY_TIGHTENED,
                name,
                f"column {name!r} changed from nullable to NOT NULL",
                old=True,
                new=False,
            )
        )
    elif not old.nullable and new.nullable:
        changes.append(
            Change(
                COMPATIBLE,
                NULLABILITY_RELAXED,
                name,
                f"column {name!r} changed from NOT NULL to nullable",
                old=False,
                new=True,
            )
        )
    changes += _allowed_value_changes(old, new)
    if new.deprecated and not old.deprecated:
        sunset = f" (sunset {new.sunset.isoformat()})" if new.sunset else ""
        changes.append(
            Change(COMPATIBLE, COLUMN_DEPRECATED, name, f"column {name!r} deprecated{sunset}", old=False, new=True)
        )
    return changes


_INTEGRAL_RANK = {"byte": 0, "short": 1, "int": 2, "long": 3}
_INTEGRAL_DIGITS = {"byte": 3, "short": 5, "int": 10, "long": 19}
# Integers a float type holds exactly (24- and 53-bit mantissas).
_EXACT_IN_FLOAT = {"float": {"byte", "short"}, "double": {"byte", "short", "int"}}
_SPARK_DEFAULT_DECIMAL = (10, 0)


def _decimal(column_type: ColumnType) -> tuple[int, int]:
    if column_type.precision is None:
        return _SPARK_DEFAULT_DECIMAL
    return column_type.precision, column_type.scale or 0


def widens(old: ColumnType, new: ColumnType) -> bool:
    """Whether every value of ``old`` is exactly a value of ``new`` (a lossless promotion).

    >>> widens(ColumnType("int"), ColumnType("long")), widens(ColumnType("long"), ColumnType("int"))
    (True, False)
    >>> widens(ColumnType("decimal", precision=10, scale=2), ColumnType("decimal", precision=12, scale=2))
    True
    """
    a, b = old.kind, new.kind
    if a in ("list", "map") and a == b:
        return _same_or_wider(old.value_type, new.value_type) and (
            a == "list" or _same_or_wider(old.key_type, new.key_type)
        )
    if a in _INTEGRAL_RANK and b in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[b] > _INTEGRAL_RANK[a]
    if a in _INTEGRAL_RANK and b in _EXACT_IN_FLOAT:
        return a in _EXACT_IN_FLOAT[b]
    if a == "float" and b == "double":
        return True
    if a in _INTEGRAL_RANK and b == "decimal":
        precision, scale = _decimal(new)
        return precision - scale >= _INTEGRAL_DIGITS[a]
    if a == "decimal" and b == "decimal":
        (p1, s1), (p2, s2) = _decimal(old), _decimal(new)
        return (p1, s1) != (p2, s2) and s2 >= s1 and p2 - s2 >= p1 - s1
    return False


def _same_or_wider(old: ColumnType | None, new: ColumnType | None) -> bool:
    if old is None or new is None:
        return old is None and new is None
    return old.describe() == new.describe() or widens(old, new)


def _value_key(value: Any, fold: bool) -> tuple[str, Any]:
    # 1 and True and "1" are different allowed values; 1 and 1.0 are the same.
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    text = str(value)
    return ("text", text.casefold() if fold else text)


def _allowed(column: Column) -> tuple[list[Any], bool] | None:
    """(allowed values, case-insensitive?) from the column's whitelist checks, or None."""
    # The allowed_values constraint compiles to a whitelist check too (see .enforcement).
    whitelists = [c for c in column.checks + column.constraints if c.type == "whitelist"]
    if not whitelists:
        return None
    values: list[Any] = []
    for check in whitelists:
        values.extend(check.params.get("values") or [])
    insensitive = any(c.params.get("case_sensitive") is False for c in whitelists)
    return values, insensitive


def _show(values: Iterable[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def _allowed_value_changes(old: Column, new: Column) -> list[Change]:
    name = old.name
    before, after = _allowed(old), _allowed(new)
    if before is None and after is None:
        return []
    if before is None:
        assert after is not None
        return [
            Change(
                COMPATIBLE,
                ALLOWED_VALUES_DECLARED,
                name,
                f"column {name!r} now lists its allowed values: {_show(after[0])}",
                new=list(after[0]),
            )
        ]
    if after is None:
        return [
            Change(
                COMPATIBLE,
                ALLOWED_VALUES_DROPPED,
                name,
                f"column {name!r} no longer restricts its values (was: {_show(before[0])})",
                old=list(before[0]),
            )
        ]
    changes: list[Change] = []
    (old_values, old_fold), (new_values, new_fold) = before, after
    fold = old_fold and new_fold  # compare case-insensitively only when both sides did
    new_keys = {_value_key(v, fold) for v in new_values}
    old_keys = {_value_key(v, fold) for v in old_values}
    removed = _unique(v for v in old_values if _value_key(v, fold) not in new_keys)
    added = _unique(v for v in new_values if _value_key(v, fold) not in old_keys)
    if removed:
        changes.append(
            Change(
                BREAKING,
                ALLOWED_VALUES_REMOVED,
                name,
                f"column {name!r} no longer allows {_show(removed)}",
                old=removed,
            )
        )
    if added:
        changes.append(
            Change(COMPATIBLE, ALLOWED_VALUES_ADDED, name, f"column {name!r} now also allows {_show(added)}", new=added)
        )
    if old_fold and not new_fold:
        changes.append(
            Change(
                BREAKING,
                ALLOWED_VALUES_CASE,
                name,
                f"column {name!r} allowed values are now case-sensitive",
                old=False,
                new=True,
            )
        )
    elif new_fold and not old_fold:
        changes.append(
            Change(
                COMPATIBLE,
                ALLOWED_VALUES_CASE,
                name,
                f"column {name!r} allowed values are now case-insensitive",
                old=True,
                new=False,
            )
        )
    return changes


def _unique(values: Iterable[Any]) -> list[Any]:
    seen: set[tuple[str, Any]] = set()
    out = []
    for value in values:
        key = _value_key(value, False)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


# ------------------------------------------------------------------------------------ partitioning


def _partitioning_changes(old: Contract, new: Contract) -> list[Change]:
    before, after = list(old.partitioned_by), list(new.partitioned_by)
    changes = []
    for column in before:
        if column not in after:
            changes.append(
                Change(
                    BREAKING,
                    PARTITIONING_CHANGED,
                    column,
                    f"no longer partitioned by {column!r}",
                    old=before,
                    new=after,
                )
            )
    for column in after:
        if column not in before:
            changes.append(
                Change(
                    COMPATIBLE,
                    PARTITIONING_CHANGED,
                    column,
                    f"now also partitioned by {column!r}",
                    old=before,
                    new=after,
                )
            )
    return changes


# --------------------------------------------------------------------------------------------- SLA

# field → +1 when a larger value is better for consumers, −1 when a smaller one is.
_SLA_DIRECTION = {
    "freshness_hours": -1,
    "max_latency_minutes": -1,
    "availability_target": +1,
    "delivery_deadline_utc": -1,
}
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


def _sla_number(field: str, value: Any) -> float | None:
    if value is None:
        return None
    if field == "delivery_deadline_utc":
        match = _TIME.match(str(value).strip())
        if not match:
            return None
        return int(match[1]) * 3600 + int(match[2]) * 60 + int(match[3] or 0)
    return float(value)


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _sla_changes(old: Contract, new: Contract) -> list[Change]:
    changes = []
    for field, direction in _SLA_DIRECTION.items():
        before, after = getattr(old.sla, field), getattr(new.sla, field)
        if before == after:
            continue
        if after is None:
            changes.append(
                Change(
                    BREAKING, SLA_DEGRADED, None, f"SLA {field} no longer guaranteed (was {_fmt(before)})", old=before
                )
            )
            continue
        if before is None:
            changes.append(
                Change(COMPATIBLE, SLA_IMPROVED, None, f"SLA {field} now guaranteed: {_fmt(after)}", new=after)
            )
            continue
        a, b = _sla_number(field, before), _sla_number(field, after)
        if a is None or b is None:  # unreadable: a change nobody can judge is treated as breaking
            better = False
        elif a == b:
            continue  # "6:00" and "06:00"
        else:
            better = (b - a) * direction > 0
        changes.append(
            Change(
                COMPATIBLE if better else BREAKING,
                SLA_IMPROVED if better else SLA_DEGRADED,
                None,
                f"SLA {field} {'improved' if better else 'degraded'}: {_fmt(before)} → {_fmt(after)}",
                old=before,
                new=after,
            )
        )
    return changes


# ------------------------------------------------------------------------------------------ version

_VERSION = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def _semver(version: str | None) -> tuple[int, int, int] | None:
    match = _VERSION.match(version or "")
    if not match:
        return None
    return int(match[1]), int(match[2] or 0), int(match[3] or 0)


def _version_notes(old: Contract, new: Contract, changes: list[Change]) -> list[Change]:
    before, after = _semver(old.version), _semver(new.version)
    if before is not None and after is not None and after < before:
        return [
            Change(
                NOTE,
                VERSION_NOT_BUMPED,
                None,
                f"version went backwards: {old.version} → {new.version}",
                old=old.version,
                new=new.version,
            )
        ]
    if not any(c.breaking for c in changes):
        if changes and before is not None and before == after:
            return [
                Change(
                    NOTE,
                    VERSION_NOT_BUMPED,
                    None,
                    f"the contract changed but its version did not ({old.version}); bump MINOR or PATCH",
                    old=old.version,
                    new=new.version,
                )
            ]
        return []
    if before is None and after is None:
        return []  # an unversioned contract: nothing to check
    if before is None or after is None:
        missing = "old" if before is None else "new"
        return [
            Change(
                NOTE,
                VERSION_NOT_BUMPED,
                None,
                f"breaking changes, but the {missing} contract has no version to check the bump against",
                old=old.version,
                new=new.version,
            )
        ]
    # Semver: a breaking change bumps MAJOR; in 0.x (initial development) bumping MINOR is the convention.
    if before[0] == 0 and after[0] == 0:
        bumped, wanted = after[1] > before[1], f"0.{before[1] + 1}.0"
    else:
        bumped, wanted = after[0] > before[0], f"{before[0] + 1}.0.0"
    if bumped:
        return []
    return [
        Change(
            NOTE,
            VERSION_NOT_BUMPED,
            None,
            f"breaking changes but the major version was not bumped ({old.version} → {new.version}); "
            f"expected {wanted} or later",
            old=old.version,
            new=new.version,
        )
    ]
