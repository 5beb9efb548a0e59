"""The contract model: plain dataclasses, built and validated by :mod:`.loader`.

Example::

    contract = load_contract("contracts/orders.yaml")
    for check in contract.all_checks():
        print(check.check_id, check.action, check.validator.describe())
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

from .validators import Validator

ACTIONS = ("gate", "quarantine", "flag")
SEVERITIES = ("P0", "P1", "P2", "P3")
DEFAULT_SEVERITY = "P1"
RETURN_TYPES = ("count", "pct")
DATASET_FORMATS = ("delta", "parquet", "csv", "json", "orc")

# DESIGN §6: severity → action, for a failing table-level check and for a row-level check with
# violating rows.
DEFAULT_POLICY: dict[str, dict[str, str]] = {
    "P0": {"table": "gate", "row": "gate"},
    "P1": {"table": "gate", "row": "quarantine"},
    "P2": {"table": "flag", "row": "flag"},
    "P3": {"table": "flag", "row": "flag"},
}


@dataclasses.dataclass(frozen=True)
class ColumnType:
    """A declared column type: ``kind`` is the normalised name (``long``, ``list``, ``map``…)."""

    kind: str
    value_type: "ColumnType | None" = None
    key_type: "ColumnType | None" = None
    precision: int | None = None
    scale: int | None = None
    raw: Any = None

    @property
    def is_collection(self) -> bool:
        return self.kind in ("list", "map")

    def describe(self) -> str:
        if self.kind == "list":
            return f"list<{self.value_type.describe() if self.value_type else '?'}>"
        if self.kind == "map":
            key = self.key_type.describe() if self.key_type else "?"
            value = self.value_type.describe() if self.value_type else "?"
            return f"map<{key},{value}>"
        if self.kind == "decimal" and self.precision is not None:
            return f"decimal({self.precision},{self.scale or 0})"
        return self.kind


@dataclasses.dataclass(frozen=True)
class Check:
    """One check, table-level (``column is None``) or column-level.

    ``params`` holds the check-specific parameters with defaults applied (``columns``, ``values``,
    ``pattern``, ``timestamp_column``, ``max_age_hours``…). ``action`` is already resolved from the
    explicit ``action:`` or the contract policy.
    """

    name: str
    type: str
    column: str | None
    severity: str
    action: str
    validator: Validator
    params: dict[str, Any]
    check_id: str
    tags: tuple[str, ...] = ()
    filter: str | None = None
    description: str | None = None
    explicit_action: bool = False
    # ``enabled: false`` keeps a check in the contract (diff, export, docs) but out of every run:
    # it is not evaluated and produces no result row (e.g. a suspended Dataplex rule).
    enabled: bool = True
    path: str = ""
    line: int | None = None

    @property
    def level(self) -> str:
        return "table" if self.column is None else "column"

    @property
    def return_type(self) -> str | None:
        """``count``/``pct`` when the check declares ``return``, else None."""
        return self.params.get("return")

    @property
    def row_level(self) -> bool:
        """Whether a single row can violate this check (so it can be quarantined)."""
        from .checks import has_row_reading

        return has_row_reading(self)


@dataclasses.dataclass(frozen=True)
class Column:
    """A schema column with its checks."""

    name: str
    type: ColumnType | None
    nullable: bool = True
    description: str | None = None
    checks: tuple[Check, ...] = ()


@dataclasses.dataclass(frozen=True)
class Dataset:
    """What the contract describes: a catalog table, or a path with a format."""

    table: str | None = None
    path: str | None = None
    format: str = "delta"
    options: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.table or self.path or ""


@dataclasses.dataclass(frozen=True)
class Reference:
    """A named dataset that checks compare against (``references:`` at the contract's top level).

    ``filter`` is a SQL predicate applied when the reference is read (templated by the operator
    like the run filter). Example::

        contract.references["customers"].path   # '/warehouse/dim/customers'
    """

    name: str
    table: str | None = None
    path: str | None = None
    format: str = "delta"
    filter: str | None = None
    options: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def location(self) -> str:
        return self.table or self.path or ""


@dataclasses.dataclass(frozen=True)
class SLA:
    """Service levels (``004_*.txt``). Only ``freshness_hours`` is evaluated (with a timestamp column)."""

    freshness_hours: float | None = None
    timestamp_column: str | None = None
    max_latency_minutes: float | None = None
    availability_target: float | None = None
    delivery_deadline_utc: str | None = None
    support_contact: str | None = None
    escalation_policy: str | None = None


@dataclasses.dataclass(frozen=True)
class Contract:
    """A validated data contract."""

    name: str
    version: str | None
    owner: str | None
    domain: str | None
    description: str | None
    consumers: tuple[str, ...]
    tags: tuple[str, ...]
    dataset: Dataset
    metadata: dict[str, Any]
    sla: SLA
    columns: tuple[Column, ...]
    checks: tuple[Check, ...]
    policy: dict[str, dict[str, str]]
    source: str = "<dict>"
    references: dict[str, Reference] = dataclasses.field(default_factory=dict)

    def column(self, name: str) -> Column | None:
        for col in self.columns:
            if col.name == name:
                return col
        return None

    def all_checks(self) -> Iterator[Check]:
        """Table-level checks first, then each column's checks, in document order."""
        yield from self.checks
        for col in self.columns:
            yield from col.checks

    def find_check(self, name: str, column: str | None = None) -> Check:
        """The check called ``name`` (optionally in ``column``); KeyError naming the choices."""
        matches = [c for c in self.all_checks() if c.name == name and (column is None or c.column == column)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            known = ", ".join(repr(c.name) for c in self.all_checks())
            raise KeyError(f"contract {self.name!r} has no check named {name!r} (checks: {known})")
        raise KeyError(f"check name {name!r} is used in several columns; pass column=")

    @property
    def partitioned_by(self) -> tuple[str, ...]:
        value = self.metadata.get("partitioned_by") or ()
        return tuple(value)
