"""What one profiling run measured, as plain data (no Spark): the input of the suggestion rules.

:mod:`.profile` fills these from ONE aggregate scan plus the grouped passes it needs;
:mod:`.rules` turns them into a draft contract; :mod:`.render` writes it as commented YAML. Keeping
the measurements plain lets the rules be read, tested and reasoned about without a JVM.

Example::

    column = ColumnProfile("qty", "int", "int", "integral", nulls=0, non_null=1000, minimum=1, maximum=9)
    column.null_rate   # 0.0
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

#: Families of Spark types the rules distinguish.
FAMILIES = ("integral", "fractional", "decimal", "string", "boolean", "date", "timestamp", "list", "map", "other")


@dataclasses.dataclass
class ColumnProfile:
    """One column's measurements (counts are over the profiled rows — the sample, if sampled)."""

    name: str
    spark_type: str  # Spark's simple string, e.g. ``bigint``
    declared_type: Any  # the contract's type: a name (``long``) or a mapping (``{kind: list, …}``)
    family: str  # one of FAMILIES
    nulls: int = 0
    non_null: int = 0
    #: HyperLogLog estimate from the shared scan (None for types that cannot be grouped)
    approx_distinct: int | None = None
    #: numbers as they are; dates and timestamps in epoch seconds (the engine's ``min``/``max``)
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    #: candidate format name (``email``…) or ``pattern:<regex>`` → non-null values that conform
    conforming: dict[str, int] = dataclasses.field(default_factory=dict)
    #: exact value → rows, for low-cardinality columns (None when not counted: too many values)
    values: dict[str, int] | None = None
    #: exact ``COUNT(*) − COUNT(DISTINCT column)`` when the column was a key candidate, else None
    duplicates: int | None = None
    #: the Spark type in the data when the profile read the column as another (``string`` holding
    #: numbers and missing-value tokens, profiled as ``double``), else None
    read_from: str | None = None
    #: missing-value token → values of this column read as NULL because of it (counted in ``nulls``)
    token_nulls: dict[str, int] = dataclasses.field(default_factory=dict)
    #: a nested field: ``field`` (a struct field, ``address.city``) or ``elements`` (``items[].sku``,
    #: ``tags[]``: ``nulls`` counts rows holding a NULL value, ranges and lengths reduce over every
    #: value); None for a top-level column
    path: str | None = None
    #: rows with no value and no NULL: a NULL parent, or a NULL or empty array (nested fields only)
    absent: int = 0

    @property
    def rows(self) -> int:
        """Rows profiled."""
        return self.nulls + self.non_null + self.absent

    @property
    def null_rate(self) -> float:
        """NULL rows / rows (0 when there is no row)."""
        return self.nulls / self.rows if self.rows else 0.0


@dataclasses.dataclass
class Profile:
    """The whole profiling run: rows, columns, two-column key probes, partitions, history, timings."""

    rows: int  # rows profiled
    columns: list[ColumnProfile]
    reference_time: dt.datetime  # aware UTC
    reference_given: bool = False  # True when the caller named the reference time
    sample: float | None = None  # the fraction profiled, None = exact (every row)
    #: (column, column) → exact duplicate count of the pair (table ``duplicates`` semantics)
    pair_duplicates: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    partition_by: list[str] = dataclasses.field(default_factory=list)
    #: earlier ``num_rows`` values from the results table: (reference time, rows, check name)
    history: list[tuple[dt.datetime, float, str]] = dataclasses.field(default_factory=list)
    history_source: str | None = None
    #: missing-value tokens read as NULL (``dataset.null_values``), most frequent first
    null_tokens: list[str] = dataclasses.field(default_factory=list)
    #: (pass name, seconds) in the order they ran — the evidence that it was one scan + grouped passes
    passes: list[tuple[str, float]] = dataclasses.field(default_factory=list)

    @property
    def estimated_rows(self) -> int:
        """Rows of the whole input: exact, or the sample's rows scaled up by the fraction."""
        if not self.sample:
            return self.rows
        return round(self.rows / self.sample)

    def column(self, name: str) -> ColumnProfile:
        """The profile of column ``name`` (KeyError if absent)."""
        for item in self.columns:
            if item.name == name:
                return item
        raise KeyError(name)
