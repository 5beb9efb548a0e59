"""Column paths on Spark: the ONE place a contract's column name becomes a Spark expression.

Every metric resolves its column through :func:`resolve` (via :meth:`.metrics.PlanContext.path`);
the path syntax is plain Python (:mod:`airflow_dq_contracts.contract.column_paths`). A resolved path
is one of two shapes:

* **scalar** (top-level columns, struct fields ``address.city``, map values ``attrs[color]``):
  :attr:`ResolvedPath.value` is the value per row, NULL when the value or any parent is NULL (or the
  map lacks the key); :attr:`ResolvedPath.present` is "every parent is non-NULL" — a NULL parent is
  not a NULL child, so ``missing`` counts ``present AND value IS NULL``;
* **elements** (a path through ``[]``: ``items[].sku``, ``tags[]``): :attr:`ResolvedPath.values` is
  per row the array of the leaf values whose parents are all non-NULL (NULL elements of ``tags[]``
  stay in it; an element struct that is NULL contributes nothing to ``items[].sku``). Checks read it
  with higher-order functions (``exists``/``forall``/``array_min``…), so everything stays in the
  one shared scan: a row fails when ANY of its values fails.

Example (needs a SparkSession, so prose rather than a doctest)::

    path = resolve(df.schema, "items[].sku")       # a ResolvedPath, or a str saying what is wrong
    df.select(F.exists(path.values, lambda v: v.isNull()))
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.column_paths import ELEMENTS, FIELD, KEY, Step, format_path, parse_path

from .spark_types import INTEGRAL_TYPES, column, find_field, type_name


@dataclasses.dataclass
class ResolvedPath:
    """A column path resolved against a schema (names as the data spells them)."""

    text: str  #: canonical path text with the data's names (``address.city``; a top-level column's own name)
    steps: tuple[Step, ...]
    top: T.StructField  #: the top-level column the path starts from
    data_type: T.DataType  #: the leaf's type (of one value, for an elements path)
    nullable: bool  #: whether the leaf field itself may be NULL
    _value: Column | None = None
    _present: Column | None = None
    _values: Column | None = None

    @property
    def elements(self) -> bool:
        """Whether the path passes through every element of an array (``[]``)."""
        return self._values is not None

    @property
    def nested(self) -> bool:
        return len(self.steps) > 1

    @property
    def value(self) -> Column:
        """The value per row (scalar paths only)."""
        assert self._value is not None, f"{self.text} is an elements path: read .values"
        return self._value

    @property
    def present(self) -> Column:
        """Every parent of the value is non-NULL (true for a top-level column; scalar paths only)."""
        return self._present if self._present is not None else F.lit(True)

    @property
    def values(self) -> Column:
        """Per row, the array of leaf values whose parents are non-NULL (elements paths only; NULL: no values)."""
        assert self._values is not None, f"{self.text} is not an elements path"
        return self._values

    def field(self) -> T.StructField:
        """The leaf as a StructField named by the path text (what metrics keep as ``field``)."""
        return T.StructField(self.text, self.data_type, self.nullable)

    # -- per-row readings shared by the checks ------------------------------------------------
    def any_value(self, predicate: Callable[[Column], Column]) -> Column:
        """Some value of the row satisfies ``predicate`` (NULL predicate results count as false)."""
        if not self.elements:
            return F.coalesce(predicate(self.value), F.lit(False))
        return F.coalesce(F.exists(self.values, lambda v: F.coalesce(predicate(v), F.lit(False))), F.lit(False))


def _field(struct: T.StructType, name: str, case_sensitive: bool) -> T.StructField | None:
    return find_field(struct, name, case_sensitive)


def _map_key(data_type: T.MapType, key: str) -> Column:
    """A map key literal of the map's key type; ValueError when the text cannot be one."""
    if isinstance(data_type.keyType, T.StringType):
        return F.lit(key)
    if isinstance(data_type.keyType, INTEGRAL_TYPES):
        return F.lit(int(key)).cast(data_type.keyType)
    return F.lit(key).cast(data_type.keyType)


def _get_field(name: str) -> Callable[[Column], Column]:
    """``x -> x.name`` (a one-argument function: Spark makes one lambda variable per parameter)."""
    return lambda x: x.getField(name)


def _get_key(key: Column) -> Callable[[Column], Column]:
    """``x -> x[key]`` for a map (NULL when the key is absent)."""
    return lambda x: F.try_element_at(x, key)


def _all(conditions: list[Column]) -> Column | None:
    return functools.reduce(lambda a, b: a & b, conditions) if conditions else None


def resolve(schema: T.StructType, text: str, case_sensitive: bool = False) -> ResolvedPath | str:
    """The path ``text`` in ``schema`` as a :class:`ResolvedPath`, or the reason it does not resolve.

    A text that is exactly the name of a top-level column resolves to that column, whatever it holds
    (so a column literally named ``order.id`` keeps working); otherwise it is read as a path.
    """
    exact = _field(schema, text, case_sensitive)
    try:
        steps = parse_path(text)
    except ValueError as exc:
        if exact is not None:
            steps = (Step(FIELD, exact.name),)
        else:
            return str(exc)
    top = _field(schema, steps[0].name, case_sensitive)
    if exact is not None and (top is None or len(steps) > 1 and _walk_fails(top, steps, case_sensitive)):
        top, steps = exact, (Step(FIELD, exact.name),)
    if top is None:
        return _missing_top(schema, steps[0].name)
    return _walk(top, steps, case_sensitive)


def _walk_fails(top: T.StructField, steps: tuple[Step, ...], case_sensitive: bool) -> bool:
    return isinstance(_walk(top, steps, case_sensitive), str)


def _missing_top(schema: T.StructType, name: str) -> str:
    names = [f.name for f in schema.fields if not f.name.startswith("_dq_")]
    more = "…" if len(names) > 30 else ""
    return f"column {name!r} not found in the data (columns: {', '.join(names[:30])}{more})"


def _walk(top: T.StructField, steps: tuple[Step, ...], case_sensitive: bool) -> ResolvedPath | str:
    """Follow ``steps`` from the top-level column, building the scalar or elements reading."""
    data_type: T.DataType = top.dataType
    nullable = top.nullable
    done: list[Step] = [Step(FIELD, top.name)]
    value: Column = column(top.name)
    parents: list[Column] = []
    values: Column | None = None  # once a [] is passed: the array of current values

    def map_values(fn: Callable[[Column], Column]) -> Column:
        assert values is not None
        return F.transform(F.filter(values, lambda x: x.isNotNull()), fn)

    for step in steps[1:]:
        here = format_path(done)
        if step.kind == FIELD:
            if not isinstance(data_type, T.StructType):
                return f"{here} is {type_name(data_type)}, not a struct: it has no field {step.name!r}"
            found = _field(data_type, step.name, case_sensitive)
            if found is None:
                fields = ", ".join(f.name for f in data_type.fields)
                return f"field {step.name!r} not found in {here} (fields: {fields})"
            name = found.name
            if values is None:
                parents.append(value.isNotNull())
                value = value.getField(name)
            else:
                values = map_values(_get_field(name))
            data_type, nullable = found.dataType, found.nullable
            done.append(Step(FIELD, name))
        elif step.kind == KEY and isinstance(data_type, T.StructType):
            # JSON objects are inferred as structs: attrs[color] then reads the field, as attrs.color does.
            return _walk(top, (*steps[: len(done)], Step(FIELD, step.name), *steps[len(done) + 1 :]), case_sensitive)
        elif step.kind == KEY:
            if not isinstance(data_type, T.MapType):
                hint = " (every element is written [])" if isinstance(data_type, T.ArrayType) else ""
                return f"{here} is {type_name(data_type)}, not a map: it has no key {step.name!r}{hint}"
            try:
                key = _map_key(data_type, step.name)
            except ValueError:
                return f"key {step.name!r} is not a {type_name(data_type.keyType)}, the key type of {here}"
            if values is None:
                parents.append(value.isNotNull())
                value = F.try_element_at(value, key)
            else:
                values = map_values(_get_key(key))
            data_type, nullable = data_type.valueType, True
            done.append(step)
        else:
            assert step.kind == ELEMENTS
            if not isinstance(data_type, T.ArrayType):
                return f"{here} is {type_name(data_type)}, not an array: [] reads the elements of an array"
            # NULL arrays give no values; a NULL element stays (it is a value of this path).
            values = value if values is None else F.flatten(F.filter(values, lambda x: x.isNotNull()))
            array: T.ArrayType = data_type
            data_type, nullable = array.elementType, array.containsNull
            done.append(step)
    text = format_path(done) if len(done) > 1 else top.name
    if values is not None:
        return ResolvedPath(text, tuple(done), top, data_type, nullable, _values=values)
    return ResolvedPath(text, tuple(done), top, data_type, nullable, _value=value, _present=_all(parents))
