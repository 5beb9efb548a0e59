"""How many checks a contract runs — the one count ``validate``, ``run``, ``suggest``, the task log and the
report print, so they never disagree.

A run evaluates the checks *written* in the document (table-level and per column) and the checks the
document *implies*: each declared column's schema check, the constraints of a column's declaration
(``nullable: false``, ``unique``, ``allowed_values``…) and the SLA's (``freshness``). A check written
with ``enabled: false`` stays in the contract but is not run: it is counted apart.

Example::

    >>> from airflow_dq_contracts.contract import load_contract
    >>> contract = load_contract({"name": "t", "columns": [
    ...     {"name": "id", "nullable": False, "checks": [{"name": "unique", "type": "duplicates", "max": 0}]}]})
    >>> count = count_checks(contract)
    >>> count.total, count.written, count.implied, str(count)
    (3, 1, 2, '3 checks (1 written, 2 implied by columns/SLA)')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .model import Check, Contract

__all__ = ["CheckCount", "count_checks"]


@dataclasses.dataclass(frozen=True)
class CheckCount:
    """The checks a run evaluates: ``written`` in the document plus ``implied`` by its columns and SLA.

    ``disabled`` (written with ``enabled: false``) are in neither: they are not run.

    >>> str(CheckCount(written=1, implied=0)), str(CheckCount(written=2, implied=3, disabled=1))
    ('1 check (1 written, 0 implied by columns/SLA)', '5 checks (2 written, 3 implied by columns/SLA; 1 disabled, not run)')
    """

    written: int
    implied: int
    disabled: int = 0

    @property
    def total(self) -> int:
        """Checks a run evaluates (one result row each)."""
        return self.written + self.implied

    def __str__(self) -> str:
        noun = "check" if self.total == 1 else "checks"
        parts = f"{self.written} written, {self.implied} implied by columns/SLA"
        if self.disabled:
            parts += f"; {self.disabled} disabled, not run"
        return f"{self.total} {noun} ({parts})"


def _enabled(checks: Iterable[Check]) -> tuple[int, int]:
    """(enabled, disabled) among ``checks``."""
    flags = [check.enabled for check in checks]
    return sum(flags), len(flags) - sum(flags)


def count_checks(contract: Contract) -> CheckCount:
    """The checks ``contract``'s run evaluates, written and implied (see the module docstring)."""
    written, written_off = _enabled(contract.all_checks())
    written_ids = {id(check) for check in contract.all_checks()}
    implied, implied_off = _enabled(c for c in contract.evaluated_checks() if id(c) not in written_ids)
    return CheckCount(written=written, implied=implied, disabled=written_off + implied_off)
