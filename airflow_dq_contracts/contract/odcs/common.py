"""What the ODCS compiler's parts share: the located issue collector, exact numbers.

Plain Python. Every refusal names the ODCS file, the line and the path *in the ODCS document*.

Example::

    >>> from airflow_dq_contracts.contract.yamlsrc import SourceMap
    >>> found = Found(SourceMap("orders.odcs.yaml", {("schema",): 7}))
    >>> found.refuse(("schema", 0), "no name")
    >>> str(found.issues[0])
    'orders.odcs.yaml:7: schema[0]: no name'
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ..parsing import ParseContext
from ..yamlsrc import Path


class Found(ParseContext):
    """The refusals of one ODCS document (located), collected as the contract parser collects its issues."""

    def refuse(self, path: Path, message: str) -> None:
        """Record that the element at ``path`` cannot be compiled exactly."""
        self.add(path, message)

    def keys(self, data: dict, allowed: tuple[str, ...], path: Path, what: str) -> None:
        """Refuse keys ``what`` does not know (a misspelt key must not silently disable a rule)."""
        for key in data:
            if key not in allowed:
                self.refuse(path + (key,), f"unknown key {key!r} in {what}; known: {', '.join(allowed)}")

    def text(self, data: dict, key: str, path: Path) -> str | None:
        """A non-empty string value, or None (a non-string is refused)."""
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.refuse(path + (key,), f"'{key}' must be a non-empty string, got {value!r}")
            return None
        return value.strip()


def exact(value: Any) -> Decimal | None:
    """A finite number as the decimal it is written as (``0.1`` → ``Decimal('0.1')``), else None.

    >>> exact(0.1), exact(3), exact(True), exact("5")
    (Decimal('0.1'), Decimal('3'), None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:  # pragma: no cover - repr of a float is always a decimal
        return None
    return number if number.is_finite() else None


def plain(number: Decimal) -> int | float:
    """The YAML number for an exact decimal: an int when integral, else the float written the same way.

    >>> plain(Decimal("1000")), plain(Decimal("0.05"))
    (1000, 0.05)
    """
    if number == number.to_integral_value():
        return int(number)
    return float(str(number))
