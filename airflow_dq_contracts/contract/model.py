"""The contract model: plain dataclasses, built and validated by :mod:`.loader`.

Example::

    contract = load_contract("contracts/orders.yaml")
    for check in contract.all_checks():
        print(check.check_id, check.action, check.validator.describe())
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from typing import Any

from .baseline import Baseline
from .checks import CHECK_TYPES, CheckType, has_row_reading
from .streaming import StreamSettings
from .validators import Validator

ACTIONS = ("gate", "quarantine", "flag")
SEVERITIES = ("P0", "P1", "P2", "P3")
DEFAULT_SEVERITY = "P1"
RETURN_TYPES = ("count", "pct")
DATASET_FORMATS = ("delta", "parquet", "csv", "json", "orc", "kafka")
#: The reader options of which a ``format: kafka`` dataset names exactly one (Spark's Kafka source).
KAFKA_SUBSCRIPTIONS = ("subscribe", "subscribePattern", "assign")
KAFKA_SERVERS_OPTION = "kafka.bootstrap.servers"

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
    value_type: ColumnType | None = None
    key_type: ColumnType | None = None
    precision: int | None = None
    scale: int | None = None
    raw: Any = None

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
    #: bounds learned from history instead of a static validator (``baseline:``, ``drift``)
    baseline: Baseline | None = None

    @classmethod
    def draft(
        cls,
        name: str,
        type: str,  # noqa: A002 - the field's name
        column: str | None,
        severity: str,
        validator: Validator,
        params: dict[str, Any],
        check_id: str,
        **more: Any,
    ) -> Check:
        """A check whose action is not decided yet (``flag`` until an explicit action or the policy decides).

        >>> Check.draft("rows", "row_count", None, "P1", Validator("min", low=1), {}, "_table_/rows").action
        'flag'
        """
        return cls(name, type, column, severity, "flag", validator, params, check_id, **more)

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
        return has_row_reading(self)

    @property
    def definition(self) -> CheckType | None:
        """The check type of the contract language this check is one of (None for a type it does not know).

        >>> from airflow_dq_contracts.contract import load_contract
        >>> c = load_contract({"name": "t", "checks": [{"name": "n", "type": "num_rows", "min": 1}]})
        >>> next(c.all_checks()).definition.summary
        'total row count'
        """
        return CHECK_TYPES.get((self.level, self.type))

    @property
    def is_query(self) -> bool:
        """Whether this check runs its own query rather than joining the shared scan (``sql``)."""
        definition = self.definition
        return definition is not None and definition.is_query


@dataclasses.dataclass(frozen=True)
class Column:
    """A schema column with its checks.

    ``constraints`` are the checks compiled from the column's own declaration (``nullable: false``,
    ``unique``, ``allowed_values``… — see :mod:`.enforcement`), after suppression of those an
    explicit check already asserts. ``deprecated``/``deprecated_by``/``sunset`` and
    ``renamed_from`` are read by schema conformance and by :mod:`.diff`.
    """

    name: str
    type: ColumnType | None
    nullable: bool = True
    description: str | None = None
    checks: tuple[Check, ...] = ()
    tags: tuple[str, ...] = ()
    constraints: tuple[Check, ...] = ()
    deprecated: bool = False
    deprecated_by: str | None = None
    sunset: dt.date | None = None
    renamed_from: str | None = None


@dataclasses.dataclass(frozen=True)
class Dataset:
    """What the contract describes: a catalog table, or a path with a format.

    ``null_values``: the strings that mean "no value" in the data (``[NA, "N/A"]``), read as NULL
    before the declared types are parsed (see docs/contracts.md, "Text inputs").
    """

    table: str | None = None
    path: str | None = None
    format: str = "delta"
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    null_values: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The table, else the path, else for Kafka ``kafka://<servers>/<topics>`` (:func:`kafka_location`)."""
        if not (self.table or self.path) and self.format == "kafka":
            return kafka_location(self.options)
        return self.table or self.path or ""


def kafka_location(options: dict[str, str]) -> str:
    """What results call a Kafka dataset: its bootstrap servers and subscription.

    >>> kafka_location({"kafka.bootstrap.servers": "b1:9092,b2:9092", "subscribe": "orders"})
    'kafka://b1:9092,b2:9092/orders'
    """
    topics = next((options[key] for key in KAFKA_SUBSCRIPTIONS if options.get(key)), "")
    return f"kafka://{options.get(KAFKA_SERVERS_OPTION, '')}/{topics}"


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
    #: the strings read as NULL (as the dataset's ``null_values``)
    null_values: tuple[str, ...] = ()

    @property
    def location(self) -> str:
        return self.table or self.path or ""


@dataclasses.dataclass(frozen=True)
class SLA:
    """Service levels (``004_*.txt``).

    ``freshness_hours`` with ``timestamp_column`` is evaluated on every run as the freshness check
    ``_table_/sla_freshness`` (unless an explicit freshness check on that column exists, or
    ``enforcement.sla: off``); without a timestamp column it is a promise only. The other fields
    are promises that no run can measure (latency, availability, deadline) and are only compared
    by ``dq-contracts diff``.
    """

    freshness_hours: float | None = None
    timestamp_column: str | None = None
    max_latency_minutes: float | None = None
    availability_target: float | None = None
    delivery_deadline_utc: str | None = None
    support_contact: str | None = None
    escalation_policy: str | None = None


SCHEMA_MODES = ("contains", "exact", "off")


@dataclasses.dataclass(frozen=True)
class Enforcement:
    """What a run verifies beyond the written checks (contract key ``enforcement``).

    >>> Enforcement().schema_mode, Enforcement().schema_severity, Enforcement().constraints_severity
    ('contains', 'P0', 'P1')
    """

    schema_mode: str = "contains"  # contains | exact | off
    schema_severity: str = "P0"
    constraints: bool = True
    constraints_severity: str = "P1"
    sla: bool = True
    sla_severity: str = "P1"
    #: ``enforcement.statistics: off``: never answer a check from the Delta log (engine/statistics_first.py)
    statistics: bool = True


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
    enforcement: Enforcement = Enforcement()
    #: ``<column>/schema`` and ``_table_/schema`` checks (schema conformance), planned first
    schema_checks: tuple[Check, ...] = ()
    #: table-level checks compiled from the contract (``_table_/sla_freshness``)
    implicit_checks: tuple[Check, ...] = ()
    #: The ``stream`` key (event time, window, watermark) of a contract checked as a stream; None: not declared
    stream: StreamSettings | None = None

    def column(self, name: str) -> Column | None:
        for col in self.columns:
            if col.name == name:
                return col
        return None

    def all_checks(self) -> Iterator[Check]:
        """The checks written in the document: table-level first, then each column's, in document order."""
        yield from self.checks
        for col in self.columns:
            yield from col.checks

    def evaluated_checks(self) -> Iterator[Check]:
        """Every check a run evaluates: schema conformance first, then the table-level checks
        (written, then from the SLA), then each column's written checks and its constraints.

        >>> from airflow_dq_contracts.contract import load_contract
        >>> c = load_contract({"name": "t", "columns": [{"name": "id", "nullable": False}]})
        >>> [ch.check_id for ch in c.evaluated_checks()], list(c.all_checks())
        (['id/schema', 'id/not_null'], [])
        """
        yield from self.schema_checks
        yield from self.checks
        yield from self.implicit_checks
        for col in self.columns:
            yield from col.checks
            yield from col.constraints

    @property
    def partitioned_by(self) -> tuple[str, ...]:
        value = self.metadata.get("partitioned_by") or ()
        return tuple(value)
